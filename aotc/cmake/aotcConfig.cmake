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

cmake_minimum_required(VERSION 3.27)  # CUDA_FATBIN_COMPILATION

include_guard(GLOBAL)

# The folder holding the aotc Python package's parent, so the build can run
# `python -m aotc._buildtool` from this very aotc (source tree or site-packages).
get_filename_component(_AOTC_PYTHONPATH "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
get_filename_component(_AOTC_PACKAGE_DIR "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
include("${CMAKE_CURRENT_LIST_DIR}/aotcConfigVersion.cmake")
set(aotc_VERSION "${PACKAGE_VERSION}")

if(NOT Python_EXECUTABLE)
  find_package(Python 3.10 COMPONENTS Interpreter REQUIRED)
endif()

get_property(_aotc_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
if(NOT "CUDA" IN_LIST _aotc_languages)
  enable_language(CUDA)
endif()

# Runs one aotc build step with the aotc package above on the import path.
function(_aotc_python_command out_var)
  set(${out_var}
      "${CMAKE_COMMAND}" -E env "PYTHONPATH=${_AOTC_PYTHONPATH}" "${Python_EXECUTABLE}" -m aotc._buildtool
      ${ARGN}
      PARENT_SCOPE)
endfunction()

# Picks the strongest architecture override and says where it came from.
function(_aotc_arch_override var arg_value out_value out_source)
  if(DEFINED ${var} AND NOT "${${var}}" STREQUAL "")
    set(value "${${var}}")
    set(source "CMake variable ${var}")
  elseif(DEFINED ENV{${var}} AND NOT "$ENV{${var}}" STREQUAL "")
    set(value "$ENV{${var}}")
    set(source "environment variable ${var}")
  elseif(NOT "${arg_value}" STREQUAL "")
    set(value "${arg_value}")
    set(source "aotc_add_kernel_library() argument")
  else()
    set(value "")
    set(source "manifest")
  endif()
  # Commas, because a ';' would split the value into several CMake list items.
  string(REPLACE ";" "," value "${value}")
  set(${out_value} "${value}" PARENT_SCOPE)
  set(${out_source} "${source}" PARENT_SCOPE)
endfunction()

# CUDA_ARCHITECTURES entries: SASS as NN-real, PTX as NN-virtual, both as NN.
function(_aotc_cuda_architectures sass ptx out_var)
  set(result "")
  foreach(arch IN LISTS sass)
    if(arch IN_LIST ptx)
      list(APPEND result "${arch}")
    else()
      list(APPEND result "${arch}-real")
    endif()
  endforeach()
  foreach(arch IN LISTS ptx)
    if(NOT arch IN_LIST sass)
      list(APPEND result "${arch}-virtual")
    endif()
  endforeach()
  set(${out_var} "${result}" PARENT_SCOPE)
endfunction()

function(aotc_add_kernel_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "WARNINGS_AS_ERRORS" "MANIFEST;INSTALL_DIR" "ARCHS;PTX")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "aotc_add_kernel_library(${name}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_MANIFEST)
    message(FATAL_ERROR "aotc_add_kernel_library(${name}): MANIFEST is required")
  endif()
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "aotc_add_kernel_library(): library name '${name}' is not an identifier")
  endif()
  get_filename_component(manifest "${arg_MANIFEST}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${manifest}")
    message(FATAL_ERROR "aotc_add_kernel_library(${name}): MANIFEST ${manifest} does not exist")
  endif()
  if(NOT arg_INSTALL_DIR)
    set(arg_INSTALL_DIR "aotc/_lib/${name}")
  endif()

  _aotc_arch_override(AOTC_ARCHS "${arg_ARCHS}" archs archs_source)
  _aotc_arch_override(AOTC_PTX_ARCHS "${arg_PTX}" ptx ptx_source)
  # --opt=value keeps an empty value a single argument through CMake lists.
  set(arch_args "--manifest=${manifest}" "--archs=${archs}" "--archs-source=${archs_source}"
                "--ptx=${ptx}" "--ptx-source=${ptx_source}")

  set(work "${CMAKE_CURRENT_BINARY_DIR}/aotc/${name}")
  set(gen_dir "${work}/gen")
  set(stage "${work}/lib")
  file(MAKE_DIRECTORY "${gen_dir}" "${stage}")

  # Configure time: validate the manifest and learn the kernel list. Editing the
  # manifest re-runs this, since the set of targets may change.
  _aotc_python_command(plan_cmd plan ${arch_args} --library "${name}" --out "${work}/plan.cmake")
  execute_process(COMMAND ${plan_cmd} RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(STRIP "${err}" err)
    message(FATAL_ERROR "aotc_add_kernel_library(${name}): ${err}")
  endif()
  include("${work}/plan.cmake")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${manifest}")
  _aotc_cuda_architectures("${_aotc_sass}" "${_aotc_ptx}" cuda_archs)
  list(LENGTH _aotc_kernels kernel_count)
  message(STATUS "aotc: ${name}: ${kernel_count} kernels, SASS ${_aotc_sass}, PTX ${_aotc_ptx}")

  # Build time: one codegen step renders every source. It rewrites only files
  # whose bytes change, and sources are byproducts (Ninja restats them), so
  # only kernels whose text changed recompile.
  set(sources "")
  foreach(kernel IN LISTS _aotc_kernels)
    list(APPEND sources "${gen_dir}/${kernel}.cu")
  endforeach()
  file(GLOB generator_modules CONFIGURE_DEPENDS "${_AOTC_PACKAGE_DIR}/*.py")
  _aotc_python_command(gen_cmd generate ${arch_args} --out-dir "${gen_dir}" --stamp "${work}/generate.stamp")
  add_custom_command(
    OUTPUT "${work}/generate.stamp"
    BYPRODUCTS ${sources}
    COMMAND ${gen_cmd}
    DEPENDS "${manifest}" ${_aotc_templates} ${generator_modules}
    COMMENT "aotc: generating ${name} kernel sources"
    VERBATIM)
  add_custom_target(aotc_${name}_sources DEPENDS "${work}/generate.stamp")

  set(objects_content "")
  set(object_deps "")
  foreach(kernel IN LISTS _aotc_kernels)
    set(target "aotc_${name}_${kernel}")
    add_library(${target} OBJECT "${gen_dir}/${kernel}.cu")
    add_dependencies(${target} aotc_${name}_sources)
    set_target_properties(${target} PROPERTIES
      CUDA_FATBIN_COMPILATION ON
      CUDA_ARCHITECTURES "${cuda_archs}")
    # Keep the ptxas resource report (registers, spills, shared memory): it is
    # printed in the build log and saved beside the source for the index.
    target_compile_options(${target} PRIVATE --resource-usage)
    _aotc_python_command(launcher record-resources --out "${gen_dir}/${kernel}.resources.txt" --)
    set_target_properties(${target} PROPERTIES CUDA_COMPILER_LAUNCHER "${launcher}")
    if(arg_WARNINGS_AS_ERRORS)
      target_compile_options(${target} PRIVATE "SHELL:-Werror all-warnings")
    endif()
    string(APPEND objects_content "${kernel}=$<TARGET_OBJECTS:${target}>\n")
    list(APPEND object_deps "$<TARGET_OBJECTS:${target}>")
  endforeach()
  file(GENERATE OUTPUT "${work}/objects-$<CONFIG>.txt" CONTENT "${objects_content}")

  string(REGEX MATCH "^[0-9]+\\.[0-9]+\\.[0-9]+" nvcc_version "${CMAKE_CUDA_COMPILER_VERSION}")
  _aotc_python_command(index_cmd index ${arch_args} --objects "${work}/objects-$<CONFIG>.txt"
                       --gen-dir "${gen_dir}" --stage "${stage}" --nvcc-version "${nvcc_version}")
  add_custom_command(
    OUTPUT "${stage}/index.json"
    COMMAND ${index_cmd}
    DEPENDS ${object_deps} "${work}/objects-$<CONFIG>.txt" "${manifest}" ${generator_modules}
    COMMENT "aotc: indexing ${name}"
    VERBATIM)
  add_custom_target(aotc_${name} ALL DEPENDS "${stage}/index.json")

  # The staged folder is the installed library: index.json, *.fatbin, src/*.cu.
  install(DIRECTORY "${stage}/" DESTINATION "${arg_INSTALL_DIR}")
  set(AOTC_${name}_DIR "${stage}" PARENT_SCOPE)
endfunction()
