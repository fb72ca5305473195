# SPDX-License-Identifier: Apache-2.0
# embed_kernels.cmake - run with `cmake -P`: turn a kernel .cl file into a C
# source holding it as a NUL-terminated byte array.
#
#   cmake -DINPUT=kernels/clpe_kernels.cl -DOUTPUT=kernel_source.c -DSYMBOL=name -P embed_kernels.cmake
#
# Local `#include "file.h"` lines are replaced by that file (from the same
# folder), so the kernels stay ordinary .cl files that also compile on their
# own with -I kernels, while the library carries one self-contained source.
cmake_minimum_required(VERSION 3.21)

get_filename_component(dir "${INPUT}" DIRECTORY)

# The text of `file` (a name in dir) with each local include replaced where it
# stands by that file's own expanded text (a body included several times is
# copied each time; includes nest), between #line directives, so a compiler's
# message names the real file and line even in the embedded copy.
function(expand_includes file out)
  file(READ "${dir}/${file}" rest)
  set(text "")
  set(line 1)
  while(TRUE)
    string(FIND "${rest}" "#include \"" pos)
    if(pos EQUAL -1)
      break()
    endif()
    string(SUBSTRING "${rest}" 0 ${pos} before)
    string(REGEX MATCHALL "\n" newlines "${before}")
    list(LENGTH newlines count)
    math(EXPR line "${line} + ${count} + 1")
    string(SUBSTRING "${rest}" ${pos} -1 rest)
    string(FIND "${rest}" "\n" eol)
    string(SUBSTRING "${rest}" 0 ${eol} include_line)
    math(EXPR eol "${eol} + 1")
    string(SUBSTRING "${rest}" ${eol} -1 rest)
    string(REGEX REPLACE "#include \"([^\"]+)\".*" "\\1" name "${include_line}")
    expand_includes("${name}" body)
    string(APPEND text "${before}#line 1 \"${name}\"\n${body}\n#line ${line} \"${file}\"\n")
  endwhile()
  string(APPEND text "${rest}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

get_filename_component(main_name "${INPUT}" NAME)
expand_includes("${main_name}" text)

# hex bytes, 16 to a line: two regular expressions over the whole text, since
# a loop over the bytes in the CMake language takes minutes.
string(HEX "${text}" hex)
string(REPEAT "[0-9a-f]" 32 sixteen_bytes)
string(REGEX REPLACE "(${sixteen_bytes})" "\\1\n" hex "${hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")

file(WRITE "${OUTPUT}.tmp"
  "/* Generated from ${INPUT} by cmake/embed_kernels.cmake. Do not edit. */\n"
  "const char ${SYMBOL}[] = {\n${body}0x00};\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
