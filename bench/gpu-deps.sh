#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu-deps.sh - unpack clpe's build dependencies into a folder, for a GPU
# machine that has a compiler and a driver but cannot install packages.
#
#   bench/gpu-deps.sh DIR        (run on a Debian/Ubuntu machine with apt)
#   CLPE_DEPS_PREFIX=DIR bench/gpu.sh OUT    (on the GPU machine)
#
# Downloads (never installs) MPFR, GMP, libpng, zlib, jansson, the OpenCL headers and
# the ICD loader, unpacks them under DIR/usr, and rewrites their pkg-config
# files to be relocatable. Only the loader's library is used from here when
# the GPU machine has none of its own.
set -euo pipefail
dir=${1:?usage: bench/gpu-deps.sh DIR}
mkdir -p "$dir/debs"
dir=$(cd "$dir" && pwd)
(cd "$dir/debs" && apt-get download libmpfr-dev libmpfr6 libgmp-dev libgmp10 libpng-dev \
  libpng16-16 zlib1g-dev libjansson-dev libjansson4 ocl-icd-opencl-dev ocl-icd-libopencl1 \
  opencl-c-headers)
for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir"; done
rm -rf "$dir/debs"
# prefix=/usr -> relative to the folder each .pc file sits in
find "$dir/usr/lib" -name '*.pc' -exec sed -i 's|^prefix=/usr$|prefix=${pcfiledir}/../../..|' {} +
find "$dir/usr/share" -name '*.pc' -exec sed -i 's|^prefix=/usr$|prefix=${pcfiledir}/../..|' {} +
echo "gpu-deps: unpacked into $dir"
