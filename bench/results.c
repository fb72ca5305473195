/* SPDX-License-Identifier: Apache-2.0 */
/*
 * results.c - the result store of clpe-bench (see results.h).
 */
#include "results.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

row *results_add(results *res)
{
    if (res->n == res->cap) {
        size_t cap = res->cap ? 2 * res->cap : 64;
        row *r = realloc(res->rows, cap * sizeof *r);
        if (!r)
            return NULL;
        res->rows = r;
        res->cap = cap;
    }
    row *r = &res->rows[res->n++];
    memset(r, 0, sizeof *r);
    r->limit = -1;
    r->baseline = -1;
    r->ratio = NAN;
    r->baseline_ratio = NAN;
    return r;
}

const char *results_note(results *res, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **notes = realloc(res->notes, (res->n_notes + 1) * sizeof *notes);
    if (!notes)
        return NULL;
    res->notes = notes;
    char *s = malloc(strlen(buf) + 1);
    if (!s)
        return NULL;
    strcpy(s, buf);
    res->notes[res->n_notes++] = s;
    return s;
}

double row_gelem(const row *r)
{
    return r->state == ROW_OK && r->r.median_s > 0 ? r->elements / r->r.median_s * 1e-9 : NAN;
}

double row_spread(const row *r)
{
    return r->state == ROW_OK && r->r.median_s > 0 ? (r->r.max_s - r->r.min_s) / r->r.median_s
                                                   : NAN;
}

int results_best(const results *res, const char *family, const char *dtype, const char *size,
                 const char *group)
{
    int best = -1;
    for (size_t i = 0; i < res->n; i++) {
        const row *r = &res->rows[i];
        if (strcmp(r->op->family, family) != 0 || strcmp(r->dtype, dtype) != 0 ||
            strcmp(r->size, size) != 0 || strcmp(r->group, group) != 0)
            continue;
        /* A measured line beats an unmeasured one; NAN never wins. */
        if (best < 0 || (r->state == ROW_OK && !(row_gelem(r) <= row_gelem(&res->rows[best]))))
            best = (int)i;
    }
    return best;
}

/* The dtype label the lines of family use, for a line of dtype label `dtype`
 * whose stream suffix is `stream`. */
static const char *label_for(const char *family, const char *dtype, const char *stream)
{
    return ops_family_role(family) == OP_ROLE_LIMIT ? stream : dtype;
}

static double ratio_to(const results *res, const row *r, int other)
{
    if (other < 0 || r->state != ROW_OK || res->rows[other].state != ROW_OK)
        return NAN;
    return row_gelem(r) / row_gelem(&res->rows[other]);
}

void results_link(results *res, size_t i)
{
    row *r = &res->rows[i];
    const char *stream = NULL;
    for (size_t k = 0; k < BENCH_N_DTYPES && !stream; k++)
        if (strcmp(BENCH_DTYPES[k].name, r->dtype) == 0 ||
            strcmp(BENCH_DTYPES[k].stream, r->dtype) == 0)
            stream = BENCH_DTYPES[k].stream;
    if (!stream)
        stream = r->dtype;
    if (r->op->limit)
        r->limit = results_best(res, r->op->limit, label_for(r->op->limit, r->dtype, stream),
                                r->size, r->group);
    if (r->op->baseline)
        r->baseline = results_best(res, r->op->baseline,
                                   label_for(r->op->baseline, r->dtype, stream), r->size,
                                   r->group);
    r->ratio = ratio_to(res, r, r->limit);
    r->baseline_ratio = ratio_to(res, r, r->baseline);
}

void results_free(results *res)
{
    for (size_t i = 0; i < res->n_notes; i++)
        free(res->notes[i]);
    free(res->notes);
    free(res->rows);
    memset(res, 0, sizeof *res);
}
