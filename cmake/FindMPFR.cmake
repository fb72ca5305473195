# SPDX-License-Identifier: Apache-2.0
# FindMPFR: the GNU MPFR multiple-precision floating-point library, and GMP,
# which it is built on (FindGMP.cmake beside this file).
#
# Imported target:  MPFR::MPFR (its link interface carries GMP::GMP, so a
#                   static consumer links both in the right order)
# Result variables: MPFR_FOUND, MPFR_INCLUDE_DIRS, MPFR_LIBRARIES, MPFR_VERSION
# Cache variables:  MPFR_INCLUDE_DIR, MPFR_LIBRARY (set them to choose a copy)
set(_mpfr_module_path ${CMAKE_MODULE_PATH})
list(PREPEND CMAKE_MODULE_PATH ${CMAKE_CURRENT_LIST_DIR})
if(MPFR_FIND_QUIETLY)
  find_package(GMP QUIET)
else()
  find_package(GMP)
endif()
set(CMAKE_MODULE_PATH ${_mpfr_module_path})
unset(_mpfr_module_path)

find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_MPFR QUIET mpfr)
endif()

find_path(MPFR_INCLUDE_DIR NAMES mpfr.h HINTS ${PC_MPFR_INCLUDEDIR} ${PC_MPFR_INCLUDE_DIRS})
find_library(MPFR_LIBRARY NAMES mpfr libmpfr HINTS ${PC_MPFR_LIBDIR} ${PC_MPFR_LIBRARY_DIRS})

if(MPFR_INCLUDE_DIR AND EXISTS "${MPFR_INCLUDE_DIR}/mpfr.h")
  file(STRINGS "${MPFR_INCLUDE_DIR}/mpfr.h" _mpfr_line REGEX "^#define MPFR_VERSION_STRING ")
  string(REGEX REPLACE "^#define MPFR_VERSION_STRING \"([^\"]*)\".*" "\\1" MPFR_VERSION "${_mpfr_line}")
  unset(_mpfr_line)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MPFR REQUIRED_VARS MPFR_LIBRARY MPFR_INCLUDE_DIR GMP_FOUND
                                  VERSION_VAR MPFR_VERSION)
mark_as_advanced(MPFR_INCLUDE_DIR MPFR_LIBRARY)

if(MPFR_FOUND)
  set(MPFR_INCLUDE_DIRS ${MPFR_INCLUDE_DIR} ${GMP_INCLUDE_DIRS})
  set(MPFR_LIBRARIES ${MPFR_LIBRARY} ${GMP_LIBRARIES})
  if(NOT TARGET MPFR::MPFR)
    add_library(MPFR::MPFR UNKNOWN IMPORTED)
    set_target_properties(MPFR::MPFR PROPERTIES
      IMPORTED_LOCATION "${MPFR_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${MPFR_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES GMP::GMP)
  endif()
endif()
