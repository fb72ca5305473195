# SPDX-License-Identifier: Apache-2.0
# inline_header.cmake - run with `cmake -P`: write INPUT with each local
# `#include "file.h"` line replaced by that file (from the same folder), so
# the OpenCL C header users install is one self-contained file made from the
# same text the library's kernels include. Only includes that begin a line
# count (not one a comment mentions).
#
#   cmake -DINPUT=kernels/clpe_device.h -DOUTPUT=include/clpe_device.h -P inline_header.cmake
cmake_minimum_required(VERSION 3.21)

get_filename_component(dir "${INPUT}" DIRECTORY)
get_filename_component(main_name "${INPUT}" NAME)
file(READ "${INPUT}" rest)
set(text "")
while(TRUE)
  string(FIND "${rest}" "\n#include \"" pos)
  if(pos EQUAL -1)
    break()
  endif()
  math(EXPR pos "${pos} + 1")
  string(SUBSTRING "${rest}" 0 ${pos} before)
  string(SUBSTRING "${rest}" ${pos} -1 rest)
  string(FIND "${rest}" "\n" eol)
  string(SUBSTRING "${rest}" 0 ${eol} include_line)
  math(EXPR eol "${eol} + 1")
  string(SUBSTRING "${rest}" ${eol} -1 rest)
  string(REGEX REPLACE "#include \"([^\"]+)\".*" "\\1" name "${include_line}")
  file(READ "${dir}/${name}" body)
  string(APPEND text "${before}/* ---- ${name}, the arithmetic clpe's kernels share ---- */\n"
         "${body}/* ---- end of ${name} ---- */\n")
endwhile()
string(APPEND text "${rest}")
file(WRITE "${OUTPUT}.tmp" "${text}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
