/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_rope.c - the rotary paths of `clpe check`: clpe_enqueue_rope on
 * queries and keys with their own head counts, both pairings, partial
 * rotary, the [b,s,h,d] and [b,h,s,d] layouts, the three position sources
 * and the inverse flag, and clpe_enqueue_rope_cache. As for the other
 * paths, each buffer is filled (random values between the heads, poison
 * around the cache rows), read back whole and compared bit for bit with
 * the host emulation; float32 rotations with unscaled frequencies are also
 * sampled against the exact rotation (check_reference.c).
 */
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One rotation to check. */
typedef struct rope_case {
    clpe_rope_pairing pairing;
    uint32_t head_dim, rotary_dim;
    clpe_rope_scaling scaling;
    int heads_first;            /* [b,h,s,d] instead of [b,s,h,d] */
    size_t q_heads, k_heads;    /* k_heads 0: queries only */
    clpe_position_source source;
    uint32_t flags;
    /* multimodal cases: streams (0: one position per token), the pairs of
     * each, and one frequency ladder per stream (the vision tower) */
    uint32_t streams, section[CLPE_MROPE_MAX_STREAMS];
    int ladder_per_stream;
} rope_case;

/* Every row of the brief's matrix appears in the first four (a quick run
 * covers them all); the rest add the scalings and more widths. */
static const rope_case ROPE_CASES[] = {
    {CLPE_ROPE_HALF_SPLIT, 16, 16, CLPE_ROPE_DEFAULT, 0, 4, 2, CLPE_POSITIONS_IDS, 0, 0, {0}, 0},
    {CLPE_ROPE_INTERLEAVED, 12, 8, CLPE_ROPE_DEFAULT, 1, 2, 1, CLPE_POSITIONS_PER_SEQUENCE,
     CLPE_ROPE_INVERSE, 0, {0}, 0},
    {CLPE_ROPE_HALF_SPLIT, 10, 6, CLPE_ROPE_DEFAULT, 1, 3, 0, CLPE_POSITIONS_START,
     CLPE_ROPE_INVERSE, 0, {0}, 0},
    {CLPE_ROPE_INTERLEAVED, 8, 8, CLPE_ROPE_DEFAULT, 0, 1, 3, CLPE_POSITIONS_START, 0, 0, {0}, 0},
    {CLPE_ROPE_HALF_SPLIT, 64, 64, CLPE_ROPE_LINEAR, 0, 2, 1, CLPE_POSITIONS_IDS, 0, 0, {0}, 0},
    {CLPE_ROPE_INTERLEAVED, 32, 16, CLPE_ROPE_DYNAMIC, 1, 2, 2, CLPE_POSITIONS_IDS,
     CLPE_ROPE_INVERSE, 0, {0}, 0},
    {CLPE_ROPE_HALF_SPLIT, 64, 32, CLPE_ROPE_YARN, 0, 4, 1, CLPE_POSITIONS_PER_SEQUENCE, 0, 0,
     {0}, 0},
    {CLPE_ROPE_HALF_SPLIT, 128, 128, CLPE_ROPE_LLAMA3, 1, 2, 1, CLPE_POSITIONS_START, 0, 0, {0},
     0},
    {CLPE_ROPE_INTERLEAVED, 130, 96, CLPE_ROPE_DEFAULT, 0, 1, 1, CLPE_POSITIONS_IDS,
     CLPE_ROPE_INVERSE, 0, {0}, 0},
};
#define QUICK_ROPE_CASES 4

/* Multimodal rotary: Qwen2-VL's text sections (positions [3, batch, seq])
 * and its vision tower (a ladder per stream, positions [tokens, 2]), scaled
 * down; a quick run takes the first of each path. */
static const rope_case MROPE_CASES[] = {
    {CLPE_ROPE_HALF_SPLIT, 32, 32, CLPE_ROPE_DEFAULT, 0, 4, 2, CLPE_POSITIONS_STREAMS, 0, 3,
     {4, 6, 6}, 0},
    {CLPE_ROPE_HALF_SPLIT, 16, 16, CLPE_ROPE_DEFAULT, 0, 2, 2,
     CLPE_POSITIONS_STREAMS_TOKEN_FIRST, 0, 2, {4, 4}, 1},
    {CLPE_ROPE_INTERLEAVED, 24, 24, CLPE_ROPE_LINEAR, 1, 2, 1, CLPE_POSITIONS_STREAMS,
     CLPE_ROPE_INVERSE, 3, {2, 5, 5}, 0},
    {CLPE_ROPE_INTERLEAVED, 20, 20, CLPE_ROPE_DEFAULT, 1, 1, 1,
     CLPE_POSITIONS_STREAMS_TOKEN_FIRST, CLPE_ROPE_INVERSE, 2, {5, 5}, 1},
};
#define QUICK_MROPE_CASES 2

clpe_rope_config check_rope_config(uint32_t head_dim, uint32_t rotary_dim,
                                   clpe_rope_pairing pairing, clpe_rope_scaling scaling,
                                   int dtype)
{
    clpe_rope_config cfg = clpe_rope_config_default(head_dim);
    cfg.rotary_dim = rotary_dim;
    cfg.pairing = pairing;
    cfg.dtype = (clpe_dtype)dtype;
    cfg.scaling = scaling;
    switch (scaling) {
    case CLPE_ROPE_LINEAR: cfg.factor = 4; break;
    case CLPE_ROPE_DYNAMIC:
        cfg.factor = 2;
        cfg.original_max_position = 2048;
        cfg.seq_len = 100000;
        break;
    case CLPE_ROPE_YARN:
        cfg.factor = 4;
        cfg.original_max_position = 4096;
        break;
    case CLPE_ROPE_LLAMA3:
        cfg.base = 500000;
        cfg.factor = 8;
        cfg.original_max_position = 8192;
        cfg.low_freq_factor = 1;
        cfg.high_freq_factor = 4;
        break;
    default: break;
    }
    return cfg;
}

static clpe_rope_config case_config(const rope_case *c, int dtype)
{
    return check_rope_config(c->head_dim, c->rotary_dim, c->pairing, c->scaling, dtype);
}

void check_rope_label(const clpe_rope_config *cfg, char *out, size_t cap)
{
    if (cfg->rotary_dim == cfg->head_dim)
        snprintf(out, cap, "%s rope %s/%s head_dim=%u", cli_dtype_name(cfg->dtype),
                 cli_pairing_name(cfg->pairing), cli_scaling_name(cfg->scaling),
                 (unsigned)cfg->head_dim);
    else
        snprintf(out, cap, "%s rope %s/%s head_dim=%u rotary_dim=%u", cli_dtype_name(cfg->dtype),
                 cli_pairing_name(cfg->pairing), cli_scaling_name(cfg->scaling),
                 (unsigned)cfg->head_dim, (unsigned)cfg->rotary_dim);
}

static void rope_fail(check_tally *t, const clpe_rope_config *cfg, const char *what,
                      clpe_status st)
{
    if (t->error[0])
        return;
    char lab[96];
    check_rope_label(cfg, lab, sizeof lab);
    snprintf(t->error, sizeof t->error, "%s %s: %s (%d)", lab, what, clpe_status_string(st),
             (int)st);
}

/* Bit-for-bit comparison of count elements; the first difference is named
 * by its element index in the buffer. */
static void rope_compare(check_tally *t, const clpe_rope_config *cfg, const char *what,
                         const unsigned char *dev, const unsigned char *ref, size_t count,
                         size_t data_elements)
{
    const size_t esize = dtype_size(cfg->dtype);
    t->elements += data_elements;
    t->rope_elements += data_elements;
    if (memcmp(dev, ref, count * esize) == 0)
        return;
    for (size_t k = 0; k < count; ++k) {
        if (memcmp(dev + k * esize, ref + k * esize, esize) == 0)
            continue;
        ++t->rope_mismatches;
        if (t->mismatches++ == 0) {
            uint64_t a = 0, b = 0;
            memcpy(&a, dev + k * esize, esize); /* little-endian host, as elsewhere */
            memcpy(&b, ref + k * esize, esize);
            char lab[96];
            check_rope_label(cfg, lab, sizeof lab);
            snprintf(t->first_mismatch, sizeof t->first_mismatch,
                     "%s %s: buffer element %zu: device 0x%0*llx, host emulation 0x%0*llx", lab,
                     what, k, (int)(2 * esize), (unsigned long long)a, (int)(2 * esize),
                     (unsigned long long)b);
        }
    }
}

/* Pitches (elements) of one tensor of the case, with gaps between heads,
 * tokens and sequences, and the elements its buffer holds. */
typedef struct rope_layout {
    size_t heads, head_pitch, row_pitch, batch_pitch, count;
} rope_layout;

#define ROPE_OFFSET_EL 5 /* elements before [0][0][0][0] */

static rope_layout layout_for(const rope_case *c, size_t heads, size_t batch, size_t seq)
{
    rope_layout l = {.heads = heads};
    if (c->heads_first) {
        l.row_pitch = c->head_dim + 1;
        l.head_pitch = seq * l.row_pitch + 2;
        l.batch_pitch = heads * l.head_pitch + 3;
    } else {
        l.head_pitch = c->head_dim;
        l.row_pitch = heads * l.head_pitch + 2;
        l.batch_pitch = seq * l.row_pitch + 3;
    }
    l.count = ROPE_OFFSET_EL + batch * l.batch_pitch;
    return l;
}

/* Sample rotated pairs of the queries against the exact rotation. */
static void sample_rotation(check_checker *ck, check_tally *t, const rope_case *c,
                            const clpe_rope_config *cfg, const rope_layout *l,
                            const unsigned char *in, const unsigned char *out, size_t batch,
                            size_t seq, const int64_t *pos, int64_t start)
{
    clpe_config enc_cfg = clpe_config_default(cfg->rotary_dim);
    enc_cfg.base = cfg->base; /* w_i = base^(-2i/rotary_dim): the paper's frequencies */
    ref_encoding ref;
    ref_init(&ref, &enc_cfg);
    const uint32_t half = cfg->rotary_dim / 2;
    const float *x = (const float *)in + ROPE_OFFSET_EL, *y = (const float *)out + ROPE_OFFSET_EL;
    for (int s = 0; s < (ck->quick ? 8 : 32); ++s) {
        uint64_t r = splitmix64(&ck->rng);
        size_t b = r % batch, tok = (r >> 16) % seq, h = (r >> 32) % l->heads;
        uint32_t i = (uint32_t)((r >> 48) % half);
        uint32_t stream = 0;
        for (uint32_t j = 0, end = 0; c->streams && j < c->streams; ++j)
            if (i >= (end += c->section[j]))
                stream = j + 1;
        int64_t p = c->source == CLPE_POSITIONS_IDS ? pos[b * seq + tok]
                    : c->source == CLPE_POSITIONS_STREAMS
                        ? pos[(stream * batch + b) * seq + tok]
                    : c->source == CLPE_POSITIONS_STREAMS_TOKEN_FIRST
                        ? pos[(b * seq + tok) * c->streams + stream]
                    : c->source == CLPE_POSITIONS_PER_SEQUENCE
                        ? (int64_t)((uint64_t)pos[b] + tok)
                        : (int64_t)((uint64_t)start + tok);
        size_t base_el = b * l->batch_pitch + tok * l->row_pitch + h * l->head_pitch;
        size_t ia = cfg->pairing == CLPE_ROPE_INTERLEAVED ? 2 * i : i;
        size_t ib = cfg->pairing == CLPE_ROPE_INTERLEAVED ? 2 * i + 1 : i + half;
        ref_set_pair(&ref, i);
        ref_at(&ref, p);
        double ratio = check_rope_error_ratio(&ref, c->flags & CLPE_ROPE_INVERSE,
                                              x[base_el + ia], x[base_el + ib],
                                              y[base_el + ia], y[base_el + ib]);
        ++t->samples;
        ++t->rope_samples;
        if (!(ratio <= 1.0) && t->over_bound++ == 0) {
            char lab[96];
            check_rope_label(cfg, lab, sizeof lab);
            snprintf(t->first_over, sizeof t->first_over,
                     "%s position %lld pair %u: |error| %.3f x 2^-22 hypot(a, b)", lab,
                     (long long)p, (unsigned)i, ratio);
        }
        if (!(ratio <= t->rope_max_ratio))
            t->rope_max_ratio = isnan(ratio) ? INFINITY : ratio;
    }
    ref_clear(&ref);
}

/* One rotation: q and k filled at random, rotated on the device and by the
 * host emulation, both buffers compared whole. */
static void check_rope_case(check_checker *ck, check_tally *t, clpe_rope *rope,
                            const rope_case *c, const clpe_rope_config *cfg)
{
    const size_t batch = 2, seq = ck->quick ? 5 : 13;
    const size_t esize = dtype_size(cfg->dtype);
    const rope_layout lq = layout_for(c, c->q_heads, batch, seq);
    const rope_layout lk = layout_for(c, c->k_heads ? c->k_heads : 1, batch, seq);
    const size_t qbytes = lq.count * esize, kbytes = lk.count * esize;
    const size_t npos = c->streams                     ? c->streams * batch * seq
                        : c->source == CLPE_POSITIONS_IDS ? batch * seq
                                                          : batch;
    unsigned char *qin = malloc(qbytes), *qdev = malloc(qbytes), *qref = malloc(qbytes);
    unsigned char *kin = malloc(kbytes), *kdev = malloc(kbytes), *kref = malloc(kbytes);
    int64_t *pos = malloc(npos * sizeof *pos);
    cl_mem qbuf = NULL, kbuf = NULL, pbuf = NULL;
    cl_int err = CL_SUCCESS;
    int64_t start = 0;
    if (!qin || !qdev || !qref || !kin || !kdev || !kref || !pos) {
        snprintf(t->error, sizeof t->error, "out of host memory");
        goto done;
    }
    check_fill_random(cfg->dtype, qin, lq.count, &ck->rng);
    check_fill_random(cfg->dtype, kin, lk.count, &ck->rng);
    if (c->streams)
        for (size_t j = 0; j < npos; ++j)
            pos[j] = check_rand_position(&ck->rng);
    else
        check_make_positions(&ck->rng, c->source, batch, seq, pos, &start);
    memcpy(qref, qin, qbytes);
    memcpy(kref, kin, kbytes);
    clpe_host_rope_tensor hq = {.data = qref + ROPE_OFFSET_EL * esize, .heads = lq.heads,
                                .head_pitch = lq.head_pitch, .row_pitch = lq.row_pitch,
                                .batch_pitch = lq.batch_pitch};
    clpe_host_rope_tensor hk = {.data = kref + ROPE_OFFSET_EL * esize, .heads = lk.heads,
                                .head_pitch = lk.head_pitch, .row_pitch = lk.row_pitch,
                                .batch_pitch = lk.batch_pitch};
    clpe_status st = clpe_host_rope(rope, batch, seq, &hq, c->k_heads ? &hk : NULL, c->source,
                                    start, c->source == CLPE_POSITIONS_START ? NULL : pos,
                                    c->flags);
    if (st != CLPE_SUCCESS) {
        rope_fail(t, cfg, "clpe_host_rope", st);
        goto done;
    }
    qbuf = clCreateBuffer(ck->dev->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, qbytes,
                          qin, &err);
    if (qbuf)
        kbuf = clCreateBuffer(ck->dev->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              kbytes, kin, &err);
    if (kbuf && c->source != CLPE_POSITIONS_START)
        pbuf = clCreateBuffer(ck->dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              npos * sizeof *pos, pos, &err);
    if (!kbuf || (c->source != CLPE_POSITIONS_START && !pbuf)) {
        rope_fail(t, cfg, "clCreateBuffer", err);
        goto done;
    }
    clpe_rope_tensor qt = {.buffer = qbuf, .offset = ROPE_OFFSET_EL * esize, .heads = lq.heads,
                           .head_pitch = lq.head_pitch, .row_pitch = lq.row_pitch,
                           .batch_pitch = lq.batch_pitch};
    clpe_rope_tensor kt = {.buffer = kbuf, .offset = ROPE_OFFSET_EL * esize, .heads = lk.heads,
                           .head_pitch = lk.head_pitch, .row_pitch = lk.row_pitch,
                           .batch_pitch = lk.batch_pitch};
    clpe_positions positions = {.source = c->source, .start = start, .buffer = pbuf};
    st = clpe_enqueue_rope(rope, ck->dev->queue, batch, seq, &qt, c->k_heads ? &kt : NULL,
                           &positions, c->flags, 0, NULL, NULL);
    if (st == CLPE_SUCCESS)
        st = clEnqueueReadBuffer(ck->dev->queue, qbuf, CL_TRUE, 0, qbytes, qdev, 0, NULL, NULL);
    if (st == CLPE_SUCCESS)
        st = clEnqueueReadBuffer(ck->dev->queue, kbuf, CL_TRUE, 0, kbytes, kdev, 0, NULL, NULL);
    if (st != CLPE_SUCCESS) {
        rope_fail(t, cfg, "rope", st);
        goto done;
    }
    if (ck->corrupt_rope_pending) {
        ck->corrupt_rope_pending = 0;
        qdev[ROPE_OFFSET_EL * esize] ^= 1; /* the lowest bit of the first query element */
    }
    static const char *const src_name[] = {"start", "per-sequence", "ids", "streams",
                                           "streams token-first"};
    char what[96];
    snprintf(what, sizeof what, "rope q (%zu heads, %s) positions=%s%s", lq.heads,
             c->heads_first ? "[b,h,s,d]" : "[b,s,h,d]", src_name[c->source],
             c->flags & CLPE_ROPE_INVERSE ? " inverse" : "");
    rope_compare(t, cfg, what, qdev, qref, lq.count, batch * seq * lq.heads * c->head_dim);
    snprintf(what, sizeof what, "rope k (%zu heads%s)", c->k_heads,
             c->k_heads ? "" : ": absent, must stay as it was");
    rope_compare(t, cfg, what, kdev, kref, lk.count,
                 c->k_heads ? batch * seq * lk.heads * c->head_dim : 0);
    /* MPFR's frequencies are the paper's ladder over rotary_dim: one ladder */
    if (cfg->dtype == CLPE_DTYPE_F32 && cfg->scaling == CLPE_ROPE_DEFAULT &&
        !c->ladder_per_stream)
        sample_rotation(ck, t, c, cfg, &lq, qin, qdev, batch, seq, pos, start);
done:
    if (qbuf) clReleaseMemObject(qbuf);
    if (kbuf) clReleaseMemObject(kbuf);
    if (pbuf) clReleaseMemObject(pbuf);
    free(qin); free(qdev); free(qref);
    free(kin); free(kdev); free(kref);
    free(pos);
}

/* The cos/sin cache of n rows from a random start, rows apart by a poisoned
 * gap, compared whole with clpe_host_rope_cache. */
static void check_rope_cache_case(check_checker *ck, check_tally *t, clpe_rope *rope,
                                  const rope_case *c, const clpe_rope_config *cfg)
{
    const size_t n = ck->quick ? 7 : 29, gap = 3, offset_el = 2;
    const size_t esize = dtype_size(cfg->dtype), pitch = cfg->rotary_dim + gap;
    const size_t count = offset_el + n * pitch, bytes = count * esize;
    unsigned char *cdev = malloc(bytes), *sdev = malloc(bytes);
    unsigned char *cref = malloc(bytes), *sref = malloc(bytes);
    cl_mem cbuf = NULL, sbuf = NULL, pbuf = NULL;
    cl_int err = CL_SUCCESS;
    /* a multimodal cache reads its stream positions; any other, a start */
    const size_t npos = c->streams ? c->streams * n : 1;
    int64_t *pos = malloc(npos * sizeof *pos);
    if (!cdev || !sdev || !cref || !sref || !pos) {
        snprintf(t->error, sizeof t->error, "out of host memory");
        goto done;
    }
    const int64_t last_start = INT64_MAX - (int64_t)n + 1;
    int64_t start = check_rand_position(&ck->rng);
    if (start > last_start)
        start = last_start;
    for (size_t j = 0; j < npos; ++j)
        pos[j] = check_rand_position(&ck->rng);
    const clpe_position_source source = c->streams ? c->source : CLPE_POSITIONS_START;
    memset(cdev, CHECK_POISON, bytes);
    memset(cref, CHECK_POISON, bytes);
    memset(sref, CHECK_POISON, bytes);
    cbuf = clCreateBuffer(ck->dev->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                          cdev, &err);
    if (cbuf)
        sbuf = clCreateBuffer(ck->dev->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                              cdev, &err);
    if (sbuf && c->streams)
        pbuf = clCreateBuffer(ck->dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              npos * sizeof *pos, pos, &err);
    if (!sbuf || (c->streams && !pbuf)) {
        rope_fail(t, cfg, "clCreateBuffer", err);
        goto done;
    }
    clpe_status st = clpe_host_rope_cache_at(rope, n, source, start, c->streams ? pos : NULL,
                                             cref + offset_el * esize, sref + offset_el * esize,
                                             pitch);
    if (st != CLPE_SUCCESS) {
        rope_fail(t, cfg, "clpe_host_rope_cache", st);
        goto done;
    }
    clpe_tensor ct = {.buffer = cbuf, .offset = offset_el * esize, .row_pitch = pitch};
    clpe_tensor stt = {.buffer = sbuf, .offset = offset_el * esize, .row_pitch = pitch};
    clpe_positions positions = {.source = source, .start = start, .buffer = pbuf};
    st = clpe_enqueue_rope_cache_at(rope, ck->dev->queue, n, &positions, &ct, &stt, 0, NULL,
                                    NULL);
    if (st == CLPE_SUCCESS)
        st = clEnqueueReadBuffer(ck->dev->queue, cbuf, CL_TRUE, 0, bytes, cdev, 0, NULL, NULL);
    if (st == CLPE_SUCCESS)
        st = clEnqueueReadBuffer(ck->dev->queue, sbuf, CL_TRUE, 0, bytes, sdev, 0, NULL, NULL);
    if (st != CLPE_SUCCESS) {
        rope_fail(t, cfg, "rope_cache", st);
        goto done;
    }
    char what[96];
    const char *at = c->streams ? "positions per stream" : "start";
    snprintf(what, sizeof what, "rope_cache cos %s=%lld", at, (long long)start);
    rope_compare(t, cfg, what, cdev, cref, count, n * cfg->rotary_dim);
    snprintf(what, sizeof what, "rope_cache sin %s=%lld", at, (long long)start);
    rope_compare(t, cfg, what, sdev, sref, count, n * cfg->rotary_dim);
done:
    if (cbuf) clReleaseMemObject(cbuf);
    if (sbuf) clReleaseMemObject(sbuf);
    if (pbuf) clReleaseMemObject(pbuf);
    free(cdev); free(sdev); free(cref); free(sref);
    free(pos);
}

/* The object of a case: plain, or multimodal with its sections. */
static clpe_rope *case_object(check_checker *ck, clpe_encoder *like, const rope_case *c,
                              const clpe_rope_config *cfg, clpe_status *st)
{
    char log[4096];
    clpe_build_log bl = {log, sizeof log, 0};
    if (!c->streams)
        return like ? clpe_rope_create_like(like, cfg, st)
                    : clpe_rope_create(ck->dev->context, ck->dev->device, cfg, &bl, st);
    clpe_mrope_config m = {.rope = *cfg, .streams = c->streams,
                           .ladder = c->ladder_per_stream ? CLPE_MROPE_LADDER_PER_STREAM
                                                          : CLPE_MROPE_ONE_LADDER};
    memcpy(m.section, c->section, sizeof m.section);
    return like ? clpe_rope_create_mrope_like(like, &m, st)
                : clpe_rope_create_mrope(ck->dev->context, ck->dev->device, &m, &bl, st);
}

/* Each case's rotation and cache, credited to the case's two paths. */
static void check_cases(check_checker *ck, check_tally *t, clpe_encoder *like, int dtype,
                        const rope_case *cases, size_t ncases, check_path rotation,
                        check_path cache)
{
    for (size_t k = 0; k < ncases && !t->error[0]; ++k) {
        const rope_case *c = &cases[k];
        if (!check_selected(ck, rotation) && !check_selected(ck, cache))
            return;
        clpe_rope_config cfg = case_config(c, dtype);
        clpe_status st = CLPE_SUCCESS;
        clpe_rope *rope = case_object(ck, like, c, &cfg, &st);
        if (!rope) {
            rope_fail(t, &cfg, "create", st);
            return;
        }
        CHECK_RUN(ck, t, rotation, check_rope_case(ck, t, rope, c, &cfg));
        CHECK_RUN(ck, t, cache, check_rope_cache_case(ck, t, rope, c, &cfg));
        ++t->configurations;
        clpe_rope_release(rope);
    }
}

void check_rope(check_checker *ck, check_tally *t, clpe_encoder *like, int dtype)
{
    const size_t ncases = ck->quick ? QUICK_ROPE_CASES : sizeof ROPE_CASES / sizeof ROPE_CASES[0];
    check_cases(ck, t, like, dtype, ROPE_CASES, ncases, CHECK_PATH_ROPE, CHECK_PATH_ROPE_CACHE);
    /* text sections, then the vision tower: every other case */
    const size_t nm = ck->quick ? QUICK_MROPE_CASES : sizeof MROPE_CASES / sizeof MROPE_CASES[0];
    rope_case text[4], vision[4];
    size_t nt = 0, nv = 0;
    for (size_t k = 0; k < nm; ++k) {
        if (MROPE_CASES[k].ladder_per_stream)
            vision[nv++] = MROPE_CASES[k];
        else
            text[nt++] = MROPE_CASES[k];
    }
    check_cases(ck, t, like, dtype, text, nt, CHECK_PATH_MROPE, CHECK_PATH_MROPE_CACHE);
    check_cases(ck, t, like, dtype, vision, nv, CHECK_PATH_VISION, CHECK_PATH_VISION_CACHE);
}
