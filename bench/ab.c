/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ab.c - clpe-bench-ab: one clpe operation from several encoders, timed in
 * alternation in one process, each against a plain stream over the same
 * buffer in the same round.
 *
 * Why: on a shared machine the memory's speed moves from one process to the
 * next (on the 2-core development machine by up to 2x), so a ratio taken in
 * one run of clpe-bench and compared with one from another run says little
 * about a change to the kernels. Here every variant (its own encoder, so its
 * own program: another kernel folder, another launch knob) runs in the same
 * process, round after round in turn, and each round also times a plain
 * stream (x = x * 1 + 0) over the same bytes, the faster of clpe-bench's
 * one-float and float4 kernels, as clpe-bench's stream-x4 line. A variant's
 * figure is the median over the rounds of its rate divided by that round's
 * stream rate.
 *
 * Each variant's calls in a round last about 50 ms (counted after a warm-up
 * round), unless --calls says how many. With a fixed 3 calls, as this tool
 * first did, a call of 1-3 ms on PoCL carried the queue's start-up in its
 * wall time, which slowed the stream more than the slower clpe kernels, and
 * the f32 add at batch 8 read 0.80-0.87 of the stream where 30 calls read
 * 0.73 (bench/RESULTS.md, seventh round).
 *
 * A variant is a comma-separated list of NAME=VALUE environment settings,
 * set while its encoder is created and cleared after (CLPE_KERNEL_DIR,
 * CLPE_TILE_WALK, CLPE_ROWS_PER_ITEM, CLPE_PAIRS_PER_ITEM, ...), or "-" for
 * none. Positions are a start (0): the sequences of a batch share them.
 */
#include "device.h"
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VARIANTS 8
#define VOCAB 8192
#define AUTO_SECONDS 0.05 /* a variant's calls in one round, when --calls is not given */
#define ROPE_HEAD_DIM 128 /* --op rope: clpe-bench's default head_dim */

/* clpe-bench's row for dtype (BENCH_DTYPES), by value or by name. */
static const dtype_info *dtype_row(clpe_dtype dtype)
{
    for (size_t k = 0; k < BENCH_N_DTYPES; ++k)
        if (BENCH_DTYPES[k].dtype == dtype)
            return &BENCH_DTYPES[k];
    return &BENCH_DTYPES[0];
}

static int dtype_from_name(const char *name, clpe_dtype *dtype)
{
    for (size_t k = 0; k < BENCH_N_DTYPES; ++k)
        if (!strcmp(BENCH_DTYPES[k].name, name)) {
            *dtype = BENCH_DTYPES[k].dtype;
            return 0;
        }
    return -1;
}

static const char *const usage_text =
    "usage: clpe-bench-ab [options] VARIANT...\n"
    "Times one clpe operation from several encoders in one process, in turn,\n"
    "round after round, each round also timing a plain stream over the same\n"
    "buffer (the faster of one float and a float4 per work-item); prints each\n"
    "variant's median rate and the median over rounds of its rate / that\n"
    "round's stream rate (in bytes moved).\n"
    "A VARIANT is NAME=VALUE[,NAME=VALUE...], environment settings in effect\n"
    "while its encoder is created (CLPE_KERNEL_DIR, CLPE_TILE_WALK,\n"
    "CLPE_ROWS_PER_ITEM, CLPE_PAIRS_PER_ITEM, ...), or - for the defaults.\n"
    "\n"
    "  --device SEL   device (default: $CLPE_DEVICE, else the first GPU, else\n"
    "                 the first device)\n"
    "  --dtype T      f32, f16, bf16 or f64 (default f32)\n"
    "  --op OP        add, add-out, gather, table or rope (default add); rope\n"
    "                 rotates queries and keys of head_dim 128 in place, as\n"
    "                 clpe-bench's rope line: of the d / 128 heads a fifth are\n"
    "                 keys (d 1280: 8 query heads, 2 key heads)\n"
    "  --batch N      sequences, sharing their positions (default 8)\n"
    "  --seq N        rows per sequence (default 4096)\n"
    "  --d N          model width (default 1024)\n"
    "  --rounds N     rounds (default 15)\n"
    "  --calls N      calls per variant and round (default: as many as last\n"
    "                 about 50 ms, from a warm-up round)\n"
    "  --help         this text\n"
    "Exit status: 0 after printing, 1 when OpenCL or clpe fails, 2 on bad usage.\n";

typedef struct ab_options {
    const char *device, *op;
    clpe_dtype dtype;
    size_t batch, seq, d, rounds, calls;
    const char *variants[MAX_VARIANTS];
    size_t n_variants;
} ab_options;

static int usage_error(const char *what, const char *value)
{
    fprintf(stderr, "clpe-bench-ab: %s%s%s\n%s", what, value ? ": " : "", value ? value : "",
            "run clpe-bench-ab --help for the options\n");
    return 2;
}

static int parse_count(const char *text, size_t *out)
{
    if (!text || *text < '1' || *text > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end || v > (1ull << 31))
        return -1;
    *out = (size_t)v;
    return 0;
}

/* "-", or NAME=VALUE items separated by commas, each NAME non-empty. */
static int variant_is_valid(const char *variant)
{
    if (!strcmp(variant, "-"))
        return 1;
    for (const char *item = variant;; ++item) {
        const char *end = strchr(item, ','), *eq = strchr(item, '=');
        if (!eq || eq == item || (end && eq > end))
            return 0;
        if (!end)
            return 1;
        item = end;
    }
}

static int parse_args(int argc, char **argv, ab_options *o)
{
    *o = (ab_options){.op = "add", .dtype = CLPE_DTYPE_F32, .batch = 8, .seq = 4096, .d = 1024,
                      .rounds = 15, .calls = 0};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t *count = !strcmp(a, "--batch")    ? &o->batch
                        : !strcmp(a, "--seq")    ? &o->seq
                        : !strcmp(a, "--d")      ? &o->d
                        : !strcmp(a, "--rounds") ? &o->rounds
                        : !strcmp(a, "--calls")  ? &o->calls
                                                 : NULL;
        if (!strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            exit(0);
        } else if (count) {
            if (parse_count(v, count) != 0)
                return usage_error(a, v ? v : "needs a positive number");
            ++i;
        } else if (!strcmp(a, "--device") || !strcmp(a, "--op") || !strcmp(a, "--dtype")) {
            if (!v)
                return usage_error(a, "needs a value");
            if (!strcmp(a, "--device"))
                o->device = v;
            else if (!strcmp(a, "--op")) {
                if (strcmp(v, "add") && strcmp(v, "add-out") && strcmp(v, "gather") &&
                    strcmp(v, "table") && strcmp(v, "rope"))
                    return usage_error("--op must be add, add-out, gather, table or rope", v);
                o->op = v;
            } else if (dtype_from_name(v, &o->dtype) != 0)
                return usage_error("--dtype must be f32, f16, bf16 or f64", v);
            ++i;
        } else if (a[0] == '-' && a[1] == '-') {
            return usage_error("unknown option", a);
        } else {
            if (o->n_variants == MAX_VARIANTS)
                return usage_error("at most 8 variants", NULL);
            if (!variant_is_valid(a))
                return usage_error("a VARIANT is NAME=VALUE[,NAME=VALUE...] or -", a);
            o->variants[o->n_variants++] = a;
        }
    }
    if (o->n_variants == 0)
        return usage_error("give at least one VARIANT (- for the defaults)", NULL);
    if (o->d % 4 != 0)
        return usage_error("--d must be a multiple of 4 (the stream moves float4)", NULL);
    if (!strcmp(o->op, "rope") && (o->d % ROPE_HEAD_DIM != 0 || o->d / ROPE_HEAD_DIM < 5))
        return usage_error("--op rope needs --d a multiple of 128, at least 640", NULL);
    return 0;
}

/* Set (on) or clear (off) the NAME=VALUE settings of one valid variant. */
static int apply_variant(const char *variant, int on)
{
    if (!strcmp(variant, "-"))
        return 0;
    char *copy = strdup(variant);
    if (!copy)
        return -1;
    int status = 0;
    for (char *item = strtok(copy, ","); item && status == 0; item = strtok(NULL, ",")) {
        char *eq = strchr(item, '=');
        *eq = '\0';
        status = on ? setenv(item, eq + 1, 1) : unsetenv(item);
    }
    free(copy);
    return status;
}

/* --op rope: the query heads in x, then the key heads (a fifth of the d /
 * ROPE_HEAD_DIM heads) in y, so that queries and keys together hold as many
 * elements as the stream moves, as in clpe-bench (d = (heads + kv_heads) *
 * head_dim). */
static clpe_status enqueue_rope(clpe_rope *rope, const bench_env *env, const ab_options *o)
{
    size_t heads = o->d / ROPE_HEAD_DIM, kv_heads = heads / 5;
    clpe_rope_tensor q = {.buffer = env->x, .heads = heads - kv_heads};
    clpe_rope_tensor k = {.buffer = env->y, .heads = kv_heads};
    return clpe_enqueue_rope(rope, env->host_queue, o->batch, o->seq, &q, &k, NULL, 0, 0, NULL,
                             NULL);
}

/* One call of the operation on enc (rope: on its rotary object). */
static clpe_status enqueue_op(clpe_encoder *enc, clpe_rope *rope, const bench_env *env,
                              const ab_options *o)
{
    if (rope)
        return enqueue_rope(rope, env, o);
    clpe_tensor x = {.buffer = env->x}, y = {.buffer = env->y}, emb = {.buffer = env->emb};
    clpe_positions start = {.source = CLPE_POSITIONS_START};
    clpe_token_ids ids = {.buffer = env->ids};
    cl_command_queue queue = env->host_queue;
    if (!strcmp(o->op, "add"))
        return clpe_enqueue_add(enc, queue, o->batch, o->seq, &x, &start, 0, NULL, NULL);
    if (!strcmp(o->op, "add-out"))
        return clpe_enqueue_add_out(enc, queue, o->batch, o->seq, &x, &y, &start, 0, NULL,
                                    NULL);
    if (!strcmp(o->op, "gather"))
        return clpe_enqueue_gather(enc, queue, o->batch, o->seq, &ids, &emb, o->dtype,
                                   env->vocab, &y, &start, NULL, 0, NULL, NULL);
    return clpe_enqueue_table(enc, queue, 0, o->batch * o->seq, &x, 0, NULL, NULL);
}

/* count calls of enc's operation (rope's, if not NULL), or of the stream
 * kernel (enc NULL) over
 * global work-items, then the queue's finish. */
static cl_int run_calls(clpe_encoder *enc, clpe_rope *rope, cl_kernel stream, size_t global,
                        size_t count, const bench_env *env, const ab_options *o)
{
    cl_int err = CL_SUCCESS;
    for (size_t c = 0; c < count && err == CL_SUCCESS; ++c)
        err = enc ? enqueue_op(enc, rope, env, o)
                  : clEnqueueNDRangeKernel(env->host_queue, stream, 1, NULL, &global, NULL, 0,
                                           NULL, NULL);
    return err == CL_SUCCESS ? clFinish(env->host_queue) : err;
}

static int run(const ab_options *o)
{
    cl_platform_id platform;
    cl_device_id device;
    clpe_status st = clpe_select_device(o->device, &platform, &device);
    if (st != CLPE_SUCCESS) {
        fprintf(stderr, "clpe-bench-ab: no device: %s\n", clpe_status_string(st));
        return 1;
    }
    const dtype_info *dt = dtype_row(o->dtype);
    size_t elems = o->batch * o->seq * o->d, bytes = elems * dt->size;
    /* clpe-bench's buffers and reference kernels (bench/device.c) */
    options bo = {.batch = o->batch, .seq = o->seq, .d = o->d, .vocab = VOCAB,
                  .dtype_mask = 1u << (unsigned)(dt - BENCH_DTYPES), .head_dim = 1};
    device_desc dd;
    device_describe(platform, device, &dd);
    bench_env env;
    if (env_create(&env, device, &dd, &bo) != 0) {
        env_release(&env);
        return 1;
    }
    cl_int err = env_fill_data(&env, env.x, bytes);
    if (err == CL_SUCCESS) /* rope's keys */
        err = env_fill_data(&env, env.y, bytes);
    /* the plain streams: one float and a float4 per work-item */
    static const char *const stream_names[2] = {"stream_f32", "stream4_f32"};
    cl_kernel stream[2] = {NULL, NULL};
    float one = 1.0f, zero = 0.0f;
    for (int k = 0; k < 2 && err == CL_SUCCESS; ++k) {
        stream[k] = clCreateKernel(env.streams, stream_names[k], &err);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(stream[k], 0, sizeof(cl_mem), &env.x);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(stream[k], 1, sizeof one, &one);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(stream[k], 2, sizeof zero, &zero);
    }
    clpe_encoder *enc[MAX_VARIANTS] = {0};
    clpe_rope *rope[MAX_VARIANTS] = {0};
    clpe_rope_config rope_cfg = clpe_rope_config_default(ROPE_HEAD_DIM);
    rope_cfg.dtype = o->dtype;
    clpe_config cfg = clpe_config_default((uint32_t)o->d);
    cfg.dtype = o->dtype;
    for (size_t v = 0; v < o->n_variants && err == CL_SUCCESS; ++v) {
        if (apply_variant(o->variants[v], 1) != 0) {
            fprintf(stderr, "clpe-bench-ab: cannot set the environment of '%s'\n",
                    o->variants[v]);
            err = CL_OUT_OF_HOST_MEMORY;
            break;
        }
        enc[v] = clpe_encoder_create(env.ctx, device, &cfg, NULL, &st);
        /* the rotary object shares the encoder's program, so its knobs */
        if (enc[v] && !strcmp(o->op, "rope"))
            rope[v] = clpe_rope_create_like(enc[v], &rope_cfg, &st);
        apply_variant(o->variants[v], 0);
        if (!enc[v] || (!strcmp(o->op, "rope") && !rope[v])) {
            fprintf(stderr, "clpe-bench-ab: variant '%s': %s\n", o->variants[v],
                    clpe_status_string(st));
            err = st;
        }
    }
    /* entries: the variants, then the two streams */
    size_t n = o->n_variants, rounds = o->rounds, entries = n + 2;
    double *rate = calloc(entries * rounds, sizeof *rate), *ratio = calloc(rounds, sizeof *ratio);
    size_t calls[MAX_VARIANTS + 2];
    if (err == CL_SUCCESS && (!rate || !ratio))
        err = CL_OUT_OF_HOST_MEMORY;
    /* round 0 warms every kernel up, sets the calls per entry, and is not kept */
    for (size_t r = 0; r <= rounds && err == CL_SUCCESS; ++r) {
        for (size_t v = 0; v < entries && err == CL_SUCCESS; ++v) {
            size_t global = v == n ? elems * dt->size / 4 : elems * dt->size / 16;
            size_t count = r == 0 ? 1 : calls[v];
            cl_kernel k = v >= n ? stream[v - n] : NULL;
            if (r == 0) /* the first call may build the kernel: not the one timed */
                err = run_calls(v < n ? enc[v] : NULL, v < n ? rope[v] : NULL, k, global, 1, &env,
                                o);
            double t0 = bench_now();
            if (err == CL_SUCCESS)
                err = run_calls(v < n ? enc[v] : NULL, v < n ? rope[v] : NULL, k, global, count,
                                &env, o);
            double seconds = bench_now() - t0;
            if (r == 0) {
                double want = seconds > 0 ? ceil(AUTO_SECONDS / seconds) : 1.0;
                calls[v] = o->calls ? o->calls : want > 1000 ? 1000 : (size_t)want;
            } else {
                rate[v * rounds + r - 1] =
                    (double)(v >= n ? bytes : elems) * (double)count / seconds * 1e-9;
            }
        }
    }
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clpe-bench-ab: %s\n", clpe_status_string(err));
    } else {
        char dev_name[256] = "?";
        clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof dev_name, dev_name, NULL);
        printf("%s %s, batch %zu x seq %zu x d %zu, %zu rounds, %s\n", dt->name, o->op,
               o->batch, o->seq, o->d, rounds, dev_name);
        /* each round's stream: the faster of the two kernels */
        double *best = calloc(rounds, sizeof *best);
        if (!best) {
            fprintf(stderr, "clpe-bench-ab: out of host memory\n");
            err = CL_OUT_OF_HOST_MEMORY;
        }
        for (size_t r = 0; best && r < rounds; ++r)
            best[r] = fmax(rate[n * rounds + r], rate[(n + 1) * rounds + r]);
        /* clpe's op moves (read and write) what the stream moves when it reads and
         * writes x once: rates compare in bytes of x per second */
        double esize = (double)dt->size;
        for (size_t v = 0; best && v < n; ++v) {
            for (size_t r = 0; r < rounds; ++r)
                ratio[r] = rate[v * rounds + r] * esize / best[r];
            double *mine = &rate[v * rounds];
            double med_ratio = bench_median(ratio, (int)rounds);
            double med = bench_median(mine, (int)rounds); /* sorts: min first */
            printf("  %-40s %8.2f Gelem/s (min %.2f, max %.2f, %zu calls)   / stream %.3f\n",
                   o->variants[v], med, mine[0], mine[rounds - 1], calls[v], med_ratio);
        }
        for (size_t k = 0; best && k < 2; ++k)
            printf("  %-40s %8.2f GB/s of x (median, %zu calls)\n",
                   k ? "stream (float4 per work-item)" : "stream (one float per work-item)",
                   bench_median(&rate[(n + k) * rounds], (int)rounds), calls[n + k]);
        if (best)
            printf("  %-40s %8.2f GB/s of x (median)\n", "stream, the faster each round",
                   bench_median(best, (int)rounds));
        free(best);
    }
    for (size_t v = 0; v < n; ++v) {
        clpe_rope_release(rope[v]);
        clpe_encoder_release(enc[v]);
    }
    free(rate);
    free(ratio);
    for (int k = 0; k < 2; ++k)
        if (stream[k])
            clReleaseKernel(stream[k]);
    env_release(&env);
    return err == CL_SUCCESS ? 0 : 1;
}

int main(int argc, char **argv)
{
    ab_options o;
    int bad = parse_args(argc, argv, &o);
    return bad ? bad : run(&o);
}
