/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_add.c - the fused add is exactly the unfused steps "x *= scale;
 * x += table" in float32, as clpe.h documents (the product rounded, then
 * the sum rounded: two operations, not an fma), with the table taken from
 * the device's own clpe_enqueue_table output (not from the host emulation),
 * and every position source picks the rows the table has at those
 * positions.
 *
 * The expected buffer is the initial x with each region element replaced by
 * round(round(x * (float)scale) + table[pos(b, s)][i]) computed here in
 * float32 (the product goes through a volatile so the compiler cannot
 * contract the two into an fma); the whole buffer is memcmp'd, so row
 * padding, sequence padding and the bytes around the region must keep
 * their values.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct add_case {
    size_t batch, seq;
    size_t row_pitch, batch_pitch; /* 0: default */
    size_t offset;                 /* elements */
    clpe_position_source source;
    int64_t start;
    const int64_t *positions;      /* per-sequence starts or ids */
    size_t positions_offset;       /* int64 elements of filler before them */
    int null_positions;            /* pass NULL: START at 0 */
} add_case;

static int64_t position_of(const add_case *c, size_t b, size_t s)
{
    if (c->null_positions)
        return (int64_t)s;
    switch (c->source) {
    case CLPE_POSITIONS_START:
        return c->start + (int64_t)s;
    case CLPE_POSITIONS_PER_SEQUENCE:
        return c->positions[b] + (int64_t)s;
    default:
        return c->positions[b * c->seq + s];
    }
}

/* The device table's row for every (b, s) of the case: one table call per
 * sequence for START-like sources, one per row for explicit ids. Returns
 * batch * seq rows of d floats. */
static float *table_rows(test_cl *t, clpe_encoder *enc, uint32_t d, const add_case *c)
{
    size_t rows = c->batch * c->seq;
    size_t bytes = rows * d * sizeof(float);
    cl_mem buf = test_buffer_poisoned(t, bytes, 0xFF);
    int per_row = !c->null_positions && c->source == CLPE_POSITIONS_IDS;
    for (size_t b = 0; b < c->batch; ++b) {
        if (per_row) {
            for (size_t s = 0; s < c->seq; ++s) {
                clpe_tensor out = {.buffer = buf, .offset = (b * c->seq + s) * d * sizeof(float), .row_pitch = 0, .batch_pitch = 0};
                cr_assert_eq(clpe_enqueue_table(enc, t->queue, position_of(c, b, s), 1, &out, 0,
                                                NULL, NULL),
                             CLPE_SUCCESS);
            }
        } else {
            clpe_tensor out = {.buffer = buf, .offset = b * c->seq * d * sizeof(float), .row_pitch = 0, .batch_pitch = 0};
            cr_assert_eq(clpe_enqueue_table(enc, t->queue, position_of(c, b, 0), c->seq, &out, 0,
                                            NULL, NULL),
                         CLPE_SUCCESS);
        }
    }
    float *host = test_buffer_read(t, buf, bytes);
    clReleaseMemObject(buf);
    return host;
}

static void fill_random(float *x, size_t count, uint64_t *rng)
{
    for (size_t k = 0; k < count; ++k) {
        uint64_t r = test_rand_u64(rng);
        float mant = (float)((r >> 11) & 0xFFFFFF) / (float)(1 << 24);
        int ex = (int)((r >> 40) % 30) - 15;
        x[k] = ldexpf((r & 1) ? -mant : mant, ex);
    }
}

/* The documented arithmetic of the add, in float32: two roundings. */
static float mul_then_add(float x, float scale, float pe)
{
    volatile float prod = x * scale; /* rounded here, never fused */
    return prod + pe;
}

/* Run one add on the device and compare with mul_then_add over the device
 * table.
 * x0 NULL means random activations; otherwise every element starts as *x0. */
static void run_case(test_cl *t, clpe_encoder *enc, const add_case *c, const float *x0,
                     uint64_t seed)
{
    clpe_config cfg;
    cr_assert_eq(clpe_encoder_get_config(enc, &cfg), CLPE_SUCCESS);
    uint32_t d = cfg.d;
    size_t rp = c->row_pitch ? c->row_pitch : d;
    size_t bp = c->batch_pitch ? c->batch_pitch : c->seq * rp;
    size_t count = c->offset + (c->batch - 1) * bp + (c->seq - 1) * rp + d + 5;
    size_t bytes = count * sizeof(float);
    float *init = malloc(bytes);
    cr_assert(init);
    uint64_t rng = seed;
    fill_random(init, count, &rng);
    if (x0)
        for (size_t b = 0; b < c->batch; ++b)
            for (size_t s = 0; s < c->seq; ++s)
                for (uint32_t i = 0; i < d; ++i)
                    init[c->offset + b * bp + s * rp + i] = *x0;

    float *table = table_rows(t, enc, d, c);
    float *expect = malloc(bytes);
    cr_assert(expect);
    memcpy(expect, init, bytes);
    float scale = (float)cfg.scale;
    for (size_t b = 0; b < c->batch; ++b)
        for (size_t s = 0; s < c->seq; ++s)
            for (uint32_t i = 0; i < d; ++i) {
                float *e = &expect[c->offset + b * bp + s * rp + i];
                *e = mul_then_add(*e, scale, table[(b * c->seq + s) * d + i]);
            }

    cl_mem xbuf = test_buffer_from(t, init, bytes);
    cl_mem pbuf = NULL;
    size_t npos = c->source == CLPE_POSITIONS_PER_SEQUENCE ? c->batch
                  : c->source == CLPE_POSITIONS_IDS      ? c->batch * c->seq
                                                         : 0;
    if (npos && !c->null_positions) {
        /* filler before the positions, so a wrong offset reads garbage */
        size_t total = c->positions_offset + npos;
        int64_t *p = malloc(total * sizeof *p);
        cr_assert(p);
        for (size_t k = 0; k < c->positions_offset; ++k)
            p[k] = INT64_C(0x5555555555555555);
        memcpy(p + c->positions_offset, c->positions, npos * sizeof *p);
        pbuf = test_buffer_from(t, p, total * sizeof *p);
        free(p);
    }
    clpe_positions pos = {.source = c->source, .start = c->start, .buffer = pbuf, .offset = c->positions_offset * sizeof(int64_t)};
    clpe_tensor x = {.buffer = xbuf, .offset = c->offset * sizeof(float), .row_pitch = c->row_pitch, .batch_pitch = c->batch_pitch};
    clpe_status st = clpe_enqueue_add(enc, t->queue, c->batch, c->seq, &x,
                                      c->null_positions ? NULL : &pos, 0, NULL, NULL);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_enqueue_add: %s", clpe_status_string(st));
    float *got = test_buffer_read(t, xbuf, bytes);
    if (memcmp(got, expect, bytes) != 0) {
        size_t k = 0;
        while (memcmp(got + k, expect + k, sizeof(float)) == 0)
            ++k;
        cr_expect(0,
                  "d=%u scale=%g source=%d batch=%zu seq=%zu rp=%zu bp=%zu: first difference "
                  "at element %zu: got %a, %a * %a + table = %a",
                  d, cfg.scale, (int)c->source, c->batch, c->seq, rp, bp, k, got[k], init[k],
                  scale, expect[k]);
    }
    free(got);
    free(expect);
    free(table);
    free(init);
    if (pbuf)
        clReleaseMemObject(pbuf);
    clReleaseMemObject(xbuf);
}

/* Cases over one encoder: every source, default and padded pitches. */
static void run_all_sources(test_cl *t, clpe_encoder *enc, uint32_t d, const float *x0,
                            uint64_t seed)
{
    uint64_t rng = seed;
    const size_t batch = 3, seq = 29;
    const int64_t starts[3] = {0, -77, (INT64_C(1) << 40) + 3};
    int64_t ids[3 * 29];
    for (size_t k = 0; k < batch * seq; ++k)
        ids[k] = k % 3 ? (int64_t)(test_rand_u64(&rng) % 100000) - 50000
                       : (int64_t)test_rand_u64(&rng);
    ids[1] = INT64_MAX;
    ids[2] = INT64_MIN;
    size_t rp = d + 5, bp = seq * (d + 5) + 9;
    add_case cases[] = {
        {batch, seq, 0, 0, 0, CLPE_POSITIONS_START, -10, NULL, 0, 0},
        {batch, seq, rp, bp, 3, CLPE_POSITIONS_START, INT64_MAX - 28, NULL, 0, 0},
        {batch, seq, 0, 0, 0, CLPE_POSITIONS_PER_SEQUENCE, 0, starts, 0, 0},
        {batch, seq, rp, bp, 1, CLPE_POSITIONS_PER_SEQUENCE, 0, starts, 2, 0},
        {batch, seq, 0, 0, 0, CLPE_POSITIONS_IDS, 0, ids, 0, 0},
        {batch, seq, rp, bp, 2, CLPE_POSITIONS_IDS, 0, ids, 3, 0},
        {batch, seq, rp, bp, 0, CLPE_POSITIONS_START, 0, NULL, 0, 1}, /* positions NULL */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k)
        run_case(t, enc, &cases[k], x0, seed + k);
}

static void scales_for(uint32_t d, clpe_freq freq, clpe_layout layout, double base)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = test_config(d, base, freq, layout);
    clpe_encoder *enc1 = test_encoder(&t, &cfg);
    run_all_sources(&t, enc1, d, NULL, 100 + d);
    cfg.scale = sqrt((double)d);
    clpe_encoder *encs = test_encoder_like(enc1, &cfg);
    run_all_sources(&t, encs, d, NULL, 200 + d);
    clpe_encoder_release(encs);
    clpe_encoder_release(enc1);
    test_cl_close(&t);
}

Test(add, fma_of_table_d8) { scales_for(8, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED, 10000.0); }
Test(add, fma_of_table_d64_split)
{
    scales_for(64, CLPE_FREQ_TENSOR2TENSOR, CLPE_LAYOUT_SPLIT, 10000.0);
}
Test(add, fma_of_table_d130) { scales_for(130, CLPE_FREQ_PAPER, CLPE_LAYOUT_SPLIT, 500000.0); }
Test(add, fma_of_table_d2) { scales_for(2, CLPE_FREQ_TENSOR2TENSOR, CLPE_LAYOUT_INTERLEAVED, 2.0); }

/* With x = -0 and scale 1, -0 * 1 + pe = pe for every pe (-0 + pe is pe,
 * and -0 + -0 is -0), so the add must write exactly the table's rows: each
 * position source picks the same rows as the table at those positions. */
Test(add, sources_give_table_rows)
{
    test_cl t;
    test_cl_open(&t);
    const uint32_t ds[] = {2, 8, 64};
    for (size_t k = 0; k < 3; ++k) {
        clpe_config cfg = test_config(ds[k], 10000.0, CLPE_FREQ_PAPER, (clpe_layout)(k % 2));
        clpe_encoder *enc = test_encoder(&t, &cfg);
        const float neg_zero = -0.0f;
        run_all_sources(&t, enc, ds[k], &neg_zero, 300 + k);
        clpe_encoder_release(enc);
    }
    test_cl_close(&t);
}

/* Rounding is a multiply then an add, not fma's single rounding: use
 * inputs where the two differ and check the device picks the documented
 * one. With an inexact scale most random x give an inexact product, so a
 * kernel that fused them into an fma would fail here. */
Test(add, two_roundings_not_fma)
{
    test_cl t;
    test_cl_open(&t);
    uint32_t d = 64;
    clpe_config cfg = test_config(d, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    cfg.scale = sqrt((double)d * 1.5);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    size_t seq = 64, count = seq * d;
    float *x = malloc(count * sizeof *x);
    cr_assert(x);
    uint64_t rng = 9;
    fill_random(x, count, &rng);
    float *table = malloc(count * sizeof *table);
    cr_assert(table);
    cl_mem tbuf = test_buffer_poisoned(&t, count * sizeof(float), 0);
    clpe_tensor tt = {.buffer = tbuf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    cr_assert_eq(clpe_enqueue_table(enc, t.queue, 3, seq, &tt, 0, NULL, NULL), CLPE_SUCCESS);
    cr_assert_eq(clEnqueueReadBuffer(t.queue, tbuf, CL_TRUE, 0, count * sizeof(float), table, 0,
                                     NULL, NULL),
                 CL_SUCCESS);
    float scale = (float)cfg.scale;
    size_t differ = 0;
    for (size_t k = 0; k < count; ++k)
        if (mul_then_add(x[k], scale, table[k]) != fmaf(x[k], scale, table[k]))
            ++differ;
    cr_assert_gt(differ, 10, "test inputs do not separate fma from mul+add (%zu)", differ);
    cl_mem xbuf = test_buffer_from(&t, x, count * sizeof(float));
    clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = 3, .buffer = NULL, .offset = 0};
    clpe_tensor xt = {.buffer = xbuf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    cr_assert_eq(clpe_enqueue_add(enc, t.queue, 1, seq, &xt, &pos, 0, NULL, NULL), CLPE_SUCCESS);
    float *got = test_buffer_read(&t, xbuf, count * sizeof(float));
    size_t bad = 0;
    for (size_t k = 0; k < count; ++k) {
        float e = mul_then_add(x[k], scale, table[k]);
        if (memcmp(&e, &got[k], 4) != 0)
            ++bad;
    }
    cr_expect_eq(bad, 0, "%zu of %zu elements are not x * scale + pe rounded twice (%zu would "
                         "differ under fma)", bad, count, differ);
    free(got);
    free(table);
    free(x);
    clReleaseMemObject(xbuf);
    clReleaseMemObject(tbuf);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}
