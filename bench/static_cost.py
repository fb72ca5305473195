#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""static_cost.py - the table rows of bench/static_cost.sh, from compiler output.

    static_cost.py nvidia W PTXAS_LOG [SASS_DUMP]   (cuobjdump -sass output)
    static_cost.py amd W TARGET ASM                 (clang -S output for amdgcn)

Prints one row per kernel (see static_cost.sh for the columns and what they
count). W is the launch shape the kernels were compiled for (-DPE_PAIRS): a
work-item writes 2*W values per row.
"""
import math
import os
import re
import sys

# The library's work-group size on GPUs (host/device/program.c): occupancy is
# counted in whole work-groups of this many work-items.
GPU_WORK_GROUP = 128

# STATIC_COST_HEAD_LOOPS=1: under each NVIDIA rotary row, one line per head
# loop (bench/static_cost.sh)
HEAD_LOOPS = os.environ.get("STATIC_COST_HEAD_LOOPS") == "1"


def nvidia_occupancy(regs):
    """Resident warps / 64 on sm_90 given registers per thread: 64 K
    registers per SM, allocated per warp in units of 256, whole blocks."""
    if regs <= 0:
        return None
    per_warp = math.ceil(regs * 32 / 256) * 256
    warps = min(64, 65536 // per_warp)
    block_warps = GPU_WORK_GROUP // 32
    warps = (warps // block_warps) * block_warps
    return warps / 64


def parse_ptxas(path):
    """{kernel: (registers, spill store bytes, spill load bytes, stack)}"""
    info, current = {}, None
    for line in open(path, errors="replace"):
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = m.group(1)
            info[current] = [0, 0, 0, 0]
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            info[current][3], info[current][1], info[current][2] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            info[current][0] = int(m.group(1))
    return info


SASS_LINE = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)([.\w]*)\s*([^;]*);")


def sass_class(op, suffix):
    if op in ("I2F", "I2FP", "F2I", "F2F", "F2FP", "MUFU") or op[0] in "FD":
        return "fp"
    if op == "HFMA2" and suffix.startswith(".MMA"):
        return "other"  # ptxas's idiom for moving a constant into a register
    if op[0] == "H":
        return "fp"
    if op[0] == "I" or op in ("LEA", "SHF", "LOP3", "SEL", "PRMT", "BMSK", "POPC", "FLO",
                              "SGXT", "VIADD", "VIMNMX", "IABS", "SHL", "SHR"):
        return "int"
    if op.startswith(("LD", "ST", "ATOM", "RED")):
        return "mem"
    return "other"


def parse_sass(path):
    """{kernel: [(address, opcode, suffix, operands)]}"""
    kernels, current = {}, None
    for line in open(path, errors="replace"):
        m = re.search(r"Function : (\w+)", line)
        if m:
            current = m.group(1)
            kernels[current] = []
            continue
        m = SASS_LINE.match(line)
        if m and current:
            kernels[current].append((int(m.group(1), 16), m.group(3), m.group(4), m.group(5)))
    return kernels


def branch_target(operands):
    m = re.search(r"0x([0-9a-f]+)", operands)
    return int(m.group(1), 16) if m else None


# The multiplies of a rotation: a' = fma(a, c, -(b * s)), b' = fma(a, s, b * c)
# are two fma and two multiplies per rotated pair.
ROTATE_OPS = 4
SASS_ROTATE = ("FFMA", "FMUL", "DFMA", "DMUL")
AMD_ROTATE = ("v_fma_f32", "v_mul_f32", "v_fmac_f32", "v_fma_f64", "v_mul_f64")
AMD_ROTATE_PACKED = ("v_pk_fma_f32", "v_pk_mul_f32")  # two lanes each


def amd_per_rotation(insns, loops, inner):
    """per_rotation for AMD assembly, whose loops LLVM names in comments:
    loops[i] is the innermost loop holding instruction i, inner the loops
    LLVM calls inner loop headers (holding no other loop)."""
    size, ops = {}, {}
    for mnemonic, loop in zip(insns, loops):
        if loop not in inner:
            continue
        size[loop] = size.get(loop, 0) + 1
        n = 2 if mnemonic.startswith(AMD_ROTATE_PACKED) else 1 if mnemonic.startswith(AMD_ROTATE) else 0
        ops[loop] = ops.get(loop, 0) + n
    heads = [h for h in size if ops[h] > 0]
    total_ops = sum(ops[h] for h in heads)
    return sum(size[h] for h in heads) / (total_ops / ROTATE_OPS) if total_ops else None


def per_rotation(spans, insns_in, rotate_ops_in):
    """Rotary kernels: static instructions per rotated pair in the head
    loops, the innermost loops (holding no other loop) with rotation
    arithmetic: their instructions over the rotations they hold (their
    multiplies and fma / 4). Both layouts' code may share one loop, so this
    is a static count, not a count of instructions executed."""
    inner = [s for s in spans
             if not any(o != s and s[0] <= o[0] and o[1] <= s[1] for o in spans)]
    heads = [s for s in inner if rotate_ops_in(s) > 0]
    ops = sum(rotate_ops_in(s) for s in heads)
    if not ops:
        return None
    return sum(insns_in(s) for s in heads) / (ops / ROTATE_OPS)


def sass_head_loops(insns):
    """The rotary head loops of a kernel, one line each: where, how many
    instructions, rotations and instructions per rotation, and the widths
    its loads and stores move (a loop of element moves, or of words)."""
    body = [i for i in insns if i[1] != "NOP"]
    spans = [(branch_target(o), a) for a, op, _, o in body
             if op == "BRA" and branch_target(o) is not None and branch_target(o) < a]
    inner = [s for s in spans
             if not any(o != s and s[0] <= o[0] and o[1] <= s[1] for o in spans)]
    lines = []
    for lo, hi in sorted(inner):
        loop = [i for i in body if lo <= i[0] <= hi]
        rotations = sum(1 for i in loop if i[1] in SASS_ROTATE) / ROTATE_OPS
        if not rotations:
            continue
        moves = {}
        for _, op, suffix, _ in loop:
            if op in ("LDG", "STG"):
                key = op + suffix.replace(".E", "").replace(".U16", ".16").replace(".64", ".64") or op
                key = key if key != op else op + ".32"
                moves[key] = moves.get(key, 0) + 1
        moved = " ".join(f"{k}x{v}" for k, v in sorted(moves.items()))
        lines.append(f"0x{lo:x}: {len(loop)} insns / {rotations:g} pairs = "
                     f"{len(loop) / rotations:.2f} ({moved})")
    return lines


def sass_counts(insns):
    """(instructions, row-loop instructions, class counts in the loop,
    instructions per rotated pair or None)."""
    body = [i for i in insns if i[1] != "NOP"]
    # the trailing "BRA to itself" that pads every kernel is not code
    while body and body[-1][1] == "BRA" and branch_target(body[-1][3]) == body[-1][0]:
        body.pop()
    # loops: a branch back to an earlier address
    spans = []
    for addr, op, _, operands in body:
        target = branch_target(operands) if op == "BRA" else None
        if target is not None:
            if target < addr:
                spans.append((target, addr))
    if not spans:
        return len(body), None, {}, None

    def classes_of(span):
        classes = {}
        for a, op, suffix, _ in body:
            if span[0] <= a <= span[1]:
                c = sass_class(op, suffix)
                classes[c] = classes.get(c, 0) + 1
        return classes

    lo, hi = row_loop(spans, classes_of)
    pair = per_rotation(spans, lambda s: sum(1 for i in body if s[0] <= i[0] <= s[1]),
                        lambda s: sum(1 for i in body if s[0] <= i[0] <= s[1] and i[1] in SASS_ROTATE))
    return len(body), sum(1 for i in body if lo <= i[0] <= hi), classes_of((lo, hi)), pair


def row_loop(spans, classes_of):
    """The row loop among the loops (first, last) of a kernel: the widest
    one that computes (holds floating-point work: the sine and cosine),
    where a kernel has one row loop per position source, the costlier;
    inner loops (the scalar tail) are counted within it. A kernel without
    floating point (pad_positions): its widest loop."""
    computing = [s for s in spans if classes_of(s).get("fp", 0) > 0]
    return max(computing or spans, key=lambda s: s[1] - s[0])


AMD_INSN = re.compile(r"^\s+([sv]_|global_|flat_|buffer_|ds_|scratch_)(\w*)")


def amd_class(mnemonic):
    if mnemonic.startswith(("global_", "flat_", "buffer_", "ds_", "scratch_", "s_load", "s_buffer_load")):
        return "mem"
    if mnemonic.startswith("v_") and re.search(r"_f(16|32|64)|_(sin|cos|rcp|sqrt|rsq|exp|log)|cvt_", mnemonic):
        return "fp"
    if mnemonic.startswith("s_") and re.match(r"s_(c?branch|endpgm|waitcnt|setpc|swappc|nop)", mnemonic):
        return "other"
    return "int"


def parse_amd(path):
    """{kernel: (info dict, [(line index, mnemonic)], {label: line index}, [(line, target)])}"""
    kernels, current, insns, labels, branches = {}, None, [], {}, []
    loops, inner, loop = [], set(), None
    pending_info = None
    for n, line in enumerate(open(path, errors="replace")):
        m = re.match(r"^(\w+):\s*;\s*@(\w+)", line)
        if m:
            current, insns, labels, branches = m.group(1), [], {}, []
            loops, inner, loop = [], set(), None
            kernels[current] = [{}, insns, labels, branches, loops, inner]
            continue
        if current is None:
            continue
        m = re.match(r"^(\.LBB\w+|; %bb\.\d+):(.*)", line)
        if m:
            if m.group(1).startswith(".LBB"):
                labels[m.group(1)] = len(insns)
            h = re.search(r"in Loop: Header=(BB\w+)", m.group(2))
            if h:
                loop = h.group(1)
            elif "Loop" in m.group(2) and m.group(1).startswith(".LBB"):
                loop = m.group(1)[2:]  # the header of a loop: .LBBn_m is BBn_m
            else:
                loop = None
            continue
        if "This Inner Loop Header" in line and loop:
            inner.add(loop)
            continue
        if line.startswith(".Lfunc_end"):
            pending_info = current
            continue
        m = re.match(r"^; (NumVgprs|NumAgprs|TotalNumVgprs|NumSgprs|ScratchSize|Occupancy): (\d+)", line)
        if m and pending_info:
            kernels[pending_info][0][m.group(1)] = int(m.group(2))
            continue
        m = AMD_INSN.match(line)
        if m and pending_info != current:
            mnemonic = m.group(1) + m.group(2)
            insns.append(mnemonic)
            loops.append(loop)
            b = re.match(r"^\s+s_c?branch\w*\s+(\.LBB\w+)", line)
            if b:
                branches.append((len(insns) - 1, b.group(1)))
    return kernels


def amd_counts(insns, labels, branches, loops, inner):
    spans = [(labels[t], at) for at, t in branches if t in labels and labels[t] <= at]
    if not spans:
        return len(insns), None, {}, None

    def classes_of(span):
        classes = {}
        for mnemonic in insns[span[0]:span[1] + 1]:
            c = amd_class(mnemonic)
            classes[c] = classes.get(c, 0) + 1
        return classes

    lo, hi = row_loop(spans, classes_of)
    pair = amd_per_rotation(insns, loops, inner)
    return len(insns), hi - lo + 1, classes_of((lo, hi)), pair


def row(target, w, kernel, regs, spill, occupancy, total, loop, classes, pair=None):
    # values a work-item writes per row: 2 per pair for the encoding kernels
    # (W pairs, or in the vector shape 512 for f16 and bf16: PE_PAIRS_ROWS16),
    # one position for pad_positions; left out for kernels whose rows hold
    # another amount of work (the rotary ones)
    pairs = int(w)
    if int(w) > 1 and (kernel.endswith("_f16") or kernel.endswith("_bf16")):
        pairs = 512
    if kernel.endswith("pad_positions"):
        outs = 1
    elif re.match(r"clpe_(table|add|gather)_", kernel):
        outs = 2 * pairs
    else:
        outs = None
    per_out = f"{loop / outs:.1f}" if loop and outs else "-"
    if re.match(r"clpe_rope_(f|bf)", kernel) and pair:
        per_out = f"{pair:.1f}/p"
    cls = " ".join(f"{k}{classes.get(k, 0)}" for k in ("int", "fp", "mem")) if classes else "-"
    print(f"{target:<8} {w:>2} {kernel:<20} {regs:>5} {spill:>9} {occupancy:>9} "
          f"{total if total is not None else '-':>6} {loop if loop else '-':>5} {per_out:>7}  {cls}")


def main(argv):
    if len(argv) >= 4 and argv[1] == "nvidia":
        w, regs = argv[2], parse_ptxas(argv[3])
        sass = parse_sass(argv[4]) if len(argv) > 4 else {}
        for kernel in sorted(regs):
            r, st, ld, _ = regs[kernel]
            occ = nvidia_occupancy(r)
            total = loop = pair = None
            classes = {}
            if kernel in sass:
                total, loop, classes, pair = sass_counts(sass[kernel])
            row("sm_90", w, kernel, r, f"{st}/{ld}", f"{occ:.0%}" if occ else "-", total, loop,
                classes, pair)
            if HEAD_LOOPS and kernel in sass and re.match(r"clpe_rope_(f|bf)", kernel):
                for line in sass_head_loops(sass[kernel]):
                    print(f"#   {kernel} head loop {line}")
        return 0
    if len(argv) == 5 and argv[1] == "amd":
        w, target = argv[2], argv[3]
        for kernel, (info, insns, labels, branches, loops, inner) in sorted(parse_amd(argv[4]).items()):
            total, loop, classes, pair = amd_counts(insns, labels, branches, loops, inner)
            vgprs = info.get("TotalNumVgprs", info.get("NumVgprs", 0))
            scratch = info.get("ScratchSize", 0)
            occ = f"{info['Occupancy']} waves" if "Occupancy" in info else "-"
            row(target, w, kernel, vgprs, f"{scratch}B", occ, total, loop, classes, pair)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
