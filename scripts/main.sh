#!/usr/bin/env bash
# main.sh - install, build, and run clpe's main job on the default device
# (the first GPU, else the first OpenCL device: PoCL on a machine without a
# GPU; CLPE_DEVICE picks another):
#   1. list the devices;
#   2. encode one million positions starting at 2^40 - far past where the
#      usual float32 formula is noise - into a NumPy file, on the device;
#   3. run the conformance check: every output bit of every path against the
#      host emulation, and the error against an MPFR reference.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"

clpe=build/host/cli/clpe
"$clpe" devices
"$clpe" encode --seq 1000000 --d 64 --start 1099511627776 -o build/pe.npy
"$clpe" check
