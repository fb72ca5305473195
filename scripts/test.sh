#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test.sh - install, build and run clpe's tests: about 15 minutes on a quiet
# 2-core machine with the packages installed.
#
#   bash scripts/test.sh                    the test command (what a change must pass)
#   CLPE_FULL_TESTS=1 bash scripts/test.sh  also the long runs (CI; about 35 minutes):
#       the whole suite in the second launch shape, the full conformance run
#       on PoCL and Intel's runtime, the whole suite on Intel's runtime, the
#       offline GPU compiles of the CPU shape, the whole suite under ASan +
#       UBSan + LSan, ThreadSanitizer, 120 s per fuzz target, the release
#       files in fresh venvs (tests/consumer/release_check.sh), and llama.cpp
#       patched to use clpe's rotary, built and checked on Intel's runtime
#       (examples/llama.cpp/run.sh: about 8 minutes, most of it the build)
#
# Always covered: the Criterion suite on PoCL, its kernel tests again in the
# GPU launch shape, the kernels under Oclgrind's checkers, `clpe check` on
# PoCL, Rusticl, Oclgrind and Intel's OpenCL CPU runtime (from PyPI, see
# scripts/intel-opencl.sh; its own launch shape), the suite's kernel tests
# on Intel's runtime in both launch shapes (scripts/intel-tests.sh), the
# offline GPU compiles (NVIDIA, AMD), the
# benchmark smoke test, the installed package and its consumers, the ABI
# against 1.0.0, the Python package from its sdist with the framework
# comparisons, the code blocks of README.md and docs/, the host-code tests
# under the sanitizers, and a short fuzz of each libFuzzer target.
set -euo pipefail
cd "$(dirname "$0")/.."

full=${CLPE_FULL_TESTS:-0}
[[ $full == 1 ]] || full=0
jobs=$(nproc)
timings=()
step_start=$SECONDS
step_name=""
# step NAME: print a header, and the time the previous step took.
step() {
  if [[ -n $step_name ]]; then timings+=("$(printf '%5ds  %s' $((SECONDS - step_start)) "$step_name")"); fi
  step_name=$1
  step_start=$SECONDS
  echo "== $1"
}
report_times() {
  local status=$?
  [[ -z $step_name ]] || timings+=("$(printf '%5ds  %s' $((SECONDS - step_start)) "$step_name")")
  echo "== time per step (CLPE_FULL_TESTS=$full; exit status $status)"
  printf '  %s\n' "${timings[@]}"
  echo "  total ${SECONDS}s"
}
trap report_times EXIT

step "install what is missing (scripts/setup.sh)"
scripts/setup.sh
echo "OpenCL devices:"
clinfo -l

step "build (warnings are errors)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLPE_WERROR=ON
cmake --build build -j "$jobs"

step "test suite (the CPU launch shape PoCL gets)"
ctest --test-dir build --output-on-failure

# The second launch shape changes what the kernels do, not what the host
# does: by default only the tests that check kernel output run again.
step "test suite again in the GPU launch shape (one pair per work-item: CLPE_PAIRS_PER_ITEM=1)"
if ((full)); then
  CLPE_PAIRS_PER_ITEM=1 ctest --test-dir build --output-on-failure \
    -E "cli|fastmath|lifetime|stress|fault|oclgrind|bench_json|status_coverage|standalone|consumer"
else
  CLPE_PAIRS_PER_ITEM=1 ctest --test-dir build --output-on-failure \
    -R "^test_(exact|formats|golden|digests|add|rope|mrope|rope_layouts|launch_split|guards)$"
fi

step "conformance: clpe check on PoCL, Rusticl (llvmpipe), Oclgrind and Intel (scripts/conformance.sh)"
if ((full)); then
  CLPE_FULL_RUNTIMES="pocl intel" scripts/conformance.sh build  # PoCL, Intel: the full run
else
  # Intel's runtime in its own shape: its vectoriser takes minutes to build
  # the float16 one (scripts/intel-tests.sh runs a kernel test there)
  CLPE_CHECK_ARGS=--quick CLPE_INTEL_SHAPES=1 scripts/conformance.sh build
fi

step "kernel tests on Intel's OpenCL CPU runtime, both launch shapes (scripts/intel-tests.sh)"
CLPE_FULL_TESTS=$full scripts/intel-tests.sh build

step "offline GPU compiles: NVIDIA sm_90, AMD gfx90a and gfx1100 (bench/static_cost.sh)"
if ((full)); then
  bench/static_cost.sh
else
  STATIC_COST_SHAPES=1 bench/static_cost.sh        # the shape GPUs run
fi
bench/kv_cost.sh   # rotary into a KV cache: no more instructions per token than rotation + copy

step "benchmark smoke test (tiny sizes: it must run and write valid JSON, not a measurement)"
build/bench/clpe-bench --quick --json build/bench-smoke.json
python3 -m json.tool build/bench-smoke.json >/dev/null

step "the package: install, find_package, pkg-config, add_subdirectory, FetchContent (tests/consumer)"
tests/consumer/run.sh build

step "ABI against 1.0.0 (tests/abi/check.sh: abidiff, additions only)"
tests/abi/check.sh build/libclpe.so

step "Python: the sdist, installed into a fresh venv, then its tests and the framework comparisons"
rm -rf build/python-dist build/python-venv build/python-tools
# Debian's interpreter, the one python3-pyopencl and python3-torch are built for.
/usr/bin/python3 -m venv build/python-tools
build/python-tools/bin/pip install --quiet build
build/python-tools/bin/python -m build --sdist --outdir build/python-dist python
venv=build/python-venv
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet build/python-dist/clpe-*.tar.gz
# transformers 4.49.0: a release that runs on Debian 12's torch 1.13.
"$venv/bin/pip" install --quiet "transformers==4.49.0"
# mypy: python/tests/test_typing.py checks the package and typed user scripts.
"$venv/bin/pip" install --quiet mypy
# ml_dtypes: the independent FP8 reference of python/tests/test_rope_kv_fp8.py
# (0.5.4: a release that runs on Debian 12's NumPy 1.24).
"$venv/bin/pip" install --quiet "ml_dtypes==0.5.4"
pytest_status=0
# python/tests: the package; tests/frameworks: rotary against Hugging Face's
# own code; tests/docs: every code block of README.md and docs/*.md.
CI=${CI:-true} CLPE_CLI=build/host/cli/clpe CLPE_BUILD_DIR=build \
  CLPE_DECODER=build/examples/decoder/clpe-decoder \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests tests/frameworks tests/docs \
  || pytest_status=$?
if ((pytest_status == 5)); then echo "test.sh: pytest ran no test" >&2; exit 1; fi
if ((pytest_status != 0)); then exit "$pytest_status"; fi

if ((full)); then
  step "the release files: scripts/release.sh in a clone, the wheel in fresh venvs (tests/consumer/release_check.sh)"
  tests/consumer/release_check.sh
fi

if ((full)); then
  step "llama.cpp's OpenCL backend with clpe's rotary, on Intel's runtime (examples/llama.cpp/run.sh)"
  CLPE_LLAMA_JOBS=$jobs examples/llama.cpp/run.sh
fi

step "sanitizers: ASan + UBSan + LSan (tests/sanitize.sh)"
if ((full)); then
  tests/sanitize.sh asan                           # the whole suite
  step "ThreadSanitizer: the concurrency test (tests/sanitize.sh tsan)"
  tests/sanitize.sh tsan
else
  # The tests whose subject is host code (argument checks, failure paths,
  # the tool, the launch splitting), without the long device loops.
  CLPE_SANITIZE_TESTS="^(test_bad_input|test_fault|test_cli|test_common|test_build_log|test_device_unsupported|test_guards|test_launch_split|status_coverage)$" \
    tests/sanitize.sh asan
fi

seconds=${FUZZ_SECONDS:-$((full ? 120 : 20))}
step "fuzzing: each libFuzzer target for ${seconds}s (tests/fuzz/run.sh)"
FUZZ_SECONDS=$seconds tests/fuzz/run.sh
