#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# device_header_cost.sh - compile the attention-scores example
# (examples/attention_scores/attention_scores.cl, a user's kernel that
# includes clpe_device.h) offline for NVIDIA sm_90 and AMD gfx90a through
# bench/static_cost.sh, and print its static cost: CI's check that the
# header's functions compile and link inside a user's program for those
# GPUs, with the library's own build options (-cl-std=CL1.2) plus what
# clpe_rope_device_words returns (-DCLPE_DEVICE_LAYOUT=1).
#
#   bench/device_header_cost.sh        (STATIC_COST_TARGETS as static_cost.sh; default sm_90 gfx90a)
set -euo pipefail
cd "$(dirname "$0")/.."
export STATIC_COST_TARGETS=${STATIC_COST_TARGETS:-sm_90 gfx90a}
# the user's kernel has no launch shape; one run per target
export STATIC_COST_SHAPES=1
# clpe_device.h from the sources (the installed copy is the same text with
# clpe_phase.h inlined), and the build options clpe_rope_device_words returns
export STATIC_COST_OPTIONS="-I$PWD/kernels -DCLPE_DEVICE_LAYOUT=1"
exec bench/static_cost.sh examples/attention_scores/attention_scores.cl
