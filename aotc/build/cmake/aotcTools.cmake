# aotc's build tools: the compiler choice and the wrapper scripts build commands call.
#
# Build commands name only <build>/aotc-tools/aotc-buildtool and aotc-compile.
# Those scripts, rewritten at configure time only when their text changes,
# hold the paths of this configure's Python, aotc and compiler. pip builds in a
# throwaway environment each time; keeping its paths out of the command lines
# is what lets ninja see a rebuild with nothing changed as nothing to do.

include_guard(GLOBAL)

get_filename_component(_AOTC_PYTHONPATH "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
get_filename_component(_AOTC_PACKAGE_DIR "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)

# Exactly the files the generate and index steps read: editing anything else
# in aotc (the runtime, the tropical API) reruns no codegen.
set(_AOTC_GENERATOR_FILES "")
foreach(module IN ITEMS
    __init__ _version _record _cjson errors archs semiring dtypes
    index/__init__ index/schema index/_layout build/index_writer build/_index_memo
    build/__init__ build/tool build/_files build/codegen build/manifest build/_checks build/_manifest_fields
    build/_family_fields build/_family_launch build/_family_rules build/_backward_fields build/_binding_fields build/signature build/_yaml build/resources
    build/line_map build/_render_keys _untrusted_files)
  list(APPEND _AOTC_GENERATOR_FILES "${_AOTC_PACKAGE_DIR}/${module}.py")
endforeach()

# A build option: the CMake variable, else the environment variable, else the default.
function(_aotc_option var default out_var)
  if(DEFINED ${var} AND NOT "${${var}}" STREQUAL "")
    set(${out_var} "${${var}}" PARENT_SCOPE)
  elseif(DEFINED ENV{${var}} AND NOT "$ENV{${var}}" STREQUAL "")
    set(${out_var} "$ENV{${var}}" PARENT_SCOPE)
  else()
    set(${out_var} "${default}" PARENT_SCOPE)
  endif()
endfunction()

# `python -c` code that runs module argv[2] as __main__ with folder argv[1] first
# on the import path. The folder is put there after Python's start-up, not on
# PYTHONPATH: pip's build environment keeps PYTHONPATH for a sitecustomize that
# asserts its own site-packages are not on sys.path yet, and aotc is installed
# in one of them, so naming it there printed "Error in sitecustomize ...
# AssertionError" at every step of every build. The environment's PYTHONPATH
# (where pip's build environment has Jinja2 and PyYAML) is kept as it is.
set(_AOTC_RUN_MODULE "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)")

# Runs `python -m aotc.<module> ...` now, at configure time, with this aotc first
# on the import path (see _AOTC_RUN_MODULE).
function(_aotc_run_python context module)
  execute_process(COMMAND "${Python_EXECUTABLE}" -c "${_AOTC_RUN_MODULE}" "${_AOTC_PYTHONPATH}" ${module} ${ARGN}
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(STRIP "${err}" err)
    string(REGEX REPLACE "^aotc: error: " "" err "${err}")
    message(FATAL_ERROR "${context}: ${err}")
  endif()
endfunction()

function(_aotc_configure_step name)
  _aotc_run_python("aotc_add_kernel_library(${name})" aotc.build.tool ${ARGN})
endfunction()

# Writes a wrapper script that runs `python -m <module>` with <env> exported.
function(_aotc_write_wrapper path module env_lines)
  if(WIN32)
    set(text "@echo off\r\nrem Written by aotc at configure time; do not edit.\r\n")
    foreach(line IN LISTS env_lines)
      string(APPEND text "set \"${line}\"\r\n")
    endforeach()
    string(APPEND text "\"${Python_EXECUTABLE}\" -c \"${_AOTC_RUN_MODULE}\" \"${_AOTC_PYTHONPATH}\" ${module} %*\r\n")
    set(path "${path}.cmd")
  else()
    set(text "#!/bin/sh\n# Written by aotc at configure time; do not edit.\n")
    foreach(line IN LISTS env_lines)
      string(REGEX REPLACE "^([^=]*)=(.*)$" "\\1='\\2'; export \\1" line "${line}")
      string(APPEND text "${line}\n")
    endforeach()
    string(APPEND text "exec '${Python_EXECUTABLE}' -c \"${_AOTC_RUN_MODULE}\" '${_AOTC_PYTHONPATH}' ${module} \"$@\"\n")
  endif()
  file(CONFIGURE OUTPUT "${path}" CONTENT "${text}" @ONLY)
  file(CHMOD "${path}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endfunction()

# The CUDA major this configure builds for (AOTC_CUDA: 13 unless set), so a
# project can widen its architecture list for the CUDA 12 lane.
function(aotc_cuda_lane out_var)
  _aotc_option(AOTC_CUDA "13" cuda)
  set(${out_var} "${cuda}" PARENT_SCOPE)
endfunction()

# The wheel a user on an older driver is sent to: this project's, for its lane.
# aotc's own lanes are named in aotc.build.toolchain; a downstream project's wheel is
# its own name, suffixed as CuPy suffixes its wheels (-cuda12x).
function(_aotc_lane_wheel_name cuda aotc_wheel out_var)
  if(CMAKE_PROJECT_NAME STREQUAL "aotc")
    set(wheel "${aotc_wheel}")
  else()
    set(wheel "${CMAKE_PROJECT_NAME}")
    if(DEFINED SKBUILD_PROJECT_NAME)
      set(wheel "${SKBUILD_PROJECT_NAME}")
    endif()
    if(NOT cuda STREQUAL "13")
      string(APPEND wheel "-cuda${cuda}x")
    endif()
  endif()
  set(${out_var} "${wheel}" PARENT_SCOPE)
endfunction()

# Once per configure: choose the compiler, write the wrappers and the identity stamp.
function(_aotc_setup_tools)
  get_property(done GLOBAL PROPERTY _AOTC_TOOLS_READY)
  if(done)
    return()
  endif()
  set_property(GLOBAL PROPERTY _AOTC_TOOLS_READY TRUE)

  _aotc_option(AOTC_CUDA "13" cuda)
  _aotc_option(AOTC_COMPILER "auto" prefer)
  # size (ZSTD) needs R550.54.14+ for CUDA 12 images, above that lane's R525
  # minimum; the default (LZ4) mode loads on all of them. CUDA 13 needs R580+ anyway.
  if(cuda STREQUAL "12")
    _aotc_option(AOTC_FATBIN_COMPRESSION "default" compression)
  else()
    _aotc_option(AOTC_FATBIN_COMPRESSION "size" compression)
  endif()
  _aotc_option(AOTC_COMPILER_LAUNCHER "${CMAKE_CUDA_COMPILER_LAUNCHER}" launcher)
  if(NOT compression MATCHES "^(size|balance|speed|default|none)$")
    message(FATAL_ERROR "aotc: AOTC_FATBIN_COMPRESSION='${compression}': expected size, balance, speed, default or none")
  endif()

  set(tools "${CMAKE_BINARY_DIR}/aotc-tools")
  file(MAKE_DIRECTORY "${tools}")
  _aotc_run_python("aotc" aotc.build.toolchain "--cuda=${cuda}" "--prefer=${prefer}"
                   "--cmake-cuda-compiler=${CMAKE_CUDA_COMPILER}" "--out=${tools}/toolchain.cmake"
                   "--fingerprint-out=${tools}/compiler-fingerprint.txt")
  include("${tools}/toolchain.cmake")
  if(_aotc_compiler_kind STREQUAL "nvcc")
    message(STATUS "aotc: compiler: nvcc ${_aotc_compiler_version} at ${_aotc_compiler_path} (from ${_aotc_compiler_origin})")
  else()
    message(STATUS "aotc: compiler: NVRTC: ${_aotc_compiler_origin}")
  endif()
  if(launcher)
    message(STATUS "aotc: compiler launcher: ${launcher}")
  endif()

  # Every fatbin depends on this file; it changes only when the compiler does:
  # its kind and version, the digests of its programs, or nvcc's environment
  # flags (the fingerprint, which also keys the fatbin cache).
  file(SHA256 "${tools}/compiler-fingerprint.txt" fingerprint)
  file(CONFIGURE OUTPUT "${tools}/compiler-identity.txt" CONTENT "${_aotc_compiler_identity}\nfingerprint ${fingerprint}\n" @ONLY)

  _aotc_write_wrapper("${tools}/aotc-buildtool" aotc.build.tool "")
  _aotc_write_wrapper("${tools}/aotc-compile" aotc.build.compile
    "AOTC_TOOLCHAIN_KIND=${_aotc_compiler_kind};AOTC_TOOLCHAIN_NVCC=${_aotc_compiler_path};AOTC_TOOLKIT_BIN=${_aotc_toolkit_bin};AOTC_TOOLCHAIN_CUDA=${cuda};AOTC_TOOLCHAIN_FINGERPRINT=${tools}/compiler-fingerprint.txt;AOTC_COMPILER_LAUNCHER=${launcher}")

  set(suffix "")
  if(WIN32)
    set(suffix ".cmd")
  endif()
  set(_AOTC_BUILD_TOOL "${tools}/aotc-buildtool${suffix}" CACHE INTERNAL "")
  set(_AOTC_COMPILE_TOOL "${tools}/aotc-compile${suffix}" CACHE INTERNAL "")
  set(_AOTC_COMPILER_IDENTITY_FILE "${tools}/compiler-identity.txt" CACHE INTERNAL "")
  set(_AOTC_FATBIN_COMPRESSION "${compression}" CACHE INTERNAL "")
  set(_AOTC_COMPILER_LAUNCHER "${launcher}" CACHE INTERNAL "")
  _aotc_lane_wheel_name("${cuda}" "${_aotc_lane_wheel}" wheel)
  set(_AOTC_TOOLKIT_ARGS
      "--compiler=${_aotc_compiler_kind}" "--compiler-version=${_aotc_compiler_version}"
      "--min-driver=${_aotc_min_driver}" "--wheel=${wheel}" "--compression=${compression}"
      CACHE INTERNAL "")
endfunction()
