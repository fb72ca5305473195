/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rope.c - rotary position embedding: every device result equals the
 * host emulation bit for bit (every dtype, pairing, layout, position source,
 * partial rotary, grouped queries, the inverse, split launches), the float32
 * result is within 2^-22 * hypot(a, b) of the exact rotation (MPFR), and
 * every bad argument gets its status and writes nothing.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static test_cl cl;
static void setup(void) { test_cl_open(&cl); }
static void teardown(void) { test_cl_close(&cl); }
TestSuite(rope, .init = setup, .fini = teardown);

static size_t esize(clpe_dtype t)
{
    return t == CLPE_DTYPE_F64 ? 8 : t == CLPE_DTYPE_F32 ? 4 : 2;
}

/* Random values in [-2, 2) stored in dtype t (16-bit types: a float32 bit
 * pattern's top half for bf16, a small exact half for f16). */
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
        case CLPE_DTYPE_F16: /* sign, exponent 14..16, any mantissa: |v| in [0.5, 4) */
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

/* One case: q [batch, seq, hq, head_dim] and k [batch, seq, hk, head_dim]
 * in the layout `heads_outer` ([batch, heads, seq, d]) or not, rotated on
 * the device and on the host; every byte must agree, including the padding
 * between heads (left alone). */
typedef struct rope_case {
    clpe_dtype dtype;
    clpe_rope_pairing pairing;
    uint32_t head_dim, rotary_dim;
    size_t batch, seq, hq, hk;
    bool heads_outer;
    size_t pad;                 /* extra elements after each head */
    clpe_position_source source;
    int64_t start;
    uint32_t flags;
} rope_case;

static void run_case(const rope_case *c, uint64_t seed)
{
    clpe_rope_config cfg = clpe_rope_config_default(c->head_dim);
    cfg.rotary_dim = c->rotary_dim;
    cfg.pairing = c->pairing;
    cfg.dtype = c->dtype;
    if (!clpe_device_supports_dtype(cl.device, c->dtype))
        return;
    clpe_rope *rope = make_rope(&cfg);
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    cr_assert_not_null(host);
    size_t es = esize(c->dtype), hp = c->head_dim + c->pad;
    uint64_t rng = seed;
    size_t sizes[2] = {c->hq, c->hk};
    void *host_data[2], *dev_data[2];
    cl_mem bufs[2] = {NULL, NULL};
    clpe_rope_tensor dt[2];
    clpe_host_rope_tensor ht[2];
    int tensors = c->hk ? 2 : 1;
    for (int j = 0; j < tensors; ++j) {
        size_t heads = sizes[j];
        size_t count = c->batch * c->seq * heads * hp;
        host_data[j] = malloc(count * es);
        fill_random(c->dtype, host_data[j], count, &rng);
        bufs[j] = test_buffer_from(&cl, host_data[j], count * es);
        size_t head_pitch = c->heads_outer ? c->seq * hp : hp;
        size_t row_pitch = c->heads_outer ? hp : heads * hp;
        size_t batch_pitch = c->seq * heads * hp;
        dt[j] = (clpe_rope_tensor){.buffer = bufs[j], .heads = heads, .head_pitch = head_pitch,
                                   .row_pitch = row_pitch, .batch_pitch = batch_pitch};
        ht[j] = (clpe_host_rope_tensor){.data = host_data[j], .heads = heads,
                                        .head_pitch = head_pitch, .row_pitch = row_pitch,
                                        .batch_pitch = batch_pitch};
    }
    int64_t *positions = NULL;
    cl_mem pbuf = NULL;
    size_t npos = c->source == CLPE_POSITIONS_IDS ? c->batch * c->seq : c->batch;
    if (c->source != CLPE_POSITIONS_START) {
        positions = malloc(npos * sizeof *positions);
        /* the first exactly at start (a chosen wrap point), the others
         * around it; near the ends of int64 these wrap, as device positions may */
        for (size_t k = 0; k < npos; ++k)
            positions[k] = k == 0 ? c->start
                                  : (int64_t)((uint64_t)c->start + test_rand_u64(&rng) % 100000 -
                                              50000);
        pbuf = test_buffer_from(&cl, positions, npos * sizeof *positions);
    }
    clpe_positions pos = {.source = c->source, .start = c->start, .buffer = pbuf};
    cl_event done = NULL;
    clpe_status st = clpe_enqueue_rope(rope, cl.queue, c->batch, c->seq, &dt[0],
                                       c->hk ? &dt[1] : NULL, &pos, c->flags, 0, NULL, &done);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_enqueue_rope: %d", st);
    test_event_finish(done);
    st = clpe_host_rope(host, c->batch, c->seq, &ht[0], c->hk ? &ht[1] : NULL, c->source,
                        c->start, positions, c->flags);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_host_rope: %d", st);
    for (int j = 0; j < tensors; ++j) {
        size_t bytes = c->batch * c->seq * sizes[j] * hp * es;
        dev_data[j] = test_buffer_read(&cl, bufs[j], bytes);
        size_t first = bytes;
        for (size_t k = 0; k < bytes && first == bytes; ++k)
            if (((unsigned char *)dev_data[j])[k] != ((unsigned char *)host_data[j])[k])
                first = k;
        cr_assert_eq(first, bytes,
                     "%s differs from the host at byte %zu (dtype %d pairing %d head_dim %u "
                     "rotary %u layout %s source %d start %lld flags %u)",
                     j ? "k" : "q", first, c->dtype, c->pairing, c->head_dim, c->rotary_dim,
                     c->heads_outer ? "bhsd" : "bshd", c->source, (long long)c->start, c->flags);
        free(dev_data[j]);
    }
    for (int j = 0; j < tensors; ++j) {
        free(host_data[j]);
        clReleaseMemObject(bufs[j]);
    }
    if (pbuf)
        clReleaseMemObject(pbuf);
    free(positions);
    clpe_rope_release(host);
    clpe_rope_release(rope);
}

Test(rope, device_equals_host_for_every_dtype_pairing_and_layout)
{
    const clpe_dtype dtypes[] = {CLPE_DTYPE_F32, CLPE_DTYPE_F16, CLPE_DTYPE_BF16, CLPE_DTYPE_F64};
    uint64_t seed = 1;
    for (int t = 0; t < 4; ++t)
        for (int pairing = 0; pairing < 2; ++pairing)
            for (int outer = 0; outer < 2; ++outer) {
                /* head_dim 88: the float16 path, 44 pairs (groups of 16
                 * and a tail of 12 in either vector shape); 40 with rotary
                 * 32: partial, one group; 20: fewer pairs than a group */
                rope_case a = {dtypes[t], (clpe_rope_pairing)pairing, 88, 0, 2, 37, 4, 2,
                               outer, 0, CLPE_POSITIONS_START, 1000003, 0};
                run_case(&a, seed++);
                rope_case b = {dtypes[t], (clpe_rope_pairing)pairing, 40, 32, 3, 19, 3, 1,
                               outer, 5, CLPE_POSITIONS_PER_SEQUENCE, -77, 0};
                run_case(&b, seed++);
                rope_case c = {dtypes[t], (clpe_rope_pairing)pairing, 20, 0, 2, 11, 2, 0,
                               outer, 0, CLPE_POSITIONS_IDS, INT64_MAX - 200000, CLPE_ROPE_INVERSE};
                run_case(&c, seed++);
                /* 13 pairs: an odd count, so in the GPU shape the last
                 * 16-bit work-item has a pair alone, and split halves 13
                 * elements apart cannot move as aligned words */
                rope_case d = {dtypes[t], (clpe_rope_pairing)pairing, 26, 0, 2, 7, 3, 2,
                               outer, 0, CLPE_POSITIONS_START, -3, 0};
                run_case(&d, seed++);
            }
}

/* Aligned heads (head_dim 128, pitches of whole 64-byte lines) take the
 * CPU's aligned vector moves, where bfloat16 rounds two vectors at once
 * (clpe_storage.cl); here every input bit pattern goes through them
 * (test_fill_any_bits), in both pairings, compared with the host as
 * test_expect_same_nan_any does. */
Test(rope, aligned_heads_of_any_bits_match_the_host)
{
    const clpe_dtype dtypes[] = {CLPE_DTYPE_F32, CLPE_DTYPE_F16, CLPE_DTYPE_BF16, CLPE_DTYPE_F64};
    for (int t = 0; t < 4; ++t)
        for (int pairing = 0; pairing < 2; ++pairing) {
            clpe_dtype dt = dtypes[t];
            if (!clpe_device_supports_dtype(cl.device, dt))
                continue;
            clpe_rope_config cfg = clpe_rope_config_default(128);
            cfg.pairing = (clpe_rope_pairing)pairing;
            cfg.dtype = dt;
            clpe_rope *rope = make_rope(&cfg);
            clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
            cr_assert_not_null(host);
            const size_t batch = 2, seq = 9, heads = 3, es = esize(dt);
            size_t count = batch * seq * heads * 128, bytes = count * es;
            unsigned char *x = malloc(bytes);
            uint64_t rng = 40 + (uint64_t)(2 * t + pairing);
            test_fill_any_bits(x, count, es, &rng);
            cl_mem buf = test_buffer_from(&cl, x, bytes);
            clpe_rope_tensor dq = {.buffer = buf, .heads = heads, .head_pitch = 128,
                                   .row_pitch = heads * 128, .batch_pitch = seq * heads * 128};
            clpe_host_rope_tensor hq = {.data = x, .heads = heads, .head_pitch = 128,
                                        .row_pitch = heads * 128, .batch_pitch = seq * heads * 128};
            clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = 777};
            cr_assert_eq(clpe_enqueue_rope(rope, cl.queue, batch, seq, &dq, NULL, &pos, 0, 0,
                                           NULL, NULL),
                         CLPE_SUCCESS);
            cr_assert_eq(clpe_host_rope(host, batch, seq, &hq, NULL, CLPE_POSITIONS_START, 777,
                                        NULL, 0),
                         CLPE_SUCCESS);
            unsigned char *dev = test_buffer_read(&cl, buf, bytes);
            test_expect_same_nan_any(dev, x, count, dt,
                                     cfg.pairing == CLPE_ROPE_HALF_SPLIT
                                         ? "rope of any bits, half-split"
                                         : "rope of any bits, interleaved");
            free(dev);
            free(x);
            clReleaseMemObject(buf);
            clpe_rope_release(host);
            clpe_rope_release(rope);
        }
}

/* Pairs the kernels cannot move as aligned words of two elements: a tensor
 * that starts at an odd element of its buffer, and a CL_MEM_USE_HOST_PTR
 * buffer whose host memory starts one element past an aligned address.
 * Both take the element-by-element walk and must match the host. */
Test(rope, pairs_at_odd_elements_match_the_host)
{
    const clpe_dtype dtypes[] = {CLPE_DTYPE_F32, CLPE_DTYPE_F16, CLPE_DTYPE_BF16, CLPE_DTYPE_F64};
    for (int t = 0; t < 4; ++t)
        for (int pairing = 0; pairing < 2; ++pairing)
            for (int host_memory = 0; host_memory < 2; ++host_memory) {
                clpe_dtype dt = dtypes[t];
                if (!clpe_device_supports_dtype(cl.device, dt))
                    continue;
                clpe_rope_config cfg = clpe_rope_config_default(64);
                cfg.pairing = (clpe_rope_pairing)pairing;
                cfg.dtype = dt;
                clpe_rope *rope = make_rope(&cfg);
                clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
                cr_assert_not_null(host);
                const size_t batch = 2, seq = 5, heads = 3, es = esize(dt);
                size_t count = batch * seq * heads * 64 + 1, bytes = count * es;
                /* 64-byte aligned storage (its size a multiple of 64, as
                 * aligned_alloc asks); the tensor starts at element 1 */
                unsigned char *store = aligned_alloc(64, (bytes + 127) / 64 * 64);
                cr_assert_not_null(store);
                uint64_t rng = 90 + (uint64_t)(4 * t + 2 * pairing + host_memory);
                fill_random(dt, store, count, &rng);
                unsigned char *expect = malloc(bytes);
                memcpy(expect, store, bytes);
                cl_mem buf;
                size_t offset = es;
                if (host_memory) {
                    cl_int err;
                    buf = clCreateBuffer(cl.context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                                         bytes - es, store + es, &err);
                    cr_assert_eq(err, CL_SUCCESS);
                    offset = 0;
                } else {
                    buf = test_buffer_from(&cl, store, bytes);
                }
                clpe_rope_tensor dq = {.buffer = buf, .offset = offset, .heads = heads,
                                       .head_pitch = 64, .row_pitch = heads * 64,
                                       .batch_pitch = seq * heads * 64};
                clpe_host_rope_tensor hq = {.data = expect + es, .heads = heads, .head_pitch = 64,
                                            .row_pitch = heads * 64,
                                            .batch_pitch = seq * heads * 64};
                clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = 4242};
                cr_assert_eq(clpe_enqueue_rope(rope, cl.queue, batch, seq, &dq, NULL, &pos, 0, 0,
                                               NULL, NULL),
                             CLPE_SUCCESS);
                cr_assert_eq(clpe_host_rope(host, batch, seq, &hq, NULL, CLPE_POSITIONS_START,
                                            4242, NULL, 0),
                             CLPE_SUCCESS);
                unsigned char *dev = host_memory ? NULL : test_buffer_read(&cl, buf, bytes);
                if (host_memory) {
                    void *mapped = clEnqueueMapBuffer(cl.queue, buf, CL_TRUE, CL_MAP_READ, 0,
                                                      bytes - es, 0, NULL, NULL, NULL);
                    cr_assert_not_null(mapped);
                    dev = malloc(bytes);
                    memcpy(dev, store, es);
                    memcpy(dev + es, mapped, bytes - es);
                    clEnqueueUnmapMemObject(cl.queue, buf, mapped, 0, NULL, NULL);
                    clFinish(cl.queue);
                }
                cr_assert_eq(memcmp(dev, expect, bytes), 0,
                             "dtype %d pairing %d %s: device and host differ", dt, pairing,
                             host_memory ? "host memory at an odd element" : "offset 1");
                free(dev);
                free(expect);
                clReleaseMemObject(buf);
                free(store);
                clpe_rope_release(host);
                clpe_rope_release(rope);
            }
}

Test(rope, positions_at_the_ends_of_int64)
{
    /* rows crossing INT64_MAX are rejected for a start, but ids may hold
     * anything: the odometer restarts where the position wraps */
    rope_case a = {CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 32, 0, 1, 40, 2, 2,
                   false, 0, CLPE_POSITIONS_START, INT64_MAX - 39, 0};
    run_case(&a, 7);
    rope_case b = {CLPE_DTYPE_F32, CLPE_ROPE_INTERLEAVED, 32, 0, 2, 40, 1, 1,
                   false, 0, CLPE_POSITIONS_START, INT64_MIN, 0};
    run_case(&b, 8);
    rope_case c = {CLPE_DTYPE_F64, CLPE_ROPE_HALF_SPLIT, 16, 0, 2, 9, 1, 1,
                   false, 0, CLPE_POSITIONS_PER_SEQUENCE, INT64_MAX - 3, 0};
    run_case(&c, 9);
    /* a sequence starting at INT64_MAX - 20 wraps at its row 21, inside one
     * work-item's walk of 16 rows: every odometer's wrap, every dtype, the
     * float16 groups and their tail (head_dim 88) */
    const clpe_dtype dtypes[] = {CLPE_DTYPE_F32, CLPE_DTYPE_F16, CLPE_DTYPE_BF16, CLPE_DTYPE_F64};
    for (int t = 0; t < 4; ++t) {
        rope_case d = {dtypes[t], CLPE_ROPE_HALF_SPLIT, 88, 0, 2, 40, 2, 1,
                       false, 0, CLPE_POSITIONS_PER_SEQUENCE, INT64_MAX - 20, 0};
        run_case(&d, 10 + (uint64_t)t);
    }
}

/* The exact rotation of (a, b) by p * base^(-2i/r), at 200 bits. */
static void exact_rotation(int64_t p, double base, uint32_t i, uint32_t r, double a, double b,
                           double *ra, double *rb)
{
    mpfr_t w, t, c, s;
    mpfr_inits2(200, w, t, c, s, (mpfr_ptr)0);
    mpfr_set_d(w, base, MPFR_RNDN);
    mpfr_set_si(t, -2 * (long)i, MPFR_RNDN);
    mpfr_div_ui(t, t, r, MPFR_RNDN);
    mpfr_pow(w, w, t, MPFR_RNDN);
    mpfr_set_si(t, p, MPFR_RNDN);
    mpfr_mul(t, t, w, MPFR_RNDN);
    mpfr_sin_cos(s, c, t, MPFR_RNDN);
    mpfr_t x, y;
    mpfr_inits2(200, x, y, (mpfr_ptr)0);
    mpfr_mul_d(x, c, a, MPFR_RNDN);
    mpfr_mul_d(y, s, b, MPFR_RNDN);
    mpfr_sub(x, x, y, MPFR_RNDN);
    *ra = mpfr_get_d(x, MPFR_RNDN);
    mpfr_mul_d(x, s, a, MPFR_RNDN);
    mpfr_mul_d(y, c, b, MPFR_RNDN);
    mpfr_add(x, x, y, MPFR_RNDN);
    *rb = mpfr_get_d(x, MPFR_RNDN);
    mpfr_clears(w, t, c, s, x, y, (mpfr_ptr)0);
}

Test(rope, float32_within_2_pow_minus_22_of_the_exact_rotation)
{
    const uint32_t head_dim = 64, n = head_dim / 2;
    clpe_rope_config cfg = clpe_rope_config_default(head_dim);
    cfg.base = 500000.0;
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    cr_assert_not_null(host);
    const int64_t positions[] = {0, 1, 4095, 131071, 1048575, 16777217, (int64_t)1 << 40,
                                 INT64_MAX, INT64_MIN, -123456789};
    uint64_t rng = 11;
    double worst = 0;
    float q[64];
    for (size_t pk = 0; pk < sizeof positions / sizeof positions[0]; ++pk) {
        for (int rep = 0; rep < 20; ++rep) {
            fill_random(CLPE_DTYPE_F32, q, head_dim, &rng);
            float in[64];
            memcpy(in, q, sizeof q);
            clpe_host_rope_tensor t = {.data = q, .heads = 1};
            cr_assert_eq(clpe_host_rope(host, 1, 1, &t, NULL, CLPE_POSITIONS_START,
                                        positions[pk], NULL, 0),
                         CLPE_SUCCESS);
            for (uint32_t i = 0; i < n; ++i) {
                double ra, rb;
                exact_rotation(positions[pk], cfg.base, i, head_dim, in[i], in[i + n], &ra, &rb);
                double bound = ldexp(1.0, -22) * hypot(in[i], in[i + n]);
                double err = fmax(fabs(q[i] - ra), fabs(q[i + n] - rb));
                cr_assert_leq(err, bound, "p %lld pair %u: error %.3g > bound %.3g",
                              (long long)positions[pk], i, err, bound);
                if (bound > 0 && err / bound > worst)
                    worst = err / bound;
            }
        }
    }
    printf("rope f32: worst error = %.3f x 2^-22 hypot(a, b)\n", worst);
    clpe_rope_release(host);
}

Test(rope, inverse_undoes_the_rotation)
{
    const uint32_t head_dim = 32;
    clpe_rope_config cfg = clpe_rope_config_default(head_dim);
    cfg.dtype = CLPE_DTYPE_F64;
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    double q[32], in[32];
    uint64_t rng = 5;
    fill_random(CLPE_DTYPE_F64, q, head_dim, &rng);
    memcpy(in, q, sizeof q);
    clpe_host_rope_tensor t = {.data = q, .heads = 1};
    const int64_t p = (int64_t)1 << 62;
    cr_assert_eq(clpe_host_rope(host, 1, 1, &t, NULL, CLPE_POSITIONS_START, p, NULL, 0),
                 CLPE_SUCCESS);
    cr_assert_eq(clpe_host_rope(host, 1, 1, &t, NULL, CLPE_POSITIONS_START, p, NULL,
                                CLPE_ROPE_INVERSE),
                 CLPE_SUCCESS);
    for (uint32_t k = 0; k < head_dim; ++k)
        cr_assert_leq(fabs(q[k] - in[k]), 1e-15, "slot %u: %.17g vs %.17g", k, q[k], in[k]);
    clpe_rope_release(host);
}

Test(rope, split_launches_equal_one_launch)
{
    setenv("CLPE_MAX_LAUNCH_ROWS", "5", 1);
    setenv("CLPE_MAX_LAUNCH_BATCH", "2", 1);
    rope_case a = {CLPE_DTYPE_F32, CLPE_ROPE_HALF_SPLIT, 64, 0, 3, 23, 2, 1,
                   false, 0, CLPE_POSITIONS_START, 99, 0};
    run_case(&a, 21);
    rope_case b = {CLPE_DTYPE_BF16, CLPE_ROPE_INTERLEAVED, 48, 0, 5, 12, 1, 2,
                   true, 3, CLPE_POSITIONS_IDS, -5000, 0};
    run_case(&b, 22);
    unsetenv("CLPE_MAX_LAUNCH_ROWS");
    unsetenv("CLPE_MAX_LAUNCH_BATCH");
}

/* Sequences sharing their positions (a start) over many rows: on the CPU's
 * vector path each work-item then walks up to 16 rows for every sequence
 * of the batch (clpe__rope_rows_per_item), fewer where the launch is short;
 * 300 rows are not a multiple of 16, so the last work-item of the launch
 * walks fewer, and launches of 100 rows split the call again. Every dtype
 * against the host, bit for bit. */
Test(rope, long_shared_batches_match_the_host)
{
    const clpe_dtype dtypes[] = {CLPE_DTYPE_F32, CLPE_DTYPE_F16, CLPE_DTYPE_BF16, CLPE_DTYPE_F64};
    for (int split = 0; split < 2; ++split) {
        if (split)
            setenv("CLPE_MAX_LAUNCH_ROWS", "100", 1);
        for (int t = 0; t < 4; ++t) {
            rope_case a = {dtypes[t], (clpe_rope_pairing)(t % 2), 64, 0, 3, 300, 4, 2,
                           false, 0, CLPE_POSITIONS_START, -123457, 0};
            run_case(&a, 40 + (uint64_t)t);
        }
    }
    unsetenv("CLPE_MAX_LAUNCH_ROWS");
}

Test(rope, cache_equals_host_and_holds_the_rotation)
{
    for (int pairing = 0; pairing < 2; ++pairing) {
        clpe_rope_config cfg = clpe_rope_config_default(64);
        cfg.rotary_dim = 48;
        cfg.pairing = (clpe_rope_pairing)pairing;
        clpe_rope *rope = make_rope(&cfg);
        const size_t n = 50, pitch = 52;
        size_t bytes = n * pitch * sizeof(float);
        cl_mem cb = test_buffer_poisoned(&cl, bytes, 0x5A), sb = test_buffer_poisoned(&cl, bytes, 0x5A);
        clpe_tensor ct = {.buffer = cb, .row_pitch = pitch}, stt = {.buffer = sb, .row_pitch = pitch};
        cr_assert_eq(clpe_enqueue_rope_cache(rope, cl.queue, -20, n, &ct, &stt, 0, NULL, NULL),
                     CLPE_SUCCESS);
        float *hc = malloc(bytes), *hs = malloc(bytes);
        memset(hc, 0x5A, bytes);
        memset(hs, 0x5A, bytes);
        cr_assert_eq(clpe_host_rope_cache(rope, -20, n, hc, hs, pitch), CLPE_SUCCESS);
        float *dc = test_buffer_read(&cl, cb, bytes), *ds = test_buffer_read(&cl, sb, bytes);
        cr_assert_eq(memcmp(dc, hc, bytes), 0, "cos cache differs from the host");
        cr_assert_eq(memcmp(ds, hs, bytes), 0, "sin cache differs from the host");
        /* the layout: half-split repeats halves, interleaved repeats pairs */
        for (size_t s = 0; s < n; ++s)
            for (size_t i = 0; i < 24; ++i) {
                size_t a = pairing == 0 ? i : 2 * i, b = pairing == 0 ? i + 24 : 2 * i + 1;
                cr_assert_eq(dc[s * pitch + a], dc[s * pitch + b]);
                cr_assert_eq(ds[s * pitch + a], ds[s * pitch + b]);
                cr_assert_leq(fabs(dc[s * pitch + a] * dc[s * pitch + a] +
                                   ds[s * pitch + a] * ds[s * pitch + a] - 1.0),
                              1e-6);
            }
        /* position 0: cos 1, sin 0 */
        cr_assert_eq(dc[20 * pitch], 1.0f);
        cr_assert_eq(ds[20 * pitch], 0.0f);
        free(hc);
        free(hs);
        free(dc);
        free(ds);
        clReleaseMemObject(cb);
        clReleaseMemObject(sb);
        clpe_rope_release(rope);
    }
}

/* Every bad argument: its status, and q untouched. */
Test(rope, bad_arguments_get_their_status_and_write_nothing)
{
    clpe_rope_config cfg = clpe_rope_config_default(16);
    clpe_rope *rope = make_rope(&cfg);
    const size_t batch = 2, seq = 3, heads = 2, count = batch * seq * heads * 16;
    float init[2 * 3 * 2 * 16];
    for (size_t k = 0; k < count; ++k)
        init[k] = (float)k;
    cl_mem qb = test_buffer_from(&cl, init, sizeof init);
    cl_mem small = test_buffer_from(&cl, init, sizeof init - 4);
    cl_mem pos_buf = test_buffer_from(&cl, init, 16);
    clpe_rope_tensor q = {.buffer = qb, .heads = heads};
    struct {
        const char *what;
        clpe_rope_tensor q;
        const clpe_rope_tensor *k;
        clpe_positions pos;
        uint32_t flags;
        clpe_status want;
    } cases[] = {
        {"NULL buffer", {.heads = heads}, NULL, {0}, 0, CLPE_ERROR_NULL_BUFFER},
        {"no heads", {.buffer = qb}, NULL, {0}, 0, CLPE_ERROR_INVALID_ROPE},
        {"head pitch short", {.buffer = qb, .heads = heads, .head_pitch = 15}, NULL, {0}, 0,
         CLPE_ERROR_INVALID_PITCH},
        {"tokens overlap", {.buffer = qb, .heads = heads, .row_pitch = 16}, NULL, {0}, 0,
         CLPE_ERROR_INVALID_PITCH},
        {"misaligned", {.buffer = qb, .heads = heads, .offset = 2}, NULL, {0}, 0,
         CLPE_ERROR_MISALIGNED_OFFSET},
        {"too small", {.buffer = small, .heads = heads}, NULL, {0}, 0,
         CLPE_ERROR_BUFFER_TOO_SMALL},
        {"reserved", {.buffer = qb, .heads = heads, .reserved = {1, 0}}, NULL, {0}, 0,
         CLPE_ERROR_RESERVED_FIELD},
        {"k aliases q", q, &q, {0}, 0, CLPE_ERROR_ALIASING},
        {"unknown flag", q, NULL, {0}, 2, CLPE_ERROR_INVALID_CONFIG},
        {"overflowing start", q, NULL, {.source = CLPE_POSITIONS_START, .start = INT64_MAX - 1}, 0,
         CLPE_ERROR_POSITION_OVERFLOW},
        {"unknown source", q, NULL, {.source = (clpe_position_source)7}, 0,
         CLPE_ERROR_INVALID_POSITIONS},
        {"positions too small", q, NULL, {.source = CLPE_POSITIONS_IDS, .buffer = pos_buf}, 0,
         CLPE_ERROR_INDEX_BUFFER_TOO_SMALL},
        {"positions are q", q, NULL, {.source = CLPE_POSITIONS_PER_SEQUENCE, .buffer = qb}, 0,
         CLPE_ERROR_ALIASING},
    };
    for (size_t j = 0; j < sizeof cases / sizeof cases[0]; ++j) {
        clpe_status st = clpe_enqueue_rope(rope, cl.queue, batch, seq, &cases[j].q, cases[j].k,
                                           &cases[j].pos, cases[j].flags, 0, NULL, NULL);
        cr_expect_eq(st, cases[j].want, "%s: status %d, want %d", cases[j].what, st, cases[j].want);
    }
    cr_assert_eq(clpe_enqueue_rope(NULL, cl.queue, batch, seq, &q, NULL, NULL, 0, 0, NULL, NULL),
                 CLPE_ERROR_NULL_ENCODER);
    cr_assert_eq(clpe_enqueue_rope(rope, NULL, batch, seq, &q, NULL, NULL, 0, 0, NULL, NULL),
                 CLPE_ERROR_NULL_QUEUE);
    cr_assert_eq(clpe_enqueue_rope(rope, cl.queue, batch, seq, NULL, NULL, NULL, 0, 0, NULL, NULL),
                 CLPE_ERROR_NULL_POINTER);
    cr_assert_eq(clpe_enqueue_rope(rope, cl.queue, batch, seq, &q, NULL, NULL, 0, 1, NULL, NULL),
                 CLPE_ERROR_INVALID_WAIT_LIST);
    clFinish(cl.queue);
    float *after = test_buffer_read(&cl, qb, sizeof init);
    cr_assert_eq(memcmp(after, init, sizeof init), 0, "a refused call wrote to q");
    free(after);

    /* configurations */
    clpe_status st;
    clpe_rope_config bad = clpe_rope_config_default(16);
    bad.rotary_dim = 18;
    cr_assert_null(clpe_rope_create_host(&bad, &st));
    cr_assert_eq(st, CLPE_ERROR_INVALID_ROPE);
    bad = clpe_rope_config_default(16);
    bad.rotary_dim = 7;
    cr_assert_null(clpe_rope_create_host(&bad, &st));
    cr_assert_eq(st, CLPE_ERROR_INVALID_ROPE);
    bad = clpe_rope_config_default(16);
    bad.base = 1.0;
    cr_assert_null(clpe_rope_create_host(&bad, &st));
    cr_assert_eq(st, CLPE_ERROR_INVALID_BASE);
    bad = clpe_rope_config_default(16);
    bad.pairing = (clpe_rope_pairing)5;
    cr_assert_null(clpe_rope_create_host(&bad, &st));
    cr_assert_eq(st, CLPE_ERROR_INVALID_ROPE);
    bad = clpe_rope_config_default(16);
    bad.scaling = (clpe_rope_scaling)99;
    cr_assert_null(clpe_rope_create_host(&bad, &st));
    cr_assert_eq(st, CLPE_ERROR_INVALID_SCALING);
    bad = clpe_rope_config_default(16);
    bad.reserved[3] = 1;
    cr_assert_null(clpe_rope_create_host(&bad, &st));
    cr_assert_eq(st, CLPE_ERROR_RESERVED_FIELD);

    clReleaseMemObject(pos_buf);
    clReleaseMemObject(small);
    clReleaseMemObject(qb);
    clpe_rope_release(rope);
}
