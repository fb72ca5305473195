#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""peers.py - clpe on the CPU next to what people use today: PyTorch on the CPU.

Times, in float32 with torch using every core:
  * x.add_(pe) with a precomputed table (the usual fused-add stand-in; it
    moves 12 bytes per element: x read, pe read, x written);
  * building the table with torch (arange, exp, sin, cos: the recipe of the
    Annotated Transformer, paper frequencies, interleaved, like clpe's default);
then runs `clpe-bench --json` on the CPU OpenCL device with the same shape and
prints both side by side with their ratios.

Needs numpy and torch; without them it says so and exits 0 (they are optional
for clpe). Run it on a quiet machine: torch and the OpenCL CPU device share
the same cores, one after the other.

  python3 bench/peers.py [--bench build/bench/clpe-bench] [--seq N] [--d N] [--json FILE]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default=os.environ.get("CLPE_BENCH") or
                    os.path.join(HERE, "..", "build", "bench", "clpe-bench"),
                    help="the clpe-bench binary (default: build/bench/clpe-bench, or $CLPE_BENCH)")
    ap.add_argument("--device", default="cpu", help="clpe-bench --device selector (default: cpu)")
    ap.add_argument("--seq", type=int, default=32768, help="rows (default 32768)")
    ap.add_argument("--d", type=int, default=1024, help="model width (default 1024)")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads (default: every core this process may use)")
    ap.add_argument("--target-ms", type=float, default=200.0,
                    help="wall time of one timed repeat (default 200)")
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats (default 5)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    ap.add_argument("--json", help="also write every figure to this file")
    a = ap.parse_args()
    if a.quick:
        a.seq, a.d, a.target_ms, a.repeats = 256, 128, 10.0, 3
    return a


def time_call(fn, target_s, repeats):
    """Median, min and max seconds per call: one warm-up call, then a call
    count calibrated to target_s, repeated."""
    fn()
    n, t = 1, 0.0
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t >= 0.1 * target_s or n >= 100000:
            break
        n *= 4
    n = max(1, min(100000, round(target_s / (t / n))))
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        per.append((time.perf_counter() - t0) / n)
    per.sort()
    mid = len(per) // 2
    median = per[mid] if len(per) % 2 else 0.5 * (per[mid - 1] + per[mid])
    return {"median": median, "min": per[0], "max": per[-1], "calls": n}


def torch_table(torch, seq, d):
    pos = torch.arange(seq, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.empty(seq, d, dtype=torch.float32)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


def run_clpe_bench(a):
    if not os.access(a.bench, os.X_OK):
        sys.exit("peers.py: no clpe-bench at %s; build first (cmake --build build) "
                 "or pass --bench" % a.bench)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        cmd = [a.bench, "--device", a.device, "--dtype", "f32", "--seq", str(a.seq),
               "--d", str(a.d), "--repeats", str(a.repeats),
               "--target-ms", str(max(1, int(a.target_ms / 2))), "--json", out]
        print("running:", " ".join(cmd[:-2]), flush=True)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0 or not os.path.exists(out):
            sys.stdout.write(r.stdout)
            sys.exit("peers.py: clpe-bench failed (exit %d)" % r.returncode)
        with open(out) as f:
            return json.load(f)


def pick(bench, op, size="full"):
    """The clpe-bench row for op (f32); for a limit, its fastest variant."""
    rows = [r for r in bench["results"] if r["status"] == "ok" and r["size"] == size and
            r["op"].split("-x")[0] == op and r["dtype"] == "f32"]
    return max(rows, key=lambda r: r["gelem_per_s"]) if rows else None


def main():
    a = parse_args()
    try:
        import numpy  # noqa: F401  (torch's CPU tensors lean on it in many builds)
        import torch
    except ImportError as e:
        print("peers.py: needs numpy and torch for the comparison (%s); skipping." % e)
        return 0

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = a.threads or cores
    torch.set_num_threads(threads)
    seq, d = a.seq, a.d
    elems = seq * d
    target = a.target_ms * 1e-3
    print("torch %s, %d threads; shape %d x %d float32 (%.0f MiB)" %
          (torch.__version__, threads, seq, d, elems * 4 / 2**20), flush=True)

    pe = torch_table(torch, seq, d)
    x = torch.zeros(seq, d, dtype=torch.float32)
    t_add = time_call(lambda: x.add_(pe), target, a.repeats)
    t_table = time_call(lambda: torch_table(torch, seq, d), target, a.repeats)

    bench = run_clpe_bench(a)
    dev = bench["device"]
    rows = [
        # label, seconds/call, bytes moved, clpe-bench counterpart to compare against
        ("torch x.add_(pe), table precomputed", t_add["median"], 12 * elems, "add"),
        ("torch table build", t_table["median"], 4 * elems, "table"),
    ]
    print("\nclpe device: %s (%s), %d compute units" %
          (dev["name"], dev["platform"], dev["compute_units"]))
    print("%-38s %9s %8s %10s" % ("", "Gelem/s", "GB/s", "clpe/peer"))
    figures = {"torch_version": torch.__version__, "threads": threads, "seq": seq, "d": d,
               "peers": {}, "clpe": {}, "ratios": {}}
    for label, sec, nbytes, op in rows:
        g = elems / sec * 1e-9
        clpe = pick(bench, op)
        ratio = clpe["gelem_per_s"] / g if clpe else float("nan")
        print("%-38s %9.3f %8.2f" % (label, g, nbytes / sec * 1e-9))
        if clpe:
            print("%-38s %9.3f %8.2f %10.2f" % ("  clpe " + op, clpe["gelem_per_s"],
                                                 clpe["gb_per_s"], ratio))
        figures["peers"][label] = {"seconds": sec, "gelem_per_s": g,
                                   "gb_per_s": nbytes / sec * 1e-9}
        figures["ratios"]["clpe_%s_over_torch" % op] = ratio
    for op in ("stream", "fill"):
        lim = pick(bench, op)
        if lim:
            print("%-38s %9.3f %8.2f" % ("  limit: " + lim["op"] + " (clpe-bench)",
                                         lim["gelem_per_s"], lim["gb_per_s"]))
    for op in ("add", "table", "stream", "fill"):
        r = pick(bench, op)
        if r:
            figures["clpe"][op] = {"op": r["op"], "gelem_per_s": r["gelem_per_s"],
                                   "gb_per_s": r["gb_per_s"]}
    if a.json:
        figures["torch_timing"] = {"add": t_add, "table": t_table}
        figures["clpe_bench"] = bench
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=2)
        print("\nwrote", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
