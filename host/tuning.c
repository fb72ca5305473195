/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tuning.c - the tuning word of every pair, computed with MPFR.
 *
 * F_i = round(2^bits * w_i / 2pi) is the pair's phase step per position in
 * units of 2^-bits turn: 96 bits for the float32 arithmetic, 128 for
 * float64 (whose phase must stay exact to 2^-66 turn at |p| = 2^63). The
 * kernels need it correct to its last bit, which double precision cannot give, so it is computed at 256 bits:
 * r = base^(-2/d) once for the paper (base^(-1/max(d/2-1, 1)) for
 * tensor2tensor), then w_i = r^i by repeated multiplication. Each product
 * adds a relative error below 2^-255, so even after 2^23 of them w_i is good
 * to about 2^-232, far below the 2^-(bits+1) the rounding of F_i already costs.
 */
#include "tuning.h"

void clpe__tuning_scale(mpfr_ptr scale, unsigned bits)
{
    mpfr_const_pi(scale, MPFR_RNDN);
    mpfr_mul_2ui(scale, scale, 1, MPFR_RNDN);
    mpfr_ui_div(scale, 1, scale, MPFR_RNDN);
    mpfr_mul_2ui(scale, scale, bits, MPFR_RNDN);
}

void clpe__tuning_word(mpfr_srcptr w, mpfr_srcptr scale, unsigned bits, uint64_t *hi,
                       uint64_t *lo)
{
    unsigned low_bits = bits - 64;
    mpfr_t f, top;
    mpfr_inits2(CLPE_TUNING_PRECISION, f, top, (mpfr_ptr)0);
    mpfr_mul(f, w, scale, MPFR_RNDN);
    mpfr_rint(f, f, MPFR_RNDN);                /* an exact integer now */
    mpfr_div_2ui(top, f, bits, MPFR_RNDN);     /* exact: whole turns ... */
    mpfr_floor(top, top);
    mpfr_mul_2ui(top, top, bits, MPFR_RNDN);
    mpfr_sub(f, f, top, MPFR_RNDN);            /* ... fall off: F mod 2^bits */
    mpfr_div_2ui(top, f, low_bits, MPFR_RNDN); /* exact */
    mpfr_floor(top, top);
    *hi = (uint64_t)mpfr_get_uj(top, MPFR_RNDN);
    mpfr_mul_2ui(top, top, low_bits, MPFR_RNDN);
    mpfr_sub(f, f, top, MPFR_RNDN);            /* exact: the low bits */
    *lo = (uint64_t)mpfr_get_uj(f, MPFR_RNDN);
    mpfr_clears(f, top, (mpfr_ptr)0);
}

clpe_status clpe__tuning_words(const clpe_config *cfg, unsigned bits, uint64_t *hi, uint64_t *lo)
{
    uint32_t half_d = clpe__slots(cfg).n_pairs;
    /* w_i = base^(-i * num / den): paper 2/d, tensor2tensor 1/max(pairs - 1, 1) */
    unsigned long num = cfg->freq == CLPE_FREQ_PAPER ? 2 : 1;
    unsigned long den = cfg->freq == CLPE_FREQ_PAPER ? cfg->d : (half_d >= 2 ? half_d - 1 : 1);
    mpfr_t r, w, scale;
    mpfr_inits2(CLPE_TUNING_PRECISION, r, w, scale, (mpfr_ptr)0);

    /* r = exp(-ln(base) * num / den) */
    mpfr_set_d(r, cfg->base, MPFR_RNDN);
    mpfr_log(r, r, MPFR_RNDN);
    mpfr_mul_ui(r, r, num, MPFR_RNDN);
    mpfr_div_ui(r, r, den, MPFR_RNDN);
    mpfr_neg(r, r, MPFR_RNDN);
    mpfr_exp(r, r, MPFR_RNDN);
    clpe__tuning_scale(scale, bits);

    mpfr_set_ui(w, 1, MPFR_RNDN);
    for (uint32_t i = 0; i < half_d; ++i) {
        clpe__tuning_word(w, scale, bits, &hi[i], &lo[i]);
        mpfr_mul(w, w, r, MPFR_RNDN);
    }
    mpfr_clears(r, w, scale, (mpfr_ptr)0);
    mpfr_free_cache();
    return CLPE_SUCCESS;
}
