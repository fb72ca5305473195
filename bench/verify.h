/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verify.h - a check that the baseline kernels compute what they claim, run
 * once per dtype before they are timed: a baseline that indexed the table or
 * the batch wrongly would still run fast, and the comparison would be void.
 */
#ifndef CLPE_BENCH_VERIFY_H
#define CLPE_BENCH_VERIFY_H

#include "ops.h"

/* Run each baseline of BENCH_OPS that fits (rotary ones aside: see
 * verify_rope_table) once, at [batch, seq, d], on zero inputs (x and the
 * embedding are zeroed for it, so every output row must equal its table
 * row), and compare every sequence with the first seq rows of the table.
 * Returns 0 when all match, 1 on a mismatch (described in why), -1 when
 * OpenCL failed (printed). Leaves x and out zeroed and the embedding
 * filled again with BENCH_DATA_BYTE. */
int verify_baselines(const bench_env *env, const dtype_info *dt, clpe_encoder *enc,
                     cl_program baselines, size_t batch, size_t seq, size_t d, char *why,
                     size_t why_cap);

/* Run rope-table once on o's shape (o->def is the rope-table entry, o->rope
 * the dtype's rotary object, the cache already made) from random queries
 * and keys, and compare every element with what clpe_enqueue_rope makes of
 * the same inputs: the cache holds clpe's own cos and sin and the
 * arithmetic is clpe's, so they must be equal (f32 and f64 only: a 16-bit
 * cache rounds cos and sin). Returns and leaves x and out as
 * verify_baselines. */
int verify_rope_table(op_ctx *o, cl_program baselines, char *why, size_t why_cap);

#endif /* CLPE_BENCH_VERIFY_H */
