/* SPDX-License-Identifier: Apache-2.0 */
/*
 * position_steps.c - the decoder's position steps, on clpe.
 */
#include "position_steps.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int clpe_fail(char *err, size_t cap, const char *what, clpe_status s)
{
    snprintf(err, cap, "%s: %s (%d)", what, clpe_status_string(s), (int)s);
    return -1;
}

int position_steps_create(decoder *d, char *err, size_t cap)
{
    const model_config *m = &d->cfg;
    clpe_status s;
    clpe_config cfg;
    if (m->arch == ARCH_XGLM) {
        /* Hugging Face XGLM (XGLMSinusoidalPositionalEmbedding) is fairseq's
         * table: tensor2tensor frequencies, sines then cosines, row
         * position_id + 2, row pad_token_id zero; the token embedding is
         * scaled by sqrt(d_model) first (XGLMScaledWordEmbedding). */
        s = clpe_config_preset("fairseq", (uint32_t)m->hidden, &cfg, NULL);
        if (s != CLPE_SUCCESS)
            return clpe_fail(err, cap, "clpe_config_preset", s);
        d->first_position = 2; /* XGLM's offset, whatever its padding index */
        cfg.flags &= ~CLPE_FLAG_PADDING_ROW;
        if (m->has_pad_token) {
            cfg.flags |= CLPE_FLAG_PADDING_ROW;
            cfg.padding_position = m->pad_token_id;
        }
        cfg.scale = m->scale_embedding ? sqrt((double)m->hidden) : 1.0;
    } else {
        /* Llama adds no encoding at the input: gather with every row at the
         * padding position, whose encoding is zero, and scale 1, which is
         * the embedding row itself. */
        cfg = clpe_config_default((uint32_t)m->hidden);
        if (m->hidden % 2)
            cfg.flags |= CLPE_FLAG_ODD_D_ZERO_COLUMN;
        cfg.flags |= CLPE_FLAG_PADDING_ROW;
        cfg.padding_position = 0;
        d->first_position = 0;
    }
    cfg.dtype = CLPE_DTYPE_F32;
    clpe_build_log log = {0};
    d->input_encoder = clpe_encoder_create(d->context, d->device, &cfg, &log, &s);
    if (!d->input_encoder)
        return clpe_fail(err, cap, "clpe_encoder_create", s);
    if (m->arch == ARCH_LLAMA) {
        clpe_rope_config rc = m->rope;
        rc.pairing = CLPE_ROPE_HALF_SPLIT; /* Hugging Face's rotate_half */
        rc.dtype = CLPE_DTYPE_F32;
        d->rope = clpe_rope_create_like(d->input_encoder, &rc, &s);
        if (!d->rope)
            return clpe_fail(err, cap, "clpe_rope_create_like", s);
        if (d->rope_mode == ROPE_DEVICE) {
            s = clpe_rope_device_words(d->rope, &d->rope_words, &d->rope_words_options);
            if (s != CLPE_SUCCESS)
                return clpe_fail(err, cap, "clpe_rope_device_words", s);
        }
        /* the padding positions of the rotary models' gather: all zero */
        int64_t zero = 0;
        cl_int e = clEnqueueFillBuffer(d->queue, d->gather_positions, &zero, sizeof zero, 0,
                                       d->max_tokens * sizeof zero, 0, NULL, NULL);
        if (e != CL_SUCCESS)
            return clpe_fail(err, cap, "clEnqueueFillBuffer", e);
    }
    return 0;
}

void position_steps_release(decoder *d)
{
    if (d->rope_words)
        clReleaseMemObject(d->rope_words);
    d->rope_words = NULL;
    clpe_rope_release(d->rope);
    clpe_encoder_release(d->input_encoder);
    d->rope = NULL;
    d->input_encoder = NULL;
}

int position_input_stage(decoder *d, size_t n, char *err, size_t cap)
{
    const clpe_token_ids ids = {.buffer = d->ids};
    const clpe_tensor table = {.buffer = d->embed};
    const clpe_tensor out = {.buffer = d->x};
    const clpe_positions pos = {.source = CLPE_POSITIONS_IDS, .buffer = d->gather_positions};
    clpe_status s = clpe_enqueue_gather(d->input_encoder, d->queue, 1, n, &ids, &table,
                                        CLPE_DTYPE_F32, d->cfg.vocab, &out, &pos, d->bad_ids, 0,
                                        NULL, profile_event(&d->prof, STEP_POSITION));
    return s == CLPE_SUCCESS ? 0 : clpe_fail(err, cap, "clpe_enqueue_gather", s);
}

/* src's n rows of kv_heads * head_dim into the cache at the tokens' slots. */
static int scatter(decoder *d, cl_mem src, cl_mem cache, size_t n, char *err, size_t cap)
{
    cl_kernel k = d->scatter_rows;
    cl_uint width = (cl_uint)(d->cfg.kv_heads * d->cfg.head_dim);
    cl_int e = clSetKernelArg(k, 0, sizeof src, &src);
    e |= clSetKernelArg(k, 1, sizeof cache, &cache);
    e |= clSetKernelArg(k, 2, sizeof d->slots, &d->slots);
    e |= clSetKernelArg(k, 3, sizeof width, &width);
    size_t global = n * width;
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, NULL, 0, NULL,
                                   profile_event(&d->prof, STEP_POSITION));
    return e == CL_SUCCESS ? 0 : clpe_fail(err, cap, "scatter_rows (into the cache)", e);
}

static int rope_device(decoder *d, size_t layer, size_t n, char *err, size_t cap)
{
    cl_kernel k = d->rope_keys_into_cache;
    cl_uint kv_heads = (cl_uint)d->cfg.kv_heads;
    cl_int e = clSetKernelArg(k, 0, sizeof d->k, &d->k);
    e |= clSetKernelArg(k, 1, sizeof(cl_mem), &d->layers[layer].k_cache);
    e |= clSetKernelArg(k, 2, sizeof d->slots, &d->slots);
    e |= clSetKernelArg(k, 3, sizeof kv_heads, &kv_heads);
    e |= clSetKernelArg(k, 4, sizeof d->rope_words, &d->rope_words);
    e |= clSetKernelArg(k, 5, sizeof d->positions, &d->positions);
    size_t global = n * d->cfg.kv_heads;
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, NULL, 0, NULL,
                                   profile_event(&d->prof, STEP_POSITION));
    if (e != CL_SUCCESS)
        return clpe_fail(err, cap, "rope_keys_into_cache", e);
    return scatter(d, d->v, d->layers[layer].v_cache, n, err, cap);
}

int position_rope_into_cache(decoder *d, size_t layer, size_t n, char *err, size_t cap)
{
    const model_config *m = &d->cfg;
    const layer_buffers *L = &d->layers[layer];
    if (m->arch != ARCH_LLAMA)
        return scatter(d, d->k, L->k_cache, n, err, cap) ||
                       scatter(d, d->v, L->v_cache, n, err, cap)
                   ? -1
                   : 0;
    if (d->rope_mode == ROPE_DEVICE)
        return rope_device(d, layer, n, err, cap);
    const clpe_rope_tensor q = {.buffer = d->q, .heads = m->heads};
    const clpe_rope_tensor k = {.buffer = d->k, .heads = m->kv_heads};
    const clpe_rope_tensor v = {.buffer = d->v, .heads = m->kv_heads};
    const clpe_positions pos = {.source = d->streams > 1 ? CLPE_POSITIONS_STREAMS
                                                         : CLPE_POSITIONS_IDS,
                                .buffer = d->positions};
    clpe_status s;
    if (d->rope_mode == ROPE_KV) {
        const clpe_kv_cache cache = {.key = L->k_cache,
                                     .value = L->v_cache,
                                     .dtype = CLPE_DTYPE_F32,
                                     .num_blocks = d->num_blocks,
                                     .block_size = d->block_size,
                                     .heads = m->kv_heads};
        const clpe_kv_slots slots = {.buffer = d->slots};
        s = clpe_enqueue_rope_kv(d->rope, d->queue, n, &q, NULL, &k, &v, &cache, &slots, &pos,
                                 0, 0, NULL, profile_event(&d->prof, STEP_POSITION));
        return s == CLPE_SUCCESS ? 0 : clpe_fail(err, cap, "clpe_enqueue_rope_kv", s);
    }
    s = clpe_enqueue_rope(d->rope, d->queue, 1, n, &q, &k, &pos, 0, 0, NULL,
                          profile_event(&d->prof, STEP_POSITION));
    if (s != CLPE_SUCCESS)
        return clpe_fail(err, cap, "clpe_enqueue_rope", s);
    return scatter(d, d->k, L->k_cache, n, err, cap) || scatter(d, d->v, L->v_cache, n, err, cap)
               ? -1
               : 0;
}

cl_int position_attention_args(decoder *d, cl_kernel attention, cl_uint first_arg)
{
    cl_int e = clSetKernelArg(attention, first_arg, sizeof d->rope_words, &d->rope_words);
    return e | clSetKernelArg(attention, first_arg + 1, sizeof d->positions, &d->positions);
}

const char *position_rope_description(const decoder *d)
{
    if (d->cfg.arch != ARCH_LLAMA)
        return "none (sinusoidal positions at the input); keys and values copied into the "
               "cache";
    switch (d->rope_mode) {
    case ROPE_DEVICE:
        return "clpe_device.h (keys rotated into the cache, values copied; queries inside "
               "attention, counted there)";
    case ROPE_TWO_PASS:
        return "clpe_enqueue_rope on q and k, then keys and values copied into the cache "
               "(3 commands per layer)";
    default:
        return "clpe_enqueue_rope_kv: q rotated, k rotated and v written into the paged "
               "cache, one clpe call per layer";
    }
}
