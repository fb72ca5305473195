/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model_config.h - the fields of a Hugging Face config.json the decoder
 * needs: Llama, Mistral, Qwen2 and Qwen2-VL's language model (one layer
 * shape: RMSNorm, rotary, gated MLP; they differ in biases, sliding window
 * and positions), and XGLM.
 */
#ifndef DECODER_MODEL_CONFIG_H
#define DECODER_MODEL_CONFIG_H

#include <clpe.h>

#include <stddef.h>
#include <stdint.h>

typedef enum model_arch {
    ARCH_LLAMA, /* Llama, Mistral, Qwen2, Qwen2-VL text: RMSNorm, rotary, gated MLP */
    ARCH_XGLM   /* XGLMForCausalLM: LayerNorm, fairseq sinusoidal positions */
} model_arch;

typedef enum activation {
    ACT_SILU,
    ACT_GELU,      /* exact, with erf */
    ACT_GELU_TANH, /* "gelu_new", "gelu_pytorch_tanh" */
    ACT_RELU
} activation;

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
    int tie_word_embeddings; /* lm_head is the input embedding */
    /* the Llama family */
    int qkv_bias, o_bias;    /* Llama: attention_bias (both); Qwen2: q, k, v only */
    int mlp_bias;
    size_t sliding_window;   /* Mistral: a token sees this many rows, itself included; 0: all */
    clpe_rope_config rope;   /* the rotary, mapped by common/hf_config.c */
    double *short_factor, *long_factor; /* LongRoPE's lists (rope points into them) */
    uint32_t mrope_streams;  /* 0, or M-RoPE's position streams (Qwen2-VL: 3) */
    uint32_t mrope_section[CLPE_MROPE_MAX_STREAMS];
    /* XGLM */
    int scale_embedding;
    int has_pad_token;
    int64_t pad_token_id;
} model_config;

/* Read dir/config.json. Returns 0, or -1 with a message in err (naming the
 * field). Free with model_config_free. */
int model_config_read(const char *dir, model_config *cfg, char *err, size_t err_cap);
void model_config_free(model_config *cfg);

#endif
