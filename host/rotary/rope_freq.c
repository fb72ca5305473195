/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_freq.c - the per-pair frequencies and the amplitude of rotary
 * embeddings, as Hugging Face transformers' rope_init_fns define them
 * (modeling_rope_utils.py of transformers 4.57: _compute_default_rope_parameters,
 * _compute_linear_scaling_rope_parameters, _compute_dynamic_ntk_parameters,
 * _compute_yarn_parameters, _compute_llama3_parameters,
 * _compute_longrope_parameters), computed in MPFR so the tuning words stay
 * exact.
 *
 * Every given double is taken as the exact number it holds, and each formula
 * is evaluated at CLPE_TUNING_PRECISION bits before the one rounding to a
 * tuning word. Hugging Face evaluates the same formulas on float32 tensors
 * (inv_freq, the YaRN ramp, the Llama 3 wavelengths, the grown base of
 * dynamic NTK once seq_len is a tensor), so its frequencies carry float32
 * rounding errors of up to a few 2^-24 relative; clpe deliberately uses the
 * exact values of the same formulas, which is what those float32 tensors
 * approximate. Only the branch decisions that Hugging Face takes on Python
 * floats in double (the YaRN correction range's floor and ceil, its 0.001
 * singularity guard) are repeated as written; the amplitude m, a Python float
 * there, is computed in double with the same operations in the same order.
 *
 * dim below is Hugging Face's dim = int(head_dim * partial_rotary_factor),
 * clpe's rotary_dim = 2 * n_pairs; pair i has the default frequency
 * w0_i = base^(-2i/dim).
 */
#include "core/tuning.h"
#include "rotary/rotary.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

/* x is a finite double no smaller than low. */
static bool at_least(double x, double low)
{
    return isfinite(x) && x >= low;
}

/* YaRN's beta_fast and beta_slow with their defaults: HF
 * `config.rope_scaling.get("beta_fast") or 32`, `... .get("beta_slow") or 1`. */
static double yarn_beta_fast(const clpe_rope_config *cfg)
{
    return cfg->beta_fast != 0 ? cfg->beta_fast : 32.0;
}

static double yarn_beta_slow(const clpe_rope_config *cfg)
{
    return cfg->beta_slow != 0 ? cfg->beta_slow : 1.0;
}

/* HF _compute_yarn_parameters:
 *     def get_mscale(scale, mscale=1):
 *         if scale <= 1:
 *             return 1.0
 *         return 0.1 * mscale * math.log(scale) + 1.0 */
static double yarn_get_mscale(double scale, double mscale)
{
    if (scale <= 1)
        return 1.0;
    return 0.1 * mscale * log(scale) + 1.0;
}

/* The amplitude m as Hugging Face computes attention_factor (a Python
 * float, so double here, same operations, same order; the library is built
 * without floating-point contraction). */
static double rope_amplitude(const clpe_rope_config *cfg)
{
    switch (cfg->scaling) {
    case CLPE_ROPE_YARN:
        /* if attention_factor is None:
         *     if mscale and mscale_all_dim:
         *         attention_factor = float(get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim))
         *     else:
         *         attention_factor = get_mscale(factor) */
        if (cfg->attention_factor != 0)
            return cfg->attention_factor;
        if (cfg->mscale != 0 && cfg->mscale_all_dim != 0)
            return yarn_get_mscale(cfg->factor, cfg->mscale) /
                   yarn_get_mscale(cfg->factor, cfg->mscale_all_dim);
        return yarn_get_mscale(cfg->factor, 1.0);
    case CLPE_ROPE_LONGROPE:
        /* if attention_factor is None:
         *     if factor <= 1.0:
         *         attention_factor = 1.0
         *     else:
         *         attention_factor = math.sqrt(1 + math.log(factor) / math.log(original_max_position_embeddings))
         * (Phi-3 sets factor = max_position_embeddings / original_max_position_embeddings.) */
        if (cfg->attention_factor != 0)
            return cfg->attention_factor;
        if (cfg->factor <= 1.0)
            return 1.0;
        return sqrt(1 + log(cfg->factor) / log(cfg->original_max_position));
    case CLPE_ROPE_FREQUENCIES:
        return cfg->attention_factor != 0 ? cfg->attention_factor : 1.0;
    default:
        return 1.0; /* default, linear, dynamic, llama3: attention_factor = 1.0 */
    }
}

/* A refusal with its reason: the status, and "what: why" in d (when the
 * caller gave room for it), truncated to fit and always NUL-terminated. */
clpe_status clpe__refuse(clpe_detail *d, clpe_status status, const char *format, ...)
{
    if (d && d->text && d->capacity) {
        va_list args;
        va_start(args, format);
        vsnprintf(d->text, d->capacity, format, args);
        va_end(args);
    }
    return status;
}

static const char *const scaling_names[] = {"default", "linear",  "dynamic",    "yarn",
                                            "llama3",  "longrope", "frequencies"};

const char *clpe__rope_scaling_name(clpe_rope_scaling s)
{
    return (unsigned)s <= CLPE_ROPE_FREQUENCIES ? scaling_names[s] : "unknown scaling";
}

#define REFUSE(...) clpe__refuse(d, CLPE_ERROR_INVALID_SCALING, __VA_ARGS__)

/* "name must be >= low" unless x is finite and at least low. */
static bool refuse_below(clpe_detail *d, const clpe_rope_config *cfg, const char *name, double x,
                         double low, clpe_status *status)
{
    if (at_least(x, low))
        return false;
    *status = REFUSE("%s: %s must be a finite number >= %g, got %g",
                     clpe__rope_scaling_name(cfg->scaling), name, low, x);
    return true;
}

/* The first entry of a per-pair array that is not finite and positive. */
static bool refuse_array(clpe_detail *d, const clpe_rope_config *cfg, const char *name,
                         const double *values, uint32_t n, bool zero_ok, clpe_status *status)
{
    const char *scaling = clpe__rope_scaling_name(cfg->scaling);
    if (!values) {
        *status = REFUSE("%s: %s is NULL; it needs rotary_dim / 2 = %u values", scaling, name, n);
        return true;
    }
    for (uint32_t i = 0; i < n; ++i) {
        double x = values[i];
        if (!(isfinite(x) && (x > 0 || (zero_ok && x == 0)))) {
            *status = REFUSE("%s: %s[%u] must be finite and %s 0, got %g", scaling, name, i,
                             zero_ok ? ">=" : ">", x);
            return true;
        }
    }
    return false;
}

/* Hugging Face only warns about most of these (factor < 1, beta_fast <
 * beta_slow, high_freq_factor <= low_freq_factor) and fails later on others
 * (a zero low_freq_factor, a 2-wide dynamic rotation): clpe refuses all of
 * them before anything is created, and says which field and why. */
clpe_status clpe__rope_check_scaling(const clpe_rope_config *cfg, uint32_t n_pairs,
                                     clpe_detail *d)
{
    clpe_status st = CLPE_SUCCESS;
    const char *scaling = clpe__rope_scaling_name(cfg->scaling);
    if (!(isfinite(cfg->base) && cfg->base > 1))
        return REFUSE("base must be finite and > 1, got %g", cfg->base);
    if (n_pairs == 0)
        return REFUSE("rotary_dim must be at least 2");
    switch (cfg->scaling) {
    case CLPE_ROPE_DEFAULT:
        break;
    case CLPE_ROPE_LINEAR:
        if (refuse_below(d, cfg, "factor", cfg->factor, 1, &st))
            return st;
        break;
    case CLPE_ROPE_DYNAMIC:
        if (refuse_below(d, cfg, "factor", cfg->factor, 1, &st) ||
            refuse_below(d, cfg, "original_max_position", cfg->original_max_position, 1, &st))
            return st;
        /* base * (...) ** (dim / (dim - 2)): dim 2 divides by zero */
        if (n_pairs < 2)
            return REFUSE("dynamic: rotary_dim must be at least 4, got 2");
        break;
    case CLPE_ROPE_YARN:
        if (refuse_below(d, cfg, "factor", cfg->factor, 1, &st) ||
            refuse_below(d, cfg, "original_max_position", cfg->original_max_position, 1, &st) ||
            refuse_below(d, cfg, "beta_fast", cfg->beta_fast, 0, &st) ||
            refuse_below(d, cfg, "beta_slow", cfg->beta_slow, 0, &st) ||
            refuse_below(d, cfg, "attention_factor", cfg->attention_factor, 0, &st))
            return st;
        if (yarn_beta_fast(cfg) < yarn_beta_slow(cfg))
            return REFUSE("yarn: beta_fast (%g) must be >= beta_slow (%g)", yarn_beta_fast(cfg),
                          yarn_beta_slow(cfg));
        if (!isfinite(cfg->mscale))
            return REFUSE("yarn: mscale must be finite, got %g", cfg->mscale);
        if (!isfinite(cfg->mscale_all_dim))
            return REFUSE("yarn: mscale_all_dim must be finite, got %g", cfg->mscale_all_dim);
        break;
    case CLPE_ROPE_LLAMA3:
        if (refuse_below(d, cfg, "factor", cfg->factor, 1, &st) ||
            refuse_below(d, cfg, "original_max_position", cfg->original_max_position, 1, &st))
            return st;
        /* low_freq_wavelen = old_context_len / low_freq_factor */
        if (!(isfinite(cfg->low_freq_factor) && cfg->low_freq_factor > 0))
            return REFUSE("llama3: low_freq_factor must be finite and > 0, got %g",
                          cfg->low_freq_factor);
        if (!(isfinite(cfg->high_freq_factor) && cfg->high_freq_factor > cfg->low_freq_factor))
            return REFUSE("llama3: high_freq_factor must be finite and > low_freq_factor (%g), "
                          "got %g",
                          cfg->low_freq_factor, cfg->high_freq_factor);
        break;
    case CLPE_ROPE_LONGROPE:
        if (refuse_array(d, cfg, "short_factor", cfg->short_factor, n_pairs, false, &st) ||
            refuse_array(d, cfg, "long_factor", cfg->long_factor, n_pairs, false, &st) ||
            refuse_below(d, cfg, "original_max_position", cfg->original_max_position, 1, &st) ||
            refuse_below(d, cfg, "attention_factor", cfg->attention_factor, 0, &st))
            return st;
        /* factor only feeds the amplitude: it may be 0 (unset) when
         * attention_factor is given */
        if (!(at_least(cfg->factor, 1) || (cfg->factor == 0 && cfg->attention_factor > 0)))
            return REFUSE("longrope: factor must be a finite number >= 1 (or 0 with "
                          "attention_factor set), got %g",
                          cfg->factor);
        break;
    case CLPE_ROPE_FREQUENCIES:
        if (refuse_array(d, cfg, "frequencies", cfg->frequencies, n_pairs, true, &st) ||
            refuse_below(d, cfg, "attention_factor", cfg->attention_factor, 0, &st))
            return st;
        break;
    default:
        return REFUSE("scaling %d is not a clpe_rope_scaling", (int)cfg->scaling);
    }
    double m = rope_amplitude(cfg); /* e.g. get_mscale(factor, mscale_all_dim) == 0 */
    if (!(isfinite(m) && m > 0)) {
        const char *from = cfg->attention_factor != 0 ? "attention_factor"
                           : cfg->scaling == CLPE_ROPE_YARN
                               ? "mscale, mscale_all_dim and factor (get_mscale(factor, mscale) "
                                 "/ get_mscale(factor, mscale_all_dim))"
                               : "factor and original_max_position";
        return REFUSE("%s: the amplitude %s give is %g; it must be finite and > 0", scaling,
                      from, m);
    }
    return CLPE_SUCCESS;
}

/* The base the frequencies use. Dynamic NTK grows it:
 *     seq_len = max(seq_len, max_position_embeddings)
 *     base = base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))
 * (seq_len 0 is Hugging Face's None: the length at initialisation). */
static void rope_base(mpfr_ptr base, const clpe_rope_config *cfg, uint32_t n_pairs)
{
    mpfr_set_d(base, cfg->base, MPFR_RNDN);
    if (cfg->scaling != CLPE_ROPE_DYNAMIC)
        return;
    mpfr_t len, t;
    mpfr_inits2(CLPE_TUNING_PRECISION, len, t, (mpfr_ptr)0);
    mpfr_set_uj(len, cfg->seq_len, MPFR_RNDN);
    mpfr_set_d(t, cfg->original_max_position, MPFR_RNDN);
    if (mpfr_lessequal_p(len, t)) {
        /* seq_len / max_position_embeddings is 1: the bracket is exactly 1
         * and the base stays; evaluating factor - (factor - 1) would lose
         * that 1 once factor needs more bits than the working precision */
        mpfr_clears(len, t, (mpfr_ptr)0);
        return;
    }
    mpfr_div(len, len, t, MPFR_RNDN);               /* seq_len / max_position_embeddings */
    mpfr_mul_d(len, len, cfg->factor, MPFR_RNDN);   /* factor * ... */
    mpfr_set_d(t, cfg->factor, MPFR_RNDN);
    mpfr_sub_ui(t, t, 1, MPFR_RNDN);
    mpfr_sub(len, len, t, MPFR_RNDN);               /* ... - (factor - 1) >= 1 */
    mpfr_log(len, len, MPFR_RNDN);
    mpfr_mul_ui(len, len, 2 * n_pairs, MPFR_RNDN);
    mpfr_div_ui(len, len, 2 * n_pairs - 2, MPFR_RNDN); /* ** (dim / (dim - 2)) */
    mpfr_exp(len, len, MPFR_RNDN);
    mpfr_mul(base, base, len, MPFR_RNDN);
    mpfr_clears(len, t, (mpfr_ptr)0);
}

/* YaRN's correction range [low, high] (transformers 4.57; 4.49 took
 * max_position_embeddings and always truncated):
 *     def find_correction_dim(num_rotations, dim, base, max_position_embeddings):
 *         return (dim * math.log(max_position_embeddings / (num_rotations * 2 * math.pi))) / (2 * math.log(base))
 *     low = find_correction_dim(beta_fast, ...); high = find_correction_dim(beta_slow, ...)
 *     if truncate: low = math.floor(low); high = math.ceil(high)
 *     return max(low, 0), min(high, dim - 1)
 * and linear_ramp_factor's guard `if min == max: max += 0.001`, a double
 * addition in Python, repeated as such. */
static void yarn_range(mpfr_ptr low, mpfr_ptr high, mpfr_srcptr log_base,
                       const clpe_rope_config *cfg, uint32_t n_pairs)
{
    double beta[2] = {yarn_beta_fast(cfg), yarn_beta_slow(cfg)};
    mpfr_ptr bound[2] = {low, high};
    mpfr_t two_pi;
    mpfr_init2(two_pi, CLPE_TUNING_PRECISION);
    mpfr_const_pi(two_pi, MPFR_RNDN);
    mpfr_mul_2ui(two_pi, two_pi, 1, MPFR_RNDN);
    for (int j = 0; j < 2; ++j) {
        mpfr_ptr x = bound[j];
        mpfr_mul_d(x, two_pi, beta[j], MPFR_RNDN);
        mpfr_d_div(x, cfg->original_max_position, x, MPFR_RNDN);
        mpfr_log(x, x, MPFR_RNDN);
        mpfr_mul_ui(x, x, 2 * n_pairs, MPFR_RNDN);
        mpfr_div(x, x, log_base, MPFR_RNDN);
        mpfr_div_2ui(x, x, 1, MPFR_RNDN);
        if (!cfg->no_truncate) {
            if (j == 0)
                mpfr_floor(x, x);
            else
                mpfr_ceil(x, x);
        }
    }
    if (mpfr_sgn(low) < 0)
        mpfr_set_ui(low, 0, MPFR_RNDN);
    if (mpfr_cmp_ui(high, 2 * n_pairs - 1) > 0)
        mpfr_set_ui(high, 2 * n_pairs - 1, MPFR_RNDN);
    if (mpfr_equal_p(low, high))
        mpfr_set_d(high, mpfr_get_d(high, MPFR_RNDN) + 0.001, MPFR_RNDN);
    mpfr_clear(two_pi);
}

/* w = w0 * ((1 - a) + a / factor): the blend of YaRN (a = its ramp) and of
 * Llama 3's medium band (a = 1 - smooth_factor), exact. */
static void blend(mpfr_ptr w, mpfr_srcptr w0, mpfr_srcptr a, double factor, mpfr_ptr tmp)
{
    mpfr_div_d(tmp, a, factor, MPFR_RNDN);
    mpfr_add_ui(tmp, tmp, 1, MPFR_RNDN);
    mpfr_sub(tmp, tmp, a, MPFR_RNDN);
    mpfr_mul(w, w0, tmp, MPFR_RNDN);
}

clpe_status clpe__rope_tuning_words(const clpe_rope_config *cfg, uint32_t n_pairs, unsigned bits,
                                    uint64_t *hi, uint64_t *lo, double *frequencies,
                                    double *amplitude, clpe_detail *d)
{
    mpfr_t r, w0, w, a, tmp, scale, log_base, low, high, two_pi;
    mpfr_inits2(CLPE_TUNING_PRECISION, r, w0, w, a, tmp, scale, log_base, low, high, two_pi,
                (mpfr_ptr)0);
    clpe__tuning_scale(scale, bits);
    mpfr_const_pi(two_pi, MPFR_RNDN);
    mpfr_mul_2ui(two_pi, two_pi, 1, MPFR_RNDN);

    /* r = base^(-2 / dim): w0_i = r^i, 1.0 / (base ** (arange(0, dim, 2) / dim)) */
    rope_base(log_base, cfg, n_pairs);
    mpfr_log(log_base, log_base, MPFR_RNDN);
    mpfr_mul_si(r, log_base, -2, MPFR_RNDN);
    mpfr_div_ui(r, r, 2 * n_pairs, MPFR_RNDN);
    mpfr_exp(r, r, MPFR_RNDN);
    if (cfg->scaling == CLPE_ROPE_YARN)
        yarn_range(low, high, log_base, cfg, n_pairs);

    const double *ext_factors = cfg->seq_len > cfg->original_max_position ? cfg->long_factor
                                                                          : cfg->short_factor;
    clpe_status status = CLPE_SUCCESS;
    mpfr_set_ui(w0, 1, MPFR_RNDN);
    for (uint32_t i = 0; i < n_pairs && status == CLPE_SUCCESS; ++i) {
        switch (cfg->scaling) {
        case CLPE_ROPE_LINEAR:
            /* inv_freq /= factor */
            mpfr_div_d(w, w0, cfg->factor, MPFR_RNDN);
            break;
        case CLPE_ROPE_YARN:
            /* linear_func = (arange(dim // 2) - min) / (max - min); ramp = clamp(linear_func, 0, 1)
             * inv_freq_extrapolation_factor = 1 - ramp
             * inv_freq = inv_freq_interpolation * (1 - inv_freq_extrapolation_factor)
             *            + inv_freq_extrapolation * inv_freq_extrapolation_factor
             * with inv_freq_interpolation = w0 / factor, inv_freq_extrapolation = w0 */
            mpfr_ui_sub(a, i, low, MPFR_RNDN);
            mpfr_sub(tmp, high, low, MPFR_RNDN);
            mpfr_div(a, a, tmp, MPFR_RNDN);
            if (mpfr_sgn(a) < 0)
                mpfr_set_ui(a, 0, MPFR_RNDN);
            if (mpfr_cmp_ui(a, 1) > 0)
                mpfr_set_ui(a, 1, MPFR_RNDN);
            blend(w, w0, a, cfg->factor, tmp);
            break;
        case CLPE_ROPE_LLAMA3:
            /* wavelen = 2 * math.pi / inv_freq
             * wavelen > low_freq_wavelen (old_context_len / low_freq_factor): inv_freq / factor
             * wavelen < high_freq_wavelen (old_context_len / high_freq_factor): inv_freq
             * otherwise smooth_factor = (old_context_len / wavelen - low_freq_factor)
             *                           / (high_freq_factor - low_freq_factor)
             *           (1 - smooth_factor) * inv_freq / factor + smooth_factor * inv_freq */
            mpfr_div(a, two_pi, w0, MPFR_RNDN); /* wavelen */
            mpfr_d_div(tmp, cfg->original_max_position, a, MPFR_RNDN); /* old_context_len / wavelen */
            if (mpfr_cmp_d(tmp, cfg->low_freq_factor) < 0) {
                mpfr_div_d(w, w0, cfg->factor, MPFR_RNDN);
            } else if (mpfr_cmp_d(tmp, cfg->high_freq_factor) > 0) {
                mpfr_set(w, w0, MPFR_RNDN);
            } else {
                /* a = 1 - smooth_factor = (high_freq_factor - L / wavelen) / (high - low) */
                mpfr_d_sub(a, cfg->high_freq_factor, tmp, MPFR_RNDN);
                mpfr_set_d(tmp, cfg->high_freq_factor, MPFR_RNDN);
                mpfr_sub_d(tmp, tmp, cfg->low_freq_factor, MPFR_RNDN);
                mpfr_div(a, a, tmp, MPFR_RNDN);
                blend(w, w0, a, cfg->factor, tmp);
            }
            break;
        case CLPE_ROPE_LONGROPE:
            /* ext_factors = long_factor if seq_len > original_max_position_embeddings else short_factor
             * inv_freq = 1.0 / (ext_factors * base**inv_freq_shape) */
            mpfr_div_d(w, w0, ext_factors[i], MPFR_RNDN);
            break;
        case CLPE_ROPE_FREQUENCIES:
            mpfr_set_d(w, cfg->frequencies[i], MPFR_RNDN);
            break;
        default: /* DEFAULT, and DYNAMIC through its grown base */
            mpfr_set(w, w0, MPFR_RNDN);
            break;
        }
        /* The tuning word holds w * 2^bits / 2pi modulo 2^bits: exact while
         * the working precision reaches below its last bit, which it does
         * with room to spare for every w below CLPE_ROPE_MAX_FREQUENCY. */
        if (!mpfr_number_p(w) || mpfr_sgn(w) < 0 || mpfr_cmp_d(w, CLPE_ROPE_MAX_FREQUENCY) >= 0) {
            status = clpe__refuse(d, CLPE_ERROR_INVALID_SCALING,
                                  "%s: pair %u's frequency %g is outside [0, 2^32) radians per "
                                  "position",
                                  clpe__rope_scaling_name(cfg->scaling), i,
                                  mpfr_get_d(w, MPFR_RNDN));
            break;
        }
        clpe__tuning_word(w, scale, bits, &hi[i], &lo[i]);
        frequencies[i] = mpfr_get_d(w, MPFR_RNDN);
        mpfr_mul(w0, w0, r, MPFR_RNDN);
    }
    *amplitude = rope_amplitude(cfg);
    mpfr_clears(r, w0, w, a, tmp, scale, log_base, low, high, two_pi, (mpfr_ptr)0);
    mpfr_free_cache();
    return status;
}
