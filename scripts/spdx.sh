#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# spdx.sh --check | --fix - the licence line of every source file.
#
# The files: the C sources and headers (*.c, *.h), the OpenCL C kernels
# (*.cl), CMake (CMakeLists.txt, *.cmake, *.cmake.in), pkg-config templates
# (*.pc.in), shell (*.sh) and Python (*.py) files of the source tree: those
# git tracks or would track in a checkout, every such file under the tree
# otherwise (a release archive).
#
#   --check  count the files with no `SPDX-License-Identifier: Apache-2.0`
#            in their first three lines; list them and exit 1 if any
#   --fix    add the line: first in the file, or after a `#!` line
#            (/* ... */ in C and OpenCL C, # elsewhere)
set -euo pipefail
cd "$(dirname "$0")/.."

LINE="SPDX-License-Identifier: Apache-2.0"
mode=${1:-}
case "$mode" in
  --check|--fix) ;;
  *) echo "usage: $0 --check | --fix" >&2; exit 2 ;;
esac

list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -co --exclude-standard
  else
    find . -path ./build -prune -o -path './build-*' -prune -o -type f -print | sed 's,^\./,,'
  fi
}

# comment_style FILE: "c" or "hash", or nothing for a file not checked.
comment_style() {
  case "$1" in
    *.c|*.h|*.cl) echo c ;;
    */CMakeLists.txt|CMakeLists.txt|*.cmake|*.cmake.in|*.pc.in|*.sh|*.py) echo hash ;;
  esac
}

checked=0
missing=()
while IFS= read -r file; do
  [ -f "$file" ] && [ ! -L "$file" ] || continue
  style=$(comment_style "$file")
  [ -n "$style" ] || continue
  checked=$((checked + 1))
  if head -n 3 "$file" | grep -qF "$LINE"; then
    continue
  fi
  if [ "$mode" = --check ]; then
    missing+=("$file")
    continue
  fi
  if [ "$style" = c ]; then
    text="/* $LINE */"
  else
    text="# $LINE"
  fi
  if [ ! -s "$file" ]; then
    printf '%s\n' "$text" >"$file"
  elif [ "$style" = hash ] && head -n 1 "$file" | grep -q '^#!'; then
    sed -i "1a $text" "$file"
  else
    sed -i "1i $text" "$file"
  fi
  echo "spdx: added to $file"
done < <(list_files)

if [ "$mode" = --check ]; then
  echo "spdx: ${#missing[@]} of $checked source files (*.c *.h *.cl CMakeLists.txt *.cmake" \
       "*.cmake.in *.pc.in *.sh *.py) lack '$LINE'"
  if [ ${#missing[@]} -gt 0 ]; then
    printf '  %s\n' "${missing[@]}"
    exit 1
  fi
fi
