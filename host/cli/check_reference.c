/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_reference.c - `clpe check` against the independent MPFR reference
 * (reference/reference.h): a shared mistake in kernel and host emulation
 * would pass the bit-for-bit comparison, but not this.
 */
#include "check.h"

#include <math.h>
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* For the 16- and 32-bit types: the rounding of the output format (half an
 * ulp of values near 1) plus the library's float32 budget (6e-8; measured
 * 5.56e-8, see the design notes). For f64 the 128-bit tuning words keep the
 * phase exact to 2^-66 turn at every int64 position: 2.3e-16 holds from
 * -2^63 to 2^63 (measured 1.1e-16). */
double check_error_bound(int dtype, int64_t p)
{
    (void)p;
    switch (dtype) {
    case CLPE_DTYPE_F32: return 6e-8;
    case CLPE_DTYPE_F16: return ldexp(1.0, -12) + 6e-8;
    case CLPE_DTYPE_BF16: return ldexp(1.0, -9) + 6e-8;
    case CLPE_DTYPE_F64: return 2.3e-16;
    }
    return 0;
}

/* |device value - exact value| for element k of the row at position p. */
static double error_at(check_checker *ck, const clpe_config *cfg, int64_t p, uint32_t k,
                       double got)
{
    uint32_t pair;
    ref_wave wave = ref_slot(cfg, k, &pair);
    if (wave == REF_ZERO || ref_row_is_zero(cfg, p))
        return fabs(got);
    ref_set_pair(ck->ref, pair);
    ref_at(ck->ref, p);
    return ref_error(ck->ref, wave == REF_COS, got);
}

void check_sample_errors(check_checker *ck, check_tally *t, const clpe_config *cfg,
                         const unsigned char *rows, int64_t start, size_t n, size_t row_pitch,
                         int samples)
{
    size_t esize = dtype_size(cfg->dtype);
    for (int s = 0; s < samples; ++s) {
        uint64_t r = splitmix64(&ck->rng);
        size_t row = (size_t)(r % n);
        uint32_t k = (uint32_t)((r >> 32) % cfg->d);
        if (s < 2) /* the first and last rows always: the extreme positions */
            row = s ? n - 1 : 0;
        int64_t p = (int64_t)((uint64_t)start + row);
        double got = dtype_to_double(rows + (row * row_pitch + k) * esize, cfg->dtype);
        double e = error_at(ck, cfg, p, k, got);
        double bound = check_error_bound(cfg->dtype, p);
        ++t->samples;
        if (!(e <= bound) && t->over_bound++ == 0) {
            char lab[96];
            check_config_label(cfg, lab, sizeof lab);
            snprintf(t->first_over, sizeof t->first_over,
                     "%s position %lld element %u: |error| %.3e > bound %.3e", lab,
                     (long long)p, (unsigned)k, e, bound);
        }
        if (!(e <= t->max_err)) { /* NaN counts as the worst */
            t->max_err = isnan(e) ? INFINITY : e;
            t->worst_pos = p;
        }
    }
}

double check_rope_error_ratio(ref_encoding *ref, int inverse, double a, double b, double got_a,
                              double got_b)
{
    /* a' = a cos - b sin, b' = a sin + b cos, with sin negated for the
     * inverse rotation; each subtracted from the device value at full
     * precision, then rounded once. */
    mpfr_t sn, x, y;
    mpfr_inits2(REF_PRECISION, sn, x, y, (mpfr_ptr)0);
    if (inverse)
        mpfr_neg(sn, ref->sin, MPFR_RNDN);
    else
        mpfr_set(sn, ref->sin, MPFR_RNDN);
    mpfr_mul_d(x, ref->cos, a, MPFR_RNDN);
    mpfr_mul_d(y, sn, b, MPFR_RNDN);
    mpfr_sub(x, x, y, MPFR_RNDN);
    mpfr_sub_d(x, x, got_a, MPFR_RNDN);
    const double err_a = fabs(mpfr_get_d(x, MPFR_RNDN));
    mpfr_mul_d(x, sn, a, MPFR_RNDN);
    mpfr_mul_d(y, ref->cos, b, MPFR_RNDN);
    mpfr_add(x, x, y, MPFR_RNDN);
    mpfr_sub_d(x, x, got_b, MPFR_RNDN);
    const double err_b = fabs(mpfr_get_d(x, MPFR_RNDN));
    mpfr_clears(sn, x, y, (mpfr_ptr)0);
    const double e = isnan(err_a) || isnan(err_b) ? NAN : fmax(err_a, err_b);
    const double bound = ldexp(1.0, -22) * hypot(a, b);
    return bound > 0 ? e / bound : e == 0 ? 0 : INFINITY;
}
