#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu.sh - build clpe on a machine with a GPU and run, in one go, clpe-bench
# and (when the CLI builds) `clpe check` on the GPU, writing JSON and the
# printed tables to an output folder.
#
#   bench/gpu.sh [OUT_DIR]          OUT_DIR defaults to ./bench-out
#
# Environment:
#   CLPE_DEVICE      device selector (default: gpu); see clpe_select_device
#   CLPE_BUILD_DIR   build folder (default: build-gpu in the repository)
#   CLPE_BENCH_ARGS  extra clpe-bench flags, e.g. "--seq 131072" on a big GPU
#   CLPE_GPU_SWEEP   launch shapes to time as well (f32 only), each
#                    PAIRS:ROWS, e.g. "1:1 1:16 64:4" (see CLPE_PAIRS_PER_ITEM)
#   CLPE_DEPS_PREFIX a folder made by bench/gpu-deps.sh, for a machine that
#                    lacks MPFR, libpng or the OpenCL headers and loader
#
# What the machine must have (this script downloads nothing): a C11 compiler,
# CMake >= 3.21, pkg-config, MPFR (libmpfr-dev), the OpenCL headers
# (opencl-c-headers) and the ICD loader (ocl-icd-opencl-dev) with the GPU
# vendor's ICD registered under /etc/OpenCL/vendors. libpng (libpng-dev) is
# needed for the CLI only; without it the bench still runs. Tests are not
# built, so Criterion is not needed.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-./bench-out}
build=${CLPE_BUILD_DIR:-$root/build-gpu}
export CLPE_DEVICE=${CLPE_DEVICE:-gpu}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)

say() { printf '== %s\n' "$*"; }
if [[ -n ${CLPE_DEPS_PREFIX:-} ]]; then
  deps=$(cd "$CLPE_DEPS_PREFIX" && pwd)/usr
  export PKG_CONFIG_PATH=$deps/lib/x86_64-linux-gnu/pkgconfig:$deps/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export CMAKE_PREFIX_PATH=$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export CPATH=$deps/include:$deps/include/x86_64-linux-gnu${CPATH:+:$CPATH}
  export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$deps/lib/x86_64-linux-gnu
fi
fail() { printf 'gpu.sh: %s\n' "$*" >&2; exit 1; }

# ---- prerequisites: name what is missing instead of failing deep in CMake --
missing=()
command -v cmake >/dev/null || missing+=("cmake")
command -v cc >/dev/null || command -v gcc >/dev/null || command -v clang >/dev/null ||
  missing+=("a C compiler")
command -v pkg-config >/dev/null || missing+=("pkg-config")
if command -v pkg-config >/dev/null && ! pkg-config --exists mpfr; then
  # Some distributions ship MPFR without a .pc file; CMake needs one here.
  missing+=("mpfr (pkg-config module; libmpfr-dev)")
fi
cl_header=""
for dir in /usr/include /usr/local/include /opt/cuda/include /usr/local/cuda/include \
           ${CPATH:+${CPATH//:/ }}; do
  [[ -f $dir/CL/cl.h ]] && { cl_header=$dir; break; }
done
[[ -n $cl_header ]] || missing+=("OpenCL headers (CL/cl.h; opencl-c-headers)")
# ldconfig's cache is read whole first: under pipefail, "ldconfig -p | grep -q"
# fails at random, since grep exits at its first match and ldconfig, still
# printing, dies of SIGPIPE.
ld_cache=$(ldconfig -p 2>/dev/null || true)
if ! grep -q 'libOpenCL\.so' <<<"$ld_cache" &&
   ! ls /usr/lib*/libOpenCL.so* /usr/lib/*/libOpenCL.so* /usr/local/cuda/lib64/libOpenCL.so* \
        >/dev/null 2>&1; then
  missing+=("the OpenCL ICD loader (libOpenCL.so; ocl-icd-opencl-dev)")
fi
if ((${#missing[@]})); then
  fail "this machine lacks: $(IFS=', '; echo "${missing[*]}")"
fi

# ---- ICDs: a GPU driver library that no vendors file names -------------------
# Containers often carry the vendor's OpenCL library (mounted with the driver)
# but not its /etc/OpenCL/vendors/*.icd file, so the loader never sees the GPU.
# Name such libraries in a vendors folder of the build tree, next to copies
# of the registered ones, and point the loader there (nothing is installed).
vendors=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
icd_dir=$build/icd
extra=()
for lib in libnvidia-opencl.so.1 libamdocl64.so libigdrcl.so; do
  if grep -qE "[[:space:]]$lib[[:space:]]" <<<"$ld_cache" &&
     ! grep -qs "$lib" "$vendors"/*.icd; then
    extra+=("$lib")
  fi
done
if ((${#extra[@]})); then
  mkdir -p "$icd_dir" || exit 1
  rm -f "$icd_dir"/*.icd
  cp "$vendors"/*.icd "$icd_dir"/ 2>/dev/null
  for lib in "${extra[@]}"; do
    echo "$lib" >"$icd_dir/${lib%%.so*}.icd"
  done
  export OCL_ICD_VENDORS=$icd_dir
  say "registered ${extra[*]} for the ICD loader through OCL_ICD_VENDORS=$icd_dir"
fi

# ---- machine facts ----------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
  echo "cores: $jobs"
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "CLPE_DEVICE=$CLPE_DEVICE"
  command -v nvidia-smi >/dev/null &&
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
      --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
} | tee "$out/machine.txt"
if command -v clinfo >/dev/null; then
  clinfo -l 2>&1 | tee "$out/clinfo.txt"
fi

# ---- build -------------------------------------------------------------------
cli=ON
pkg-config --exists libpng 2>/dev/null || { cli=OFF; say "libpng missing: building without the CLI"; }
configure() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCLPE_BUILD_TESTS=OFF \
        -DCLPE_BUILD_BENCH=ON -DCLPE_BUILD_CLI="$1" >>"$out/configure.log" 2>&1
}
: >"$out/configure.log"
say "configure ($build)"
if ! configure "$cli"; then
  if [[ $cli == ON ]]; then
    say "configure with the CLI failed (see configure.log); retrying without it"
    cli=OFF
    configure OFF || fail "configure failed; see $out/configure.log"
  else
    fail "configure failed; see $out/configure.log"
  fi
fi
say "build clpe-bench"
cmake --build "$build" -j "$jobs" --target clpe-bench clpe-accuracy >"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log" >&2; fail "building clpe-bench failed; see $out/build.log"; }
if [[ $cli == ON ]]; then
  say "build clpe"
  cmake --build "$build" -j "$jobs" --target clpe_cli >>"$out/build.log" 2>&1 ||
    { cli=OFF; say "building the CLI failed (see build.log); skipping clpe check"; }
fi

# ---- run ----------------------------------------------------------------------
status=0
say "clpe-bench on CLPE_DEVICE=$CLPE_DEVICE"
# shellcheck disable=SC2086  # CLPE_BENCH_ARGS is a list of flags
"$build/bench/clpe-bench" --device "$CLPE_DEVICE" ${CLPE_BENCH_ARGS:-} --json "$out/bench.json" 2>&1 |
  tee "$out/bench.txt"
rc=${PIPESTATUS[0]}
((rc == 0)) || { say "clpe-bench exited with $rc"; status=1; }

if [[ $cli == ON && -x $build/host/cli/clpe ]]; then
  say "clpe check on CLPE_DEVICE=$CLPE_DEVICE"
  "$build/host/cli/clpe" check --device "$CLPE_DEVICE" --json "$out/check.json" 2>&1 | tee "$out/check.txt"
  rc=${PIPESTATUS[0]}
  ((rc == 0)) || { say "clpe check exited with $rc"; status=1; }
else
  say "clpe check skipped: no CLI binary"
fi

for shape in ${CLPE_GPU_SWEEP:-}; do
  say "clpe-bench f32 with CLPE_PAIRS_PER_ITEM=${shape%%:*} CLPE_ROWS_PER_ITEM=${shape##*:}"
  CLPE_PAIRS_PER_ITEM=${shape%%:*} CLPE_ROWS_PER_ITEM=${shape##*:} \
    "$build/bench/clpe-bench" --device "$CLPE_DEVICE" --dtype f32 \
    --json "$out/sweep-${shape%%:*}-${shape##*:}.json" >"$out/sweep-${shape%%:*}-${shape##*:}.txt" 2>&1 ||
    status=1
  grep -E '^(table|add|gather) .*full' "$out/sweep-${shape%%:*}-${shape##*:}.txt"
done

if [[ -x $build/bench/clpe-accuracy ]]; then
  say "clpe-accuracy on CLPE_DEVICE=$CLPE_DEVICE"
  "$build/bench/clpe-accuracy" --device "$CLPE_DEVICE" 2>&1 | tee "$out/accuracy.txt"
fi

say "results in $out"
exit $status
