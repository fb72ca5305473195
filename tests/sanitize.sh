#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sanitize.sh - build clpe, its CLI and tests with sanitizers in a separate
# tree and run the test suite on PoCL under them (the tests load PoCL only:
# CLPE_TEST_ICDS in tests/CMakeLists.txt).
#
#   tests/sanitize.sh          ASan + UBSan + LSan (build-asan), the ctest suite
#                              but test_fastmath (CLPE_SANITIZE_TESTS=REGEX: only
#                              the tests whose names match)
#   tests/sanitize.sh tsan     ThreadSanitizer (build-tsan), the concurrency tests
#
# UBSan halts on the first error; ASan and LSan always do. The suppression
# files in tests/suppressions/ name frames inside the OpenCL runtimes (PoCL,
# Mesa), LLVM and the OpenCL ICD loader only: a finding in clpe's own code is
# never suppressed.
# CC picks the compiler (gcc by default; clang works too). JOBS (default 2)
# bounds the build's parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-asan}
supp="$PWD/tests/suppressions"
jobs=${JOBS:-2}
export CC=${CC:-gcc}

case "$mode" in
asan)
  build=build-asan
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLPE_SANITIZE=ON -DCLPE_TSAN=OFF -DCLPE_WERROR=ON -DCLPE_BUILD_CLI=ON \
        -DCLPE_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" -j "$jobs"
  # detect_leaks: LSan runs at the exit of every (forked) Criterion test.
  # verify_asan_link_order=0: harmless here, and lets a user LD_PRELOAD
  # libclpe_fault.so onto sanitized programs.
  export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:verify_asan_link_order=0:suppressions=$supp/asan.supp"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
  # test_fastmath is left out: its subject is the device compiler (every
  # kernel rebuilt uncached under -cl-fast-relaxed-math, about 250 s here,
  # most of it inside PoCL), and its host calls are those the other tests
  # make; the plain suite runs it.
  ctest --test-dir "$build" --output-on-failure -E "^test_fastmath$" \
    ${CLPE_SANITIZE_TESTS:+-R "$CLPE_SANITIZE_TESTS"}
  ;;
tsan)
  build=build-tsan
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLPE_TSAN=ON -DCLPE_SANITIZE=OFF -DCLPE_WERROR=ON \
        -DCLPE_BUILD_BENCH=OFF -DCLPE_BUILD_CLI=OFF >/dev/null
  cmake --build "$build" -j "$jobs" --target stress_standalone
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  ctest --test-dir "$build" --output-on-failure -R "^stress_standalone$"
  ;;
*)
  echo "usage: $0 [asan|tsan]" >&2
  exit 2
  ;;
esac
