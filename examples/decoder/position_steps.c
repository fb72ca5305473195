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
        d->rope_varies = rc.scaling == CLPE_ROPE_DYNAMIC || rc.scaling == CLPE_ROPE_LONGROPE;
        if (d->rope_mode == ROPE_DEVICE && (d->rope_varies || m->mrope_streams)) {
            snprintf(err, cap, "--rope device rotates with one object's words at one position "
                               "per token: not for %s (use --rope kv or two-pass)",
                     m->mrope_streams ? "M-RoPE" : "a rotary that changes with the length");
            return -1;
        }
        if (m->mrope_streams) {
            clpe_mrope_config mc = {.rope = rc, .streams = m->mrope_streams};
            memcpy(mc.section, m->mrope_section, sizeof mc.section);
            d->rope = clpe_rope_create_mrope_like(d->input_encoder, &mc, &s);
        } else {
            d->rope = clpe_rope_create_like(d->input_encoder, &rc, &s);
        }
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
    for (size_t i = 0; i < sizeof d->varying / sizeof *d->varying; i++) {
        clpe_rope_release(d->varying[i]);
        d->varying[i] = NULL;
    }
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
    const kernel_arg args[] = {KERNEL_ARG(src), KERNEL_ARG(cache), KERNEL_ARG(d->slots),
                               KERNEL_ARG(width)};
    cl_int e = kernel_set_args(k, 4, args);
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
    const kernel_arg args[] = {KERNEL_ARG(d->k),        KERNEL_ARG(d->layers[layer].k_cache),
                               KERNEL_ARG(d->slots),    KERNEL_ARG(kv_heads),
                               KERNEL_ARG(d->rope_words), KERNEL_ARG(d->positions)};
    cl_int e = kernel_set_args(k, 6, args);
    size_t global = n * d->cfg.kv_heads;
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, NULL, 0, NULL,
                                   profile_event(&d->prof, STEP_POSITION));
    if (e != CL_SUCCESS)
        return clpe_fail(err, cap, "rope_keys_into_cache", e);
    return scatter(d, d->v, d->layers[layer].v_cache, n, err, cap);
}

/* The rotary object for a sequence whose longest position in this call is
 * seq_len - 1: d->rope, or for dynamic and longrope the one of that length
 * (Hugging Face's _dynamic_frequency_update and _longrope_frequency_update:
 * up to max_position_embeddings, resp. original_max_position_embeddings,
 * the frequencies of the config; beyond, dynamic grows its base with the
 * length and longrope takes its long factors). */
static clpe_rope *rope_for(decoder *d, uint64_t seq_len, char *err, size_t cap)
{
    if (!d->rope_varies)
        return d->rope;
    const clpe_rope_config *base = &d->cfg.rope;
    const int beyond = (double)seq_len > base->original_max_position;
    if (!beyond)
        return d->rope;
    const uint64_t key = base->scaling == CLPE_ROPE_DYNAMIC ? seq_len : 1;
    const size_t slots = sizeof d->varying / sizeof *d->varying;
    for (size_t i = 0; i < slots; i++)
        if (d->varying[i] && d->varying_key[i] == key)
            return d->varying[i];
    clpe_rope_config rc = *base;
    rc.pairing = CLPE_ROPE_HALF_SPLIT;
    rc.dtype = CLPE_DTYPE_F32;
    rc.seq_len = seq_len;
    clpe_status s;
    clpe_rope *r = clpe_rope_create_like(d->input_encoder, &rc, &s);
    if (!r) {
        clpe_fail(err, cap, "clpe_rope_create_like (a sequence length's rotary)", s);
        return NULL;
    }
    const size_t i = d->varying_next++ % slots;
    clpe_rope_release(d->varying[i]); /* work already enqueued on it stays valid */
    d->varying[i] = r;
    d->varying_key[i] = key;
    return r;
}

/* One rotary call over tokens first .. first+n-1 of the batch: ROPE_KV's
 * clpe_enqueue_rope_kv, q and the cache (ROPE_DEVICE with an FP8 cache:
 * the same call without q, which attention rotates), or two-pass's
 * clpe_enqueue_rope on q and k. */
static int rope_call(decoder *d, clpe_rope *rope, size_t layer, size_t first, size_t n,
                     char *err, size_t cap)
{
    const model_config *m = &d->cfg;
    const layer_buffers *L = &d->layers[layer];
    const size_t F = sizeof(float), QW = m->heads * m->head_dim * F,
                 KVW = m->kv_heads * m->head_dim * F;
    const clpe_rope_tensor q = {.buffer = d->q, .offset = first * QW, .heads = m->heads};
    const clpe_rope_tensor k = {.buffer = d->k, .offset = first * KVW, .heads = m->kv_heads};
    const clpe_rope_tensor v = {.buffer = d->v, .offset = first * KVW, .heads = m->kv_heads};
    /* a sub-range only for a rotary that changes with the length, which has
     * one stream: the streams' layout [streams, n] takes the whole call */
    const clpe_positions pos = {.source = d->streams > 1 ? CLPE_POSITIONS_STREAMS
                                                         : CLPE_POSITIONS_IDS,
                                .buffer = d->positions,
                                .offset = first * sizeof(int64_t)};
    clpe_status s;
    if (d->rope_mode != ROPE_TWO_PASS) {
        const clpe_kv_cache cache = {.key = L->k_cache,
                                     .value = L->v_cache,
                                     .dtype = d->cache_dtype,
                                     .num_blocks = d->num_blocks,
                                     .block_size = d->block_size,
                                     .heads = m->kv_heads,
                                     .key_scale = d->key_scale,
                                     .value_scale = d->value_scale};
        const clpe_kv_slots slots = {.buffer = d->slots, .offset = first * sizeof(int64_t)};
        s = clpe_enqueue_rope_kv(rope, d->queue, n, d->rope_mode == ROPE_KV ? &q : NULL, NULL,
                                 &k, &v, &cache, &slots, &pos, 0, 0, NULL,
                                 profile_event(&d->prof, STEP_POSITION));
        return s == CLPE_SUCCESS ? 0 : clpe_fail(err, cap, "clpe_enqueue_rope_kv", s);
    }
    s = clpe_enqueue_rope(rope, d->queue, 1, n, &q, &k, &pos, 0, 0, NULL,
                          profile_event(&d->prof, STEP_POSITION));
    return s == CLPE_SUCCESS ? 0 : clpe_fail(err, cap, "clpe_enqueue_rope", s);
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
    if (d->rope_mode == ROPE_DEVICE && !decoder_cache_fp8(d))
        return rope_device(d, layer, n, err, cap);
    if (!d->rope_varies) {
        if (rope_call(d, d->rope, layer, 0, n, err, cap))
            return -1;
    } else {
        /* one call per run of a sequence's tokens (they are consecutive),
         * each with its length's object */
        const forward_batch *b = d->batch;
        for (size_t first = 0, end; first < n; first = end) {
            int64_t top = b->positions[first];
            for (end = first + 1; end < n && b->table_offset[end] == b->table_offset[first];
                 end++)
                if (b->positions[end] > top)
                    top = b->positions[end];
            clpe_rope *rope = rope_for(d, top >= 0 ? (uint64_t)top + 1 : 0, err, cap);
            if (!rope || rope_call(d, rope, layer, first, end - first, err, cap))
                return -1;
        }
    }
    if (d->rope_mode != ROPE_TWO_PASS)
        return 0;
    return scatter(d, d->k, L->k_cache, n, err, cap) || scatter(d, d->v, L->v_cache, n, err, cap)
               ? -1
               : 0;
}

size_t position_attention_args(decoder *d, kernel_arg *args)
{
    args[0] = KERNEL_ARG(d->rope_words);
    args[1] = KERNEL_ARG(d->positions);
    return 2;
}

const char *position_rope_description(const decoder *d)
{
    if (d->cfg.arch != ARCH_LLAMA)
        return "none (sinusoidal positions at the input); keys and values copied into the "
               "cache";
    switch (d->rope_mode) {
    case ROPE_DEVICE:
        if (decoder_cache_fp8(d))
            return "clpe_enqueue_rope_kv without q: k rotated and v written into the FP8 "
                   "cache, one clpe call per layer; queries rotated inside attention with "
                   "clpe_device.h, counted there";
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
