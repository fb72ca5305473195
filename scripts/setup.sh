#!/usr/bin/env bash
# setup.sh - install what clpe needs to build, test and run on Debian/Ubuntu.
# Idempotent: installs only the packages that are missing (apt-get, once).
set -euo pipefail

packages=(
  build-essential cmake pkg-config       # compiler and build
  ocl-icd-opencl-dev opencl-c-headers    # the OpenCL ICD loader and Khronos headers
  pocl-opencl-icd clinfo                 # a CPU OpenCL device, and a way to list devices
  libmpfr-dev                            # tuning words and the test reference
  libcriterion-dev                       # tests
  libpng-dev                             # clpe plot
  clang libclang-rt-dev                  # libFuzzer targets (the runtime is only a Recommends)
  python3                                # CLI tests read .npy files back
)

missing=()
# The Python package (pip install ./python, in a venv that sees these) and
# its tests; transformers comes from PyPI into that venv (scripts/test.sh).
packages+=(python3-venv python3-numpy python3-pyopencl python3-pytest python3-torch)
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all dependencies present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
