/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_kv_emulate.c - the host emulation of rotary into a KV cache
 * (clpe_host_rope_kv): the arithmetic of rope_emulate.c, then each value
 * stored as kernels/clpe_rope_kv_body.cl stores it.
 */
#include "rotary/rotary.h"

#include <stdlib.h>
#include <string.h>

/* A host tensor [tokens, heads, head_dim] with its defaults resolved. */
typedef struct kv_host_region {
    char *data;
    size_t heads, head_pitch, row_pitch;
} kv_host_region;

static clpe_status resolve_tensor(const clpe_rope *rope, const clpe_host_rope_tensor *t,
                                  size_t tokens, kv_host_region *r)
{
    size_t head_dim = rope->cfg.head_dim;
    if (!t->data)
        return CLPE_ERROR_NULL_POINTER;
    if (!CLPE__RESERVED_ZERO(t))
        return CLPE_ERROR_RESERVED_FIELD;
    if (t->heads == 0)
        return CLPE_ERROR_INVALID_ROPE;
    r->data = t->data;
    r->heads = t->heads;
    r->head_pitch = t->head_pitch ? t->head_pitch : head_dim;
    if (r->head_pitch < head_dim && t->heads > 1)
        return CLPE_ERROR_INVALID_PITCH;
    size_t extent = 0, last = 0;
    if (!clpe__mul_size(t->heads - 1, r->head_pitch, &extent) ||
        !clpe__add_size(extent, head_dim, &extent))
        return CLPE_ERROR_TOO_LARGE;
    if (t->row_pitch) {
        r->row_pitch = t->row_pitch;
    } else if (!clpe__mul_size(t->heads, r->head_pitch, &r->row_pitch)) {
        return CLPE_ERROR_TOO_LARGE;
    }
    if (tokens > 1 && r->row_pitch < extent)
        return CLPE_ERROR_INVALID_PITCH;
    /* the last token's elements must be addressable */
    if (tokens && (!clpe__mul_size(tokens - 1, r->row_pitch, &last) ||
                   !clpe__add_size(last, extent, &last) ||
                   !clpe__mul_size(last, clpe__dtype_size(rope->cfg.dtype), &last)))
        return CLPE_ERROR_TOO_LARGE;
    return CLPE_SUCCESS;
}

/* A host cache: both tensors and their layout. */
typedef struct kv_host_cache {
    char *key, *value;
    clpe_kv_cache_layout l;
} kv_host_cache;

static clpe_status resolve_cache(const clpe_rope *rope, const clpe_host_kv_cache *c,
                                 kv_host_cache *r)
{
    if (!c->key || !c->value)
        return CLPE_ERROR_NULL_POINTER;
    if (!CLPE__RESERVED_ZERO(c))
        return CLPE_ERROR_RESERVED_FIELD;
    r->key = c->key;
    r->value = c->value;
    return clpe__resolve_kv_cache(rope, c->dtype, c->num_blocks, c->block_size, c->heads,
                                  c->head_pitch, c->slot_pitch, c->block_pitch, &r->l);
}

static clpe_operand tensor_operand(const kv_host_region *r, size_t tokens, size_t head_dim,
                                   size_t esize, clpe_access access)
{
    if (!r)
        return (clpe_operand){.bytes = clpe__footprint_bytes(0, 0)};
    clpe_stride dims[2] = {{r->heads, r->head_pitch}, {tokens, r->row_pitch}};
    return (clpe_operand){.host = r->data,
                          .bytes = clpe__strided_footprint(0, head_dim, dims, 2, esize),
                          .access = access};
}

static clpe_operand cache_operand(const clpe_rope *rope, const kv_host_cache *kc, char *data)
{
    return (clpe_operand){.host = data,
                          .bytes = clpe__kv_cache_footprint(rope, &kc->l, 0),
                          .access = CLPE_ACCESS_WRITE};
}

/* The device call's rule (rope_kv_enqueue.c): nothing written shares an
 * element with another argument. */
static clpe_status check_aliasing(const clpe_rope *rope, size_t tokens, const kv_host_region *q,
                                  const kv_host_region *q_out, const kv_host_region *k,
                                  const kv_host_region *v, const kv_host_cache *kc,
                                  const int64_t *slots, clpe_position_source source,
                                  const int64_t *positions)
{
    size_t head_dim = rope->cfg.head_dim, esize = clpe__dtype_size(rope->cfg.dtype);
    size_t npos = source == CLPE_POSITIONS_IDS             ? tokens
                  : source == CLPE_POSITIONS_PER_SEQUENCE ? 1
                                                           : 0;
    clpe_operand ops[8] = {
        tensor_operand(q, tokens, head_dim, esize,
                       q_out ? CLPE_ACCESS_READ : CLPE_ACCESS_READ_WRITE),
        tensor_operand(q_out, tokens, head_dim, esize, CLPE_ACCESS_WRITE),
        tensor_operand(k, tokens, head_dim, esize, CLPE_ACCESS_READ),
        tensor_operand(v, tokens, head_dim, esize, CLPE_ACCESS_READ),
        cache_operand(rope, kc, kc->key),
        cache_operand(rope, kc, kc->value),
        {.host = npos ? positions : NULL, .bytes = clpe__footprint_bytes(0, npos * sizeof(int64_t)),
         .access = CLPE_ACCESS_READ},
        {.host = tokens ? slots : NULL, .bytes = clpe__footprint_bytes(0, tokens * sizeof(int64_t)),
         .access = CLPE_ACCESS_READ}};
    return clpe__check_operands(ops, 8);
}

static int compare_slots(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Every slot -1 or in [0, capacity), none twice. */
static clpe_status check_slots(const int64_t *slots, size_t tokens, size_t capacity)
{
    for (size_t t = 0; t < tokens; ++t)
        if (slots[t] < -1 || (slots[t] >= 0 && (uint64_t)slots[t] >= capacity))
            return CLPE_ERROR_INVALID_SLOTS;
    if (tokens < 2)
        return CLPE_SUCCESS;
    int64_t *sorted = malloc(tokens * sizeof *sorted);
    if (!sorted)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    memcpy(sorted, slots, tokens * sizeof *sorted);
    qsort(sorted, tokens, sizeof *sorted, compare_slots);
    clpe_status status = CLPE_SUCCESS;
    for (size_t t = 1; t < tokens; ++t)
        if (sorted[t] >= 0 && sorted[t] == sorted[t - 1])
            status = CLPE_ERROR_INVALID_SLOTS;
    free(sorted);
    return status;
}

/* Element j of a cache entry gets element j of a head: its bits where the
 * types agree, else converted (float32 to half or bfloat16). */
static void copy_elem(clpe_dtype to, char *entry, clpe_dtype from, const char *head, size_t j)
{
    if (to == from) {
        size_t esize = clpe__dtype_size(to);
        memcpy(entry + j * esize, head + j * esize, esize);
    } else {
        clpe__store_elem(to, entry, j, clpe__load_elem(from, head, j));
    }
}

clpe_status clpe_host_rope_kv(const clpe_rope *rope, size_t tokens, const clpe_host_rope_tensor *q,
                              const clpe_host_rope_tensor *q_out, const clpe_host_rope_tensor *k,
                              const clpe_host_rope_tensor *v, const clpe_host_kv_cache *cache,
                              const int64_t *slots, clpe_position_source source, int64_t start,
                              const int64_t *host_positions, uint32_t flags)
{
    kv_host_region rq = {0}, rqo = {0}, rk, rv;
    kv_host_cache kc;
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    if (!k || !v || !cache || (q_out && !q) || (!slots && tokens))
        return CLPE_ERROR_NULL_POINTER;
    if (flags & ~CLPE_ROPE_INVERSE)
        return CLPE_ERROR_INVALID_CONFIG;
    clpe_status status = CLPE_SUCCESS;
    if (q)
        status = resolve_tensor(rope, q, tokens, &rq);
    if (status == CLPE_SUCCESS && q_out)
        status = resolve_tensor(rope, q_out, tokens, &rqo);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(rope, k, tokens, &rk);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(rope, v, tokens, &rv);
    if (status != CLPE_SUCCESS)
        return status;
    if (rk.heads != cache->heads || rv.heads != cache->heads || (q_out && rqo.heads != rq.heads))
        return CLPE_ERROR_INVALID_ROPE;
    status = resolve_cache(rope, cache, &kc);
    if (status != CLPE_SUCCESS)
        return status;
    if ((unsigned)source > CLPE_POSITIONS_IDS)
        return CLPE_ERROR_INVALID_POSITIONS;
    if (source != CLPE_POSITIONS_START && !host_positions && tokens)
        return CLPE_ERROR_NULL_POINTER;
    if (source == CLPE_POSITIONS_START)
        status = clpe__check_start(start, tokens);
    if (status == CLPE_SUCCESS)
        status = check_aliasing(rope, tokens, q ? &rq : NULL, q_out ? &rqo : NULL, &rk, &rv, &kc,
                                slots, source, host_positions);
    if (status == CLPE_SUCCESS)
        status = check_slots(slots, tokens, kc.l.capacity);
    if (status != CLPE_SUCCESS)
        return status;

    clpe_dtype dtype = rope->cfg.dtype;
    size_t esize = clpe__dtype_size(dtype), cache_esize = clpe__dtype_size(kc.l.dtype);
    size_t head_dim = rope->cfg.head_dim, rotary_dim = rope->rotary_dim;
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    size_t partner = half_split ? rope->n_pairs : 1, stride = half_split ? 1 : 2;
    double sign = (flags & CLPE_ROPE_INVERSE) ? -1.0 : 1.0;
    const kv_host_region *qdst = q_out ? &rqo : &rq;
    for (size_t s = 0; s < tokens; ++s) {
        uint64_t p = source == CLPE_POSITIONS_START          ? (uint64_t)start + s
                     : source == CLPE_POSITIONS_PER_SEQUENCE ? (uint64_t)host_positions[0] + s
                                                             : (uint64_t)host_positions[s];
        int64_t slot = slots[s];
        size_t entry = 0;
        if (slot >= 0)
            entry = ((size_t)slot / kc.l.block_size) * kc.l.block_pitch +
                    ((size_t)slot % kc.l.block_size) * kc.l.slot_pitch;
        for (uint32_t i = 0; i < rope->n_pairs; ++i) {
            double c, sn, ra, rb;
            clpe__rope_cos_sin(rope, p, i, sign, &c, &sn);
            size_t ka = i * stride, kb = ka + partner;
            for (size_t h = 0; q && h < rq.heads; ++h) {
                const char *src = rq.data + (s * rq.row_pitch + h * rq.head_pitch) * esize;
                char *dst = qdst->data + (s * qdst->row_pitch + h * qdst->head_pitch) * esize;
                clpe__rope_rotate(dtype, clpe__load_elem(dtype, src, ka),
                                  clpe__load_elem(dtype, src, kb), c, sn, &ra, &rb);
                clpe__store_elem(dtype, dst, ka, ra);
                clpe__store_elem(dtype, dst, kb, rb);
            }
            for (size_t h = 0; slot >= 0 && h < rk.heads; ++h) {
                const char *src = rk.data + (s * rk.row_pitch + h * rk.head_pitch) * esize;
                char *dst = kc.key + (entry + h * kc.l.head_pitch) * cache_esize;
                clpe__rope_rotate(dtype, clpe__load_elem(dtype, src, ka),
                                  clpe__load_elem(dtype, src, kb), c, sn, &ra, &rb);
                /* a float32 result is exact in ra: converting it once is
                 * what storing it and then converting the copy gives */
                clpe__store_elem(kc.l.dtype, dst, ka, ra);
                clpe__store_elem(kc.l.dtype, dst, kb, rb);
            }
        }
        for (size_t h = 0; slot >= 0 && h < rk.heads; ++h) {
            const char *ksrc = rk.data + (s * rk.row_pitch + h * rk.head_pitch) * esize;
            const char *vsrc = rv.data + (s * rv.row_pitch + h * rv.head_pitch) * esize;
            char *kdst = kc.key + (entry + h * kc.l.head_pitch) * cache_esize;
            char *vdst = kc.value + (entry + h * kc.l.head_pitch) * cache_esize;
            for (size_t j = 0; j < head_dim; ++j)
                copy_elem(kc.l.dtype, vdst, dtype, vsrc, j);
            for (size_t j = rotary_dim; j < head_dim; ++j)
                copy_elem(kc.l.dtype, kdst, dtype, ksrc, j);
        }
        for (size_t h = 0; q_out && h < rq.heads; ++h) {
            const char *src = rq.data + (s * rq.row_pitch + h * rq.head_pitch) * esize;
            char *dst = rqo.data + (s * rqo.row_pitch + h * rqo.head_pitch) * esize;
            memcpy(dst + rotary_dim * esize, src + rotary_dim * esize,
                   (head_dim - rotary_dim) * esize);
        }
    }
    return CLPE_SUCCESS;
}
