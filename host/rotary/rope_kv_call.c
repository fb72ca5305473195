/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_kv_call.c - the one resolver of a rotary-into-KV-cache call, for
 * clpe_enqueue_rope_kv and clpe_host_rope_kv alike: q, q_out, k and v
 * through rope_region.c's tensor resolver (as clpe_enqueue_rope and
 * clpe_host_rope resolve theirs), the cache through its layout resolver,
 * then slots, positions, aliasing and every end in checked arithmetic.
 * The device call adds what only a device has: buffers and their sizes.
 */
#include "rotary/rope_kv.h"

#define INDEX_MAX ((size_t)UINT32_MAX)

static clpe_status begin(const clpe_rope *rope, size_t tokens, uint32_t flags, clpe_kv_call *c)
{
    *c = (clpe_kv_call){.rope = rope, .tokens = tokens};
    if (flags & ~CLPE_ROPE_INVERSE)
        return CLPE_ERROR_INVALID_CONFIG;
    if (tokens >= INDEX_MAX) /* the slot check counts tokens in 32 bits */
        return CLPE_ERROR_TOO_LARGE;
    c->inverse = (flags & CLPE_ROPE_INVERSE) ? 1u : 0u;
    return CLPE_SUCCESS;
}

/* k and v have the cache's heads; q_out, when given, q's. */
static clpe_status check_heads(const clpe_kv_call *c, size_t cache_heads)
{
    if (c->k.r.heads != cache_heads || c->v.r.heads != cache_heads ||
        (c->q_out.r.heads && c->q_out.r.heads != c->q.r.heads))
        return CLPE_ERROR_INVALID_ROPE;
    return CLPE_SUCCESS;
}

/* The layout, the offsets (bytes, device only) and the ends of both cache
 * tensors. */
static clpe_status resolve_cache(clpe_kv_call *c, clpe_dtype dtype, size_t num_blocks,
                                 size_t block_size, size_t heads, size_t head_pitch,
                                 size_t slot_pitch, size_t block_pitch, size_t key_offset,
                                 size_t value_offset)
{
    clpe_status status =
        clpe__resolve_kv_cache(c->rope, dtype, num_blocks, block_size, heads, head_pitch,
                               slot_pitch, block_pitch, &c->cache);
    if (status != CLPE_SUCCESS)
        return status;
    size_t esize = clpe__dtype_size(dtype);
    if (key_offset % esize || value_offset % esize)
        return CLPE_ERROR_MISALIGNED_OFFSET;
    c->key_offset = key_offset / esize;
    c->value_offset = value_offset / esize;
    if (!clpe__add_size(key_offset, c->cache.span_bytes, &c->key_end_bytes) ||
        !clpe__add_size(value_offset, c->cache.span_bytes, &c->value_end_bytes))
        return CLPE_ERROR_TOO_LARGE;
    return CLPE_SUCCESS;
}

static clpe_operand tensor_operand(const clpe_kv_call *c, const clpe_kv_tensor *t,
                                   clpe_access access)
{
    if (!t->r.heads)
        return (clpe_operand){.bytes = clpe__footprint_bytes(0, 0)};
    return (clpe_operand){.buffer = t->r.buffer, .host = t->data,
                          .bytes = clpe__rope_footprint(c->rope, &t->r, 1, c->tokens),
                          .access = access};
}

/* Nothing written shares an element with another argument, through
 * sub-buffers and host memory too (clpe__check_operands): q, k and v heads
 * of one fused buffer are fine, and so are the key and value of each block
 * side by side in one cache buffer. */
static clpe_status check_aliasing(const clpe_kv_call *c)
{
    const clpe_rope *rope = c->rope;
    clpe_operand positions = clpe__positions_operand(&c->positions);
    clpe_operand ops[9] = {
        tensor_operand(c, &c->q, c->q_out.r.heads ? CLPE_ACCESS_READ : CLPE_ACCESS_READ_WRITE),
        tensor_operand(c, &c->q_out, CLPE_ACCESS_WRITE),
        tensor_operand(c, &c->k, CLPE_ACCESS_READ),
        tensor_operand(c, &c->v, CLPE_ACCESS_READ),
        {.buffer = c->key, .host = c->key_data,
         .bytes = clpe__kv_cache_footprint(rope, &c->cache, c->key_offset),
         .access = CLPE_ACCESS_WRITE},
        {.buffer = c->value, .host = c->value_data,
         .bytes = clpe__kv_cache_footprint(rope, &c->cache, c->value_offset),
         .access = CLPE_ACCESS_WRITE},
        positions,
        {.buffer = c->slots, .host = c->tokens ? c->slots_data : NULL,
         .bytes = clpe__footprint_bytes(c->slots_offset * 8, c->tokens * 8),
         .access = CLPE_ACCESS_READ},
        {.buffer = c->report, .bytes = clpe__footprint_bytes(0, c->report ? 8 : 0),
         .access = CLPE_ACCESS_WRITE}};
    return clpe__check_operands(ops, 9);
}

/* One tensor of the call, viewed and resolved as the rotation's q and k are
 * (rope_call.c); a tensor the call does not have (NULL) stays empty. */
static clpe_status resolve_view(const clpe_rope *rope, clpe_status viewed,
                                const clpe_rope_view *v, size_t tokens, clpe_kv_tensor *out)
{
    if (viewed != CLPE_SUCCESS)
        return viewed;
    out->data = v->host;
    clpe_status status = clpe__resolve_rope_region(rope, v->offset, v->heads, v->head_pitch,
                                                   v->row_pitch, v->batch_pitch, 1, tokens,
                                                   &out->r);
    out->r.buffer = v->buffer;
    return status;
}

static clpe_status resolve_tensor(const clpe_rope *rope, const clpe_rope_tensor *t,
                                  size_t tokens, clpe_kv_tensor *out)
{
    clpe_rope_view v;
    return t ? resolve_view(rope, clpe__rope_view_of_tensor(t, &v), &v, tokens, out)
             : CLPE_SUCCESS;
}

static clpe_status resolve_host_tensor(const clpe_rope *rope, const clpe_host_rope_tensor *t,
                                       size_t tokens, clpe_kv_tensor *out)
{
    clpe_rope_view v;
    return t ? resolve_view(rope, clpe__rope_view_of_host(t, &v), &v, tokens, out)
             : CLPE_SUCCESS;
}

/* Every buffer in the rope's context and holding what the call touches. */
static clpe_status check_buffers(const clpe_kv_call *c)
{
    cl_context context = c->rope->shared->context;
    const clpe_kv_tensor *tensors[4] = {&c->q, &c->q_out, &c->k, &c->v};
    clpe_status status = CLPE_SUCCESS;
    for (int j = 0; j < 4 && status == CLPE_SUCCESS; ++j)
        if (tensors[j]->r.heads)
            status = clpe__check_buffer_in(context, tensors[j]->r.buffer,
                                           tensors[j]->r.end_bytes, CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS)
        status = clpe__check_buffer_in(context, c->key, c->key_end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS)
        status = clpe__check_buffer_in(context, c->value, c->value_end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS)
        status = clpe__check_buffer_in(context, c->slots, c->slots_end_bytes,
                                       CLPE_ERROR_INDEX_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS && c->report)
        status = clpe__check_buffer_in(context, c->report, 2 * sizeof(cl_uint),
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    return status;
}

clpe_status clpe__resolve_kv_call(clpe_rope *rope, size_t tokens, const clpe_rope_tensor *q,
                                  const clpe_rope_tensor *q_out, const clpe_rope_tensor *k,
                                  const clpe_rope_tensor *v, const clpe_kv_cache *cache,
                                  const clpe_kv_slots *slots, const clpe_positions *positions,
                                  uint32_t flags, clpe_kv_call *c)
{
    if (!k || !v || !cache || !slots || (q_out && !q))
        return CLPE_ERROR_NULL_POINTER;
    clpe_status status = begin(rope, tokens, flags, c);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(rope, q, tokens, &c->q);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(rope, q_out, tokens, &c->q_out);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(rope, k, tokens, &c->k);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(rope, v, tokens, &c->v);
    if (status == CLPE_SUCCESS)
        status = check_heads(c, cache->heads);
    if (status != CLPE_SUCCESS)
        return status;
    if (!cache->key || !cache->value)
        return CLPE_ERROR_NULL_BUFFER;
    if (!CLPE__RESERVED_ZERO(cache))
        return CLPE_ERROR_RESERVED_FIELD;
    c->key = cache->key;
    c->value = cache->value;
    status = resolve_cache(c, cache->dtype, cache->num_blocks, cache->block_size, cache->heads,
                           cache->head_pitch, cache->slot_pitch, cache->block_pitch,
                           cache->key_offset, cache->value_offset);
    if (status != CLPE_SUCCESS)
        return status;
    if (!slots->buffer)
        return CLPE_ERROR_NULL_BUFFER;
    if (!CLPE__RESERVED_ZERO(slots))
        return CLPE_ERROR_RESERVED_FIELD;
    if (slots->offset % sizeof(int64_t))
        return CLPE_ERROR_MISALIGNED_OFFSET;
    if (!clpe__add_size(slots->offset, tokens * sizeof(int64_t), &c->slots_end_bytes))
        return CLPE_ERROR_TOO_LARGE;
    c->slots = slots->buffer;
    c->slots_offset = slots->offset / sizeof(int64_t);
    c->report = slots->report;
    status = clpe__check_stream_positions(rope->shared->context, positions, rope->streams, 1,
                                          tokens, &c->positions);
    if (status == CLPE_SUCCESS)
        status = check_aliasing(c);
    if (status == CLPE_SUCCESS)
        status = check_buffers(c);
    return status;
}

clpe_status clpe__resolve_host_kv_call(const clpe_rope *rope, const clpe_host_kv_args *a,
                                       clpe_kv_call *c)
{
    size_t tokens = a->tokens;
    const clpe_host_rope_tensor *q = a->q, *q_out = a->q_out, *k = a->k, *v = a->v;
    const clpe_host_kv_cache *cache = a->cache;
    const int64_t *slots = a->slots;
    if (!k || !v || !cache || (q_out && !q) || (!slots && tokens))
        return CLPE_ERROR_NULL_POINTER;
    clpe_status status = begin(rope, tokens, a->flags, c);
    if (status == CLPE_SUCCESS)
        status = resolve_host_tensor(rope, q, tokens, &c->q);
    if (status == CLPE_SUCCESS)
        status = resolve_host_tensor(rope, q_out, tokens, &c->q_out);
    if (status == CLPE_SUCCESS)
        status = resolve_host_tensor(rope, k, tokens, &c->k);
    if (status == CLPE_SUCCESS)
        status = resolve_host_tensor(rope, v, tokens, &c->v);
    if (status == CLPE_SUCCESS)
        status = check_heads(c, cache->heads);
    if (status != CLPE_SUCCESS)
        return status;
    if (!cache->key || !cache->value)
        return CLPE_ERROR_NULL_POINTER;
    if (!CLPE__RESERVED_ZERO(cache))
        return CLPE_ERROR_RESERVED_FIELD;
    c->key_data = cache->key;
    c->value_data = cache->value;
    status = resolve_cache(c, cache->dtype, cache->num_blocks, cache->block_size, cache->heads,
                           cache->head_pitch, cache->slot_pitch, cache->block_pitch, 0, 0);
    if (status != CLPE_SUCCESS)
        return status;
    c->slots_data = slots;
    c->slots_end_bytes = tokens * sizeof(int64_t);
    status = clpe__rope_host_positions(rope, a->source, a->start, a->positions, 1, tokens,
                                       &c->positions);
    if (status == CLPE_SUCCESS)
        status = check_aliasing(c);
    return status;
}
