/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_mrope.c - multimodal rotary (M-RoPE) and vision rotary: every device
 * result equals the host emulation bit for bit (every dtype, both pairings,
 * both ladders, both position layouts, partial rotary, grouped queries, the
 * inverse, split launches, the cos/sin cache); with one position in every
 * stream it is clpe_enqueue_rope's result; the float32 result is within
 * 2^-22 * m * hypot(a, b) of the exact rotation (the MPFR reference of
 * reference/); every bad argument gets its status and writes nothing.
 */
#include "sha256.h"
#include "support.h"

#include "reference/reference.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static test_cl cl;
static void setup(void) { test_cl_open(&cl); }
static void teardown(void) { test_cl_close(&cl); }
TestSuite(mrope, .init = setup, .fini = teardown);

static const clpe_dtype all_dtypes[] = {CLPE_DTYPE_F32, CLPE_DTYPE_F16, CLPE_DTYPE_BF16,
                                        CLPE_DTYPE_F64};

static size_t esize(clpe_dtype t)
{
    return t == CLPE_DTYPE_F64 ? 8 : t == CLPE_DTYPE_F32 ? 4 : 2;
}

/* Random values in [-2, 2) stored in dtype t (as test_rope.c fills them). */
static void fill_random(clpe_dtype t, void *data, size_t count, uint64_t *rng)
{
    for (size_t k = 0; k < count; ++k) {
        double v = (double)(test_rand_u64(rng) >> 11) * 0x1p-53 * 4.0 - 2.0;
        switch (t) {
        case CLPE_DTYPE_FP8_E4M3: /* cache types only: no activations */
        case CLPE_DTYPE_FP8_E5M2: break;
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
            ((uint16_t *)data)[k] =
                (uint16_t)((test_rand_u64(rng) & 0x83FFu) | (14u + k % 3) << 10);
            break;
        }
    }
}

static clpe_rope *make_mrope(const clpe_mrope_config *cfg)
{
    clpe_status st = CLPE_SUCCESS;
    char text[8192];
    clpe_build_log log = {.buffer = text, .capacity = sizeof text};
    clpe_rope *m = clpe_rope_create_mrope(cl.context, cl.device, cfg, &log, &st);
    cr_assert_not_null(m, "clpe_mrope_create: %d %s\n%s", st, clpe_status_string(st), text);
    return m;
}

/* Qwen2-VL's text configuration, scaled to head_dim: three streams. */
static clpe_mrope_config text_config(clpe_dtype dtype, clpe_rope_pairing pairing,
                                     uint32_t head_dim, uint32_t rotary_dim, uint32_t s0,
                                     uint32_t s1)
{
    clpe_mrope_config cfg = {.rope = clpe_rope_config_default(head_dim), .streams = 3};
    cfg.rope.rotary_dim = rotary_dim;
    cfg.rope.base = 1000000.0;
    cfg.rope.dtype = dtype;
    cfg.rope.pairing = pairing;
    uint32_t n = (rotary_dim ? rotary_dim : head_dim) / 2;
    cfg.section[0] = s0;
    cfg.section[1] = s1;
    cfg.section[2] = n - s0 - s1;
    return cfg;
}

/* One case: q and k rotated on the device and on the host; every byte must
 * agree, the padding between heads included. */
typedef struct mrope_case {
    size_t batch, seq, hq, hk;
    bool heads_outer;       /* [batch, heads, seq, d] */
    size_t pad;             /* extra elements after each head */
    bool token_major;       /* positions [tokens, streams] (the vision layout) */
    int64_t around;         /* positions lie around this value */
    uint32_t flags;
} mrope_case;

static void run_case(const clpe_mrope_config *cfg, const mrope_case *c, uint64_t seed)
{
    if (!clpe_device_supports_dtype(cl.device, cfg->rope.dtype))
        return;
    clpe_rope *m = make_mrope(cfg);
    clpe_rope *host = clpe_rope_create_mrope_host(cfg, NULL);
    cr_assert_not_null(host);
    clpe_dtype dt = cfg->rope.dtype;
    size_t head_dim = cfg->rope.head_dim, es = esize(dt), hp = head_dim + c->pad;
    uint64_t rng = seed;
    size_t sizes[2] = {c->hq, c->hk};
    void *host_data[2];
    cl_mem bufs[2] = {NULL, NULL};
    clpe_rope_tensor dtn[2];
    clpe_host_rope_tensor ht[2];
    int tensors = c->hk ? 2 : 1;
    for (int j = 0; j < tensors; ++j) {
        size_t heads = sizes[j], count = c->batch * c->seq * heads * hp;
        host_data[j] = malloc(count * es);
        fill_random(dt, host_data[j], count, &rng);
        bufs[j] = test_buffer_from(&cl, host_data[j], count * es);
        size_t head_pitch = c->heads_outer ? c->seq * hp : hp;
        size_t row_pitch = c->heads_outer ? hp : heads * hp;
        size_t batch_pitch = c->seq * heads * hp;
        dtn[j] = (clpe_rope_tensor){.buffer = bufs[j], .heads = heads, .head_pitch = head_pitch,
                                    .row_pitch = row_pitch, .batch_pitch = batch_pitch};
        ht[j] = (clpe_host_rope_tensor){.data = host_data[j], .heads = heads,
                                        .head_pitch = head_pitch, .row_pitch = row_pitch,
                                        .batch_pitch = batch_pitch};
    }
    size_t tokens = c->batch * c->seq, streams = cfg->streams;
    int64_t *positions = malloc(tokens * streams * sizeof *positions);
    for (size_t k = 0; k < tokens * streams; ++k)
        positions[k] = (int64_t)((uint64_t)c->around + test_rand_u64(&rng) % 200001 - 100000);
    /* one element of padding before the positions: offsets are honoured */
    int64_t *padded = malloc((tokens * streams + 1) * sizeof *padded);
    padded[0] = 0x5A5A5A5A;
    memcpy(padded + 1, positions, tokens * streams * sizeof *positions);
    cl_mem pbuf = test_buffer_from(&cl, padded, (tokens * streams + 1) * sizeof *padded);
    clpe_position_source source =
        c->token_major ? CLPE_POSITIONS_STREAMS_TOKEN_FIRST : CLPE_POSITIONS_STREAMS;
    clpe_positions pos = {.source = source, .buffer = pbuf, .offset = 8};
    cl_event done = NULL;
    clpe_status st = clpe_enqueue_rope(m, cl.queue, c->batch, c->seq, &dtn[0],
                                        c->hk ? &dtn[1] : NULL, &pos, c->flags, 0, NULL, &done);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_enqueue_mrope: %d", st);
    test_event_finish(done);
    st = clpe_host_rope(host, c->batch, c->seq, &ht[0], c->hk ? &ht[1] : NULL, source, 0,
                        positions, c->flags);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_host_rope: %d", st);
    for (int j = 0; j < tensors; ++j) {
        size_t bytes = c->batch * c->seq * sizes[j] * hp * es;
        unsigned char *dev = test_buffer_read(&cl, bufs[j], bytes);
        size_t first = bytes;
        for (size_t k = 0; k < bytes && first == bytes; ++k)
            if (dev[k] != ((unsigned char *)host_data[j])[k])
                first = k;
        cr_assert_eq(first, bytes,
                     "%s differs from the host at byte %zu (dtype %d pairing %d head_dim %zu "
                     "ladder %d streams %zu layout %s flags %u)",
                     j ? "k" : "q", first, dt, cfg->rope.pairing, head_dim, cfg->ladder, streams,
                     c->heads_outer ? "bhsd" : "bshd", c->flags);
        free(dev);
        free(host_data[j]);
        clReleaseMemObject(bufs[j]);
    }
    clReleaseMemObject(pbuf);
    free(padded);
    free(positions);
    clpe_rope_release(host);
    clpe_rope_release(m);
}

Test(mrope, device_equals_host_for_every_dtype_pairing_and_ladder)
{
    uint64_t seed = 1;
    for (int t = 0; t < 4; ++t)
        for (int pairing = 0; pairing < 2; ++pairing) {
            clpe_rope_pairing pr = (clpe_rope_pairing)pairing;
            /* head_dim 88: 44 pairs in sections 8, 18, 18 (the float16 path
             * and its tail); GQA, [batch, seq, heads, d] */
            clpe_mrope_config a = text_config(all_dtypes[t], pr, 88, 0, 8, 18);
            mrope_case ca = {2, 37, 4, 2, false, 0, false, 1000003, 0};
            run_case(&a, &ca, seed++);
            /* partial rotary 32 of 40, [batch, heads, seq, d], padded heads,
             * the inverse, positions around 0 (negative ones included) */
            clpe_mrope_config b = text_config(all_dtypes[t], pr, 40, 32, 4, 6);
            mrope_case cb = {3, 19, 3, 1, true, 5, false, 0, CLPE_ROPE_INVERSE};
            run_case(&b, &cb, seed++);
            /* the vision tower: head_dim 80, two ladders of 20 pairs,
             * positions [patches, 2]; queries only */
            clpe_mrope_config v = clpe_mrope_config_vision(80);
            v.rope.dtype = all_dtypes[t];
            v.rope.pairing = pr;
            mrope_case cv = {1, 53, 2, 0, false, 0, true, 30, 0};
            run_case(&v, &cv, seed++);
            /* four streams, one of them empty, near the end of int64 */
            clpe_mrope_config f = {.rope = clpe_rope_config_default(24), .streams = 4,
                                   .section = {3, 0, 5, 4}};
            f.rope.dtype = all_dtypes[t];
            f.rope.pairing = pr;
            mrope_case cf = {2, 9, 1, 1, false, 0, false, INT64_MAX - 5, 0};
            run_case(&f, &cf, seed++);
        }
}

Test(mrope, every_scaling_of_one_ladder_matches_the_host)
{
    static const double long_factor[8] = {1, 1.5, 2, 3, 4, 6, 8, 12};
    static const double short_factor[8] = {1, 1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6};
    uint64_t seed = 100;
    for (int scaling = CLPE_ROPE_DEFAULT; scaling <= CLPE_ROPE_LONGROPE; ++scaling) {
        clpe_mrope_config cfg = text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 2, 3);
        cfg.rope.scaling = (clpe_rope_scaling)scaling;
        cfg.rope.factor = 4;
        cfg.rope.original_max_position = 256;
        cfg.rope.low_freq_factor = 1;
        cfg.rope.high_freq_factor = 4;
        cfg.rope.seq_len = 2048;
        cfg.rope.short_factor = short_factor;
        cfg.rope.long_factor = long_factor;
        mrope_case c = {2, 21, 2, 1, false, 0, false, 3000, 0};
        run_case(&cfg, &c, seed++);
    }
}

Test(mrope, split_launches_equal_one_launch)
{
    setenv("CLPE_MAX_LAUNCH_ROWS", "5", 1);
    setenv("CLPE_MAX_LAUNCH_BATCH", "2", 1);
    clpe_mrope_config a = text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 64, 0, 8, 12);
    mrope_case ca = {3, 23, 2, 1, false, 0, false, 99, 0};
    run_case(&a, &ca, 21);
    clpe_mrope_config b = clpe_mrope_config_vision(48);
    b.rope.dtype = CLPE_DTYPE_BF16;
    mrope_case cb = {5, 12, 1, 2, true, 3, true, 500, 0};
    run_case(&b, &cb, 22);
    unsetenv("CLPE_MAX_LAUNCH_ROWS");
    unsetenv("CLPE_MAX_LAUNCH_BATCH");
}

/* With the same position in every stream, M-RoPE of one ladder is plain
 * rotary: the bits of clpe_enqueue_rope (a text-only prompt in Qwen2-VL). */
Test(mrope, one_position_in_every_stream_is_plain_rope)
{
    for (int t = 0; t < 4; ++t) {
        clpe_dtype dt = all_dtypes[t];
        if (!clpe_device_supports_dtype(cl.device, dt))
            continue;
        clpe_mrope_config cfg = text_config(dt, (clpe_rope_pairing)(t % 2), 64, 0, 8, 12);
        clpe_rope *m = make_mrope(&cfg);
        clpe_status st;
        clpe_rope *rope = clpe_rope_create(cl.context, cl.device, &cfg.rope, NULL, &st);
        cr_assert_not_null(rope);
        const size_t batch = 2, seq = 33, heads = 3, es = esize(dt);
        size_t count = batch * seq * heads * 64, bytes = count * es;
        void *x = malloc(bytes);
        uint64_t rng = 5 + (uint64_t)t;
        fill_random(dt, x, count, &rng);
        int64_t ids[2 * 33], streams[3 * 2 * 33];
        for (size_t k = 0; k < batch * seq; ++k) {
            ids[k] = (int64_t)(test_rand_u64(&rng) % 100000) - 1000;
            for (int j = 0; j < 3; ++j)
                streams[j * batch * seq + k] = ids[k];
        }
        cl_mem a = test_buffer_from(&cl, x, bytes), b = test_buffer_from(&cl, x, bytes);
        cl_mem pids = test_buffer_from(&cl, ids, sizeof ids);
        cl_mem pstreams = test_buffer_from(&cl, streams, sizeof streams);
        clpe_rope_tensor ta = {.buffer = a, .heads = heads}, tb = {.buffer = b, .heads = heads};
        clpe_positions p1 = {.source = CLPE_POSITIONS_IDS, .buffer = pids};
        clpe_positions p3 = {.source = CLPE_POSITIONS_STREAMS, .buffer = pstreams};
        cr_assert_eq(
            clpe_enqueue_rope(rope, cl.queue, batch, seq, &ta, NULL, &p1, 0, 0, NULL, NULL),
            CLPE_SUCCESS);
        cr_assert_eq(clpe_enqueue_rope(m, cl.queue, batch, seq, &tb, NULL, &p3, 0, 0, NULL, NULL),
                     CLPE_SUCCESS);
        void *ra = test_buffer_read(&cl, a, bytes), *rb = test_buffer_read(&cl, b, bytes);
        cr_assert_eq(memcmp(ra, rb, bytes), 0, "dtype %d: M-RoPE differs from rope", dt);
        cr_assert_neq(memcmp(ra, x, bytes), 0, "nothing rotated");
        free(ra);
        free(rb);
        free(x);
        clReleaseMemObject(a);
        clReleaseMemObject(b);
        clReleaseMemObject(pids);
        clReleaseMemObject(pstreams);
        clpe_rope_release(rope);
        clpe_rope_release(m);
    }
}

/* The float32 rotation of every pair within 2^-22 * m * hypot(a, b) of the
 * exact one: w from the MPFR reference (reference/: mpfr_pow of the
 * paper's frequencies for width d, here the ladder's 2 * pairs), the
 * rotation of the two doubles at 200 bits. */
static void check_exact(const clpe_mrope_config *cfg, const int64_t *stream_pos, double *worst)
{
    clpe_rope *host = clpe_rope_create_mrope_host(cfg, NULL);
    cr_assert_not_null(host);
    uint32_t n = cfg->rope.head_dim / 2;
    float q[256], in[256];
    uint64_t rng = 77;
    fill_random(CLPE_DTYPE_F32, in, 2 * n, &rng);
    memcpy(q, in, 2 * n * sizeof *q);
    clpe_host_rope_tensor t = {.data = q, .heads = 1};
    const int64_t *hp = stream_pos;
    cr_assert_eq(clpe_host_rope(host, 1, 1, &t, NULL, CLPE_POSITIONS_STREAMS, 0, hp, 0), CLPE_SUCCESS);
    mpfr_t x, y;
    mpfr_inits2(200, x, y, (mpfr_ptr)0);
    uint32_t first = 0;
    for (uint32_t j = 0; j < cfg->streams; ++j) {
        uint32_t count = cfg->section[j];
        /* the ladder: all pairs (one ladder) or the stream's section */
        uint32_t ladder = cfg->ladder == CLPE_MROPE_ONE_LADDER ? n : count;
        clpe_config rc = clpe_config_default(2 * ladder);
        rc.base = cfg->rope.base;
        ref_encoding ref;
        ref_init(&ref, &rc);
        for (uint32_t i = first; i < first + count; ++i) {
            ref_set_pair(&ref, cfg->ladder == CLPE_MROPE_ONE_LADDER ? i : i - first);
            ref_at(&ref, stream_pos[j]);
            double a = in[i], b = in[i + n];
            mpfr_set_d(x, ref_cos(&ref), MPFR_RNDN);
            mpfr_mul_d(x, x, a, MPFR_RNDN);
            mpfr_set_d(y, ref_sin(&ref), MPFR_RNDN);
            mpfr_mul_d(y, y, b, MPFR_RNDN);
            mpfr_sub(x, x, y, MPFR_RNDN);
            double ra = mpfr_get_d(x, MPFR_RNDN);
            mpfr_set_d(x, ref_sin(&ref), MPFR_RNDN);
            mpfr_mul_d(x, x, a, MPFR_RNDN);
            mpfr_set_d(y, ref_cos(&ref), MPFR_RNDN);
            mpfr_mul_d(y, y, b, MPFR_RNDN);
            mpfr_add(x, x, y, MPFR_RNDN);
            double rb = mpfr_get_d(x, MPFR_RNDN);
            double bound = ldexp(1.0, -22) * hypot(a, b);
            double err = fmax(fabs(q[i] - ra), fabs(q[i + n] - rb));
            cr_assert_leq(err, bound, "stream %u pair %u at %lld: error %.3g > bound %.3g", j, i,
                          (long long)stream_pos[j], err, bound);
            if (bound > 0 && err / bound > *worst)
                *worst = err / bound;
        }
        ref_clear(&ref);
        first += count;
    }
    mpfr_clears(x, y, (mpfr_ptr)0);
    clpe_rope_release(host);
}

Test(mrope, float32_within_2_pow_minus_22_of_the_exact_rotation)
{
    const int64_t positions[][3] = {{0, 0, 0},           {5, 17, 40},
                                    {4095, 4000, 4090},  {131071, 7, 1048575},
                                    {16777217, 1, 2},    {(int64_t)1 << 40, -3, 77},
                                    {INT64_MAX, INT64_MIN, -123456789}};
    double worst = 0;
    clpe_mrope_config text = text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 128, 0, 16, 24);
    clpe_mrope_config vision = clpe_mrope_config_vision(80);
    for (size_t k = 0; k < sizeof positions / sizeof positions[0]; ++k) {
        check_exact(&text, positions[k], &worst);
        check_exact(&vision, positions[k], &worst);
    }
    printf("mrope f32: worst error = %.3f x 2^-22 hypot(a, b)\n", worst);
    mpfr_free_cache();
}

Test(mrope, cache_equals_host_and_follows_the_sections)
{
    for (int t = 0; t < 4; ++t) {
        clpe_dtype dt = all_dtypes[t];
        if (!clpe_device_supports_dtype(cl.device, dt))
            continue;
        clpe_mrope_config cfg = text_config(dt, (clpe_rope_pairing)(t % 2), 64, 48, 4, 10);
        clpe_rope *m = make_mrope(&cfg);
        const size_t n = 41, pitch = 52, es = esize(dt), bytes = n * pitch * es;
        int64_t pos[3 * 41];
        uint64_t rng = 9;
        for (size_t k = 0; k < 3 * n; ++k)
            pos[k] = (int64_t)(test_rand_u64(&rng) % 5000) - 100;
        cl_mem pb = test_buffer_from(&cl, pos, sizeof pos);
        cl_mem cb = test_buffer_poisoned(&cl, bytes, 0x5A);
        cl_mem sb = test_buffer_poisoned(&cl, bytes, 0x5A);
        clpe_tensor ct = {.buffer = cb, .row_pitch = pitch};
        clpe_tensor stt = {.buffer = sb, .row_pitch = pitch};
        clpe_positions p = {.source = CLPE_POSITIONS_STREAMS, .buffer = pb};
        cr_assert_eq(clpe_enqueue_rope_cache_at(m, cl.queue, n, &p, &ct, &stt, 0, NULL, NULL),
                     CLPE_SUCCESS);
        unsigned char *hc = malloc(bytes), *hs = malloc(bytes);
        memset(hc, 0x5A, bytes);
        memset(hs, 0x5A, bytes);
        const int64_t *hp = pos;
        cr_assert_eq(clpe_host_rope_cache_at(m, n, CLPE_POSITIONS_STREAMS, 0, hp, hc, hs, pitch), CLPE_SUCCESS);
        unsigned char *dc = test_buffer_read(&cl, cb, bytes);
        unsigned char *ds = test_buffer_read(&cl, sb, bytes);
        cr_assert_eq(memcmp(dc, hc, bytes), 0, "dtype %d: cos cache differs from the host", dt);
        cr_assert_eq(memcmp(ds, hs, bytes), 0, "dtype %d: sin cache differs from the host", dt);
        free(hc);
        free(hs);
        free(dc);
        free(ds);
        clReleaseMemObject(pb);
        clReleaseMemObject(cb);
        clReleaseMemObject(sb);
        clpe_rope_release(m);
    }
    /* float32 and the sections: a row whose streams sit at (0, p, 0) has
     * cos 1 in the temporal and width pairs and not in the height pairs */
    clpe_mrope_config cfg = text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 2, 3);
    clpe_rope *host = clpe_rope_create_mrope_host(&cfg, NULL);
    int64_t pos[3] = {0, 1, 0};
    float c[16], s[16];
    const int64_t *hp = pos;
    cr_assert_eq(clpe_host_rope_cache_at(host, 1, CLPE_POSITIONS_STREAMS, 0, hp, c, s, 0), CLPE_SUCCESS);
    for (int i = 0; i < 8; ++i) {
        bool height = i >= 2 && i < 5;
        cr_assert_eq(c[i] == 1.0f, !height, "pair %d: cos %g", i, c[i]);
        cr_assert_eq(c[i], c[i + 8]);
        cr_assert_eq(s[i], s[i + 8]);
    }
    clpe_rope_release(host);
}

Test(mrope, frequencies_and_streams_of_each_ladder)
{
    clpe_mrope_config v = clpe_mrope_config_vision(80);
    clpe_rope *m = clpe_rope_create_mrope_host(&v, NULL);
    cr_assert_not_null(m);
    double w[40], amp = 0;
    uint32_t stream[40];
    uint32_t streams = 0;
    cr_assert_eq(clpe_rope_get_frequencies(m, w, 40, &amp), CLPE_SUCCESS);
    cr_assert_eq(clpe_rope_get_streams(m, stream, 40, &streams), CLPE_SUCCESS);
    cr_assert_eq(streams, 2u);
    cr_assert_eq(amp, 1.0);
    for (int j = 0; j < 20; ++j) {
        /* VisionRotaryEmbedding(40): 1 / 10000^(2j/40), for both halves */
        double want = pow(10000.0, -2.0 * j / 40.0);
        cr_assert_leq(fabs(w[j] - want), 1e-15 * want, "pair %d: %.17g", j, w[j]);
        cr_assert_eq(w[j], w[j + 20]);
        cr_assert_eq(stream[j], 0u);
        cr_assert_eq(stream[j + 20], 1u);
    }
    cr_assert_eq(clpe_rope_get_frequencies(m, w, 41, &amp), CLPE_ERROR_INVALID_ROPE);
    cr_assert_eq(clpe_rope_get_streams(m, stream, 41, NULL), CLPE_ERROR_INVALID_ROPE);
    clpe_rope_release(m);
}

/* q and k heads of one fused QKV buffer ([seq, q q k v, head_dim]) share
 * the buffer but no element: accepted, and each rotated exactly as from
 * buffers of its own (the host emulation on separate arrays); v and the
 * positions placed after the tokens in the same buffer are left alone. k
 * as a sub-buffer over q's elements, or positions over them, are refused
 * with nothing written. */
Test(mrope, fused_qkv_is_accepted_and_sub_buffer_aliases_are_refused)
{
    const size_t seq = 5, hd = 16, heads = 4, row = heads * hd, streams = 3;
    clpe_mrope_config cfg = text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, hd, 0, 2, 3);
    clpe_rope *m = make_mrope(&cfg);
    clpe_rope *host = clpe_rope_create_mrope_host(&cfg, NULL);
    cr_assert_not_null(host);
    /* the tokens, then the positions in the same buffer (64 floats: 32
     * int64) */
    size_t count = seq * row + 2 * seq * streams;
    float *fused = malloc(count * sizeof *fused);
    uint64_t rng = 5150;
    fill_random(CLPE_DTYPE_F32, fused, seq * row, &rng);
    int64_t *pos = (int64_t *)(fused + seq * row);
    for (size_t k = 0; k < seq * streams; ++k)
        pos[k] = (int64_t)(test_rand_u64(&rng) % 5000);
    cl_mem buf = test_buffer_from(&cl, fused, count * sizeof *fused);
    clpe_rope_tensor q = {.buffer = buf, .heads = 2, .head_pitch = hd, .row_pitch = row};
    clpe_rope_tensor k = {.buffer = buf, .offset = 2 * hd * sizeof(float), .heads = 1,
                          .row_pitch = row};
    clpe_positions dpos = {.source = CLPE_POSITIONS_STREAMS, .buffer = buf, .offset = seq * row * sizeof(float)};
    cr_assert_eq(clpe_enqueue_rope(m, cl.queue, 1, seq, &q, &k, &dpos, 0, 0, NULL, NULL),
                 CLPE_SUCCESS);
    /* the host on separate q and k */
    float *hq = malloc(seq * 2 * hd * sizeof *hq), *hk = malloc(seq * hd * sizeof *hk);
    for (size_t s = 0; s < seq; ++s) {
        memcpy(hq + s * 2 * hd, fused + s * row, 2 * hd * sizeof *hq);
        memcpy(hk + s * hd, fused + s * row + 2 * hd, hd * sizeof *hk);
    }
    clpe_host_rope_tensor tq = {.data = hq, .heads = 2}, tk = {.data = hk, .heads = 1};
    const int64_t *hpos = pos;
    cr_assert_eq(clpe_host_rope(host, 1, seq, &tq, &tk, CLPE_POSITIONS_STREAMS, 0, hpos, 0), CLPE_SUCCESS);
    /* the host emulation takes the fused layout too, with the same result */
    float *hfused = malloc(count * sizeof *hfused);
    memcpy(hfused, fused, count * sizeof *hfused);
    clpe_host_rope_tensor fq = {.data = hfused, .heads = 2, .row_pitch = row},
                          fk = {.data = hfused + 2 * hd, .heads = 1, .row_pitch = row};
    const int64_t *fpos = (const int64_t *)(hfused + seq * row);
    cr_assert_eq(clpe_host_rope(host, 1, seq, &fq, &fk, CLPE_POSITIONS_STREAMS, 0, fpos, 0), CLPE_SUCCESS);
    /* ... and refuses what the device call refuses: k over q, positions
     * over q */
    const int64_t *pos_in_q = (const int64_t *)hfused;
    cr_assert_eq(clpe_host_rope(host, 1, seq, &fq, &fq, CLPE_POSITIONS_STREAMS, 0, fpos, 0), CLPE_ERROR_ALIASING);
    cr_assert_eq(clpe_host_rope(host, 1, seq, &fq, &fk, CLPE_POSITIONS_STREAMS, 0, pos_in_q, 0), CLPE_ERROR_ALIASING);
    cr_assert_eq(clpe_host_rope_cache_at(host, seq, CLPE_POSITIONS_STREAMS, 0, fpos, hfused, hfused, hd),
                 CLPE_ERROR_ALIASING);
    float *dev = test_buffer_read(&cl, buf, count * sizeof *fused);
    for (size_t s = 0; s < seq; ++s) {
        cr_assert_eq(memcmp(dev + s * row, hq + s * 2 * hd, 2 * hd * sizeof *hq), 0, "q row %zu", s);
        cr_assert_eq(memcmp(dev + s * row + 2 * hd, hk + s * hd, hd * sizeof *hk), 0, "k row %zu",
                     s);
        cr_assert_eq(memcmp(dev + s * row + 3 * hd, fused + s * row + 3 * hd, hd * sizeof *hk), 0,
                     "v row %zu", s);
    }
    cr_assert_eq(memcmp(dev + seq * row, pos, seq * streams * sizeof *pos), 0, "positions");
    cr_assert_eq(memcmp(dev, hfused, count * sizeof *fused), 0, "host on the fused layout");
    free(hfused);

    /* aliases through a sub-buffer: k over q's first head, positions over
     * q's first row; refused, and nothing changes */
    cl_buffer_region head = {.origin = 0, .size = seq * row * sizeof(float)};
    cl_int err;
    cl_mem sub = clCreateSubBuffer(buf, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &head,
                                   &err);
    cr_assert_eq(err, CL_SUCCESS, "clCreateSubBuffer: %d", err);
    clpe_rope_tensor k_over_q = {.buffer = sub, .heads = 1, .row_pitch = row};
    cr_assert_eq(clpe_enqueue_rope(m, cl.queue, 1, seq, &q, &k_over_q, &dpos, 0, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    clpe_positions pos_over_q = {.source = CLPE_POSITIONS_STREAMS, .buffer = sub};
    cr_assert_eq(clpe_enqueue_rope(m, cl.queue, 1, seq, &q, &k, &pos_over_q, 0, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    /* the cache: cos over sin's rows through the sub-buffer */
    clpe_tensor cos_t = {.buffer = buf}, sin_t = {.buffer = sub};
    cr_assert_eq(clpe_enqueue_rope_cache_at(m, cl.queue, seq, &dpos, &cos_t, &sin_t, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    float *after = test_buffer_read(&cl, buf, count * sizeof *fused);
    cr_assert_eq(memcmp(after, dev, count * sizeof *fused), 0, "a refused call wrote");
    free(after);
    clReleaseMemObject(sub);
    free(dev);
    free(hq);
    free(hk);
    clReleaseMemObject(buf);
    free(fused);
    clpe_rope_release(host);
    clpe_rope_release(m);
}

/* Every bad argument: its status, and q untouched. */
Test(mrope, bad_arguments_get_their_status_and_write_nothing)
{
    clpe_mrope_config cfg = text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 2, 3);
    clpe_rope *m = make_mrope(&cfg);
    const size_t batch = 2, seq = 3, heads = 2, count = batch * seq * heads * 16;
    float init[2 * 3 * 2 * 16];
    for (size_t k = 0; k < count; ++k)
        init[k] = (float)k;
    int64_t pos[3 * 2 * 3] = {0};
    cl_mem qb = test_buffer_from(&cl, init, sizeof init);
    cl_mem small = test_buffer_from(&cl, init, sizeof init - 4);
    cl_mem pb = test_buffer_from(&cl, pos, sizeof pos);
    cl_mem pos_small = test_buffer_from(&cl, pos, sizeof pos - 8);
    clpe_rope_tensor q = {.buffer = qb, .heads = heads};
    clpe_positions good = {.source = CLPE_POSITIONS_STREAMS, .buffer = pb};
    struct {
        const char *what;
        clpe_rope_tensor q;
        const clpe_rope_tensor *k;
        clpe_positions pos;
        uint32_t flags;
        clpe_status want;
    } cases[] = {
        {"NULL buffer", {.heads = heads}, NULL, good, 0, CLPE_ERROR_NULL_BUFFER},
        {"no heads", {.buffer = qb}, NULL, good, 0, CLPE_ERROR_INVALID_ROPE},
        {"tokens overlap", {.buffer = qb, .heads = heads, .row_pitch = 16}, NULL, good, 0,
         CLPE_ERROR_INVALID_PITCH},
        {"misaligned", {.buffer = qb, .heads = heads, .offset = 2}, NULL, good, 0,
         CLPE_ERROR_MISALIGNED_OFFSET},
        {"too small", {.buffer = small, .heads = heads}, NULL, good, 0,
         CLPE_ERROR_BUFFER_TOO_SMALL},
        {"reserved", {.buffer = qb, .heads = heads, .reserved = {1, 0}}, NULL, good, 0,
         CLPE_ERROR_RESERVED_FIELD},
        {"k aliases q", q, &q, good, 0, CLPE_ERROR_ALIASING},
        {"unknown flag", q, NULL, good, 2, CLPE_ERROR_INVALID_CONFIG},
        {"no positions buffer", q, NULL, {.source = CLPE_POSITIONS_STREAMS}, 0,
         CLPE_ERROR_INVALID_POSITIONS},
        {"unknown source", q, NULL, {.source = (clpe_position_source)5, .buffer = pb}, 0,
         CLPE_ERROR_INVALID_POSITIONS},
        {"positions misaligned", q, NULL,
         {.source = CLPE_POSITIONS_STREAMS, .buffer = pb, .offset = 4}, 0,
         CLPE_ERROR_MISALIGNED_OFFSET},
        {"positions reserved", q, NULL,
         {.source = CLPE_POSITIONS_STREAMS, .buffer = pb, .reserved = {0, 1}}, 0,
         CLPE_ERROR_RESERVED_FIELD},
        {"positions too small", q, NULL, {.source = CLPE_POSITIONS_STREAMS, .buffer = pos_small},
         0, CLPE_ERROR_INDEX_BUFFER_TOO_SMALL},
        {"positions past the end", q, NULL,
         {.source = CLPE_POSITIONS_STREAMS, .buffer = pb, .offset = 8}, 0,
         CLPE_ERROR_INDEX_BUFFER_TOO_SMALL},
        {"token-first past the end", q, NULL,
         {.source = CLPE_POSITIONS_STREAMS_TOKEN_FIRST, .buffer = pb, .offset = 8}, 0,
         CLPE_ERROR_INDEX_BUFFER_TOO_SMALL},
        {"positions are q", q, NULL, {.source = CLPE_POSITIONS_STREAMS, .buffer = qb}, 0,
         CLPE_ERROR_ALIASING},
    };
    for (size_t j = 0; j < sizeof cases / sizeof cases[0]; ++j) {
        clpe_status st = clpe_enqueue_rope(m, cl.queue, batch, seq, &cases[j].q, cases[j].k,
                                            &cases[j].pos, cases[j].flags, 0, NULL, NULL);
        cr_expect_eq(st, cases[j].want, "%s: status %d, want %d", cases[j].what, st,
                     cases[j].want);
    }
    cr_assert_eq(clpe_enqueue_rope(NULL, cl.queue, batch, seq, &q, NULL, &good, 0, 0, NULL, NULL),
                 CLPE_ERROR_NULL_ENCODER);
    cr_assert_eq(clpe_enqueue_rope(m, NULL, batch, seq, &q, NULL, &good, 0, 0, NULL, NULL),
                 CLPE_ERROR_NULL_QUEUE);
    cr_assert_eq(clpe_enqueue_rope(m, cl.queue, batch, seq, NULL, NULL, &good, 0, 0, NULL, NULL),
                 CLPE_ERROR_NULL_POINTER);
    /* no positions: start 0 in every stream, as for any rotary object (batch
     * 0 here, so nothing is written) */
    cr_assert_eq(clpe_enqueue_rope(m, cl.queue, 0, seq, &q, NULL, NULL, 0, 0, NULL, NULL),
                 CLPE_SUCCESS);
    cr_assert_eq(clpe_enqueue_rope(m, cl.queue, batch, seq, &q, NULL, &good, 0, 1, NULL, NULL),
                 CLPE_ERROR_INVALID_WAIT_LIST);
    /* the cache: aliasing and sizes */
    clpe_status st;
    clpe_tensor ct = {.buffer = qb}, st2 = {.buffer = small};
    cr_assert_eq(clpe_enqueue_rope_cache_at(m, cl.queue, 4, &good, &ct, &ct, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    clpe_positions onto_sin = {.source = CLPE_POSITIONS_STREAMS, .buffer = small};
    cr_assert_eq(clpe_enqueue_rope_cache_at(m, cl.queue, 4, &onto_sin, &ct, &st2, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    cr_assert_eq(clpe_enqueue_rope_cache_at(m, cl.queue, 7, &good, &ct, &st2, 0, NULL, NULL),
                 CLPE_ERROR_INDEX_BUFFER_TOO_SMALL);
    /* 12 rows of 16: what q's buffer holds, one float more than `small` */
    int64_t pos12[3 * 12] = {0};
    cl_mem pb12 = test_buffer_from(&cl, pos12, sizeof pos12);
    clpe_positions twelve = {.source = CLPE_POSITIONS_STREAMS, .buffer = pb12};
    st = clpe_enqueue_rope_cache_at(m, cl.queue, 12, &twelve, &ct, &st2, 0, NULL, NULL);
    cr_assert_eq(st, CLPE_ERROR_BUFFER_TOO_SMALL, "cache too small: %d", st);
    clFinish(cl.queue);
    float *after = test_buffer_read(&cl, qb, sizeof init);
    cr_assert_eq(memcmp(after, init, sizeof init), 0, "a refused call wrote to q");
    free(after);
    /* host-only objects enqueue nothing */
    clpe_rope *host = clpe_rope_create_mrope_host(&cfg, NULL);
    cr_assert_eq(clpe_enqueue_rope(host, cl.queue, batch, seq, &q, NULL, &good, 0, 0, NULL, NULL),
                 CLPE_ERROR_HOST_ONLY);
    clpe_rope_release(host);

    /* configurations */
    struct {
        const char *what;
        clpe_mrope_config cfg;
        clpe_status want;
    } bad[] = {
        {"sections short", text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 2, 3),
         CLPE_ERROR_INVALID_ROPE},
        {"no streams", text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 2, 3),
         CLPE_ERROR_INVALID_ROPE},
        {"five streams", text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 2, 3),
         CLPE_ERROR_INVALID_ROPE},
        {"section past streams", text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 2, 3),
         CLPE_ERROR_INVALID_ROPE},
        {"unknown ladder", text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 2, 3),
         CLPE_ERROR_INVALID_CONFIG},
        {"yarn per stream", clpe_mrope_config_vision(16), CLPE_ERROR_INVALID_SCALING},
        {"reserved", text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 2, 3),
         CLPE_ERROR_RESERVED_FIELD},
        {"rope part", text_config(CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 16, 0, 2, 3),
         CLPE_ERROR_INVALID_BASE},
    };
    bad[0].cfg.section[2] -= 1;
    bad[1].cfg.streams = 0;
    bad[2].cfg.streams = 5;
    bad[3].cfg.streams = 2;
    bad[4].cfg.ladder = (clpe_mrope_ladder)2;
    bad[5].cfg.rope.scaling = CLPE_ROPE_YARN;
    bad[5].cfg.rope.factor = 2;
    bad[5].cfg.rope.original_max_position = 128;
    bad[6].cfg.reserved[2] = 1;
    bad[7].cfg.rope.base = 0.5;
    for (size_t j = 0; j < sizeof bad / sizeof bad[0]; ++j) {
        st = CLPE_SUCCESS;
        cr_expect_null(clpe_rope_create_mrope_host(&bad[j].cfg, &st), "%s", bad[j].what);
        cr_expect_eq(st, bad[j].want, "%s: status %d, want %d", bad[j].what, st, bad[j].want);
    }
    cr_assert_null(clpe_rope_create_mrope_host(NULL, &st));
    cr_assert_eq(st, CLPE_ERROR_NULL_POINTER);

    clReleaseMemObject(pb12);
    clReleaseMemObject(pos_small);
    clReleaseMemObject(pb);
    clReleaseMemObject(small);
    clReleaseMemObject(qb);
    clpe_rope_release(m);
}

/* Every output bit pinned, as tests/test_digests.c pins the other calls:
 * SHA-256 of q and k (or cos and sin) after the call, through the host
 * emulation and on the device. The digests were taken from this emulation
 * once the MPFR and Hugging Face tests above had checked it; a change meant
 * to move bits updates them from what CLPE_DIGESTS_PRINT=1 prints. */
typedef struct pinned_case {
    const char *name;
    clpe_mrope_config cfg;
    bool cache, token_major;
    const char *digest;
} pinned_case;

static void pinned_config(pinned_case *c, int k)
{
    clpe_mrope_config text = {.rope = clpe_rope_config_default(128), .streams = 3,
                              .section = {16, 24, 24}};
    text.rope.base = 1000000.0;
    switch (k) {
    case 0: /* Qwen2-VL 7B, f32 */
        c->cfg = text;
        break;
    case 1: /* YaRN x4, bf16, interleaved, head_dim 64 */
        c->cfg = (clpe_mrope_config){.rope = clpe_rope_config_default(64), .streams = 3,
                                     .section = {8, 12, 12}};
        c->cfg.rope.dtype = CLPE_DTYPE_BF16;
        c->cfg.rope.pairing = CLPE_ROPE_INTERLEAVED;
        c->cfg.rope.scaling = CLPE_ROPE_YARN;
        c->cfg.rope.factor = 4;
        c->cfg.rope.original_max_position = 32768;
        break;
    case 2: /* the vision tower, f16, positions [patches, 2] */
        c->cfg = clpe_mrope_config_vision(80);
        c->cfg.rope.dtype = CLPE_DTYPE_F16;
        c->token_major = true;
        break;
    case 3: /* Llama 3 scaling, f64, partial rotary 96 of 128 */
        c->cfg = text;
        c->cfg.rope.dtype = CLPE_DTYPE_F64;
        c->cfg.rope.rotary_dim = 96;
        c->cfg.section[0] = 8, c->cfg.section[1] = 20, c->cfg.section[2] = 20;
        c->cfg.rope.base = 500000.0;
        c->cfg.rope.scaling = CLPE_ROPE_LLAMA3;
        c->cfg.rope.factor = 8;
        c->cfg.rope.low_freq_factor = 1;
        c->cfg.rope.high_freq_factor = 4;
        c->cfg.rope.original_max_position = 8192;
        break;
    case 4: /* the cos/sin cache of case 0 */
        c->cfg = text;
        c->cache = true;
        break;
    }
}

static pinned_case pinned[] = {
    {.name = "qwen2-vl-7b f32",
     .digest = "8ef8a5eb1da86fd202a70e1b47d26f334b42b760a7f4eed428694417c0f5ce5c"},
    {.name = "yarn bf16 interleaved",
     .digest = "e36295e9125d42852736d83845537451d0efb89146c791a0f8b68ff67d436129"},
    {.name = "vision f16",
     .digest = "d243467826dd7a46061c0eb9d336d35b4a642796a17e253afea004a9b15f3ee8"},
    {.name = "llama3 f64 partial",
     .digest = "fa2fe634b6c2fabfe798888bd02f48db0bb9a07e13ce1456014e65cfabf8d4fb"},
    {.name = "qwen2-vl-7b cache f32",
     .digest = "fe93af128c403dc859d3ebc1587592bd34d2e8a487486e8be68b4438fd4ea72f"},
};

static void expect_pinned(const pinned_case *c, const void *bytes, size_t size, const char *how)
{
    char hex[65];
    sha256_hex(bytes, size, hex);
    if (getenv("CLPE_DIGESTS_PRINT"))
        fprintf(stderr, "digest %-6s %s  %s\n", how, hex, c->name);
    cr_expect_str_eq(hex, c->digest, "%s, %s: output digest %s, pinned %s", c->name, how, hex,
                     c->digest);
}

Test(mrope, outputs_are_pinned)
{
    for (size_t n = 0; n < sizeof pinned / sizeof pinned[0]; ++n) {
        pinned_case *c = &pinned[n];
        pinned_config(c, (int)n);
        const clpe_dtype dt = c->cfg.rope.dtype;
        const size_t es = esize(dt), hd = c->cfg.rope.head_dim, streams = c->cfg.streams;
        const size_t batch = 2, seq = 37, hq = 3, hk = 1, tokens = batch * seq;
        const size_t rotary = c->cfg.rope.rotary_dim ? c->cfg.rope.rotary_dim : hd;
        /* q then k (rotation), or cos then sin (cache), in one block */
        const size_t qn = tokens * hq * hd, kn = tokens * hk * hd;
        const size_t count = c->cache ? 2 * tokens * rotary : qn + kn, bytes = count * es;
        uint64_t rng = 1000 + n;
        int64_t *pos = malloc(tokens * streams * sizeof *pos);
        for (size_t k = 0; k < tokens * streams; ++k) /* around 0, 2^24 and 2^62 */
            pos[k] = (int64_t)(test_rand_u64(&rng) % 4096) +
                     (k % 3 == 1 ? (int64_t)1 << 24 : k % 3 == 2 ? (int64_t)1 << 62 : 0);
        const clpe_position_source source =
            c->token_major ? CLPE_POSITIONS_STREAMS_TOKEN_FIRST : CLPE_POSITIONS_STREAMS;
        unsigned char *host_bytes = malloc(bytes);
        fill_random(dt, host_bytes, count, &rng);
        unsigned char *input = malloc(bytes);
        memcpy(input, host_bytes, bytes);
        clpe_rope *host = clpe_rope_create_mrope_host(&c->cfg, NULL);
        cr_assert_not_null(host, "%s", c->name);
        if (c->cache) {
            cr_assert_eq(clpe_host_rope_cache_at(host, tokens, source, 0, pos, host_bytes,
                                                 host_bytes + bytes / 2, 0),
                         CLPE_SUCCESS);
        } else {
            clpe_host_rope_tensor q = {.data = host_bytes, .heads = hq};
            clpe_host_rope_tensor k = {.data = host_bytes + qn * es, .heads = hk};
            cr_assert_eq(clpe_host_rope(host, batch, seq, &q, &k, source, 0, pos, 0),
                         CLPE_SUCCESS);
        }
        expect_pinned(c, host_bytes, bytes, "host");
        if (clpe_device_supports_dtype(cl.device, dt)) {
            clpe_rope *m = make_mrope(&c->cfg);
            cl_mem buf = test_buffer_from(&cl, input, bytes);
            cl_mem pbuf = test_buffer_from(&cl, pos, tokens * streams * sizeof *pos);
            clpe_positions dp = {.source = source, .buffer = pbuf};
            clpe_status st;
            if (c->cache) {
                /* cos in the first half of one buffer, sin in the second of another */
                cl_mem other = test_buffer_from(&cl, input, bytes);
                clpe_tensor ct = {.buffer = buf};
                clpe_tensor stt = {.buffer = other, .offset = bytes / 2};
                st = clpe_enqueue_rope_cache_at(m, cl.queue, tokens, &dp, &ct, &stt, 0, NULL, NULL);
                cr_assert_eq(st, CLPE_SUCCESS, "%s: %d", c->name, st);
                unsigned char *cos = test_buffer_read(&cl, buf, bytes);
                unsigned char *sin = test_buffer_read(&cl, other, bytes);
                memcpy(cos + bytes / 2, sin + bytes / 2, bytes / 2);
                expect_pinned(c, cos, bytes, "device");
                free(cos);
                free(sin);
                clReleaseMemObject(other);
            } else {
                clpe_rope_tensor q = {.buffer = buf, .heads = hq};
                clpe_rope_tensor k = {.buffer = buf, .offset = qn * es, .heads = hk};
                st = clpe_enqueue_rope(m, cl.queue, batch, seq, &q, &k, &dp, 0, 0, NULL, NULL);
                cr_assert_eq(st, CLPE_SUCCESS, "%s: %d", c->name, st);
                unsigned char *dev = test_buffer_read(&cl, buf, bytes);
                expect_pinned(c, dev, bytes, "device");
                free(dev);
            }
            clReleaseMemObject(buf);
            clReleaseMemObject(pbuf);
            clpe_rope_release(m);
        }
        clpe_rope_release(host);
        free(input);
        free(host_bytes);
        free(pos);
    }
}
