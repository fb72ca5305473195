/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rope_kv.c - rotary into a KV cache (clpe_enqueue_rope_kv): every
 * byte the device writes (q, q_out, both caches, untouched padding
 * included) equals the host emulation, for every dtype and cache dtype,
 * both pairings, contiguous and paged caches (and heads outside the slots),
 * fused QKV and separate inputs, GQA, partial rotary, padding tokens (slot
 * -1), the inverse and split launches; it equals clpe_enqueue_rope
 * followed by a copy the test makes itself; bad slots write nothing and
 * say so in the report; every bad argument gets its status and writes
 * nothing.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static test_cl cl;
static void setup(void) { test_cl_open(&cl); }
static void teardown(void) { test_cl_close(&cl); }
TestSuite(rope_kv, .init = setup, .fini = teardown);

static bool is_fp8(clpe_dtype t) { return t == CLPE_DTYPE_FP8_E4M3 || t == CLPE_DTYPE_FP8_E5M2; }

static size_t esize(clpe_dtype t)
{
    return is_fp8(t) ? 1 : t == CLPE_DTYPE_F64 ? 8 : t == CLPE_DTYPE_F32 ? 4 : 2;
}

/* The scales of the test's FP8 caches: the keys' small enough that the
 * largest keys saturate E4M3 (2 / 0.003 > 448), the values' not a power
 * of two. */
#define FP8_KEY_SCALE 0.003f
#define FP8_VALUE_SCALE 0.37f

/* Random values in [-2, 2) stored in dtype t (bf16: a float32's top half;
 * f16: sign, exponent 14..16, any mantissa). */
static void fill_random(clpe_dtype t, void *data, size_t count, uint64_t *rng)
{
    for (size_t k = 0; k < count; ++k) {
        double v = (double)(test_rand_u64(rng) >> 11) * 0x1p-53 * 4.0 - 2.0;
        switch (t) {
        case CLPE_DTYPE_FP8_E4M3: /* a cache's old contents: any byte */
        case CLPE_DTYPE_FP8_E5M2: ((uint8_t *)data)[k] = (uint8_t)test_rand_u64(rng); break;
        case CLPE_DTYPE_F32: ((float *)data)[k] = (float)v; break;
        case CLPE_DTYPE_F64: ((double *)data)[k] = v; break;
        case CLPE_DTYPE_BF16: {
            float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            ((uint16_t *)data)[k] = (uint16_t)(u >> 16);
            break;
        }
        case CLPE_DTYPE_F16:
            ((uint16_t *)data)[k] = (uint16_t)((test_rand_u64(rng) & 0x83FFu) | (14u + k % 3) << 10);
            break;
        }
    }
}

static clpe_rope *make_rope(const clpe_rope_config *cfg)
{
    clpe_status st = CLPE_SUCCESS;
    char text[8192];
    clpe_build_log log = {.buffer = text, .capacity = sizeof text};
    clpe_rope *rope = clpe_rope_create(cl.context, cl.device, cfg, &log, &st);
    cr_assert_not_null(rope, "clpe_rope_create: %d %s\n%s", st, clpe_status_string(st), text);
    return rope;
}

/* The test's own conversions of a finite float32 to the cache types,
 * round to nearest even, independent of the library. */
static uint16_t to_f16(float f)
{
    _Float16 h = (_Float16)f;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* An FP8 code's value (E4M3FN: bias 7, 0x7F NaN; E5M2: bias 15). */
static double fp8_value(clpe_dtype t, unsigned code)
{
    int mbits = t == CLPE_DTYPE_FP8_E4M3 ? 3 : 2, bias = t == CLPE_DTYPE_FP8_E4M3 ? 7 : 15;
    int e = (int)(code & 0x7Fu) >> mbits, m = (int)code & ((1 << mbits) - 1);
    double v = e ? ldexp((double)(m | (1 << mbits)), e - bias - mbits)
                 : ldexp((double)m, 1 - bias - mbits);
    return (code & 0x80u) ? -v : v;
}

/* The test's own FP8 store, by search rather than bit arithmetic: the
 * float32 quotient x / scale, then the nearest finite FP8 value (a tie to
 * the even code), saturated; NaN as sign | 0x7F (E4M3) or 0x7E (E5M2). */
static uint8_t to_fp8(clpe_dtype t, float x, float scale)
{
    float q = (float)((double)x / (double)scale);
    unsigned sign = signbit(q) ? 0x80u : 0u;
    if (isnan(q))
        return (uint8_t)(sign | (t == CLPE_DTYPE_FP8_E4M3 ? 0x7Fu : 0x7Eu));
    unsigned top = t == CLPE_DTYPE_FP8_E4M3 ? 0x7Eu : 0x7Bu, best = 0;
    double a = fabs((double)q), best_err = INFINITY;
    for (unsigned code = 0; code <= top; ++code) {
        double err = fabs(fp8_value(t, code) - a);
        if (err < best_err || (err == best_err && !(code & 1u))) {
            best = code;
            best_err = err;
        }
    }
    return (uint8_t)(sign | best);
}

/* Element e of a storage array as a float (f32, f16 or bf16). */
static float storage_value(clpe_dtype t, const unsigned char *p, size_t e)
{
    if (t == CLPE_DTYPE_F32) {
        float f;
        memcpy(&f, p + 4 * e, 4);
        return f;
    }
    uint16_t u;
    memcpy(&u, p + 2 * e, 2);
    if (t == CLPE_DTYPE_F16) {
        _Float16 h;
        memcpy(&h, &u, 2);
        return (float)h;
    }
    uint32_t bits = (uint32_t)u << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

typedef struct kv_case {
    clpe_dtype dtype, cache_dtype;
    clpe_rope_pairing pairing;
    uint32_t head_dim, rotary_dim;
    size_t tokens, hq, hk;
    bool fused;          /* one [tokens, (hq + 2 hk) * head_dim] buffer; else three, padded */
    bool q_out;          /* rotate q into a buffer of its own */
    bool paged;          /* blocks of 4 slots taken in a scrambled order; else [2, 16] */
    bool heads_outer;    /* cache entries [block, head, slot, d] */
    clpe_position_source source;
    int64_t start;
    uint32_t flags;
    bool aligned;        /* the cache packed, at offset 0: every vector aligned */
    /* a multimodal object: its streams (0: plain), the pairs of each, and
     * a frequency ladder per stream (the vision tower) */
    uint32_t streams, section[CLPE_MROPE_MAX_STREAMS];
    bool ladder_per_stream;
} kv_case;

/* Everything one call touches, on the host (the inputs as made) and on the device. */
typedef struct kv_world {
    kv_case c;
    size_t es, ces, pad;
    size_t in_bytes[3];            /* the q (or fused), k and v buffers */
    int inputs;                    /* 1 fused, 3 separate */
    unsigned char *in[3];
    cl_mem in_buf[3];
    clpe_rope_tensor q, k, v, qo;
    size_t qo_bytes;
    cl_mem qo_buf;
    unsigned char *qo_init;
    size_t num_blocks, block_size, head_pitch, slot_pitch, block_pitch, cache_bytes;
    unsigned char *key_init, *value_init;
    cl_mem key_buf, value_buf;
    int64_t *slots, *positions;
    cl_mem slots_buf, pos_buf, report_buf;
    clpe_kv_cache cache;
    clpe_kv_slots kv_slots;
    clpe_positions pos;
} kv_world;

static void world_make(kv_world *w, const kv_case *c, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->c = *c;
    uint64_t rng = seed;
    w->es = esize(c->dtype);
    w->ces = esize(c->cache_dtype);
    size_t hd = c->head_dim, es = w->es;
    if (c->fused) {
        size_t row = (c->hq + 2 * c->hk) * hd;
        w->inputs = 1;
        w->in_bytes[0] = c->tokens * row * es;
        w->q = (clpe_rope_tensor){.heads = c->hq, .row_pitch = row};
        w->k = (clpe_rope_tensor){.offset = c->hq * hd * es, .heads = c->hk, .row_pitch = row};
        w->v = (clpe_rope_tensor){.offset = (c->hq + c->hk) * hd * es, .heads = c->hk,
                                  .row_pitch = row};
    } else {
        /* heads padded by 3 elements, tokens by 5 more, each tensor's own buffer */
        w->pad = 3;
        size_t hp = hd + w->pad;
        size_t heads[3] = {c->hq, c->hk, c->hk};
        clpe_rope_tensor *t[3] = {&w->q, &w->k, &w->v};
        w->inputs = 3;
        for (int j = 0; j < 3; ++j) {
            size_t row = heads[j] * hp + 5;
            w->in_bytes[j] = (c->tokens * row + 7) * es;
            *t[j] = (clpe_rope_tensor){.offset = 7 * es, .heads = heads[j], .head_pitch = hp,
                                       .row_pitch = row};
        }
    }
    for (int j = 0; j < w->inputs; ++j) {
        w->in[j] = malloc(w->in_bytes[j]);
        fill_random(c->dtype, w->in[j], w->in_bytes[j] / es, &rng);
        w->in_buf[j] = test_buffer_from(&cl, w->in[j], w->in_bytes[j]);
    }
    w->q.buffer = w->in_buf[0];
    w->k.buffer = w->in_buf[w->inputs == 1 ? 0 : 1];
    w->v.buffer = w->in_buf[w->inputs == 1 ? 0 : 2];
    if (c->q_out) {
        size_t row = c->hq * (hd + 1);
        w->qo_bytes = c->tokens * row * es;
        w->qo_init = malloc(w->qo_bytes);
        fill_random(c->dtype, w->qo_init, w->qo_bytes / es, &rng);
        w->qo_buf = test_buffer_from(&cl, w->qo_init, w->qo_bytes);
        w->qo = (clpe_rope_tensor){.buffer = w->qo_buf, .heads = c->hq, .head_pitch = hd + 1,
                                   .row_pitch = row};
    }

    /* the cache: contiguous [2 sequences, 16 slots] or paged [8 blocks of 4] */
    w->num_blocks = c->paged ? 8 : 2;
    w->block_size = c->paged ? 4 : 16;
    if (c->aligned) {
        w->head_pitch = hd;
        w->slot_pitch = c->hk * hd;
        w->block_pitch = w->block_size * w->slot_pitch;
    } else if (c->heads_outer) {
        w->head_pitch = w->block_size * hd;
        w->slot_pitch = hd;
        w->block_pitch = c->hk * w->block_size * hd + 2;
    } else {
        w->head_pitch = hd + 1;
        w->slot_pitch = c->hk * (hd + 1);
        w->block_pitch = w->block_size * w->slot_pitch;
    }
    w->cache_bytes = (w->num_blocks * w->block_pitch + 3) * w->ces;
    w->key_init = malloc(w->cache_bytes);
    w->value_init = malloc(w->cache_bytes);
    fill_random(c->cache_dtype, w->key_init, w->cache_bytes / w->ces, &rng);
    fill_random(c->cache_dtype, w->value_init, w->cache_bytes / w->ces, &rng);
    w->key_buf = test_buffer_from(&cl, w->key_init, w->cache_bytes);
    w->value_buf = test_buffer_from(&cl, w->value_init, w->cache_bytes);
    w->cache = (clpe_kv_cache){.key = w->key_buf, .value = w->value_buf,
                               .key_offset = c->aligned ? 0 : 3 * w->ces,
                               .value_offset = 0, .dtype = c->cache_dtype,
                               .num_blocks = w->num_blocks, .block_size = w->block_size,
                               .heads = c->hk, .head_pitch = w->head_pitch,
                               .slot_pitch = w->slot_pitch, .block_pitch = w->block_pitch};
    if (is_fp8(c->cache_dtype)) {
        w->cache.key_scale = FP8_KEY_SCALE;
        w->cache.value_scale = FP8_VALUE_SCALE;
    }

    /* slots: contiguous, token t of two sequences at b * 16 + position;
     * paged, distinct slots from a shuffled list; every fifth token padding */
    size_t capacity = w->num_blocks * w->block_size;
    cr_assert(c->tokens <= capacity);
    w->slots = malloc((c->tokens + 1) * sizeof *w->slots);
    int64_t *order = malloc(capacity * sizeof *order);
    for (size_t s = 0; s < capacity; ++s)
        order[s] = (int64_t)s;
    for (size_t s = capacity - 1; c->paged && s > 0; --s) {
        size_t r = test_rand_u64(&rng) % (s + 1);
        int64_t t = order[s];
        order[s] = order[r];
        order[r] = t;
    }
    for (size_t t = 0; t < c->tokens; ++t)
        w->slots[t] = t % 5 == 3 ? -1 : order[t];
    free(order);
    w->slots_buf = test_buffer_from(&cl, w->slots, (c->tokens + 1) * sizeof *w->slots);
    w->report_buf = test_buffer_poisoned(&cl, 8, 0xAB);
    w->kv_slots = (clpe_kv_slots){.buffer = w->slots_buf, .report = w->report_buf};

    w->pos = (clpe_positions){.source = c->source, .start = c->start};
    size_t npos = c->streams                     ? c->streams * c->tokens
                  : c->source == CLPE_POSITIONS_IDS ? c->tokens
                                                    : 1;
    w->positions = malloc(npos * sizeof *w->positions);
    for (size_t t = 0; t < npos; ++t)
        w->positions[t] = t == 0 ? c->start
                                 : (int64_t)((uint64_t)c->start + test_rand_u64(&rng) % 100000);
    if (c->source != CLPE_POSITIONS_START) {
        w->pos_buf = test_buffer_from(&cl, w->positions, npos * sizeof *w->positions);
        w->pos.buffer = w->pos_buf;
    }
}

static void world_free(kv_world *w)
{
    for (int j = 0; j < w->inputs; ++j) {
        free(w->in[j]);
        clReleaseMemObject(w->in_buf[j]);
    }
    if (w->qo_buf)
        clReleaseMemObject(w->qo_buf);
    free(w->qo_init);
    free(w->key_init);
    free(w->value_init);
    clReleaseMemObject(w->key_buf);
    clReleaseMemObject(w->value_buf);
    clReleaseMemObject(w->slots_buf);
    clReleaseMemObject(w->report_buf);
    if (w->pos_buf)
        clReleaseMemObject(w->pos_buf);
    free(w->slots);
    free(w->positions);
}

static clpe_status world_enqueue(kv_world *w, clpe_rope *rope)
{
    cl_event done = NULL;
    clpe_status st = clpe_enqueue_rope_kv(rope, cl.queue, w->c.tokens, &w->q,
                                          w->c.q_out ? &w->qo : NULL, &w->k, &w->v, &w->cache,
                                          &w->kv_slots, &w->pos, w->c.flags, 0, NULL, &done);
    if (st == CLPE_SUCCESS)
        test_event_finish(done);
    else
        cr_assert_null(done, "a failed call set its event");
    return st;
}

static clpe_host_rope_tensor host_view(const clpe_rope_tensor *t, unsigned char *base, size_t es)
{
    (void)es; /* offsets are in bytes already */
    return (clpe_host_rope_tensor){.data = base + t->offset, .heads = t->heads,
                                   .head_pitch = t->head_pitch, .row_pitch = t->row_pitch};
}

static void expect_bytes(const void *dev, const void *want, size_t bytes, const char *what,
                         const kv_case *c)
{
    size_t first = bytes;
    for (size_t k = 0; k < bytes && first == bytes; ++k)
        if (((const unsigned char *)dev)[k] != ((const unsigned char *)want)[k])
            first = k;
    cr_assert_eq(first, bytes,
                 "%s differs at byte %zu (dtype %d cache %d pairing %d head_dim %u rotary %u "
                 "tokens %zu hq %zu hk %zu fused %d q_out %d paged %d heads_outer %d source %d)",
                 what, first, c->dtype, c->cache_dtype, c->pairing, c->head_dim, c->rotary_dim,
                 c->tokens, c->hq, c->hk, c->fused, c->q_out, c->paged, c->heads_outer,
                 c->source);
}

/* Read every buffer the call may write and compare with `want`. */
static void expect_world(const kv_world *w, unsigned char *const want_in[3],
                         const unsigned char *want_qo, const unsigned char *want_key,
                         const unsigned char *want_value, const char *when)
{
    char what[96];
    for (int j = 0; j < w->inputs; ++j) {
        void *dev = test_buffer_read(&cl, w->in_buf[j], w->in_bytes[j]);
        snprintf(what, sizeof what, "%s: input %d", when, j);
        expect_bytes(dev, want_in[j], w->in_bytes[j], what, &w->c);
        free(dev);
    }
    if (w->qo_buf) {
        void *dev = test_buffer_read(&cl, w->qo_buf, w->qo_bytes);
        snprintf(what, sizeof what, "%s: q_out", when);
        expect_bytes(dev, want_qo, w->qo_bytes, what, &w->c);
        free(dev);
    }
    void *key = test_buffer_read(&cl, w->key_buf, w->cache_bytes);
    void *value = test_buffer_read(&cl, w->value_buf, w->cache_bytes);
    snprintf(what, sizeof what, "%s: key cache", when);
    expect_bytes(key, want_key, w->cache_bytes, what, &w->c);
    snprintf(what, sizeof what, "%s: value cache", when);
    expect_bytes(value, want_value, w->cache_bytes, what, &w->c);
    free(key);
    free(value);
}

/* The host emulation's bits for the world, on copies of its inputs. */
static void host_result(const kv_world *w, const clpe_rope_config *cfg, unsigned char *in[3],
                        unsigned char *qo, unsigned char *key, unsigned char *value)
{
    const kv_case *c = &w->c;
    clpe_status st = CLPE_SUCCESS;
    clpe_rope *host;
    if (c->streams) { /* the multimodal object's host twin */
        clpe_mrope_config m = {.rope = *cfg, .streams = c->streams,
                               .ladder = c->ladder_per_stream ? CLPE_MROPE_LADDER_PER_STREAM
                                                              : CLPE_MROPE_ONE_LADDER};
        memcpy(m.section, c->section, sizeof m.section);
        host = clpe_rope_create_mrope_host(&m, &st);
    } else {
        host = clpe_rope_create_host(cfg, &st);
    }
    cr_assert_not_null(host, "clpe_rope_create_host: %d", st);
    for (int j = 0; j < w->inputs; ++j)
        memcpy(in[j], w->in[j], w->in_bytes[j]);
    if (qo)
        memcpy(qo, w->qo_init, w->qo_bytes);
    memcpy(key, w->key_init, w->cache_bytes);
    memcpy(value, w->value_init, w->cache_bytes);
    clpe_host_rope_tensor hq = host_view(&w->q, in[0], w->es);
    clpe_host_rope_tensor hk = host_view(&w->k, in[w->inputs == 1 ? 0 : 1], w->es);
    clpe_host_rope_tensor hv = host_view(&w->v, in[w->inputs == 1 ? 0 : 2], w->es);
    clpe_host_rope_tensor hqo = qo ? host_view(&w->qo, qo, w->es) : (clpe_host_rope_tensor){0};
    clpe_host_kv_cache hc = {.key = key + w->cache.key_offset, .value = value,
                             .dtype = c->cache_dtype, .num_blocks = w->num_blocks,
                             .block_size = w->block_size, .heads = c->hk,
                             .head_pitch = w->head_pitch, .slot_pitch = w->slot_pitch,
                             .block_pitch = w->block_pitch, .key_scale = w->cache.key_scale,
                             .value_scale = w->cache.value_scale};
    st = clpe_host_rope_kv(host, c->tokens, &hq, qo ? &hqo : NULL, &hk, &hv, &hc, w->slots,
                           c->source, c->start, w->positions, c->flags);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_host_rope_kv: %d %s", st, clpe_status_string(st));
    clpe_rope_release(host);
}

/* The same bits from the device's clpe_enqueue_rope on packed copies of q
 * and k, then the test's own copy of k and v into the cache (and of q into
 * q_out, or back into its place). */
static void rope_then_copy(const kv_world *w, clpe_rope *rope, unsigned char *in[3],
                           unsigned char *qo, unsigned char *key, unsigned char *value)
{
    const kv_case *c = &w->c;
    size_t hd = c->head_dim, es = w->es, ces = w->ces, T = c->tokens;
    unsigned char *src[3] = {w->in[0] + w->q.offset, w->in[w->inputs == 1 ? 0 : 1] + w->k.offset,
                             w->in[w->inputs == 1 ? 0 : 2] + w->v.offset};
    const clpe_rope_tensor *view[3] = {&w->q, &w->k, &w->v};
    size_t heads[3] = {c->hq, c->hk, c->hk};
    unsigned char *packed[3];
    for (int j = 0; j < 3; ++j) { /* [T, heads, hd] */
        size_t hp = view[j]->head_pitch ? view[j]->head_pitch : hd;
        packed[j] = malloc(T * heads[j] * hd * es);
        for (size_t t = 0; t < T; ++t)
            for (size_t h = 0; h < heads[j]; ++h)
                memcpy(packed[j] + ((t * heads[j] + h) * hd) * es,
                       src[j] + (t * view[j]->row_pitch + h * hp) * es, hd * es);
    }
    cl_mem qb = test_buffer_from(&cl, packed[0], T * c->hq * hd * es);
    cl_mem kb = test_buffer_from(&cl, packed[1], T * c->hk * hd * es);
    clpe_rope_tensor rq = {.buffer = qb, .heads = c->hq}, rk = {.buffer = kb, .heads = c->hk};
    cl_mem pb = w->pos_buf;
    clpe_positions pos = {.source = c->source, .start = c->start, .buffer = pb};
    cl_event done = NULL;
    clpe_status st = clpe_enqueue_rope(rope, cl.queue, 1, T, &rq, &rk, &pos, c->flags, 0, NULL,
                                       &done);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_enqueue_rope: %d", st);
    test_event_finish(done);
    unsigned char *rot[2] = {test_buffer_read(&cl, qb, T * c->hq * hd * es),
                             test_buffer_read(&cl, kb, T * c->hk * hd * es)};
    clReleaseMemObject(qb);
    clReleaseMemObject(kb);

    for (int j = 0; j < w->inputs; ++j)
        memcpy(in[j], w->in[j], w->in_bytes[j]);
    if (qo)
        memcpy(qo, w->qo_init, w->qo_bytes);
    memcpy(key, w->key_init, w->cache_bytes);
    memcpy(value, w->value_init, w->cache_bytes);
    /* q: rotated into its place or into q_out */
    unsigned char *qdst = qo ? qo : in[0] + w->q.offset;
    const clpe_rope_tensor *qv = qo ? &w->qo : &w->q;
    size_t qhp = qv->head_pitch ? qv->head_pitch : hd;
    for (size_t t = 0; t < T; ++t)
        for (size_t h = 0; h < c->hq; ++h)
            memcpy(qdst + (t * qv->row_pitch + h * qhp) * es, rot[0] + ((t * c->hq + h) * hd) * es,
                   hd * es);
    /* k rotated and v into the cache slots, converted */
    for (size_t t = 0; t < T; ++t) {
        if (w->slots[t] < 0)
            continue;
        size_t slot = (size_t)w->slots[t];
        size_t entry = (slot / w->block_size) * w->block_pitch + (slot % w->block_size) * w->slot_pitch;
        for (size_t h = 0; h < c->hk; ++h) {
            const unsigned char *from[2] = {rot[1] + ((t * c->hk + h) * hd) * es,
                                            packed[2] + ((t * c->hk + h) * hd) * es};
            unsigned char *to[2] = {key + w->cache.key_offset + (entry + h * w->head_pitch) * ces,
                                    value + (entry + h * w->head_pitch) * ces};
            for (int j = 0; j < 2; ++j)
                for (size_t e = 0; e < hd; ++e) {
                    if (c->cache_dtype == c->dtype) {
                        memcpy(to[j] + e * ces, from[j] + e * es, es);
                        continue;
                    }
                    if (is_fp8(c->cache_dtype)) {
                        to[j][e] = to_fp8(c->cache_dtype, storage_value(c->dtype, from[j], e),
                                          j ? FP8_VALUE_SCALE : FP8_KEY_SCALE);
                        continue;
                    }
                    float f;
                    memcpy(&f, from[j] + e * 4, 4);
                    uint16_t u = c->cache_dtype == CLPE_DTYPE_F16 ? to_f16(f) : to_bf16(f);
                    memcpy(to[j] + e * 2, &u, 2);
                }
        }
    }
    for (int j = 0; j < 3; ++j)
        free(packed[j]);
    free(rot[0]);
    free(rot[1]);
}

static void run_case(const kv_case *c, uint64_t seed)
{
    if (!clpe_device_supports_dtype(cl.device, c->dtype))
        return;
    clpe_rope_config cfg = clpe_rope_config_default(c->head_dim);
    cfg.rotary_dim = c->rotary_dim;
    cfg.pairing = c->pairing;
    cfg.dtype = c->dtype;
    clpe_rope *rope;
    if (c->streams) {
        clpe_mrope_config m = {.rope = cfg, .streams = c->streams,
                               .ladder = c->ladder_per_stream ? CLPE_MROPE_LADDER_PER_STREAM
                                                              : CLPE_MROPE_ONE_LADDER};
        memcpy(m.section, c->section, sizeof m.section);
        clpe_status st = CLPE_SUCCESS;
        rope = clpe_rope_create_mrope(cl.context, cl.device, &m, NULL, &st);
        cr_assert_not_null(rope, "clpe_rope_create_mrope: %s", clpe_status_string(st));
    } else {
        rope = make_rope(&cfg);
    }
    kv_world w;
    world_make(&w, c, seed);
    clpe_status st = world_enqueue(&w, rope);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_enqueue_rope_kv: %d %s", st, clpe_status_string(st));
    uint32_t report[2];
    cr_assert_eq(clEnqueueReadBuffer(cl.queue, w.report_buf, CL_TRUE, 0, 8, report, 0, NULL, NULL),
                 CL_SUCCESS);
    cr_assert(report[0] == 0 && report[1] == 0xFFFFFFFFu, "report %u %u for good slots",
              report[0], report[1]);

    unsigned char *in[3] = {NULL, NULL, NULL};
    for (int j = 0; j < w.inputs; ++j)
        in[j] = malloc(w.in_bytes[j]);
    unsigned char *qo = c->q_out ? malloc(w.qo_bytes) : NULL;
    unsigned char *key = malloc(w.cache_bytes), *value = malloc(w.cache_bytes);
    host_result(&w, &cfg, in, qo, key, value);
    expect_world(&w, in, qo, key, value, "device against host");
    rope_then_copy(&w, rope, in, qo, key, value);
    expect_world(&w, in, qo, key, value, "device against rope + copy");
    for (int j = 0; j < w.inputs; ++j)
        free(in[j]);
    free(qo);
    free(key);
    free(value);
    world_free(&w);
    clpe_rope_release(rope);
}

static const clpe_dtype dtypes[4] = {CLPE_DTYPE_F32, CLPE_DTYPE_F16, CLPE_DTYPE_BF16,
                                     CLPE_DTYPE_F64};

Test(rope_kv, device_equals_host_and_rope_then_copy)
{
    uint64_t seed = 1;
    for (int t = 0; t < 4; ++t)
        for (int pairing = 0; pairing < 2; ++pairing)
            for (int layout = 0; layout < 4; ++layout) {
                bool paged = layout & 1, fused = layout & 2;
                /* full rotary, GQA 4:2, q in place; the cache contiguous or paged */
                kv_case a = {dtypes[t], dtypes[t], (clpe_rope_pairing)pairing, 88, 0, 23, 4, 2,
                             fused, false, paged, false, CLPE_POSITIONS_IDS, 1000003, 0, false, 0, {0}, false};
                run_case(&a, seed++);
                /* partial rotary, into q_out, heads outside the slots, from a start */
                kv_case b = {dtypes[t], dtypes[t], (clpe_rope_pairing)pairing, 40, 24, 17, 3, 1,
                             fused, true, paged, true, CLPE_POSITIONS_START, 77, 0, false, 0, {0}, false};
                run_case(&b, seed++);
                /* no GQA, the inverse, one position per call near INT64_MAX */
                kv_case d = {dtypes[t], dtypes[t], (clpe_rope_pairing)pairing, 20, 0, 9, 2, 2,
                             fused, false, !paged, layout == 1, CLPE_POSITIONS_PER_SEQUENCE,
                             INT64_MAX - 5, CLPE_ROPE_INVERSE, false, 0, {0}, false};
                run_case(&d, seed++);
            }
}

/* Multimodal rotary into a paged KV cache, Qwen2-VL's language model
 * (mrope_section [16, 24, 24], positions [3, tokens]) and its vision tower
 * (a ladder per stream, positions [tokens, 2]): every byte equals the
 * host emulation and clpe_enqueue_rope of the same object followed by a
 * copy, in every dtype, fused or separate, into a float32 object's half
 * and bfloat16 caches too. */
Test(rope_kv, multimodal_positions_into_a_paged_cache)
{
    uint64_t seed = 300;
    for (int t = 0; t < 4; ++t)
        for (int layout = 0; layout < 4; ++layout) {
            bool fused = layout & 1, q_out = layout & 2;
            kv_case text = {dtypes[t], dtypes[t], CLPE_ROPE_HALF_SPLIT, 128, 0, 21, 4, 2,
                            fused, q_out, true, false, CLPE_POSITIONS_STREAMS, 0, 0, false,
                            3, {16, 24, 24}, false};
            run_case(&text, seed++);
            kv_case vision = {dtypes[t], dtypes[t], CLPE_ROPE_HALF_SPLIT, 80, 0, 13, 2, 2,
                              fused, q_out, true, layout == 3,
                              CLPE_POSITIONS_STREAMS_TOKEN_FIRST, 0, layout == 2 ? CLPE_ROPE_INVERSE : 0,
                              false, 2, {20, 20}, true};
            run_case(&vision, seed++);
        }
    for (int cache = 1; cache <= 2; ++cache) {
        kv_case narrow = {CLPE_DTYPE_F32, dtypes[cache], CLPE_ROPE_INTERLEAVED, 64, 0, 9, 2, 1,
                          true, false, true, false, CLPE_POSITIONS_STREAMS, 0, 0, false,
                          3, {8, 12, 12}, false};
        run_case(&narrow, seed++);
    }
}

Test(rope_kv, float32_into_half_and_bfloat16_caches)
{
    uint64_t seed = 100;
    for (int cache = 1; cache <= 2; ++cache)
        for (int layout = 0; layout < 4; ++layout) {
            kv_case a = {CLPE_DTYPE_F32, dtypes[cache], (clpe_rope_pairing)(layout & 1), 128, 0,
                         30, 8, 2, layout & 2, false, layout & 1, false, CLPE_POSITIONS_IDS, 5,
                         0, false, 0, {0}, false};
            run_case(&a, seed++);
            kv_case b = {CLPE_DTYPE_F32, dtypes[cache], CLPE_ROPE_HALF_SPLIT, 36, 12, 7, 3, 1,
                         layout & 2, true, layout & 1, layout & 1, CLPE_POSITIONS_START, 0, 0,
                         false, 0, {0}, false};
            run_case(&b, seed++);
        }
}

/* FP8 caches (E4M3, E5M2) under float32, float16 and bfloat16 objects:
 * every byte equals the host emulation and clpe_enqueue_rope followed by
 * the test's own quantization of the stored values (x / scale, nearest
 * FP8 value by search, saturated), contiguous and paged, fused and
 * separate, every position source, multimodal, aligned vectors (the vector
 * groups of heads of 128) and calls split into launches. */
Test(rope_kv, fp8_caches_equal_the_host_and_rope_then_quantize)
{
    const clpe_dtype fp8[2] = {CLPE_DTYPE_FP8_E4M3, CLPE_DTYPE_FP8_E5M2};
    uint64_t seed = 500;
    for (int t = 0; t < 3; ++t)
        for (int f = 0; f < 2; ++f)
            for (int layout = 0; layout < 4; ++layout) {
                bool paged = layout & 1, fused = layout & 2;
                kv_case a = {dtypes[t], fp8[f], (clpe_rope_pairing)(layout & 1), 88, 0, 23, 4,
                             2, fused, false, paged, false, CLPE_POSITIONS_IDS, 1000003, 0,
                             false, 0, {0}, false};
                run_case(&a, seed++);
                kv_case b = {dtypes[t], fp8[f], CLPE_ROPE_HALF_SPLIT, 40, 24, 17, 3, 1, fused,
                             true, paged, true, CLPE_POSITIONS_START, 77, 0, false, 0, {0}, false};
                run_case(&b, seed++);
                kv_case d = {dtypes[t], fp8[f], (clpe_rope_pairing)(layout >> 1), 128, 0, 21, 4,
                             2, true, false, paged, false, CLPE_POSITIONS_PER_SEQUENCE,
                             INT64_MAX - 5, CLPE_ROPE_INVERSE, true, 0, {0}, false};
                run_case(&d, seed++);
            }
    for (int f = 0; f < 2; ++f) {
        kv_case text = {CLPE_DTYPE_BF16, fp8[f], CLPE_ROPE_HALF_SPLIT, 128, 0, 21, 4, 2, true,
                        false, true, false, CLPE_POSITIONS_STREAMS, 0, 0, false, 3,
                        {16, 24, 24}, false};
        run_case(&text, seed++);
    }
    setenv("CLPE_MAX_LAUNCH_ROWS", "3", 1);
    for (int t = 0; t < 3; ++t) {
        kv_case a = {dtypes[t], fp8[t % 2], CLPE_ROPE_HALF_SPLIT, 64, 0, 29, 4, 2, true, false,
                     true, false, CLPE_POSITIONS_IDS, 12, 0, false, 0, {0}, false};
        run_case(&a, seed++);
    }
    unsetenv("CLPE_MAX_LAUNCH_ROWS");
}

/* Every vector the vector shape moves aligned (a fused QKV buffer of heads
 * of 128, a packed cache at offset 0): the walk's aligned variant, and its
 * streamed cache stores, give the host's bits too. */
Test(rope_kv, aligned_layouts_equal_the_host)
{
    uint64_t seed = 300;
    for (int t = 0; t < 4; ++t)
        for (int pairing = 0; pairing < 2; ++pairing) {
            kv_case a = {dtypes[t], dtypes[t], (clpe_rope_pairing)pairing, 128, 0, 21, 4, 2, true,
                         false, pairing == 1, false, CLPE_POSITIONS_START, 11, 0, true, 0, {0}, false};
            run_case(&a, seed++);
            /* partial rotary: the key's tail starts inside a vector */
            kv_case b = {dtypes[t], dtypes[t], (clpe_rope_pairing)pairing, 64, 40, 13, 2, 1, true,
                         true, pairing == 0, false, CLPE_POSITIONS_IDS, 7, 0, true, 0, {0}, false};
            run_case(&b, seed++);
        }
    for (int cache = 1; cache <= 2; ++cache) {
        kv_case c = {CLPE_DTYPE_F32, dtypes[cache], CLPE_ROPE_HALF_SPLIT, 128, 0, 19, 4, 2, true,
                     false, true, false, CLPE_POSITIONS_START, 3, 0, true, 0, {0}, false};
        run_case(&c, seed++);
    }
}

/* Launches of 3 tokens: the call splits, the slot check covers them all. */
Test(rope_kv, split_launches_equal_the_host)
{
    setenv("CLPE_MAX_LAUNCH_ROWS", "3", 1);
    uint64_t seed = 200;
    for (int t = 0; t < 4; ++t) {
        kv_case a = {dtypes[t], dtypes[t], CLPE_ROPE_HALF_SPLIT, 64, 0, 29, 4, 2, true, false,
                     true, false, CLPE_POSITIONS_IDS, 12, 0, false, 0, {0}, false};
        run_case(&a, seed++);
    }
}

/* ---- bad slots: nothing written, the report says which ---- */

static void expect_refused_slots(size_t tokens, int64_t bad_value, size_t bad_index,
                                 int64_t dup_of)
{
    clpe_rope_config cfg = clpe_rope_config_default(32);
    clpe_rope *rope = make_rope(&cfg);
    kv_case c = {CLPE_DTYPE_F32, CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 32, 0, tokens, 4, 2, true,
                 false, true, false, CLPE_POSITIONS_START, 3, 0, false, 0, {0}, false};
    kv_world w;
    world_make(&w, &c, 7);
    w.slots[bad_index] = dup_of >= 0 ? w.slots[dup_of] : bad_value;
    cr_assert_eq(clEnqueueWriteBuffer(cl.queue, w.slots_buf, CL_TRUE, 0, c.tokens * 8, w.slots, 0,
                                      NULL, NULL),
                 CL_SUCCESS);
    clpe_status st = world_enqueue(&w, rope);
    cr_assert_eq(st, CLPE_SUCCESS, "the slots are checked on the device: %d", st);
    uint32_t report[2];
    cr_assert_eq(clEnqueueReadBuffer(cl.queue, w.report_buf, CL_TRUE, 0, 8, report, 0, NULL, NULL),
                 CL_SUCCESS);
    cr_assert_eq(report[0], 1, "tokens refused: %u", report[0]);
    cr_assert_eq(report[1], bad_index, "first refused: %u, want %zu", report[1], bad_index);
    unsigned char *in[3] = {w.in[0], NULL, NULL};
    expect_world(&w, in, NULL, w.key_init, w.value_init, "bad slot");

    /* without a report buffer too */
    w.kv_slots.report = NULL;
    cr_assert_eq(world_enqueue(&w, rope), CLPE_SUCCESS);
    expect_world(&w, in, NULL, w.key_init, w.value_init, "bad slot, no report");

    /* the host refuses it, writing nothing */
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    unsigned char *copy = malloc(w.in_bytes[0]), *key = malloc(w.cache_bytes);
    memcpy(copy, w.in[0], w.in_bytes[0]);
    memcpy(key, w.key_init, w.cache_bytes);
    clpe_host_rope_tensor hq = host_view(&w.q, copy, 4), hk = host_view(&w.k, copy, 4),
                          hv = host_view(&w.v, copy, 4);
    clpe_host_kv_cache hc = {.key = key, .value = key + w.cache_bytes / 2, .dtype = CLPE_DTYPE_F32,
                             .num_blocks = w.num_blocks, .block_size = w.block_size, .heads = 2,
                             .head_pitch = w.head_pitch, .slot_pitch = w.slot_pitch,
                             .block_pitch = w.block_pitch};
    hc.value = malloc(w.cache_bytes);
    memcpy(hc.value, w.value_init, w.cache_bytes);
    st = clpe_host_rope_kv(host, c.tokens, &hq, NULL, &hk, &hv, &hc, w.slots, c.source, c.start,
                           NULL, 0);
    cr_assert_eq(st, CLPE_ERROR_INVALID_SLOTS, "host: %d", st);
    cr_assert(memcmp(copy, w.in[0], w.in_bytes[0]) == 0 &&
              memcmp(key, w.key_init, w.cache_bytes) == 0 &&
              memcmp(hc.value, w.value_init, w.cache_bytes) == 0,
              "the host wrote on a refused call");
    free(hc.value);
    free(copy);
    free(key);
    clpe_rope_release(host);
    world_free(&w);
    clpe_rope_release(rope);
}

Test(rope_kv, slot_past_the_cache_writes_nothing) { expect_refused_slots(12, 32, 5, -1); }
Test(rope_kv, slot_below_minus_one_writes_nothing) { expect_refused_slots(12, -2, 0, -1); }
Test(rope_kv, slot_used_twice_writes_nothing) { expect_refused_slots(12, 0, 9, 2); }
/* one token: nothing to sort, the range alone refuses it */
Test(rope_kv, lone_token_past_the_cache_writes_nothing) { expect_refused_slots(1, 40, 0, -1); }

/* ---- bad arguments: a status, nothing enqueued, nothing written ---- */

typedef void (*spoil_fn)(kv_world *w, cl_mem spare);

static void expect_rejected(spoil_fn spoil, clpe_status want, const char *what)
{
    clpe_rope_config cfg = clpe_rope_config_default(16);
    clpe_rope *rope = make_rope(&cfg);
    kv_case c = {CLPE_DTYPE_F32, CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 6, 2, 1, false,
                 false, false, false, CLPE_POSITIONS_START, 0, 0, false, 0, {0}, false};
    kv_world w;
    world_make(&w, &c, 11);
    cl_mem spare = test_buffer_poisoned(&cl, 64, 0x5A);
    spoil(&w, spare);
    clpe_status st = world_enqueue(&w, rope);
    cr_assert_eq(st, want, "%s: got %d (%s), want %d", what, st, clpe_status_string(st), want);
    unsigned char *in[3] = {w.in[0], w.in[1], w.in[2]};
    expect_world(&w, in, NULL, w.key_init, w.value_init, what);
    uint32_t report[2];
    cr_assert_eq(clEnqueueReadBuffer(cl.queue, w.report_buf, CL_TRUE, 0, 8, report, 0, NULL, NULL),
                 CL_SUCCESS);
    cr_assert(report[0] == 0xABABABABu && report[1] == 0xABABABABu, "%s: the report was written",
              what);
    clReleaseMemObject(spare);
    world_free(&w);
    clpe_rope_release(rope);
}

static void key_is_q(kv_world *w, cl_mem s) { (void)s; w->cache.key = w->q.buffer; }
static void value_meets_key(kv_world *w, cl_mem s)
{
    (void)s;
    w->cache.value = w->cache.key;
}
static void q_meets_k(kv_world *w, cl_mem s) { (void)s; w->q.buffer = w->k.buffer; }
static void report_is_slots(kv_world *w, cl_mem s) { (void)s; w->kv_slots.report = w->slots_buf; }
/* the slots over q's first elements, which the call rotates in place */
static void slots_in_q(kv_world *w, cl_mem s) { (void)s; w->kv_slots.buffer = w->q.buffer; }
static void cache_too_small(kv_world *w, cl_mem s) { w->cache.value = s; }
static void slots_too_small(kv_world *w, cl_mem s)
{
    (void)s;
    w->kv_slots.offset = 16;
}
static void kv_heads_differ(kv_world *w, cl_mem s) { (void)s; w->cache.heads = 2; }
static void cache_dtype_wider(kv_world *w, cl_mem s)
{
    (void)s;
    w->cache.dtype = CLPE_DTYPE_F64;
}
static void reserved_set(kv_world *w, cl_mem s) { (void)s; w->cache.reserved[2] = 1; }
/* an FP8 cache (the world's float32 cache buffers hold it) with a bad scale */
static void fp8_with_scales(kv_world *w, float key_scale, float value_scale)
{
    w->cache.dtype = CLPE_DTYPE_FP8_E4M3;
    w->cache.key_offset = 3;
    w->cache.key_scale = key_scale;
    w->cache.value_scale = value_scale;
}
static void fp8_key_scale_zero(kv_world *w, cl_mem s) { (void)s; fp8_with_scales(w, 0.0f, 1.0f); }
static void fp8_value_scale_negative(kv_world *w, cl_mem s)
{
    (void)s;
    fp8_with_scales(w, 1.0f, -0.5f);
}
static void fp8_key_scale_nan(kv_world *w, cl_mem s) { (void)s; fp8_with_scales(w, NAN, 1.0f); }
static void fp8_value_scale_inf(kv_world *w, cl_mem s)
{
    (void)s;
    fp8_with_scales(w, 1.0f, INFINITY);
}
static void fp8_scales_unset(kv_world *w, cl_mem s) { (void)s; fp8_with_scales(w, 0.0f, 0.0f); }
static void float_cache_scaled(kv_world *w, cl_mem s) { (void)s; w->cache.key_scale = 0.5f; }
static void cache_dtype_unknown(kv_world *w, cl_mem s) { (void)s; w->cache.dtype = 6; }
static void slots_reserved(kv_world *w, cl_mem s) { (void)s; w->kv_slots.reserved[0] = 1; }
static void slots_misaligned(kv_world *w, cl_mem s) { (void)s; w->kv_slots.offset = 4; }
static void cache_entries_overlap(kv_world *w, cl_mem s) { (void)s; w->cache.slot_pitch = 8; }
static void no_slots_buffer(kv_world *w, cl_mem s) { (void)s; w->kv_slots.buffer = NULL; }
static void flags_unknown(kv_world *w, cl_mem s) { (void)s; w->c.flags = 2; }

/* offsets whose ends pass SIZE_MAX: refused, never wrapped to a small end */
static void key_offset_wraps(kv_world *w, cl_mem s)
{
    (void)s;
    w->cache.key_offset = SIZE_MAX - 3;
}
static void value_offset_wraps(kv_world *w, cl_mem s)
{
    (void)s;
    w->cache.value_offset = SIZE_MAX - 3;
}
static void slots_offset_wraps(kv_world *w, cl_mem s)
{
    (void)s;
    w->kv_slots.offset = SIZE_MAX - 7;
}

Test(rope_kv, offsets_near_size_max_are_refused)
{
    expect_rejected(key_offset_wraps, CLPE_ERROR_TOO_LARGE, "key_offset SIZE_MAX - 3");
    expect_rejected(value_offset_wraps, CLPE_ERROR_TOO_LARGE, "value_offset SIZE_MAX - 3");
    expect_rejected(slots_offset_wraps, CLPE_ERROR_TOO_LARGE, "slots offset SIZE_MAX - 7");
}

Test(rope_kv, bad_arguments_write_nothing)
{
    expect_rejected(key_is_q, CLPE_ERROR_ALIASING, "key cache on q");
    expect_rejected(value_meets_key, CLPE_ERROR_ALIASING, "value cache on the key cache");
    expect_rejected(q_meets_k, CLPE_ERROR_ALIASING, "q written over k");
    expect_rejected(report_is_slots, CLPE_ERROR_ALIASING, "report on the slots");
    expect_rejected(slots_in_q, CLPE_ERROR_ALIASING, "slots inside q, which is written");
    expect_rejected(cache_too_small, CLPE_ERROR_BUFFER_TOO_SMALL, "value cache too small");
    expect_rejected(slots_too_small, CLPE_ERROR_INDEX_BUFFER_TOO_SMALL, "slots too few");
    expect_rejected(kv_heads_differ, CLPE_ERROR_INVALID_ROPE, "cache heads differ from k's");
    expect_rejected(cache_dtype_wider, CLPE_ERROR_DTYPE_MISMATCH, "f64 cache under f32");
    expect_rejected(reserved_set, CLPE_ERROR_RESERVED_FIELD, "cache reserved");
    expect_rejected(fp8_key_scale_zero, CLPE_ERROR_INVALID_SCALE, "FP8 key_scale 0");
    expect_rejected(fp8_value_scale_negative, CLPE_ERROR_INVALID_SCALE, "FP8 value_scale -0.5");
    expect_rejected(fp8_key_scale_nan, CLPE_ERROR_INVALID_SCALE, "FP8 key_scale NaN");
    expect_rejected(fp8_value_scale_inf, CLPE_ERROR_INVALID_SCALE, "FP8 value_scale inf");
    expect_rejected(fp8_scales_unset, CLPE_ERROR_INVALID_SCALE, "FP8 scales left 0");
    expect_rejected(float_cache_scaled, CLPE_ERROR_INVALID_SCALE, "key_scale on a float cache");
    expect_rejected(cache_dtype_unknown, CLPE_ERROR_INVALID_CONFIG, "cache dtype 6");
    expect_rejected(slots_reserved, CLPE_ERROR_RESERVED_FIELD, "slots reserved");
    expect_rejected(slots_misaligned, CLPE_ERROR_MISALIGNED_OFFSET, "slots offset");
    expect_rejected(cache_entries_overlap, CLPE_ERROR_INVALID_PITCH, "slot pitch below an entry");
    expect_rejected(no_slots_buffer, CLPE_ERROR_NULL_BUFFER, "slots buffer NULL");
    expect_rejected(flags_unknown, CLPE_ERROR_INVALID_CONFIG, "unknown flag");
}

/* The fused layout writes q in place beside the k and v it reads: allowed;
 * a q whose tokens reach into k's columns is not. */
Test(rope_kv, fused_q_in_place_is_allowed_and_overlap_is_not)
{
    clpe_rope_config cfg = clpe_rope_config_default(16);
    clpe_rope *rope = make_rope(&cfg);
    kv_case c = {CLPE_DTYPE_F32, CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 6, 2, 1, true,
                 false, false, false, CLPE_POSITIONS_START, 0, 0, false, 0, {0}, false};
    kv_world w;
    world_make(&w, &c, 13);
    w.q.heads = 3; /* q's third head is k's first */
    cr_assert_eq(world_enqueue(&w, rope), CLPE_ERROR_ALIASING);
    unsigned char *in[3] = {w.in[0], NULL, NULL};
    expect_world(&w, in, NULL, w.key_init, w.value_init, "q over k");
    w.q.heads = 2;
    cr_assert_eq(world_enqueue(&w, rope), CLPE_SUCCESS);
    world_free(&w);
    clpe_rope_release(rope);
}

/* One cache buffer holding each block's keys and then its values
 * ([blocks, 2, block_size, heads, head_dim], as FlashInfer's paged cache):
 * the two tensors interleave without meeting, so the call is accepted on the
 * device and in the host emulation, and fills exactly what two caches of
 * their own would. The same buffer with the values half a block off (over
 * the keys) is refused by both. */
Test(rope_kv, keys_and_values_of_each_block_in_one_cache_buffer)
{
    clpe_rope_config cfg = clpe_rope_config_default(16);
    clpe_rope *rope = make_rope(&cfg);
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    cr_assert_not_null(host);
    const size_t hd = 16, hq = 2, hk = 1, tokens = 6, blocks = 3, block = 4;
    const size_t row = (hq + 2 * hk) * hd, half = block * hk * hd, bp = 2 * half;
    uint64_t rng = 77;
    float *qkv = malloc(tokens * row * sizeof *qkv), *cache = malloc(blocks * bp * sizeof *cache);
    fill_random(CLPE_DTYPE_F32, qkv, tokens * row, &rng);
    fill_random(CLPE_DTYPE_F32, cache, blocks * bp, &rng);
    int64_t slots[6] = {5, 0, 11, 2, 7, 9};
    cl_mem qkv_buf = test_buffer_from(&cl, qkv, tokens * row * sizeof *qkv);
    cl_mem cache_buf = test_buffer_from(&cl, cache, blocks * bp * sizeof *cache);
    cl_mem slots_buf = test_buffer_from(&cl, slots, sizeof slots);
    clpe_rope_tensor q = {.buffer = qkv_buf, .heads = hq, .row_pitch = row};
    clpe_rope_tensor k = {.buffer = qkv_buf, .offset = hq * hd * 4, .heads = hk, .row_pitch = row};
    clpe_rope_tensor v = {.buffer = qkv_buf, .offset = (hq + hk) * hd * 4, .heads = hk,
                          .row_pitch = row};
    clpe_kv_cache kc = {.key = cache_buf, .value = cache_buf, .value_offset = half * 4,
                        .dtype = CLPE_DTYPE_F32, .num_blocks = blocks, .block_size = block,
                        .heads = hk, .block_pitch = bp};
    clpe_kv_slots ks = {.buffer = slots_buf};
    clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = 100};
    cr_assert_eq(clpe_enqueue_rope_kv(rope, cl.queue, tokens, &q, NULL, &k, &v, &kc, &ks, &pos, 0,
                                      0, NULL, NULL),
                 CLPE_SUCCESS);
    float *dev_qkv = test_buffer_read(&cl, qkv_buf, tokens * row * sizeof *qkv);
    float *dev_cache = test_buffer_read(&cl, cache_buf, blocks * bp * sizeof *cache);

    /* the host emulation: the same layout, then two caches of their own */
    float *h_qkv = malloc(tokens * row * sizeof *qkv), *h_cache = malloc(blocks * bp * 4);
    memcpy(h_qkv, qkv, tokens * row * sizeof *qkv);
    memcpy(h_cache, cache, blocks * bp * sizeof *cache);
    clpe_host_rope_tensor hq_t = {.data = h_qkv, .heads = hq, .row_pitch = row},
                          hk_t = {.data = h_qkv + hq * hd, .heads = hk, .row_pitch = row},
                          hv_t = {.data = h_qkv + (hq + hk) * hd, .heads = hk, .row_pitch = row};
    clpe_host_kv_cache hc = {.key = h_cache, .value = h_cache + half, .dtype = CLPE_DTYPE_F32,
                             .num_blocks = blocks, .block_size = block, .heads = hk,
                             .block_pitch = bp};
    cr_assert_eq(clpe_host_rope_kv(host, tokens, &hq_t, NULL, &hk_t, &hv_t, &hc, slots,
                                   CLPE_POSITIONS_START, 100, NULL, 0),
                 CLPE_SUCCESS);
    cr_assert_eq(memcmp(dev_qkv, h_qkv, tokens * row * sizeof *qkv), 0, "q, k, v");
    cr_assert_eq(memcmp(dev_cache, h_cache, blocks * bp * sizeof *cache), 0, "the cache");
    float *keys = malloc(blocks * half * 4), *values = malloc(blocks * half * 4);
    float *s_qkv = malloc(tokens * row * sizeof *qkv);
    memcpy(s_qkv, qkv, tokens * row * sizeof *qkv);
    for (size_t b = 0; b < blocks; ++b) {
        memcpy(keys + b * half, cache + b * bp, half * 4);
        memcpy(values + b * half, cache + b * bp + half, half * 4);
    }
    clpe_host_rope_tensor sq = {.data = s_qkv, .heads = hq, .row_pitch = row},
                          sk = {.data = s_qkv + hq * hd, .heads = hk, .row_pitch = row},
                          sv = {.data = s_qkv + (hq + hk) * hd, .heads = hk, .row_pitch = row};
    clpe_host_kv_cache sc = {.key = keys, .value = values, .dtype = CLPE_DTYPE_F32,
                             .num_blocks = blocks, .block_size = block, .heads = hk};
    cr_assert_eq(clpe_host_rope_kv(host, tokens, &sq, NULL, &sk, &sv, &sc, slots,
                                   CLPE_POSITIONS_START, 100, NULL, 0),
                 CLPE_SUCCESS);
    for (size_t b = 0; b < blocks; ++b) {
        cr_assert_eq(memcmp(dev_cache + b * bp, keys + b * half, half * 4), 0, "keys, block %zu", b);
        cr_assert_eq(memcmp(dev_cache + b * bp + half, values + b * half, half * 4), 0,
                     "values, block %zu", b);
    }

    /* values half a block on: they meet the keys */
    kc.value_offset = half / 2 * 4;
    hc.value = h_cache + half / 2;
    cr_assert_eq(clpe_enqueue_rope_kv(rope, cl.queue, tokens, &q, NULL, &k, &v, &kc, &ks, &pos, 0,
                                      0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    cr_assert_eq(clpe_host_rope_kv(host, tokens, &hq_t, NULL, &hk_t, &hv_t, &hc, slots,
                                   CLPE_POSITIONS_START, 100, NULL, 0),
                 CLPE_ERROR_ALIASING);
    /* the host refuses the slots inside q too, as the device call does */
    hc.value = h_cache + half;
    clpe_host_rope_tensor over = {.data = (void *)slots, .heads = hq, .row_pitch = row};
    cr_assert_eq(clpe_host_rope_kv(host, 1, &over, NULL, &hk_t, &hv_t, &hc, slots,
                                   CLPE_POSITIONS_START, 100, NULL, 0),
                 CLPE_ERROR_ALIASING);
    float *after = test_buffer_read(&cl, cache_buf, blocks * bp * sizeof *cache);
    cr_assert_eq(memcmp(after, dev_cache, blocks * bp * sizeof *cache), 0, "a refused call wrote");
    free(after);
    free(keys);
    free(values);
    free(s_qkv);
    free(h_qkv);
    free(h_cache);
    free(dev_qkv);
    free(dev_cache);
    clReleaseMemObject(qkv_buf);
    clReleaseMemObject(cache_buf);
    clReleaseMemObject(slots_buf);
    free(qkv);
    free(cache);
    clpe_rope_release(host);
    clpe_rope_release(rope);
}

Test(rope_kv, host_only_and_null_arguments)
{
    clpe_rope_config cfg = clpe_rope_config_default(16);
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    clpe_rope_tensor t = {.buffer = NULL, .heads = 1};
    clpe_kv_cache kc = {0};
    clpe_kv_slots sl = {0};
    cr_assert_eq(clpe_enqueue_rope_kv(NULL, cl.queue, 1, &t, NULL, &t, &t, &kc, &sl, NULL, 0, 0,
                                      NULL, NULL),
                 CLPE_ERROR_NULL_ENCODER);
    cr_assert_eq(clpe_enqueue_rope_kv(host, cl.queue, 1, &t, NULL, &t, &t, &kc, &sl, NULL, 0, 0,
                                      NULL, NULL),
                 CLPE_ERROR_HOST_ONLY);
    clpe_rope *rope = make_rope(&cfg);
    cr_assert_eq(clpe_enqueue_rope_kv(rope, cl.queue, 1, &t, NULL, NULL, &t, &kc, &sl, NULL, 0, 0,
                                      NULL, NULL),
                 CLPE_ERROR_NULL_POINTER);
    cr_assert_eq(clpe_enqueue_rope_kv(rope, cl.queue, 1, NULL, &t, &t, &t, &kc, &sl, NULL, 0, 0,
                                      NULL, NULL),
                 CLPE_ERROR_NULL_POINTER);
    clpe_rope_release(rope);
    clpe_rope_release(host);
}

/* ---- the views clpe_enqueue_rope takes, taken by both KV calls ---- */

/* q [hq, tokens, d], k and v [hk, tokens, d], each in a buffer of its own,
 * viewed as [tokens, heads, d] through (head_pitch, row_pitch), rotated
 * into a contiguous cache on the device and in the host emulation: the
 * status of each, and the same bits (q, and both caches) when accepted.
 * Returns the device's status after checking that clpe_enqueue_rope on
 * the same q and k views and the host emulation give it too. */
static clpe_status views_call(size_t tokens, size_t hq, size_t hk, size_t head_pitch,
                              size_t row_pitch, size_t elems_per_tensor_head)
{
    const size_t d = 16;
    clpe_rope_config cfg = clpe_rope_config_default(d);
    clpe_rope *rope = make_rope(&cfg);
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    cr_assert_not_null(host);
    uint64_t rng = 99;
    size_t heads[3] = {hq, hk, hk}, bytes[3];
    float *in[3], *h_in[3];
    cl_mem buf[3];
    for (int j = 0; j < 3; ++j) {
        bytes[j] = heads[j] * elems_per_tensor_head * sizeof(float);
        in[j] = malloc(bytes[j]);
        h_in[j] = malloc(bytes[j]);
        fill_random(CLPE_DTYPE_F32, in[j], bytes[j] / 4, &rng);
        memcpy(h_in[j], in[j], bytes[j]);
        buf[j] = test_buffer_from(&cl, in[j], bytes[j]);
    }
    const size_t blocks = 2, block = 8, cache_elems = blocks * block * hk * d;
    float *cache0 = malloc(cache_elems * 4), *h_key = malloc(cache_elems * 4),
          *h_value = malloc(cache_elems * 4);
    fill_random(CLPE_DTYPE_F32, cache0, cache_elems, &rng);
    memcpy(h_key, cache0, cache_elems * 4);
    memcpy(h_value, cache0, cache_elems * 4);
    cl_mem key = test_buffer_from(&cl, cache0, cache_elems * 4);
    cl_mem value = test_buffer_from(&cl, cache0, cache_elems * 4);
    int64_t slots[8] = {9, 2, -1, 14, 0, 7, 11, 3};
    cr_assert(tokens <= 8);
    cl_mem slots_buf = test_buffer_from(&cl, slots, sizeof slots);
    clpe_rope_tensor t[3];
    clpe_host_rope_tensor ht[3];
    for (int j = 0; j < 3; ++j) {
        t[j] = (clpe_rope_tensor){.buffer = buf[j], .heads = heads[j], .head_pitch = head_pitch,
                                  .row_pitch = row_pitch};
        ht[j] = (clpe_host_rope_tensor){.data = h_in[j], .heads = heads[j],
                                        .head_pitch = head_pitch, .row_pitch = row_pitch};
    }
    clpe_kv_cache kc = {.key = key, .value = value, .dtype = CLPE_DTYPE_F32,
                        .num_blocks = blocks, .block_size = block, .heads = hk};
    clpe_host_kv_cache hc = {.key = h_key, .value = h_value, .dtype = CLPE_DTYPE_F32,
                             .num_blocks = blocks, .block_size = block, .heads = hk};
    clpe_kv_slots ks = {.buffer = slots_buf};
    clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = 40};
    clpe_status dev = clpe_enqueue_rope_kv(rope, cl.queue, tokens, &t[0], NULL, &t[1], &t[2],
                                           &kc, &ks, &pos, 0, 0, NULL, NULL);
    clpe_status hst = clpe_host_rope_kv(host, tokens, &ht[0], NULL, &ht[1], &ht[2], &hc, slots,
                                        CLPE_POSITIONS_START, 40, NULL, 0);
    cr_assert_eq(dev, hst, "device %d (%s), host %d (%s)", dev, clpe_status_string(dev), hst,
                 clpe_status_string(hst));
    if (dev == CLPE_SUCCESS) {
        float *dq = test_buffer_read(&cl, buf[0], bytes[0]);
        float *dk = test_buffer_read(&cl, key, cache_elems * 4);
        float *dv = test_buffer_read(&cl, value, cache_elems * 4);
        cr_assert_eq(memcmp(dq, h_in[0], bytes[0]), 0, "q");
        cr_assert_eq(memcmp(dk, h_key, cache_elems * 4), 0, "key cache");
        cr_assert_eq(memcmp(dv, h_value, cache_elems * 4), 0, "value cache");
        cr_assert_neq(memcmp(dk, cache0, cache_elems * 4), 0, "nothing cached");
        free(dq);
        free(dk);
        free(dv);
    }
    /* clpe_enqueue_rope on the same q and k views (of fresh buffers) */
    cl_mem rq = test_buffer_from(&cl, in[0], bytes[0]), rk = test_buffer_from(&cl, in[1], bytes[1]);
    clpe_rope_tensor vq = t[0], vk = t[1];
    vq.buffer = rq;
    vk.buffer = rk;
    clpe_status rot =
        clpe_enqueue_rope(rope, cl.queue, 1, tokens, &vq, &vk, &pos, 0, 0, NULL, NULL);
    cr_assert_eq(rot, dev, "clpe_enqueue_rope %d (%s), clpe_enqueue_rope_kv %d (%s)", rot,
                 clpe_status_string(rot), dev, clpe_status_string(dev));
    cr_assert_eq(clFinish(cl.queue), CL_SUCCESS);
    clReleaseMemObject(rq);
    clReleaseMemObject(rk);
    for (int j = 0; j < 3; ++j) {
        clReleaseMemObject(buf[j]);
        free(in[j]);
        free(h_in[j]);
    }
    clReleaseMemObject(key);
    clReleaseMemObject(value);
    clReleaseMemObject(slots_buf);
    free(cache0);
    free(h_key);
    free(h_value);
    clpe_rope_release(host);
    clpe_rope_release(rope);
    return dev;
}

/* [heads, tokens, d] viewed as [tokens, heads, d]: head pitch tokens * d,
 * row pitch d. */
Test(rope_kv, head_major_views_are_accepted_on_device_and_host)
{
    const size_t tokens = 7, d = 16;
    cr_assert_eq(views_call(tokens, 4, 2, tokens * d, d, tokens * d), CLPE_SUCCESS);
    cr_assert_eq(views_call(1, 3, 1, d, d, d), CLPE_SUCCESS);
}

/* One head whose head pitch is 2^33 elements (never stepped): the same
 * status from clpe_enqueue_rope, clpe_enqueue_rope_kv and clpe_host_rope_kv. */
Test(rope_kv, one_head_with_a_huge_head_pitch_gets_one_status_everywhere)
{
    const size_t tokens = 5, d = 16;
    cr_assert_eq(views_call(tokens, 1, 1, (size_t)1 << 33, d, tokens * d), CLPE_SUCCESS);
}

/* The host emulation refuses what the device call refuses, writing
 * nothing: an FP8 cache's scale 0, negative, NaN or infinite, a scale on a
 * float cache, and an FP8 cache under a float64 object. */
Test(rope_kv, host_refuses_bad_fp8_scales)
{
    clpe_rope_config cfg = clpe_rope_config_default(16);
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    cfg.dtype = CLPE_DTYPE_F64;
    clpe_rope *host64 = clpe_rope_create_host(&cfg, NULL);
    cr_assert(host && host64);
    float k[2 * 16] = {1.0f, -2.0f, 300.0f}, v[2 * 16] = {0.5f};
    double k64[2 * 16] = {1.0};
    unsigned char key[4 * 16], value[4 * 16];
    memset(key, 0x5A, sizeof key);
    memset(value, 0x5A, sizeof value);
    int64_t slots[2] = {1, 3};
    clpe_host_rope_tensor hk = {.data = k, .heads = 1}, hv = {.data = v, .heads = 1};
    clpe_host_rope_tensor hk64 = {.data = k64, .heads = 1}, hv64 = {.data = k64, .heads = 1};
    const struct {
        clpe_dtype dtype;
        float key_scale, value_scale;
        bool f64;
        clpe_status want;
    } cases[] = {
        {CLPE_DTYPE_FP8_E4M3, 0.0f, 1.0f, false, CLPE_ERROR_INVALID_SCALE},
        {CLPE_DTYPE_FP8_E5M2, 1.0f, -1.0f, false, CLPE_ERROR_INVALID_SCALE},
        {CLPE_DTYPE_FP8_E4M3, NAN, 1.0f, false, CLPE_ERROR_INVALID_SCALE},
        {CLPE_DTYPE_FP8_E5M2, 1.0f, INFINITY, false, CLPE_ERROR_INVALID_SCALE},
        {CLPE_DTYPE_F32, 2.0f, 0.0f, false, CLPE_ERROR_INVALID_SCALE},
        {CLPE_DTYPE_FP8_E4M3, 1.0f, 1.0f, true, CLPE_ERROR_DTYPE_MISMATCH},
    };
    for (size_t j = 0; j < sizeof cases / sizeof cases[0]; ++j) {
        clpe_host_kv_cache hc = {.key = key, .value = value, .dtype = cases[j].dtype,
                                 .num_blocks = 1, .block_size = 4, .heads = 1,
                                 .key_scale = cases[j].key_scale,
                                 .value_scale = cases[j].value_scale};
        clpe_status st = clpe_host_rope_kv(cases[j].f64 ? host64 : host, 2, NULL, NULL,
                                           cases[j].f64 ? &hk64 : &hk,
                                           cases[j].f64 ? &hv64 : &hv, &hc, slots,
                                           CLPE_POSITIONS_START, 0, NULL, 0);
        cr_assert_eq(st, cases[j].want, "case %zu: %d (%s)", j, st, clpe_status_string(st));
        for (size_t b = 0; b < sizeof key; ++b)
            cr_assert(key[b] == 0x5A && value[b] == 0x5A, "case %zu wrote the cache", j);
    }
    /* and a good call writes the bytes the test's own store gives */
    clpe_host_kv_cache hc = {.key = key, .value = value, .dtype = CLPE_DTYPE_FP8_E4M3,
                             .num_blocks = 1, .block_size = 4, .heads = 1, .key_scale = 0.25f,
                             .value_scale = 0.3f};
    cr_assert_eq(clpe_host_rope_kv(host, 2, NULL, NULL, &hk, &hv, &hc, slots,
                                   CLPE_POSITIONS_START, 0, NULL, 0),
                 CLPE_SUCCESS);
    cr_assert_eq(value[16], to_fp8(CLPE_DTYPE_FP8_E4M3, 0.5f, 0.3f));
    cr_assert_eq(key[16 + 2], 0x7E, "300 / 0.25 saturates to 448: %#x", key[16 + 2]);
    clpe_rope_release(host);
    clpe_rope_release(host64);
}
