/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rope_detail.c - every refusal of a rotary configuration names its
 * field: each scaling's parameters are walked out of range one at a time,
 * and clpe_rope_config_check must return what clpe_rope_create_host returns
 * and a reason that names the field. Also: truncation to the capacity, NULL
 * detail, and an empty reason on success.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

TestSuite(rope_detail, .timeout = 60);

enum { HEAD_DIM = 16, PAIRS = HEAD_DIM / 2 };

static const double ones[PAIRS] = {1, 1, 1, 1, 1, 1, 1, 1};
static const double bad_ones[PAIRS] = {1, 1, 1, -1, 1, 1, 1, 1};

/* A valid configuration of each scaling, the starting point of each walk. */
static clpe_rope_config valid(clpe_rope_scaling scaling)
{
    clpe_rope_config c = clpe_rope_config_default(HEAD_DIM);
    c.scaling = scaling;
    c.factor = 8;
    c.original_max_position = 8192;
    if (scaling == CLPE_ROPE_LLAMA3) {
        c.low_freq_factor = 1;
        c.high_freq_factor = 4;
    }
    if (scaling == CLPE_ROPE_LONGROPE) {
        c.short_factor = ones;
        c.long_factor = ones;
    }
    if (scaling == CLPE_ROPE_FREQUENCIES)
        c.frequencies = ones;
    return c;
}

typedef struct {
    clpe_rope_scaling scaling;
    const char *field; /* the name the reason must contain */
    void (*spoil)(clpe_rope_config *c);
    clpe_status want;
} walk;

static void factor_half(clpe_rope_config *c) { c->factor = 0.5; }
static void factor_nan(clpe_rope_config *c) { c->factor = NAN; }
static void original_zero(clpe_rope_config *c) { c->original_max_position = 0; }
static void low_zero(clpe_rope_config *c) { c->low_freq_factor = 0; }
static void high_below_low(clpe_rope_config *c) { c->high_freq_factor = 0.5; }
static void beta_fast_negative(clpe_rope_config *c) { c->beta_fast = -1; }
static void beta_slow_negative(clpe_rope_config *c) { c->beta_slow = -1; }
static void beta_fast_below_slow(clpe_rope_config *c) { c->beta_fast = 2, c->beta_slow = 3; }
static void mscale_inf(clpe_rope_config *c) { c->mscale = INFINITY; }
static void mscale_all_dim_nan(clpe_rope_config *c) { c->mscale_all_dim = NAN; }
static void attention_negative(clpe_rope_config *c) { c->attention_factor = -2; }
static void amplitude_zero(clpe_rope_config *c) { c->mscale = 1, c->mscale_all_dim = -10 / log(8); }
static void short_null(clpe_rope_config *c) { c->short_factor = NULL; }
static void short_negative(clpe_rope_config *c) { c->short_factor = bad_ones; }
static void long_negative(clpe_rope_config *c) { c->long_factor = bad_ones; }
static void frequencies_negative(clpe_rope_config *c) { c->frequencies = bad_ones; }
static void frequencies_null(clpe_rope_config *c) { c->frequencies = NULL; }
static void base_one(clpe_rope_config *c) { c->base = 1; }
static void rotary_odd(clpe_rope_config *c) { c->rotary_dim = 7; }
static void head_dim_one(clpe_rope_config *c) { c->head_dim = 1; }
static void pairing_bad(clpe_rope_config *c) { c->pairing = (clpe_rope_pairing)7; }
static void scaling_bad(clpe_rope_config *c) { c->scaling = (clpe_rope_scaling)99; }
static void dynamic_two(clpe_rope_config *c) { c->rotary_dim = 2; }
static void huge_amplitude(clpe_rope_config *c) { c->attention_factor = 1e300; }

static const walk walks[] = {
    {CLPE_ROPE_LINEAR, "factor", factor_half, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_LINEAR, "factor", factor_nan, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_DYNAMIC, "factor", factor_half, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_DYNAMIC, "original_max_position", original_zero, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_DYNAMIC, "rotary_dim", dynamic_two, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_YARN, "factor", factor_half, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_YARN, "original_max_position", original_zero, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_YARN, "beta_fast", beta_fast_negative, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_YARN, "beta_slow", beta_slow_negative, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_YARN, "beta_fast", beta_fast_below_slow, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_YARN, "mscale", mscale_inf, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_YARN, "mscale_all_dim", mscale_all_dim_nan, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_YARN, "attention_factor", attention_negative, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_YARN, "mscale_all_dim", amplitude_zero, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_YARN, "amplitude", huge_amplitude, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_LLAMA3, "factor", factor_half, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_LLAMA3, "original_max_position", original_zero, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_LLAMA3, "low_freq_factor", low_zero, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_LLAMA3, "high_freq_factor", high_below_low, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_LONGROPE, "factor", factor_half, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_LONGROPE, "original_max_position", original_zero, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_LONGROPE, "short_factor", short_null, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_LONGROPE, "short_factor[3]", short_negative, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_LONGROPE, "long_factor[3]", long_negative, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_LONGROPE, "attention_factor", attention_negative, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_FREQUENCIES, "frequencies[3]", frequencies_negative, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_FREQUENCIES, "frequencies", frequencies_null, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_FREQUENCIES, "attention_factor", attention_negative, CLPE_ERROR_INVALID_SCALING},
    {CLPE_ROPE_DEFAULT, "base", base_one, CLPE_ERROR_INVALID_BASE},
    {CLPE_ROPE_DEFAULT, "rotary_dim", rotary_odd, CLPE_ERROR_INVALID_ROPE},
    {CLPE_ROPE_DEFAULT, "head_dim", head_dim_one, CLPE_ERROR_INVALID_ROPE},
    {CLPE_ROPE_DEFAULT, "pairing", pairing_bad, CLPE_ERROR_INVALID_ROPE},
    {CLPE_ROPE_DEFAULT, "scaling", scaling_bad, CLPE_ERROR_INVALID_SCALING},
};

Test(rope_detail, every_refusal_names_its_field)
{
    for (size_t w = 0; w < sizeof walks / sizeof walks[0]; ++w) {
        clpe_rope_config c = valid(walks[w].scaling);
        char detail[256];
        cr_assert_eq(clpe_rope_config_check(&c, detail, sizeof detail), CLPE_SUCCESS,
                     "walk %zu: the valid start is refused: %s", w, detail);
        cr_expect_str_empty(detail);
        walks[w].spoil(&c);
        clpe_status created = -1;
        clpe_rope *rope = clpe_rope_create_host(&c, &created);
        clpe_rope_release(rope);
        clpe_status st = clpe_rope_config_check(&c, detail, sizeof detail);
        cr_expect_eq(st, walks[w].want, "walk %zu (%s): status %d", w, walks[w].field, st);
        cr_expect_eq(st, created, "walk %zu: the check (%d) and the creation (%d) disagree", w,
                     st, created);
        cr_expect_not_null(strstr(detail, walks[w].field),
                           "walk %zu: \"%s\" does not name %s", w, detail, walks[w].field);
    }
}

Test(rope_detail, the_reason_quotes_the_value_and_scaling)
{
    clpe_rope_config c = valid(CLPE_ROPE_LLAMA3);
    c.original_max_position = 0;
    char detail[256];
    cr_assert_eq(clpe_rope_config_check(&c, detail, sizeof detail), CLPE_ERROR_INVALID_SCALING);
    cr_expect_str_eq(detail, "llama3: original_max_position must be a finite number >= 1, got 0");
}

Test(rope_detail, truncated_and_null_detail)
{
    clpe_rope_config c = valid(CLPE_ROPE_YARN);
    c.beta_slow = -1;
    char small[8];
    memset(small, 'x', sizeof small);
    cr_expect_eq(clpe_rope_config_check(&c, small, sizeof small), CLPE_ERROR_INVALID_SCALING);
    cr_expect_str_eq(small, "yarn: b");
    cr_expect_eq(clpe_rope_config_check(&c, NULL, 100), CLPE_ERROR_INVALID_SCALING);
    cr_expect_eq(clpe_rope_config_check(&c, small, 0), CLPE_ERROR_INVALID_SCALING);
    cr_expect_eq(small[0], 'y', "capacity 0 writes nothing");
    cr_expect_eq(clpe_rope_config_check(NULL, NULL, 0), CLPE_ERROR_NULL_POINTER);
}

Test(rope_detail, multimodal_sections_and_ladders)
{
    clpe_mrope_config m = {.rope = clpe_rope_config_default(HEAD_DIM), .streams = 3,
                           .section = {2, 3, 3}};
    char detail[256];
    cr_assert_eq(clpe_mrope_config_check(&m, detail, sizeof detail), CLPE_SUCCESS, "%s", detail);
    m.section[2] = 2;
    cr_expect_eq(clpe_mrope_config_check(&m, detail, sizeof detail), CLPE_ERROR_INVALID_ROPE);
    cr_expect_str_eq(detail, "section must sum to rotary_dim / 2 = 8, got 7");
    m = clpe_mrope_config_vision(HEAD_DIM);
    m.rope.scaling = CLPE_ROPE_YARN;
    m.rope.factor = 2;
    m.rope.original_max_position = 64;
    cr_expect_eq(clpe_mrope_config_check(&m, detail, sizeof detail), CLPE_ERROR_INVALID_SCALING);
    cr_expect_not_null(strstr(detail, "ladder"), "%s", detail);
    m = clpe_mrope_config_vision(HEAD_DIM);
    m.rope.base = NAN;
    cr_expect_eq(clpe_mrope_config_check(&m, detail, sizeof detail), CLPE_ERROR_INVALID_BASE);
    cr_expect_not_null(strstr(detail, "base"), "%s", detail);
}
