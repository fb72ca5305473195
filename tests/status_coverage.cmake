# SPDX-License-Identifier: Apache-2.0
# status_coverage.cmake - every status clpe.h declares is named by at least
# one test file, so the README's "one test per status" stays true when a
# code is added. Run as a ctest:
#   cmake -DHEADER=include/clpe.h -DTEST_DIR=tests -P tests/status_coverage.cmake
file(STRINGS ${HEADER} lines REGEX "^[ \t]*CLPE_ERROR_[A-Z0-9_]+ = -[0-9]+")
file(GLOB test_files ${TEST_DIR}/test_*.c)
set(tests_text "")
foreach(f IN LISTS test_files)
  file(READ ${f} text)
  string(APPEND tests_text "${text}")
endforeach()
set(count 0)
set(missing "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^[ \t]*(CLPE_ERROR_[A-Z0-9_]+) = .*" "\\1" name "${line}")
  if(name STREQUAL "CLPE_ERROR_END_UNSTABLE")
    continue() # the sentinel, not a status
  endif()
  math(EXPR count "${count} + 1")
  # a whole word: CLPE_ERROR_NULL does not count for CLPE_ERROR_NULL_QUEUE
  string(REGEX MATCH "${name}([^A-Z0-9_]|$)" found "${tests_text}")
  if(NOT found)
    list(APPEND missing ${name})
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "no CLPE_ERROR_* codes found in ${HEADER}")
endif()
if(missing)
  message(FATAL_ERROR "statuses no test names: ${missing}")
endif()
message(STATUS "all ${count} statuses are named by a test")
