# aotc: compile CUDA kernel libraries ahead of time from a YAML manifest.
#
#   find_package(aotc CONFIG REQUIRED)
#   aotc_add_kernel_library(<name> MANIFEST <path> [ARCHS <arch>...] [PTX <arch>...]
#                           [INSTALL_DIR <dir>] [WARNINGS_AS_ERRORS])
#
# Architecture overrides, strongest first: the cache variable AOTC_ARCHS
# (-DAOTC_ARCHS=80;90 or scikit-build-core's -C cmake.define.AOTC_ARCHS=80;90),
# the environment variable AOTC_ARCHS, the ARCHS argument, the manifest.
# AOTC_PTX_ARCHS / PTX work the same for the embedded PTX.
#
# Build options (CMake variable, else environment variable of the same name):
#   AOTC_CUDA                 13 (default) or 12: the CUDA major the images are for
#   AOTC_COMPILER             auto (default), nvcc or nvrtc
#   AOTC_NVCC                 an explicit nvcc
#   AOTC_COMPILER_LAUNCHER    ccache, sccache, ... (default: CMAKE_CUDA_COMPILER_LAUNCHER)
#   AOTC_FATBIN_COMPRESSION   size (CUDA 13's default), balance, speed, default (CUDA 12's) or none
#   AOTC_COMPILE_BATCH        auto (default) or N: kernels one compile command takes
#
# No CUDA language is enabled: the fatbins are built by explicit commands into
# <build>/aotc/<name>/fatbin, whose command lines hold no path of pip's
# throwaway build environment, so a rebuild through pip compiles only what changed.

cmake_minimum_required(VERSION 3.24)

include_guard(GLOBAL)

include("${CMAKE_CURRENT_LIST_DIR}/aotcConfigVersion.cmake")
set(aotc_VERSION "${PACKAGE_VERSION}")

if(NOT Python_EXECUTABLE)
  find_package(Python 3.10 COMPONENTS Interpreter REQUIRED)
endif()

include("${CMAKE_CURRENT_LIST_DIR}/aotcTools.cmake")

# Picks the strongest architecture override and says where it came from.
function(_aotc_arch_override var arg_name arg_value out_value out_source)
  if(DEFINED ${var} AND NOT "${${var}}" STREQUAL "")
    set(value "${${var}}")
    set(source "CMake variable ${var}")
  elseif(DEFINED ENV{${var}} AND NOT "$ENV{${var}}" STREQUAL "")
    set(value "$ENV{${var}}")
    set(source "environment variable ${var}")
  elseif(NOT "${arg_value}" STREQUAL "")
    set(value "${arg_value}")
    set(source "${arg_name}")  # the refusal opens with the function's name already
  else()
    set(value "")
    set(source "manifest")
  endif()
  # Commas, because a ';' would split the value into several CMake list items.
  string(REPLACE ";" "," value "${value}")
  set(${out_value} "${value}" PARENT_SCOPE)
  set(${out_source} "${source}" PARENT_SCOPE)
endfunction()

# How many kernels one compile command takes (AOTC_COMPILE_BATCH: auto or a
# number). auto: about 32 commands, of 4 to 64 kernels each, so a library
# pays a process start (about 0.2 s of CPU with NVRTC loaded) per batch
# rather than per kernel, while ninja still has work for every core and a
# slow batch of heavy kernels holds up no more than 4 of them; one kernel each
# with a compiler launcher, whose farm runs as many steps at once as ninja
# hands it.
function(_aotc_batch_size count out_var)
  _aotc_option(AOTC_COMPILE_BATCH "auto" batch)
  if(batch STREQUAL "auto")
    if(_AOTC_COMPILER_LAUNCHER)
      set(batch 1)
    else()
      math(EXPR batch "(${count} + 31) / 32")
      if(batch LESS 4)
        set(batch 4)
      elseif(batch GREATER 64)
        set(batch 64)
      endif()
    endif()
  elseif(NOT batch MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "aotc: AOTC_COMPILE_BATCH='${batch}': expected auto or a number of kernels")
  endif()
  set(${out_var} "${batch}" PARENT_SCOPE)
endfunction()

# Compile commands, each for a batch of kernels: generated sources -> fatbins
# (+ ptxas reports). aotc.build.compile compiles only the kernels of a batch
# whose fatbins are out of date, and leaves the others' files alone, which
# ninja sees (restat, from the byproducts).
function(_aotc_add_compile_commands name work kernels sass ptx werror out_fatbins)
  string(REPLACE ";" "," sass_arg "${sass}")
  string(REPLACE ";" "," ptx_arg "${ptx}")
  set(flags "--library=${name}" "--sass=${sass_arg}" "--ptx=${ptx_arg}" "--compress=${_AOTC_FATBIN_COMPRESSION}")
  if(werror)
    list(APPEND flags "--werror")
  endif()
  # Build-relative paths: the same command in every build directory, so a
  # compiler cache hits across them.
  file(RELATIVE_PATH rel "${CMAKE_BINARY_DIR}" "${work}")
  list(APPEND flags "--fatbin-dir=${rel}/fatbin" "--gen-dir=${rel}/gen")
  list(LENGTH kernels count)
  _aotc_batch_size(${count} batch)
  math(EXPR batches "(${count} + ${batch} - 1) / ${batch}")
  set(fatbins "")
  set(first 0)
  foreach(number RANGE 1 ${batches})
    list(SUBLIST kernels ${first} ${batch} members)
    math(EXPR first "${first} + ${batch}")
    set(outputs "")
    set(byproducts "")
    set(sources "")
    foreach(kernel IN LISTS members)
      list(APPEND outputs "${work}/fatbin/${kernel}.fatbin")
      list(APPEND byproducts "${work}/fatbin/${kernel}.fatbin.key" "${work}/gen/${kernel}.resources.txt")
      list(APPEND sources "${work}/gen/${kernel}.cu")
    endforeach()
    list(LENGTH members size)
    if(size EQUAL 1)
      set(comment "aotc: ${name}: compile step ${number} of ${batches} (${members})")
    else()
      set(comment "aotc: ${name}: compile step ${number} of ${batches} (${size} kernels)")
    endif()
    add_custom_command(
      OUTPUT ${outputs}
      BYPRODUCTS ${byproducts}
      COMMAND "${_AOTC_COMPILE_TOOL}" ${flags} ${members}
      DEPENDS ${sources} "${_AOTC_COMPILER_IDENTITY_FILE}"
      WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
      COMMENT "${comment}"
      VERBATIM)
    list(APPEND fatbins ${outputs})
  endforeach()
  set(${out_fatbins} "${fatbins}" PARENT_SCOPE)
endfunction()

# Fails fast on a bad call; returns the manifest's absolute path.
function(_aotc_check_library_args name manifest_arg unparsed out_manifest)
  if(NOT "${unparsed}" STREQUAL "")
    message(FATAL_ERROR "aotc_add_kernel_library(${name}): unknown arguments: ${unparsed}")
  endif()
  if(NOT manifest_arg)
    message(FATAL_ERROR "aotc_add_kernel_library(${name}): MANIFEST is required")
  endif()
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "aotc_add_kernel_library(): library name '${name}' is not an identifier")
  endif()
  get_filename_component(manifest "${manifest_arg}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${manifest}")
    message(FATAL_ERROR "aotc_add_kernel_library(${name}): MANIFEST ${manifest} does not exist")
  endif()
  set(${out_manifest} "${manifest}" PARENT_SCOPE)
endfunction()

# The arguments every build-tool step takes: the manifest, the architecture
# overrides and where each came from, and the CUDA lane. --opt=value keeps an
# empty value a single argument through CMake lists.
function(_aotc_step_args manifest archs_arg ptx_arg out_var)
  aotc_cuda_lane(lane)
  _aotc_arch_override(AOTC_ARCHS ARCHS "${archs_arg}" archs archs_source)
  _aotc_arch_override(AOTC_PTX_ARCHS PTX "${ptx_arg}" ptx ptx_source)
  set(${out_var} "--manifest=${manifest}" "--archs=${archs}" "--archs-source=${archs_source}"
                 "--ptx=${ptx}" "--ptx-source=${ptx_source}" "--cuda=${lane}" PARENT_SCOPE)
endfunction()

# Configure time: validate the manifest and learn the kernel list, the
# architectures and the template files (_aotc_kernels, _aotc_sass, _aotc_ptx,
# _aotc_templates, set in the caller). A manifest edit re-runs this when it
# changes the plan, since the set of targets may change.
function(_aotc_read_plan name work manifest step_args)
  _aotc_configure_step("${name}" plan ${step_args} --library "${name}" --out "${work}/plan.cmake")
  include("${work}/plan.cmake")
  # Reconfigure when the plan changes, not at every manifest edit: a build-time
  # step writes the plan again (only if it differs) before ninja decides whether
  # build.ninja is current, so an edit that keeps the kernel list (a constant, a
  # launch shape) reconfigures nothing, and one that changes it reconfigures
  # once. At 10,000 kernels a reconfigure costs CMake about 9 s.
  add_custom_command(
    OUTPUT "${work}/plan.cmake"
    BYPRODUCTS "${work}/plan.checked"
    COMMAND "${_AOTC_BUILD_TOOL}" plan ${step_args} --library "${name}" "--out=${work}/plan.cmake"
            "--stamp=${work}/plan.checked"
    DEPENDS "${manifest}" ${_AOTC_GENERATOR_FILES}
    COMMENT "aotc: ${name}: checking the kernel list"
    VERBATIM)
  add_custom_target(aotc_${name}_plan DEPENDS "${work}/plan.cmake")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${work}/plan.cmake")
  list(LENGTH _aotc_kernels kernel_count)
  message(STATUS "aotc: ${name}: ${kernel_count} kernels, SASS ${_aotc_sass}, PTX ${_aotc_ptx}")
  foreach(var IN ITEMS _aotc_kernels _aotc_sass _aotc_ptx _aotc_templates)
    set(${var} "${${var}}" PARENT_SCOPE)
  endforeach()
endfunction()

# Build time: one codegen step renders every source. It rewrites only files
# whose bytes change, and sources are byproducts (Ninja restats them), so
# only kernels whose text changed recompile.
function(_aotc_add_generate_command name work manifest kernels templates step_args)
  # One TRANSFORM, not an APPEND per kernel, which copies the growing list each time.
  set(sources ${kernels})
  list(TRANSFORM sources PREPEND "${work}/gen/")
  list(TRANSFORM sources APPEND ".cu")
  add_custom_command(
    OUTPUT "${work}/generate.stamp"
    BYPRODUCTS ${sources}
    COMMAND "${_AOTC_BUILD_TOOL}" generate ${step_args} "--out-dir=${work}/gen" "--stamp=${work}/generate.stamp"
    DEPENDS "${manifest}" ${templates} ${_AOTC_GENERATOR_FILES}
    COMMENT "aotc: ${name}: generating kernel sources"
    VERBATIM)
  add_custom_target(aotc_${name}_sources DEPENDS "${work}/generate.stamp")
endfunction()

# The index step stages the library (index.json, *.fatbin, src/*.cu) from the
# fatbins and sources (a source can change where its fatbin does not: a
# comment); target aotc_<name> builds it.
function(_aotc_add_index_command name work manifest kernels fatbins step_args)
  set(sources ${kernels})
  list(TRANSFORM sources PREPEND "${work}/gen/")
  list(TRANSFORM sources APPEND ".cu")
  add_custom_command(
    OUTPUT "${work}/lib/index.json"
    COMMAND "${_AOTC_BUILD_TOOL}" index ${step_args} "--fatbin-dir=${work}/fatbin" "--gen-dir=${work}/gen"
            "--stage=${work}/lib" "--memo=${work}/index.memo" ${_AOTC_TOOLKIT_ARGS}
    DEPENDS ${fatbins} ${sources} "${manifest}" ${_AOTC_GENERATOR_FILES}
    COMMENT "aotc: ${name}: indexing"
    VERBATIM)
  add_custom_target(aotc_${name} ALL DEPENDS "${work}/lib/index.json")
  add_dependencies(aotc_${name} aotc_${name}_sources)
endfunction()

function(aotc_add_kernel_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "WARNINGS_AS_ERRORS" "MANIFEST;INSTALL_DIR" "ARCHS;PTX")
  _aotc_check_library_args("${name}" "${arg_MANIFEST}" "${arg_UNPARSED_ARGUMENTS}" manifest)
  if(NOT arg_INSTALL_DIR)
    set(arg_INSTALL_DIR "aotc/_lib/${name}")
  endif()
  _aotc_setup_tools()
  _aotc_step_args("${manifest}" "${arg_ARCHS}" "${arg_PTX}" step_args)

  # gen/: rendered sources, fatbin/: compiled kernels, lib/: the staged library.
  set(work "${CMAKE_CURRENT_BINARY_DIR}/aotc/${name}")
  file(MAKE_DIRECTORY "${work}/gen" "${work}/lib" "${work}/fatbin")

  _aotc_read_plan("${name}" "${work}" "${manifest}" "${step_args}")
  _aotc_add_generate_command("${name}" "${work}" "${manifest}" "${_aotc_kernels}" "${_aotc_templates}" "${step_args}")
  _aotc_add_compile_commands("${name}" "${work}" "${_aotc_kernels}" "${_aotc_sass}" "${_aotc_ptx}"
                             "${arg_WARNINGS_AS_ERRORS}" fatbins)
  _aotc_add_index_command("${name}" "${work}" "${manifest}" "${_aotc_kernels}" "${fatbins}" "${step_args}")

  # The staged folder is the installed library.
  install(DIRECTORY "${work}/lib/" DESTINATION "${arg_INSTALL_DIR}")
  set(AOTC_${name}_DIR "${work}/lib" PARENT_SCOPE)
endfunction()
