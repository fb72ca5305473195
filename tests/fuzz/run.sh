#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - build the libFuzzer targets with clang (ASan + UBSan + coverage)
# in build-fuzz and run each for a bounded time from its seed corpus.
#
#   tests/fuzz/run.sh              every target, FUZZ_SECONDS (default 60) each
#   tests/fuzz/run.sh fuzz_npy     one target
#
# New inputs libFuzzer finds go to a scratch directory, not into the seed
# corpus in the repository. A crash leaves its reproducer in build-fuzz/
# and fails the script. The number of executions of each target is printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-60}
build=build-fuzz
supp="$PWD/tests/suppressions"
targets=("$@")
((${#targets[@]})) || targets=(fuzz_api fuzz_cli_args fuzz_npy)

CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLPE_FUZZ=ON \
  -DCLPE_SANITIZE=ON -DCLPE_WERROR=ON -DCLPE_BUILD_TESTS=OFF -DCLPE_BUILD_CLI=OFF \
  -DCLPE_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target "${targets[@]}"

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:suppressions=$supp/asan.supp"
# The targets run on PoCL, so they load only PoCL's .icd, as the test suite
# does (CLPE_TEST_ICDS in tests/CMakeLists.txt): the ICD loader otherwise
# opens every installed runtime, and Mesa's Clover leaks 128 bytes from its
# setup whose stack the fast unwinder cuts at Clover's first frame (no frame
# pointers), so the module suppression in lsan.supp cannot match it and the
# run failed on a clean input (seen on an AMD EPYC host).
vendors=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
if [[ -f $vendors/pocl.icd ]]; then
  pinned="$PWD/$build/opencl-vendors"
  rm -rf "$pinned" && mkdir -p "$pinned" && cp "$vendors/pocl.icd" "$pinned/"
  export OCL_ICD_VENDORS="$pinned"
fi
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
total=0
for t in "${targets[@]}"; do
  scratch=$(mktemp -d)
  log="$build/$t.log"
  echo "== fuzz $t for ${seconds}s"
  status=0
  (cd "$build" && "./tests/fuzz/$t" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
     -print_final_stats=1 "$scratch" "../tests/fuzz/corpus/${t#fuzz_}") >"$log" 2>&1 || status=$?
  rm -rf "$scratch"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  echo "$t: ${runs:-0} executions"
  total=$((total + ${runs:-0}))
  if ((status != 0)); then
    tail -n 60 "$log"
    echo "fuzz: $t failed (exit $status); reproducer and log in $build/" >&2
    exit 1
  fi
done
echo "fuzz: ${total} executions in all"
