/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decoder.h - a decoder-only transformer on one OpenCL device: the weights,
 * the KV cache, and a forward pass over a run of tokens.
 *
 * Positions: the token in cache row r has position start + r, where start is
 * any int64 (the positions must stay inside int64). The position steps -
 * embedding gather with the position encoding, rotary into the KV cache -
 * are clpe calls, kept in position_steps.c.
 */
#ifndef DECODER_DECODER_H
#define DECODER_DECODER_H

#include "model_config.h"
#include "profile.h"
#include "safetensors.h"

#include <clpe.h>

#include <stddef.h>
#include <stdint.h>

/* How Llama's rotary is applied (position_steps.h). */
typedef enum rope_mode {
    ROPE_ENQUEUE, /* clpe_enqueue_rope on q and k, then k copied into the cache */
    ROPE_DEVICE   /* clpe_device.h in kernels of the decoder: keys rotated into the
                     cache in one pass, queries rotated inside the attention kernel */
} rope_mode;

typedef struct layer_buffers {
    cl_mem norm1_w, norm1_b;          /* input_layernorm / self_attn_layer_norm */
    cl_mem q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
    cl_mem norm2_w, norm2_b;          /* post_attention_layernorm / final_layer_norm */
    cl_mem gate_w, gate_b;            /* Llama only */
    cl_mem up_w, up_b, down_w, down_b; /* Llama up/down_proj; XGLM fc1/fc2 */
    cl_mem k_cache, v_cache;          /* [cache_rows, kv_heads * head_dim] each */
} layer_buffers;

/* Bytes of device memory this program allocated, by purpose. */
typedef struct memory_use {
    size_t weights;
    size_t cache;
    size_t work; /* activations, logits, ids */
} memory_use;

typedef struct decoder {
    model_config cfg;
    size_t max_tokens; /* most tokens one forward call takes */
    size_t max_logit_rows; /* most rows of logits one forward call returns */
    size_t cache_rows;
    int64_t start;     /* position of cache row 0 */

    cl_context context;
    cl_device_id device;
    cl_command_queue queue;
    cl_program program;
    cl_kernel rms_norm, layer_norm, add_bias, add_into, activation, gated_activation, attention;
    cl_kernel attention_rotating_q, rope_keys_into_cache; /* ROPE_DEVICE */

    cl_mem embed, final_w, final_b, lm_head;
    layer_buffers *layers;
    cl_mem x, h, q, k, attn, o, f1, f2, logits;
    cl_mem ids, gather_positions, bad_ids;

    /* position_steps.c */
    clpe_encoder *input_encoder; /* the input stage's gather (+ encoding for XGLM) */
    clpe_rope *rope;             /* Llama */
    int64_t first_position;      /* what the input stage adds to a model position (XGLM: 2) */
    rope_mode rope_mode;
    cl_mem rope_words;           /* ROPE_DEVICE: clpe_rope_device_words */
    const char *rope_words_options;

    memory_use memory;
    profile prof;
} decoder;

typedef struct decoder_options {
    const char *device;  /* clpe_select_device selector; NULL: CLPE_DEVICE or the default */
    size_t max_tokens;
    size_t max_logit_rows; /* 1 .. max_tokens: the logits buffer's rows */
    size_t cache_rows;
    int64_t start;
    int profile;         /* collect OpenCL profiling events per step */
    rope_mode rope_mode; /* Llama */
} decoder_options;

/* Select the device, build the kernels, upload the weights of model_file,
 * allocate the cache. Returns 0, or -1 with a message in err (everything
 * created is released). */
int decoder_create(decoder *d, const model_config *cfg, const st_file *model_file,
                   const decoder_options *opt, char *err, size_t err_cap);
void decoder_release(decoder *d);

/* Run n tokens (ids) through the model at cache rows row .. row+n-1 (their
 * keys and values are written there; rows before row must hold the earlier
 * tokens). Writes logits for the last `logit_rows` tokens (1 .. n, at most
 * max_logit_rows) into
 * logits_out, [logit_rows, vocab]. Blocks until done. */
int decoder_forward(decoder *d, const int32_t *ids, size_t n, size_t row, size_t logit_rows,
                    float *logits_out, char *err, size_t err_cap);

/* The device's name, for reports. */
void decoder_device_name(const decoder *d, char *out, size_t cap);

#endif
