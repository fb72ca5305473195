/* SPDX-License-Identifier: Apache-2.0 */
/*
 * frequencies.c - the encoder's tuning words: its ladder of frequencies
 * w_i = r^i, r = base^(-2/d) for the paper's convention
 * (base^(-1/max(d/2-1, 1)) for tensor2tensor's), computed at 256 bits by
 * repeated multiplication. Each product adds a relative error below
 * 2^-255, so even after 2^23 of them w_i is good to about 2^-232, far below
 * the 2^-(bits+1) the rounding of its tuning word already costs.
 */
#include "core/tuning.h"
#include "sinusoid/sinusoid.h"

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
