#!/usr/bin/env bash
# run.sh BUILD_DIR - install a built clpe into a scratch prefix, run every
# installed program from there with nothing set, then build and run
# tests/consumer against the install four ways: CMake find_package with the
# shared and the static library, and pkg-config with both. Any failure
# stops the script with a message and a non-zero status.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

fail() { echo "consumer: FAILED: $*" >&2; exit 1; }
# loads PROGRAM PATTERN: does PROGRAM load a library matching PATTERN (a
# fixed string)? ldd's list is read whole first: under pipefail,
# "ldd | grep -q" fails at random, since grep exits at its first match and
# the loader, still printing, dies of SIGPIPE.
loads() {
  local list
  list=$(ldd "$1") || fail "ldd $1 exited $?"
  grep -qF "$2" <<<"$list"
}

echo "== consumer: install $build into a scratch prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 \
  || { cat "$work/install.log" >&2; fail "cmake --install"; }
pc_dirs=$(find "$prefix" -name 'clpe.pc' -path '*/pkgconfig/*' -printf '%h\n')
libdir=${pc_dirs%%$'\n'*}
[ -n "$libdir" ] || fail "no clpe.pc installed"
libdir=$(dirname "$libdir")
[ -f "$prefix/include/clpe.h" ] || fail "clpe.h not installed"

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
  echo "== consumer: find_package(clpe), $kind"
  cmake -S "$here" -B "$work/cmake-$kind" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCLPE_CONSUMER_STATIC=$static >"$work/cmake-$kind.log" 2>&1 \
    || { cat "$work/cmake-$kind.log" >&2; fail "find_package configure ($kind)"; }
  cmake --build "$work/cmake-$kind" >>"$work/cmake-$kind.log" 2>&1 \
    || { cat "$work/cmake-$kind.log" >&2; fail "find_package build ($kind)"; }
  run "find_package $kind" "$work/cmake-$kind/consumer"
  if [ "$kind" = static ] && loads "$work/cmake-$kind/consumer" libclpe.so; then
    fail "clpe::clpe_static build loads libclpe.so"
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

echo "== consumer: all four builds ran"
