#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# conformance.sh - run `clpe check --all-devices` on each OpenCL runtime of
# this machine, in each launch shape, and fail on any mismatch.
#
#   scripts/conformance.sh [BUILD_DIR]      (default build)
#
# Runtimes (CLPE_RUNTIMES, default "pocl rusticl oclgrind intel"):
#   pocl      PoCL (pocl-opencl-icd)
#   rusticl   Mesa Rusticl on llvmpipe (mesa-opencl-icd, RUSTICL_ENABLE=llvmpipe;
#             no fp64, so f64 is skipped there)
#   oclgrind  the Oclgrind simulator (oclgrind), which runs the program under
#             its own OpenCL library
#   intel     Intel's OpenCL CPU runtime (scripts/setup.sh installs it from
#             PyPI; scripts/intel-opencl.sh loads it); x86-64 only, so on
#             other machines it is skipped, saying so
# Each runtime is run alone: OCL_ICD_VENDORS names a folder holding only its
# .icd file, so a result is never attributed to the wrong runtime.
# Launch shapes (CLPE_SHAPES, default "1 64"): CLPE_PAIRS_PER_ITEM=1 is the
# one-pair-per-work-item shape GPUs and llvmpipe get, 64 the float16 shape
# PoCL gets. Rusticl runs its own shape only (CLPE_RUSTICL_SHAPES, default
# "1"): llvmpipe takes about twenty minutes to compile the float16 shape
# (it passed, 0 mismatches, in 1175 s when measured), too long for CI.
# CLPE_INTEL_SHAPES (default: CLPE_SHAPES) does the same for Intel's runtime,
# whose own shape is the one-pair one (scripts/test.sh runs the float16
# shape there only with CLPE_FULL_TESTS=1: see the times below).
# Sizes: the runtimes in CLPE_FULL_RUNTIMES (default "pocl") run the full
# check (about 80 million elements per dtype, about 15 s per shape on two
# cores for PoCL, 31 s for Intel's runtime in its own shape); the others run
# --quick (about 1.3 million: a full run on Rusticl or Oclgrind takes too
# long for CI). The five PoCL, Rusticl and Oclgrind runs took 65 to 105 s on
# two cores in CI; Intel's quick runs 14 s in its own shape and 206 s in the
# float16 one, most of it its vectoriser building that shape (measured on a
# 2-core machine shared with other work). CLPE_CHECK_ARGS, when set,
# replaces the size options of every run ("" for full, --quick for quick).
# Prints one line per runtime and shape with the mismatch count per dtype;
# the JSON of each run is kept in BUILD_DIR/conformance/. A runtime that is
# not installed fails the script (CI installs all four; Intel's only on
# x86-64, and elsewhere its line says skipped); leave it out of
# CLPE_RUNTIMES to run without it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
clpe="$build/host/cli/clpe"
runtimes=${CLPE_RUNTIMES:-pocl rusticl oclgrind intel}
full_runtimes=${CLPE_FULL_RUNTIMES:-pocl}
shapes=${CLPE_SHAPES:-1 64}
out="$build/conformance"
vendors=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
[[ -d $vendors ]] || vendors=/etc/OpenCL/vendors

if [[ ! -x $clpe ]]; then
  echo "conformance: $clpe not found; build first (cmake --build $build)" >&2
  exit 2
fi
rm -rf "$out"
mkdir -p "$out"

# A folder with one runtime's .icd file, or nothing if it is not installed.
pin_icd() {
  local icd=$1 dir="$out/vendors-${1%.icd}"
  [[ -f $vendors/$icd ]] || return 1
  mkdir -p "$dir"
  cp "$vendors/$icd" "$dir/"
  echo "$dir"
}

# One line from the JSON of a run: the mismatches per dtype and in all.
summarize() {
  python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
cells, total = [], 0
for dev in r["devices"]:
    for t in dev.get("results", []):
        if t.get("verdict") == "skipped":
            cells.append(f"{t['dtype']} -")
            continue
        n = t.get("bit_mismatches", 0)
        total += n
        cells.append(f"{t['dtype']} {n}/{t.get('elements', 0)}")
names = ", ".join(d["name"][:28] for d in r["devices"])
print(f"{len(r['devices'])} device(s) [{names}]  mismatches {total}  ({'  '.join(cells)})")
EOF
}

failed=0
printf '%-9s %-5s %-7s %s\n' runtime shape time result
for rt in $runtimes; do
  launcher=()
  env_rt=()
  case $rt in
  pocl | rusticl)
    icd=pocl.icd
    [[ $rt == rusticl ]] && icd=rusticl.icd
    if ! dir=$(pin_icd "$icd"); then
      printf '%-9s %-5s %-7s %s\n' "$rt" - - "FAIL: $vendors/$icd not found (not installed)"
      failed=1
      continue
    fi
    env_rt=(OCL_ICD_VENDORS="$dir")
    [[ $rt == rusticl ]] && env_rt+=(RUSTICL_ENABLE=llvmpipe)
    ;;
  oclgrind)
    if ! command -v oclgrind >/dev/null; then
      printf '%-9s %-5s %-7s %s\n' "$rt" - - "FAIL: oclgrind not found (not installed)"
      failed=1
      continue
    fi
    launcher=(oclgrind)
    ;;
  intel)
    if [[ $(uname -m) != x86_64 ]]; then
      printf '%-9s %-5s %-7s %s\n' "$rt" - - "skipped: Intel's OpenCL CPU runtime is x86-64 only"
      continue
    fi
    if ! scripts/intel-opencl.sh true 2>/dev/null; then
      printf '%-9s %-5s %-7s %s\n' "$rt" - - "FAIL: not installed in $(scripts/intel-opencl.sh --root) (scripts/setup.sh)"
      failed=1
      continue
    fi
    launcher=(scripts/intel-opencl.sh)
    ;;
  *)
    echo "conformance: unknown runtime '$rt' (pocl, rusticl, oclgrind, intel)" >&2
    exit 2
    ;;
  esac
  check_args=--quick
  [[ " $full_runtimes " == *" $rt "* ]] && check_args=
  [[ -n ${CLPE_CHECK_ARGS+set} ]] && check_args=$CLPE_CHECK_ARGS
  rt_shapes=$shapes
  [[ $rt == rusticl ]] && rt_shapes=${CLPE_RUSTICL_SHAPES:-1}
  [[ $rt == intel ]] && rt_shapes=${CLPE_INTEL_SHAPES:-$shapes}
  for w in $rt_shapes; do
    json="$out/$rt-w$w.json"
    log="$out/$rt-w$w.log"
    t0=$SECONDS
    status=0
    # shellcheck disable=SC2086 # check_args is a list of options
    env "${env_rt[@]}" CLPE_PAIRS_PER_ITEM="$w" "${launcher[@]}" "$clpe" check --all-devices \
      $check_args --json "$json" >"$log" 2>&1 || status=$?
    secs=$((SECONDS - t0))
    if [[ -s $json ]]; then
      line=$(summarize "$json")
    else
      line="no result (exit $status)"
    fi
    verdict=pass
    if ((status != 0)) || [[ ! -s $json ]] || [[ $line == "0 device(s)"* ]]; then
      verdict=FAIL
      failed=1
    fi
    printf '%-9s %-5s %-7s %s  %s\n' "$rt" "W=$w" "${secs}s" "$verdict" "$line"
    if [[ $verdict == FAIL ]]; then
      sed 's/^/    /' "$log" | tail -n 20
    fi
  done
done
if ((failed)); then
  echo "conformance: FAIL (logs and JSON in $out/)"
  exit 1
fi
echo "conformance: PASS"
