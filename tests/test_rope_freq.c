/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rope_freq.c - the rotary frequencies w_i and amplitude m of every
 * scaling equal Hugging Face transformers' rope_init_fns
 * (modeling_rope_utils.py, transformers 4.57), and bad scaling parameters
 * are refused with CLPE_ERROR_INVALID_SCALING before anything is created.
 *
 * The references are float64 transcriptions of Hugging Face's Python, line
 * by line (quoted above each), not of clpe's formulas: clpe evaluates the
 * same formulas exactly in MPFR and rounds once, so the two differ only by
 * the transcription's own double roundings. Those are bounded per element
 * by TOLERANCE_ULPS below; a wrong formula, a wrong branch or a version
 * mix-up (YaRN 4.49 against 4.57 moves frequencies by up to 55 %) is
 * thousands of ulps away. The amplitude is a Python float in Hugging Face,
 * so its transcription is evaluated with the same operations and must be
 * equal to the last bit.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>

TestSuite(rope_freq, .timeout = 60);

/* Python's math.pi. */
static const double pi = 3.141592653589793;

enum { MAX_PAIRS = 256 };

/* Hugging Face's dim = int(head_dim * partial_rotary_factor): clpe's rotary_dim. */
static int rotary_dim(const clpe_rope_config *cfg)
{
    return (int)(cfg->rotary_dim ? cfg->rotary_dim : cfg->head_dim);
}

/* Rounding budget of the float64 transcriptions, in ulps of w_i:
 * - the exponent (2i)/dim of `base ** (arange(0, dim, 2) / dim)` is rounded
 *   to double (up to 2^-54 relative), which pow() turns into up to
 *   ln(base) * 2^-54 relative in w0_i: ln(base) / 2 ulps (7 for base 5e5,
 *   more for a dynamically grown base);
 * - pow, the division and the scaling each add about half an ulp: 4 in all;
 * - YaRN and Llama 3 blend w0 / factor and w0 with weights (1 - ef, ef)
 *   whose rounding (2^-53 absolute) is relative to the smaller term w0 /
 *   factor: up to factor + 1 ulps more. */
static double tolerance_ulps(double base, const clpe_rope_config *cfg)
{
    double blend = (cfg->scaling == CLPE_ROPE_YARN || cfg->scaling == CLPE_ROPE_LLAMA3)
                       ? cfg->factor + 1
                       : 0;
    return 4 + log(base) / 2 + blend;
}

/* clpe's frequencies and amplitude, through the public API. */
static void clpe_frequencies(const clpe_rope_config *cfg, double *w, double *m)
{
    clpe_status status = CLPE_ERROR_INVALID_SCALING;
    clpe_rope *rope = clpe_rope_create_host(cfg, &status);
    cr_assert_eq(status, CLPE_SUCCESS, "create: %s", clpe_status_string(status));
    cr_assert_not_null(rope);
    cr_assert_eq(clpe_rope_get_frequencies(rope, w, (size_t)rotary_dim(cfg) / 2, m),
                 CLPE_SUCCESS);
    clpe_rope_release(rope);
}

/* Compare clpe with the reference w_ref (n pairs) and m_ref; the base that
 * the reference's pow() used sets the tolerance. */
static void expect_frequencies(const clpe_rope_config *cfg, const double *w_ref, double m_ref,
                               double pow_base)
{
    int n = rotary_dim(cfg) / 2;
    double w[MAX_PAIRS], m = -1;
    clpe_frequencies(cfg, w, &m);
    double tol = tolerance_ulps(pow_base, cfg);
    for (int i = 0; i < n; ++i) {
        double ulps = fabs(w[i] - w_ref[i]) / (DBL_EPSILON * fabs(w_ref[i]));
        cr_expect(ulps <= tol, "scaling %d pair %d: clpe %.17g, Hugging Face %.17g (%.1f ulps > %.1f)",
                  (int)cfg->scaling, i, w[i], w_ref[i], ulps, tol);
    }
    cr_expect_eq(m, m_ref, "scaling %d: amplitude %.17g, Hugging Face %.17g", (int)cfg->scaling,
                 m, m_ref);
}

/* _compute_default_rope_parameters:
 *     inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)) */
static void hf_default(double base, int dim, double *inv_freq)
{
    for (int i = 0; i < dim / 2; ++i)
        inv_freq[i] = 1.0 / pow(base, (double)(2 * i) / dim);
}

static clpe_rope_config config(uint32_t head_dim, uint32_t rot, double base,
                               clpe_rope_scaling scaling)
{
    clpe_rope_config cfg = clpe_rope_config_default(head_dim);
    cfg.rotary_dim = rot;
    cfg.base = base;
    cfg.scaling = scaling;
    return cfg;
}

Test(rope_freq, default_llama3_and_partial_neox)
{
    double ref[MAX_PAIRS];
    clpe_rope_config cfg = config(128, 0, 500000.0, CLPE_ROPE_DEFAULT);
    hf_default(500000.0, 128, ref);
    expect_frequencies(&cfg, ref, 1.0, 500000.0);

    /* GPT-NeoX: rotary_pct 0.25 of head_dim 128, base 10000 */
    cfg = config(128, 32, 10000.0, CLPE_ROPE_DEFAULT);
    hf_default(10000.0, 32, ref);
    expect_frequencies(&cfg, ref, 1.0, 10000.0);
}

/* _compute_linear_scaling_rope_parameters:
 *     inv_freq, attention_factor = _compute_default_rope_parameters(config, device, seq_len)
 *     inv_freq /= factor */
Test(rope_freq, linear)
{
    double ref[MAX_PAIRS];
    clpe_rope_config cfg = config(128, 0, 10000.0, CLPE_ROPE_LINEAR);
    cfg.factor = 4.0;
    hf_default(10000.0, 128, ref);
    for (int i = 0; i < 64; ++i)
        ref[i] /= 4.0;
    expect_frequencies(&cfg, ref, 1.0, 10000.0);
}

/* _compute_dynamic_ntk_parameters:
 *     seq_len = max(seq_len, max_position_embeddings)
 *     base = base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))
 *     inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)) */
static double hf_dynamic_base(double base, int dim, double factor, double max_pos, double seq_len)
{
    seq_len = fmax(seq_len, max_pos);
    return base * pow((factor * seq_len / max_pos) - (factor - 1), (double)dim / (dim - 2));
}

Test(rope_freq, dynamic_ntk_grows_past_max_position_only)
{
    double ref[MAX_PAIRS];
    /* partial rotary: dim = rotary_dim 64 of head_dim 128 sets the exponent */
    clpe_rope_config cfg = config(128, 64, 10000.0, CLPE_ROPE_DYNAMIC);
    cfg.factor = 2.0;
    cfg.original_max_position = 4096;
    cfg.seq_len = 20000;
    double grown = hf_dynamic_base(10000.0, 64, 2.0, 4096, 20000);
    cr_assert_gt(grown, 10000.0 * 8); /* the case really grows the base */
    hf_default(grown, 64, ref);
    expect_frequencies(&cfg, ref, 1.0, grown);

    /* seq_len within max_position_embeddings (and 0, Hugging Face's None):
     * the base stays */
    uint64_t short_lengths[] = {4096, 100, 0};
    hf_default(10000.0, 64, ref);
    for (size_t j = 0; j < sizeof short_lengths / sizeof *short_lengths; ++j) {
        cfg.seq_len = short_lengths[j];
        expect_frequencies(&cfg, ref, 1.0, 10000.0);
    }
}

/* _compute_yarn_parameters (transformers 4.57):
 *     def get_mscale(scale, mscale=1):
 *         if scale <= 1: return 1.0
 *         return 0.1 * mscale * math.log(scale) + 1.0
 *     if attention_factor is None:
 *         if mscale and mscale_all_dim:
 *             attention_factor = float(get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim))
 *         else:
 *             attention_factor = get_mscale(factor)
 *     beta_fast = config.rope_scaling.get("beta_fast") or 32
 *     beta_slow = config.rope_scaling.get("beta_slow") or 1
 *     def find_correction_dim(num_rotations, dim, base, max_position_embeddings):
 *         return (dim * math.log(max_position_embeddings / (num_rotations * 2 * math.pi))) / (2 * math.log(base))
 *     def find_correction_range(low_rot, high_rot, dim, base, max_position_embeddings, truncate):
 *         low = find_correction_dim(low_rot, ...); high = find_correction_dim(high_rot, ...)
 *         if truncate: low = math.floor(low); high = math.ceil(high)
 *         return max(low, 0), min(high, dim - 1)
 *     def linear_ramp_factor(min, max, dim):
 *         if min == max: max += 0.001
 *         linear_func = (torch.arange(dim, dtype=torch.float32) - min) / (max - min)
 *         return torch.clamp(linear_func, 0, 1)
 *     pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
 *     inv_freq_extrapolation = 1.0 / pos_freqs
 *     inv_freq_interpolation = 1.0 / (factor * pos_freqs)
 *     truncate = config.rope_scaling.get("truncate", True)
 *     low, high = find_correction_range(beta_fast, beta_slow, dim, base, original_max_position_embeddings, truncate)
 *     inv_freq_extrapolation_factor = 1 - linear_ramp_factor(low, high, dim // 2)
 *     inv_freq = inv_freq_interpolation * (1 - inv_freq_extrapolation_factor)
 *                + inv_freq_extrapolation * inv_freq_extrapolation_factor */
static double hf_get_mscale(double scale, double mscale)
{
    if (scale <= 1)
        return 1.0;
    return 0.1 * mscale * log(scale) + 1.0;
}

static double hf_find_correction_dim(double num_rotations, int dim, double base, double max_pos)
{
    return (dim * log(max_pos / (num_rotations * 2 * pi))) / (2 * log(base));
}

static bool yarn_guard_taken;

static double hf_yarn(const clpe_rope_config *cfg, double *inv_freq)
{
    int dim = rotary_dim(cfg);
    double factor = cfg->factor;
    double attention_factor;
    if (cfg->attention_factor != 0)
        attention_factor = cfg->attention_factor;
    else if (cfg->mscale != 0 && cfg->mscale_all_dim != 0)
        attention_factor = hf_get_mscale(factor, cfg->mscale) / hf_get_mscale(factor, cfg->mscale_all_dim);
    else
        attention_factor = hf_get_mscale(factor, 1);
    double beta_fast = cfg->beta_fast != 0 ? cfg->beta_fast : 32;
    double beta_slow = cfg->beta_slow != 0 ? cfg->beta_slow : 1;
    double low = hf_find_correction_dim(beta_fast, dim, cfg->base, cfg->original_max_position);
    double high = hf_find_correction_dim(beta_slow, dim, cfg->base, cfg->original_max_position);
    if (!cfg->no_truncate) {
        low = floor(low);
        high = ceil(high);
    }
    low = fmax(low, 0);
    high = fmin(high, dim - 1);
    if (low == high) {
        high += 0.001;
        yarn_guard_taken = true;
    }
    for (int i = 0; i < dim / 2; ++i) {
        double pos_freq = pow(cfg->base, (double)(2 * i) / dim);
        double extrapolation = 1.0 / pos_freq;
        double interpolation = 1.0 / (factor * pos_freq);
        double ramp = fmin(fmax((i - low) / (high - low), 0), 1);
        double extrapolation_factor = 1 - ramp;
        inv_freq[i] = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
    }
    return attention_factor;
}

Test(rope_freq, yarn_deepseek_v3_qwen_gpt_oss)
{
    double ref[MAX_PAIRS];
    /* DeepSeek-V3: qk_rope_head_dim 64, factor 40, original 4096,
     * mscale = mscale_all_dim = 1: the amplitude is exactly 1 in 4.57
     * (4.49 gave 0.1 * ln 40 + 1 = 1.3689) */
    clpe_rope_config cfg = config(64, 0, 10000.0, CLPE_ROPE_YARN);
    cfg.factor = 40;
    cfg.original_max_position = 4096;
    cfg.beta_fast = 32;
    cfg.beta_slow = 1;
    cfg.mscale = 1;
    cfg.mscale_all_dim = 1;
    cr_assert_eq(hf_yarn(&cfg, ref), 1.0);
    expect_frequencies(&cfg, ref, 1.0, cfg.base);

    /* Qwen2.5 with YaRN: factor 4, original 32768, head 128, base 1e6,
     * default betas, amplitude from factor alone */
    cfg = config(128, 0, 1000000.0, CLPE_ROPE_YARN);
    cfg.factor = 4;
    cfg.original_max_position = 32768;
    double m = hf_yarn(&cfg, ref);
    cr_assert_eq(m, 0.1 * log(4.0) + 1.0);
    expect_frequencies(&cfg, ref, m, cfg.base);

    /* gpt-oss: truncate False, factor 32, original 4096, base 150000 */
    cfg = config(64, 0, 150000.0, CLPE_ROPE_YARN);
    cfg.factor = 32;
    cfg.original_max_position = 4096;
    cfg.no_truncate = 1;
    m = hf_yarn(&cfg, ref);
    expect_frequencies(&cfg, ref, m, cfg.base);

    /* an explicit attention_factor wins; mscale alone is ignored */
    cfg.attention_factor = 0.75;
    cfg.mscale = 0.707;
    m = hf_yarn(&cfg, ref);
    cr_assert_eq(m, 0.75);
    expect_frequencies(&cfg, ref, m, cfg.base);
    cfg.attention_factor = 0;
    m = hf_yarn(&cfg, ref);
    cr_assert_eq(m, 0.1 * log(32.0) + 1.0);
    expect_frequencies(&cfg, ref, m, cfg.base);

    /* partial rotary, both correction dims clamped to 0: the 0.001 guard */
    cfg = config(128, 64, 10000.0, CLPE_ROPE_YARN);
    cfg.factor = 8;
    cfg.original_max_position = 6; /* < beta_slow * 2 pi */
    yarn_guard_taken = false;
    m = hf_yarn(&cfg, ref);
    cr_assert(yarn_guard_taken);
    expect_frequencies(&cfg, ref, m, cfg.base);

    /* beta_fast == beta_slow, not truncated */
    cfg.original_max_position = 2048;
    cfg.beta_fast = 4;
    cfg.beta_slow = 4;
    cfg.no_truncate = 1;
    m = hf_yarn(&cfg, ref);
    expect_frequencies(&cfg, ref, m, cfg.base);
}

/* _compute_llama3_parameters:
 *     low_freq_wavelen = old_context_len / low_freq_factor
 *     high_freq_wavelen = old_context_len / high_freq_factor
 *     wavelen = 2 * math.pi / inv_freq
 *     inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
 *     smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
 *     smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
 *     is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
 *     inv_freq_llama = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama) */
Test(rope_freq, llama3_1)
{
    double ref[MAX_PAIRS], inv_freq[MAX_PAIRS];
    clpe_rope_config cfg = config(128, 0, 500000.0, CLPE_ROPE_LLAMA3);
    cfg.factor = 8;
    cfg.low_freq_factor = 1;
    cfg.high_freq_factor = 4;
    cfg.original_max_position = 8192;
    hf_default(500000.0, 128, inv_freq);
    double low_freq_wavelen = 8192 / 1.0, high_freq_wavelen = 8192 / 4.0;
    int bands[3] = {0, 0, 0};
    for (int i = 0; i < 64; ++i) {
        double wavelen = 2 * pi / inv_freq[i];
        double llama = wavelen > low_freq_wavelen ? inv_freq[i] / 8 : inv_freq[i];
        double smooth = (8192 / wavelen - 1.0) / (4.0 - 1.0);
        double smoothed = (1 - smooth) * llama / 8 + smooth * llama;
        bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
        ref[i] = medium ? smoothed : llama;
        bands[medium ? 1 : wavelen > low_freq_wavelen ? 2 : 0]++;
    }
    /* all three bands are exercised */
    cr_assert(bands[0] > 0 && bands[1] > 0 && bands[2] > 0);
    expect_frequencies(&cfg, ref, 1.0, 500000.0);
}

/* _compute_longrope_parameters:
 *     if original_max_position_embeddings := getattr(config, "original_max_position_embeddings", None):
 *         factor = config.max_position_embeddings / original_max_position_embeddings
 *     if attention_factor is None:
 *         if factor <= 1.0: attention_factor = 1.0
 *         else: attention_factor = math.sqrt(1 + math.log(factor) / math.log(original_max_position_embeddings))
 *     if seq_len and seq_len > original_max_position_embeddings: ext_factors = long_factor
 *     else: ext_factors = short_factor
 *     inv_freq_shape = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
 *     inv_freq = 1.0 / (ext_factors * base**inv_freq_shape) */
Test(rope_freq, longrope_phi3_short_and_long)
{
    enum { HEAD = 96, PAIRS = HEAD / 2 };
    double short_factor[PAIRS], long_factor[PAIRS], ref[MAX_PAIRS];
    for (int i = 0; i < PAIRS; ++i) {
        short_factor[i] = 1.0 + 0.01 * i;
        long_factor[i] = 1.0 + 1.5 * i;
    }
    /* Phi-3-mini-128k: max_position_embeddings 131072, original 4096 */
    clpe_rope_config cfg = config(HEAD, 0, 10000.0, CLPE_ROPE_LONGROPE);
    cfg.factor = 131072.0 / 4096.0;
    cfg.original_max_position = 4096;
    cfg.short_factor = short_factor;
    cfg.long_factor = long_factor;
    double m = sqrt(1 + log(cfg.factor) / log(4096.0));
    struct {
        uint64_t seq_len;
        const double *ext;
    } cases[] = {{0, short_factor}, {4096, short_factor}, {4097, long_factor}, {131072, long_factor}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
        cfg.seq_len = cases[c].seq_len;
        for (int i = 0; i < PAIRS; ++i)
            ref[i] = 1.0 / (cases[c].ext[i] * pow(10000.0, (double)(2 * i) / HEAD));
        expect_frequencies(&cfg, ref, m, 10000.0);
    }
    /* an explicit attention_factor; factor may then be unset */
    cfg.attention_factor = 1.25;
    cfg.factor = 0;
    expect_frequencies(&cfg, ref, 1.25, 10000.0);
    /* factor 1: amplitude 1 */
    cfg.attention_factor = 0;
    cfg.factor = 1;
    expect_frequencies(&cfg, ref, 1.0, 10000.0);
}

/* An independent oracle for the scalings that are a product: w_i =
 * base^(-2i/dim) / divisor_i straight from mpfr_pow at 320 bits. clpe's
 * doubles are the exact value rounded once, so they must be equal. */
static void expect_correctly_rounded(const clpe_rope_config *cfg, const double *divisor)
{
    int dim = rotary_dim(cfg);
    double w[MAX_PAIRS], m;
    clpe_frequencies(cfg, w, &m);
    mpfr_t x, e;
    mpfr_inits2(320, x, e, (mpfr_ptr)0);
    for (int i = 0; i < dim / 2; ++i) {
        mpfr_set_si(e, -2 * i, MPFR_RNDN);
        mpfr_div_si(e, e, dim, MPFR_RNDN);
        mpfr_set_d(x, cfg->base, MPFR_RNDN);
        mpfr_pow(x, x, e, MPFR_RNDN);
        mpfr_div_d(x, x, divisor[i], MPFR_RNDN);
        double exact = mpfr_get_d(x, MPFR_RNDN);
        cr_expect_eq(w[i], exact, "scaling %d pair %d: %.17g, exact %.17g", (int)cfg->scaling, i,
                     w[i], exact);
    }
    mpfr_clears(x, e, (mpfr_ptr)0);
}

Test(rope_freq, frequencies_are_exact_then_rounded_once)
{
    double ones[MAX_PAIRS], fours[MAX_PAIRS], ext[MAX_PAIRS];
    for (int i = 0; i < MAX_PAIRS; ++i) {
        ones[i] = 1.0;
        fours[i] = 4.0;
        ext[i] = 1.0 + 0.37 * i;
    }
    clpe_rope_config cfg = config(128, 0, 500000.0, CLPE_ROPE_DEFAULT);
    expect_correctly_rounded(&cfg, ones);
    cfg = config(256, 64, 10000.0, CLPE_ROPE_LINEAR);
    cfg.factor = 4;
    expect_correctly_rounded(&cfg, fours);
    cfg = config(96, 0, 10000.0, CLPE_ROPE_LONGROPE);
    cfg.factor = 32;
    cfg.original_max_position = 4096;
    cfg.short_factor = ones;
    cfg.long_factor = ext;
    cfg.seq_len = 1u << 20;
    expect_correctly_rounded(&cfg, ext);
}

Test(rope_freq, caller_frequencies)
{
    double given[8] = {1.0, 0.5, 0.25, 1e-3, 3.0, 0, 7.5, 1e-9};
    clpe_rope_config cfg = config(16, 0, 10000.0, CLPE_ROPE_FREQUENCIES);
    cfg.frequencies = given;
    double w[8], m;
    clpe_frequencies(&cfg, w, &m);
    for (int i = 0; i < 8; ++i)
        cr_expect_eq(w[i], given[i], "pair %d", i);
    cr_expect_eq(m, 1.0);
    cfg.attention_factor = 0.5;
    clpe_frequencies(&cfg, w, &m);
    cr_expect_eq(m, 0.5);
}

/* Each bad parameter on its own, from a valid configuration of its scaling:
 * CLPE_ERROR_INVALID_SCALING and no object. */
static void expect_refused(const clpe_rope_config *cfg, const char *what)
{
    clpe_status status = CLPE_SUCCESS;
    clpe_rope *rope = clpe_rope_create_host(cfg, &status);
    cr_expect_null(rope, "%s: created", what);
    cr_expect_eq(status, CLPE_ERROR_INVALID_SCALING, "%s: %s", what, clpe_status_string(status));
    clpe_rope_release(rope);
}

static void expect_accepted(const clpe_rope_config *cfg, const char *what)
{
    clpe_status status = CLPE_ERROR_INVALID_SCALING;
    clpe_rope *rope = clpe_rope_create_host(cfg, &status);
    cr_assert_not_null(rope, "%s: %s", what, clpe_status_string(status));
    clpe_rope_release(rope);
}

Test(rope_freq, bad_parameters_are_refused)
{
    const double nan = NAN, inf = INFINITY;
    double factors[32], bad_factors[32];
    for (int i = 0; i < 32; ++i)
        factors[i] = bad_factors[i] = 1.0 + i;

    clpe_rope_config unknown = config(64, 0, 10000.0, (clpe_rope_scaling)7);
    expect_refused(&unknown, "unknown scaling");
    unknown.scaling = (clpe_rope_scaling)-1;
    expect_refused(&unknown, "negative scaling");

    clpe_rope_config linear = config(64, 0, 10000.0, CLPE_ROPE_LINEAR);
    linear.factor = 2;
    expect_accepted(&linear, "linear");
    double bad_linear[] = {0, 0.5, -2, nan, inf};
    for (size_t j = 0; j < sizeof bad_linear / sizeof *bad_linear; ++j) {
        clpe_rope_config c = linear;
        c.factor = bad_linear[j];
        expect_refused(&c, "linear factor");
    }

    clpe_rope_config dynamic = config(64, 0, 10000.0, CLPE_ROPE_DYNAMIC);
    dynamic.factor = 2;
    dynamic.original_max_position = 2048;
    dynamic.seq_len = 5000;
    expect_accepted(&dynamic, "dynamic");
    {
        clpe_rope_config c = dynamic;
        c.factor = 0.9;
        expect_refused(&c, "dynamic factor < 1");
        c = dynamic;
        c.original_max_position = 0;
        expect_refused(&c, "dynamic without max_position_embeddings");
        c.original_max_position = nan;
        expect_refused(&c, "dynamic NaN max_position_embeddings");
        c = dynamic;
        c.head_dim = 2; /* dim / (dim - 2) */
        expect_refused(&c, "dynamic on one pair");
    }

    clpe_rope_config yarn = config(64, 0, 10000.0, CLPE_ROPE_YARN);
    yarn.factor = 40;
    yarn.original_max_position = 4096;
    yarn.mscale = 1;
    yarn.mscale_all_dim = 1;
    expect_accepted(&yarn, "yarn");
    {
        clpe_rope_config c = yarn;
        c.factor = 0.5;
        expect_refused(&c, "yarn factor < 1");
        c = yarn;
        c.original_max_position = 0;
        expect_refused(&c, "yarn without original_max_position_embeddings");
        c = yarn;
        c.beta_fast = -1;
        expect_refused(&c, "yarn negative beta_fast");
        c = yarn;
        c.beta_slow = nan;
        expect_refused(&c, "yarn NaN beta_slow");
        c = yarn;
        c.beta_fast = 1;
        c.beta_slow = 32;
        expect_refused(&c, "yarn beta_fast < beta_slow");
        c = yarn;
        c.mscale = inf;
        expect_refused(&c, "yarn infinite mscale");
        c = yarn;
        c.mscale_all_dim = -10 / log(40.0); /* get_mscale(factor, mscale_all_dim) == 0 */
        expect_refused(&c, "yarn zero denominator");
        c = yarn;
        c.attention_factor = -1;
        expect_refused(&c, "yarn negative attention_factor");
    }

    clpe_rope_config llama3 = config(128, 0, 500000.0, CLPE_ROPE_LLAMA3);
    llama3.factor = 8;
    llama3.low_freq_factor = 1;
    llama3.high_freq_factor = 4;
    llama3.original_max_position = 8192;
    expect_accepted(&llama3, "llama3");
    {
        clpe_rope_config c = llama3;
        c.factor = 0;
        expect_refused(&c, "llama3 without factor");
        c = llama3;
        c.low_freq_factor = 0;
        expect_refused(&c, "llama3 zero low_freq_factor");
        c = llama3;
        c.high_freq_factor = 1;
        expect_refused(&c, "llama3 high_freq_factor == low_freq_factor");
        c = llama3;
        c.high_freq_factor = nan;
        expect_refused(&c, "llama3 NaN high_freq_factor");
        c = llama3;
        c.original_max_position = 0;
        expect_refused(&c, "llama3 without original_max_position_embeddings");
    }

    clpe_rope_config longrope = config(64, 0, 10000.0, CLPE_ROPE_LONGROPE);
    longrope.factor = 32;
    longrope.original_max_position = 4096;
    longrope.short_factor = factors;
    longrope.long_factor = factors;
    expect_accepted(&longrope, "longrope");
    {
        clpe_rope_config c = longrope;
        c.short_factor = NULL;
        expect_refused(&c, "longrope without short_factor");
        c = longrope;
        c.long_factor = NULL;
        expect_refused(&c, "longrope without long_factor");
        double bad_entries[] = {0, -1, nan, inf};
        for (size_t j = 0; j < sizeof bad_entries / sizeof *bad_entries; ++j) {
            bad_factors[31] = bad_entries[j]; /* the last pair: the whole array is read */
            c = longrope;
            c.long_factor = bad_factors;
            expect_refused(&c, "longrope bad long_factor entry");
            c = longrope;
            c.short_factor = bad_factors;
            expect_refused(&c, "longrope bad short_factor entry");
        }
        c = longrope;
        c.factor = 0;
        expect_refused(&c, "longrope without factor or attention_factor");
        c.factor = 0.5;
        expect_refused(&c, "longrope factor < 1");
        c = longrope;
        c.original_max_position = 1; /* log(1) == 0 divides */
        expect_refused(&c, "longrope original_max_position_embeddings 1");
        c = longrope;
        c.attention_factor = nan;
        expect_refused(&c, "longrope NaN attention_factor");
    }

    clpe_rope_config freqs = config(64, 0, 10000.0, CLPE_ROPE_FREQUENCIES);
    freqs.frequencies = factors;
    expect_accepted(&freqs, "frequencies");
    {
        clpe_rope_config c = freqs;
        c.frequencies = NULL;
        expect_refused(&c, "frequencies missing");
        bad_factors[31] = -1;
        c.frequencies = bad_factors;
        expect_refused(&c, "negative frequency");
        bad_factors[31] = nan;
        expect_refused(&c, "NaN frequency");
        c = freqs;
        c.attention_factor = -0.5;
        expect_refused(&c, "negative attention_factor");
    }
}
