/*
 * tuning.c - the 96-bit tuning word of every pair, computed with MPFR.
 *
 * F_i = round(2^96 * w_i / 2pi) is the pair's phase step per position in
 * units of 2^-96 turn. The kernels need it correct to the last of its 96
 * bits, which double precision cannot give, so it is computed at 256 bits:
 * r = base^(-2/d) once for the paper (base^(-1/max(d/2-1, 1)) for
 * tensor2tensor), then w_i = r^i by repeated multiplication. Each product
 * adds a relative error below 2^-255, so even after 2^23 of them w_i is good
 * to about 2^-232, far below the 2^-97 the rounding of F_i already costs.
 */
#include "internal.h"

#include <mpfr.h>

#define TUNING_PRECISION 256

clpe_status clpe__tuning_words(const clpe_config *cfg, uint64_t *hi, uint32_t *lo)
{
    uint32_t half_d = cfg->d / 2;
    /* w_i = base^(-i * num / den): paper 2/d, tensor2tensor 1/max(d/2 - 1, 1) */
    unsigned long num = cfg->freq == CLPE_FREQ_PAPER ? 2 : 1;
    unsigned long den = cfg->freq == CLPE_FREQ_PAPER ? cfg->d : (half_d >= 2 ? half_d - 1 : 1);
    mpfr_t r, w, scale, f, top;
    mpfr_inits2(TUNING_PRECISION, r, w, scale, f, top, (mpfr_ptr)0);

    /* r = exp(-ln(base) * num / den) */
    mpfr_set_d(r, cfg->base, MPFR_RNDN);
    mpfr_log(r, r, MPFR_RNDN);
    mpfr_mul_ui(r, r, num, MPFR_RNDN);
    mpfr_div_ui(r, r, den, MPFR_RNDN);
    mpfr_neg(r, r, MPFR_RNDN);
    mpfr_exp(r, r, MPFR_RNDN);

    /* scale = 2^96 / 2pi */
    mpfr_const_pi(scale, MPFR_RNDN);
    mpfr_mul_2ui(scale, scale, 1, MPFR_RNDN);
    mpfr_ui_div(scale, 1, scale, MPFR_RNDN);
    mpfr_mul_2ui(scale, scale, 96, MPFR_RNDN);

    mpfr_set_ui(w, 1, MPFR_RNDN);
    for (uint32_t i = 0; i < half_d; ++i) {
        mpfr_mul(f, w, scale, MPFR_RNDN);
        mpfr_rint(f, f, MPFR_RNDN);          /* F_i < 2^94: an exact integer now */
        mpfr_div_2ui(top, f, 32, MPFR_RNDN); /* exact */
        mpfr_floor(top, top);
        hi[i] = (uint64_t)mpfr_get_uj(top, MPFR_RNDN);
        mpfr_mul_2ui(top, top, 32, MPFR_RNDN);
        mpfr_sub(f, f, top, MPFR_RNDN);      /* exact: the low 32 bits */
        lo[i] = (uint32_t)mpfr_get_uj(f, MPFR_RNDN);
        mpfr_mul(w, w, r, MPFR_RNDN);
    }
    mpfr_clears(r, w, scale, f, top, (mpfr_ptr)0);
    mpfr_free_cache();
    return CLPE_SUCCESS;
}
