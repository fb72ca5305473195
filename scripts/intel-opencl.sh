#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# intel-opencl.sh - run a command with Intel's OpenCL CPU runtime as its only
# OpenCL platform, without touching the system's files.
#
#   scripts/intel-opencl.sh CMD [ARGS...]    e.g. scripts/intel-opencl.sh build/host/cli/clpe check --quick
#   scripts/intel-opencl.sh --root           print the install folder (scripts/setup.sh fills it)
#   scripts/intel-opencl.sh --vendors        print the folder holding its intel.icd
#
# scripts/setup.sh installs the runtime from PyPI (pinned, hashes checked:
# scripts/intel-opencl-requirements.txt) into a venv under
# ${XDG_CACHE_HOME:-$HOME/.cache}/clpe/, in a folder named after the hash of
# the requirements, so changing a pin installs afresh.
# The command sees it through both ICD loaders: OCL_ICD_VENDORS (Debian's
# ocl-icd) names a folder whose only .icd file holds the library's absolute
# path, and OCL_ICD_FILENAMES (the Khronos loader) names the library. No
# LD_LIBRARY_PATH: libintelocl.so finds its companions through its RUNPATH
# ($ORIGIN), and that folder also holds Intel's own libOpenCL.so.1, which
# would replace the loader the command was built against.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pins=$(sha256sum "$here/intel-opencl-requirements.txt" | cut -c1-12)
root=${XDG_CACHE_HOME:-$HOME/.cache}/clpe/intel-opencl-$pins
case ${1-} in
--root) echo "$root"; exit 0 ;;
--vendors) echo "$root/vendors"; exit 0 ;;
"" | -h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
if [[ ! -f $root/installed ]]; then
  echo "intel-opencl: Intel's OpenCL runtime is not installed in $root (run scripts/setup.sh; x86-64 only)" >&2
  exit 2
fi
export OCL_ICD_VENDORS=$root/vendors
export OCL_ICD_FILENAMES=$root/venv/lib/libintelocl.so
exec "$@"
