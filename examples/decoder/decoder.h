/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decoder.h - a decoder-only transformer on one OpenCL device: the weights,
 * a paged KV cache, and a forward pass over a batch of tokens that may
 * belong to several sequences.
 *
 * The cache: per layer a key and a value tensor of [num_blocks, block_size,
 * kv_heads, head_dim]; slot s is entry s % block_size of block s /
 * block_size. A sequence owns a list of blocks, its block table: its row r
 * (the r-th token of the sequence) lives in slot table[r / block_size] *
 * block_size + r % block_size. Each token of a forward call carries its
 * position (any int64; one per stream for M-RoPE), its slot, and where its
 * sequence's block table is, so one call can hold the prefill of one
 * sequence and the decode steps of others. Nothing a token computes depends
 * on the other tokens of its call: its logits are those of running its
 * sequence alone, bit for bit. The position steps - embedding gather with
 * the position encoding, rotary into the KV cache - are clpe calls, kept in
 * position_steps.c.
 */
#ifndef DECODER_DECODER_H
#define DECODER_DECODER_H

#include "model_config.h"
#include "profile.h"
#include "safetensors.h"

#include <clpe.h>

#include <stddef.h>
#include <stdint.h>

/* How rotary is applied (position_steps.h). */
typedef enum rope_mode {
    ROPE_KV,       /* clpe_enqueue_rope_kv: q rotated in place, k rotated and v written
                      into their cache slots, one call per layer */
    ROPE_TWO_PASS, /* clpe_enqueue_rope on q and k, then k and v copied into the cache
                      (not with an FP8 cache: the copy would need clpe's FP8 rounding) */
    ROPE_DEVICE    /* clpe_device.h in kernels of the decoder: keys rotated into the
                      cache in one pass, queries rotated inside the attention kernel
                      (an FP8 cache: keys and values written by clpe_enqueue_rope_kv
                      without q, the only FP8 store clpe has) */
} rope_mode;

/* How the matrix products are computed. */
typedef enum matmul_mode {
    MATMUL_INVARIANT, /* the decoder's own kernel: each output a dot product in a fixed
                         order, whatever the other rows of the call (batch-invariant) */
    MATMUL_CLBLAST    /* CLBlast GEMM/GEMV: faster, but its bits depend on the call's
                         shape, so a token's logits depend on its batch */
} matmul_mode;

typedef struct layer_buffers {
    cl_mem norm1_w, norm1_b;          /* input_layernorm / self_attn_layer_norm */
    cl_mem q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
    cl_mem norm2_w, norm2_b;          /* post_attention_layernorm / final_layer_norm */
    cl_mem gate_w, gate_b;            /* Llama only */
    cl_mem up_w, up_b, down_w, down_b; /* Llama up/down_proj; XGLM fc1/fc2 */
    cl_mem k_cache, v_cache;          /* [num_blocks, block_size, kv_heads, head_dim] each */
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
    size_t max_table_entries; /* most block-table entries one forward call uses */
    size_t num_blocks, block_size;
    clpe_dtype cache_dtype; /* F32, F16, BF16, FP8_E4M3 or FP8_E5M2: the KV cache's elements */
    float key_scale, value_scale; /* FP8 caches: the cache stores x / scale (clpe_kv_cache's) */
    uint32_t streams;  /* positions per token: 1, or M-RoPE's streams */
    matmul_mode matmul;

    cl_context context;
    cl_device_id device;
    cl_command_queue queue;
    cl_program program;
    cl_kernel rms_norm, layer_norm, add_bias, add_into, activation, gated_activation, attention;
    cl_kernel linear, linear_rows, gather_rows, scatter_rows;
    cl_kernel attention_rotating_q, rope_keys_into_cache; /* ROPE_DEVICE */

    cl_mem embed, final_w, final_b, lm_head;
    layer_buffers *layers;
    cl_mem x, h, q, k, v, attn, o, f1, f2, logits;
    cl_mem ids, gather_positions, bad_ids;
    cl_mem positions;   /* int64 [streams, tokens] */
    cl_mem slots;       /* int64 [tokens] */
    cl_mem token_meta;  /* uint2 [tokens]: (offset of its block table in tables, its row) */
    cl_mem tables;      /* uint [max_table_entries] */
    cl_mem logit_index; /* uint [max_logit_rows]: the tokens whose logits are returned */

    /* position_steps.c */
    clpe_encoder *input_encoder; /* the input stage's gather (+ encoding for XGLM) */
    clpe_rope *rope;             /* rotary models */
    /* rope_type dynamic and longrope: frequencies that change with the
     * sequence's length (max position + 1, as Hugging Face computes them
     * for each forward call), one object per length met, the last few kept */
    int rope_varies;
    clpe_rope *varying[8];
    uint64_t varying_key[8];
    size_t varying_next;
    const struct forward_batch *batch; /* the call in progress */
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
    size_t max_table_entries;
    size_t num_blocks, block_size;
    clpe_dtype cache_dtype; /* F32 (the zero default), F16, BF16, FP8_E4M3 or FP8_E5M2 (rotary
                               models, ROPE_KV or ROPE_DEVICE) */
    float key_scale, value_scale; /* FP8 caches: positive and finite; others: 0 */
    int profile;         /* collect OpenCL profiling events per step */
    rope_mode rope_mode; /* rotary models */
    matmul_mode matmul;
} decoder_options;

/* One forward call: n tokens, each with its id, its position(s), its cache
 * slot, and its sequence's block table (an offset into tables) and row in
 * that sequence: token t attends to rows 0 .. row[t] of its sequence, the
 * rows before it already in the cache or written by this call. */
typedef struct forward_batch {
    size_t n;
    const int32_t *ids;        /* [n] */
    const int64_t *positions;  /* [streams, n] */
    const int64_t *slots;      /* [n] */
    const uint32_t *table_offset; /* [n] */
    const uint32_t *row;       /* [n] */
    const uint32_t *tables;    /* [table_entries] block numbers */
    size_t table_entries;
    const uint32_t *logit_tokens; /* [logit_rows]: tokens whose logits are returned */
    size_t logit_rows;
} forward_batch;

/* Select the device, build the kernels, upload the weights of model_file,
 * allocate the cache. Returns 0, or -1 with a message in err (everything
 * created is released). */
int decoder_create(decoder *d, const model_config *cfg, const st_file *model_file,
                   const decoder_options *opt, char *err, size_t err_cap);
void decoder_release(decoder *d);

/* Run a batch through the model: every token's key and value are written
 * to its slot; logits of the tokens b->logit_tokens into logits_out,
 * [logit_rows, vocab]. Blocks until done. */
int decoder_forward(decoder *d, const forward_batch *b, float *logits_out, char *err,
                    size_t err_cap);

/* 0 when no clpe_enqueue_rope_kv call since the last check refused its
 * slots (which the scheduler's block tables never repeat), else -1 with a
 * message. Blocks until the calls are done. */
int decoder_check_slots(decoder *d, char *err, size_t err_cap);

/* Whether the KV cache is an FP8 one (one byte an element, x / scale). */
static inline int decoder_cache_fp8(const decoder *d)
{
    return d->cache_dtype == CLPE_DTYPE_FP8_E4M3 || d->cache_dtype == CLPE_DTYPE_FP8_E5M2;
}

/* The device's name, for reports. */
void decoder_device_name(const decoder *d, char *out, size_t cap);

#endif
