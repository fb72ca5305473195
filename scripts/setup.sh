#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# setup.sh - install what clpe needs to build, test and run on Debian/Ubuntu.
# Idempotent: installs only the packages that are missing (apt-get, once).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

packages=(
  build-essential cmake pkg-config       # compiler and build
  ocl-icd-opencl-dev opencl-c-headers    # the OpenCL ICD loader and Khronos headers
  pocl-opencl-icd clinfo                 # a CPU OpenCL device, and a way to list devices
  libmpfr-dev                            # tuning words and the test reference
  libcriterion-dev                       # tests
  libpng-dev                             # clpe plot
  libjansson-dev                         # clpe rope-cache --hf-config: a model's config.json
  clang libclang-rt-dev                  # libFuzzer targets (the runtime is only a Recommends)
  python3                                # CLI tests read .npy files back
  libclblast-dev                         # examples/decoder: matrix products (CLBlast)
  mesa-opencl-icd                        # a second CPU runtime: Rusticl on llvmpipe (RUSTICL_ENABLE=llvmpipe)
  oclgrind                               # a third: the OpenCL simulator, with memory and race checkers
  clang-15 libclc-15 lld-15              # offline GPU compiles: OpenCL C to PTX and AMD ISA (bench/static_cost.sh)
  abigail-tools                          # abidiff: the ABI against 1.0.0 (tests/abi/check.sh)
  curl patch                             # examples/llama.cpp/run.sh: llama.cpp's sdist and the patches
)

# bench/static_cost.sh reads NVIDIA's SASS with cuobjdump and nvdisasm. The
# CUDA toolkit brings ptxas but, on some installs, not those two; NVIDIA ships
# them on PyPI. Only where ptxas exists (else the NVIDIA compile is skipped),
# and never fatal: without them the report still has registers and spills.
ptxas_found() {
  command -v ptxas >/dev/null 2>&1 || compgen -G "/usr/local/cuda*/bin/ptxas" >/dev/null
}
sass_tools() {
  ptxas_found || return 0
  if command -v cuobjdump >/dev/null 2>&1 && command -v nvdisasm >/dev/null 2>&1; then
    return 0
  fi
  python3 -c 'import glob, importlib.util as u, sys
s = u.find_spec("nvidia")
sys.exit(0 if s and all(any(glob.glob(p + "/*/bin/" + t) for p in s.submodule_search_locations)
                        for t in ("cuobjdump", "nvdisasm")) else 1)' 2>/dev/null && return 0
  echo "setup: installing cuobjdump and nvdisasm (PyPI) for the SASS counts"
  local pip=(python3 -m pip install -q --disable-pip-version-check)
  local tools=(nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)
  # a Debian-managed python3 refuses plain installs (PEP 668)
  "${pip[@]}" "${tools[@]}" 2>/dev/null || "${pip[@]}" --break-system-packages "${tools[@]}" ||
    echo "setup: warning: cuobjdump/nvdisasm not installed; bench/static_cost.sh will omit SASS counts" >&2
}

# Intel's OpenCL CPU runtime, a vendor's production compiler beside the
# three open-source runtimes: from PyPI into a cached venv outside the checkout
# (pinned, hashes checked: scripts/intel-opencl-requirements.txt), loaded
# through scripts/intel-opencl.sh. It needs python3-venv, so it runs after apt.
intel_opencl() {
  local root
  root=$("$here/intel-opencl.sh" --root)
  if [[ $(uname -m) != x86_64 ]]; then
    echo "setup: Intel's OpenCL CPU runtime skipped: it is built for x86-64 only (this machine: $(uname -m))"
    return 0
  fi
  if [[ -f $root/installed ]]; then
    return 0
  fi
  echo "setup: installing Intel's OpenCL CPU runtime (PyPI) into $root"
  rm -rf "$root"
  mkdir -p "$root/vendors"
  /usr/bin/python3 -m venv "$root/venv"
  "$root/venv/bin/pip" install -q --disable-pip-version-check --only-binary :all: \
    --require-hashes -r "$here/intel-opencl-requirements.txt"
  echo "$root/venv/lib/libintelocl.so" >"$root/vendors/intel.icd"
  touch "$root/installed"
}

missing=()
# The Python package (pip install ./python, in a venv that sees these) and
# its tests; transformers comes from PyPI into that venv (scripts/test.sh).
packages+=(python3-venv python3-numpy python3-pyopencl python3-pytest python3-torch python3-mpmath)
for p in "${packages[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all dependencies present"
  sass_tools
  intel_opencl
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
sass_tools
intel_opencl
