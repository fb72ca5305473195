/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_exact.c - the device writes exactly the bits the host emulation
 * predicts (clpe_host_table, clpe_host_add), on every element of the tested
 * ranges, and nothing else.
 *
 * Each check starts a device buffer and a host buffer from the same bytes
 * (poison, or random activations for add), runs the enqueue on one and the
 * emulation on the other, and memcmps the whole buffers: equal elements in
 * the region, and untouched bytes around it and in the row padding.
 *
 * Ranges are chosen to stress the odometer (long runs of rows per
 * work-item, starts that are not multiples of the rows a work-item walks),
 * the sign of the position (ranges crossing 0), the top of int64, widths
 * whose pair count is not a multiple of the work-group size, and pitches
 * and offsets other than the minimum.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POISON 0xC3

/* Report the first differing float of two buffers of `count` floats. */
static void expect_same_floats(const float *dev, const float *host, size_t count,
                               const char *what)
{
    if (memcmp(dev, host, count * sizeof(float)) == 0)
        return;
    size_t k = 0, differing = 0;
    size_t first = count;
    for (k = 0; k < count; ++k) {
        if (memcmp(dev + k, host + k, sizeof(float)) != 0) {
            if (first == count)
                first = k;
            ++differing;
        }
    }
    uint32_t bd, bh;
    memcpy(&bd, dev + first, 4);
    memcpy(&bh, host + first, 4);
    cr_expect(0, "%s: %zu of %zu floats differ; first at element %zu: device %a (0x%08x), host %a (0x%08x)",
              what, differing, count, first, dev[first], bd, host[first], bh);
}

/* Table [start, start + n) at element offset `off` with `row_pitch` into a
 * poisoned buffer with `tail` spare elements, device vs host. */
static void check_table(test_cl *t, clpe_encoder *enc, int64_t start, size_t n,
                        size_t row_pitch, size_t off, size_t tail)
{
    clpe_config cfg;
    cr_assert_eq(clpe_encoder_get_config(enc, &cfg), CLPE_SUCCESS);
    size_t pitch = row_pitch ? row_pitch : cfg.d;
    size_t count = off + (n ? (n - 1) * pitch + cfg.d : 0) + tail;
    size_t bytes = count * sizeof(float);
    float *host = malloc(bytes);
    cr_assert(host);
    memset(host, POISON, bytes);
    cl_mem buf = test_buffer_from(t, host, bytes);
    clpe_tensor out = {.buffer = buf, .offset = off * sizeof(float), .row_pitch = row_pitch, .batch_pitch = 0};
    clpe_status st = clpe_enqueue_table(enc, t->queue, start, n, &out, 0, NULL, NULL);
    cr_assert_eq(st, CLPE_SUCCESS, "enqueue_table(d=%u, start=%lld, n=%zu): %s", cfg.d,
                 (long long)start, n, clpe_status_string(st));
    st = clpe_host_table(enc, start, n, host + off, row_pitch);
    cr_assert_eq(st, CLPE_SUCCESS, "host_table: %s", clpe_status_string(st));
    float *dev = test_buffer_read(t, buf, bytes);
    char what[160];
    snprintf(what, sizeof what, "table d=%u base=%g freq=%d layout=%d start=%lld n=%zu pitch=%zu off=%zu",
             cfg.d, cfg.base, (int)cfg.freq, (int)cfg.layout, (long long)start, n, pitch, off);
    expect_same_floats(dev, host, count, what);
    free(dev);
    free(host);
    clReleaseMemObject(buf);
}

/* Random activations: a mix of magnitudes and signs, some exact zeros. */
static void fill_random(float *x, size_t count, uint64_t *rng)
{
    for (size_t k = 0; k < count; ++k) {
        uint64_t r = test_rand_u64(rng);
        if ((r & 15) == 0) {
            x[k] = (r & 16) ? -0.0f : 0.0f;
            continue;
        }
        float mant = (float)((r >> 11) & 0xFFFFFF) / (float)(1 << 24);
        int ex = (int)((r >> 40) % 24) - 12;
        x[k] = ldexpf((r & 32) ? -mant : mant, ex);
    }
}

/* Fused add over [batch, seq, d] with the given pitches (0 = default),
 * device vs host, whole buffer compared. */
static void check_add(test_cl *t, clpe_encoder *enc, size_t batch, size_t seq, size_t row_pitch,
                      size_t batch_pitch, size_t off, clpe_position_source source,
                      int64_t start, const int64_t *host_pos, uint64_t seed)
{
    clpe_config cfg;
    cr_assert_eq(clpe_encoder_get_config(enc, &cfg), CLPE_SUCCESS);
    size_t rp = row_pitch ? row_pitch : cfg.d;
    size_t bp = batch_pitch ? batch_pitch : seq * rp;
    size_t count = off + (batch - 1) * bp + (seq - 1) * rp + cfg.d + 7;
    size_t bytes = count * sizeof(float);
    float *host = malloc(bytes);
    cr_assert(host);
    uint64_t rng = seed;
    fill_random(host, count, &rng);
    cl_mem buf = test_buffer_from(t, host, bytes);

    cl_mem pos_buf = NULL;
    size_t npos = source == CLPE_POSITIONS_PER_SEQUENCE ? batch
                  : source == CLPE_POSITIONS_IDS      ? batch * seq
                                                      : 0;
    if (npos)
        pos_buf = test_buffer_from(t, host_pos, npos * sizeof(int64_t));
    clpe_positions positions = {.source = source, .start = start, .buffer = pos_buf, .offset = 0};
    clpe_tensor x = {.buffer = buf, .offset = off * sizeof(float), .row_pitch = row_pitch, .batch_pitch = batch_pitch};
    clpe_status st = clpe_enqueue_add(enc, t->queue, batch, seq, &x, &positions, 0, NULL, NULL);
    cr_assert_eq(st, CLPE_SUCCESS, "enqueue_add: %s", clpe_status_string(st));
    st = clpe_host_add(enc, batch, seq, host + off, row_pitch, batch_pitch, source, start,
                       host_pos);
    cr_assert_eq(st, CLPE_SUCCESS, "host_add: %s", clpe_status_string(st));
    float *dev = test_buffer_read(t, buf, bytes);
    char what[160];
    snprintf(what, sizeof what, "add d=%u scale=%g source=%d batch=%zu seq=%zu rp=%zu bp=%zu off=%zu",
             cfg.d, cfg.scale, (int)source, batch, seq, rp, bp, off);
    expect_same_floats(dev, host, count, what);
    free(dev);
    free(host);
    if (pos_buf)
        clReleaseMemObject(pos_buf);
    clReleaseMemObject(buf);
}

/* Widths: tiny, pair counts not a multiple of any work-group size (3, 65,
 * 500), powers of two, and one wide. */
static const uint32_t widths[] = {2, 6, 8, 130, 512, 1000, 4096};
#define N_WIDTHS (sizeof widths / sizeof widths[0])
static const double bases[] = {10000.0, 2.0, 500000.0, 1.0001, 1e9};
#define N_BASES (sizeof bases / sizeof bases[0])

/* Ranges: around 0 (crossing it), the seed's positions, float32's integer
 * limit, 32-bit limits, and both ends of int64. n is chosen so most ranges
 * span several odometer runs and end mid-run. */
typedef struct range {
    int64_t start;
    size_t n;
} range;
static const range ranges[] = {
    {0, 1},
    {0, 333},
    {-150, 301},                         /* crosses 0 */
    {-1, 3},
    {300, 11},
    {(INT64_C(1) << 24) - 37, 75},       /* crosses 2^24 */
    {INT32_MAX - 20, 41},                /* crosses 2^31 */
    {(INT64_C(1) << 32) - 17, 35},       /* crosses 2^32 */
    {-(INT64_C(1) << 32) - 17, 35},      /* crosses -2^32 */
    {(INT64_C(1) << 53) - 5, 10},
    {INT64_MAX - 99, 100},               /* ends at INT64_MAX */
    {INT64_MIN, 97},                     /* starts at INT64_MIN */
    {INT64_MIN + 1, 2},
};
#define N_RANGES (sizeof ranges / sizeof ranges[0])

Test(exact, table_every_width_and_range, .timeout = 300)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config first = test_config(8, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_encoder *root = test_encoder(&t, &first);
    for (size_t w = 0; w < N_WIDTHS; ++w) {
        for (int layout = 0; layout < 2; ++layout) {
            /* Conventions and bases rotate with the width so every pairing
             * of (width, layout) meets a different one. */
            clpe_freq freq = (w + (size_t)layout) % 2 ? CLPE_FREQ_TENSOR2TENSOR : CLPE_FREQ_PAPER;
            double base = bases[(w + 2 * (size_t)layout) % N_BASES];
            clpe_config cfg = test_config(widths[w], base, freq, (clpe_layout)layout);
            clpe_encoder *enc = test_encoder_like(root, &cfg);
            for (size_t r = 0; r < N_RANGES; ++r) {
                size_t n = ranges[r].n;
                if (widths[w] >= 1000 && n > 40)
                    n = 40; /* keep wide tables small; long runs are tested below */
                check_table(&t, enc, ranges[r].start, n, 0, 0, 0);
            }
            clpe_encoder_release(enc);
        }
    }
    clpe_encoder_release(root);
    test_cl_close(&t);
}

/* Long runs: thousands of rows, so many work-items each walk a full
 * odometer run, at small, huge and negative starts. */
Test(exact, table_long_runs, .timeout = 300)
{
    test_cl t;
    test_cl_open(&t);
    const int64_t starts[] = {0, -2500, 1000003, (INT64_C(1) << 40) + 7, INT64_MAX - 4999,
                              INT64_MIN + 3};
    for (int f = 0; f < 2; ++f) {
        clpe_config cfg = test_config(64, 10000.0, f ? CLPE_FREQ_TENSOR2TENSOR : CLPE_FREQ_PAPER,
                                      f ? CLPE_LAYOUT_SPLIT : CLPE_LAYOUT_INTERLEAVED);
        clpe_encoder *enc = test_encoder(&t, &cfg);
        for (size_t k = 0; k < sizeof starts / sizeof starts[0]; ++k)
            check_table(&t, enc, starts[k], 5000, 0, 0, 0);
        clpe_encoder_release(enc);
    }
    test_cl_close(&t);
}

/* Row pitch > d, a byte offset, and spare elements after the region: the
 * padding and everything outside keep their poison (the whole-buffer
 * memcmp compares them with the host buffer's untouched poison). */
Test(exact, table_pitch_and_offset)
{
    test_cl t;
    test_cl_open(&t);
    const uint32_t ds[] = {2, 8, 130};
    for (size_t k = 0; k < 3; ++k) {
        for (int layout = 0; layout < 2; ++layout) {
            clpe_config cfg = test_config(ds[k], 10000.0, CLPE_FREQ_PAPER, (clpe_layout)layout);
            clpe_encoder *enc = test_encoder(&t, &cfg);
            check_table(&t, enc, -40, 97, ds[k] + 1, 0, 0);
            check_table(&t, enc, 12345, 50, ds[k] + 13, 5, 9);
            check_table(&t, enc, INT64_MAX - 20, 21, 2 * ds[k] + 3, 1, 3);
            check_table(&t, enc, 7, 1, ds[k] + 4, 3, 0);
            clpe_encoder_release(enc);
        }
    }
    test_cl_close(&t);
}

/* Fused add vs clpe_host_add, every position source, scales 1, sqrt(d) and
 * others, default and padded pitches. */
Test(exact, add_every_source, .timeout = 300)
{
    test_cl t;
    test_cl_open(&t);
    uint64_t rng = 42;
    const uint32_t ds[] = {2, 8, 130, 512};
    clpe_config first = test_config(ds[0], 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_encoder *root = test_encoder(&t, &first);
    for (size_t k = 0; k < 4; ++k) {
        const double scales[] = {1.0, sqrt((double)ds[k]), -0.75, 0.0, 3.0e5};
        for (size_t s = 0; s < 5; ++s) {
            clpe_config cfg = test_config(ds[k], s % 2 ? 500000.0 : 10000.0,
                                          s % 2 ? CLPE_FREQ_TENSOR2TENSOR : CLPE_FREQ_PAPER,
                                          (clpe_layout)((k + s) % 2));
            cfg.scale = scales[s];
            clpe_encoder *enc = test_encoder_like(root, &cfg);
            size_t batch = 3, seq = 37;
            /* The 2nd sequence ends exactly at INT64_MAX (wrapping is
             * tested on its own below). */
            int64_t per_seq[3] = {-20, INT64_MAX - 36, INT64_MIN};
            int64_t *ids = malloc(batch * seq * sizeof *ids);
            cr_assert(ids);
            for (size_t j = 0; j < batch * seq; ++j)
                ids[j] = (j % 5 == 0) ? (int64_t)test_rand_u64(&rng)
                                      : (int64_t)(test_rand_u64(&rng) % 4096) - 2048;
            ids[0] = INT64_MAX;
            ids[1] = INT64_MIN;
            ids[2] = 0;
            uint64_t seed = test_rand_u64(&rng);
            check_add(&t, enc, batch, seq, 0, 0, 0, CLPE_POSITIONS_START, -18, NULL, seed);
            check_add(&t, enc, batch, seq, 0, 0, 0, CLPE_POSITIONS_START, INT64_MAX - 36, NULL,
                      seed + 1);
            check_add(&t, enc, batch, seq, 0, 0, 0, CLPE_POSITIONS_PER_SEQUENCE, 0, per_seq,
                      seed + 2);
            check_add(&t, enc, batch, seq, 0, 0, 0, CLPE_POSITIONS_IDS, 0, ids, seed + 3);
            /* padded rows and sequences, offset into the buffer */
            size_t rp = ds[k] + 3, bp = seq * rp + 11;
            check_add(&t, enc, batch, seq, rp, bp, 5, CLPE_POSITIONS_START, 1000, NULL, seed + 4);
            check_add(&t, enc, batch, seq, rp, bp, 2, CLPE_POSITIONS_PER_SEQUENCE, 0, per_seq,
                      seed + 5);
            check_add(&t, enc, batch, seq, rp, bp, 1, CLPE_POSITIONS_IDS, 0, ids, seed + 6);
            free(ids);
            clpe_encoder_release(enc);
        }
    }
    clpe_encoder_release(root);
    test_cl_close(&t);
}

/* A long add (many odometer runs per sequence) with per-sequence starts. */
Test(exact, add_long_sequences, .timeout = 300)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = test_config(64, 10000.0, CLPE_FREQ_TENSOR2TENSOR, CLPE_LAYOUT_SPLIT);
    cfg.scale = 8.0;
    clpe_encoder *enc = test_encoder(&t, &cfg);
    int64_t per_seq[4] = {0, -1500, (INT64_C(1) << 33) + 1, INT64_MAX - 2999};
    check_add(&t, enc, 4, 3000, 0, 0, 0, CLPE_POSITIONS_PER_SEQUENCE, 0, per_seq, 7);
    check_add(&t, enc, 4, 3000, 0, 0, 0, CLPE_POSITIONS_START, -1499, NULL, 8);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}

/* Per-sequence starts whose sequence runs past INT64_MAX: clpe.h says
 * positions read from device buffers wrap modulo 2^64 (start + s is not
 * checked on the device), so row s of a sequence starting at INT64_MAX - 10
 * has position INT64_MIN + (s - 11) for s >= 11; clpe_host_add computes
 * exactly that. The device must agree with the documented wrap on every
 * row, whichever work-item (and odometer run) computes it. */
Test(exact, add_per_sequence_wraps_past_int64_max)
{
    test_cl t;
    test_cl_open(&t);
    const uint32_t ds[] = {2, 8, 512};
    for (size_t k = 0; k < 3; ++k) {
        clpe_config cfg = test_config(ds[k], 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
        clpe_encoder *enc = test_encoder(&t, &cfg);
        int64_t per_seq[3] = {INT64_MAX - 10, INT64_MAX, INT64_MAX - 40};
        check_add(&t, enc, 3, 37, 0, 0, 0, CLPE_POSITIONS_PER_SEQUENCE, 0, per_seq, 11 + k);
        clpe_encoder_release(enc);
    }
    test_cl_close(&t);
}

/* Gather [batch, seq] ids from a [vocab, d] float32 embedding into a
 * poisoned output, positions from `start`, device vs host; every 13th id is
 * bad (its row reads as 0, and the report counts it). */
static void check_gather_from_start(test_cl *t, clpe_encoder *enc, size_t batch, size_t seq,
                                    int64_t start, uint64_t seed)
{
    clpe_config cfg;
    cr_assert_eq(clpe_encoder_get_config(enc, &cfg), CLPE_SUCCESS);
    size_t d = cfg.d, vocab = 23, rows = batch * seq, bytes = rows * d * sizeof(float);
    uint64_t rng = seed;
    float *emb = malloc(vocab * d * sizeof(float));
    int32_t *ids = malloc(rows * sizeof(int32_t));
    float *host = malloc(bytes);
    cr_assert(emb && ids && host);
    fill_random(emb, vocab * d, &rng);
    size_t bad = 0;
    for (size_t k = 0; k < rows; ++k) {
        ids[k] = k % 13 == 4 ? (int32_t)(vocab + k) : (int32_t)(test_rand_u64(&rng) % vocab);
        bad += k % 13 == 4;
    }
    cl_mem ebuf = test_buffer_from(t, emb, vocab * d * sizeof(float));
    cl_mem ibuf = test_buffer_from(t, ids, rows * sizeof(int32_t));
    cl_mem gbuf = test_buffer_poisoned(t, bytes, POISON);
    uint32_t report_init[2] = {0, UINT32_MAX};
    cl_mem rbuf = test_buffer_from(t, report_init, sizeof report_init);
    clpe_token_ids tid = {.buffer = ibuf};
    clpe_tensor temb = {.buffer = ebuf}, tout = {.buffer = gbuf};
    clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = start};
    cr_assert_eq(clpe_enqueue_gather(enc, t->queue, batch, seq, &tid, &temb, CLPE_DTYPE_F32, vocab,
                                     &tout, &pos, rbuf, 0, NULL, NULL),
                 CLPE_SUCCESS);
    size_t bad_host = 0;
    cr_assert_eq(clpe_host_gather(enc, batch, seq, ids, emb, vocab, d, host, 0,
                                  CLPE_POSITIONS_START, start, NULL, &bad_host),
                 CLPE_SUCCESS);
    float *dev = test_buffer_read(t, gbuf, bytes);
    char what[96];
    snprintf(what, sizeof what, "gather d=%zu batch=%zu seq=%zu start=%lld", d, batch, seq,
             (long long)start);
    expect_same_floats(dev, host, rows * d, what);
    uint32_t *report = test_buffer_read(t, rbuf, sizeof report_init);
    cr_expect_eq(bad_host, bad);
    cr_expect_eq(report[0], bad, "%s: %u bad ids reported, %zu expected", what, report[0], bad);
    cr_expect_eq(report[1], 4u, "%s: first bad id at %u, expected 4", what, report[1]);
    free(report);
    free(dev);
    free(host);
    free(ids);
    free(emb);
    clReleaseMemObject(rbuf);
    clReleaseMemObject(gbuf);
    clReleaseMemObject(ibuf);
    clReleaseMemObject(ebuf);
}

/* Out-of-place add from a start: x unchanged, out = host emulation. */
static void check_add_out_from_start(test_cl *t, clpe_encoder *enc, size_t batch, size_t seq,
                                     int64_t start, uint64_t seed)
{
    clpe_config cfg;
    cr_assert_eq(clpe_encoder_get_config(enc, &cfg), CLPE_SUCCESS);
    size_t count = batch * seq * cfg.d, bytes = count * sizeof(float);
    uint64_t rng = seed;
    float *x = malloc(bytes), *host = malloc(bytes);
    cr_assert(x && host);
    fill_random(x, count, &rng);
    memcpy(host, x, bytes);
    cl_mem xbuf = test_buffer_from(t, x, bytes);
    cl_mem obuf = test_buffer_poisoned(t, bytes, POISON);
    clpe_tensor tx = {.buffer = xbuf}, tout = {.buffer = obuf};
    clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = start};
    cr_assert_eq(clpe_enqueue_add_out(enc, t->queue, batch, seq, &tx, &tout, &pos, 0, NULL, NULL),
                 CLPE_SUCCESS);
    cr_assert_eq(clpe_host_add(enc, batch, seq, host, 0, 0, CLPE_POSITIONS_START, start, NULL),
                 CLPE_SUCCESS);
    float *dev_out = test_buffer_read(t, obuf, bytes), *dev_x = test_buffer_read(t, xbuf, bytes);
    expect_same_floats(dev_out, host, count, "add_out from a start: out");
    expect_same_floats(dev_x, x, count, "add_out from a start: x unchanged");
    free(dev_out);
    free(dev_x);
    free(host);
    free(x);
    clReleaseMemObject(obuf);
    clReleaseMemObject(xbuf);
}

/* Sequences that share their positions (a start), on every walk the
 * encoder's launch shape has: in the vector shape PoCL gets, float32 takes
 * the tile walk (kernels/clpe_rows.cl, pe_tile_walk) unless CLPE_TILE_WALK
 * is 0, with blocks of 4 rows (d 1024) and of 16 (d 96), a work-item with a
 * full tile next to one with a tail of 8 pairs (d 1040), the odd-d zero
 * column, the padding row, a batch ending at INT64_MAX, pitches that keep
 * vectors aligned and pitches that do not (the span walk takes those), add
 * in place and out of place, and gather with bad ids. Other devices take
 * their own walks; the bits must be the same. */
static void check_shared_positions(const char *tile_walk)
{
    setenv("CLPE_TILE_WALK", tile_walk, 1);
    test_cl t;
    test_cl_open(&t);
    struct {
        uint32_t d, flags;
        clpe_layout layout;
        double scale;
    } cases[] = {
        {1024, 0, CLPE_LAYOUT_INTERLEAVED, 1.0},
        {1024, CLPE_FLAG_PADDING_ROW, CLPE_LAYOUT_SPLIT, 0.5},
        {96, 0, CLPE_LAYOUT_SPLIT, 9.797958971132712},
        {1040, 0, CLPE_LAYOUT_INTERLEAVED, 1.0},
        {1025, CLPE_FLAG_ODD_D_ZERO_COLUMN, CLPE_LAYOUT_INTERLEAVED, 0.75},
        {1023, CLPE_FLAG_ODD_D_HALF_PAIR, CLPE_LAYOUT_SPLIT, 1.0},
    };
    clpe_config first = test_config(cases[0].d, 10000.0, CLPE_FREQ_PAPER, cases[0].layout);
    clpe_encoder *root = test_encoder(&t, &first);
    clpe_launch_info info;
    cr_assert_eq(clpe_encoder_get_launch_info(root, &info), CLPE_SUCCESS);
    cr_assert_eq(info.tile_walk, tile_walk[0] == '1' && info.pairs_per_item > 1);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        clpe_config cfg = test_config(cases[c].d, 10000.0, CLPE_FREQ_PAPER, cases[c].layout);
        cfg.flags = cases[c].flags;
        cfg.scale = cases[c].scale;
        cfg.padding_position = 40; /* used by the PADDING_ROW case: row 47 of start -7 */
        clpe_encoder *enc = test_encoder_like(root, &cfg);
        uint64_t seed = 1000 + c;
        size_t d = cases[c].d;
        for (size_t batch = 1; batch <= 3; ++batch) {
            check_add(&t, enc, batch, 61, 0, 0, 0, CLPE_POSITIONS_START, -7, NULL, seed++);
            check_add(&t, enc, batch, 21, 0, 0, 0, CLPE_POSITIONS_START, INT64_MAX - 20, NULL,
                      seed++);
        }
        /* aligned padded pitches (multiples of 16 floats), then unaligned */
        check_add(&t, enc, 3, 45, d + 16 - d % 16, 45 * (d + 16 - d % 16) + 32, 16,
                  CLPE_POSITIONS_START, 100, NULL, seed++);
        check_add(&t, enc, 3, 45, d + 3, 45 * (d + 3) + 5, 1, CLPE_POSITIONS_START, 100, NULL,
                  seed++);
        check_add_out_from_start(&t, enc, 4, 33, 12345, seed++);
        check_gather_from_start(&t, enc, 3, 29, -3, seed++);
        clpe_encoder_release(enc);
    }
    clpe_encoder_release(root);
    test_cl_close(&t);
}

Test(exact, shared_positions_tile_walk, .timeout = 300)
{
    check_shared_positions("1");
}

Test(exact, shared_positions_span_walk, .timeout = 300)
{
    check_shared_positions("0");
}

/* Split into launches of at most 2 sequences and 20 rows: a batch of 3
 * ends with a launch of one sequence, still walked in tiles. */
Test(exact, shared_positions_tile_walk_split, .timeout = 300)
{
    setenv("CLPE_MAX_LAUNCH_BATCH", "2", 1);
    setenv("CLPE_MAX_LAUNCH_ROWS", "20", 1);
    check_shared_positions("1");
}
