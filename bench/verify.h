/*
 * verify.h - a check that the baseline kernels compute what they claim, run
 * once per dtype before they are timed: a baseline that indexed the table or
 * the batch wrongly would still run fast, and the comparison would be void.
 */
#ifndef CLPE_BENCH_VERIFY_H
#define CLPE_BENCH_VERIFY_H

#include "ops.h"

/* Run each baseline of BENCH_OPS that fits once, at [batch, seq, d], on zero
 * inputs (x and the embedding are zeros, so every output row must equal its
 * table row), and compare every sequence with the first seq rows of the
 * table. Returns 0 when all match, 1 on a mismatch (described in why), -1
 * when OpenCL failed (printed). Leaves x and out zeroed for this dtype. */
int verify_baselines(const bench_env *env, const dtype_info *dt, clpe_encoder *enc,
                     cl_program baselines, size_t batch, size_t seq, size_t d, char *why,
                     size_t why_cap);

#endif /* CLPE_BENCH_VERIFY_H */
