/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_guards.c - poisoned buffers with guard regions: the enqueue writes
 * every element of its region exactly once and nothing else, row padding
 * and sequence padding included.
 *
 * Layout of every buffer: GUARD elements of poison, the region (rows of d
 * elements with row_pitch > d, sequences with batch_pitch larger than
 * needed), GUARD more elements of poison. After the call:
 *  - every byte outside the region's elements still holds the poison;
 *  - table: every region element equals the host emulation's value, under
 *    two different poison patterns (so no element can pass by happening to
 *    hold the poison: it was written, and its value does not depend on what
 *    was there before);
 *  - add: every region element equals the host emulation of one add
 *    (applied twice, or not at all, gives another value).
 * Widths with pair counts that do not fill a work-group (d = 6, 130) make
 * the kernel's spare work-items visible if they write: they would land in
 * the row padding.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 67 /* elements; odd so the region starts at no round address */

static int in_region(size_t k, size_t off, size_t batch, size_t seq, size_t rp, size_t bp,
                     uint32_t d, size_t *b_out, size_t *s_out, size_t *i_out)
{
    if (k < off)
        return 0;
    size_t rel = k - off;
    size_t b = rel / bp, in_seq = rel % bp;
    if (b >= batch)
        return 0;
    size_t s = in_seq / rp, i = in_seq % rp;
    if (s >= seq || i >= d)
        return 0;
    *b_out = b;
    *s_out = s;
    *i_out = i;
    return 1;
}

/* Table of n rows at [start, start+n) with row pitch rp into a buffer
 * poisoned with `poison`; checks everything and returns the count of
 * elements checked in the region. */
static size_t guard_table(test_cl *t, clpe_encoder *enc, int64_t start, size_t n, size_t rp,
                          unsigned char poison, size_t guard_after)
{
    clpe_config cfg;
    cr_assert_eq(clpe_encoder_get_config(enc, &cfg), CLPE_SUCCESS);
    uint32_t d = cfg.d;
    size_t count = GUARD + (n - 1) * rp + d + guard_after;
    size_t bytes = count * sizeof(float);
    cl_mem buf = test_buffer_poisoned(t, bytes, poison);
    clpe_tensor out = {.buffer = buf, .offset = GUARD * sizeof(float), .row_pitch = rp, .batch_pitch = 0};
    clpe_status st = clpe_enqueue_table(enc, t->queue, start, n, &out, 0, NULL, NULL);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_enqueue_table: %s", clpe_status_string(st));
    float *got = test_buffer_read(t, buf, bytes);
    float *want = malloc(n * d * sizeof *want);
    cr_assert(want);
    cr_assert_eq(clpe_host_table(enc, start, n, want, d), CLPE_SUCCESS);

    unsigned char pbytes[sizeof(float)];
    memset(pbytes, poison, sizeof pbytes);
    size_t region = 0, bad_in = 0, bad_out = 0, first_bad_out = count, first_bad_in = count;
    for (size_t k = 0; k < count; ++k) {
        size_t b, s, i;
        if (in_region(k, GUARD, 1, n, rp, n * rp, d, &b, &s, &i)) {
            ++region;
            if (memcmp(&got[k], &want[s * d + i], sizeof(float)) != 0) {
                if (!bad_in++)
                    first_bad_in = k;
            }
        } else if (memcmp(&got[k], pbytes, sizeof(float)) != 0) {
            if (!bad_out++)
                first_bad_out = k;
        }
    }
    cr_expect_eq(region, n * d);
    cr_expect_eq(bad_in, 0,
                 "table d=%u n=%zu rp=%zu poison 0x%02x: %zu region elements wrong (first: "
                 "element %zu)",
                 d, n, rp, poison, bad_in, first_bad_in);
    cr_expect_eq(bad_out, 0,
                 "table d=%u n=%zu rp=%zu poison 0x%02x: %zu elements outside the region "
                 "changed (first: element %zu, guard %d, region starts at %d)",
                 d, n, rp, poison, bad_out, first_bad_out, GUARD, GUARD);
    free(want);
    free(got);
    clReleaseMemObject(buf);
    return region;
}

/* Widths, row pitches and row counts that stress the edges: spare
 * work-items (pairs not a multiple of the group), odometer runs cut short
 * (n not a multiple of the rows one work-item walks). */
typedef struct shape {
    uint32_t d;
    size_t rp;
    size_t n;
} shape;
static const shape shapes[] = {
    {2, 3, 1}, {2, 7, 53}, {6, 16, 37}, {8, 9, 100}, {130, 131, 21}, {130, 200, 17},
    {512, 520, 9}, {1000, 1003, 5},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

Test(guards, table_two_poisons)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config c0 = test_config(2, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_encoder *root = test_encoder(&t, &c0);
    for (size_t k = 0; k < N_SHAPES; ++k) {
        for (int layout = 0; layout < 2; ++layout) {
            clpe_config cfg = test_config(shapes[k].d, 10000.0,
                                          k % 2 ? CLPE_FREQ_TENSOR2TENSOR : CLPE_FREQ_PAPER,
                                          (clpe_layout)layout);
            clpe_encoder *enc = test_encoder_like(root, &cfg);
            int64_t start = k % 3 == 0 ? -(int64_t)shapes[k].n / 2 : (INT64_C(1) << 35) + 1;
            guard_table(&t, enc, start, shapes[k].n, shapes[k].rp, 0xA5, GUARD);
            guard_table(&t, enc, start, shapes[k].n, shapes[k].rp, 0x3C, GUARD);
            /* NaN poison, and no guard after: the region ends at the buffer's end */
            guard_table(&t, enc, start, shapes[k].n, shapes[k].rp, 0xFF, 0);
            clpe_encoder_release(enc);
        }
    }
    clpe_encoder_release(root);
    test_cl_close(&t);
}

/* Fused add over [batch, seq, d] with padded rows and sequences. */
static void guard_add(test_cl *t, clpe_encoder *enc, size_t batch, size_t seq, size_t rp,
                      size_t bp, clpe_position_source source, const int64_t *positions,
                      unsigned char poison, uint64_t seed)
{
    clpe_config cfg;
    cr_assert_eq(clpe_encoder_get_config(enc, &cfg), CLPE_SUCCESS);
    uint32_t d = cfg.d;
    size_t count = GUARD + (batch - 1) * bp + (seq - 1) * rp + d + GUARD;
    size_t bytes = count * sizeof(float);
    float *init = malloc(bytes);
    cr_assert(init);
    memset(init, poison, bytes);
    uint64_t rng = seed;
    for (size_t k = 0; k < count; ++k) {
        size_t b, s, i;
        if (in_region(k, GUARD, batch, seq, rp, bp, d, &b, &s, &i))
            init[k] = (float)((int64_t)(test_rand_u64(&rng) % 2000001) - 1000000) / 4096.0f;
    }
    /* expected: the host emulation of the same add, applied once */
    float *want = malloc(bytes);
    cr_assert(want);
    memcpy(want, init, bytes);
    const int64_t start = 17;
    cr_assert_eq(clpe_host_add(enc, batch, seq, want + GUARD, rp, bp, source, start, positions),
                 CLPE_SUCCESS);

    cl_mem xbuf = test_buffer_from(t, init, bytes);
    cl_mem pbuf = NULL;
    size_t npos = source == CLPE_POSITIONS_PER_SEQUENCE ? batch
                  : source == CLPE_POSITIONS_IDS      ? batch * seq
                                                      : 0;
    if (npos)
        pbuf = test_buffer_from(t, positions, npos * sizeof(int64_t));
    clpe_positions pos = {.source = source, .start = start, .buffer = pbuf, .offset = 0};
    clpe_tensor x = {.buffer = xbuf, .offset = GUARD * sizeof(float), .row_pitch = rp, .batch_pitch = bp};
    clpe_status st = clpe_enqueue_add(enc, t->queue, batch, seq, &x, &pos, 0, NULL, NULL);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_enqueue_add: %s", clpe_status_string(st));
    float *got = test_buffer_read(t, xbuf, bytes);

    /* An element added twice (or not at all) differs from the host's single
     * add wherever pe != 0, which is almost everywhere, so equality with it
     * means "written exactly once". */
    size_t bad_in = 0, bad_out = 0, first_in = count, first_out = count;
    for (size_t k = 0; k < count; ++k) {
        size_t b, s, i;
        if (in_region(k, GUARD, batch, seq, rp, bp, d, &b, &s, &i)) {
            if (memcmp(&got[k], &want[k], sizeof(float)) != 0 && !bad_in++)
                first_in = k;
        } else if (memcmp(&got[k], &init[k], sizeof(float)) != 0 && !bad_out++) {
            first_out = k;
        }
    }
    cr_expect_eq(bad_in, 0,
                 "add d=%u source=%d rp=%zu bp=%zu: %zu region elements not fma'd exactly once "
                 "(first: element %zu)",
                 d, (int)source, rp, bp, bad_in, first_in);
    cr_expect_eq(bad_out, 0,
                 "add d=%u source=%d rp=%zu bp=%zu: %zu elements outside the region changed "
                 "(first: element %zu)",
                 d, (int)source, rp, bp, bad_out, first_out);
    free(got);
    free(want);
    free(init);
    if (pbuf)
        clReleaseMemObject(pbuf);
    clReleaseMemObject(xbuf);
}

Test(guards, add_padded_rows_and_sequences)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config c0 = test_config(2, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_encoder *root = test_encoder(&t, &c0);
    uint64_t rng = 5;
    for (size_t k = 0; k < N_SHAPES; ++k) {
        clpe_config cfg = test_config(shapes[k].d, 10000.0, CLPE_FREQ_PAPER,
                                      (clpe_layout)(k % 2));
        cfg.scale = k % 2 ? sqrt((double)shapes[k].d) : 1.0;
        clpe_encoder *enc = test_encoder_like(root, &cfg);
        size_t batch = 3, seq = shapes[k].n, rp = shapes[k].rp;
        size_t bp = seq * rp + 5; /* gap between sequences */
        int64_t per_seq[3] = {-3, 1000, (INT64_C(1) << 50) + 1};
        int64_t *ids = malloc(batch * seq * sizeof *ids);
        cr_assert(ids);
        for (size_t j = 0; j < batch * seq; ++j)
            ids[j] = (int64_t)test_rand_u64(&rng);
        const unsigned char poisons[2] = {0xA5, 0xFF};
        for (int p = 0; p < 2; ++p) {
            guard_add(&t, enc, batch, seq, rp, bp, CLPE_POSITIONS_START, NULL, poisons[p], 1 + k);
            guard_add(&t, enc, batch, seq, rp, bp, CLPE_POSITIONS_PER_SEQUENCE, per_seq,
                      poisons[p], 2 + k);
            guard_add(&t, enc, batch, seq, rp, bp, CLPE_POSITIONS_IDS, ids, poisons[p], 3 + k);
        }
        free(ids);
        clpe_encoder_release(enc);
    }
    clpe_encoder_release(root);
    test_cl_close(&t);
}
