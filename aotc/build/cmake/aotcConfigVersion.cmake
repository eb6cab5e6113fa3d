# Version of the aotc CMake package, read from the Python package it ships in,
# so there is exactly one place the version is written (aotc/_version.py).
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../../_version.py" _aotc_version_line REGEX "^__version__ = ")
string(REGEX REPLACE "^__version__ = \"([^\"]+)\".*$" "\\1" PACKAGE_VERSION "${_aotc_version_line}")

if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  # Same major (or, before 1.0, same minor) counts as compatible.
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _aotc_have "${PACKAGE_VERSION}")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _aotc_want "${PACKAGE_FIND_VERSION}")
  if(PACKAGE_FIND_VERSION_MAJOR STREQUAL "0" AND NOT _aotc_have STREQUAL _aotc_want)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
