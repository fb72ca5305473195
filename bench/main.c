/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - clpe-bench: how close clpe runs to the speed limit of a device,
 * and to what a user would write instead.
 *
 * In one process, on one device and on the same buffers, it runs every
 * operation of the table in ops.c - the reference streams (the limits), the
 * precomputed-table baselines and clpe's own calls - for every dtype the
 * device supports, at the full size and at 1/64 of it (fixed overheads show
 * there), then measures the host cost of one enqueue call. It prints a
 * table and, with --json, writes every figure and the device description.
 *
 * The jobs live in their own files: options.c (command line), device.c
 * (device, context, buffers), ops.c (what is timed), timing.c (how),
 * results.c (the store), headline.c (target ratios), report.c (text) and
 * json.c (the JSON file). clpe-bench is a client of the public API only.
 */
#include "clpe.h"
#include "device.h"
#include "headline.h"
#include "json.h"
#include "ops.h"
#include "options.h"
#include "report.h"
#include "results.h"
#include "timing.h"
#include "verify.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const char bench_baselines_source[];

typedef struct run_state {
    const options *opt;
    bench_env env;
    bench_plan plan;
    results res;
} run_state;

static const char *const SIZES[] = {"full", "1/64"};

static void out_of_memory(void)
{
    fprintf(stderr, "clpe-bench: out of memory\n");
    exit(1);
}

static void note(run_state *s, const char *text)
{
    const char *stored = results_note(&s->res, "%s", text);
    if (!stored)
        out_of_memory();
    report_note(stored);
}

/* One operation of a group: bound, calibrated, then timed repeat by repeat. */
typedef struct pending {
    op_ctx o;
    const char *skip;        /* not run: why */
    cl_int status;
    size_t iters;
    double *device_s, *wall_s; /* per repeat */
} pending;

/* Append the line of one timed (or skipped) operation and report it. */
static void record(run_state *s, const pending *p, const char *size)
{
    const op_ctx *o = &p->o;
    row *r = results_add(&s->res);
    if (!r)
        out_of_memory();
    size_t idx = (size_t)(r - s->res.rows);
    r->op = o->def;
    r->dtype = op_dtype_label(o->def, o->dt);
    r->size = size;
    r->group = o->dt->name;
    r->batch = o->batch;
    r->seq = o->seq;
    r->d = o->d;
    r->elements = (double)(o->batch * o->seq) * (double)o->d;
    r->bytes = op_bytes(o->def, o->batch * o->seq, o->d, o->dt->size);
    if (p->skip) {
        r->state = ROW_SKIPPED;
        snprintf(r->note, sizeof r->note, "%s", p->skip);
    } else if (p->status == CLPE_ERROR_UNSUPPORTED_DTYPE) {
        r->state = ROW_SKIPPED;
        snprintf(r->note, sizeof r->note, "%s", clpe_status_string(p->status));
    } else if (p->status != CL_SUCCESS) {
        r->state = ROW_FAILED;
        s->res.failed = 1;
        snprintf(r->note, sizeof r->note, "%s (%d)", clpe_status_string(p->status),
                 (int)p->status);
    } else {
        bench_summarize(p->device_s, p->wall_s, s->plan.repeats, p->iters, &r->r);
        if (!r->r.event_timed)
            snprintf(r->note, sizeof r->note, "wall clock: no event profiling");
    }
    results_link(&s->res, idx);
    report_row(&s->res, &s->res.rows[idx]);
}

/* Time a group of operations that are compared with each other: each is
 * calibrated, then they take turns, one repeat each, so that a change in
 * the load of a shared machine falls on all of them alike. */
static void time_group(run_state *s, pending *p, size_t n, const char *size)
{
    cl_command_queue q = s->env.queue;
    for (size_t i = 0; i < n; i++)
        if (!p[i].skip)
            p[i].status = bench_calibrate(q, op_enqueue, &p[i].o, &s->plan, &p[i].iters);
    for (int r = 0; r < s->plan.repeats; r++)
        for (size_t i = 0; i < n; i++)
            if (!p[i].skip && p[i].status == CL_SUCCESS)
                p[i].status = bench_repeat(q, op_enqueue, &p[i].o, p[i].iters,
                                           &p[i].device_s[r], &p[i].wall_s[r]);
    for (size_t i = 0; i < n; i++)
        record(s, &p[i], size);
}

/* The baselines' table: PE(0 .. seq-1) by clpe's own table call, once per
 * dtype; the 1/64 size reads its first rows. */
static cl_int compute_table(run_state *s, clpe_encoder *enc)
{
    clpe_tensor table = {.buffer = s->env.table};
    cl_int err = clpe_enqueue_table(enc, s->env.queue, 0, s->opt->seq, &table, 0, NULL, NULL);
    return err == CL_SUCCESS ? clFinish(s->env.queue) : err;
}

/* The dtype's rotary object and rope-table's cos/sin cache (seq rows, from
 * position 0, by clpe_enqueue_rope_cache). NULL, with why set, when
 * either fails. */
static clpe_rope *make_rope(run_state *s, clpe_encoder *enc, const dtype_info *dt, char *why,
                            size_t why_cap)
{
    clpe_rope_config cfg = clpe_rope_config_default((uint32_t)s->opt->head_dim);
    cfg.dtype = dt->dtype;
    clpe_status st;
    clpe_rope *rope = clpe_rope_create_like(enc, &cfg, &st);
    if (!rope) {
        snprintf(why, why_cap, "rope: %s", clpe_status_string(st));
        return NULL;
    }
    clpe_tensor cos = {.buffer = s->env.rope_cos, .row_pitch = s->opt->head_dim};
    clpe_tensor sin = {.buffer = s->env.rope_sin, .row_pitch = s->opt->head_dim};
    st = clpe_enqueue_rope_cache(rope, s->env.queue, 0, s->opt->seq, &cos, &sin, 0, NULL, NULL);
    if (st == CLPE_SUCCESS)
        st = clFinish(s->env.queue);
    if (st != CLPE_SUCCESS) {
        snprintf(why, why_cap, "no cache: clpe_enqueue_rope_cache: %s", clpe_status_string(st));
        clpe_rope_release(rope);
        return NULL;
    }
    return rope;
}

/* An op_ctx of def on dt at seq rows: the rotary shape for rotary ops. */
static op_ctx bind_op(const run_state *s, const op_def *def, const dtype_info *dt,
                      clpe_encoder *enc, clpe_rope *rope, size_t seq)
{
    const options *opt = s->opt;
    op_ctx o = {.def = def, .env = &s->env, .dt = dt, .enc = enc, .batch = opt->batch,
                .seq = seq, .d = opt->d};
    if (def->rotary) {
        o.rope = rope;
        o.heads = opt->heads;
        o.kv_heads = opt->kv_heads;
        o.head_dim = opt->head_dim;
        o.d = (opt->heads + opt->kv_heads) * opt->head_dim;
    }
    return o;
}

/* Every line for one dtype: at each size, the operations in table order. */
static int run_dtype(run_state *s, const dtype_info *dt, clpe_encoder *base)
{
    const options *opt = s->opt;
    char text[256];
    if (!clpe_device_supports_dtype(s->env.device, dt->dtype)) {
        snprintf(text, sizeof text, "%s skipped: the device does not support it", dt->name);
        note(s, text);
        return 0;
    }
    clpe_encoder *enc = base;
    char skip_clpe[160] = "", skip_baseline[200] = ""; /* room for "no table: " + skip_clpe */
    if (dt->dtype != CLPE_DTYPE_F32) {
        clpe_config cfg = clpe_config_default((uint32_t)opt->d);
        cfg.dtype = dt->dtype;
        clpe_status st;
        enc = clpe_encoder_create_like(base, &cfg, &st);
        if (!enc)
            snprintf(skip_clpe, sizeof skip_clpe, "encoder: %s", clpe_status_string(st));
    }
    if (enc) {
        cl_int err = compute_table(s, enc);
        if (err != CL_SUCCESS)
            snprintf(skip_baseline, sizeof skip_baseline, "no table: clpe_enqueue_table: %s",
                     clpe_status_string(err));
    } else {
        snprintf(skip_baseline, sizeof skip_baseline, "no table: %s", skip_clpe);
    }
    char skip_rope[200] = "", skip_rope_table[200] = "";
    clpe_rope *rope = NULL;
    if (enc)
        rope = make_rope(s, enc, dt, skip_rope, sizeof skip_rope);
    else
        snprintf(skip_rope, sizeof skip_rope, "%s", skip_clpe);
    if (!rope)
        snprintf(skip_rope_table, sizeof skip_rope_table, "%s", skip_rope);
    else if (dt->size == 2)
        snprintf(skip_rope_table, sizeof skip_rope_table,
                 "a 16-bit cache rounds cos and sin: f32 and f64 only");
    char what[64];
    snprintf(what, sizeof what, "the %s baselines", dt->name);
    cl_program baselines = env_build(&s->env, bench_baselines_source, dt->define, what);
    int rc = baselines ? 0 : -1;
    if (rc == 0 && !skip_baseline[0]) {
        int v = verify_baselines(&s->env, dt, enc, baselines, opt->batch,
                                 options_small_seq(opt), opt->d, text, sizeof text);
        if (v < 0)
            rc = -1;
        else if (v > 0) {
            s->res.failed = 1;
            note(s, text);
        }
    }
    for (size_t k = 0; k < BENCH_N_OPS && rc == 0 && !skip_rope_table[0]; k++) {
        const op_def *def = &BENCH_OPS[k];
        /* the rope-table kernels (a baseline made of clpe calls has none) */
        if (def->role != OP_ROLE_BASELINE || !def->rotary || def->program == OP_PROGRAM_NONE ||
            !op_fits(def, opt->head_dim / 2))
            continue;
        op_ctx o = bind_op(s, def, dt, enc, rope, options_small_seq(opt));
        int v = verify_rope_table(&o, baselines, text, sizeof text);
        if (v < 0)
            rc = -1;
        else if (v > 0) {
            s->res.failed = 1;
            note(s, text);
        }
    }

    /* Fresh data for the timed operations: bit patterns left by another
     * dtype could be denormals here (slow on many CPUs), and the checks
     * above leave zeros, which this machine streams faster than data
     * (BENCH_DATA_BYTE, device.h). */
    size_t x_bytes = opt->batch * opt->seq * opt->d * dt->size;
    if (rc == 0 && (env_fill_data(&s->env, s->env.x, x_bytes) != CL_SUCCESS ||
                    env_fill_data(&s->env, s->env.y, x_bytes) != CL_SUCCESS)) {
        fprintf(stderr, "clpe-bench: filling buffers failed\n");
        rc = -1;
    }
    pending *group = malloc(BENCH_N_OPS * sizeof *group);
    double *times = malloc(2 * BENCH_N_OPS * (size_t)s->plan.repeats * sizeof *times);
    if (!group || !times)
        out_of_memory();
    for (int z = 0; z < (opt->no_small ? 1 : 2) && rc == 0; z++) {
        size_t seq = z == 0 ? opt->seq : options_small_seq(opt);
        size_t n = 0;
        /* Every operation of the table, limits included: f16 and bf16 share
         * their ushort limits, and each group times them again, so that
         * each 16-bit dtype's lines are held against a stream that took
         * turns with them (results_best). */
        for (size_t k = 0; k < BENCH_N_OPS && rc == 0; k++) {
            const op_def *def = &BENCH_OPS[k];
            if (!options_wants_op(opt, def->family, def->label) ||
                !op_fits(def, def->rotary ? opt->head_dim / 2 : opt->d))
                continue;
            pending *p = &group[n];
            *p = (pending){.o = bind_op(s, def, dt, enc, rope, seq),
                           .device_s = times + 2 * n * (size_t)s->plan.repeats};
            p->wall_s = p->device_s + s->plan.repeats;
            /* rotary lines that call clpe: clpe's own, and baselines made of its calls */
            int calls_rope = def->role == OP_ROLE_CLPE ||
                              (def->role == OP_ROLE_BASELINE && def->program == OP_PROGRAM_NONE);
            if (def->rotary && calls_rope && skip_rope[0])
                p->skip = skip_rope;
            else if (def->rotary && def->role == OP_ROLE_BASELINE && !calls_rope &&
                     skip_rope_table[0])
                p->skip = skip_rope_table;
            else if (def->role == OP_ROLE_CLPE && skip_clpe[0])
                p->skip = skip_clpe;
            else if (def->needs_table && skip_baseline[0])
                p->skip = skip_baseline;
            if (!p->skip && op_prepare(&p->o, baselines) != CL_SUCCESS)
                rc = -1;
            n++;
        }
        if (rc == 0)
            time_group(s, group, n, SIZES[z]);
        for (size_t i = 0; i < n; i++)
            op_release(&group[i].o);
    }
    free(times);
    free(group);
    if (baselines)
        clReleaseProgram(baselines);
    clpe_rope_release(rope);
    if (enc != base)
        clpe_encoder_release(enc);
    return rc;
}

/* Host cost of one enqueue call: small enough (4 rows; for rotary, 4
 * tokens of the rotary shape) that the device keeps up and the queue never
 * blocks the host, large enough to be a real launch. Every row operation,
 * and every rotary entry point when rope or rope-kv is measured: rotation,
 * the cos/sin cache, rotation into a KV cache. */
static int measure_costs(run_state *s, clpe_encoder *enc)
{
    static const char *const labels[] = {"opencl-launch", "table", "add",       "add-out",
                                         "gather",        "rope",  "rope-cache", "rope-kv"};
    size_t seq = s->opt->seq < 4 ? s->opt->seq : 4;
    int rotary = options_wants_op(s->opt, "rope", "rope") ||
                  options_wants_op(s->opt, "rope-kv", "rope-kv");
    int any = rotary;
    for (size_t k = 1; k < 5; k++)
        any |= options_wants_op(s->opt, labels[k], labels[k]);
    if (!any)
        return 0;
    char why[200] = "";
    clpe_rope *rope = rotary ? make_rope(s, enc, &BENCH_DTYPES[0], why, sizeof why) : NULL;
    report_costs_header(seq, s->opt->d, s->opt->calls);
    int rc = 0;
    for (size_t k = 0; k < sizeof labels / sizeof labels[0] && rc == 0; k++) {
        const op_def *def = k == 0 ? &BENCH_RAW_LAUNCH : NULL;
        for (size_t i = 0; i < BENCH_N_OPS && !def; i++)
            if (strcmp(BENCH_OPS[i].label, labels[k]) == 0)
                def = &BENCH_OPS[i];
        if (!def)
            def = &BENCH_ROPE_CACHE;
        if (def->rotary ? !rotary : k > 0 && !options_wants_op(s->opt, def->family, def->label))
            continue;
        op_ctx o = bind_op(s, def, &BENCH_DTYPES[0], enc, rope, seq);
        o.batch = 1;
        cost_row *c = &s->res.costs[s->res.n_costs++];
        *c = (cost_row){.op = def, .rows = seq, .d = o.d, .calls = s->opt->calls};
        if (def->rotary && !rope) {
            c->status = CLPE_ERROR_UNSUPPORTED_DTYPE;
            c->skipped = 1;
            report_cost(c);
            continue;
        }
        if (op_prepare(&o, NULL) != CL_SUCCESS) {
            rc = -1;
            break;
        }
        c->status = bench_enqueue_cost(s->env.host_queue, op_enqueue, &o, s->opt->calls,
                                       s->opt->repeats, &c->median_s, &c->min_s, &c->max_s);
        op_release(&o);
        if (c->status != CL_SUCCESS) {
            c->skipped = c->status == CLPE_ERROR_UNSUPPORTED_DTYPE;
            if (!c->skipped)
                s->res.failed = 1;
        }
        report_cost(c);
    }
    clpe_rope_release(rope);
    return rc;
}

int main(int argc, char **argv)
{
    options opt;
    int pr = options_parse(argc, argv, &opt);
    if (pr)
        return pr == 1 ? 0 : 2;

    run_state s;
    memset(&s, 0, sizeof s);
    s.opt = &opt;
    s.plan = (bench_plan){.target_s = opt.target_ms * 1e-3, .repeats = opt.repeats,
                          .max_iters = 100000};
    int rc = 1;
    clpe_encoder *base = NULL;

    cl_platform_id platform;
    cl_device_id device;
    clpe_status st = clpe_select_device(opt.device, &platform, &device);
    if (st != CLPE_SUCCESS) {
        fprintf(stderr, "clpe-bench: no device: %s\n", clpe_status_string(st));
        return 1;
    }
    device_desc dd;
    device_describe(platform, device, &dd);
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    report_start(&dd, &opt, date);

    if (env_create(&s.env, device, &dd, &opt) != 0)
        goto done;

    /* The float32 encoder builds the program every other dtype shares. */
    {
        static char log_text[16384];
        clpe_build_log log = {.buffer = log_text, .capacity = sizeof log_text};
        clpe_config cfg = clpe_config_default((uint32_t)opt.d);
        double t0 = bench_now();
        base = clpe_encoder_create(s.env.ctx, device, &cfg, &log, &st);
        if (!base) {
            fprintf(stderr, "clpe-bench: clpe_encoder_create: %s\n%s\n", clpe_status_string(st),
                    log.length ? log_text : "");
            goto done;
        }
        printf("clpe encoder (d %zu, f32) created in %.2f s\n", opt.d, bench_now() - t0);
    }
    char text[256];
    snprintf(text, sizeof text,
             "table-add and gather-table-add read a [%zu, %zu] table computed once per dtype "
             "by clpe_enqueue_table and shared by the %zu sequences of the batch",
             opt.seq, opt.d, opt.batch);
    note(&s, text);
    snprintf(text, sizeof text,
             "rotary: queries [%zu, %zu, %zu, %zu] in place with keys of %zu heads, half-split, "
             "base 10000; rope-table reads a [%zu, %zu] cos/sin cache made once per dtype by "
             "clpe_enqueue_rope_cache",
             opt.batch, opt.seq, opt.heads, opt.head_dim, opt.kv_heads, opt.seq, opt.head_dim);
    note(&s, text);
    printf("\n");

    report_header();
    for (size_t i = 0; i < BENCH_N_DTYPES; i++)
        if ((opt.dtype_mask & (1u << i)) && run_dtype(&s, &BENCH_DTYPES[i], base) != 0)
            goto done;

    if (measure_costs(&s, base) != 0)
        goto done;
    headline heads[HEADLINE_MAX];
    size_t n_heads = headlines_compute(&s.res, &opt, heads);
    report_headlines(heads, n_heads);

    if (opt.json) {
        if (json_write(opt.json, &opt, &dd, date, &s.res, heads, n_heads) != 0)
            goto done;
        printf("\nwrote %s\n", opt.json);
    }
    rc = s.res.failed ? 1 : 0;

done:
    clpe_encoder_release(base);
    env_release(&s.env);
    results_free(&s.res);
    return rc;
}
