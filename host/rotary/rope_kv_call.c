/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_kv_call.c - the one resolver of a rotary-into-KV-cache call, for
 * clpe_enqueue_rope_kv and clpe_host_rope_kv alike: q, q_out, k and v
 * through rope_region.c's tensor resolver (as clpe_enqueue_rope and
 * clpe_host_rope resolve theirs), the cache through its layout resolver,
 * then slots, positions, aliasing and every end in checked arithmetic.
 * Each entry point gathers what it was given into a kv_given, which one
 * function resolves for both; each then adds its slots and positions (a
 * buffer or host memory), and the device call what only a device has:
 * buffers and their sizes.
 */
#include "rotary/rope_kv.h"

#include <float.h>

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

/* An FP8 cache's scales positive and finite; another cache's 0 or 1 (no
 * scaling). Both kept as divisors. */
static clpe_status resolve_scales(clpe_kv_call *c, float key_scale, float value_scale)
{
    const float scales[2] = {key_scale, value_scale};
    for (int j = 0; j < 2; ++j) {
        float s = scales[j];
        bool ok = clpe__dtype_is_fp8(c->cache.dtype) ? s > 0.0f && s <= FLT_MAX
                                                     : s == 0.0f || s == 1.0f;
        if (!ok)
            return CLPE_ERROR_INVALID_SCALE;
    }
    bool fp8 = clpe__dtype_is_fp8(c->cache.dtype);
    c->key_scale = fp8 ? key_scale : 1.0f;
    c->value_scale = fp8 ? value_scale : 1.0f;
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
 * (rope_call.c). */
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

/* What the device call and the host call name alike, taken from their
 * arguments: the tensors as views (and how viewing each went), the cache's
 * layout and scales. resolve_given checks them, in one order, for both. */
enum { KV_Q, KV_Q_OUT, KV_K, KV_V, KV_TENSORS };
typedef struct kv_given {
    size_t tokens;
    uint32_t flags;
    bool present[KV_TENSORS]; /* NULL: the call has no such tensor */
    clpe_status viewed[KV_TENSORS];
    clpe_rope_view view[KV_TENSORS];
    bool cache_memory;          /* the cache's key and value are there ... */
    clpe_status missing_memory; /* ... else this status */
    bool reserved_zero;
    clpe_dtype dtype;
    size_t num_blocks, block_size, heads, head_pitch, slot_pitch, block_pitch;
    size_t key_offset, value_offset; /* bytes (the device's; 0 on the host) */
    float key_scale, value_scale;
} kv_given;

/* The fields clpe_kv_cache and clpe_host_kv_cache share, by name. */
#define KV_GIVEN_CACHE(g, cache)                                                               \
    do {                                                                                       \
        (g)->cache_memory = (cache)->key && (cache)->value;                                    \
        (g)->reserved_zero = CLPE__RESERVED_ZERO(cache);                                       \
        (g)->dtype = (cache)->dtype;                                                           \
        (g)->num_blocks = (cache)->num_blocks;                                                 \
        (g)->block_size = (cache)->block_size;                                                 \
        (g)->heads = (cache)->heads;                                                           \
        (g)->head_pitch = (cache)->head_pitch;                                                 \
        (g)->slot_pitch = (cache)->slot_pitch;                                                 \
        (g)->block_pitch = (cache)->block_pitch;                                               \
        (g)->key_scale = (cache)->key_scale;                                                   \
        (g)->value_scale = (cache)->value_scale;                                               \
    } while (0)

/* The flags, the four tensors, heads, the cache's memory and reserved
 * words, its layout and its scales, in that order. */
static clpe_status resolve_given(const clpe_rope *rope, const kv_given *g, clpe_kv_call *c)
{
    clpe_status status = begin(rope, g->tokens, g->flags, c);
    clpe_kv_tensor *out[KV_TENSORS] = {&c->q, &c->q_out, &c->k, &c->v};
    for (int j = 0; j < KV_TENSORS && status == CLPE_SUCCESS; ++j)
        if (g->present[j])
            status = resolve_view(rope, g->viewed[j], &g->view[j], g->tokens, out[j]);
    if (status == CLPE_SUCCESS)
        status = check_heads(c, g->heads);
    if (status != CLPE_SUCCESS)
        return status;
    if (!g->cache_memory)
        return g->missing_memory;
    if (!g->reserved_zero)
        return CLPE_ERROR_RESERVED_FIELD;
    status = resolve_cache(c, g->dtype, g->num_blocks, g->block_size, g->heads, g->head_pitch,
                           g->slot_pitch, g->block_pitch, g->key_offset, g->value_offset);
    if (status == CLPE_SUCCESS)
        status = resolve_scales(c, g->key_scale, g->value_scale);
    return status;
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
    kv_given g = {.tokens = tokens, .flags = flags, .missing_memory = CLPE_ERROR_NULL_BUFFER,
                  .key_offset = cache->key_offset, .value_offset = cache->value_offset};
    const clpe_rope_tensor *tensors[KV_TENSORS] = {q, q_out, k, v};
    for (int j = 0; j < KV_TENSORS; ++j)
        if ((g.present[j] = tensors[j] != NULL))
            g.viewed[j] = clpe__rope_view_of_tensor(tensors[j], &g.view[j]);
    KV_GIVEN_CACHE(&g, cache);
    clpe_status status = resolve_given(rope, &g, c);
    if (status != CLPE_SUCCESS)
        return status;
    c->key = cache->key;
    c->value = cache->value;
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
    const clpe_host_kv_cache *cache = a->cache;
    if (!a->k || !a->v || !cache || (a->q_out && !a->q) || (!a->slots && a->tokens))
        return CLPE_ERROR_NULL_POINTER;
    kv_given g = {.tokens = a->tokens, .flags = a->flags,
                  .missing_memory = CLPE_ERROR_NULL_POINTER};
    const clpe_host_rope_tensor *tensors[KV_TENSORS] = {a->q, a->q_out, a->k, a->v};
    for (int j = 0; j < KV_TENSORS; ++j)
        if ((g.present[j] = tensors[j] != NULL))
            g.viewed[j] = clpe__rope_view_of_host(tensors[j], &g.view[j]);
    KV_GIVEN_CACHE(&g, cache);
    clpe_status status = resolve_given(rope, &g, c);
    if (status != CLPE_SUCCESS)
        return status;
    c->key_data = cache->key;
    c->value_data = cache->value;
    c->slots_data = a->slots;
    c->slots_end_bytes = a->tokens * sizeof(int64_t);
    status = clpe__rope_host_positions(rope, a->source, a->start, a->positions, 1, a->tokens,
                                       &c->positions);
    if (status == CLPE_SUCCESS)
        status = check_aliasing(c);
    return status;
}
