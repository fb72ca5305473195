/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model_config.c - config.json for LlamaForCausalLM and XGLMForCausalLM.
 *
 * save_pretrained writes every field of the model's own config class, so the
 * sizes are always there; a field missing is given the default of that
 * class in transformers (LlamaConfig, XGLMConfig).
 */
#include "model_config.h"

#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_file(const char *path, char **text, size_t *len, char *err, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, cap, "%s: cannot open", path);
        return -1;
    }
    size_t size = 0, capacity = 4096;
    char *buf = malloc(capacity);
    for (;;) {
        if (!buf)
            break;
        size += fread(buf + size, 1, capacity - size, f);
        if (size < capacity)
            break;
        char *bigger = realloc(buf, capacity * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        capacity *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        snprintf(err, cap, "%s: %s", path, buf ? "read error" : "out of memory");
        return -1;
    }
    *text = buf;
    *len = size;
    return 0;
}

/* A positive integer field, or def when absent (def 0: required). */
static int get_size(const json_value *root, const char *key, size_t def, size_t *out, char *err,
                    size_t cap)
{
    const json_value *v = json_get(root, key);
    if (!v || v->type == JSON_NULL) {
        if (def == 0) {
            snprintf(err, cap, "config.json: '%s' is missing", key);
            return -1;
        }
        *out = def;
        return 0;
    }
    if (v->type != JSON_NUMBER || !v->is_integer || v->integer <= 0 || v->integer > (1 << 24)) {
        snprintf(err, cap, "config.json: '%s' must be an integer in [1, 2^24]", key);
        return -1;
    }
    *out = (size_t)v->integer;
    return 0;
}

static double get_number(const json_value *root, const char *key, double def)
{
    const json_value *v = json_get(root, key);
    return v && v->type == JSON_NUMBER ? v->number : def;
}

static int get_bool(const json_value *root, const char *key, int def)
{
    const json_value *v = json_get(root, key);
    return v && v->type == JSON_BOOL ? v->boolean : def;
}

static int get_activation(const json_value *root, const char *key, const char *def,
                          activation *out, char *err, size_t cap)
{
    const json_value *v = json_get(root, key);
    const char *name = v && v->type == JSON_STRING ? v->string : def;
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
    snprintf(err, cap, "config.json: %s '%s' is not supported (silu, gelu, gelu_new, relu)", key,
             name);
    return -1;
}

/* rope_scaling: null, linear or llama3 (clpe_rope_config has every scaling
 * of Hugging Face; these two are the ones this example maps). */
static int read_rope_scaling(const json_value *rs, model_config *cfg, char *err, size_t cap)
{
    if (!rs || rs->type == JSON_NULL)
        return 0;
    const json_value *type = json_get(rs, "rope_type");
    if (!type)
        type = json_get(rs, "type"); /* the older name of the field */
    const char *name = type && type->type == JSON_STRING ? type->string : "";
    cfg->rope_factor = get_number(rs, "factor", 0.0);
    if (strcmp(name, "default") == 0)
        return 0;
    if (strcmp(name, "linear") == 0 && cfg->rope_factor >= 1.0) {
        cfg->rope_scaling = ROPE_SCALING_LINEAR;
        return 0;
    }
    if (strcmp(name, "llama3") == 0 && cfg->rope_factor >= 1.0) {
        cfg->rope_scaling = ROPE_SCALING_LLAMA3;
        cfg->rope_low_freq_factor = get_number(rs, "low_freq_factor", 0.0);
        cfg->rope_high_freq_factor = get_number(rs, "high_freq_factor", 0.0);
        cfg->rope_original_max = get_number(rs, "original_max_position_embeddings", 0.0);
        if (cfg->rope_low_freq_factor > 0.0 &&
            cfg->rope_high_freq_factor > cfg->rope_low_freq_factor &&
            cfg->rope_original_max >= 1.0)
            return 0;
    }
    snprintf(err, cap, "config.json: rope_scaling '%s' is not supported here (linear and llama3 "
                       "with their parameters are; clpe_rope_config has the others)", name);
    return -1;
}

static int read_llama(const json_value *root, model_config *cfg, char *err, size_t cap)
{
    cfg->arch = ARCH_LLAMA;
    if (get_size(root, "vocab_size", 32000, &cfg->vocab, err, cap) ||
        get_size(root, "hidden_size", 4096, &cfg->hidden, err, cap) ||
        get_size(root, "intermediate_size", 11008, &cfg->ffn, err, cap) ||
        get_size(root, "num_hidden_layers", 32, &cfg->layers, err, cap) ||
        get_size(root, "num_attention_heads", 32, &cfg->heads, err, cap) ||
        get_size(root, "num_key_value_heads", cfg->heads, &cfg->kv_heads, err, cap) ||
        get_size(root, "head_dim", cfg->hidden / cfg->heads, &cfg->head_dim, err, cap) ||
        get_activation(root, "hidden_act", "silu", &cfg->act, err, cap))
        return -1;
    cfg->norm_eps = get_number(root, "rms_norm_eps", 1e-6);
    cfg->rope_theta = get_number(root, "rope_theta", 10000.0);
    cfg->attention_bias = get_bool(root, "attention_bias", 0);
    cfg->mlp_bias = get_bool(root, "mlp_bias", 0);
    if (read_rope_scaling(json_get(root, "rope_scaling"), cfg, err, cap) != 0)
        return -1;
    if (cfg->heads % cfg->kv_heads != 0) {
        snprintf(err, cap,
                 "config.json: num_attention_heads is not a multiple of num_key_value_heads");
        return -1;
    }
    if (cfg->head_dim % 2 != 0) {
        snprintf(err, cap, "config.json: head_dim must be even for rotary embedding");
        return -1;
    }
    clpe_rope_config rc = clpe_rope_config_default((uint32_t)cfg->head_dim);
    rc.base = cfg->rope_theta;
    if (cfg->rope_scaling == ROPE_SCALING_LINEAR) {
        rc.scaling = CLPE_ROPE_LINEAR;
        rc.factor = cfg->rope_factor;
    } else if (cfg->rope_scaling == ROPE_SCALING_LLAMA3) {
        rc.scaling = CLPE_ROPE_LLAMA3;
        rc.factor = cfg->rope_factor;
        rc.low_freq_factor = cfg->rope_low_freq_factor;
        rc.high_freq_factor = cfg->rope_high_freq_factor;
        rc.original_max_position = cfg->rope_original_max;
    }
    cfg->rope = rc;
    return 0;
}

static int read_xglm(const json_value *root, model_config *cfg, char *err, size_t cap)
{
    cfg->arch = ARCH_XGLM;
    if (get_size(root, "vocab_size", 256008, &cfg->vocab, err, cap) ||
        get_size(root, "d_model", 1024, &cfg->hidden, err, cap) ||
        get_size(root, "ffn_dim", 4096, &cfg->ffn, err, cap) ||
        get_size(root, "num_layers", 24, &cfg->layers, err, cap) ||
        get_size(root, "attention_heads", 16, &cfg->heads, err, cap) ||
        get_activation(root, "activation_function", "gelu", &cfg->act, err, cap))
        return -1;
    cfg->kv_heads = cfg->heads;
    if (cfg->hidden % cfg->heads != 0) {
        snprintf(err, cap, "config.json: d_model is not a multiple of attention_heads");
        return -1;
    }
    cfg->head_dim = cfg->hidden / cfg->heads;
    cfg->norm_eps = 1e-5; /* torch.nn.LayerNorm's default, which XGLM keeps */
    cfg->scale_embedding = get_bool(root, "scale_embedding", 1);
    const json_value *pad = json_get(root, "pad_token_id");
    cfg->has_pad_token = 1;
    cfg->pad_token_id = 1;
    if (pad && pad->type == JSON_NULL)
        cfg->has_pad_token = 0;
    else if (pad && pad->type == JSON_NUMBER && pad->is_integer)
        cfg->pad_token_id = pad->integer;
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
    char *text;
    size_t len;
    if (read_file(path, &text, &len, err, cap) != 0)
        return -1;
    char json_err[160];
    json_value *root = json_parse(text, len, json_err, sizeof json_err);
    free(text);
    if (!root) {
        snprintf(err, cap, "%s: %s", path, json_err);
        return -1;
    }
    const json_value *type = json_get(root, "model_type");
    int rc;
    if (type && type->type == JSON_STRING && strcmp(type->string, "llama") == 0) {
        rc = read_llama(root, cfg, err, cap);
    } else if (type && type->type == JSON_STRING && strcmp(type->string, "xglm") == 0) {
        rc = read_xglm(root, cfg, err, cap);
    } else {
        snprintf(err, cap, "%s: model_type %s%s%s is not supported (llama, xglm)", path,
                 type && type->type == JSON_STRING ? "'" : "",
                 type && type->type == JSON_STRING ? type->string : "missing",
                 type && type->type == JSON_STRING ? "'" : "");
        rc = -1;
    }
    json_free(root);
    return rc;
}

void model_config_free(model_config *cfg)
{
    (void)cfg;
}
