#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# static_cost.sh - compile clpe's kernels offline for GPUs and print their
# static cost: the GPU signal on a machine without a GPU, and CI's check
# that the kernels compile and link for NVIDIA and AMD.
#
#   bench/static_cost.sh [KERNELS.cl]      (default kernels/clpe_kernels.cl)
#
# Routes (Debian packages clang-15, libclc-15, lld-15; ptxas from the CUDA
# toolkit; cuobjdump and nvdisasm from the CUDA toolkit or PyPI):
#   sm_90           clang-15 -target nvptx64-nvidia-nvcl with libclc's
#                   nvptx64 bitcode to PTX, then ptxas -arch=sm_90 -v to a
#                   cubin, then cuobjdump -sass for the instruction stream
#   gfx90a gfx1100  clang-15 -target amdgcn-amd-amdhsa -nogpulib with libclc's
#                   amdgcn bitcode: assembly (-S) for the counts, and a full
#                   link to a code object (ld.lld) so an unresolved symbol fails
# Each for both launch shapes (-DPE_PAIRS=1, the GPU shape, and 64, where the
# 16-bit kernels take 128 pairs), with the
# library's build options (-cl-std=CL1.2, -I kernels).
# These are proxies: NVIDIA's driver compiles OpenCL with its own front end.
#
# Columns, per target, shape W and kernel:
#   regs   registers per work-item (NVIDIA: ptxas; AMD: VGPRs incl. AGPRs)
#   spill  NVIDIA: spill store/load bytes; AMD: scratch bytes per work-item
#          (16384 is the compiler's guess for a call it cannot see into)
#   occ    NVIDIA: theoretical sm_90 occupancy from registers alone (resident
#          warps of 64, in work-groups of 128, the library's GPU size);
#          AMD: the compiler's waves per SIMD
#   insns  static instructions in the whole kernel (SASS less NOPs and the
#          closing self-branch; AMD ISA)
#   loop   static instructions in the row loop: the widest backward branch
#          whose span holds floating-point work (where a kernel has one row
#          loop per position source, the costlier); every path of one row
#          (float16 groups, one pair, scalar tail) counted once, an inner
#          loop (groups, the scalar tail, the sequences) counted once
#   /out   loop / values a work-item writes per row (2 per pair for table,
#          add and gather: W pairs, 128 for f16 and bf16 in the W=64 shape;
#          1 for pad_positions). In the W=64 shape, inner loops run several
#          times a row, so this understates. For the rotary kernels (clpe_rope_*)
#          "N/p": static instructions per rotated pair in the head loops (the
#          innermost loops that rotate: their instructions over their two fma
#          and two multiplies per pair); "-" for the rotary cache.
#   int fp mem   the row loop's integer, floating-point and memory instructions
#
# STATIC_COST_HEAD_LOOPS=1 adds, under each NVIDIA rotary row, a line per
# head loop: its instructions, the pairs it rotates, their ratio, and the
# widths of its loads and stores (LDG.16 an element of 16 bits, LDG.32 a
# word of two, ...), so each way of moving a pair is priced on its own.
#
# Environment: STATIC_COST_TARGETS (default "sm_90 gfx90a gfx1100"),
# STATIC_COST_OPTIONS (more compiler options, blank-separated),
# STATIC_COST_SHAPES (default "1 64"), STATIC_COST_KEEP=DIR keeps the PTX,
# SASS and assembly; CLANG (default clang-15), CLC (libclc's folder),
# PTXAS (default: on PATH or in /usr/local/cuda*/bin; empty: skip NVIDIA).
# Exits 1 if any compile or link fails (after printing every target);
# skips NVIDIA, saying so, where ptxas is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-kernels/clpe_kernels.cl}
targets=${STATIC_COST_TARGETS:-sm_90 gfx90a gfx1100}
shapes=${STATIC_COST_SHAPES:-1 64}
clang=${CLANG:-clang-15}
parser="$PWD/bench/static_cost.py"
incdir=$(cd "$(dirname "$src")" && pwd)

die() { echo "static_cost: $*" >&2; exit 2; }
command -v "$clang" >/dev/null || die "$clang not found (scripts/setup.sh installs clang-15 libclc-15 lld-15)"
[[ -f $src ]] || die "$src not found"
clc=${CLC:-}
if [[ -z $clc ]]; then
  # The package's file list is read whole first: under pipefail, grep -m1
  # stopping early would kill dpkg with SIGPIPE and fail the pipeline.
  clc_files=$(dpkg -L libclc-15 2>/dev/null || true)
  clc_bc=$(grep -m1 '/nvptx64--nvidiacl.bc$' <<<"$clc_files" || echo /usr/lib/clc/x)
  clc=$(dirname "$clc_bc")
fi
[[ -f $clc/nvptx64--nvidiacl.bc && -f $clc/amdgcn--amdhsa.bc ]] ||
  die "libclc bitcode not found in $clc (scripts/setup.sh installs libclc-15; or set CLC)"

# PTXAS names ptxas; set it empty to leave the NVIDIA compile out
if [[ -n ${PTXAS+set} ]]; then
  ptxas=$PTXAS
else
  ptxas=$(command -v ptxas || true)
fi
if [[ -z $ptxas && -z ${PTXAS+set} ]]; then
  for p in /usr/local/cuda/bin/ptxas /usr/local/cuda*/bin/ptxas; do
    if [[ -x $p ]]; then ptxas=$p; break; fi
  done
fi
# cuobjdump -sass runs nvdisasm from PATH; PyPI's wheels keep both in
# site-packages/nvidia/cu*/bin
nvbin=$(python3 - 2>/dev/null <<'EOF' || true
import glob, importlib.util
spec = importlib.util.find_spec("nvidia")
for root in spec.submodule_search_locations if spec else []:
    for tool in sorted(glob.glob(root + "/*/bin/cuobjdump")):
        print(tool.rpartition("/")[0])
        raise SystemExit
EOF
)
[[ -n $nvbin ]] && PATH="$PATH:$nvbin"
[[ -n $ptxas ]] && PATH="$PATH:$(dirname "$ptxas")"
cuobjdump=$(command -v cuobjdump || true)
if [[ -n $cuobjdump ]] && ! command -v nvdisasm >/dev/null; then cuobjdump=; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
keep=${STATIC_COST_KEEP:-}
[[ -n $keep ]] && mkdir -p "$keep"

# The same options the library builds with (host/device/program.c), plus the
# bitcode of libclc for the builtins. The triple names differ only in
# spelling from libclc's (nvcl/nvidiacl, amd/unknown): -Wno-linker-warnings.
common=(-cl-std=CL1.2 -O3 -Xclang -finclude-default-header -Wno-linker-warnings -I "$incdir")
# more options, for a program of a user's own (STATIC_COST_OPTIONS, blank-separated:
# bench/device_header_cost.sh passes -I kernels for clpe_device.h, and a -D)
for option in ${STATIC_COST_OPTIONS:-}; do common+=("$option"); done

# which kernels: the commit, when they are this repository's own
origin=
if [[ $incdir == "$PWD/kernels" ]]; then
  origin=" ($(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- kernels 2>/dev/null || echo ', modified'))"
fi
echo "# clpe static cost of $src$origin"
echo "# $("$clang" --version | head -1); libclc $clc${ptxas:+; $("$ptxas" --version | tail -1)}"
[[ -n $ptxas && -z $cuobjdump ]] && echo "# cuobjdump/nvdisasm not found: NVIDIA rows have no instruction counts"
printf '%-8s %2s %-20s %5s %9s %9s %6s %5s %7s  %s\n' target W kernel regs spill occ insns loop /out "int fp mem"
failed=()
for target in $targets; do
  for w in $shapes; do
    base="$work/$target-w$w"
    log="$base.log"
    case $target in
    sm_*)
      if [[ -z $ptxas ]]; then
        printf '%-8s %2s %s\n' "$target" "$w" "skipped: ptxas not found (install the CUDA toolkit for the NVIDIA compile)"
        continue
      fi
      if ! "$clang" -target nvptx64-nvidia-nvcl "${common[@]}" -DPE_PAIRS="$w" \
           -Xclang -mlink-bitcode-file -Xclang "$clc/nvptx64--nvidiacl.bc" \
           -S "$src" -o "$base.ptx" >"$log" 2>&1 ||
         ! "$ptxas" -arch="$target" -v "$base.ptx" -o "$base.cubin" >>"$log" 2>&1; then
        printf '%-8s %2s FAILED: %s\n' "$target" "$w" "$(grep -m1 -Ei 'error|fatal' "$log" || tail -1 "$log")"
        failed+=("$target W=$w")
        continue
      fi
      sass=()
      if [[ -n $cuobjdump ]] && "$cuobjdump" -sass "$base.cubin" >"$base.sass" 2>>"$log"; then
        sass=("$base.sass")
      fi
      python3 "$parser" nvidia "$w" "$log" "${sass[@]}"
      ;;
    gfx*)
      amd=(-target amdgcn-amd-amdhsa -mcpu="$target" -nogpulib "${common[@]}" -DPE_PAIRS="$w"
           -Xclang -mlink-bitcode-file -Xclang "$clc/amdgcn--amdhsa.bc")
      if ! "$clang" "${amd[@]}" -S "$src" -o "$base.s" >"$log" 2>&1 ||
         ! "$clang" "${amd[@]}" "$src" -o "$base.hsaco" >>"$log" 2>&1; then
        printf '%-8s %2s FAILED: %s\n' "$target" "$w" "$(grep -m1 -Ei 'error' "$log" || tail -1 "$log")"
        failed+=("$target W=$w")
        continue
      fi
      python3 "$parser" amd "$w" "$target" "$base.s"
      ;;
    *)
      die "unknown target '$target' (sm_NN or gfxNNNN)"
      ;;
    esac
  done
done
[[ -n $keep ]] && cp "$work"/* "$keep"/ 2>/dev/null || true
if ((${#failed[@]})); then
  echo "static_cost: compile failed for ${failed[*]} (logs: set STATIC_COST_KEEP=DIR)"
  exit 1
fi
echo "static_cost: every kernel compiled and linked"
