/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernel_checks.c - run every clpe kernel (table, add, add_out, gather,
 * pad_positions, rotary and its cos/sin cache, multimodal rotary and its
 * cache) on small, awkward shapes and compare every output bit with
 * the host emulation (or, for pad_positions and the bad-id report, with
 * values worked out here).
 *
 * Meant to run under `oclgrind --check-api --data-races` (tests/oclgrind/
 * run.sh): every buffer is exactly as large as the call needs, so a read or
 * write one element outside it is a report from Oclgrind's memory checker,
 * and a work-item writing another's element is one from its race checker.
 * Shapes covered: d/2 smaller than, a multiple of, and not a multiple of 16
 * (the float16 path, its scalar tail and the one-pair path), odd d with the
 * zero column, a padding row, rows with padding between them, positions
 * that wrap past INT64_MAX, every position source, bad token ids. The
 * caller picks the launch shape and the launch splitting through the
 * environment (CLPE_PAIRS_PER_ITEM, CLPE_MAX_LAUNCH_ROWS,
 * CLPE_MAX_LAUNCH_BATCH).
 *
 * Prints one line and exits 0 when every output matches; else one line per
 * difference on stderr and exits 1.
 */
#include <clpe.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 2, SEQ = 5, VOCAB = 7, PAD_EXTRA = 3 };

typedef struct ctx {
    cl_context context;
    cl_device_id device;
    cl_command_queue queue;
    int failures;
    int runs;
} ctx;

static size_t dtype_size(clpe_dtype t)
{
    return t == CLPE_DTYPE_F64 ? 8 : t == CLPE_DTYPE_F32 ? 4 : 2;
}

static const char *dtype_name(clpe_dtype t)
{
    static const char *names[] = {"f32", "f16", "bf16", "f64"};
    return names[t];
}

static uint64_t next_random(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* n finite values of type t with magnitudes in [0.5, 1), as raw bits. */
static void fill_values(void *dst, clpe_dtype t, size_t n, uint64_t *seed)
{
    for (size_t k = 0; k < n; ++k) {
        uint64_t r = next_random(seed);
        switch (t) {
        case CLPE_DTYPE_F32: ((uint32_t *)dst)[k] = (uint32_t)((r & 0x807FFFFFu) | 0x3F000000u); break;
        case CLPE_DTYPE_F16: ((uint16_t *)dst)[k] = (uint16_t)((r & 0x83FFu) | 0x3800u); break;
        case CLPE_DTYPE_BF16: ((uint16_t *)dst)[k] = (uint16_t)((r & 0x807Fu) | 0x3F00u); break;
        case CLPE_DTYPE_F64:
            ((uint64_t *)dst)[k] = (r & 0x800FFFFFFFFFFFFFu) | 0x3FE0000000000000u;
            break;
        case CLPE_DTYPE_FP8_E4M3: /* finite values about 1 */
        case CLPE_DTYPE_FP8_E5M2: ((uint8_t *)dst)[k] = (uint8_t)((r & 0x83u) | 0x38u); break;
        }
    }
}

static void fail(ctx *c, const char *what, const char *why)
{
    fprintf(stderr, "kernel_checks: %s: %s\n", what, why);
    c->failures++;
}

static cl_mem buffer_from(ctx *c, const void *host, size_t bytes)
{
    cl_int err;
    cl_mem m = clCreateBuffer(c->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                              (void *)host, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "kernel_checks: clCreateBuffer(%zu bytes) failed: %d\n", bytes, err);
        exit(2);
    }
    return m;
}

/* Wait for the queue, read `bytes` of m into host and compare with want. */
static void expect_buffer(ctx *c, const char *what, cl_mem m, const void *want, size_t bytes,
                          size_t esize)
{
    unsigned char *got = malloc(bytes);
    if (!got)
        exit(2);
    cl_int err = clEnqueueReadBuffer(c->queue, m, CL_TRUE, 0, bytes, got, 0, NULL, NULL);
    c->runs++;
    if (err != CL_SUCCESS) {
        char why[64];
        snprintf(why, sizeof why, "read back failed (%d)", err);
        fail(c, what, why);
    } else if (memcmp(got, want, bytes) != 0) {
        size_t k = 0;
        while (memcmp(got + k * esize, (const unsigned char *)want + k * esize, esize) == 0)
            ++k;
        char why[96];
        snprintf(why, sizeof why, "element %zu differs from the host emulation", k);
        fail(c, what, why);
    }
    free(got);
}

static void expect_status(ctx *c, const char *what, clpe_status st)
{
    if (st != CLPE_SUCCESS)
        fail(c, what, clpe_status_string(st));
}

static void check_table(ctx *c, clpe_encoder *enc, const clpe_config *cfg, const char *tag)
{
    const size_t esize = dtype_size(cfg->dtype), pitch = cfg->d + PAD_EXTRA;
    const size_t bytes = SEQ * pitch * esize;
    const int64_t start = INT64_MAX - 2; /* the last rows of the position range */
    unsigned char *want = malloc(bytes);
    if (!want)
        exit(2);
    memset(want, 0xA5, bytes); /* padding between rows must stay as it was */
    char what[96];
    snprintf(what, sizeof what, "%s table", tag);
    expect_status(c, what, clpe_host_table(enc, start, 3, want, pitch));
    expect_status(c, what, clpe_host_table(enc, -2, SEQ - 3, want + 3 * pitch * esize, pitch));
    unsigned char *init = malloc(bytes);
    if (!init)
        exit(2);
    memset(init, 0xA5, bytes);
    cl_mem out = buffer_from(c, init, bytes);
    clpe_tensor t = {.buffer = out, .row_pitch = pitch};
    expect_status(c, what, clpe_enqueue_table(enc, c->queue, start, 3, &t, 0, NULL, NULL));
    clpe_tensor rest = {.buffer = out, .offset = 3 * pitch * esize, .row_pitch = pitch};
    expect_status(c, what, clpe_enqueue_table(enc, c->queue, -2, SEQ - 3, &rest, 0, NULL, NULL));
    expect_buffer(c, what, out, want, bytes, esize);
    clReleaseMemObject(out);
    free(init);
    free(want);
}

/* Positions for each source: START ending at INT64_MAX (the furthest the
 * API allows), PER_SEQUENCE wrapping past INT64_MAX to INT64_MIN within a
 * sequence, IDS with extremes. */
#define START_POSITION (INT64_MAX - (SEQ - 1))
static const int64_t per_sequence[BATCH] = {INT64_MAX - 1, -7};
static const int64_t ids_positions[BATCH * SEQ] = {
    0, 1, INT64_MAX, INT64_MIN, -1, 1 << 20, (int64_t)1 << 40, 3, 3, -((int64_t)1 << 62)};

static void positions_for(ctx *c, clpe_position_source src, clpe_positions *pos, cl_mem *buf)
{
    *buf = NULL;
    memset(pos, 0, sizeof *pos);
    pos->source = src;
    if (src == CLPE_POSITIONS_START)
        pos->start = START_POSITION;
    else if (src == CLPE_POSITIONS_PER_SEQUENCE)
        *buf = buffer_from(c, per_sequence, sizeof per_sequence);
    else
        *buf = buffer_from(c, ids_positions, sizeof ids_positions);
    pos->buffer = *buf;
}

static const int64_t *host_positions(clpe_position_source src)
{
    return src == CLPE_POSITIONS_PER_SEQUENCE ? per_sequence
           : src == CLPE_POSITIONS_IDS        ? ids_positions
                                              : NULL;
}

static void check_add(ctx *c, clpe_encoder *enc, const clpe_config *cfg, const char *tag,
                      clpe_position_source src, int out_of_place, uint64_t *seed)
{
    const size_t esize = dtype_size(cfg->dtype), pitch = cfg->d + PAD_EXTRA;
    const size_t n = BATCH * SEQ * pitch, bytes = n * esize;
    unsigned char *x = malloc(bytes), *want = malloc(bytes);
    if (!x || !want)
        exit(2);
    fill_values(x, cfg->dtype, n, seed);
    memcpy(want, x, bytes);
    char what[96];
    snprintf(what, sizeof what, "%s %s source %d", tag, out_of_place ? "add_out" : "add", (int)src);
    expect_status(c, what,
                  clpe_host_add(enc, BATCH, SEQ, want, pitch, SEQ * pitch, src,
                                START_POSITION, host_positions(src)));
    clpe_positions pos;
    cl_mem pbuf;
    positions_for(c, src, &pos, &pbuf);
    cl_mem xbuf = buffer_from(c, x, bytes);
    clpe_tensor xt = {.buffer = xbuf, .row_pitch = pitch};
    if (out_of_place) {
        /* out starts as x, so its padding must come through untouched */
        cl_mem obuf = buffer_from(c, x, bytes);
        clpe_tensor ot = {.buffer = obuf, .row_pitch = pitch};
        expect_status(c, what,
                      clpe_enqueue_add_out(enc, c->queue, BATCH, SEQ, &xt, &ot, &pos, 0, NULL, NULL));
        expect_buffer(c, what, obuf, want, bytes, esize);
        expect_buffer(c, what, xbuf, x, bytes, esize); /* x is only read */
        clReleaseMemObject(obuf);
    } else {
        expect_status(c, what, clpe_enqueue_add(enc, c->queue, BATCH, SEQ, &xt, &pos, 0, NULL, NULL));
        expect_buffer(c, what, xbuf, want, bytes, esize);
    }
    clReleaseMemObject(xbuf);
    if (pbuf)
        clReleaseMemObject(pbuf);
    free(x);
    free(want);
}

static void check_gather(ctx *c, clpe_encoder *enc, const clpe_config *cfg, const char *tag,
                         clpe_position_source src, uint64_t *seed)
{
    const size_t esize = dtype_size(cfg->dtype), d = cfg->d;
    const size_t emb_bytes = VOCAB * d * esize, out_bytes = BATCH * SEQ * d * esize;
    /* in range, and out of range on both sides; the first bad one at flat 1 */
    static const int32_t ids[BATCH * SEQ] = {3, -1, 0, 6, 7, 2, 1000, 5, 4, INT32_MIN};
    const uint32_t want_bad[2] = {4, 1};
    unsigned char *emb = malloc(emb_bytes), *want = malloc(out_bytes);
    if (!emb || !want)
        exit(2);
    fill_values(emb, cfg->dtype, VOCAB * d, seed);
    memset(want, 0, out_bytes);
    char what[96];
    snprintf(what, sizeof what, "%s gather source %d", tag, (int)src);
    size_t bad = 0;
    expect_status(c, what,
                  clpe_host_gather(enc, BATCH, SEQ, ids, emb, VOCAB, d, want, d, src,
                                   START_POSITION, host_positions(src), &bad));
    if (bad != want_bad[0])
        fail(c, what, "the host emulation counts the bad ids wrong");
    clpe_positions pos;
    cl_mem pbuf;
    positions_for(c, src, &pos, &pbuf);
    cl_mem ebuf = buffer_from(c, emb, emb_bytes);
    cl_mem ibuf = buffer_from(c, ids, sizeof ids);
    unsigned char *poison = malloc(out_bytes);
    if (!poison)
        exit(2);
    memset(poison, 0xA5, out_bytes);
    cl_mem obuf = buffer_from(c, poison, out_bytes);
    const uint32_t stale[2] = {77, 0};
    cl_mem bbuf = buffer_from(c, stale, sizeof stale);
    clpe_token_ids it = {.buffer = ibuf};
    clpe_tensor et = {.buffer = ebuf}, ot = {.buffer = obuf};
    expect_status(c, what,
                  clpe_enqueue_gather(enc, c->queue, BATCH, SEQ, &it, &et, cfg->dtype, VOCAB, &ot,
                                      &pos, bbuf, 0, NULL, NULL));
    expect_buffer(c, what, obuf, want, out_bytes, esize);
    expect_buffer(c, what, bbuf, want_bad, sizeof want_bad, sizeof want_bad[0]);
    clReleaseMemObject(bbuf);
    clReleaseMemObject(obuf);
    clReleaseMemObject(ibuf);
    clReleaseMemObject(ebuf);
    if (pbuf)
        clReleaseMemObject(pbuf);
    free(poison);
    free(emb);
    free(want);
}

/* Rotary: q (3 heads) and k (1 head) in place, each head followed by one
 * element of padding that must come through untouched, every position
 * source, then the cos/sin cache with padded rows. */
enum { Q_HEADS = 3, K_HEADS = 1 };

static void check_rope(ctx *c, clpe_rope *rope, const clpe_rope_config *cfg, const char *tag,
                       size_t pad, clpe_position_source src, uint64_t *seed)
{
    const size_t esize = dtype_size(cfg->dtype), head_pitch = cfg->head_dim + pad;
    const size_t qn = BATCH * SEQ * Q_HEADS * head_pitch, kn = BATCH * SEQ * K_HEADS * head_pitch;
    unsigned char *q = malloc(qn * esize), *k = malloc(kn * esize);
    unsigned char *qwant = malloc(qn * esize), *kwant = malloc(kn * esize);
    if (!q || !k || !qwant || !kwant)
        exit(2);
    fill_values(q, cfg->dtype, qn, seed);
    fill_values(k, cfg->dtype, kn, seed);
    memcpy(qwant, q, qn * esize);
    memcpy(kwant, k, kn * esize);
    char what[96];
    snprintf(what, sizeof what, "%s rope source %d", tag, (int)src);
    clpe_host_rope_tensor hq = {.data = qwant, .heads = Q_HEADS, .head_pitch = head_pitch};
    clpe_host_rope_tensor hk = {.data = kwant, .heads = K_HEADS, .head_pitch = head_pitch};
    expect_status(c, what, clpe_host_rope(rope, BATCH, SEQ, &hq, &hk, src, START_POSITION,
                                          host_positions(src), 0));
    clpe_positions pos;
    cl_mem pbuf;
    positions_for(c, src, &pos, &pbuf);
    cl_mem qbuf = buffer_from(c, q, qn * esize), kbuf = buffer_from(c, k, kn * esize);
    clpe_rope_tensor tq = {.buffer = qbuf, .heads = Q_HEADS, .head_pitch = head_pitch};
    clpe_rope_tensor tk = {.buffer = kbuf, .heads = K_HEADS, .head_pitch = head_pitch};
    expect_status(c, what,
                  clpe_enqueue_rope(rope, c->queue, BATCH, SEQ, &tq, &tk, &pos, 0, 0, NULL, NULL));
    expect_buffer(c, what, qbuf, qwant, qn * esize, esize);
    expect_buffer(c, what, kbuf, kwant, kn * esize, esize);
    clReleaseMemObject(qbuf);
    clReleaseMemObject(kbuf);
    if (pbuf)
        clReleaseMemObject(pbuf);
    free(q);
    free(k);
    free(qwant);
    free(kwant);
}

static void check_rope_cache(ctx *c, clpe_rope *rope, const clpe_rope_config *cfg,
                             const char *tag)
{
    const size_t esize = dtype_size(cfg->dtype);
    const size_t rotary = cfg->rotary_dim ? cfg->rotary_dim : cfg->head_dim;
    const size_t pitch = rotary + PAD_EXTRA, rows = SEQ, bytes = rows * pitch * esize;
    unsigned char *cw = malloc(bytes), *sw = malloc(bytes);
    if (!cw || !sw)
        exit(2);
    memset(cw, 0x5A, bytes);
    memset(sw, 0x5A, bytes);
    char what[96];
    snprintf(what, sizeof what, "%s rope cache", tag);
    expect_status(c, what, clpe_host_rope_cache(rope, -2, rows, cw, sw, pitch));
    unsigned char *poison = malloc(bytes);
    if (!poison)
        exit(2);
    memset(poison, 0x5A, bytes);
    cl_mem cbuf = buffer_from(c, poison, bytes), sbuf = buffer_from(c, poison, bytes);
    clpe_tensor ct = {.buffer = cbuf, .row_pitch = pitch}, st = {.buffer = sbuf, .row_pitch = pitch};
    expect_status(c, what, clpe_enqueue_rope_cache(rope, c->queue, -2, rows, &ct, &st, 0, NULL, NULL));
    expect_buffer(c, what, cbuf, cw, bytes, esize);
    expect_buffer(c, what, sbuf, sw, bytes, esize);
    clReleaseMemObject(cbuf);
    clReleaseMemObject(sbuf);
    free(poison);
    free(cw);
    free(sw);
}

/* Rotary shapes: 44 pairs half-split (groups of 16 and a tail, in either
 * vector shape), partial rotary interleaved (16 pairs: one group), 5 pairs
 * (under a group) and 13 interleaved ones (in the GPU shape, the last
 * 16-bit work-item has one pair of its two), each with every position
 * source. */
static void check_rotary(ctx *c, clpe_encoder *like, clpe_dtype dtype, uint64_t *seed)
{
    struct rope_shape {
        uint32_t head_dim, rotary_dim;
        clpe_rope_pairing pairing;
        size_t pad; /* elements left alone after each head; even: pairs move as words */
    } shapes[] = {
        {88, 0, CLPE_ROPE_HALF_SPLIT, 2},
        {40, 32, CLPE_ROPE_INTERLEAVED, 1},
        {10, 0, CLPE_ROPE_HALF_SPLIT, 2},
        {26, 0, CLPE_ROPE_INTERLEAVED, 2},
    };
    for (size_t n = 0; n < sizeof shapes / sizeof shapes[0]; ++n) {
        clpe_rope_config cfg = clpe_rope_config_default(shapes[n].head_dim);
        cfg.rotary_dim = shapes[n].rotary_dim;
        cfg.pairing = shapes[n].pairing;
        cfg.dtype = dtype;
        char tag[48];
        snprintf(tag, sizeof tag, "%s head_dim=%u", dtype_name(dtype), cfg.head_dim);
        clpe_status st = CLPE_SUCCESS;
        clpe_rope *rope = clpe_rope_create_like(like, &cfg, &st);
        if (!rope) {
            fail(c, tag, clpe_status_string(st));
            continue;
        }
        for (int src = CLPE_POSITIONS_START; src <= CLPE_POSITIONS_IDS; ++src)
            check_rope(c, rope, &cfg, tag, shapes[n].pad, (clpe_position_source)src, seed);
        check_rope_cache(c, rope, &cfg, tag);
        clpe_rope_release(rope);
    }
}

/* Multimodal rotary: q (3 heads) and k (1 head) with a padding element
 * after each head, positions in a buffer exactly as large as the streams
 * need (stream-major, or token-major as the vision tower's), then the
 * cos/sin cache with padded rows. Three streams of 4, 6 and 10 pairs (one
 * float16 group and tails), and the vision tower's two ladders. */
static void check_mrope_one(ctx *c, clpe_rope *m, const clpe_mrope_config *cfg,
                            const char *tag, int token_major, uint64_t *seed)
{
    const clpe_dtype dtype = cfg->rope.dtype;
    const size_t esize = dtype_size(dtype), head_pitch = cfg->rope.head_dim + 1;
    const size_t qn = BATCH * SEQ * Q_HEADS * head_pitch, kn = BATCH * SEQ * K_HEADS * head_pitch;
    const size_t tokens = BATCH * SEQ, np = tokens * cfg->streams;
    unsigned char *q = malloc(qn * esize), *k = malloc(kn * esize);
    unsigned char *qwant = malloc(qn * esize), *kwant = malloc(kn * esize);
    int64_t *pos = malloc(np * sizeof *pos);
    if (!q || !k || !qwant || !kwant || !pos)
        exit(2);
    fill_values(q, dtype, qn, seed);
    fill_values(k, dtype, kn, seed);
    memcpy(qwant, q, qn * esize);
    memcpy(kwant, k, kn * esize);
    for (size_t j = 0; j < np; ++j)
        pos[j] = (int64_t)(next_random(seed) % 100000) - 50000;
    pos[0] = INT64_MAX; /* the phase's wrap */
    const clpe_position_source source =
        token_major ? CLPE_POSITIONS_STREAMS_TOKEN_FIRST : CLPE_POSITIONS_STREAMS;
    char what[96];
    snprintf(what, sizeof what, "%s mrope", tag);
    clpe_host_rope_tensor hq = {.data = qwant, .heads = Q_HEADS, .head_pitch = head_pitch};
    clpe_host_rope_tensor hk = {.data = kwant, .heads = K_HEADS, .head_pitch = head_pitch};
    expect_status(c, what, clpe_host_rope(m, BATCH, SEQ, &hq, &hk, source, 0, pos, 0));
    cl_mem qbuf = buffer_from(c, q, qn * esize), kbuf = buffer_from(c, k, kn * esize);
    cl_mem pbuf = buffer_from(c, pos, np * sizeof *pos);
    clpe_rope_tensor tq = {.buffer = qbuf, .heads = Q_HEADS, .head_pitch = head_pitch};
    clpe_rope_tensor tk = {.buffer = kbuf, .heads = K_HEADS, .head_pitch = head_pitch};
    clpe_positions dp = {.source = source, .buffer = pbuf};
    expect_status(c, what, clpe_enqueue_rope(m, c->queue, BATCH, SEQ, &tq, &tk, &dp, 0, 0, NULL,
                                             NULL));
    expect_buffer(c, what, qbuf, qwant, qn * esize, esize);
    expect_buffer(c, what, kbuf, kwant, kn * esize, esize);

    /* the cache of all tokens, rows padded */
    const size_t rotary = cfg->rope.rotary_dim ? cfg->rope.rotary_dim : cfg->rope.head_dim;
    const size_t pitch = rotary + PAD_EXTRA, bytes = tokens * pitch * esize;
    unsigned char *cw = malloc(bytes), *sw = malloc(bytes);
    if (!cw || !sw)
        exit(2);
    memset(cw, 0x5A, bytes);
    memset(sw, 0x5A, bytes);
    snprintf(what, sizeof what, "%s mrope cache", tag);
    expect_status(c, what, clpe_host_rope_cache_at(m, tokens, source, 0, pos, cw, sw, pitch));
    unsigned char *poison = malloc(bytes);
    if (!poison)
        exit(2);
    memset(poison, 0x5A, bytes);
    cl_mem cbuf = buffer_from(c, poison, bytes), sbuf = buffer_from(c, poison, bytes);
    clpe_tensor ct = {.buffer = cbuf, .row_pitch = pitch};
    clpe_tensor st = {.buffer = sbuf, .row_pitch = pitch};
    expect_status(c, what, clpe_enqueue_rope_cache_at(m, c->queue, tokens, &dp, &ct, &st, 0, NULL,
                                                      NULL));
    expect_buffer(c, what, cbuf, cw, bytes, esize);
    expect_buffer(c, what, sbuf, sw, bytes, esize);
    clReleaseMemObject(cbuf);
    clReleaseMemObject(sbuf);
    clReleaseMemObject(qbuf);
    clReleaseMemObject(kbuf);
    clReleaseMemObject(pbuf);
    free(poison);
    free(cw);
    free(sw);
    free(q);
    free(k);
    free(qwant);
    free(kwant);
    free(pos);
}

static void check_mrope(ctx *c, clpe_encoder *like, clpe_dtype dtype, uint64_t *seed)
{
    clpe_mrope_config text = {.rope = clpe_rope_config_default(40), .streams = 3,
                              .section = {4, 6, 10}};
    clpe_mrope_config vision = clpe_mrope_config_vision(16);
    vision.rope.pairing = CLPE_ROPE_INTERLEAVED;
    clpe_mrope_config *cfgs[2] = {&text, &vision};
    for (int n = 0; n < 2; ++n) {
        cfgs[n]->rope.dtype = dtype;
        char tag[48];
        snprintf(tag, sizeof tag, "%s %s", dtype_name(dtype), n ? "vision" : "text");
        clpe_status st = CLPE_SUCCESS;
        clpe_rope *m = clpe_rope_create_mrope_like(like, cfgs[n], &st);
        if (!m) {
            fail(c, tag, clpe_status_string(st));
            continue;
        }
        check_mrope_one(c, m, cfgs[n], tag, n == 1, seed);
        clpe_rope_release(m);
    }
}

static void check_pad_positions(ctx *c, clpe_encoder *enc)
{
    /* fairseq: padding_idx 1, so pad id 1, first position 2, pad position 1 */
    static const int32_t ids[BATCH * SEQ] = {1, 1, 5, 9, 1, 4, 1, 1, 1, 8};
    static const int64_t want[BATCH * SEQ] = {1, 1, 2, 3, 1, 2, 1, 1, 1, 3};
    cl_mem ibuf = buffer_from(c, ids, sizeof ids);
    int64_t poison[BATCH * SEQ];
    memset(poison, 0xA5, sizeof poison);
    cl_mem pbuf = buffer_from(c, poison, sizeof poison);
    clpe_token_ids it = {.buffer = ibuf};
    expect_status(c, "pad_positions",
                  clpe_enqueue_pad_positions(enc, c->queue, BATCH, SEQ, &it, 1, 2, 1, pbuf, 0, 0,
                                             NULL, NULL));
    expect_buffer(c, "pad_positions", pbuf, want, sizeof want, sizeof want[0]);
    clReleaseMemObject(pbuf);
    clReleaseMemObject(ibuf);
}

int main(void)
{
    ctx c;
    memset(&c, 0, sizeof c);
    cl_platform_id platform;
    clpe_status st = clpe_select_device(NULL, &platform, &c.device);
    if (st != CLPE_SUCCESS) {
        fprintf(stderr, "kernel_checks: no OpenCL device: %s\n", clpe_status_string(st));
        return 2;
    }
    cl_int err;
    c.context = clCreateContext(NULL, 1, &c.device, NULL, NULL, &err);
    if (err == CL_SUCCESS)
        c.queue = clCreateCommandQueue(c.context, c.device, 0, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "kernel_checks: cannot open the device (%d)\n", err);
        return 2;
    }

    /* d/2 = 5 (under one float16 group), 45 odd with the zero column and a
     * padding row (d/2 = 22: one group and a tail), d/2 = 32 interleaved
     * (two groups) and 16 split (one). */
    struct shape {
        uint32_t d;
        clpe_freq freq;
        clpe_layout layout;
        uint32_t flags;
    } shapes[] = {
        {10, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED, 0},
        {45, CLPE_FREQ_TENSOR2TENSOR, CLPE_LAYOUT_SPLIT,
         CLPE_FLAG_ODD_D_ZERO_COLUMN | CLPE_FLAG_PADDING_ROW},
        {64, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED, 0},
        {32, CLPE_FREQ_PAPER, CLPE_LAYOUT_SPLIT, 0},
    };
    uint64_t seed = 0x0C16A1D0u;
    clpe_encoder *first = NULL;
    for (int t = CLPE_DTYPE_F32; t <= CLPE_DTYPE_F64; ++t) {
        if (!clpe_device_supports_dtype(c.device, (clpe_dtype)t)) {
            printf("kernel_checks: %s skipped (the device lacks it)\n", dtype_name((clpe_dtype)t));
            continue;
        }
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; ++k) {
            clpe_config cfg = clpe_config_default(shapes[k].d);
            cfg.freq = shapes[k].freq;
            cfg.layout = shapes[k].layout;
            cfg.flags = shapes[k].flags;
            cfg.dtype = (clpe_dtype)t;
            cfg.scale = 1.5;
            cfg.padding_position = -1; /* a row of the START source below */
            /* one program build (slow under a simulator); the rest share it */
            clpe_encoder *enc = first ? clpe_encoder_create_like(first, &cfg, &st)
                                      : clpe_encoder_create(c.context, c.device, &cfg, NULL, &st);
            char tag[48];
            snprintf(tag, sizeof tag, "%s d=%u", dtype_name(cfg.dtype), cfg.d);
            if (!enc) {
                fail(&c, tag, clpe_status_string(st));
                continue;
            }
            check_table(&c, enc, &cfg, tag);
            for (int src = CLPE_POSITIONS_START; src <= CLPE_POSITIONS_IDS; ++src) {
                check_add(&c, enc, &cfg, tag, (clpe_position_source)src, 0, &seed);
                check_add(&c, enc, &cfg, tag, (clpe_position_source)src, 1, &seed);
                check_gather(&c, enc, &cfg, tag, (clpe_position_source)src, &seed);
            }
            if (!first)
                first = enc;
            else
                clpe_encoder_release(enc);
        }
        if (first)
            check_rotary(&c, first, (clpe_dtype)t, &seed);
        if (first)
            check_mrope(&c, first, (clpe_dtype)t, &seed);
    }
    clpe_launch_info info = {0};
    if (first) {
        /* the shape asked for through the environment must be the one in
         * effect, or this run checks another shape than its name says */
        expect_status(&c, "launch info", clpe_encoder_get_launch_info(first, &info));
        const char *pairs = getenv("CLPE_PAIRS_PER_ITEM");
        if (pairs && strtoul(pairs, NULL, 10) != info.pairs_per_item)
            fail(&c, "launch shape", "CLPE_PAIRS_PER_ITEM was not applied");
        const char *rows = getenv("CLPE_MAX_LAUNCH_ROWS");
        if (rows && strtoul(rows, NULL, 10) != info.max_launch_rows)
            fail(&c, "launch shape", "CLPE_MAX_LAUNCH_ROWS was not applied");
        check_pad_positions(&c, first);
        clpe_encoder_release(first);
    }
    clReleaseCommandQueue(c.queue);
    clReleaseContext(c.context);
    if (c.failures) {
        fprintf(stderr, "kernel_checks: %d of %d results differ\n", c.failures, c.runs);
        return 1;
    }
    char name[128] = "";
    clGetDeviceInfo(c.device, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
    printf("kernel_checks: %d results on '%s' (%u pairs per work-item, up to %zu rows and %zu "
           "sequences per launch), every bit as the host emulation\n",
           c.runs, name, info.pairs_per_item, info.max_launch_rows, info.max_launch_batch);
    return 0;
}
