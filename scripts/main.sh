#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# main.sh - install, build, and run clpe's main job on the default device
# (the first GPU, else the first OpenCL device: PoCL on a machine without a
# GPU; CLPE_DEVICE picks another), in about a minute on a CPU:
#   1. list the devices;
#   2. encode one million positions starting at 2^40 - far past where the
#      usual float32 formula is noise - into a NumPy file, on the device;
#   3. check rows of that file against 200-bit mpmath, next to the usual
#      float32 formula (scripts/demo_check.py);
#   4. print the seed's table (positions 5, 6, 305; d = 8).
# The full conformance run, every output bit of every path against the host
# emulation, is `build/host/cli/clpe check` (minutes on a CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"

clpe=build/host/cli/clpe
start=1099511627776 # 2^40
t0=$SECONDS
"$clpe" devices
"$clpe" encode --seq 1000000 --d 64 --start "$start" -o build/pe.npy
# Debian's interpreter, with the python3-numpy and python3-mpmath setup.sh installs.
/usr/bin/python3 scripts/demo_check.py "$start" build/pe.npy
"$clpe" table --d 8 --pos 5,6,305 --digits 3
echo "main.sh: main job done in $((SECONDS - t0)) s; the full conformance run: $clpe check"
