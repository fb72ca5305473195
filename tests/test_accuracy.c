/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_accuracy.c - device output against the independent 256-bit MPFR
 * reference (reference/reference.h): max |error| <= 6.0e-8 for float32, at
 * every tested position.
 *
 * The reference is deliberately not the library's method: it computes
 * w_i = base^e with mpfr_pow, the angle p * w_i exactly from the int64 p,
 * and sin/cos of that angle with mpfr_sin_cos. No tuning words, no
 * fixed-point phase, no repeated multiplication.
 *
 * Coverage: both conventions x all three layouts (where each value sits
 * comes from the reference's ref_slot) x d in {2, 4, 8, 64, 512, 1024,
 * 4096, 65536} x base in {10000, 500000, 2}. Every configuration checks the
 * edge positions (0, +-1, 5, 6, 305, around 2^24, 2^31-1, 2^32-1, 2^40+7,
 * 2^53+1, 2^62+3, INT64_MAX, INT64_MIN+1, INT64_MIN) and RANDOM_PER_CONFIG
 * random (position, pair) samples, half of them full-range int64, half small
 * or medium positions. Six tests (convention x base), each >= 50,400 random
 * samples: >= 302,400 per run (the acceptance asks for 100,000). Rows are
 * computed on the device by clpe_enqueue_table (one row per position); every configuration after the
 * first of a test is made with clpe_encoder_create_like, so the program is
 * built once per test.
 *
 * Each test logs its maximum error per d, for quoting.
 */
#include "support.h"

#include "reference/reference.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The measured maximum is 5.56e-8: the bound sits just above it, so a
 * regression of a few 1e-9 (dropping PE_K_LO, the low half of 2pi, gives
 * 7.1e-8) fails here. */
#define MAX_ABS_ERROR 6.0e-8
#define RANDOM_PER_CONFIG 2100
/* Edge rows of wide configurations check this many pairs, not all. */
#define EDGE_PAIRS_MAX 1024
/* Random rows of wide configurations check this many pairs each. */
#define RANDOM_PAIRS_PER_ROW 75

static const uint32_t widths[] = {2, 4, 8, 64, 512, 1024, 4096, 65536};
#define N_WIDTHS (sizeof widths / sizeof widths[0])

static const int64_t edge_positions[] = {
    0,
    1,
    -1,
    5,
    6,
    305,
    (INT64_C(1) << 24) - 1,
    (INT64_C(1) << 24) + 1,
    INT32_MAX,
    (INT64_C(1) << 32) - 1,
    (INT64_C(1) << 40) + 7,
    (INT64_C(1) << 53) + 1,
    (INT64_C(1) << 62) + 3,
    INT64_MAX,
    INT64_MIN + 1,
    INT64_MIN,
};
#define N_EDGE (sizeof edge_positions / sizeof edge_positions[0])

/* A random position: half full-range int64, a quarter small (|p| < 2^16),
 * a quarter medium (|p| < 2^k, k in [16, 62]). */
static int64_t random_position(uint64_t *rng)
{
    uint64_t r = test_rand_u64(rng);
    uint64_t kind = test_rand_u64(rng) & 3;
    if (kind < 2)
        return (int64_t)r;
    unsigned bits = kind == 2 ? 16 : 16 + (unsigned)(test_rand_u64(rng) % 47);
    int64_t mag = (int64_t)(r >> (64 - bits));
    return (test_rand_u64(rng) & 1) ? -mag : mag;
}

/* Worst case seen, for the log. */
typedef struct worst {
    double err;
    int64_t p;
    uint32_t i;
    int is_cos;
    clpe_layout layout;
} worst;

static const char *const layout_names[] = {"interleaved", "split", "split cos-first"};

/* Where pair i's sine and cosine sit in a row of the configuration. */
typedef struct slot_map {
    uint32_t *sin_slot, *cos_slot;
} slot_map;

static void slot_map_init(slot_map *m, const clpe_config *cfg)
{
    m->sin_slot = calloc(cfg->d / 2, sizeof *m->sin_slot);
    m->cos_slot = calloc(cfg->d / 2, sizeof *m->cos_slot);
    cr_assert(m->sin_slot && m->cos_slot);
    for (uint32_t k = 0; k < cfg->d; ++k) {
        uint32_t pair;
        ref_wave wave = ref_slot(cfg, k, &pair);
        cr_assert(wave != REF_ZERO && pair < cfg->d / 2, "slot %u of an even row", k);
        (wave == REF_SIN ? m->sin_slot : m->cos_slot)[pair] = k;
    }
}

static void slot_map_clear(slot_map *m)
{
    free(m->sin_slot);
    free(m->cos_slot);
}

/* Compare one device row's pair i (w_i set in ref) with the reference;
 * records the larger error of its sin and cos. */
static void check_pair(ref_encoding *ref, const slot_map *map, const float *row,
                       clpe_layout layout, int64_t p, uint32_t i, worst *w)
{
    float dev_s = row[map->sin_slot[i]];
    float dev_c = row[map->cos_slot[i]];
    ref_at(ref, p);
    double s = ref_sin(ref), c = ref_cos(ref);
    double es = fabs((double)dev_s - s), ec = fabs((double)dev_c - c);
    /* NaN compares false: make it fail loudly. */
    if (!(es <= MAX_ABS_ERROR) || !(ec <= MAX_ABS_ERROR))
        cr_expect(0,
                  "d=%u base=%g freq=%d layout=%d p=%lld pair %u: sin %.9g (ref %.12g, err %.3g) "
                  "cos %.9g (ref %.12g, err %.3g)",
                  ref->d, ref->base, (int)ref->freq, (int)layout, (long long)p, i, dev_s, s, es,
                  dev_c, c, ec);
    double e = es > ec ? es : ec;
    if (!(e <= w->err)) {
        w->err = e;
        w->p = p;
        w->i = i;
        w->is_cos = ec > es;
        w->layout = layout;
    }
}

/* Device rows for positions pos[0..count), d floats each, one table call per
 * row, all enqueued before one blocking read. */
static float *device_rows(test_cl *t, clpe_encoder *enc, uint32_t d, const int64_t *pos,
                          size_t count)
{
    size_t bytes = count * d * sizeof(float);
    cl_mem buf = test_buffer_poisoned(t, bytes, 0xFF); /* NaN poison */
    for (size_t k = 0; k < count; ++k) {
        clpe_tensor out = {.buffer = buf, .offset = k * d * sizeof(float), .row_pitch = 0, .batch_pitch = 0};
        clpe_status st = clpe_enqueue_table(enc, t->queue, pos[k], 1, &out, 0, NULL, NULL);
        cr_assert_eq(st, CLPE_SUCCESS, "clpe_enqueue_table(d=%u, p=%lld): %s", d,
                     (long long)pos[k], clpe_status_string(st));
    }
    float *rows = test_buffer_read(t, buf, bytes);
    clReleaseMemObject(buf);
    return rows;
}

/* Pairs checked on edge rows: all, or the first and last quarters of
 * EDGE_PAIRS_MAX plus random ones in between. */
static size_t edge_pairs(uint32_t half_d, uint64_t *rng, uint32_t *pairs)
{
    if (half_d <= EDGE_PAIRS_MAX) {
        for (uint32_t i = 0; i < half_d; ++i)
            pairs[i] = i;
        return half_d;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < EDGE_PAIRS_MAX / 4; ++i) {
        pairs[n++] = i;
        pairs[n++] = half_d - 1 - i;
    }
    while (n < EDGE_PAIRS_MAX)
        pairs[n++] = (uint32_t)(test_rand_u64(rng) % half_d);
    return n;
}

/* One configuration; returns the number of random samples checked. */
static size_t check_config(test_cl *t, clpe_encoder *enc, const clpe_config *cfg, uint64_t *rng,
                           worst *w)
{
    uint32_t d = cfg->d, half_d = d / 2;
    ref_encoding ref;
    ref_init(&ref, cfg);
    slot_map map;
    slot_map_init(&map, cfg);

    /* Random rows: small widths check every pair of many rows, wide ones a
     * few random pairs of fewer rows (a 65536-wide row is 256 KiB). */
    uint32_t per_row = half_d < RANDOM_PAIRS_PER_ROW ? half_d : RANDOM_PAIRS_PER_ROW;
    size_t random_rows = (RANDOM_PER_CONFIG + per_row - 1) / per_row;
    size_t rows = N_EDGE + random_rows;
    int64_t *pos = malloc(rows * sizeof *pos);
    cr_assert(pos);
    memcpy(pos, edge_positions, sizeof edge_positions);
    for (size_t k = N_EDGE; k < rows; ++k)
        pos[k] = random_position(rng);
    float *dev = device_rows(t, enc, d, pos, rows);

    uint32_t *pairs = malloc((half_d > EDGE_PAIRS_MAX ? EDGE_PAIRS_MAX : half_d) * sizeof *pairs);
    cr_assert(pairs);
    size_t np = edge_pairs(half_d, rng, pairs);
    /* Pair-major so w_i is computed once for all edge rows. */
    for (size_t k = 0; k < np; ++k) {
        ref_set_pair(&ref, pairs[k]);
        for (size_t r = 0; r < N_EDGE; ++r)
            check_pair(&ref, &map, dev + r * d, cfg->layout, pos[r], pairs[k], w);
    }

    size_t samples = 0;
    for (size_t r = N_EDGE; r < rows; ++r) {
        for (uint32_t k = 0; k < per_row; ++k) {
            uint32_t i = per_row == half_d ? k : (uint32_t)(test_rand_u64(rng) % half_d);
            ref_set_pair(&ref, i);
            check_pair(&ref, &map, dev + r * d, cfg->layout, pos[r], i, w);
            ++samples;
        }
    }
    free(pairs);
    free(dev);
    free(pos);
    slot_map_clear(&map);
    ref_clear(&ref);
    return samples;
}

/* Every width and layout for one (convention, base). */
static void check_family(clpe_freq freq, double base, uint64_t seed)
{
    test_cl t;
    test_cl_open(&t);
    uint64_t rng = seed;
    clpe_config first = test_config(widths[0], base, freq, CLPE_LAYOUT_INTERLEAVED);
    clpe_encoder *root = test_encoder(&t, &first);
    worst family = {0};
    size_t samples = 0;
    for (size_t k = 0; k < N_WIDTHS; ++k) {
        worst per_d = {0};
        for (int layout = CLPE_LAYOUT_INTERLEAVED; layout <= CLPE_LAYOUT_SPLIT_COS_FIRST;
             ++layout) {
            clpe_config cfg = test_config(widths[k], base, freq, (clpe_layout)layout);
            clpe_encoder *enc = test_encoder_like(root, &cfg);
            samples += check_config(&t, enc, &cfg, &rng, &per_d);
            clpe_encoder_release(enc);
        }
        cr_log_info("accuracy %s base=%g d=%u: max |err| %.3g (p=%lld pair %u %s, %s)",
                    freq == CLPE_FREQ_PAPER ? "paper" : "tensor2tensor", base, widths[k],
                    per_d.err, (long long)per_d.p, per_d.i, per_d.is_cos ? "cos" : "sin",
                    layout_names[per_d.layout]);
        if (per_d.err > family.err)
            family = per_d;
    }
    cr_log_info("accuracy %s base=%g: max |err| %.3g over all d, %zu random samples",
                freq == CLPE_FREQ_PAPER ? "paper" : "tensor2tensor", base, family.err, samples);
    cr_expect_leq(family.err, MAX_ABS_ERROR);
    /* Six families of at least 100,000 / 6 make >= 100,000 random samples
     * per run. */
    cr_expect_geq(samples, (size_t)16667, "only %zu random samples", samples);
    clpe_encoder_release(root);
    mpfr_free_cache();
    test_cl_close(&t);
}

/* Seeds differ per family so no two test the same random positions. */
Test(accuracy, paper_base_10000, .timeout = 300) { check_family(CLPE_FREQ_PAPER, 10000.0, 1); }
Test(accuracy, paper_base_500000, .timeout = 300) { check_family(CLPE_FREQ_PAPER, 500000.0, 2); }
Test(accuracy, paper_base_2, .timeout = 300) { check_family(CLPE_FREQ_PAPER, 2.0, 3); }
Test(accuracy, t2t_base_10000, .timeout = 300)
{
    check_family(CLPE_FREQ_TENSOR2TENSOR, 10000.0, 4);
}
Test(accuracy, t2t_base_500000, .timeout = 300)
{
    check_family(CLPE_FREQ_TENSOR2TENSOR, 500000.0, 5);
}
Test(accuracy, t2t_base_2, .timeout = 300) { check_family(CLPE_FREQ_TENSOR2TENSOR, 2.0, 6); }

/* The reference itself, against libm where libm is trustworthy (small
 * angles): guards against a wrong exponent or sign in ref_set_pair. */
Test(accuracy, reference_matches_libm_small_angles)
{
    const clpe_freq freqs[2] = {CLPE_FREQ_PAPER, CLPE_FREQ_TENSOR2TENSOR};
    for (int f = 0; f < 2; ++f) {
        clpe_config cfg = test_config(64, 10000.0, freqs[f], CLPE_LAYOUT_INTERLEAVED);
        ref_encoding ref;
        ref_init(&ref, &cfg);
        for (uint32_t i = 0; i < 32; ++i) {
            double m = freqs[f] == CLPE_FREQ_PAPER ? 2.0 * i / 64.0 : (double)i / 31.0;
            double wi = pow(10000.0, -m);
            ref_set_pair(&ref, i);
            for (int64_t p = -50; p <= 50; p += 7) {
                ref_at(&ref, p);
                double s = ref_sin(&ref), c = ref_cos(&ref);
                cr_expect(fabs(s - sin((double)p * wi)) < 1e-12 &&
                              fabs(c - cos((double)p * wi)) < 1e-12,
                          "reference disagrees with libm at freq %d pair %u p %lld", f, i,
                          (long long)p);
            }
        }
        ref_clear(&ref);
    }
    mpfr_free_cache();
}

/* Where the reference puts each value: clpe.h's layouts and odd-width flags,
 * slot by slot, on small rows written out by hand. */
Test(accuracy, reference_slots_follow_the_header)
{
    enum { Z = REF_ZERO, S = REF_SIN, C = REF_COS };
    static const struct {
        const char *what;
        uint32_t d;
        clpe_layout layout;
        uint32_t flags;
        int wave[7];
        uint32_t pair[7];
    } rows[] = {
        {"interleaved d=6", 6, CLPE_LAYOUT_INTERLEAVED, 0, {S, C, S, C, S, C}, {0, 0, 1, 1, 2, 2}},
        {"split d=6", 6, CLPE_LAYOUT_SPLIT, 0, {S, S, S, C, C, C}, {0, 1, 2, 0, 1, 2}},
        {"cos first d=6", 6, CLPE_LAYOUT_SPLIT_COS_FIRST, 0, {C, C, C, S, S, S}, {0, 1, 2, 0, 1, 2}},
        {"split d=7 zero column", 7, CLPE_LAYOUT_SPLIT, CLPE_FLAG_ODD_D_ZERO_COLUMN,
         {S, S, S, C, C, C, Z}, {0, 1, 2, 0, 1, 2, 0}},
        {"interleaved d=7 zero column", 7, CLPE_LAYOUT_INTERLEAVED, CLPE_FLAG_ODD_D_ZERO_COLUMN,
         {S, C, S, C, S, C, Z}, {0, 0, 1, 1, 2, 2, 0}},
        {"split d=7 half pair", 7, CLPE_LAYOUT_SPLIT, CLPE_FLAG_ODD_D_HALF_PAIR,
         {S, S, S, S, C, C, C}, {0, 1, 2, 3, 0, 1, 2}},
        {"interleaved d=7 half pair", 7, CLPE_LAYOUT_INTERLEAVED, CLPE_FLAG_ODD_D_HALF_PAIR,
         {S, C, S, C, S, C, S}, {0, 0, 1, 1, 2, 2, 3}},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r) {
        clpe_config cfg = test_config(rows[r].d, 10000.0, CLPE_FREQ_PAPER, rows[r].layout);
        cfg.flags = rows[r].flags;
        for (uint32_t k = 0; k < rows[r].d; ++k) {
            uint32_t pair = 99;
            int wave = (int)ref_slot(&cfg, k, &pair);
            cr_expect_eq(wave, rows[r].wave[k], "%s slot %u: wave %d, want %d", rows[r].what, k,
                         wave, rows[r].wave[k]);
            if (wave != REF_ZERO)
                cr_expect_eq(pair, rows[r].pair[k], "%s slot %u: pair %u, want %u",
                             rows[r].what, k, pair, rows[r].pair[k]);
        }
    }
    /* The half pair is a frequency of its own, over d: w_3 = base^(-6/7). */
    clpe_config cfg = test_config(7, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_SPLIT);
    cfg.flags = CLPE_FLAG_ODD_D_HALF_PAIR;
    ref_encoding ref;
    ref_init(&ref, &cfg);
    cr_expect_eq(ref.pairs, 4u);
    ref_set_pair(&ref, 3);
    ref_at(&ref, 40);
    cr_expect(fabs(ref_sin(&ref) - sin(40.0 * pow(10000.0, -6.0 / 7.0))) < 1e-13);
    ref_clear(&ref);
    /* The padding row. */
    cfg.flags = CLPE_FLAG_PADDING_ROW;
    cfg.padding_position = 1;
    cr_expect(ref_row_is_zero(&cfg, 1));
    cr_expect(!ref_row_is_zero(&cfg, 2));
    cfg.flags = 0;
    cr_expect(!ref_row_is_zero(&cfg, 1));
    mpfr_free_cache();
}
