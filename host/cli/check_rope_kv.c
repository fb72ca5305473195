/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_rope_kv.c - rotary into a KV cache in `clpe check`:
 * clpe_enqueue_rope_kv against clpe_host_rope_kv. Contiguous caches
 * (path rope_kv) and paged ones, slots in a scrambled order and, in one
 * case, heads outside the slots (path rope_kv_paged); a fused QKV buffer
 * and separate padded q, k, v; q rotated in place and into q_out; GQA;
 * partial rotary; every fifth token a padding token (slot -1); the
 * inverse; every cache dtype the rope's dtype takes (its own, float16
 * and bfloat16 under float32, FP8 E4M3 and E5M2 with scales under all but
 * float64). Every buffer the call may touch is read
 * back whole (inputs, q_out and both caches, their untouched entries
 * included) and compared bit for bit; float32 rotations of q are sampled
 * against the exact rotation as on the rope path.
 */
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct kv_case {
    clpe_rope_pairing pairing;
    uint32_t head_dim, rotary_dim;
    clpe_rope_scaling scaling;
    size_t tokens, hq, hk;
    int fused;       /* one [tokens, (hq + 2 hk) * head_dim] buffer; else three, padded */
    int q_out;       /* q rotated into a buffer of its own */
    int paged;       /* 8 blocks of 4 slots, scrambled; else 2 sequences of 16 */
    int heads_outer; /* cache entries [block, head, slot, d] */
    clpe_position_source source;
    uint32_t flags;
} kv_case;

/* The first four cover every feature in both cache kinds (a quick run);
 * the rest add widths, GQA ratios and scalings. */
static const kv_case KV_CASES[] = {
    {CLPE_ROPE_HALF_SPLIT, 16, 16, CLPE_ROPE_DEFAULT, 11, 4, 2, 1, 0, 0, 0, CLPE_POSITIONS_IDS,
     0},
    {CLPE_ROPE_INTERLEAVED, 12, 8, CLPE_ROPE_DEFAULT, 9, 2, 1, 0, 1, 0, 0, CLPE_POSITIONS_START,
     CLPE_ROPE_INVERSE},
    {CLPE_ROPE_HALF_SPLIT, 10, 6, CLPE_ROPE_DEFAULT, 13, 3, 3, 0, 0, 1, 0,
     CLPE_POSITIONS_PER_SEQUENCE, 0},
    {CLPE_ROPE_INTERLEAVED, 8, 8, CLPE_ROPE_DEFAULT, 7, 1, 1, 1, 1, 1, 1, CLPE_POSITIONS_IDS,
     CLPE_ROPE_INVERSE},
    {CLPE_ROPE_HALF_SPLIT, 64, 64, CLPE_ROPE_LLAMA3, 29, 8, 2, 1, 0, 0, 0, CLPE_POSITIONS_IDS,
     0},
    {CLPE_ROPE_HALF_SPLIT, 128, 64, CLPE_ROPE_YARN, 31, 4, 1, 0, 1, 1, 0, CLPE_POSITIONS_IDS,
     CLPE_ROPE_INVERSE},
    {CLPE_ROPE_INTERLEAVED, 130, 96, CLPE_ROPE_LINEAR, 17, 2, 2, 1, 0, 1, 1,
     CLPE_POSITIONS_START, 0},
};
#define QUICK_KV_CASES 4

#define KV_QUICK_TOKENS_MAX 13 /* a quick run shortens every case to this */

/* Everything one call touches: the host's copies as made (init), the host
 * emulation's result (ref) and what the device left (dev). */
typedef struct kv_buffer {
    size_t bytes;
    unsigned char *init, *ref, *dev;
    cl_mem mem;
} kv_buffer;

enum { KV_IN0, KV_IN1, KV_IN2, KV_QOUT, KV_KEY, KV_VALUE, KV_NBUF };

typedef struct kv_run {
    const kv_case *c;
    clpe_rope_config cfg;
    clpe_dtype cache_dtype;
    size_t tokens, es, ces;
    int inputs;                 /* 1 fused, 3 separate */
    kv_buffer b[KV_NBUF];
    clpe_rope_tensor q, k, v, qo;
    clpe_kv_cache cache;
    int64_t *slots, *pos;
    int64_t start;
} kv_run;

static void kv_label(const kv_run *r, char *out, size_t cap)
{
    char lab[96];
    check_rope_label(&r->cfg, lab, sizeof lab);
    snprintf(out, cap, "%s kv %s%s cache=%s %s%s%s", lab,
             r->c->paged ? "paged" : "contiguous", r->c->heads_outer ? " [block,head,slot,d]" : "",
             cli_dtype_name(r->cache_dtype), r->c->fused ? "fused-qkv" : "separate-qkv",
             r->c->q_out ? " q_out" : "", r->c->flags & CLPE_ROPE_INVERSE ? " inverse" : "");
}

static void kv_fail(check_tally *t, const kv_run *r, const char *what, clpe_status st)
{
    if (t->error[0])
        return;
    char lab[200];
    kv_label(r, lab, sizeof lab);
    snprintf(t->error, sizeof t->error, "%.160s %s: %s (%d)", lab, what, clpe_status_string(st),
             (int)st);
}

/* Whole-buffer comparison: data_elements of it are outputs, the rest must
 * be left as they were. */
static void kv_compare(check_tally *t, const kv_run *r, const char *what, const kv_buffer *b,
                       size_t esize, uint64_t data_elements)
{
    t->elements += data_elements;
    t->rope_elements += data_elements;
    if (memcmp(b->dev, b->ref, b->bytes) == 0)
        return;
    for (size_t k = 0; k < b->bytes / esize; ++k) {
        if (memcmp(b->dev + k * esize, b->ref + k * esize, esize) == 0)
            continue;
        ++t->rope_mismatches;
        if (t->mismatches++ == 0) {
            uint64_t got = 0, want = 0;
            memcpy(&got, b->dev + k * esize, esize); /* little-endian host, as elsewhere */
            memcpy(&want, b->ref + k * esize, esize);
            char lab[200];
            kv_label(r, lab, sizeof lab);
            snprintf(t->first_mismatch, sizeof t->first_mismatch,
                     "%.160s %s: buffer element %zu: device 0x%0*llx, host emulation 0x%0*llx", lab,
                     what, k, (int)(2 * esize), (unsigned long long)got, (int)(2 * esize),
                     (unsigned long long)want);
        }
    }
}

static int kv_alloc(kv_buffer *b, size_t bytes)
{
    b->bytes = bytes;
    b->init = malloc(bytes);
    b->ref = malloc(bytes);
    b->dev = malloc(bytes);
    return b->init && b->ref && b->dev;
}

/* Lay out the inputs, q_out and the cache; fill them; make the slots and
 * positions. 0 when out of host memory. */
static int kv_make(check_checker *ck, kv_run *r)
{
    const kv_case *c = r->c;
    const size_t hd = c->head_dim, es = r->es, tokens = r->tokens;
    if (c->fused) {
        const size_t row = (c->hq + 2 * c->hk) * hd;
        r->inputs = 1;
        if (!kv_alloc(&r->b[KV_IN0], tokens * row * es))
            return 0;
        r->q = (clpe_rope_tensor){.heads = c->hq, .row_pitch = row};
        r->k = (clpe_rope_tensor){.offset = c->hq * hd * es, .heads = c->hk, .row_pitch = row};
        r->v = (clpe_rope_tensor){.offset = (c->hq + c->hk) * hd * es, .heads = c->hk,
                                  .row_pitch = row};
    } else {
        /* heads padded by 3 elements, tokens by 5 more, 7 elements before the first */
        const size_t hp = hd + 3, heads[3] = {c->hq, c->hk, c->hk};
        clpe_rope_tensor *t[3] = {&r->q, &r->k, &r->v};
        r->inputs = 3;
        for (int j = 0; j < 3; ++j) {
            const size_t row = heads[j] * hp + 5;
            if (!kv_alloc(&r->b[KV_IN0 + j], (tokens * row + 7) * es))
                return 0;
            *t[j] = (clpe_rope_tensor){.offset = 7 * es, .heads = heads[j], .head_pitch = hp,
                                       .row_pitch = row};
        }
    }
    for (int j = 0; j < r->inputs; ++j)
        check_fill_random(r->cfg.dtype, r->b[KV_IN0 + j].init, r->b[KV_IN0 + j].bytes / es,
                          &ck->rng);
    if (c->q_out) {
        const size_t row = c->hq * (hd + 1);
        if (!kv_alloc(&r->b[KV_QOUT], tokens * row * es))
            return 0;
        memset(r->b[KV_QOUT].init, CHECK_POISON, r->b[KV_QOUT].bytes);
        r->qo = (clpe_rope_tensor){.heads = c->hq, .head_pitch = hd + 1, .row_pitch = row};
    }
    const size_t num_blocks = c->paged ? 8 : 2, block_size = c->paged ? 4 : 16;
    size_t head_pitch, slot_pitch, block_pitch;
    if (c->heads_outer) {
        head_pitch = block_size * hd;
        slot_pitch = hd;
        block_pitch = c->hk * block_size * hd + 2;
    } else {
        head_pitch = hd + 1;
        slot_pitch = c->hk * (hd + 1);
        block_pitch = block_size * slot_pitch;
    }
    const size_t cache_elements = num_blocks * block_pitch + 3;
    if (!kv_alloc(&r->b[KV_KEY], cache_elements * r->ces) ||
        !kv_alloc(&r->b[KV_VALUE], cache_elements * r->ces))
        return 0;
    /* the cache poisoned: an entry written where no token goes shows */
    memset(r->b[KV_KEY].init, CHECK_POISON, r->b[KV_KEY].bytes);
    memset(r->b[KV_VALUE].init, CHECK_POISON, r->b[KV_VALUE].bytes);
    r->cache = (clpe_kv_cache){.key_offset = 3 * r->ces, .dtype = r->cache_dtype,
                               .num_blocks = num_blocks, .block_size = block_size,
                               .heads = c->hk, .head_pitch = head_pitch,
                               .slot_pitch = slot_pitch, .block_pitch = block_pitch};
    if (r->cache_dtype == CLPE_DTYPE_FP8_E4M3 || r->cache_dtype == CLPE_DTYPE_FP8_E5M2) {
        /* scales as an engine's calibration gives them: the keys' small
         * enough that the largest saturate E4M3, the values' not a power
         * of two */
        r->cache.key_scale = 0.0078125f * 0.7f;
        r->cache.value_scale = 1.7f;
    }

    /* slots: in order (contiguous) or shuffled (paged); every fifth token padding */
    const size_t capacity = num_blocks * block_size;
    r->slots = malloc(tokens * sizeof *r->slots);
    r->pos = malloc(tokens * sizeof *r->pos);
    int64_t *order = malloc(capacity * sizeof *order);
    if (!r->slots || !r->pos || !order) {
        free(order);
        return 0;
    }
    for (size_t s = 0; s < capacity; ++s)
        order[s] = (int64_t)s;
    for (size_t s = capacity - 1; c->paged && s > 0; --s) {
        size_t j = splitmix64(&ck->rng) % (s + 1);
        int64_t keep = order[s];
        order[s] = order[j];
        order[j] = keep;
    }
    for (size_t t = 0; t < tokens; ++t)
        r->slots[t] = t % 5 == 3 ? -1 : order[t];
    free(order);
    check_make_positions(&ck->rng, c->source, 1, tokens, r->pos, &r->start);
    for (int j = 0; j < KV_NBUF; ++j)
        if (r->b[j].bytes) {
            memcpy(r->b[j].ref, r->b[j].init, r->b[j].bytes);
            memcpy(r->b[j].dev, r->b[j].init, r->b[j].bytes);
        }
    return 1;
}

static clpe_host_rope_tensor host_view(const clpe_rope_tensor *t, unsigned char *base)
{
    return (clpe_host_rope_tensor){.data = base + t->offset, .heads = t->heads,
                                   .head_pitch = t->head_pitch, .row_pitch = t->row_pitch};
}

/* The host emulation into the ref copies. */
static clpe_status kv_host(const clpe_rope *rope, kv_run *r)
{
    const int sep = r->inputs == 3;
    clpe_host_rope_tensor q = host_view(&r->q, r->b[KV_IN0].ref);
    clpe_host_rope_tensor k = host_view(&r->k, r->b[sep ? KV_IN1 : KV_IN0].ref);
    clpe_host_rope_tensor v = host_view(&r->v, r->b[sep ? KV_IN2 : KV_IN0].ref);
    clpe_host_rope_tensor qo = {0};
    if (r->c->q_out)
        qo = host_view(&r->qo, r->b[KV_QOUT].ref);
    clpe_host_kv_cache hc = {.key = r->b[KV_KEY].ref + r->cache.key_offset,
                             .value = r->b[KV_VALUE].ref + r->cache.value_offset,
                             .dtype = r->cache.dtype, .num_blocks = r->cache.num_blocks,
                             .block_size = r->cache.block_size, .heads = r->cache.heads,
                             .head_pitch = r->cache.head_pitch,
                             .slot_pitch = r->cache.slot_pitch,
                             .block_pitch = r->cache.block_pitch,
                             .key_scale = r->cache.key_scale,
                             .value_scale = r->cache.value_scale};
    return clpe_host_rope_kv(rope, r->tokens, &q, r->c->q_out ? &qo : NULL, &k, &v, &hc,
                             r->slots, r->c->source, r->start,
                             r->c->source == CLPE_POSITIONS_START ? NULL : r->pos, r->c->flags);
}

/* The same call on the device, everything read back into the dev copies. */
static clpe_status kv_device(check_checker *ck, clpe_rope *rope, kv_run *r)
{
    cl_int err = CL_SUCCESS;
    cl_mem slots = NULL, pos = NULL;
    for (int j = 0; j < KV_NBUF && err == CL_SUCCESS; ++j)
        if (r->b[j].bytes)
            r->b[j].mem = clCreateBuffer(ck->dev->context,
                                         CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, r->b[j].bytes,
                                         r->b[j].init, &err);
    if (err == CL_SUCCESS)
        slots = clCreateBuffer(ck->dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                               r->tokens * sizeof *r->slots, r->slots, &err);
    const size_t npos = r->c->source == CLPE_POSITIONS_IDS ? r->tokens : 1;
    if (err == CL_SUCCESS && r->c->source != CLPE_POSITIONS_START)
        pos = clCreateBuffer(ck->dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             npos * sizeof *r->pos, r->pos, &err);
    clpe_status st = err;
    if (st == CLPE_SUCCESS) {
        const int sep = r->inputs == 3;
        r->q.buffer = r->b[KV_IN0].mem;
        r->k.buffer = r->b[sep ? KV_IN1 : KV_IN0].mem;
        r->v.buffer = r->b[sep ? KV_IN2 : KV_IN0].mem;
        r->qo.buffer = r->b[KV_QOUT].mem;
        r->cache.key = r->b[KV_KEY].mem;
        r->cache.value = r->b[KV_VALUE].mem;
        clpe_kv_slots ks = {.buffer = slots};
        clpe_positions p = {.source = r->c->source, .start = r->start, .buffer = pos};
        st = clpe_enqueue_rope_kv(rope, ck->dev->queue, r->tokens, &r->q,
                                  r->c->q_out ? &r->qo : NULL, &r->k, &r->v, &r->cache, &ks, &p,
                                  r->c->flags, 0, NULL, NULL);
    }
    for (int j = 0; j < KV_NBUF && st == CLPE_SUCCESS; ++j)
        if (r->b[j].mem)
            st = clEnqueueReadBuffer(ck->dev->queue, r->b[j].mem, CL_TRUE, 0, r->b[j].bytes,
                                     r->b[j].dev, 0, NULL, NULL);
    for (int j = 0; j < KV_NBUF; ++j)
        if (r->b[j].mem) {
            clReleaseMemObject(r->b[j].mem);
            r->b[j].mem = NULL;
        }
    if (slots) clReleaseMemObject(slots);
    if (pos) clReleaseMemObject(pos);
    return st;
}

/* The position token t turned by. */
static int64_t kv_position(const kv_run *r, size_t t)
{
    switch (r->c->source) {
    case CLPE_POSITIONS_IDS: return r->pos[t];
    case CLPE_POSITIONS_PER_SEQUENCE: return (int64_t)((uint64_t)r->pos[0] + t);
    default: return (int64_t)((uint64_t)r->start + t);
    }
}

/* Float32 rotations of q (where it went) against the exact rotation. */
static void kv_sample(check_checker *ck, check_tally *t, const kv_run *r)
{
    clpe_config enc_cfg = clpe_config_default(r->cfg.rotary_dim);
    enc_cfg.base = r->cfg.base;
    ref_encoding ref;
    ref_init(&ref, &enc_cfg);
    const uint32_t half = r->cfg.rotary_dim / 2;
    const clpe_rope_tensor *out = r->c->q_out ? &r->qo : &r->q;
    const unsigned char *outb = r->b[r->c->q_out ? KV_QOUT : KV_IN0].dev;
    const size_t head_pitch = r->q.head_pitch ? r->q.head_pitch : r->c->head_dim;
    const size_t out_head_pitch = out->head_pitch ? out->head_pitch : r->c->head_dim;
    for (int s = 0; s < (ck->quick ? 8 : 32); ++s) {
        uint64_t u = splitmix64(&ck->rng);
        size_t tok = u % r->tokens, h = (u >> 16) % r->c->hq;
        uint32_t i = (uint32_t)((u >> 32) % half);
        size_t ia = r->cfg.pairing == CLPE_ROPE_INTERLEAVED ? 2 * i : i;
        size_t ib = r->cfg.pairing == CLPE_ROPE_INTERLEAVED ? 2 * i + 1 : i + half;
        const float *x = (const float *)(r->b[KV_IN0].init + r->q.offset) +
                         tok * r->q.row_pitch + h * head_pitch;
        const float *y = (const float *)(outb + out->offset) + tok * out->row_pitch +
                         h * out_head_pitch;
        const int64_t p = kv_position(r, tok);
        ref_set_pair(&ref, i);
        ref_at(&ref, p);
        double ratio = check_rope_error_ratio(&ref, r->c->flags & CLPE_ROPE_INVERSE, x[ia], x[ib],
                                              y[ia], y[ib]);
        ++t->samples;
        ++t->rope_samples;
        if (!(ratio <= 1.0) && t->over_bound++ == 0) {
            char lab[200];
            kv_label(r, lab, sizeof lab);
            snprintf(t->first_over, sizeof t->first_over,
                     "%.120s position %lld pair %u: |error| %.3f x 2^-22 hypot(a, b)", lab,
                     (long long)p, (unsigned)i, ratio);
        }
        if (!(ratio <= t->rope_max_ratio))
            t->rope_max_ratio = isnan(ratio) ? INFINITY : ratio;
    }
    ref_clear(&ref);
}

static void kv_free(kv_run *r)
{
    for (int j = 0; j < KV_NBUF; ++j) {
        free(r->b[j].init);
        free(r->b[j].ref);
        free(r->b[j].dev);
    }
    free(r->slots);
    free(r->pos);
}

/* One call: made, emulated, run, compared. */
static void check_kv_case(check_checker *ck, check_tally *t, clpe_rope *rope, const kv_case *c,
                          const clpe_rope_config *cfg, clpe_dtype cache_dtype)
{
    kv_run r = {.c = c, .cfg = *cfg, .cache_dtype = cache_dtype, .es = dtype_size(cfg->dtype),
                .ces = dtype_size(cache_dtype)};
    r.tokens = ck->quick && c->tokens > KV_QUICK_TOKENS_MAX ? KV_QUICK_TOKENS_MAX : c->tokens;
    if (!kv_make(ck, &r)) {
        snprintf(t->error, sizeof t->error, "out of host memory");
        goto done;
    }
    clpe_status st = kv_host(rope, &r);
    if (st != CLPE_SUCCESS) {
        kv_fail(t, &r, "clpe_host_rope_kv", st);
        goto done;
    }
    st = kv_device(ck, rope, &r);
    if (st != CLPE_SUCCESS) {
        kv_fail(t, &r, "rope_kv", st);
        goto done;
    }
    if (ck->corrupt_kv_pending) {
        /* the lowest bit of token 0's first key element (token 0 is never padding) */
        const int64_t s = r.slots[0];
        const size_t el = (size_t)(s / (int64_t)r.cache.block_size) * r.cache.block_pitch +
                          (size_t)(s % (int64_t)r.cache.block_size) * r.cache.slot_pitch;
        ck->corrupt_kv_pending = 0;
        r.b[KV_KEY].dev[r.cache.key_offset + el * r.ces] ^= 1;
    }
    size_t written = 0; /* tokens with a slot */
    for (size_t k = 0; k < r.tokens; ++k)
        written += r.slots[k] >= 0;
    const uint64_t q_el = (uint64_t)r.tokens * c->hq * c->head_dim;
    const uint64_t kv_el = (uint64_t)written * c->hk * c->head_dim;
    kv_compare(t, &r, c->q_out ? "q (must be unchanged)" : "q rotated in place", &r.b[KV_IN0],
               r.es, c->q_out ? 0 : q_el);
    if (r.inputs == 3) {
        kv_compare(t, &r, "k (must be unchanged)", &r.b[KV_IN1], r.es, 0);
        kv_compare(t, &r, "v (must be unchanged)", &r.b[KV_IN2], r.es, 0);
    }
    if (c->q_out)
        kv_compare(t, &r, "q_out", &r.b[KV_QOUT], r.es, q_el);
    kv_compare(t, &r, "key cache", &r.b[KV_KEY], r.ces, kv_el);
    kv_compare(t, &r, "value cache", &r.b[KV_VALUE], r.ces, kv_el);
    if (cfg->dtype == CLPE_DTYPE_F32 && cfg->scaling == CLPE_ROPE_DEFAULT)
        kv_sample(ck, t, &r);
done:
    kv_free(&r);
}

void check_rope_kv(check_checker *ck, check_tally *t, clpe_encoder *like, int dtype)
{
    const size_t ncases = ck->quick ? QUICK_KV_CASES : sizeof KV_CASES / sizeof KV_CASES[0];
    /* the cache dtypes a rope of dtype writes: its own, the 16-bit ones
     * under float32, and both FP8 ones under all but float64 */
    clpe_dtype caches[5] = {(clpe_dtype)dtype};
    size_t ncaches = 1;
    if (dtype == CLPE_DTYPE_F32) {
        caches[ncaches++] = CLPE_DTYPE_F16;
        caches[ncaches++] = CLPE_DTYPE_BF16;
    }
    if (dtype != CLPE_DTYPE_F64) {
        caches[ncaches++] = CLPE_DTYPE_FP8_E4M3;
        caches[ncaches++] = CLPE_DTYPE_FP8_E5M2;
    }
    for (size_t k = 0; k < ncases && !t->error[0]; ++k) {
        const kv_case *c = &KV_CASES[k];
        const check_path path = c->paged ? CHECK_PATH_ROPE_KV_PAGED : CHECK_PATH_ROPE_KV;
        if (!check_selected(ck, path))
            continue;
        clpe_rope_config cfg =
            check_rope_config(c->head_dim, c->rotary_dim, c->pairing, c->scaling, dtype);
        clpe_status st = CLPE_SUCCESS;
        clpe_rope *rope;
        if (like) {
            rope = clpe_rope_create_like(like, &cfg, &st);
        } else {
            char log[4096];
            clpe_build_log bl = {log, sizeof log, 0};
            rope = clpe_rope_create(ck->dev->context, ck->dev->device, &cfg, &bl, &st);
        }
        if (!rope) {
            char lab[96];
            check_rope_label(&cfg, lab, sizeof lab);
            snprintf(t->error, sizeof t->error, "%s kv create: %s (%d)", lab,
                     clpe_status_string(st), (int)st);
            return;
        }
        for (size_t j = 0; j < ncaches && !t->error[0]; ++j)
            CHECK_RUN(ck, t, path, check_kv_case(ck, t, rope, c, &cfg, caches[j]));
        ++t->configurations;
        clpe_rope_release(rope);
    }
}
