#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh BUILD_DIR - clpe as other projects use it. Installs a static,
# library-only build and then BUILD_DIR (shared) into one scratch prefix, as a
# distribution shipping both would; runs every installed program from there
# with nothing set; checks the soname, the version file and that nothing
# forces CL_TARGET_OPENCL_VERSION on consumers; then builds and runs
# tests/consumer against it: find_package (shared, static), pkg-config
# (shared, static), add_subdirectory and FetchContent of the source tree.
# Any failure stops the script with a message and a non-zero status.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}

fail() { echo "consumer: FAILED: $*" >&2; exit 1; }
# quiet LOG COMMAND...: run COMMAND with its output in LOG, shown on failure.
quiet() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "$*"; }
}
# loads PROGRAM PATTERN: does PROGRAM load a library matching PATTERN (a
# fixed string)? ldd's list is read whole first: under pipefail,
# "ldd | grep -q" fails at random, since grep exits at its first match and
# the loader, still printing, dies of SIGPIPE.
loads() {
  local list
  list=$(ldd "$1") || fail "ldd $1 exited $?"
  grep -qF "$2" <<<"$list"
}

echo "== consumer: a static, library-only build installed first"
quiet "$work/static.log" cmake -S "$source_dir" -B "$work/static-build" -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF -DCLPE_BUILD_TESTS=OFF -DCLPE_BUILD_CLI=OFF -DCLPE_BUILD_BENCH=OFF
quiet "$work/static.log" cmake --build "$work/static-build" --parallel "$jobs"
quiet "$work/static.log" cmake --install "$work/static-build" --prefix "$prefix"

echo "== consumer: install $build into a scratch prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 \
  || { cat "$work/install.log" >&2; fail "cmake --install"; }
pc_dirs=$(find "$prefix" -name 'clpe.pc' -path '*/pkgconfig/*' -printf '%h\n')
libdir=${pc_dirs%%$'\n'*}
[ -n "$libdir" ] || fail "no clpe.pc installed"
libdir=$(dirname "$libdir")
[ -f "$prefix/include/clpe.h" ] || fail "clpe.h not installed"
[ -f "$libdir/libclpe.a" ] || fail "libclpe.a not installed beside the shared library"
[ -L "$libdir/libclpe.so.1.0" ] || fail "no libclpe.so.1.0 link for programs linked against 1.0.0"

echo "== consumer: soname, version file, no forced OpenCL version"
major=$(sed -n 's/^#define CLPE_VERSION_MAJOR \([0-9]*\).*/\1/p' "$source_dir/include/clpe.h")
soname=$(readelf -d "$libdir/libclpe.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libclpe.so.$major" ] || fail "soname '$soname', expected libclpe.so.$major"
version_file="$libdir/cmake/clpe/clpeConfigVersion.cmake"
cat >"$work/compatible.cmake" <<'CMAKE'
string(REPLACE "." ";" parts "${PACKAGE_FIND_VERSION}")
list(GET parts 0 PACKAGE_FIND_VERSION_MAJOR)
list(GET parts 1 PACKAGE_FIND_VERSION_MINOR)
include(${VERSION_FILE})
message("${PACKAGE_VERSION_COMPATIBLE}")
CMAKE
compatible() { # REQUESTED -> prints the version file's verdict
  cmake -DPACKAGE_FIND_VERSION="$1" -DVERSION_FILE="$version_file" -P "$work/compatible.cmake"
}
[ "$(compatible "$major.0" 2>&1)" = TRUE ] || fail "the CMake package refuses a request for $major.0"
[ "$(compatible "$((major + 1)).0" 2>&1)" = FALSE ] || fail "the CMake package accepts $((major + 1)).0"
if grep -l CL_TARGET_OPENCL_VERSION "$libdir"/cmake/clpe/*.cmake "$libdir/pkgconfig/clpe.pc"; then
  fail "the installed package forces CL_TARGET_OPENCL_VERSION on its users"
fi
echo "== consumer: the licence travels with the package"
cmp -s "$source_dir/LICENSE" "$prefix/share/doc/clpe/LICENSE" || fail "LICENSE not installed in share/doc/clpe"
license=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --variable=license clpe)
[ "$license" = Apache-2.0 ] || fail "clpe.pc's license variable is '$license'"
for module in FindMPFR.cmake FindGMP.cmake; do
  [ -f "$libdir/cmake/clpe/$module" ] || fail "$module not installed with the CMake package"
done
for prog in clpe-bench clpe-accuracy; do
  [ ! -e "$prefix/bin/$prog" ] || fail "$prog installed without CLPE_INSTALL_BENCH"
done

# Every installed program starts from this prefix with nothing set (no
# LD_LIBRARY_PATH, an empty environment): it finds libclpe through its own
# RPATH (one that cannot load exits 127 and prints no usage). --help needs
# no device.
echo "== consumer: run every installed program with an empty environment"
programs=0
for prog in "$prefix"/bin/*; do
  [ -f "$prog" ] && [ -x "$prog" ] || continue
  programs=$((programs + 1))
  name=$(basename "$prog")
  echo "-- $name --help"
  status=0
  env -i "$prog" --help >"$work/help.out" 2>&1 || status=$?
  if [ "$status" -ne 0 ] || ! grep -qi 'usage' "$work/help.out"; then
    cat "$work/help.out" >&2
    fail "installed $name --help exited $status without a usage text"
  fi
done
[ "$programs" -gt 0 ] || fail "no program installed in $prefix/bin"
echo "-- clpe --version"
version=$(env -i "$prefix/bin/clpe" --version) || fail "installed clpe --version exited $?"
case "$version" in
  "clpe "[0-9]*) ;;
  *) fail "installed clpe --version printed '$version'" ;;
esac

# The shared builds find the installed libclpe.so through this path.
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() { # name, binary
  echo "-- $1"
  "$2" || fail "$1: consumer exited $?"
}

for kind in shared static; do
  static=OFF
  [ "$kind" = static ] && static=ON
  echo "== consumer: find_package(clpe 1.0), $kind"
  cmake -S "$here" -B "$work/cmake-$kind" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCLPE_USE_STATIC_LIBS=$static >"$work/cmake-$kind.log" 2>&1 \
    || { cat "$work/cmake-$kind.log" >&2; fail "find_package configure ($kind)"; }
  cmake --build "$work/cmake-$kind" >>"$work/cmake-$kind.log" 2>&1 \
    || { cat "$work/cmake-$kind.log" >&2; fail "find_package build ($kind)"; }
  run "find_package $kind" "$work/cmake-$kind/consumer"
  if [ "$kind" = static ] && loads "$work/cmake-$kind/consumer" libclpe.so; then
    fail "CLPE_USE_STATIC_LIBS=ON build loads libclpe.so"
  fi
done

export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
cc=${CC:-cc}
echo "== consumer: pkg-config, shared"
# shellcheck disable=SC2046
"$cc" -std=c11 -o "$work/pc-shared" "$here/consumer.c" $(pkg-config --cflags --libs clpe) -lm \
  || fail "pkg-config shared build"
run "pkg-config shared" "$work/pc-shared"
# The shared build must really use the installed shared library.
loads "$work/pc-shared" "$libdir/libclpe.so" ||
  { ldd "$work/pc-shared" >&2; fail "pkg-config shared build does not load the installed libclpe.so"; }

echo "== consumer: pkg-config --static"
# -l:libclpe.a picks the archive even though libclpe.so sits beside it.
static_libs=$(pkg-config --static --libs clpe | sed 's/-lclpe\b/-l:libclpe.a/')
# shellcheck disable=SC2046,SC2086
"$cc" -std=c11 -o "$work/pc-static" "$here/consumer.c" $(pkg-config --cflags clpe) $static_libs -lm \
  || fail "pkg-config static build"
run "pkg-config static" "$work/pc-static"
if loads "$work/pc-static" libclpe.so; then fail "static build loads libclpe.so"; fi

unset LD_LIBRARY_PATH PKG_CONFIG_PATH
# clpe as a subproject, from its source: the library alone, whose kind the
# consumer's BUILD_SHARED_LIBS decides (unset: static), and the consumer's
# own CL_TARGET_OPENCL_VERSION kept.
# The consumer sets no build type: clpe must not choose one for it, so the
# consumer's own file compiles with no optimisation, debug or warning flag.
# (tests/consumer/CMakeLists.txt also compares every cache variable and the
# consumer's flags before and after adding clpe.)
echo "== consumer: add_subdirectory(clpe), static, the consumer on OpenCL 3.0, no build type"
quiet "$work/subdir.log" cmake -S "$here" -B "$work/subdir" -DCLPE_CONSUMER_MODE=subdirectory \
  -DCLPE_SOURCE_DIR="$source_dir" -DCONSUMER_OPENCL_VERSION=300 -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
quiet "$work/subdir.log" cmake --build "$work/subdir" --parallel "$jobs"
run "add_subdirectory" "$work/subdir/consumer"
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$work/subdir/CMakeCache.txt")
[ -z "$build_type" ] || fail "add_subdirectory(clpe) set the consumer's CMAKE_BUILD_TYPE to '$build_type'"
consumer_command=$(python3 -c '
import json, sys
for entry in json.load(open(sys.argv[1])):
    if entry["file"].endswith("/consumer.c"):
        print(entry.get("command") or " ".join(entry["arguments"]))' \
  "$work/subdir/compile_commands.json")
[ -n "$consumer_command" ] || fail "consumer.c is not in compile_commands.json"
for flag in -O1 -O2 -O3 -g -Wall -Wextra -Werror -ffp-contract=off; do
  case " $consumer_command " in
    *" $flag "*) fail "add_subdirectory(clpe) put $flag on the consumer's compile: $consumer_command" ;;
  esac
done
if loads "$work/subdir/consumer" libclpe.so; then fail "add_subdirectory without BUILD_SHARED_LIBS loads libclpe.so"; fi

echo "== consumer: FetchContent of a source archive, shared"
# The archive holds what a clone would: the files git tracks or would track.
(cd "$source_dir" && git ls-files -co --exclude-standard -z | xargs -0 ls -d 2>/dev/null) \
  >"$work/files" || true
[ -s "$work/files" ] || fail "no source files listed (is $source_dir a git checkout?)"
tar -C "$source_dir" -czf "$work/clpe-src.tar.gz" --transform 's,^,clpe/,' -T "$work/files"
quiet "$work/fetch.log" cmake -S "$here" -B "$work/fetch" -DCLPE_CONSUMER_MODE=fetchcontent \
  -DCLPE_ARCHIVE="$work/clpe-src.tar.gz" -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS=-DCONSUMER_OWN_FLAG
quiet "$work/fetch.log" cmake --build "$work/fetch" --parallel "$jobs"
run "FetchContent" "$work/fetch/consumer"
grep -qx 'CMAKE_BUILD_TYPE:[A-Z]*=Debug' "$work/fetch/CMakeCache.txt" ||
  fail "FetchContent of clpe changed the consumer's CMAKE_BUILD_TYPE from Debug"
grep -qx 'CMAKE_C_FLAGS:[A-Z]*=-DCONSUMER_OWN_FLAG' "$work/fetch/CMakeCache.txt" ||
  fail "FetchContent of clpe changed the consumer's CMAKE_C_FLAGS"
loads "$work/fetch/consumer" libclpe.so || fail "FetchContent with BUILD_SHARED_LIBS=ON does not load libclpe.so"

echo "== consumer: all six builds ran"
