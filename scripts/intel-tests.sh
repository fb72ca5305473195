#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# intel-tests.sh - run the suite's kernel tests on Intel's OpenCL CPU runtime
# (scripts/intel-opencl.sh), each test alone on it, in each launch shape.
#
#   scripts/intel-tests.sh [BUILD_DIR]            (default build)
#
# The tests run as ctest would run them (in BUILD_DIR/tests, --jobs 2), but
# under scripts/intel-opencl.sh: ctest pins every test to PoCL
# (CLPE_TEST_ICDS), and that pin is fixed when the build is configured.
# What runs (both lists are test names without "test_"):
#   CLPE_INTEL_TESTS_W1   in the one-pair shape (CLPE_PAIRS_PER_ITEM=1, the
#                         shape Intel's runtime gets: it asks for no vectors).
#                         Default: the kernel tests of the GPU-shape rerun
#                         in scripts/test.sh but formats and rope (115 s and
#                         86 s of CPU on Intel's runtime; `clpe check` runs
#                         every rotary path there) and digests (`clpe check`
#                         proves the device gives the host emulation's bits,
#                         and the digests hold the host emulation on any
#                         machine), and device_header (the header's
#                         functions inside a user's kernel, built by Intel's
#                         compiler); with CLPE_FULL_TESTS=1 every Criterion
#                         test of the suite.
#   CLPE_INTEL_TESTS_W64  in the float16 vector shape (CLPE_PAIRS_PER_ITEM=64).
#                         Default: guards (every element written once,
#                         nothing outside); with CLPE_FULL_TESTS=1 also
#                         golden and add. Intel's vectoriser makes that
#                         shape slow to build (about 30 s of CPU per dtype)
#                         and each test process builds its own programs:
#                         guards took 32 s of CPU, golden 51 s, and exact
#                         ran past 7 minutes.
#                         `clpe check` covers every path in that shape with
#                         one build per dtype (scripts/conformance.sh).
# The oclgrind_* tests are not run here: they run under Oclgrind's own
# OpenCL library, whatever the ICD loader would load.
# Prints one line per test and shape with its time; fails if any test fails.
# Skipped, saying so, on machines that are not x86-64.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
here=$PWD
if [[ $(uname -m) != x86_64 ]]; then
  echo "intel-tests: skipped: Intel's OpenCL CPU runtime is x86-64 only (this machine: $(uname -m))"
  exit 0
fi
scripts/intel-opencl.sh true
full=${CLPE_FULL_TESTS:-0}
if [[ $full == 1 ]]; then
  w1_default=""
  for exe in "$build"/tests/test_*; do
    [[ -f $exe && -x $exe ]] && w1_default+=" ${exe##*/test_}"
  done
  w64_default="guards golden add"
else
  w1_default="exact golden add launch_split guards device_header"
  w64_default="guards"
fi
w1=${CLPE_INTEL_TESTS_W1:-$w1_default}
w64=${CLPE_INTEL_TESTS_W64:-$w64_default}

failed=0
run_shape() {
  local w=$1 t
  shift
  for t in "$@"; do
    local exe=$build/tests/test_$t log=$build/intel-tests/$t-w$w.log t0=$SECONDS status=0
    if [[ ! -x $exe ]]; then
      printf 'W=%-3s %-22s FAIL: %s not built\n' "$w" "$t" "$exe"
      failed=1
      continue
    fi
    (cd "$build/tests" && CLPE_PAIRS_PER_ITEM=$w "$here/scripts/intel-opencl.sh" "./test_$t" --jobs 2) \
      >"$log" 2>&1 || status=$?
    local verdict=pass
    ((status == 0)) || { verdict=FAIL; failed=1; }
    printf 'W=%-3s %-22s %5ss  %s  %s\n' "$w" "$t" $((SECONDS - t0)) "$verdict" \
      "$(grep -o 'Tested: .*' "$log" | tail -n 1)"
    [[ $verdict == pass ]] || tail -n 30 "$log" | sed 's/^/    /'
  done
}
mkdir -p "$build/intel-tests"
# shellcheck disable=SC2086 # the lists are words
run_shape 1 $w1
# shellcheck disable=SC2086
run_shape 64 $w64
if ((failed)); then
  echo "intel-tests: FAIL (logs in $build/intel-tests/)"
  exit 1
fi
echo "intel-tests: PASS"
