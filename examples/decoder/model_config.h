/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model_config.h - the few fields of a Hugging Face config.json the decoder
 * needs, for the two architectures it runs.
 */
#ifndef DECODER_MODEL_CONFIG_H
#define DECODER_MODEL_CONFIG_H

#include <clpe.h>

#include <stddef.h>
#include <stdint.h>

typedef enum model_arch {
    ARCH_LLAMA, /* LlamaForCausalLM: RMSNorm, rotary, gated MLP */
    ARCH_XGLM   /* XGLMForCausalLM: LayerNorm, fairseq sinusoidal positions */
} model_arch;

typedef enum activation {
    ACT_SILU,
    ACT_GELU,      /* exact, with erf */
    ACT_GELU_TANH, /* "gelu_new", "gelu_pytorch_tanh" */
    ACT_RELU
} activation;

typedef enum rope_scaling_kind {
    ROPE_SCALING_NONE,
    ROPE_SCALING_LINEAR, /* rope_scaling {"rope_type": "linear", "factor"} */
    ROPE_SCALING_LLAMA3  /* {"rope_type": "llama3", "factor", "low_freq_factor",
                            "high_freq_factor", "original_max_position_embeddings"} */
} rope_scaling_kind;

typedef struct model_config {
    model_arch arch;
    size_t vocab;
    size_t hidden;
    size_t layers;
    size_t heads;
    size_t kv_heads;
    size_t head_dim;
    size_t ffn;
    double norm_eps;
    activation act;
    /* Llama */
    double rope_theta;
    rope_scaling_kind rope_scaling;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor, rope_original_max;
    int attention_bias;
    int mlp_bias;
    clpe_rope_config rope; /* the rotary of the model, from the fields above */
    uint32_t mrope_streams; /* 0, or M-RoPE's position streams (Qwen2-VL: 3) */
    uint32_t mrope_section[CLPE_MROPE_MAX_STREAMS];
    /* XGLM */
    int scale_embedding;
    int has_pad_token;
    int64_t pad_token_id;
} model_config;

/* Read dir/config.json. Returns 0, or -1 with a message in err. */
int model_config_read(const char *dir, model_config *cfg, char *err, size_t err_cap);
void model_config_free(model_config *cfg);

#endif
