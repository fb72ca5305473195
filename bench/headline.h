/* SPDX-License-Identifier: Apache-2.0 */
/*
 * headline.h - the few ratios clpe-bench's targets are set on (issues 5 and
 * 12), taken from the full-size lines of one run.
 */
#ifndef CLPE_BENCH_HEADLINE_H
#define CLPE_BENCH_HEADLINE_H

#include "options.h"
#include "results.h"

typedef struct headline {
    char what[64];           /* "f32 add / table-add" */
    const char *dtype;
    const char *numerator;   /* family names; denominator "" for the enqueue cost */
    const char *denominator;
    double value;            /* ratio of Gelem/s (fastest variant of the denominator
                                timed in the dtype's group), or us per call for the
                                enqueue cost */
    double target;
    int at_most;             /* 1: met when value <= target (a cost); 0: value >= target */
} headline;

#define HEADLINE_MAX 24

/* The headline figures measured in res, at most HEADLINE_MAX; the add /
 * table-add target depends on o->batch. Returns how many were written. */
size_t headlines_compute(const results *res, const options *o, headline *out);

#endif /* CLPE_BENCH_HEADLINE_H */
