/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.c - the JSON writer of clpe-bench (see json.h).
 */
#include "json.h"

#include "common/json.h"

#include <math.h>
#include <stdio.h>

/* A number, or null for NAN and infinities (JSON has neither). */
static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

/* ", \"key\": " then a string. */
static void json_key_string(FILE *f, const char *key, const char *value)
{
    fprintf(f, ", \"%s\": ", key);
    json_string(f, value);
}

static void json_key_number(FILE *f, const char *key, double value)
{
    fprintf(f, ", \"%s\": ", key);
    json_number(f, value);
}

static const char *role_name(op_role role)
{
    switch (role) {
    case OP_ROLE_LIMIT:
        return "limit";
    case OP_ROLE_BASELINE:
        return "baseline";
    case OP_ROLE_CLPE:
        return "clpe";
    }
    return "?";
}

static void write_device(FILE *f, const device_desc *dd)
{
    fprintf(f, "  \"device\": {\"platform\": ");
    json_string(f, dd->platform);
    json_key_string(f, "platform_version", dd->platform_version);
    json_key_string(f, "name", dd->name);
    json_key_string(f, "vendor", dd->vendor);
    json_key_string(f, "type", device_type_name(dd->type));
    json_key_string(f, "version", dd->version);
    json_key_string(f, "driver_version", dd->driver);
    json_key_string(f, "opencl_c_version", dd->c_version);
    fprintf(f,
            ", \"compute_units\": %u, \"max_clock_mhz\": %u, \"global_mem_bytes\": %llu, "
            "\"max_alloc_bytes\": %llu, \"fp16\": %s, \"fp64\": %s},\n",
            dd->compute_units, dd->clock_mhz, (unsigned long long)dd->global_mem,
            (unsigned long long)dd->max_alloc, dd->fp16 ? "true" : "false",
            dd->fp64 ? "true" : "false");
}

static void write_params(FILE *f, const options *o)
{
    fprintf(f,
            "  \"params\": {\"batch\": %zu, \"seq\": %zu, \"d\": %zu, \"vocab\": %zu, "
            "\"small_seq\": %zu, \"table_rows\": %zu, \"quick\": %s, \"target_ms\": %g, "
            "\"repeats\": %d, \"calls\": %zu, \"heads\": %zu, \"kv_heads\": %zu, "
            "\"head_dim\": %zu, \"dtypes\": [",
            o->batch, o->seq, o->d, o->vocab, options_small_seq(o), o->seq,
            o->quick ? "true" : "false", o->target_ms, o->repeats, o->calls, o->heads,
            o->kv_heads, o->head_dim);
    int first = 1;
    for (size_t i = 0; i < BENCH_N_DTYPES; i++)
        if (o->dtype_mask & (1u << i)) {
            fprintf(f, "%s\"%s\"", first ? "" : ", ", BENCH_DTYPES[i].name);
            first = 0;
        }
    fprintf(f, "], \"ops\": ");
    if (o->ops)
        json_string(f, o->ops);
    else
        fputs("null", f);
    fprintf(f, ", \"small\": %s},\n", o->no_small ? "false" : "true");
}

/* "key": {"op": ..., "dtype": ...}, "ratio_key": ratio */
static void write_comparison(FILE *f, const results *res, const char *key, int other,
                             const char *ratio_key, double ratio)
{
    if (other < 0)
        return;
    const row *l = &res->rows[other];
    fprintf(f, ", \"%s\": {\"op\": ", key);
    json_string(f, l->op->label);
    json_key_string(f, "dtype", l->dtype);
    fputc('}', f);
    json_key_number(f, ratio_key, ratio);
}

static void write_row(FILE *f, const results *res, const row *r)
{
    static const char *const states[] = {"ok", "skipped", "failed"};
    fprintf(f, "    {\"op\": ");
    json_string(f, r->op->label);
    json_key_string(f, "family", r->op->family);
    json_key_string(f, "kind", role_name(r->op->role));
    json_key_string(f, "dtype", r->dtype);
    json_key_string(f, "size", r->size);
    json_key_string(f, "group", r->group);
    fprintf(f, ", \"batch\": %zu, \"seq\": %zu, \"d\": %zu", r->batch, r->seq, r->d);
    if (r->op->role != OP_ROLE_CLPE)
        fprintf(f, ", \"per_work_item\": %u", r->op->width);
    json_key_number(f, "elements", r->elements);
    json_key_number(f, "bytes", r->bytes);
    json_key_string(f, "status", states[r->state]);
    if (r->state == ROW_OK) {
        fprintf(f, ", \"iterations\": %zu, \"repeats\": %d, \"timer\": \"%s\"", r->r.iters,
                r->r.repeats, r->r.event_timed ? "events" : "wall");
        fprintf(f, ", \"seconds\": {\"median\": ");
        json_number(f, r->r.median_s);
        json_key_number(f, "min", r->r.min_s);
        json_key_number(f, "max", r->r.max_s);
        json_key_number(f, "wall_median", r->r.wall_median_s);
        fputc('}', f);
        json_key_number(f, "spread", row_spread(r));
        json_key_number(f, "gelem_per_s", row_gelem(r));
        json_key_number(f, "gb_per_s", r->bytes / r->r.median_s * 1e-9);
    }
    write_comparison(f, res, "limit", r->limit, "ratio", r->ratio);
    write_comparison(f, res, "baseline", r->baseline, "baseline_ratio", r->baseline_ratio);
    if (r->note[0])
        json_key_string(f, "note", r->note);
    fputc('}', f);
}

static void write_cost(FILE *f, const cost_row *c)
{
    fprintf(f, "    {\"op\": ");
    json_string(f, c->op->label);
    fprintf(f, ", \"dtype\": \"f32\", \"rows\": %zu, \"d\": %zu, \"calls\": %zu", c->rows, c->d,
            c->calls);
    json_key_string(f, "status", c->skipped ? "skipped" : (c->status ? "failed" : "ok"));
    if (c->status == CL_SUCCESS) {
        fprintf(f, ", \"us_per_call\": {\"median\": ");
        json_number(f, c->median_s * 1e6);
        json_key_number(f, "min", c->min_s * 1e6);
        json_key_number(f, "max", c->max_s * 1e6);
        fputc('}', f);
    } else {
        json_key_string(f, "note", clpe_status_string(c->status));
    }
    fputc('}', f);
}

static void write_headline(FILE *f, const headline *h)
{
    fprintf(f, "    {\"what\": ");
    json_string(f, h->what);
    json_key_number(f, "value", h->value);
    json_key_number(f, "target", h->target);
    json_key_string(f, "target_is", h->at_most ? "max" : "min");
    json_key_string(f, "dtype", h->dtype);
    json_key_string(f, "numerator", h->numerator);
    json_key_string(f, "denominator", h->denominator);
    fputc('}', f);
}

int json_write(const char *path, const options *o, const device_desc *dd, const char *date,
               const results *res, const headline *heads, size_t n_heads)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    fprintf(f, "{\n  \"schema\": \"%s\",\n  \"clpe_version\": ", BENCH_JSON_SCHEMA);
    json_string(f, clpe_version_string());
    fprintf(f, ",\n  \"date\": ");
    json_string(f, date);
    fprintf(f, ",\n");
    write_device(f, dd);
    write_params(f, o);
    fprintf(f, "  \"results\": [");
    for (size_t i = 0; i < res->n; i++) {
        fputs(i ? ",\n" : "\n", f);
        write_row(f, res, &res->rows[i]);
    }
    fprintf(f, "\n  ],\n  \"enqueue_cost\": [");
    for (size_t i = 0; i < res->n_costs; i++) {
        fputs(i ? ",\n" : "\n", f);
        write_cost(f, &res->costs[i]);
    }
    fprintf(f, "\n  ],\n  \"headline\": [");
    for (size_t i = 0; i < n_heads; i++) {
        fputs(i ? ",\n" : "\n", f);
        write_headline(f, &heads[i]);
    }
    fprintf(f, "\n  ],\n  \"notes\": [");
    for (size_t i = 0; i < res->n_notes; i++) {
        fputs(i ? ", " : "", f);
        json_string(f, res->notes[i]);
    }
    fprintf(f, "]\n}\n");
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "clpe-bench: writing %s failed\n", path);
        return -1;
    }
    return 0;
}
