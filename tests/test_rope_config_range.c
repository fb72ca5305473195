/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rope_config_range.c - a rotary configuration is read only where its
 * scaling looks, and every accepted configuration rotates by the exact
 * angle: the pointer fields a scaling does not use may point at memory
 * that is gone, DYNAMIC keeps the base exactly below its threshold whatever
 * the factor, and frequencies outside [0, CLPE_ROPE_MAX_FREQUENCY) are
 * refused with CLPE_ERROR_INVALID_SCALING rather than rounded to nonsense.
 * Angles are checked against MPFR, computed here from the definition.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

TestSuite(rope_config_range, .timeout = 60);

enum { HEAD_DIM = 16, PAIRS = HEAD_DIM / 2 };

/* A page nothing may read: any access faults. */
static double *unreadable_page(void)
{
    long page = sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    return p;
}

/* The frequencies and the cos/sin cache of two host objects agree bit for bit. */
static void expect_same_rotation(const clpe_rope *a, const clpe_rope *b, const char *what)
{
    double wa[PAIRS], wb[PAIRS], ma = 0, mb = 0;
    cr_assert_eq(clpe_rope_get_frequencies(a, wa, PAIRS, &ma), CLPE_SUCCESS);
    cr_assert_eq(clpe_rope_get_frequencies(b, wb, PAIRS, &mb), CLPE_SUCCESS);
    cr_expect_eq(memcmp(wa, wb, sizeof wa), 0, "%s: frequencies differ (w_1 %a vs %a)", what,
                 wa[1], wb[1]);
    cr_expect_eq(ma, mb, "%s: amplitudes differ", what);
    enum { N = 64 };
    float ca[N * HEAD_DIM], sa[N * HEAD_DIM], cb[N * HEAD_DIM], sb[N * HEAD_DIM];
    const int64_t start = INT64_MAX - 1000;
    cr_assert_eq(clpe_host_rope_cache(a, start, N, ca, sa, 0), CLPE_SUCCESS);
    cr_assert_eq(clpe_host_rope_cache(b, start, N, cb, sb, 0), CLPE_SUCCESS);
    cr_expect_eq(memcmp(ca, cb, sizeof ca), 0, "%s: cos differs", what);
    cr_expect_eq(memcmp(sa, sb, sizeof sa), 0, "%s: sin differs", what);
}

Test(rope_config_range, unused_arrays_are_never_read)
{
    double *gone = unreadable_page();
    clpe_status st = -1;
    clpe_rope_config plain = clpe_rope_config_default(HEAD_DIM);
    clpe_rope *want = clpe_rope_create_host(&plain, &st);
    cr_assert_not_null(want, "status %d", st);
    /* every scaling but LONGROPE and FREQUENCIES, with all three arrays
     * pointing at an unreadable page */
    const clpe_rope_scaling unused_all[] = {CLPE_ROPE_DEFAULT, CLPE_ROPE_LINEAR,
                                            CLPE_ROPE_DYNAMIC, CLPE_ROPE_YARN, CLPE_ROPE_LLAMA3};
    for (size_t j = 0; j < sizeof unused_all / sizeof unused_all[0]; ++j) {
        clpe_rope_config cfg = clpe_rope_config_default(HEAD_DIM);
        cfg.scaling = unused_all[j];
        cfg.factor = 1;
        cfg.original_max_position = 4096;
        cfg.low_freq_factor = 1;
        cfg.high_freq_factor = 4;
        cfg.short_factor = cfg.long_factor = cfg.frequencies = gone;
        clpe_rope *rope = clpe_rope_create_host(&cfg, &st);
        cr_assert_not_null(rope, "scaling %d: status %d", cfg.scaling, st);
        clpe_rope_release(rope);
    }
    /* DEFAULT through the old pointers is DEFAULT */
    clpe_rope_config cfg = clpe_rope_config_default(HEAD_DIM);
    cfg.short_factor = cfg.long_factor = cfg.frequencies = gone;
    clpe_rope *rope = clpe_rope_create_host(&cfg, &st);
    cr_assert_not_null(rope, "status %d", st);
    expect_same_rotation(rope, want, "default with stale arrays");
    clpe_rope_release(rope);

    /* FREQUENCIES does not read the LONGROPE factors, nor LONGROPE the frequencies */
    double ones[PAIRS], given[PAIRS];
    for (int i = 0; i < PAIRS; ++i) {
        ones[i] = 1.0;
        given[i] = 0.25 * (i + 1);
    }
    cfg = clpe_rope_config_default(HEAD_DIM);
    cfg.scaling = CLPE_ROPE_FREQUENCIES;
    cfg.frequencies = given;
    cfg.short_factor = cfg.long_factor = gone;
    rope = clpe_rope_create_host(&cfg, &st);
    cr_assert_not_null(rope, "frequencies: status %d", st);
    clpe_rope_release(rope);
    cfg = clpe_rope_config_default(HEAD_DIM);
    cfg.scaling = CLPE_ROPE_LONGROPE;
    cfg.short_factor = cfg.long_factor = ones;
    cfg.original_max_position = 4096;
    cfg.factor = 1;
    cfg.frequencies = gone;
    rope = clpe_rope_create_host(&cfg, &st);
    cr_assert_not_null(rope, "longrope: status %d", st);
    expect_same_rotation(rope, want, "longrope of unit factors");
    clpe_rope_release(rope);
    clpe_rope_release(want);
    munmap(gone, (size_t)sysconf(_SC_PAGESIZE));
}

/* The ASan form of the same: a LONGROPE configuration reused as DEFAULT
 * after its arrays were freed (a heap use-after-free if they are read). */
Test(rope_config_range, longrope_config_reused_after_free)
{
    clpe_rope_config cfg = clpe_rope_config_default(HEAD_DIM);
    cfg.scaling = CLPE_ROPE_LONGROPE;
    cfg.original_max_position = 4096;
    cfg.factor = 1;
    double *short_factor = malloc(PAIRS * sizeof *short_factor);
    double *long_factor = malloc(PAIRS * sizeof *long_factor);
    double *frequencies = malloc(PAIRS * sizeof *frequencies);
    cr_assert(short_factor && long_factor && frequencies);
    for (int i = 0; i < PAIRS; ++i)
        short_factor[i] = long_factor[i] = frequencies[i] = 1.0;
    cfg.short_factor = short_factor;
    cfg.long_factor = long_factor;
    cfg.frequencies = frequencies;
    clpe_status st = -1;
    clpe_rope *rope = clpe_rope_create_host(&cfg, &st);
    cr_assert_not_null(rope, "status %d", st);
    clpe_rope_release(rope);
    free(short_factor);
    free(long_factor);
    free(frequencies);
    cfg.scaling = CLPE_ROPE_DEFAULT;
    rope = clpe_rope_create_host(&cfg, &st);
    cr_assert_not_null(rope, "status %d", st);
    clpe_rope_release(rope);
}

/* DYNAMIC at or below original_max_position keeps the base exactly, for
 * every factor a double holds. */
Test(rope_config_range, dynamic_below_threshold_keeps_the_base_for_any_factor)
{
    clpe_status st = -1;
    clpe_rope_config plain = clpe_rope_config_default(HEAD_DIM);
    clpe_rope *want = clpe_rope_create_host(&plain, &st);
    cr_assert_not_null(want);
    const double factors[] = {2.0, 0x1p254, 0x1p255, 1e77, 1e300, 1.7976931348623157e308};
    const uint64_t lengths[] = {0, 1, 4096};
    for (size_t f = 0; f < sizeof factors / sizeof factors[0]; ++f) {
        for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; ++l) {
            clpe_rope_config cfg = clpe_rope_config_default(HEAD_DIM);
            cfg.scaling = CLPE_ROPE_DYNAMIC;
            cfg.factor = factors[f];
            cfg.original_max_position = 4096;
            cfg.seq_len = lengths[l];
            clpe_rope *rope = clpe_rope_create_host(&cfg, &st);
            cr_assert_not_null(rope, "factor %g seq_len %llu: status %d", factors[f],
                               (unsigned long long)lengths[l], st);
            char what[96];
            snprintf(what, sizeof what, "dynamic factor %g seq_len %llu", factors[f],
                     (unsigned long long)lengths[l]);
            expect_same_rotation(rope, want, what);
            clpe_rope_release(rope);
        }
    }
    clpe_rope_release(want);
}

/* Above the threshold a huge factor grows the base enormously: the
 * frequencies stay finite, below the default ones, and each is the exact
 * base' ^ (-2i/dim) of the grown base computed here. */
Test(rope_config_range, dynamic_above_threshold_with_a_huge_factor)
{
    clpe_rope_config cfg = clpe_rope_config_default(HEAD_DIM);
    cfg.scaling = CLPE_ROPE_DYNAMIC;
    cfg.factor = 1e300;
    cfg.original_max_position = 4096;
    cfg.seq_len = 8192;
    clpe_status st = -1;
    clpe_rope *rope = clpe_rope_create_host(&cfg, &st);
    cr_assert_not_null(rope, "status %d", st);
    double w[PAIRS];
    cr_assert_eq(clpe_rope_get_frequencies(rope, w, PAIRS, NULL), CLPE_SUCCESS);
    /* base' = base * (factor * 2 - (factor - 1)) ^ (dim / (dim - 2)) = base * (factor + 1)^(8/7) */
    mpfr_t b, t;
    mpfr_inits2(512, b, t, (mpfr_ptr)0);
    for (int i = 0; i < PAIRS; ++i) {
        mpfr_set_d(t, 1e300, MPFR_RNDN);
        mpfr_add_ui(t, t, 1, MPFR_RNDN);
        mpfr_log(t, t, MPFR_RNDN);
        mpfr_mul_ui(t, t, HEAD_DIM, MPFR_RNDN);
        mpfr_div_ui(t, t, HEAD_DIM - 2, MPFR_RNDN);
        mpfr_set_d(b, 10000.0, MPFR_RNDN);
        mpfr_log(b, b, MPFR_RNDN);
        mpfr_add(t, t, b, MPFR_RNDN); /* log base' */
        mpfr_mul_si(t, t, -2 * i, MPFR_RNDN);
        mpfr_div_ui(t, t, HEAD_DIM, MPFR_RNDN);
        mpfr_exp(t, t, MPFR_RNDN);
        double exact = mpfr_get_d(t, MPFR_RNDN);
        cr_expect(isfinite(w[i]) && w[i] == exact, "w_%d = %a, exactly %a", i, w[i], exact);
    }
    mpfr_clears(b, t, (mpfr_ptr)0);
    clpe_rope_release(rope);
}

/* |cos(p w) - c| and |sin(p w) - s| for the cache entry (c, s) of pair 0,
 * the exact values from MPFR. */
static double cache_error(const clpe_rope *rope, double w, int64_t p)
{
    float c[HEAD_DIM], s[HEAD_DIM];
    cr_assert_eq(clpe_host_rope_cache(rope, p, 1, c, s, 0), CLPE_SUCCESS);
    mpfr_t angle, sv, cv;
    mpfr_inits2(2048, angle, sv, cv, (mpfr_ptr)0);
    mpfr_set_d(angle, w, MPFR_RNDN);
    mpfr_mul_si(angle, angle, (long)p, MPFR_RNDN); /* exact at 2048 bits */
    mpfr_sin_cos(sv, cv, angle, MPFR_RNDN);
    double err = fmax(fabs(mpfr_get_d(cv, MPFR_RNDN) - c[0]), fabs(mpfr_get_d(sv, MPFR_RNDN) - s[0]));
    mpfr_clears(angle, sv, cv, (mpfr_ptr)0);
    return err;
}

Test(rope_config_range, frequencies_are_exact_below_the_limit_and_refused_above)
{
    clpe_status st = -1;
    double w[PAIRS];
    clpe_rope_config cfg = clpe_rope_config_default(HEAD_DIM);
    cfg.scaling = CLPE_ROPE_FREQUENCIES;
    cfg.frequencies = w;
    /* the largest accepted frequency and a few others: float32 cos/sin of
     * the exact angle (pe_sincos is within 2^-23 or so; 2^-21 leaves room,
     * a wrong phase is off by up to 2) */
    const double accepted[] = {nextafter(CLPE_ROPE_MAX_FREQUENCY, 0), 1e9, 12345.678, 7.0, 1e-300};
    for (size_t j = 0; j < sizeof accepted / sizeof accepted[0]; ++j) {
        for (int i = 0; i < PAIRS; ++i)
            w[i] = accepted[j];
        clpe_rope *rope = clpe_rope_create_host(&cfg, &st);
        cr_assert_not_null(rope, "w = %a: status %d", accepted[j], st);
        const int64_t positions[] = {1, 3, 1000003, -77, (int64_t)1 << 40};
        for (size_t k = 0; k < sizeof positions / sizeof positions[0]; ++k) {
            double err = cache_error(rope, accepted[j], positions[k]);
            cr_expect_leq(err, 0x1p-21, "w = %a, p = %lld: error %g", accepted[j],
                          (long long)positions[k], err);
        }
        clpe_rope_release(rope);
    }
    const double refused[] = {CLPE_ROPE_MAX_FREQUENCY, 1e300, 1.7976931348623157e308, INFINITY,
                              NAN, -1.0};
    for (size_t j = 0; j < sizeof refused / sizeof refused[0]; ++j) {
        for (int i = 0; i < PAIRS; ++i)
            w[i] = i == PAIRS - 1 ? refused[j] : 1.0; /* one bad pair is enough */
        st = -1;
        cr_expect_null(clpe_rope_create_host(&cfg, &st), "w = %a accepted", refused[j]);
        cr_expect_eq(st, CLPE_ERROR_INVALID_SCALING, "w = %a: status %d", refused[j], st);
    }
}

Test(rope_config_range, longrope_factors_that_push_a_frequency_past_the_limit_are_refused)
{
    double tiny[PAIRS], ones[PAIRS];
    for (int i = 0; i < PAIRS; ++i) {
        ones[i] = 1.0;
        tiny[i] = i == 0 ? 1e-300 : 1.0; /* w_0 = 1 / 1e-300 */
    }
    clpe_rope_config cfg = clpe_rope_config_default(HEAD_DIM);
    cfg.scaling = CLPE_ROPE_LONGROPE;
    cfg.original_max_position = 4096;
    cfg.factor = 1;
    cfg.short_factor = tiny;
    cfg.long_factor = ones;
    clpe_status st = -1;
    cr_expect_null(clpe_rope_create_host(&cfg, &st));
    cr_expect_eq(st, CLPE_ERROR_INVALID_SCALING, "status %d", st);
    /* 2^-31: w_0 = 2^31, inside the range, computed exactly */
    tiny[0] = 0x1p-31;
    clpe_rope *rope = clpe_rope_create_host(&cfg, &st);
    cr_assert_not_null(rope, "status %d", st);
    double err = cache_error(rope, 0x1p31, 1000003);
    cr_expect_leq(err, 0x1p-21, "error %g", err);
    clpe_rope_release(rope);
}

/* The 32- and 16-bit dtypes multiply by the amplitude as a float: one that
 * rounds to infinity there is refused, the largest finite one accepted;
 * float64 takes any finite amplitude. */
Test(rope_config_range, amplitudes_beyond_float_are_refused_for_float_dtypes)
{
    double w[PAIRS];
    for (int i = 0; i < PAIRS; ++i)
        w[i] = 0.5;
    clpe_rope_config cfg = clpe_rope_config_default(HEAD_DIM);
    cfg.scaling = CLPE_ROPE_FREQUENCIES;
    cfg.frequencies = w;
    const clpe_dtype narrow[] = {CLPE_DTYPE_F32, CLPE_DTYPE_F16, CLPE_DTYPE_BF16};
    for (size_t j = 0; j < 3; ++j) {
        cfg.dtype = narrow[j];
        clpe_status st = -1;
        cfg.attention_factor = 1e300;
        cr_expect_null(clpe_rope_create_host(&cfg, &st), "dtype %d: m 1e300 accepted", cfg.dtype);
        cr_expect_eq(st, CLPE_ERROR_INVALID_SCALING);
        cfg.attention_factor = 0x1.ffffffp127; /* rounds to 2^128 as a float */
        cr_expect_null(clpe_rope_create_host(&cfg, &st), "dtype %d: m 2^128 - 2^103 accepted",
                       cfg.dtype);
        cfg.attention_factor = 0x1.fffffep127; /* FLT_MAX */
        clpe_rope *rope = clpe_rope_create_host(&cfg, &st);
        cr_expect_not_null(rope, "dtype %d: FLT_MAX refused (%d)", cfg.dtype, st);
        clpe_rope_release(rope);
    }
    cfg.dtype = CLPE_DTYPE_F64;
    cfg.attention_factor = 1e300;
    clpe_status st = -1;
    clpe_rope *rope = clpe_rope_create_host(&cfg, &st);
    cr_expect_not_null(rope, "f64: m 1e300 refused (%d)", st);
    double dc[HEAD_DIM], ds[HEAD_DIM];
    cr_assert_eq(clpe_host_rope_cache(rope, 1, 1, dc, ds, 0), CLPE_SUCCESS);
    cr_expect(isfinite(dc[0]) && isfinite(ds[0]), "f64 cache not finite");
    clpe_rope_release(rope);
}
