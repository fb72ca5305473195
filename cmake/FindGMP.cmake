# SPDX-License-Identifier: Apache-2.0
# FindGMP: the GNU multiple precision library.
#
# Imported target:  GMP::GMP
# Result variables: GMP_FOUND, GMP_INCLUDE_DIRS, GMP_LIBRARIES, GMP_VERSION
# Cache variables:  GMP_INCLUDE_DIR, GMP_LIBRARY (set them to choose a copy)
#
# pkg-config, where present, only hints where to look: the library and header
# found are what the target names, so a static consumer links the same files
# a shared build did.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_GMP QUIET gmp)
endif()

find_path(GMP_INCLUDE_DIR NAMES gmp.h HINTS ${PC_GMP_INCLUDEDIR} ${PC_GMP_INCLUDE_DIRS})
find_library(GMP_LIBRARY NAMES gmp libgmp HINTS ${PC_GMP_LIBDIR} ${PC_GMP_LIBRARY_DIRS})

if(GMP_INCLUDE_DIR)
  # gmp.h may include a per-architecture gmp-<arch>.h holding the numbers.
  file(GLOB _gmp_headers "${GMP_INCLUDE_DIR}/gmp.h" "${GMP_INCLUDE_DIR}/gmp-*.h")
  foreach(_gmp_header IN LISTS _gmp_headers)
    file(STRINGS "${_gmp_header}" _gmp_lines REGEX "^#define __GNU_MP_VERSION(_MINOR|_PATCHLEVEL)? +[0-9]+")
    if(_gmp_lines)
      foreach(_part "" _MINOR _PATCHLEVEL)
        string(REGEX REPLACE ".*#define __GNU_MP_VERSION${_part} +([0-9]+).*" "\\1" _gmp_v${_part} "${_gmp_lines}")
      endforeach()
      set(GMP_VERSION "${_gmp_v}.${_gmp_v_MINOR}.${_gmp_v_PATCHLEVEL}")
      break()
    endif()
  endforeach()
  unset(_gmp_headers)
  unset(_gmp_header)
  unset(_gmp_lines)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(GMP REQUIRED_VARS GMP_LIBRARY GMP_INCLUDE_DIR
                                  VERSION_VAR GMP_VERSION)
mark_as_advanced(GMP_INCLUDE_DIR GMP_LIBRARY)

if(GMP_FOUND)
  set(GMP_INCLUDE_DIRS ${GMP_INCLUDE_DIR})
  set(GMP_LIBRARIES ${GMP_LIBRARY})
  if(NOT TARGET GMP::GMP)
    add_library(GMP::GMP UNKNOWN IMPORTED)
    set_target_properties(GMP::GMP PROPERTIES
      IMPORTED_LOCATION "${GMP_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${GMP_INCLUDE_DIR}")
  endif()
endif()
