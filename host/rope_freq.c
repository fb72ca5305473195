/*
 * rope_freq.c - the per-pair frequencies and the amplitude of rotary
 * embeddings, as Hugging Face transformers' rope_init_fns define them,
 * computed in MPFR so the tuning words stay exact.
 */
#include "tuning.h"

#include <math.h>

clpe_status clpe__rope_check_scaling(const clpe_rope_config *cfg, uint32_t n_pairs)
{
    switch (cfg->scaling) {
    case CLPE_ROPE_DEFAULT:
        return CLPE_SUCCESS;
    case CLPE_ROPE_FREQUENCIES:
        if (!cfg->frequencies)
            return CLPE_ERROR_INVALID_SCALING;
        for (uint32_t i = 0; i < n_pairs; ++i)
            if (!isfinite(cfg->frequencies[i]) || cfg->frequencies[i] < 0)
                return CLPE_ERROR_INVALID_SCALING;
        if (!isfinite(cfg->attention_factor) || cfg->attention_factor < 0)
            return CLPE_ERROR_INVALID_SCALING;
        return CLPE_SUCCESS;
    default:
        return CLPE_ERROR_INVALID_SCALING;
    }
}

clpe_status clpe__rope_tuning_words(const clpe_rope_config *cfg, uint32_t n_pairs, unsigned bits,
                                    uint64_t *hi, uint64_t *lo, double *frequencies,
                                    double *amplitude)
{
    mpfr_t r, w, scale;
    mpfr_inits2(CLPE_TUNING_PRECISION, r, w, scale, (mpfr_ptr)0);
    clpe__tuning_scale(scale, bits);
    /* r = base^(-2 / rotary_dim): w_i = r^i */
    mpfr_set_d(r, cfg->base, MPFR_RNDN);
    mpfr_log(r, r, MPFR_RNDN);
    mpfr_mul_si(r, r, -2, MPFR_RNDN);
    mpfr_div_ui(r, r, 2 * n_pairs, MPFR_RNDN);
    mpfr_exp(r, r, MPFR_RNDN);
    mpfr_set_ui(w, 1, MPFR_RNDN);
    *amplitude = 1.0;
    for (uint32_t i = 0; i < n_pairs; ++i) {
        if (cfg->scaling == CLPE_ROPE_FREQUENCIES)
            mpfr_set_d(w, cfg->frequencies[i], MPFR_RNDN);
        clpe__tuning_word(w, scale, bits, &hi[i], &lo[i]);
        frequencies[i] = mpfr_get_d(w, MPFR_RNDN);
        if (cfg->scaling != CLPE_ROPE_FREQUENCIES)
            mpfr_mul(w, w, r, MPFR_RNDN);
    }
    if (cfg->scaling == CLPE_ROPE_FREQUENCIES && cfg->attention_factor > 0)
        *amplitude = cfg->attention_factor;
    mpfr_clears(r, w, scale, (mpfr_ptr)0);
    mpfr_free_cache();
    return CLPE_SUCCESS;
}
