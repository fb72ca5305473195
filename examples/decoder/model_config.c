/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model_config.c - config.json read as Hugging Face reads it, with jansson.
 *
 * save_pretrained writes every field of the model's own config class, so the
 * sizes are always there; a field missing is given the default of that
 * class in transformers (LlamaConfig, MistralConfig, Qwen2Config,
 * Qwen2VLConfig, XGLMConfig). A field of the wrong JSON type is refused,
 * naming it, where transformers would fail on it; the rotary configuration
 * (rope_theta, rope_scaling of every type, mrope_section) is mapped by
 * common/hf_config.c, the mapping the clpe tool uses, and checked by
 * clpe_rope_config_check. A multimodal config's text_config is read before
 * its top level (Qwen2-VL's language model).
 */
#include "model_config.h"

#include "common/hf_config.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct source {
    const char *path;
    const json_t *top;
    const json_t *text; /* text_config, or NULL */
    char *err;
    size_t cap;
} source;

static int fail(const source *s, const char *format, ...)
{
    int used = snprintf(s->err, s->cap, "%s: ", s->path);
    if (used >= 0 && (size_t)used < s->cap) {
        va_list ap;
        va_start(ap, format);
        vsnprintf(s->err + used, s->cap - (size_t)used, format, ap);
        va_end(ap);
    }
    return -1;
}

/* The value of key (text_config's first), NULL when absent or null. */
static const json_t *field(const source *s, const char *key)
{
    const json_t *v = s->text ? json_object_get(s->text, key) : NULL;
    if (!v)
        v = json_object_get(s->top, key);
    return v && !json_is_null(v) ? v : NULL;
}

/* A positive integer field, or def when absent (def 0: required). */
static int get_size(const source *s, const char *key, size_t def, size_t *out)
{
    const json_t *v = field(s, key);
    if (!v) {
        if (def == 0)
            return fail(s, "%s is missing", key);
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
        json_integer_value(v) > (1 << 24))
        return fail(s, "%s must be an integer in [1, 2^24]", key);
    *out = (size_t)json_integer_value(v);
    return 0;
}

/* A finite number, or def when absent. */
static int get_number(const source *s, const char *key, double def, double *out)
{
    const json_t *v = field(s, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return fail(s, "%s must be a number", key);
    *out = json_number_value(v);
    return 0;
}

static int get_bool(const source *s, const char *key, int def, int *out)
{
    const json_t *v = field(s, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return fail(s, "%s must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

static int get_activation(const source *s, const char *key, const char *def, activation *out)
{
    const json_t *v = field(s, key);
    if (v && !json_is_string(v))
        return fail(s, "%s must be a string", key);
    const char *name = v ? json_string_value(v) : def;
    static const struct {
        const char *name;
        activation act;
    } table[] = {{"silu", ACT_SILU},          {"swish", ACT_SILU},
                 {"gelu", ACT_GELU},          {"gelu_new", ACT_GELU_TANH},
                 {"gelu_pytorch_tanh", ACT_GELU_TANH}, {"relu", ACT_RELU}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0) {
            *out = table[i].act;
            return 0;
        }
    return fail(s, "%s '%s' is not supported (silu, gelu, gelu_new, gelu_pytorch_tanh, relu)",
                key, name);
}

/* The rotary configuration: common/hf_config.c's mapping, then clpe's check. */
static int read_rotary(const source *s, model_config *cfg)
{
    hf_rope hf;
    if (hf_rope_from_json(s->top, s->path, &hf, s->err, s->cap) != 0) {
        hf_rope_free(&hf);
        return -1;
    }
    cfg->rope = hf.cfg;
    cfg->short_factor = hf.short_factor;
    cfg->long_factor = hf.long_factor;
    cfg->mrope_streams = hf.streams;
    memcpy(cfg->mrope_section, hf.section, sizeof hf.section);
    if (cfg->rope.head_dim != cfg->head_dim)
        return fail(s, "the rotary head width %u is not head_dim %zu", cfg->rope.head_dim,
                    cfg->head_dim);
    if (cfg->rope.pairing != CLPE_ROPE_HALF_SPLIT)
        return fail(s, "interleaved rotary pairs are not supported here");
    if (cfg->rope.scaling == CLPE_ROPE_LLAMA3) {
        /* transformers asks for an integer (and warns); a fraction or a value
         * beyond a double's integers is refused here */
        const json_t *scaling = field(s, "rope_scaling");
        const json_t *v = json_object_get(scaling, "original_max_position_embeddings");
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > ((json_int_t)1 << 53))
            return fail(s, "rope_scaling.original_max_position_embeddings must be an integer "
                           "in [1, 2^53]");
    }
    if (cfg->mrope_streams && cfg->mrope_streams != 3)
        return fail(s, "rope_scaling.mrope_section has %u entries; Qwen2-VL's text model has 3",
                    cfg->mrope_streams);
    if (cfg->mrope_streams && (cfg->rope.scaling == CLPE_ROPE_DYNAMIC ||
                               cfg->rope.scaling == CLPE_ROPE_LONGROPE))
        return fail(s, "M-RoPE with a scaling that changes with the sequence length (dynamic, "
                       "longrope) is not supported here");
    clpe_rope_config check = cfg->rope;
    check.dtype = CLPE_DTYPE_F32;
    char detail[512];
    clpe_status st;
    if (cfg->mrope_streams) {
        clpe_mrope_config m = {.rope = check, .streams = cfg->mrope_streams};
        memcpy(m.section, cfg->mrope_section, sizeof m.section);
        st = clpe_mrope_config_check(&m, detail, sizeof detail);
    } else {
        st = clpe_rope_config_check(&check, detail, sizeof detail);
    }
    if (st != CLPE_SUCCESS)
        return fail(s, "the rotary configuration is refused: %s", detail);
    return 0;
}

/* Llama, Mistral, Qwen2 and Qwen2-VL's language model: one layer shape. */
static int read_llama_family(const source *s, const char *type, model_config *cfg)
{
    cfg->arch = ARCH_LLAMA;
    const int qwen = strcmp(type, "qwen2") == 0 || strcmp(type, "qwen2_vl") == 0;
    const int mistral = strcmp(type, "mistral") == 0;
    if (get_size(s, "vocab_size", 32000, &cfg->vocab) ||
        get_size(s, "hidden_size", 4096, &cfg->hidden) ||
        get_size(s, "intermediate_size", mistral ? 14336 : 11008, &cfg->ffn) ||
        get_size(s, "num_hidden_layers", 32, &cfg->layers) ||
        get_size(s, "num_attention_heads", 32, &cfg->heads) ||
        get_size(s, "num_key_value_heads", cfg->heads, &cfg->kv_heads) ||
        get_size(s, "head_dim", cfg->hidden / cfg->heads, &cfg->head_dim) ||
        get_activation(s, "hidden_act", "silu", &cfg->act) ||
        get_number(s, "rms_norm_eps", 1e-6, &cfg->norm_eps) ||
        get_bool(s, "tie_word_embeddings", 0, &cfg->tie_word_embeddings))
        return -1;
    if (!(cfg->norm_eps >= 0))
        return fail(s, "rms_norm_eps must be a number >= 0");
    if (qwen) {
        /* Qwen2: q, k and v have biases, o has none; no config field says so */
        cfg->qkv_bias = 1;
        int sliding = 0;
        if (get_bool(s, "use_sliding_window", 0, &sliding))
            return -1;
        if (sliding)
            return fail(s, "use_sliding_window true is not supported here");
    } else if (mistral) {
        const json_t *w = field(s, "sliding_window");
        if (w && (!json_is_integer(w) || json_integer_value(w) < 1 ||
                  json_integer_value(w) > UINT32_MAX))
            return fail(s, "sliding_window must be a positive integer or null");
        cfg->sliding_window = w ? (size_t)json_integer_value(w) : 0;
    } else {
        int bias = 0;
        if (get_bool(s, "attention_bias", 0, &bias) || get_bool(s, "mlp_bias", 0, &cfg->mlp_bias))
            return -1;
        cfg->qkv_bias = cfg->o_bias = bias;
    }
    if (cfg->heads % cfg->kv_heads != 0)
        return fail(s, "num_attention_heads is not a multiple of num_key_value_heads");
    if (cfg->head_dim % 2 != 0)
        return fail(s, "head_dim must be even for rotary embedding");
    if (cfg->head_dim > 1024)
        return fail(s, "head_dim over 1024 is not supported here");
    return read_rotary(s, cfg);
}

static int read_xglm(const source *s, model_config *cfg)
{
    cfg->arch = ARCH_XGLM;
    if (get_size(s, "vocab_size", 256008, &cfg->vocab) ||
        get_size(s, "d_model", 1024, &cfg->hidden) ||
        get_size(s, "ffn_dim", 4096, &cfg->ffn) ||
        get_size(s, "num_layers", 24, &cfg->layers) ||
        get_size(s, "attention_heads", 16, &cfg->heads) ||
        get_activation(s, "activation_function", "gelu", &cfg->act) ||
        get_bool(s, "scale_embedding", 1, &cfg->scale_embedding) ||
        get_bool(s, "tie_word_embeddings", 1, &cfg->tie_word_embeddings))
        return -1;
    cfg->kv_heads = cfg->heads;
    if (cfg->hidden % cfg->heads != 0)
        return fail(s, "d_model is not a multiple of attention_heads");
    cfg->head_dim = cfg->hidden / cfg->heads;
    if (cfg->head_dim > 1024)
        return fail(s, "d_model / attention_heads over 1024 is not supported here");
    cfg->norm_eps = 1e-5; /* torch.nn.LayerNorm's default, which XGLM keeps */
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = 1;
    const json_t *pad = json_object_get(s->top, "pad_token_id");
    cfg->has_pad_token = 1;
    cfg->pad_token_id = 1;
    if (pad && json_is_null(pad))
        cfg->has_pad_token = 0;
    else if (pad && !json_is_integer(pad))
        return fail(s, "pad_token_id must be an integer or null");
    else if (pad)
        cfg->pad_token_id = json_integer_value(pad);
    return 0;
}

int model_config_read(const char *dir, model_config *cfg, char *err, size_t cap)
{
    memset(cfg, 0, sizeof *cfg);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", dir) >= sizeof path) {
        snprintf(err, cap, "model directory path too long");
        return -1;
    }
    json_error_t error;
    json_t *top = json_load_file(path, JSON_REJECT_DUPLICATES, &error);
    if (!top) {
        snprintf(err, cap, "%s: line %d: %s", path, error.line, error.text);
        return -1;
    }
    source s = {path, top, NULL, err, cap};
    int rc = -1;
    if (!json_is_object(top)) {
        fail(&s, "the top level must be a JSON object");
        goto done;
    }
    const json_t *text = json_object_get(top, "text_config");
    s.text = json_is_object(text) ? text : NULL;
    const json_t *type = json_object_get(top, "model_type");
    const char *name = json_is_string(type) ? json_string_value(type) : NULL;
    static const char *const family[] = {"llama", "mistral", "qwen2", "qwen2_vl"};
    for (size_t i = 0; name && i < sizeof family / sizeof *family; i++)
        if (strcmp(name, family[i]) == 0) {
            rc = read_llama_family(&s, name, cfg);
            goto done;
        }
    if (name && strcmp(name, "xglm") == 0)
        rc = read_xglm(&s, cfg);
    else if (name)
        fail(&s, "model_type '%s' is not supported (llama, mistral, qwen2, qwen2_vl, xglm)",
             name);
    else
        fail(&s, "model_type is %s (llama, mistral, qwen2, qwen2_vl, xglm)",
             type && !json_is_null(type) ? "not a string" : "missing");
done:
    json_decref(top);
    if (rc != 0)
        model_config_free(cfg);
    return rc;
}

void model_config_free(model_config *cfg)
{
    free(cfg->short_factor);
    free(cfg->long_factor);
    cfg->short_factor = cfg->long_factor = NULL;
    cfg->rope.short_factor = cfg->rope.long_factor = NULL;
}
