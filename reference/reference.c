/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reference.c - the MPFR reference of the encoding (see reference.h).
 */
#include "reference/reference.h"

#include <math.h>

/* Frequencies of cfg: the d/2 pairs, plus the half pair of an odd width
 * computed as Marian and XLM do. */
static uint32_t pair_count(const clpe_config *cfg)
{
    if ((cfg->flags & CLPE_FLAG_ODD_D_HALF_PAIR) && (cfg->d & 1u))
        return cfg->d / 2 + 1;
    return cfg->d / 2;
}

void ref_init(ref_encoding *ref, const clpe_config *cfg)
{
    ref->d = cfg->d;
    ref->pairs = pair_count(cfg);
    ref->base = cfg->base;
    ref->freq = cfg->freq;
    mpfr_inits2(REF_PRECISION, ref->exponent, ref->w, ref->position, ref->angle, ref->sin,
                ref->cos, ref->scratch, (mpfr_ptr)0);
}

void ref_clear(ref_encoding *ref)
{
    mpfr_clears(ref->exponent, ref->w, ref->position, ref->angle, ref->sin, ref->cos,
                ref->scratch, (mpfr_ptr)0);
}

void ref_set_pair(ref_encoding *ref, uint32_t i)
{
    /* The exponent is a quotient of integers, so at 256 bits its rounding
     * (and that of pow) lies far below anything an output can show. */
    mpfr_set_si(ref->exponent, -(long)i, MPFR_RNDN);
    if (ref->freq == CLPE_FREQ_PAPER) {
        mpfr_mul_2ui(ref->exponent, ref->exponent, 1, MPFR_RNDN); /* -2i, exact */
        mpfr_div_ui(ref->exponent, ref->exponent, ref->d, MPFR_RNDN);
    } else {
        mpfr_div_ui(ref->exponent, ref->exponent, ref->pairs > 1 ? ref->pairs - 1 : 1,
                    MPFR_RNDN);
    }
    mpfr_set_d(ref->w, ref->base, MPFR_RNDN); /* a double is exact in MPFR */
    mpfr_pow(ref->w, ref->w, ref->exponent, MPFR_RNDN);
}

void ref_at(ref_encoding *ref, int64_t p)
{
    mpfr_set_sj(ref->position, (intmax_t)p, MPFR_RNDN); /* exact: 64 bits fit */
    mpfr_mul(ref->angle, ref->position, ref->w, MPFR_RNDN);
    mpfr_sin_cos(ref->sin, ref->cos, ref->angle, MPFR_RNDN);
}

double ref_sin(const ref_encoding *ref) { return mpfr_get_d(ref->sin, MPFR_RNDN); }
double ref_cos(const ref_encoding *ref) { return mpfr_get_d(ref->cos, MPFR_RNDN); }

double ref_error(ref_encoding *ref, int is_cos, double got)
{
    if (isnan(got))
        return got;
    mpfr_set_d(ref->scratch, got, MPFR_RNDN);
    mpfr_sub(ref->scratch, ref->scratch, is_cos ? ref->cos : ref->sin, MPFR_RNDN);
    return fabs(mpfr_get_d(ref->scratch, MPFR_RNDN));
}

ref_wave ref_slot(const clpe_config *cfg, uint32_t k, uint32_t *pair)
{
    const uint32_t sines = pair_count(cfg);
    const uint32_t cosines = cfg->d / 2;
    *pair = 0;
    switch (cfg->layout) {
    case CLPE_LAYOUT_INTERLEAVED:
        /* sin at 2i, cos at 2i+1; a slot past the last pair is the zero column */
        if (k / 2 >= ((k & 1u) ? cosines : sines))
            return REF_ZERO;
        *pair = k / 2;
        return (k & 1u) ? REF_COS : REF_SIN;
    case CLPE_LAYOUT_SPLIT:
        /* the sines, then the cosines, then the zero column */
        if (k < sines) {
            *pair = k;
            return REF_SIN;
        }
        if (k - sines < cosines) {
            *pair = k - sines;
            return REF_COS;
        }
        return REF_ZERO;
    case CLPE_LAYOUT_SPLIT_COS_FIRST:
        if (k < cosines) {
            *pair = k;
            return REF_COS;
        }
        if (k - cosines < sines) {
            *pair = k - cosines;
            return REF_SIN;
        }
        return REF_ZERO;
    }
    return REF_ZERO;
}

int ref_row_is_zero(const clpe_config *cfg, int64_t p)
{
    return (cfg->flags & CLPE_FLAG_PADDING_ROW) && p == cfg->padding_position;
}
