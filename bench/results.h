/* SPDX-License-Identifier: Apache-2.0 */
/*
 * results.h - the result store of clpe-bench: one line per operation, dtype
 * and size, the host cost lines, free-text notes, and how lines refer to
 * the lines they are compared with. It never prints.
 */
#ifndef CLPE_BENCH_RESULTS_H
#define CLPE_BENCH_RESULTS_H

#include "ops.h"

typedef enum row_state { ROW_OK, ROW_SKIPPED, ROW_FAILED } row_state;

typedef struct row {
    const op_def *op;
    const char *dtype;       /* op_dtype_label: dtype name, or a limit's stream suffix */
    const char *size;        /* "full" or "1/64" */
    const char *group;       /* the dtype whose operations it took turns with */
    size_t batch, seq, d;
    double elements, bytes;
    bench_result r;
    row_state state;
    int limit;               /* index of the line it is held against, or -1 */
    double ratio;            /* Gelem/s over the limit's; NAN when not measured */
    int baseline;            /* index of the user's-alternative line, or -1 */
    double baseline_ratio;   /* Gelem/s over the baseline's; NAN when not measured */
    char note[200];
} row;

/* Host cost of one enqueue call. */
typedef struct cost_row {
    const op_def *op;
    size_t rows, d, calls;
    cl_int status;
    int skipped;             /* the device cannot run it (not a failure) */
    double median_s, min_s, max_s;
} cost_row;

#define RESULTS_MAX_COSTS 12

typedef struct results {
    row *rows;
    size_t n, cap;
    char **notes;
    size_t n_notes;
    cost_row costs[RESULTS_MAX_COSTS];
    size_t n_costs;
    int failed;              /* some operation failed: exit status 1 */
} results;

/* Append a zeroed line (no comparisons, ratios NAN); NULL when out of memory. */
row *results_add(results *res);

/* Store a note; returns its text, or NULL when out of memory. */
const char *results_note(results *res, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Gelem/s of a measured line; NAN otherwise. */
double row_gelem(const row *r);

/* (max - min) / median over the repeats of a measured line; NAN otherwise. */
double row_spread(const row *r);

/* The line of family at (dtype label, size) timed among group's operations:
 * of the variants measured, the fastest; -1 when none was. A line is only
 * compared with lines of its own group: those took turns with it, so a
 * change in the machine's speed between groups falls on neither side. */
int results_best(const results *res, const char *family, const char *dtype, const char *size,
                 const char *group);

/* Point line i at its limit and baseline (the fastest variants of its group
 * measured so far at its size) and compute its ratios. */
void results_link(results *res, size_t i);

void results_free(results *res);

#endif /* CLPE_BENCH_RESULTS_H */
