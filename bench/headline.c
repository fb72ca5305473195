/* SPDX-License-Identifier: Apache-2.0 */
/*
 * headline.c - the target ratios of clpe-bench (see headline.h).
 */
#include "headline.h"

#include <math.h>
#include <string.h>

/* One ratio, for each dtype listed. Targets set for PoCL on the 2-core CPU:
 * with batch > 1 the precomputed table stays in cache and parity is the
 * bound; at batch 1 it comes from memory and clpe moves fewer bytes. */
typedef struct ratio_spec {
    const char *numerator, *denominator;
    const char *dtypes;         /* comma-separated dtype names */
    double target_batch1, target_batched;
} ratio_spec;

static const ratio_spec RATIOS[] = {
    {"add", "table-add", "f32,f16,bf16,f64", 1.0, 0.9},
    {"gather", "gather-table-add", "f32,f16,bf16,f64", 0.9, 0.9},
    {"add", "stream", "f32,f16,bf16", 0.8, 0.8},
    {"table", "fill", "f32", 0.8, 0.8},
    {"rope", "rope-table", "f32,f64", 1.0, 0.9},
    {"rope", "rope-stream", "f32,f16,bf16,f64", 0.8, 0.8},
};

static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(list, name); p; p = strstr(p + 1, name))
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

static double full_gelem(const results *res, const char *family, const char *dtype,
                         const char *group)
{
    int i = results_best(res, family, dtype, "full", group);
    return i < 0 ? NAN : row_gelem(&res->rows[i]);
}

size_t headlines_compute(const results *res, const options *o, headline *out)
{
    size_t n = 0;
    for (size_t s = 0; s < sizeof RATIOS / sizeof RATIOS[0]; s++) {
        const ratio_spec *spec = &RATIOS[s];
        for (size_t k = 0; k < BENCH_N_DTYPES && n < HEADLINE_MAX - 2; k++) {
            const dtype_info *dt = &BENCH_DTYPES[k];
            if (!listed(spec->dtypes, dt->name) || !(o->dtype_mask & (1u << k)))
                continue;
            const char *den_dtype =
                ops_family_role(spec->denominator) == OP_ROLE_LIMIT ? dt->stream : dt->name;
            double v = full_gelem(res, spec->numerator, dt->name, dt->name) /
                       full_gelem(res, spec->denominator, den_dtype, dt->name);
            if (isnan(v))
                continue;
            headline *h = &out[n++];
            snprintf(h->what, sizeof h->what, "%s %s / %s", dt->name, spec->numerator,
                     spec->denominator);
            h->dtype = dt->name;
            h->numerator = spec->numerator;
            h->denominator = spec->denominator;
            h->value = v;
            h->target = o->batch > 1 ? spec->target_batched : spec->target_batch1;
            h->at_most = 0;
        }
    }
    for (size_t i = 0; i < res->n_costs; i++) {
        const cost_row *c = &res->costs[i];
        if (strcmp(c->op->family, "add") != 0 || c->skipped || c->status != CL_SUCCESS)
            continue;
        headline *h = &out[n++];
        snprintf(h->what, sizeof h->what, "f32 add enqueue cost, us");
        h->dtype = "f32";
        h->numerator = "add";
        h->denominator = "";
        h->value = c->median_s * 1e6;
        h->target = 10.0;
        h->at_most = 1;
    }
    /* rotation into a KV cache costs the host at most 5 us more than rotation */
    const cost_row *rope = NULL, *kv = NULL;
    for (size_t i = 0; i < res->n_costs; i++) {
        const cost_row *c = &res->costs[i];
        if (c->skipped || c->status != CL_SUCCESS)
            continue;
        if (strcmp(c->op->label, "rope") == 0)
            rope = c;
        else if (strcmp(c->op->label, "rope-kv") == 0)
            kv = c;
    }
    if (rope && kv) {
        headline *h = &out[n++];
        snprintf(h->what, sizeof h->what, "f32 rope-kv enqueue cost over rope, us");
        h->dtype = "f32";
        h->numerator = "rope-kv";
        h->denominator = "rope";
        h->value = (kv->median_s - rope->median_s) * 1e6;
        h->target = 5.0;
        h->at_most = 1;
    }
    return n;
}
