#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# release_check.sh - scripts/release.sh as its users meet it. In a clone of
# this checkout (its tracked and untracked-but-not-ignored files, committed),
# it makes the release files, then checks:
#   - SHA256SUMS verifies every file;
#   - the wheel is tagged manylinux, auditwheel finds no external library but
#     the OpenCL ICD loader (MPFR, GMP, libpng and jansson are inside), and the
#     metadata names the licence and the clpe console script;
#   - for each interpreter of CLPE_RELEASE_PYTHONS (default: python3), a
#     fresh venv with packages from PyPI only: pip install the wheel,
#     `clpe --version`, `python -m clpe --version`, `python -m clpe devices`,
#     `pip show clpe`'s licence, and the sdist's own tests (mypy among them), unpacked into a
#     scratch folder with no checkout around them;
#   - the sdist builds and installs by itself into a fresh venv, and its
#     tests pass against that install;
#   - FetchContent of the source archive, with its SHA-256 checked, builds
#     and runs tests/consumer.
# Needs PyPI (the build tools, NumPy, PyOpenCL, pytest, mypy) and an OpenCL device.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
read -r -a pythons <<<"${CLPE_RELEASE_PYTHONS:-python3}"

fail() { echo "release_check: FAILED: $*" >&2; exit 1; }
quiet() { # LOG COMMAND...: the output goes to LOG, shown on failure
  local log=$1
  shift
  "$@" >"$log" 2>&1 || { tail -n 80 "$log" >&2; fail "$*"; }
}

echo "== release_check: a clone of the working tree"
clone="$work/clone"
mkdir "$clone"
# Files deleted in the working tree are left out; links stay links.
(cd "$source_dir" && git ls-files -co --exclude-standard -z |
   while IFS= read -r -d '' f; do
     if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
   done | tar --null -T - -cf -) | tar -C "$clone" -xf -
git_id=(-c user.name=clpe -c user.email=clpe@invalid)
git -C "$clone" init -q
git -C "$clone" add -A
git "${git_id[@]}" -C "$clone" commit -q -m "release check"

echo "== release_check: scripts/release.sh"
quiet "$work/release.log" "$clone/scripts/release.sh" "$work/dist"
dist="$work/dist"
version=$(sed -n 's/^#define CLPE_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' \
          "$source_dir/include/clpe.h" | paste -sd.)
archive="$dist/clpe-$version.tar.gz"
sdist="$dist/python/clpe-$version.tar.gz"
wheels=("$dist"/python/clpe-"$version"-py3-none-manylinux_*_x86_64.whl)
wheel=${wheels[0]}
for file in "$archive" "$sdist" "$wheel"; do
  [ -f "$file" ] || fail "release.sh made no $(basename "$file")"
done
(cd "$dist" && sha256sum -c SHA256SUMS) || fail "SHA256SUMS does not verify"
[ "$(wc -l <"$dist/SHA256SUMS")" -eq 3 ] || fail "SHA256SUMS lists $(wc -l <"$dist/SHA256SUMS") files, not 3"

echo "== release_check: the wheel"
python3 -m venv "$work/tools"
quiet "$work/tools.log" "$work/tools/bin/pip" install auditwheel
"$work/tools/bin/auditwheel" show --json "$wheel" >"$work/show.json"
python3 - "$work/show.json" "$wheel" <<'PY' || fail "the wheel is not what PyPI takes"
import json, re, sys, zipfile
show = json.load(open(sys.argv[1]))
# The tag its versioned symbols allow; the ICD loader, left out on purpose,
# is the one library auditwheel finds outside the wheel.
assert show["sym_tag"].startswith("manylinux_"), show["sym_tag"]
assert sorted(show["external_libs"]) == ["libOpenCL.so.1"], show["external_libs"]
with zipfile.ZipFile(sys.argv[2]) as whl:
    names = whl.namelist()
    info = next(n for n in names if n.endswith(".dist-info/WHEEL"))
    meta = whl.read(info.replace("WHEEL", "METADATA")).decode()
    entry = whl.read(info.replace("WHEEL", "entry_points.txt")).decode()
    tags = re.findall(r"^Tag: (\S+)$", whl.read(info).decode(), re.M)
assert tags and all(re.fullmatch(r"py3-none-manylinux_\d+_\d+_x86_64", t) for t in tags), tags
assert "clpe/libclpe.so.1" in names and "clpe/bin/clpe" in names, names
bundled = [n for n in names if n.startswith("clpe.libs/") and not n.endswith("/")]
for lib in ("libmpfr", "libgmp"):
    assert any(n.split("/")[1].startswith(lib) for n in bundled), (lib, bundled)
assert not any("OpenCL" in n for n in bundled), bundled
assert re.search(r"^License: Apache-2.0$", meta, re.M), "no License field"
assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
assert re.search(r"^clpe = clpe\.__main__:main$", entry, re.M), entry
print("wheel:", sys.argv[2].rsplit("/", 1)[1], "bundles", ", ".join(bundled))
PY

mkdir "$work/sdist"
tar -C "$work/sdist" -xzf "$sdist"
sdist_tests="$work/sdist/clpe-$version/tests"
[ -d "$sdist_tests" ] || fail "the sdist has no tests/"
# tests_in VENV: the sdist's own tests, run from a folder that is neither the
# checkout nor the unpacked sdist, against the package installed in VENV.
tests_in() {
  mkdir -p "$work/elsewhere"
  (cd "$work/elsewhere" && env -u CI -u CLPE_CLI -u CLPE_LIBRARY -u PYTHONPATH \
     "$1/bin/python" -m pytest -q -p no:cacheprovider "$sdist_tests") ||
    fail "the sdist's tests against $1"
}

for i in "${!pythons[@]}"; do
  python=${pythons[i]}
  name="$i"
  venv="$work/venv-$i"
  echo "== release_check: the wheel in a fresh venv of $python ($("$python" --version 2>&1))"
  "$python" -m venv "$venv"
  quiet "$work/pip-$name.log" "$venv/bin/pip" install --disable-pip-version-check "$wheel" pytest \
    mypy
  out=$("$venv/bin/clpe" --version) || fail "clpe --version exited $?"
  [[ $out == "clpe $version"* ]] || fail "clpe --version printed '$out'"
  out=$("$venv/bin/python" -m clpe --version) || fail "python -m clpe --version exited $?"
  [[ $out == "clpe $version"* ]] || fail "python -m clpe --version printed '$out'"
  "$venv/bin/python" -m clpe devices || fail "python -m clpe devices exited $?"
  out=$("$venv/bin/pip" show clpe) || fail "pip show clpe exited $?"
  grep -qx 'License: Apache-2.0' <<<"$out" || fail "pip show clpe names no licence: $out"
  tests_in "$venv"
done

echo "== release_check: the sdist, built and installed by itself"
venv="$work/venv-sdist"
"${pythons[0]}" -m venv "$venv"
quiet "$work/pip-sdist.log" "$venv/bin/pip" install --disable-pip-version-check \
  "$work/sdist/clpe-$version" pytest mypy
tests_in "$venv"

echo "== release_check: FetchContent of the source archive, its SHA-256 checked"
sha=$(sed -n "s/^\([0-9a-f]\{64\}\)  clpe-$version.tar.gz\$/\1/p" "$dist/SHA256SUMS")
[ -n "$sha" ] || fail "SHA256SUMS has no line for clpe-$version.tar.gz"
quiet "$work/fetch.log" cmake -S "$here" -B "$work/fetch" -DCLPE_CONSUMER_MODE=fetchcontent \
  -DCLPE_ARCHIVE="$archive" -DCLPE_ARCHIVE_SHA256="$sha" -DBUILD_SHARED_LIBS=ON
quiet "$work/fetch.log" cmake --build "$work/fetch" --parallel "$jobs"
"$work/fetch/consumer" || fail "the FetchContent consumer exited $?"

echo "== release_check: the release files of $version check out"
