/* SPDX-License-Identifier: Apache-2.0 */
/*
 * options.h - what clpe-bench is asked to measure: the command line and the
 * dtypes it knows.
 */
#ifndef CLPE_BENCH_OPTIONS_H
#define CLPE_BENCH_OPTIONS_H

#include "clpe.h"

#include <stddef.h>
#include <stdio.h>

typedef struct dtype_info {
    clpe_dtype dtype;
    const char *name;
    size_t size;          /* bytes per element */
    const char *stream;   /* suffix of the streams.cl kernels that move the same bytes */
    const char *define;   /* the -D option that compiles baselines.cl for this dtype */
} dtype_info;

extern const dtype_info BENCH_DTYPES[];
extern const size_t BENCH_N_DTYPES;

typedef struct options {
    const char *device;   /* clpe_select_device selector; NULL: CLPE_DEVICE or the default */
    size_t batch, seq, d, vocab;
    unsigned dtype_mask;  /* bit i: BENCH_DTYPES[i] */
    int quick;
    double target_ms;
    int repeats;
    size_t calls;         /* enqueue calls per repeat for the host cost */
    const char *json;
    const char *ops;      /* comma-separated families or labels to run; NULL: all */
    int no_small;         /* skip the 1/64 lines */
    size_t head_dim;      /* rotary: elements per head; d / head_dim query heads */
    size_t heads, kv_heads; /* rotary: query heads (d / head_dim) and key heads */
} options;

/* Rows of the 1/64 size: fixed costs per launch show there. */
size_t options_small_seq(const options *o);

/* Whether a line of this family and label is asked for (--ops). */
int options_wants_op(const options *o, const char *family, const char *label);

/* Parse argv into *o. Returns 0 to run, 1 to exit 0 (--help printed), 2 on
 * bad usage (one line printed on stderr). */
int options_parse(int argc, char **argv, options *o);

#endif /* CLPE_BENCH_OPTIONS_H */
