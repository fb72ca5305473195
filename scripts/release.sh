#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# release.sh [OUTDIR] - the release files of the commit checked out (HEAD),
# with their SHA-256 sums, into OUTDIR (default dist/):
#
#   clpe-V.tar.gz                 the source archive (git archive of HEAD):
#                                 what distributions and FetchContent take
#   python/clpe-V.tar.gz          the Python sdist (it carries the C sources)
#   python/clpe-V-py3-none-manylinux_*.whl
#                                 the wheel, built from that sdist and
#                                 repaired by auditwheel (scripts/wheel.sh)
#   SHA256SUMS                    `cd OUTDIR && sha256sum -c SHA256SUMS`
#
# The sdist and the wheel are built from the source archive, not from the
# working tree, so all three hold the same commit; uncommitted changes are
# refused. Needs git, a C toolchain with CMake, the OpenCL, MPFR, libpng and jansson
# development files (scripts/setup.sh), and PyPI for the build tools
# (installed into a temporary venv). PYTHON names the interpreter (python3).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)

fail() { echo "release: $*" >&2; exit 1; }
git rev-parse --git-dir >/dev/null 2>&1 || fail "not a git checkout"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  fail "the working tree has uncommitted changes: commit them (the archive is HEAD)"
fi
version=$(sed -n 's/^#define CLPE_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' include/clpe.h |
          paste -sd.)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "no version in include/clpe.h ('$version')"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== release $version: the source archive (git archive HEAD)"
archive="clpe-$version.tar.gz"
git archive --format=tar.gz --prefix="clpe-$version/" -o "$out/$archive" HEAD
tar -C "$work" -xzf "$out/$archive"

echo "== release $version: the sdist and the manylinux wheel, from the archive"
rm -rf "$out/python"
"$work/clpe-$version/scripts/wheel.sh" "$out/python"
sdist="python/clpe-$version.tar.gz"
[ -f "$out/$sdist" ] || fail "no $sdist"
wheels=("$out"/python/clpe-"$version"-*manylinux*.whl)
[ -f "${wheels[0]}" ] || fail "no manylinux wheel in $out/python"

echo "== release $version: SHA256SUMS"
(cd "$out" && sha256sum "$archive" "$sdist" "${wheels[@]#"$out"/}" >SHA256SUMS &&
   sha256sum -c --quiet SHA256SUMS)
cat "$out/SHA256SUMS"
