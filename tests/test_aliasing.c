/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_aliasing.c - arguments that share memory, on the device and in the
 * host emulation alike: layouts that interleave without meeting (a fused
 * QKV buffer, cos and sin in the halves of one buffer) are accepted and give
 * the bits of separate buffers; layouts that meet, sub-buffers over another
 * argument, read-only outputs and objects that are not events in a wait
 * list are refused with their status, and nothing is written.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static test_cl cl;
static void setup(void) { test_cl_open(&cl); }
static void teardown(void) { test_cl_close(&cl); }
TestSuite(aliasing, .init = setup, .fini = teardown, .timeout = 120);

enum { D = 16, POISON = 0xA5 };

static size_t esize(clpe_dtype t)
{
    return t == CLPE_DTYPE_F64 ? 8 : t == CLPE_DTYPE_F32 ? 4 : 2;
}

/* Random bytes that are finite numbers of dtype t: small exact values. */
static void fill(clpe_dtype t, void *data, size_t count, uint64_t *rng)
{
    for (size_t k = 0; k < count; ++k) {
        double v = (double)(int)(test_rand_u64(rng) % 2001 - 1000) / 256.0;
        switch (t) {
        case CLPE_DTYPE_F32: ((float *)data)[k] = (float)v; break;
        case CLPE_DTYPE_F64: ((double *)data)[k] = v; break;
        case CLPE_DTYPE_BF16: {
            float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            ((uint16_t *)data)[k] = (uint16_t)(u >> 16);
            break;
        }
        case CLPE_DTYPE_F16: /* |v| in [0.5, 4), exact halves */
            ((uint16_t *)data)[k] = (uint16_t)((test_rand_u64(rng) & 0x83FFu) | (14u + k % 3) << 10);
            break;
        case CLPE_DTYPE_FP8_E4M3:
        case CLPE_DTYPE_FP8_E5M2: ((uint8_t *)data)[k] = (uint8_t)(test_rand_u64(rng) & 0xB7u); break;
        }
    }
}

static clpe_rope *make_rope(const clpe_rope_config *cfg)
{
    clpe_status st = CLPE_SUCCESS;
    clpe_rope *rope = clpe_rope_create(cl.context, cl.device, cfg, NULL, &st);
    cr_assert_not_null(rope, "clpe_rope_create: %d", st);
    return rope;
}

static void expect_bytes(const void *got, const void *want, size_t bytes, const char *what)
{
    size_t first = bytes;
    for (size_t k = 0; k < bytes && first == bytes; ++k)
        if (((const unsigned char *)got)[k] != ((const unsigned char *)want)[k])
            first = k;
    cr_expect_eq(first, bytes, "%s: differs at byte %zu of %zu", what, first, bytes);
}

/* ---- fused QKV ---------------------------------------------------------- */

/* A [batch, seq, hq + 2 hk, D] projection output (heads_outer: [batch,
 * hq + 2 hk, seq, D]) rotated in place as q = heads [0, hq) and k = heads
 * [hq, hq + hk), against the same q and k copied into two buffers of their
 * own: every q and k byte equal, the v heads untouched; the host emulation
 * on the fused host array gives the same bytes. */
static void fused_case(clpe_dtype dtype, clpe_rope_pairing pairing, bool heads_outer,
                       clpe_position_source source, uint64_t seed)
{
    if (!clpe_device_supports_dtype(cl.device, dtype))
        return;
    const size_t batch = 2, seq = 37, hq = 4, hk = 2, heads = hq + 2 * hk;
    clpe_rope_config cfg = clpe_rope_config_default(D);
    cfg.dtype = dtype;
    cfg.pairing = pairing;
    clpe_rope *rope = make_rope(&cfg);
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    cr_assert_not_null(host);
    size_t es = esize(dtype), count = batch * seq * heads * D, bytes = count * es;
    uint64_t rng = seed;
    unsigned char *qkv = malloc(bytes);
    fill(dtype, qkv, count, &rng);
    /* pitches in elements of the fused layout */
    size_t head_pitch = heads_outer ? seq * D : D, row_pitch = heads_outer ? D : heads * D,
           batch_pitch = seq * heads * D;
    /* separate q [batch, seq, hq, D] and k [batch, seq, hk, D], packed */
    unsigned char *sep[2];
    size_t sep_heads[2] = {hq, hk}, first_head[2] = {0, hq};
    for (int j = 0; j < 2; ++j) {
        sep[j] = malloc(batch * seq * sep_heads[j] * D * es);
        for (size_t b = 0; b < batch; ++b)
            for (size_t s = 0; s < seq; ++s)
                for (size_t h = 0; h < sep_heads[j]; ++h)
                    memcpy(sep[j] + (((b * seq + s) * sep_heads[j] + h) * D) * es,
                           qkv + (b * batch_pitch + s * row_pitch + (first_head[j] + h) * head_pitch) * es,
                           D * es);
    }
    int64_t positions[2 * 37];
    for (size_t k = 0; k < batch * seq; ++k)
        positions[k] = (int64_t)(test_rand_u64(&rng) % 100000) - 5000;
    cl_mem pbuf = test_buffer_from(&cl, positions, sizeof positions);
    clpe_positions pos = {.source = source, .start = 1234, .buffer = source ? pbuf : NULL};

    cl_mem fused = test_buffer_from(&cl, qkv, bytes);
    clpe_rope_tensor fq = {.buffer = fused, .heads = hq, .head_pitch = head_pitch,
                           .row_pitch = row_pitch, .batch_pitch = batch_pitch};
    clpe_rope_tensor fk = fq;
    fk.heads = hk;
    fk.offset = hq * head_pitch * es;
    cl_event done = NULL;
    clpe_status st = clpe_enqueue_rope(rope, cl.queue, batch, seq, &fq, &fk, &pos, 0, 0, NULL, &done);
    cr_assert_eq(st, CLPE_SUCCESS, "fused: %d (dtype %d pairing %d outer %d)", st, dtype, pairing,
                 heads_outer);
    test_event_finish(done);
    unsigned char *fused_after = test_buffer_read(&cl, fused, bytes);

    cl_mem bq = test_buffer_from(&cl, sep[0], batch * seq * hq * D * es);
    cl_mem bk = test_buffer_from(&cl, sep[1], batch * seq * hk * D * es);
    clpe_rope_tensor sq = {.buffer = bq, .heads = hq}, sk = {.buffer = bk, .heads = hk};
    st = clpe_enqueue_rope(rope, cl.queue, batch, seq, &sq, &sk, &pos, 0, 0, NULL, &done);
    cr_assert_eq(st, CLPE_SUCCESS);
    test_event_finish(done);
    unsigned char *sep_after[2] = {test_buffer_read(&cl, bq, batch * seq * hq * D * es),
                                   test_buffer_read(&cl, bk, batch * seq * hk * D * es)};

    /* the host emulation on the fused array */
    clpe_host_rope_tensor hq_t = {.data = qkv, .heads = hq, .head_pitch = head_pitch,
                                  .row_pitch = row_pitch, .batch_pitch = batch_pitch};
    clpe_host_rope_tensor hk_t = hq_t;
    hk_t.data = qkv + hq * head_pitch * es;
    hk_t.heads = hk;
    unsigned char *before = malloc(bytes);
    memcpy(before, qkv, bytes);
    st = clpe_host_rope(host, batch, seq, &hq_t, &hk_t, source, 1234, positions, 0);
    cr_assert_eq(st, CLPE_SUCCESS, "host fused: %d", st);
    expect_bytes(fused_after, qkv, bytes, "fused device against fused host");

    for (size_t b = 0; b < batch; ++b)
        for (size_t s = 0; s < seq; ++s)
            for (size_t h = 0; h < heads; ++h) {
                size_t at = (b * batch_pitch + s * row_pitch + h * head_pitch) * es;
                const unsigned char *want;
                if (h < hq + hk) {
                    int j = h < hq ? 0 : 1;
                    want = sep_after[j] + (((b * seq + s) * sep_heads[j] + (h - first_head[j])) * D) * es;
                } else {
                    want = before + at; /* v: untouched */
                }
                if (memcmp(fused_after + at, want, D * es) != 0)
                    cr_assert_fail("dtype %d pairing %d outer %d source %d: head %zu of token (%zu, %zu) "
                             "differs from separate buffers",
                             dtype, pairing, heads_outer, source, h, b, s);
            }
    free(before);
    free(sep_after[0]);
    free(sep_after[1]);
    free(fused_after);
    free(sep[0]);
    free(sep[1]);
    free(qkv);
    clReleaseMemObject(bq);
    clReleaseMemObject(bk);
    clReleaseMemObject(fused);
    clReleaseMemObject(pbuf);
    clpe_rope_release(host);
    clpe_rope_release(rope);
}

Test(aliasing, fused_qkv_equals_separate_buffers_bit_for_bit)
{
    const clpe_dtype dtypes[] = {CLPE_DTYPE_F32, CLPE_DTYPE_F16, CLPE_DTYPE_BF16, CLPE_DTYPE_F64};
    uint64_t seed = 7;
    for (size_t t = 0; t < 4; ++t)
        for (int pairing = 0; pairing < 2; ++pairing)
            for (int outer = 0; outer < 2; ++outer)
                fused_case(dtypes[t], (clpe_rope_pairing)pairing, outer,
                           (clpe_position_source)((t + pairing + outer) % 3), seed++);
}

/* cos and sin in the two halves of each row of one buffer, and in the two
 * halves of one buffer (cos rows, then sin rows): the bits of two buffers. */
Test(aliasing, cos_and_sin_in_one_buffer)
{
    clpe_rope_config cfg = clpe_rope_config_default(D);
    clpe_rope *rope = make_rope(&cfg);
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    const size_t n = 50, row = D * sizeof(float);
    float want_cos[50 * D], want_sin[50 * D];
    cr_assert_eq(clpe_host_rope_cache(host, -25, n, want_cos, want_sin, 0), CLPE_SUCCESS);
    for (int shape = 0; shape < 2; ++shape) {
        cl_mem buf = test_buffer_poisoned(&cl, 2 * n * row, POISON);
        clpe_tensor cos = {.buffer = buf, .row_pitch = shape == 0 ? 2 * D : 0};
        clpe_tensor sin = {.buffer = buf, .offset = shape == 0 ? row : n * row,
                           .row_pitch = shape == 0 ? 2 * D : 0};
        cl_event done = NULL;
        cr_assert_eq(clpe_enqueue_rope_cache(rope, cl.queue, -25, n, &cos, &sin, 0, NULL, &done),
                     CLPE_SUCCESS, "shape %d", shape);
        test_event_finish(done);
        float *got = test_buffer_read(&cl, buf, 2 * n * row);
        for (size_t s = 0; s < n; ++s) {
            const float *c = shape == 0 ? got + s * 2 * D : got + s * D;
            const float *sn = shape == 0 ? got + s * 2 * D + D : got + (n + s) * D;
            cr_assert_eq(memcmp(c, want_cos + s * D, row), 0, "shape %d: cos row %zu", shape, s);
            cr_assert_eq(memcmp(sn, want_sin + s * D, row), 0, "shape %d: sin row %zu", shape, s);
        }
        /* the host emulation takes the same interleaving */
        float host_buf[2 * 50 * D];
        float *hc = host_buf, *hs = shape == 0 ? host_buf + D : host_buf + n * D;
        cr_assert_eq(clpe_host_rope_cache(host, -25, n, hc, hs, shape == 0 ? 2 * D : 0),
                     CLPE_SUCCESS);
        cr_expect_eq(memcmp(host_buf, got, sizeof host_buf), 0, "shape %d: host differs", shape);
        free(got);
        clReleaseMemObject(buf);
    }
    clpe_rope_release(host);
    clpe_rope_release(rope);
}

/* ---- layouts that meet -------------------------------------------------- */

Test(aliasing, overlapping_layouts_are_refused_on_device_and_host_alike)
{
    clpe_rope_config cfg = clpe_rope_config_default(D);
    clpe_rope *rope = make_rope(&cfg);
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    const size_t batch = 2, seq = 3, heads = 4, count = batch * seq * heads * D;
    float *init = malloc(count * sizeof *init);
    for (size_t k = 0; k < count; ++k)
        init[k] = (float)k;
    cl_mem buf = test_buffer_from(&cl, init, count * sizeof *init);
    float *host_data = malloc(count * sizeof *init);
    memcpy(host_data, init, count * sizeof *init);
    struct {
        const char *what;
        size_t batch, q_heads, k_offset, k_heads, row_pitch, batch_pitch;
        clpe_status want;
    } cases[] = {
        /* q heads 0-1, k heads 1-2 of each token: head 1 in both */
        {"k starts inside q", 1, 2, D, 2, heads * D, 0, CLPE_ERROR_ALIASING},
        /* k half a head into q's last head */
        {"k half a head in", 1, 2, D + D / 2, 1, heads * D, 0, CLPE_ERROR_ALIASING},
        {"k is q", 1, 2, 0, 2, heads * D, 0, CLPE_ERROR_ALIASING},
        /* q's second token is k's first */
        {"k a token later", 1, 4, heads * D, 4, 0, 0, CLPE_ERROR_ALIASING},
        /* a layout that meets itself */
        {"tokens overlap", 1, 2, 2 * D, 2, D, 0, CLPE_ERROR_INVALID_PITCH},
        {"sequences overlap", 2, 2, 2 * D, 2, heads * D, heads * D, CLPE_ERROR_INVALID_PITCH},
        /* and the interleaving that does not meet */
        {"q heads 0-1, k heads 2-3", 2, 2, 2 * D, 2, heads * D, 0, CLPE_SUCCESS},
    };
    const size_t s = 2;
    for (size_t j = 0; j < sizeof cases / sizeof cases[0]; ++j) {
        clpe_rope_tensor q = {.buffer = buf, .heads = cases[j].q_heads,
                              .row_pitch = cases[j].row_pitch, .batch_pitch = cases[j].batch_pitch};
        clpe_rope_tensor k = q;
        k.heads = cases[j].k_heads;
        k.offset = cases[j].k_offset * sizeof(float);
        clpe_status dev =
            clpe_enqueue_rope(rope, cl.queue, cases[j].batch, s, &q, &k, NULL, 0, 0, NULL, NULL);
        clpe_host_rope_tensor hq = {.data = host_data, .heads = q.heads, .row_pitch = q.row_pitch,
                                    .batch_pitch = q.batch_pitch};
        clpe_host_rope_tensor hk = hq;
        hk.data = host_data + cases[j].k_offset;
        hk.heads = k.heads;
        clpe_status hst = clpe_host_rope(host, cases[j].batch, s, &hq, &hk, CLPE_POSITIONS_START,
                                         0, NULL, 0);
        cr_expect_eq(dev, cases[j].want, "%s: device %d, want %d", cases[j].what, dev, cases[j].want);
        cr_expect_eq(hst, cases[j].want, "%s: host %d, want %d", cases[j].what, hst, cases[j].want);
        if (cases[j].want != CLPE_SUCCESS) {
            clFinish(cl.queue);
            float *after = test_buffer_read(&cl, buf, count * sizeof *init);
            cr_expect_eq(memcmp(after, init, count * sizeof *init), 0, "%s: device wrote", cases[j].what);
            cr_expect_eq(memcmp(host_data, init, count * sizeof *init), 0, "%s: host wrote",
                         cases[j].what);
            free(after);
        }
    }
    clFinish(cl.queue);
    /* the host calls that had no aliasing check */
    cr_expect_eq(clpe_host_rope_cache(host, 0, 4, host_data, host_data, 0), CLPE_ERROR_ALIASING);
    cr_expect_eq(clpe_host_rope_cache(host, 0, 4, host_data, host_data + D / 2, 0),
                 CLPE_ERROR_ALIASING);
    int64_t *as_positions = (int64_t *)(void *)host_data;
    clpe_host_rope_tensor hq = {.data = host_data, .heads = 1};
    cr_expect_eq(clpe_host_rope(host, 1, 2, &hq, NULL, CLPE_POSITIONS_IDS, 0, as_positions, 0),
                 CLPE_ERROR_ALIASING);
    clpe_config ecfg = clpe_config_default(D);
    clpe_encoder *enc = clpe_encoder_create_host(&ecfg, NULL);
    int32_t ids[3] = {0, 1, 2};
    cr_expect_eq(clpe_host_gather(enc, 1, 3, ids, host_data, 4, 0, host_data, 0,
                                  CLPE_POSITIONS_START, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    cr_expect_eq(clpe_host_gather(enc, 1, 3, ids, host_data, 4, 0, host_data + 4 * D, 0,
                                  CLPE_POSITIONS_START, 0, NULL, NULL),
                 CLPE_SUCCESS); /* table rows 0-3, output rows 4-6 of one array */
    cr_expect_eq(clpe_host_add(enc, 1, 2, host_data, 0, 0, CLPE_POSITIONS_IDS, 0, as_positions),
                 CLPE_ERROR_ALIASING);
    clpe_encoder_release(enc);
    free(host_data);
    free(init);
    clReleaseMemObject(buf);
    clpe_rope_release(host);
    clpe_rope_release(rope);
}

/* ---- sub-buffers and host pointers ------------------------------------- */

/* Bytes a sub-buffer's origin must be a multiple of on this device. */
static size_t sub_align(void)
{
    cl_uint bits = 0;
    clGetDeviceInfo(cl.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL);
    return bits / 8 ? bits / 8 : 128;
}

static cl_mem sub_buffer(cl_mem parent, size_t origin, size_t size)
{
    cl_buffer_region region = {origin, size};
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region,
                                 &err);
    cr_assert_eq(err, CL_SUCCESS, "clCreateSubBuffer: %d", err);
    return m;
}

Test(aliasing, sub_buffers_are_compared_through_their_parent)
{
    const size_t align = sub_align(), rows = 8, row = D * sizeof(float);
    size_t bytes = 4 * align + 4 * rows * row;
    cl_mem parent = test_buffer_poisoned(&cl, bytes, POISON);
    cl_mem low = sub_buffer(parent, 0, 2 * align + rows * row);
    cl_mem high = sub_buffer(parent, 2 * align + 2 * rows * row, 2 * align);
    cl_mem over_low = sub_buffer(parent, align, align); /* inside low */
    unsigned char *before = test_buffer_read(&cl, parent, bytes);

    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = test_encoder(&cl, &cfg);
    clpe_tensor x_parent = {.buffer = parent}, out_low = {.buffer = low};
    clpe_tensor x_high = {.buffer = high}, out_over = {.buffer = over_low};
    /* add_out, x and out a buffer and its sub-buffer, or overlapping sub-buffers */
    cr_expect_eq(clpe_enqueue_add_out(enc, cl.queue, 1, 2, &x_parent, &out_low, NULL, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    clpe_tensor x_low = {.buffer = low};
    cr_expect_eq(clpe_enqueue_add_out(enc, cl.queue, 1, 2, &x_low, &out_over, NULL, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    /* rope: q the parent, k a sub-buffer */
    clpe_rope_config rcfg = clpe_rope_config_default(D);
    clpe_rope *rope = clpe_rope_create_like(enc, &rcfg, NULL);
    cr_assert_not_null(rope);
    clpe_rope_tensor q = {.buffer = parent, .heads = 1}, k = {.buffer = high, .heads = 1};
    cr_expect_eq(clpe_enqueue_rope(rope, cl.queue, 1, 2, &q, &k, NULL, 0, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    /* the cache: cos in the parent, sin in a sub-buffer */
    clpe_tensor cos = {.buffer = parent}, sin = {.buffer = high};
    cr_expect_eq(clpe_enqueue_rope_cache(rope, cl.queue, 0, 2, &cos, &sin, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    /* positions in a sub-buffer over the output */
    clpe_positions pos = {.source = CLPE_POSITIONS_PER_SEQUENCE, .buffer = over_low};
    cr_expect_eq(clpe_enqueue_add(enc, cl.queue, 1, 2, &x_low, &pos, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    /* gather: the bad-id report a sub-buffer over the ids, or over the table */
    int32_t ids[2] = {0, 1};
    cl_mem id_parent = test_buffer_poisoned(&cl, 2 * align, 0);
    cl_int err = clEnqueueWriteBuffer(cl.queue, id_parent, CL_TRUE, 0, sizeof ids, ids, 0, NULL, NULL);
    cr_assert_eq(err, CL_SUCCESS);
    cl_mem id_sub = sub_buffer(id_parent, 0, align);
    clpe_token_ids tid = {.buffer = id_parent};
    clpe_tensor emb = {.buffer = high}, out = {.buffer = low};
    cr_expect_eq(clpe_enqueue_gather(enc, cl.queue, 1, 2, &tid, &emb, CLPE_DTYPE_F32, 2, &out,
                                     NULL, id_sub, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    cr_expect_eq(clpe_enqueue_gather(enc, cl.queue, 1, 2, &tid, &emb, CLPE_DTYPE_F32, 2, &out,
                                     NULL, parent, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    /* pad positions written into a sub-buffer over the ids */
    cr_expect_eq(clpe_enqueue_pad_positions(enc, cl.queue, 1, 2, &tid, 0, 1, 0, id_sub, 0, 0, NULL,
                                            NULL),
                 CLPE_ERROR_ALIASING);
    /* rope positions read from a sub-buffer of q */
    clpe_positions qpos = {.source = CLPE_POSITIONS_PER_SEQUENCE, .buffer = high};
    clpe_rope_tensor q_parent = {.buffer = parent, .heads = 1};
    cr_expect_eq(clpe_enqueue_rope(rope, cl.queue, 1, 2, &q_parent, NULL, &qpos, 0, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    clFinish(cl.queue);
    unsigned char *after = test_buffer_read(&cl, parent, bytes);
    cr_expect_eq(memcmp(after, before, bytes), 0, "a refused call wrote");
    int32_t *ids_after = test_buffer_read(&cl, id_parent, sizeof ids);
    cr_expect_eq(memcmp(ids_after, ids, sizeof ids), 0, "the ids were overwritten");
    free(ids_after);
    free(after);

    /* disjoint sub-buffers of one parent are independent: the add gives
     * what the host emulation gives */
    cl_event done = NULL;
    cr_expect_eq(clpe_enqueue_add_out(enc, cl.queue, 1, 2, &x_high, &out_low, NULL, 0, NULL, &done),
                 CLPE_SUCCESS);
    test_event_finish(done);
    float want[2 * D];
    memset(want, POISON, sizeof want);
    cr_assert_eq(clpe_host_add(enc, 1, 2, want, 0, 0, CLPE_POSITIONS_START, 0, NULL), CLPE_SUCCESS);
    float *got = test_buffer_read(&cl, low, sizeof want);
    cr_expect_eq(memcmp(got, want, sizeof want), 0, "add through disjoint sub-buffers");
    free(got);

    clReleaseMemObject(id_sub);
    clReleaseMemObject(id_parent);
    clpe_rope_release(rope);
    clpe_encoder_release(enc);
    clReleaseMemObject(over_low);
    clReleaseMemObject(high);
    clReleaseMemObject(low);
    clReleaseMemObject(parent);
    free(before);
}

Test(aliasing, buffers_over_the_same_host_memory_collide)
{
    static float host[4 * D];
    cl_int err;
    cl_mem a = clCreateBuffer(cl.context, CL_MEM_USE_HOST_PTR, sizeof host, host, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_mem b = clCreateBuffer(cl.context, CL_MEM_USE_HOST_PTR, sizeof host / 2, host + 2 * D, &err);
    cr_assert_eq(err, CL_SUCCESS);
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = test_encoder(&cl, &cfg);
    clpe_tensor x = {.buffer = a}, out = {.buffer = b};
    cr_expect_eq(clpe_enqueue_add_out(enc, cl.queue, 1, 2, &x, &out, NULL, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    clpe_encoder_release(enc);
    clReleaseMemObject(b);
    clReleaseMemObject(a);
}

/* ---- access flags ------------------------------------------------------- */

Test(aliasing, read_only_outputs_and_write_only_inputs_are_refused)
{
    const size_t bytes = 8 * D * sizeof(float);
    cl_int err;
    cl_mem ro = clCreateBuffer(cl.context, CL_MEM_READ_ONLY, bytes, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_mem wo = clCreateBuffer(cl.context, CL_MEM_WRITE_ONLY, bytes, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_mem rw = test_buffer_poisoned(&cl, bytes, POISON);
    cl_mem rw2 = test_buffer_poisoned(&cl, bytes, 0);
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = test_encoder(&cl, &cfg);
    clpe_rope_config rcfg = clpe_rope_config_default(D);
    clpe_rope *rope = clpe_rope_create_like(enc, &rcfg, NULL);
    cr_assert_not_null(rope);
    clpe_tensor t_ro = {.buffer = ro}, t_wo = {.buffer = wo}, t_rw = {.buffer = rw};
    clpe_rope_tensor q_ro = {.buffer = ro, .heads = 1}, q_rw = {.buffer = rw, .heads = 1};
    clpe_token_ids ids_wo = {.buffer = wo}, ids_ok = {.buffer = rw2};
    const clpe_status want = CLPE_ERROR_BUFFER_ACCESS;
    cr_expect_eq(clpe_enqueue_table(enc, cl.queue, 0, 2, &t_ro, 0, NULL, NULL), want);
    cr_expect_eq(clpe_enqueue_add(enc, cl.queue, 1, 2, &t_ro, NULL, 0, NULL, NULL), want);
    cr_expect_eq(clpe_enqueue_add(enc, cl.queue, 1, 2, &t_wo, NULL, 0, NULL, NULL), want);
    cr_expect_eq(clpe_enqueue_add_out(enc, cl.queue, 1, 2, &t_rw, &t_ro, NULL, 0, NULL, NULL), want);
    cr_expect_eq(clpe_enqueue_add_out(enc, cl.queue, 1, 2, &t_wo, &t_rw, NULL, 0, NULL, NULL), want);
    cr_expect_eq(clpe_enqueue_rope(rope, cl.queue, 1, 2, &q_ro, NULL, NULL, 0, 0, NULL, NULL), want);
    cr_expect_eq(clpe_enqueue_rope(rope, cl.queue, 1, 2, &q_rw, &q_ro, NULL, 0, 0, NULL, NULL), want);
    cr_expect_eq(clpe_enqueue_rope_cache(rope, cl.queue, 0, 2, &t_ro, &t_rw, 0, NULL, NULL), want);
    cr_expect_eq(clpe_enqueue_gather(enc, cl.queue, 1, 2, &ids_ok, &t_rw, CLPE_DTYPE_F32, 1, &t_ro,
                                     NULL, NULL, 0, NULL, NULL),
                 want);
    cr_expect_eq(clpe_enqueue_gather(enc, cl.queue, 1, 2, &ids_wo, &t_rw, CLPE_DTYPE_F32, 1, &t_ro,
                                     NULL, NULL, 0, NULL, NULL),
                 want);
    clpe_tensor out2 = {.buffer = rw2, .offset = 4 * D * sizeof(float)};
    cr_expect_eq(clpe_enqueue_gather(enc, cl.queue, 1, 2, &ids_ok, &t_rw, CLPE_DTYPE_F32, 1, &out2,
                                     NULL, ro, 0, NULL, NULL),
                 want); /* the report is written */
    cr_expect_eq(clpe_enqueue_pad_positions(enc, cl.queue, 1, 2, &ids_ok, 0, 1, 0, ro, 0, 0, NULL,
                                            NULL),
                 want);
    /* a read-only input and a write-only output are what those flags are for */
    cl_event done = NULL;
    cr_expect_eq(clpe_enqueue_add_out(enc, cl.queue, 1, 2, &t_ro, &t_wo, NULL, 0, NULL, &done),
                 CLPE_SUCCESS);
    test_event_finish(done);
    clFinish(cl.queue);
    unsigned char *after = test_buffer_read(&cl, rw, bytes);
    for (size_t k = 0; k < bytes; ++k)
        cr_assert_eq(after[k], POISON, "byte %zu written", k);
    free(after);
    clpe_rope_release(rope);
    clpe_encoder_release(enc);
    clReleaseMemObject(rw2);
    clReleaseMemObject(rw);
    clReleaseMemObject(wo);
    clReleaseMemObject(ro);
}

/* ---- wait lists --------------------------------------------------------- */

/* A cl_mem in a wait list is refused (some runtimes answer event queries on
 * any object, and would wait on it forever); an event of another context is
 * CLPE_ERROR_CONTEXT_MISMATCH. Every entry point shares the check. */
Test(aliasing, a_wait_list_holds_events_of_this_context, .timeout = 60)
{
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = test_encoder(&cl, &cfg);
    clpe_rope_config rcfg = clpe_rope_config_default(D);
    clpe_rope *rope = clpe_rope_create_like(enc, &rcfg, NULL);
    cr_assert_not_null(rope);
    const size_t bytes = 4 * D * sizeof(float);
    cl_mem buf = test_buffer_poisoned(&cl, bytes, POISON);
    cl_mem other_buf = test_buffer_poisoned(&cl, 64, 0);
    cl_int err;
    cl_context other = clCreateContext(NULL, 1, &cl.device, NULL, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_event foreign = clCreateUserEvent(other, &err);
    cr_assert_eq(err, CL_SUCCESS);
    clpe_tensor out = {.buffer = buf};
    clpe_rope_tensor q = {.buffer = buf, .heads = 1};
    cl_event not_events[2] = {(cl_event)buf, (cl_event)other_buf};
    for (int j = 0; j < 2; ++j) {
        cl_event *list = &not_events[j];
        cr_expect_eq(clpe_enqueue_table(enc, cl.queue, 0, 2, &out, 1, list, NULL),
                     CLPE_ERROR_INVALID_WAIT_LIST);
        cr_expect_eq(clpe_enqueue_add(enc, cl.queue, 1, 2, &out, NULL, 1, list, NULL),
                     CLPE_ERROR_INVALID_WAIT_LIST);
        cr_expect_eq(clpe_enqueue_rope(rope, cl.queue, 1, 2, &q, NULL, NULL, 0, 1, list, NULL),
                     CLPE_ERROR_INVALID_WAIT_LIST);
    }
    cr_expect_eq(clpe_enqueue_table(enc, cl.queue, 0, 2, &out, 1, &foreign, NULL),
                 CLPE_ERROR_CONTEXT_MISMATCH);
    cr_expect_eq(clpe_enqueue_rope(rope, cl.queue, 1, 2, &q, NULL, NULL, 0, 1, &foreign, NULL),
                 CLPE_ERROR_CONTEXT_MISMATCH);
    /* the queue still runs: nothing waits on a non-event */
    cr_assert_eq(clFinish(cl.queue), CL_SUCCESS);
    unsigned char *after = test_buffer_read(&cl, buf, bytes);
    for (size_t k = 0; k < bytes; ++k)
        cr_assert_eq(after[k], POISON, "byte %zu written", k);
    free(after);
    clSetUserEventStatus(foreign, CL_COMPLETE);
    clReleaseEvent(foreign);
    clReleaseContext(other);
    clReleaseMemObject(other_buf);
    clReleaseMemObject(buf);
    clpe_rope_release(rope);
    clpe_encoder_release(enc);
}
