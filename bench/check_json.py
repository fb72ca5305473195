#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_json.py - check a clpe-bench JSON file against schema clpe-bench/2.

    bench/check_json.py FILE                  check a file written by --json
    bench/check_json.py --run BENCH [ARGS]    run BENCH --quick ARGS --json TMP, check it

It checks what the schema in bench/RESULTS.md promises, recomputed from the
file's own figures: the keys of every part, the bytes each line must move
(from the element counts and the operation's definition), each ratio against
the Gelem/s of the line it names (the fastest variant of that family timed
in the same group, where the file names groups), and
the headline values and targets. A quick run must also have measured every
operation for every dtype it did not skip. Exit status 0 when all holds,
1 with one line per failure otherwise.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

SIZES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "u16": 2, "u64": 8}
STREAM = {"f32": "f32", "f16": "u16", "bf16": "u16", "f64": "u64"}
# family: (kind, element sizes moved per element, bytes per row)
FAMILIES = {
    "stream": ("limit", 2, 0), "fill": ("limit", 1, 0), "gather-stream": ("limit", 2, 4),
    "table-add": ("baseline", 3, 0), "gather-table-add": ("baseline", 3, 4),
    "table": ("clpe", 1, 0), "add": ("clpe", 2, 0), "add-out": ("clpe", 2, 0),
    "gather": ("clpe", 2, 4), "rope-stream": ("limit", 2, 0), "rope-table": ("baseline", 4, 0),
    "rope": ("clpe", 2, 0), "kv-copy": ("limit", 2, 0), "rope-copy": ("baseline", 2, 0),
    "rope-kv": ("clpe", 2, 0),
}
# families on the rotary shape: d is a token's query and key elements
ROTARY = ("rope-stream", "rope-table", "rope", "kv-copy", "rope-copy", "rope-kv")
# families measured for some dtypes only (rope-table: a 16-bit cache rounds cos and sin)
FAMILY_DTYPES = {"rope-table": ("f32", "f64")}
LIMIT_OF = {"table-add": "stream", "gather-table-add": "gather-stream", "table": "fill",
            "add": "stream", "add-out": "stream", "gather": "gather-stream",
            "rope-table": "rope-stream", "rope": "rope-stream", "rope-copy": "kv-copy",
            "rope-kv": "kv-copy"}
BASELINE_OF = {"add": "table-add", "gather": "gather-table-add", "rope": "rope-table",
               "rope-kv": "rope-copy"}
# families into a KV cache: q, k and v read and q, k and v written, per element
# of q and k (d on the rotary shape counts q and k)
KV_CACHE = ("kv-copy", "rope-copy", "rope-kv")
# headline ratios: (numerator, denominator, dtypes, target at batch 1, target at batch > 1)
HEADLINES = [("add", "table-add", ("f32", "f16", "bf16", "f64"), 1.0, 0.9),
             ("gather", "gather-table-add", ("f32", "f16", "bf16", "f64"), 0.9, 0.9),
             ("add", "stream", ("f32", "f16", "bf16"), 0.8, 0.8),
             ("table", "fill", ("f32",), 0.8, 0.8),
             ("rope", "rope-table", ("f32", "f64"), 1.0, 0.9),
             ("rope", "rope-stream", ("f32", "f16", "bf16", "f64"), 0.8, 0.8)]

failures = []


def fail(msg):
    failures.append(msg)


def close(a, b):
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-6)


def need(obj, keys, where):
    for k in keys:
        if k not in obj:
            fail("%s: no %r" % (where, k))


def label_dtype(family, dtype):
    return STREAM[dtype] if FAMILIES[family][0] == "limit" else dtype


def best(results, family, dtype, size, group=None):
    """The fastest measured line of family at (dtype, size), among the lines
    of group (the dtype whose operations they took turns with) when the file
    names groups; files written before `group` existed compare across all."""
    rows = [r for r in results if r["family"] == family and r["dtype"] == dtype and
            r["size"] == size and r["status"] == "ok" and
            (group is None or r.get("group", group) == group)]
    return max(rows, key=lambda r: r["gelem_per_s"]) if rows else None


def check(doc, quick_run):
    if doc.get("schema") != "clpe-bench/2":
        fail("schema is %r, not 'clpe-bench/2'" % doc.get("schema"))
        return
    need(doc, ("clpe_version", "date", "device", "params", "results", "enqueue_cost",
               "headline", "notes"), "top level")
    need(doc["device"], ("platform", "name", "type", "compute_units", "fp16", "fp64"), "device")
    p = doc["params"]
    need(p, ("batch", "seq", "d", "vocab", "small_seq", "table_rows", "quick", "target_ms",
             "repeats", "calls", "heads", "kv_heads", "head_dim", "dtypes", "ops", "small"),
         "params")
    rotary_d = (p.get("heads", 0) + p.get("kv_heads", 0)) * p.get("head_dim", 0)
    if p.get("table_rows") != p.get("seq"):
        fail("params: table_rows %r is not seq %r" % (p.get("table_rows"), p.get("seq")))
    results = doc["results"]
    grouped = any("group" in r for r in results)
    for i, r in enumerate(results):
        where = "results[%d] (%s %s %s)" % (i, r.get("op"), r.get("dtype"), r.get("size"))
        need(r, ("op", "family", "kind", "dtype", "size", "batch", "seq", "d", "elements",
                 "bytes", "status") + (("group",) if grouped else ()), where)
        if grouped and r.get("group") in STREAM and r.get("dtype") not in (
                r["group"], STREAM[r["group"]]):
            fail("%s: a %s line in the %s group" % (where, r.get("dtype"), r["group"]))
        elif grouped and r.get("group") not in STREAM:
            fail("%s: group %r is not a dtype" % (where, r.get("group")))
        fam = FAMILIES.get(r["family"])
        if fam is None:
            fail("%s: unknown family %r" % (where, r["family"]))
            continue
        if r["kind"] != fam[0]:
            fail("%s: kind %r, expected %r" % (where, r["kind"], fam[0]))
        want_d = rotary_d if r["family"] in ROTARY else p.get("d")
        if r["d"] != want_d:
            fail("%s: d %r, the shape gives %r" % (where, r["d"], want_d))
        if r["elements"] != r["batch"] * r["seq"] * r["d"]:
            fail("%s: elements %r != batch * seq * d" % (where, r["elements"]))
        moved = fam[1]
        if r["family"] in KV_CACHE and rotary_d:
            heads, kv_heads = p.get("heads", 0), p.get("kv_heads", 0)
            moved = 2 * (heads + 2 * kv_heads) / (heads + kv_heads)
        want = r["elements"] * SIZES[r["dtype"]] * moved + r["batch"] * r["seq"] * fam[2]
        if not close(r["bytes"], want):
            fail("%s: bytes %r, the definition gives %r" % (where, r["bytes"], want))
        if r["kind"] != "clpe" and r.get("per_work_item") not in (1, 4):
            fail("%s: per_work_item %r" % (where, r.get("per_work_item")))
        if r["status"] != "ok":
            continue
        need(r, ("iterations", "repeats", "timer", "seconds", "spread", "gelem_per_s",
                 "gb_per_s"), where)
        s = r["seconds"]
        if not (0 < s["min"] <= s["median"] <= s["max"]):
            fail("%s: seconds not ordered: %r" % (where, s))
        if not close(r["gelem_per_s"], r["elements"] / s["median"] * 1e-9):
            fail("%s: gelem_per_s does not match elements / median" % where)
        for key, ratio_key, table in (("limit", "ratio", LIMIT_OF),
                                      ("baseline", "baseline_ratio", BASELINE_OF)):
            family = table.get(r["family"])
            if family is None:
                if key in r:
                    fail("%s: has a %s but should not" % (where, key))
                continue
            other = best(results[:i], family, label_dtype(family, r["dtype"]), r["size"],
                         r.get("group"))
            if other is None:
                continue
            if r.get(key) != {"op": other["op"], "dtype": other["dtype"]}:
                fail("%s: %s %r, the fastest %s is %s" % (where, key, r.get(key), family,
                                                          other["op"]))
            elif not close(r.get(ratio_key), r["gelem_per_s"] / other["gelem_per_s"]):
                fail("%s: %s %r != %r" % (where, ratio_key, r.get(ratio_key),
                                          r["gelem_per_s"] / other["gelem_per_s"]))

    skipped = [n.split()[0] for n in doc["notes"] if "skipped" in n]
    if quick_run:
        for dt in p["dtypes"]:
            if dt in skipped:
                continue
            for family in FAMILIES:
                if dt not in FAMILY_DTYPES.get(family, (dt,)):
                    continue
                for size in ("full", "1/64"):
                    if best(results, family, label_dtype(family, dt), size,
                            dt if grouped else None) is None:
                        fail("no measured %s %s line at size %s" % (family, dt, size))
        if any("wrong" in n for n in doc["notes"]):
            fail("a baseline failed its check: %s" % [n for n in doc["notes"] if "wrong" in n])

    heads = {h.get("what"): h for h in doc["headline"]}
    for h in doc["headline"]:
        need(h, ("what", "value", "target", "target_is"), "headline %r" % h.get("what"))
    for num, den, dtypes, t1, tn in HEADLINES:
        for dt in dtypes:
            if dt not in p["dtypes"] or dt in skipped:
                continue
            group = dt if grouped else None
            n = best(results, num, dt, "full", group)
            d = best(results, den, label_dtype(den, dt), "full", group)
            what = "%s %s / %s" % (dt, num, den)
            if n is None or d is None:
                continue
            h = heads.get(what)
            if h is None:
                fail("headline %r missing" % what)
                continue
            if not close(h["value"], n["gelem_per_s"] / d["gelem_per_s"]):
                fail("headline %r: value %r != %r" % (what, h["value"],
                                                      n["gelem_per_s"] / d["gelem_per_s"]))
            target = t1 if p["batch"] == 1 else tn
            if h["target"] != target or h["target_is"] != "min":
                fail("headline %r: target %r %r, expected min %r" % (what, h["target_is"],
                                                                   h["target"], target))


def main(argv):
    if len(argv) >= 3 and argv[1] == "--run":
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bench.json")
            cmd = [argv[2], "--quick"] + argv[3:] + ["--json", path]
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                sys.stdout.write(r.stdout)
                print("check_json: %s exited with %d" % (" ".join(cmd), r.returncode))
                return 1
            with open(path) as f:
                check(json.load(f), quick_run=True)
    elif len(argv) == 2:
        with open(argv[1]) as f:
            check(json.load(f), quick_run=False)
    else:
        print(__doc__.strip().splitlines()[2:4], file=sys.stderr)
        return 2
    for msg in failures:
        print("check_json: " + msg)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
