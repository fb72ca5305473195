/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hf_config.c - a model's config.json, read with jansson, mapped to a
 * clpe_rope_config by the rules of the Python package's mapping
 * (python/clpe/_hf_config.py, which documents each of them). The clpe tool
 * (`clpe rope-cache --hf-config`) and examples/decoder both map configs
 * here; python/tests/test_hf_config_cli.py checks that the tool and the
 * Python package give the same cos/sin bytes for the same configs.
 *
 * Every refusal names the field as config.json spells it (rope_scaling's
 * keys as rope_scaling.KEY).
 */
#include "common/hf_config.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fields read: text_config's (a multimodal model's language model)
 * before the top level's. */
typedef struct hf_source {
    const char *path; /* how messages name the file */
    const json_t *top;
    const json_t *text;
    char *err;
    size_t err_cap;
} hf_source;

/* The message of a refusal, "PATH: what". */
static void fail(const hf_source *s, const char *format, ...)
{
    if (!s->err_cap)
        return;
    int used = snprintf(s->err, s->err_cap, "%s: ", s->path);
    if (used < 0 || (size_t)used >= s->err_cap)
        return;
    va_list ap;
    va_start(ap, format);
    vsnprintf(s->err + used, s->err_cap - (size_t)used, format, ap);
    va_end(ap);
}

static json_t *field(const hf_source *s, const char *key)
{
    json_t *v = s->text ? json_object_get(s->text, key) : NULL;
    if (!v)
        v = json_object_get(s->top, key);
    return v && !json_is_null(v) ? v : NULL;
}

/* A JSON value of a table as a number: 1 when present, 0 when absent or
 * null, -1 (the reason in err) when it is not a number. */
static int number_of(const hf_source *s, const json_t *table, const char *where, const char *key,
                     double *out)
{
    json_t *v = json_object_get(table, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v)) {
        fail(s, "%s%s must be a number", where, key);
        return -1;
    }
    *out = json_number_value(v);
    return 1;
}

/* A positive integer field (text_config first): 1, 0 when absent, -1 when not one. */
static int integer_of(const hf_source *s, const char *key, uint32_t *out)
{
    json_t *v = field(s, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
        json_integer_value(v) > (json_int_t)UINT32_MAX) {
        fail(s, "%s must be a positive integer", key);
        return -1;
    }
    *out = (uint32_t)json_integer_value(v);
    return 1;
}

/* The first of several aliases present; *name gets the one found (or the first). */
static int first_integer(const hf_source *s, const char *const *keys, size_t n, uint32_t *out,
                         const char **name)
{
    *name = keys[0];
    for (size_t i = 0; i < n; ++i) {
        int r = integer_of(s, keys[i], out);
        if (r) {
            *name = keys[i];
            return r;
        }
    }
    return 0;
}

/* A top-level (or text_config) number: 1, 0 when absent, -1 when mistyped. */
static int top_number(const hf_source *s, const char *key, double *out)
{
    json_t *v = field(s, key);
    if (!v)
        return 0;
    if (!json_is_number(v)) {
        fail(s, "%s must be a number", key);
        return -1;
    }
    *out = json_number_value(v);
    return 1;
}

/* rope_scaling's list of pairs numbers (LongRoPE's factors), malloc'd. */
static int factor_list(const hf_source *s, const json_t *scaling, const char *key, uint32_t pairs,
                       double **out)
{
    json_t *v = json_object_get(scaling, key);
    if (!v || json_is_null(v)) {
        fail(s, "rope_scaling.%s is missing; rope_type longrope needs it", key);
        return -1;
    }
    if (!json_is_array(v)) {
        fail(s, "rope_scaling.%s must be a list of numbers", key);
        return -1;
    }
    if (json_array_size(v) != pairs) {
        fail(s, "rope_scaling.%s has %zu values; rotary_dim / 2 = %u pairs "
                  "need %u", key, json_array_size(v), pairs, pairs);
        return -1;
    }
    *out = malloc(pairs * sizeof **out);
    if (!*out) {
        fail(s, "out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < pairs; ++i) {
        json_t *x = json_array_get(v, i);
        if (!json_is_number(x)) {
            fail(s, "rope_scaling.%s must be a list of numbers", key);
            return -1;
        }
        (*out)[i] = json_number_value(x);
    }
    return 0;
}

static const char *const INTERLEAVED_FAMILIES[] = {"gptj", "codegen", "deepseek_v2",
                                                   "deepseek_v3"};

static const struct {
    const char *name;
    clpe_rope_scaling scaling;
} ROPE_TYPES[] = {{"default", CLPE_ROPE_DEFAULT}, {"linear", CLPE_ROPE_LINEAR},
                  {"dynamic", CLPE_ROPE_DYNAMIC}, {"yarn", CLPE_ROPE_YARN},
                  {"llama3", CLPE_ROPE_LLAMA3},   {"longrope", CLPE_ROPE_LONGROPE},
                  {"mrope", CLPE_ROPE_DEFAULT}};

/* The head width, the rotary width, base and pairing (no rope_scaling yet). */
static int map_dims(const hf_source *s, const char *model_type, clpe_rope_config *cfg)
{
    const int deepseek = model_type && (strcmp(model_type, "deepseek_v2") == 0 ||
                                        strcmp(model_type, "deepseek_v3") == 0);
    uint32_t head_dim = 0;
    if (deepseek) {
        int r = integer_of(s, "qk_rope_head_dim", &head_dim);
        if (r == 0)
            fail(s, "qk_rope_head_dim is missing; %s rotates that many "
                      "elements of each head", model_type);
        if (r <= 0)
            return -1;
    } else {
        int r = integer_of(s, "head_dim", &head_dim);
        if (r < 0)
            return -1;
        if (r == 0) {
            static const char *const hidden_keys[] = {"hidden_size", "n_embd", "d_model"};
            static const char *const heads_keys[] = {"num_attention_heads", "n_head",
                                                     "num_heads"};
            uint32_t hidden = 0, heads = 0;
            const char *hidden_name, *heads_name;
            int rh = first_integer(s, hidden_keys, 3, &hidden, &hidden_name);
            int rn = first_integer(s, heads_keys, 3, &heads, &heads_name);
            if (rh < 0 || rn < 0)
                return -1;
            if (rh == 0 || rn == 0) {
                fail(s, "%s is missing (and there is no head_dim)",
                          rh == 0 ? hidden_name : heads_name);
                return -1;
            }
            head_dim = hidden / heads;
        }
    }
    *cfg = clpe_rope_config_default(head_dim);
    uint32_t rotary = 0;
    int r = integer_of(s, "rotary_dim", &rotary);
    if (r < 0)
        return -1;
    if (r == 0) {
        static const char *const fraction_keys[] = {"partial_rotary_factor", "rotary_pct"};
        for (size_t i = 0; i < 2; ++i) {
            double fraction = 0;
            int rf = top_number(s, fraction_keys[i], &fraction);
            if (rf < 0)
                return -1;
            if (rf == 0)
                continue;
            if (!(fraction > 0 && fraction <= 1)) {
                fail(s, "%s must be in (0, 1], got %g",
                          fraction_keys[i], fraction);
                return -1;
            }
            rotary = (uint32_t)((double)head_dim * fraction); /* Python's int(): truncation */
            break;
        }
    }
    cfg->rotary_dim = rotary == head_dim ? 0 : rotary;
    static const char *const base_keys[] = {"rope_theta", "rotary_emb_base"};
    for (size_t i = 0; i < 2; ++i) {
        int rb = top_number(s, base_keys[i], &cfg->base);
        if (rb < 0)
            return -1;
        if (rb)
            break;
    }
    for (size_t i = 0; model_type && i < sizeof INTERLEAVED_FAMILIES / sizeof *INTERLEAVED_FAMILIES;
         ++i)
        if (strcmp(model_type, INTERLEAVED_FAMILIES[i]) == 0)
            cfg->pairing = CLPE_ROPE_INTERLEAVED;
    return 0;
}

/* rope_scaling's type, the scaling it names, and its parameters. */
static int map_scaling(const hf_source *s, const json_t *scaling, hf_rope *out)
{
    clpe_rope_config *cfg = &out->cfg;
    const uint32_t pairs = (cfg->rotary_dim ? cfg->rotary_dim : cfg->head_dim) / 2;
    const char *type_key = json_object_get(scaling, "rope_type") ? "rope_type" : "type";
    json_t *type = json_object_get(scaling, type_key);
    json_t *section = json_object_get(scaling, "mrope_section");
    const char *rope_type = NULL;
    if ((!type || json_is_null(type)) && section && !json_is_null(section))
        rope_type = "default";
    else if (!type || json_is_null(type)) {
        fail(s, "rope_scaling.rope_type is missing (nor is there a type)");
        return -1;
    } else if (!json_is_string(type)) {
        fail(s, "rope_scaling.%s must be a string", type_key);
        return -1;
    } else {
        rope_type = json_string_value(type);
    }
    size_t k = 0;
    while (k < sizeof ROPE_TYPES / sizeof *ROPE_TYPES && strcmp(ROPE_TYPES[k].name, rope_type))
        ++k;
    if (k == sizeof ROPE_TYPES / sizeof *ROPE_TYPES) {
        fail(s, "rope_scaling.%s '%s' is not a rotary scaling clpe knows "
                  "(default, dynamic, linear, llama3, longrope, mrope, yarn)", type_key, rope_type);
        return -1;
    }
    cfg->scaling = ROPE_TYPES[k].scaling;

    if (section && !json_is_null(section)) {
        size_t n = json_is_array(section) ? json_array_size(section) : 0;
        if (n < 1 || n > CLPE_MROPE_MAX_STREAMS) {
            fail(s, "rope_scaling.mrope_section must be a list of 1 to %d "
                      "non-negative integers", CLPE_MROPE_MAX_STREAMS);
            return -1;
        }
        for (size_t j = 0; j < n; ++j) {
            json_t *x = json_array_get(section, j);
            if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                json_integer_value(x) > (json_int_t)UINT32_MAX) {
                fail(s, "rope_scaling.mrope_section must be a list of "
                          "non-negative integers");
                return -1;
            }
            out->section[j] = (uint32_t)json_integer_value(x);
        }
        out->streams = (uint32_t)n;
    } else if (strcmp(rope_type, "mrope") == 0) {
        fail(s, "rope_scaling.mrope_section is missing; rope_type mrope needs "
                  "it");
        return -1;
    }

    uint32_t max_position = 0;
    static const char *const max_keys[] = {"max_position_embeddings", "n_positions"};
    const char *max_name;
    int have_max = first_integer(s, max_keys, 2, &max_position, &max_name);
    if (have_max < 0)
        return -1;

    /* a number rope_scaling must give: -1 with the reason when missing */
#define NEED(key, dst)                                                                           \
    do {                                                                                         \
        int r_ = number_of(s, scaling, "rope_scaling.", key, dst);                               \
        if (r_ == 0)                                                                             \
            fail(s, "rope_scaling.%s is missing; rope_type %s needs it", key, rope_type);        \
        if (r_ <= 0)                                                                             \
            return -1;                                                                           \
    } while (0)
#define MAY(key, dst)                                                                            \
    do {                                                                                         \
        if (number_of(s, scaling, "rope_scaling.", key, dst) < 0)                                \
            return -1;                                                                           \
    } while (0)
#define NEED_MAX(why)                                                                            \
    do {                                                                                         \
        if (!have_max) {                                                                         \
            fail(s, "%s is missing; %s", max_name, why);                                     \
            return -1;                                                                           \
        }                                                                                        \
    } while (0)

    switch (cfg->scaling) {
    case CLPE_ROPE_LINEAR:
        NEED("factor", &cfg->factor);
        break;
    case CLPE_ROPE_DYNAMIC:
        NEED("factor", &cfg->factor);
        NEED_MAX("rope_type dynamic grows the base beyond it");
        cfg->original_max_position = max_position;
        break;
    case CLPE_ROPE_LLAMA3:
        NEED("factor", &cfg->factor);
        NEED("low_freq_factor", &cfg->low_freq_factor);
        NEED("high_freq_factor", &cfg->high_freq_factor);
        NEED("original_max_position_embeddings", &cfg->original_max_position);
        break;
    case CLPE_ROPE_YARN: {
        NEED("factor", &cfg->factor);
        int r = number_of(s, scaling, "rope_scaling.", "original_max_position_embeddings",
                          &cfg->original_max_position);
        if (r < 0)
            return -1;
        if (r == 0) {
            NEED_MAX("rope_type yarn without original_max_position_embeddings ramps over it");
            cfg->original_max_position = max_position;
        }
        MAY("beta_fast", &cfg->beta_fast);
        MAY("beta_slow", &cfg->beta_slow);
        MAY("mscale", &cfg->mscale);
        MAY("mscale_all_dim", &cfg->mscale_all_dim);
        MAY("attention_factor", &cfg->attention_factor);
        json_t *truncate = json_object_get(scaling, "truncate");
        if (truncate && !json_is_null(truncate)) {
            if (!json_is_boolean(truncate)) {
                fail(s, "rope_scaling.truncate must be true or false");
                return -1;
            }
            cfg->no_truncate = json_is_false(truncate);
        }
        break;
    }
    case CLPE_ROPE_LONGROPE: {
        if (factor_list(s, scaling, "short_factor", pairs, &out->short_factor) ||
            factor_list(s, scaling, "long_factor", pairs, &out->long_factor))
            return -1;
        cfg->short_factor = out->short_factor;
        cfg->long_factor = out->long_factor;
        double attention = 0, original = 0, factor = 0;
        int have_attention = number_of(s, scaling, "rope_scaling.", "attention_factor",
                                       &attention);
        int have_original = top_number(s, "original_max_position_embeddings", &original);
        int have_factor = 0;
        if (have_attention < 0 || have_original < 0)
            return -1;
        if (have_original) {
            /* Phi-3: the amplitude's factor is the context's growth */
            NEED_MAX("LongRoPE's factor is max_position_embeddings / "
                     "original_max_position_embeddings");
            factor = max_position / original;
            have_factor = 1;
        } else {
            NEED_MAX("LongRoPE without original_max_position_embeddings switches factors there");
            original = max_position;
            if ((have_factor = number_of(s, scaling, "rope_scaling.", "factor", &factor)) < 0)
                return -1;
        }
        cfg->original_max_position = original;
        if (!have_attention && (!have_factor || factor <= 1)) {
            /* transformers: attention_factor = 1.0 when factor <= 1 */
            attention = 1.0;
            factor = 0;
            have_attention = 1;
        }
        cfg->factor = have_factor ? factor : 0;
        cfg->attention_factor = have_attention ? attention : 0;
        break;
    }
    default:
        break;
    }
#undef NEED
#undef MAY
#undef NEED_MAX
    return 0;
}

int hf_rope_from_json(const json_t *top, const char *path, hf_rope *out, char *err,
                      size_t err_cap)
{
    memset(out, 0, sizeof *out);
    hf_source s = {path, top, NULL, err, err_cap};
    if (!json_is_object(top)) {
        fail(&s, "the top level must be a JSON object");
        return -1;
    }
    const json_t *text = json_object_get(top, "text_config");
    s.text = json_is_object(text) ? text : NULL;
    const json_t *type = json_object_get(top, "model_type");
    if (type && !json_is_null(type) && !json_is_string(type)) {
        fail(&s, "model_type must be a string");
        return -1;
    }
    const char *model_type = json_is_string(type) ? json_string_value(type) : NULL;
    if (map_dims(&s, model_type, &out->cfg))
        goto fail;
    const json_t *scaling = field(&s, "rope_scaling");
    if (scaling && !json_is_object(scaling)) {
        fail(&s, "rope_scaling must be an object or null");
        goto fail;
    }
    if (scaling && map_scaling(&s, scaling, out))
        goto fail;
    return 0;
fail:
    hf_rope_free(out);
    return -1;
}

int hf_rope_read_file(const char *path, const char *name, hf_rope *out, char *err,
                      size_t err_cap)
{
    memset(out, 0, sizeof *out);
    json_error_t error;
    json_t *top = json_load_file(path, JSON_REJECT_DUPLICATES, &error);
    if (!top) {
        snprintf(err, err_cap, "%s: line %d: %s", name, error.line, error.text);
        return -1;
    }
    int rc = hf_rope_from_json(top, name, out, err, err_cap);
    json_decref(top);
    return rc;
}

void hf_rope_free(hf_rope *r)
{
    free(r->short_factor);
    free(r->long_factor);
    r->short_factor = r->long_factor = NULL;
    r->cfg.short_factor = r->cfg.long_factor = NULL;
}
