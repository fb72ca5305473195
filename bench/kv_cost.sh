#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kv_cost.sh - instructions per token, offline for NVIDIA sm_90, of rotary
# into a KV cache against the two passes it replaces (rotation, then a copy
# into the cache), for f32, f16 and bf16: bench/kv_cost.cl's kernels (the
# library's own walks with one call's path fixed) through
# bench/static_cost.sh, in the one-pair (GPU) launch shape.
#
#   bench/kv_cost.sh        prints the table; exits 1 where the fused kernel
#                           issues more per token than the two passes
#
# The token loop of each kernel is the path a work-item runs per token
# (kv_cost.cl explains why); per token = that loop x the work-items of a
# token: head_dim / 2 pairs, one per work-item in float32 and two in
# 16-bit storage. Static counts stand in for a GPU's own counters: NVIDIA's
# driver compiles OpenCL with its own front end.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(STATIC_COST_TARGETS=sm_90 STATIC_COST_SHAPES=1 \
      STATIC_COST_OPTIONS="-I$PWD/kernels -DPE_OPS_ROWS=0 -mllvm -unroll-threshold=100000" \
      bench/static_cost.sh bench/kv_cost.cl)
if ! grep -q '^sm_90 .* cost_kv_f32 ' <<<"$out"; then
  echo "$out"
  echo "kv_cost: no sm_90 counts (ptxas and cuobjdump are needed; see bench/static_cost.sh)"
  exit 0
fi
python3 - "$out" <<'PY'
import sys
loops = {}
for line in sys.argv[1].splitlines():
    f = line.split()
    if len(f) > 7 and f[0] == "sm_90" and f[2].startswith("cost_"):
        loops[f[2]] = int(f[7])
head_dim, worse = 128, False
print("sm_90, instructions per token (32 q heads, 8 kv heads, head 128; "
      "token loop x work-items per token)")
print(f"{'dtype':6} {'rotation':>9} {'copy':>7} {'both':>7} {'fused':>7}  fused/both")
for t, pairs in (("f32", 1), ("f16", 2), ("bf16", 2)):
    items = head_dim // 2 // pairs
    rope, copy, kv = (loops[f"cost_{k}_{t}"] * items for k in ("rope", "copy", "kv"))
    worse |= kv > rope + copy
    print(f"{t:6} {rope:9} {copy:7} {rope + copy:7} {kv:7}  {kv / (rope + copy):.2f}")
if worse:
    print("kv_cost: the fused kernel issues more per token than rotation + copy")
    sys.exit(1)
PY
