/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kv.c - clpe-bench-kv: rotary into a KV cache against what it replaces,
 * in one process, the two taking turns round after round so that both see
 * the same machine.
 *
 *  - fused: clpe_enqueue_rope_kv (q rotated in place, k rotated and v
 *    copied into a contiguous cache) against clpe_enqueue_rope of q and k
 *    followed by one copy of k and v into the cache (clpe-bench's
 *    rope-copy), per dtype and token count; the figure is the median over
 *    rounds of time(rope + copy) / time(rope_kv): the fused call's
 *    throughput over the two passes' (>= 1: the fused call is faster).
 *  - fp8: clpe_enqueue_rope_kv into FP8 caches (E4M3, E5M2) against the
 *    same call into a 16-bit cache (float16 under float32 and float16
 *    activations, bfloat16 under bfloat16), per dtype and token count; the
 *    figure is the median over rounds of time(16-bit) / time(FP8) (>= 1:
 *    the FP8 cache is as fast or faster).
 *  - slots: the slot check alone (a call whose last token repeats the
 *    first one's slot, so nothing is rotated or written) on each path of
 *    CLPE_KV_SLOT_CHECK, against clpe_enqueue_rope of the same tokens; the
 *    figure is check / rope.
 * Wall clock (timing.c), clFinish included, best of the calls of a round.
 */
#include "clpe.h"
#include "timing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 16

typedef struct kv_options {
    const char *device;
    char dtypes[64];
    size_t tokens[MAX_LIST], n_tokens, slot_tokens[MAX_LIST], n_slot_tokens;
    size_t fp8_tokens[MAX_LIST], n_fp8_tokens;
    size_t heads, kv_heads, head_dim, rounds, calls;
} kv_options;

static const char *const usage_text =
    "usage: clpe-bench-kv [options]\n"
    "Times clpe_enqueue_rope_kv against clpe_enqueue_rope + a copy into the\n"
    "cache (fused), and its slot check on each path against clpe_enqueue_rope\n"
    "of the same tokens (slots), taking turns round after round.\n"
    "  --device SEL        device (default: $CLPE_DEVICE, else the first GPU)\n"
    "  --dtype LIST        f32,f16,bf16,f64 (default f32,f16,bf16)\n"
    "  --tokens LIST       fused: token counts (default 4096,32768)\n"
    "  --heads N           fused: query heads (default 32)\n"
    "  --kv-heads N        fused: key and value heads (default 8)\n"
    "  --head-dim N        fused: head size (default 128)\n"
    "  --fp8-tokens LIST   fp8: token counts (default none): rope_kv into FP8\n"
    "                      caches against a 16-bit cache, the fused problem's heads\n"
    "  --slot-tokens LIST  slots: token counts, 0 for none (default\n"
    "                      512,4096,100000,1000000; one head of 64, f32)\n"
    "  --rounds N          rounds (default 7)\n"
    "  --calls N           calls per operation and round (default 3)\n"
    "  --help              this text\n";

static int parse_list(const char *text, size_t *out, size_t *n)
{
    *n = 0;
    while (text && *text && *n < MAX_LIST) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || end == text || (*end && *end != ','))
            return -1;
        if (v)
            out[(*n)++] = (size_t)v;
        text = *end ? end + 1 : end;
    }
    return 0;
}

static int parse(int argc, char **argv, kv_options *o)
{
    *o = (kv_options){.heads = 32, .kv_heads = 8, .head_dim = 128, .rounds = 7, .calls = 3};
    snprintf(o->dtypes, sizeof o->dtypes, "f32,f16,bf16");
    parse_list("4096,32768", o->tokens, &o->n_tokens);
    parse_list("512,4096,100000,1000000", o->slot_tokens, &o->n_slot_tokens);
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t one[MAX_LIST], n = 0;
        if (!strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            exit(0);
        }
        if (!v)
            return -1;
        ++i;
        if (!strcmp(a, "--device"))
            o->device = v;
        else if (!strcmp(a, "--dtype"))
            snprintf(o->dtypes, sizeof o->dtypes, "%s", v);
        else if (!strcmp(a, "--tokens")) {
            if (parse_list(v, o->tokens, &o->n_tokens))
                return -1;
        } else if (!strcmp(a, "--fp8-tokens")) {
            if (parse_list(v, o->fp8_tokens, &o->n_fp8_tokens))
                return -1;
        } else if (!strcmp(a, "--slot-tokens")) {
            if (parse_list(v, o->slot_tokens, &o->n_slot_tokens))
                return -1;
        } else if (!parse_list(v, one, &n) && n == 1) {
            size_t *field = !strcmp(a, "--heads")      ? &o->heads
                            : !strcmp(a, "--kv-heads") ? &o->kv_heads
                            : !strcmp(a, "--head-dim") ? &o->head_dim
                            : !strcmp(a, "--rounds")   ? &o->rounds
                            : !strcmp(a, "--calls")    ? &o->calls
                                                       : NULL;
            if (!field)
                return -1;
            *field = one[0];
        } else {
            return -1;
        }
    }
    return 0;
}

typedef struct kv_env {
    cl_context ctx;
    cl_device_id device;
    cl_command_queue queue;
} kv_env;

static cl_mem buffer(const kv_env *e, size_t bytes)
{
    cl_int err = CL_SUCCESS;
    cl_mem b = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &err);
    if (err != CL_SUCCESS)
        return NULL;
    unsigned char zero = 0;
    if (bytes && clEnqueueFillBuffer(e->queue, b, &zero, 1, 0, bytes, 0, NULL, NULL)) {
        clReleaseMemObject(b);
        return NULL;
    }
    return b;
}

static clpe_rope *make_rope(const kv_env *e, clpe_dtype dtype, size_t head_dim)
{
    clpe_rope_config cfg = clpe_rope_config_default((uint32_t)head_dim);
    cfg.dtype = dtype;
    return clpe_rope_create(e->ctx, e->device, &cfg, NULL, NULL);
}

/* One rotary-into-cache problem: q [tokens, hq, d] in qb; k then v
 * [tokens, hk, d] in kvb, and the key and value caches after them
 * (contiguous, token t in slot t, slot_base of the slots buffer). */
typedef struct kv_problem {
    size_t tokens, hq, hk, d, es;
    cl_mem qb, kvb, slots;
    clpe_rope *rope;
} kv_problem;

static size_t kv_region(const kv_problem *p) { return p->tokens * p->hk * p->d * p->es; }

static cl_int run_rope_kv(const kv_env *e, const kv_problem *p, clpe_dtype dtype)
{
    size_t kv = kv_region(p);
    clpe_rope_tensor q = {.buffer = p->qb, .heads = p->hq},
                     k = {.buffer = p->kvb, .heads = p->hk},
                     v = {.buffer = p->kvb, .offset = kv, .heads = p->hk};
    clpe_kv_cache c = {.key = p->kvb, .value = p->kvb, .key_offset = 2 * kv,
                       .value_offset = 3 * kv, .dtype = dtype, .num_blocks = 1,
                       .block_size = p->tokens, .heads = p->hk};
    if (dtype == CLPE_DTYPE_FP8_E4M3 || dtype == CLPE_DTYPE_FP8_E5M2) {
        c.key_scale = 0.05f; /* a calibrated scale: not a power of two */
        c.value_scale = 0.03f;
    }
    clpe_kv_slots s = {.buffer = p->slots};
    return clpe_enqueue_rope_kv(p->rope, e->queue, p->tokens, p->hq ? &q : NULL, NULL, &k, &v,
                                &c, &s, NULL, 0, 0, NULL, NULL);
}

static cl_int run_rope_copy(const kv_env *e, const kv_problem *p)
{
    size_t kv = kv_region(p);
    clpe_rope_tensor q = {.buffer = p->qb, .heads = p->hq}, k = {.buffer = p->kvb, .heads = p->hk};
    cl_int err = clpe_enqueue_rope(p->rope, e->queue, 1, p->tokens, &q, &k, NULL, 0, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueCopyBuffer(e->queue, p->kvb, p->kvb, 0, 2 * kv, 2 * kv, 0, NULL, NULL);
    return err;
}

static cl_int run_rope(const kv_env *e, const kv_problem *p)
{
    clpe_rope_tensor q = {.buffer = p->qb, .heads = p->hq}, k = {.buffer = p->kvb, .heads = p->hk};
    return clpe_enqueue_rope(p->rope, e->queue, 1, p->tokens, &q, &k, NULL, 0, 0, NULL, NULL);
}

typedef enum { OP_ROPE_KV, OP_ROPE_COPY, OP_ROPE } kv_op;

/* Best seconds of `calls` calls (each finished before the next). */
static cl_int best_of(const kv_env *e, const kv_problem *p, clpe_dtype dtype, kv_op op,
                      size_t calls, double *best)
{
    *best = 1e30;
    for (size_t c = 0; c < calls; ++c) {
        double t0 = bench_now();
        cl_int err = op == OP_ROPE_KV     ? run_rope_kv(e, p, dtype)
                     : op == OP_ROPE_COPY ? run_rope_copy(e, p)
                                          : run_rope(e, p);
        if (err == CL_SUCCESS)
            err = clFinish(e->queue);
        if (err != CL_SUCCESS)
            return err;
        double t = bench_now() - t0;
        if (t < *best)
            *best = t;
    }
    return CL_SUCCESS;
}

static cl_int make_problem(const kv_env *e, clpe_dtype dtype, size_t es, size_t tokens,
                           size_t hq, size_t hk, size_t d, int64_t repeat_last, kv_problem *p)
{
    *p = (kv_problem){.tokens = tokens, .hq = hq, .hk = hk, .d = d, .es = es};
    int64_t *slots = malloc(tokens * sizeof *slots);
    if (!slots)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t t = 0; t < tokens; ++t)
        slots[t] = (int64_t)t;
    if (repeat_last)
        slots[tokens - 1] = 0;
    cl_int err = CL_SUCCESS;
    p->slots = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              tokens * sizeof *slots, slots, &err);
    free(slots);
    p->qb = buffer(e, tokens * hq * d * es);
    p->kvb = buffer(e, 4 * tokens * hk * d * es);
    p->rope = make_rope(e, dtype, d);
    if (err != CL_SUCCESS || !p->qb || !p->kvb || !p->rope)
        return err != CL_SUCCESS ? err : CLPE_ERROR_OUT_OF_HOST_MEMORY;
    return clFinish(e->queue);
}

static void free_problem(kv_problem *p)
{
    if (p->slots)
        clReleaseMemObject(p->slots);
    if (p->qb)
        clReleaseMemObject(p->qb);
    if (p->kvb)
        clReleaseMemObject(p->kvb);
    clpe_rope_release(p->rope);
}

/* Whether name is an item of the comma-separated list. */
static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *at = list; (at = strstr(at, name)); at += n)
        if ((at == list || at[-1] == ',') && (at[n] == ',' || at[n] == '\0'))
            return 1;
    return 0;
}

static int fused(const kv_env *e, const kv_options *o)
{
    static const struct {
        const char *name;
        clpe_dtype dtype;
        size_t es;
    } types[] = {{"f32", CLPE_DTYPE_F32, 4}, {"f16", CLPE_DTYPE_F16, 2},
                 {"bf16", CLPE_DTYPE_BF16, 2}, {"f64", CLPE_DTYPE_F64, 8}};
    printf("fused: %zu query heads, %zu kv heads, head %zu; %zu rounds of %zu calls each\n",
           o->heads, o->kv_heads, o->head_dim, o->rounds, o->calls);
    printf("  dtype  tokens   rope_kv ms  rope+copy ms  throughput ratio (median of rounds)\n");
    for (size_t k = 0; k < 4; ++k) {
        if (!in_list(o->dtypes, types[k].name))
            continue;
        if (!clpe_device_supports_dtype(e->device, types[k].dtype))
            continue;
        for (size_t n = 0; n < o->n_tokens; ++n) {
            kv_problem p;
            cl_int err = make_problem(e, types[k].dtype, types[k].es, o->tokens[n], o->heads,
                                      o->kv_heads, o->head_dim, 0, &p);
            double ratio[64], fused_s[64], pair_s[64];
            size_t rounds = o->rounds < 64 ? o->rounds : 64;
            /* a warm-up round (builds, first touches), not kept */
            for (size_t r = 0; r <= rounds && err == CL_SUCCESS; ++r) {
                double a = 0, b = 0;
                err = best_of(e, &p, types[k].dtype, OP_ROPE_KV, o->calls, &a);
                if (err == CL_SUCCESS)
                    err = best_of(e, &p, types[k].dtype, OP_ROPE_COPY, o->calls, &b);
                if (r > 0) {
                    fused_s[r - 1] = a;
                    pair_s[r - 1] = b;
                    ratio[r - 1] = b / a;
                }
            }
            if (err != CL_SUCCESS) {
                printf("  %-5s %7zu  failed: %s\n", types[k].name, o->tokens[n],
                       clpe_status_string(err));
                free_problem(&p);
                return 1;
            }
            printf("  %-5s %7zu  %10.2f  %12.2f  %6.3f\n", types[k].name, o->tokens[n],
                   1e3 * bench_median(fused_s, rounds), 1e3 * bench_median(pair_s, rounds),
                   bench_median(ratio, rounds));
            free_problem(&p);
        }
    }
    return 0;
}

static int fp8(const kv_env *e, const kv_options *o)
{
    static const struct {
        const char *name;
        clpe_dtype dtype, cache16;
        size_t es;
    } types[] = {{"f32", CLPE_DTYPE_F32, CLPE_DTYPE_F16, 4},
                 {"f16", CLPE_DTYPE_F16, CLPE_DTYPE_F16, 2},
                 {"bf16", CLPE_DTYPE_BF16, CLPE_DTYPE_BF16, 2}};
    if (!o->n_fp8_tokens)
        return 0;
    printf("\nfp8: rope_kv into a 16-bit cache and into FP8 caches (E4M3, E5M2), %zu query\n"
           "heads, %zu kv heads, head %zu, taking turns in each round\n",
           o->heads, o->kv_heads, o->head_dim);
    printf("  dtype  tokens   16-bit ms  e4m3 ms  e5m2 ms   16-bit / e4m3, / e5m2 (medians)\n");
    for (size_t k = 0; k < 3; ++k) {
        if (!in_list(o->dtypes, types[k].name))
            continue;
        for (size_t n = 0; n < o->n_fp8_tokens; ++n) {
            kv_problem p;
            cl_int err = make_problem(e, types[k].dtype, types[k].es, o->fp8_tokens[n], o->heads,
                                      o->kv_heads, o->head_dim, 0, &p);
            const clpe_dtype caches[3] = {types[k].cache16, CLPE_DTYPE_FP8_E4M3,
                                          CLPE_DTYPE_FP8_E5M2};
            double t[3][64], ratio[2][64];
            size_t rounds = o->rounds < 64 ? o->rounds : 64;
            /* a warm-up round (builds, first touches), not kept */
            for (size_t r = 0; r <= rounds && err == CL_SUCCESS; ++r) {
                double a[3] = {0, 0, 0};
                for (int c = 0; c < 3 && err == CL_SUCCESS; ++c)
                    err = best_of(e, &p, caches[c], OP_ROPE_KV, o->calls, &a[c]);
                for (int c = 0; c < 3 && r > 0; ++c)
                    t[c][r - 1] = a[c];
                for (int c = 0; c < 2 && r > 0; ++c)
                    ratio[c][r - 1] = a[0] / a[c + 1];
            }
            if (err != CL_SUCCESS) {
                printf("  %-5s %7zu  failed: %s\n", types[k].name, o->fp8_tokens[n],
                       clpe_status_string(err));
                free_problem(&p);
                return 1;
            }
            printf("  %-5s %7zu  %9.2f  %7.2f  %7.2f   %6.3f %6.3f\n", types[k].name,
                   o->fp8_tokens[n], 1e3 * bench_median(t[0], rounds),
                   1e3 * bench_median(t[1], rounds), 1e3 * bench_median(t[2], rounds),
                   bench_median(ratio[0], rounds), bench_median(ratio[1], rounds));
            free_problem(&p);
        }
    }
    return 0;
}

static int slots(const kv_env *e, const kv_options *o)
{
    if (!o->n_slot_tokens)
        return 0;
    printf("\nslots: the check of a refused call (the last token repeats the first's slot),\n"
           "f32, 1 query head, 1 kv head, head 64, against clpe_enqueue_rope of the same\n"
           "tokens; the paths and rope take turns in each round\n");
    printf("  tokens    rope ms  check ms by size, sort, hash   check / rope by size, sort, "
           "hash (medians of rounds)\n");
    for (size_t n = 0; n < o->n_slot_tokens; ++n) {
        kv_problem p;
        clpe_rope *ropes[3] = {NULL, NULL, NULL};
        cl_int err = make_problem(e, CLPE_DTYPE_F32, 4, o->slot_tokens[n], 1, 1, 64, 1, &p);
        /* one object per path: each reads CLPE_KV_SLOT_CHECK at its first call */
        for (unsigned path = 0; path < 3 && err == CL_SUCCESS; ++path) {
            char value[4];
            snprintf(value, sizeof value, "%u", path);
            setenv("CLPE_KV_SLOT_CHECK", value, 1);
            ropes[path] = make_rope(e, CLPE_DTYPE_F32, 64);
            kv_problem q = p;
            q.rope = ropes[path];
            err = ropes[path] ? run_rope_kv(e, &q, CLPE_DTYPE_F32) : CLPE_ERROR_OUT_OF_HOST_MEMORY;
            if (err == CL_SUCCESS)
                err = clFinish(e->queue);
        }
        unsetenv("CLPE_KV_SLOT_CHECK");
        double ratio[3][64], check_s[3][64], rope_s[64];
        size_t rounds = o->rounds < 64 ? o->rounds : 64;
        for (size_t r = 0; r <= rounds && err == CL_SUCCESS; ++r) {
            double b = 0, a[3] = {0, 0, 0};
            err = best_of(e, &p, CLPE_DTYPE_F32, OP_ROPE, o->calls, &b);
            for (unsigned path = 0; path < 3 && err == CL_SUCCESS; ++path) {
                kv_problem q = p;
                q.rope = ropes[path];
                err = best_of(e, &q, CLPE_DTYPE_F32, OP_ROPE_KV, o->calls, &a[path]);
            }
            for (unsigned path = 0; path < 3 && r > 0; ++path) {
                check_s[path][r - 1] = a[path];
                ratio[path][r - 1] = a[path] / b;
            }
            if (r > 0)
                rope_s[r - 1] = b;
        }
        for (unsigned path = 0; path < 3; ++path)
            clpe_rope_release(ropes[path]);
        if (err != CL_SUCCESS) {
            printf("  %8zu  failed: %s\n", o->slot_tokens[n], clpe_status_string(err));
            free_problem(&p);
            return 1;
        }
        printf("  %8zu  %8.3f  %8.3f %8.3f %8.3f   %6.3f %6.3f %6.3f\n", o->slot_tokens[n],
               1e3 * bench_median(rope_s, rounds), 1e3 * bench_median(check_s[0], rounds),
               1e3 * bench_median(check_s[1], rounds), 1e3 * bench_median(check_s[2], rounds),
               bench_median(ratio[0], rounds), bench_median(ratio[1], rounds), bench_median(ratio[2], rounds));
        free_problem(&p);
    }
    return 0;
}

int main(int argc, char **argv)
{
    kv_options o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "clpe-bench-kv: bad arguments\n%s", usage_text);
        return 2;
    }
    cl_platform_id platform;
    kv_env e = {0};
    clpe_status st = clpe_select_device(o.device, &platform, &e.device);
    cl_int err = st;
    if (st == CLPE_SUCCESS)
        e.ctx = clCreateContext(NULL, 1, &e.device, NULL, NULL, &err);
    if (err == CL_SUCCESS)
        e.queue = clCreateCommandQueue(e.ctx, e.device, 0, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clpe-bench-kv: no device: %s\n", clpe_status_string(err));
        return 1;
    }
    char name[256] = "?";
    clGetDeviceInfo(e.device, CL_DEVICE_NAME, sizeof name, name, NULL);
    printf("device: %s\n", name);
    int rc = fused(&e, &o);
    if (rc == 0)
        rc = fp8(&e, &o);
    if (rc == 0)
        rc = slots(&e, &o);
    clReleaseCommandQueue(e.queue);
    clReleaseContext(e.ctx);
    return rc;
}
