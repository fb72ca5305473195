#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - llama.cpp's OpenCL backend with clpe's exact rotary: fetch, patch,
# build, and check it on Intel's OpenCL CPU runtime (docs/llama.cpp.md).
#
#   examples/llama.cpp/run.sh           everything: build, then the checks
#   examples/llama.cpp/run.sh build     fetch, patch and build only
#   examples/llama.cpp/run.sh check     the checks on the last build
#
# The source is llama.cpp as the pinned llama-cpp-python sdist vendors it
# (PyPI, sha256 checked; cached in ${XDG_CACHE_HOME:-$HOME/.cache}/clpe/),
# with patches/*.patch applied in order. Trees go to build-llama/ in the
# checkout (CLPE_LLAMA_DIR to move it), rebuilt incrementally; a changed
# patch series starts from a fresh source tree. Intel's runtime comes from
# scripts/setup.sh (scripts/intel-opencl.sh). CLPE_LLAMA_JOBS: build jobs (2).
#
# The checks fail the run when: a test-backend-ops ROPE case fails or none ran
# on OpenCL; the model's ROPE nodes were not scheduled on OpenCL; a tiny
# model's greedy tokens with clpe differ from the CPU backend's; the ROPE
# op's output differs from clpe_host_rope by a bit (f32) or from the exact
# rotation by more than 2^-22 * m * hypot(a, b) (rope_check).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
what=${1:-all}
case $what in
all | build | check) ;;
*) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac

sdist=llama_cpp_python-0.3.36.tar.gz
sdist_url=https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/$sdist
sdist_sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
cache=${XDG_CACHE_HOME:-$HOME/.cache}/clpe
work=${CLPE_LLAMA_DIR:-$root/build-llama}
jobs=${CLPE_LLAMA_JOBS:-2}
src=$work/src
bld=$work/build
bin=$bld/bin
intel=$root/scripts/intel-opencl.sh

step() { echo "== llama.cpp: $*"; }

build() {
  step "the sdist ($sdist, pinned by sha256)"
  mkdir -p "$cache"
  if [[ ! -f $cache/$sdist ]] || ! echo "$sdist_sha256  $cache/$sdist" | sha256sum -c --quiet - 2>/dev/null; then
    curl -fsSL --retry 3 -o "$cache/$sdist.part" "$sdist_url"
    if ! echo "$sdist_sha256  $cache/$sdist.part" | sha256sum -c --quiet -; then
      echo "run.sh: $sdist does not have the pinned sha256" >&2
      rm -f "$cache/$sdist.part"
      exit 1
    fi
    mv "$cache/$sdist.part" "$cache/$sdist"
  fi

  step "the source: vendor/llama.cpp with patches/*.patch"
  stamp=$( (echo "$sdist_sha256"; cat "$here"/patches/*.patch) | sha256sum | cut -c1-16)
  if [[ ! -f $src/.clpe-stamp ]] || [[ $(cat "$src/.clpe-stamp") != "$stamp" ]]; then
    rm -rf "$src" "$bld"
    mkdir -p "$src"
    tar -xzf "$cache/$sdist" -C "$src" --strip-components=3 llama_cpp_python-0.3.36/vendor/llama.cpp
    rm -f "$src/.git" # a submodule link into the sdist's own repository, absent here
    for p in "$here"/patches/*.patch; do
      echo "   $(basename "$p")"
      patch -s -p1 -d "$src" <"$p"
    done
    echo "$stamp" >"$src/.clpe-stamp"
  fi

  step "clpe (the library only), installed into $work/clpe-prefix"
  cmake -S "$root" -B "$work/clpe-build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLPE_BUILD_TESTS=OFF \
    -DCLPE_BUILD_CLI=OFF -DCLPE_BUILD_BENCH=OFF -DCLPE_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$work/clpe-build" -j "$jobs" >/dev/null
  cmake --install "$work/clpe-build" --prefix "$work/clpe-prefix" >/dev/null

  step "llama.cpp with -DGGML_OPENCL=ON -DGGML_OPENCL_CLPE=ON (about 4 minutes on 2 cores the first time)"
  cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=Release -DGGML_OPENCL=ON -DGGML_OPENCL_EMBED_KERNELS=ON \
    -DGGML_OPENCL_USE_ADRENO_KERNELS=OFF -DGGML_OPENCL_CLPE=ON -DCMAKE_PREFIX_PATH="$work/clpe-prefix" \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER=OFF >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; exit 1; }
  cmake --build "$bld" -j "$jobs" --target test-backend-ops llama-simple llama-eval-callback >"$work/build.log" 2>&1 ||
    { tail -50 "$work/build.log"; exit 1; }

  step "rope_check and the tiny models"
  c++ -std=c++17 -O2 -o "$bin/rope_check" "$here/rope_check.cpp" -I "$src/ggml/include" \
    -I "$work/clpe-prefix/include" -L "$bin" -L "$work/clpe-prefix/lib" \
    -lggml -lggml-base -lggml-cpu -lclpe -lmpfr -lgmp \
    -Wl,-rpath,"$bin" -Wl,-rpath,"$work/clpe-prefix/lib"
  python=/usr/bin/python3
  "$python" -c 'import numpy' 2>/dev/null || python=python3
  PYTHONPATH=$src/gguf-py "$python" "$here/make_models.py" "$work/models"
}

# a command with no OpenCL platform at all: ggml's CPU backend only
cpu_only() {
  mkdir -p "$work/no-icd"
  env OCL_ICD_VENDORS="$work/no-icd" OCL_ICD_FILENAMES= "$@"
}

check() {
  local fail=0 log=$work/logs
  mkdir -p "$log"
  # ggml-opencl's cache of built programs (else under /tmp)
  export GGML_OPENCL_KERNEL_CACHE_DIR=$work/cl-cache

  step "test-backend-ops -o ROPE on OpenCL (clpe)"
  "$intel" "$bin/test-backend-ops" test -o ROPE >"$log/test-backend-ops.log" 2>&1 || true
  grep -E "^Backend [0-9]+/[0-9]+: |tests passed|^  Backend .*: (OK|FAIL)" "$log/test-backend-ops.log" | sed 's/^/   /'
  if ! grep -q "Backend [0-9]*/[0-9]*: [A-Za-z]*OpenCL" "$log/test-backend-ops.log"; then
    echo "FAIL: test-backend-ops found no OpenCL backend (the device was dropped?)" >&2
    fail=1
  fi
  local line passed total
  line=$(sed -n '/Backend [0-9]*\/[0-9]*: [A-Za-z]*OpenCL/,/Backend [0-9]*\/[0-9]*: /p' "$log/test-backend-ops.log" |
    grep -E "[0-9]+/[0-9]+ tests passed" | head -1)
  passed=$(sed -E 's|.* ([0-9]+)/([0-9]+) tests passed.*|\1|' <<<"$line")
  total=$(sed -E 's|.* ([0-9]+)/([0-9]+) tests passed.*|\2|' <<<"$line")
  if [[ -z $line ]] || [[ $passed != "$total" ]] || ((total == 0)); then
    echo "FAIL: test-backend-ops -o ROPE on OpenCL: ${passed:-?}/${total:-?} (see $log/test-backend-ops.log)" >&2
    fail=1
  fi
  if grep -q "clpe refused\|clpe unavailable\|clpe rotary unavailable" "$log/test-backend-ops.log"; then
    echo "FAIL: some ROPE cases fell back to the float32 kernel:" >&2
    grep "clpe refused\|clpe unavailable\|clpe rotary unavailable" "$log/test-backend-ops.log" | sort | uniq -c | head >&2
    fail=1
  fi

  step "the models' ROPE nodes run on OpenCL (GGML_SCHED_DEBUG=2, llama-eval-callback)"
  for m in llama qwen2 qwen2vl; do
    GGML_SCHED_DEBUG=2 "$intel" "$bin/llama-eval-callback" -m "$work/models/$m.gguf" -p "hello world" -n 1 \
      -ngl 99 -v >"$log/sched-$m.log" 2>&1 || { tail -20 "$log/sched-$m.log"; fail=1; }
    # the scheduler's "node #N (ROPE): name (size) [backend" lines; it
    # prints the backend's name cut to 5 characters
    local on_cl other
    on_cl=$(grep -oE "\(      ROPE\): +[^ ]+ \( *[^)]*\) \[[^ ]+" "$log/sched-$m.log" | grep -c "\[OpenC$" || true)
    other=$(grep -oE "\(      ROPE\): +[^ ]+ \( *[^)]*\) \[[^ ]+" "$log/sched-$m.log" | grep -vc "\[OpenC$" || true)
    echo "   $m: ROPE nodes on OpenCL: $on_cl, elsewhere: $other"
    if ((on_cl == 0 || other != 0)); then
      echo "FAIL: $m: ROPE nodes did not all run on OpenCL (see $log/sched-$m.log)" >&2
      fail=1
    fi
  done

  step "greedy tokens: OpenCL with clpe against the CPU backend"
  local prompt="once upon a time there lived a small model"
  for m in llama llama3 qwen2 yarn qwen2vl; do
    "$intel" "$bin/llama-simple" -m "$work/models/$m.gguf" -n 48 -ngl 99 "$prompt" \
      >"$log/tokens-$m-clpe.txt" 2>"$log/simple-$m-clpe.log" || { tail -20 "$log/simple-$m-clpe.log"; fail=1; }
    cpu_only "$bin/llama-simple" -m "$work/models/$m.gguf" -n 48 -ngl 0 "$prompt" \
      >"$log/tokens-$m-cpu.txt" 2>"$log/simple-$m-cpu.log" || { tail -20 "$log/simple-$m-cpu.log"; fail=1; }
    if ! grep -q "OpenCL" "$log/simple-$m-clpe.log"; then
      echo "FAIL: $m: llama-simple did not load the OpenCL backend" >&2
      fail=1
    fi
    if cmp -s "$log/tokens-$m-clpe.txt" "$log/tokens-$m-cpu.txt" && [[ -s $log/tokens-$m-cpu.txt ]]; then
      echo "   $m: equal ($(wc -c <"$log/tokens-$m-cpu.txt") bytes of text, 48 tokens)"
    else
      echo "FAIL: $m: greedy tokens differ: clpe vs CPU" >&2
      diff <(tr ' ' '\n' <"$log/tokens-$m-clpe.txt") <(tr ' ' '\n' <"$log/tokens-$m-cpu.txt") | head >&2 || true
      fail=1
    fi
  done

  step "the ROPE op at 0, 4095, 2^24+1, 2^31-1 (rope_check)"
  if ! "$intel" "$bin/rope_check" >"$log/rope_check.log" 2>&1; then
    fail=1
  fi
  grep -v "^ggml_opencl\|^\.*$" "$log/rope_check.log" || true
  step "the same with the float32 kernel (GGML_OPENCL_CLPE=0), for comparison"
  GGML_OPENCL_CLPE=0 "$intel" "$bin/rope_check" --stock >"$log/rope_check_stock.log" 2>&1 || true
  grep -v "^ggml_opencl\|^\.*$" "$log/rope_check_stock.log" || true

  step "tokens/s, OpenCL with clpe and with the float32 kernel (200 tokens; Intel's CPU runtime)"
  local speeds
  for m in llama qwen2 qwen2vl; do
    for mode in clpe stock; do
      speeds=()
      for run in 1 2 3; do
        GGML_OPENCL_CLPE=$([[ $mode == clpe ]] && echo 1 || echo 0) "$intel" "$bin/llama-simple" \
          -m "$work/models/$m.gguf" -n 200 -ngl 99 "once upon a time" >/dev/null 2>"$log/speed-$m-$mode-$run.log" || true
        speeds+=("$(grep -o "speed: [0-9.]* t/s" "$log/speed-$m-$mode-$run.log" | tail -1 | cut -d' ' -f2)")
      done
      echo "   $m, $mode: ${speeds[*]} tokens/s (3 runs)"
    done
  done

  if ((fail)); then
    echo "== llama.cpp: FAILED (logs in $log)" >&2
    exit 1
  fi
  echo "== llama.cpp: all checks passed (logs in $log)"
}

case $what in
build) build ;;
check) check ;;
all) build; check ;;
esac
