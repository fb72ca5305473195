#!/usr/bin/env bash
# test.sh - install, build and run every test of clpe (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
echo "== OpenCL devices"
clinfo -l

echo "== build (warnings are errors)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLPE_WERROR=ON
cmake --build build -j "$(nproc)"

echo "== test suite"
ctest --test-dir build --output-on-failure

echo "== test suite again in the GPU launch shape (one pair per work-item: CLPE_PAIRS_PER_ITEM=1)"
CLPE_PAIRS_PER_ITEM=1 ctest --test-dir build --output-on-failure -E "cli|fastmath|lifetime|stress|fault|oclgrind|bench_json|status_coverage|standalone|consumer"

echo "== conformance: clpe check on PoCL and Oclgrind in both launch shapes, Rusticl (llvmpipe) in its own (scripts/conformance.sh)"
scripts/conformance.sh build

echo "== offline GPU compiles: NVIDIA sm_90, AMD gfx90a and gfx1100 (bench/static_cost.sh)"
bench/static_cost.sh

echo "== benchmark smoke test (tiny sizes: it must run and write valid JSON, not a measurement)"
build/bench/clpe-bench --quick --json build/bench-smoke.json
python3 -m json.tool build/bench-smoke.json >/dev/null
tests/consumer/run.sh build

echo "== Python package: installed as the README says, then its tests (python/tests)"
# Debian's interpreter, the one python3-pyopencl and python3-torch are built for.
venv=build/python-venv
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet ./python
# transformers 4.49.0: a release that runs on Debian 12's torch 1.13.
"$venv/bin/pip" install --quiet "transformers==4.49.0"
pytest_status=0
# python/tests: the package; tests/frameworks: rotary against Hugging Face's own code
CI=${CI:-true} CLPE_CLI=build/host/cli/clpe \
  "$venv/bin/python" -m pytest -q python/tests tests/frameworks \
  || pytest_status=$?
if ((pytest_status == 5)); then echo "test.sh: pytest ran no test" >&2; exit 1; fi
if ((pytest_status != 0)); then exit "$pytest_status"; fi

echo "== sanitizers: the whole suite under ASan + UBSan + LSan (tests/sanitize.sh)"
tests/sanitize.sh asan

echo "== fuzzing: each libFuzzer target for ${FUZZ_SECONDS:-60}s (tests/fuzz/run.sh)"
tests/fuzz/run.sh
