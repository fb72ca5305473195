/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_kv_emulate.c - the host emulation of rotary into a KV cache
 * (clpe_host_rope_kv): the arithmetic of rope_emulate.c, then each value
 * stored as kernels/clpe_rope_kv.cl stores it; the call resolved by
 * rope_kv_call.c, as the device call is.
 */
#include "rotary/rope_kv.h"

#include <stdlib.h>
#include <string.h>

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

/* A value of the storage type `from` (v, which it holds exactly) into
 * element j of an FP8 cache entry: v / scale in float32, then FP8. */
static void put_fp8(clpe_dtype to, char *entry, size_t j, double v, float scale)
{
    ((uint8_t *)entry)[j] = clpe__fp8_from_float(to, clpe__fp8_quotient((float)v, scale));
}

/* A rotated value (the arithmetic type) into element j of a cache entry:
 * stored as the cache's type; into an FP8 cache, first rounded to the
 * storage type as rotation stores it. */
static void put_rotated(clpe_dtype to, char *entry, size_t j, clpe_dtype from, double v,
                        float scale)
{
    if (clpe__dtype_is_fp8(to)) {
        unsigned char stored[8];
        clpe__store_elem(from, stored, 0, v);
        put_fp8(to, entry, j, clpe__load_elem(from, stored, 0), scale);
    } else {
        /* a float32 result is exact in v: converting it once is what
         * storing it and then converting the copy gives */
        clpe__store_elem(to, entry, j, v);
    }
}

/* Element j of a cache entry gets element j of a head: its bits where the
 * types agree, else converted (float32 to half or bfloat16; any to FP8). */
static void copy_elem(clpe_dtype to, char *entry, clpe_dtype from, const char *head, size_t j,
                      float scale)
{
    if (clpe__dtype_is_fp8(to)) {
        put_fp8(to, entry, j, clpe__load_elem(from, head, j), scale);
    } else if (to == from) {
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
    clpe_kv_call call;
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    const clpe_host_kv_args args = {.tokens = tokens, .q = q, .q_out = q_out, .k = k, .v = v,
                                    .cache = cache, .slots = slots, .source = source,
                                    .start = start, .positions = host_positions, .flags = flags};
    clpe_status status = clpe__resolve_host_kv_call(rope, &args, &call);
    if (status == CLPE_SUCCESS)
        status = check_slots(slots, tokens, call.cache.capacity);
    if (status != CLPE_SUCCESS)
        return status;

    const clpe_kv_cache_layout *l = &call.cache;
    const clpe_rope_region *rq = &call.q.r, *rqo = &call.q_out.r, *rk = &call.k.r,
                           *rv = &call.v.r;
    char *qdata = call.q.data, *qodata = call.q_out.data, *kdata = call.k.data,
         *vdata = call.v.data;
    clpe_dtype dtype = rope->cfg.dtype;
    size_t esize = clpe__dtype_size(dtype), cache_esize = clpe__dtype_size(l->dtype);
    size_t head_dim = rope->cfg.head_dim, rotary_dim = rope->rotary_dim;
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    size_t partner = half_split ? rope->n_pairs : 1, stride = half_split ? 1 : 2;
    double sign = (flags & CLPE_ROPE_INVERSE) ? -1.0 : 1.0;
    const clpe_rope_region *qdst = q_out ? rqo : rq;
    char *qdst_data = q_out ? qodata : qdata;
    for (size_t s = 0; s < tokens; ++s) {
        int64_t slot = slots[s];
        size_t entry = 0;
        if (slot >= 0)
            entry = ((size_t)slot / l->block_size) * l->block_pitch +
                    ((size_t)slot % l->block_size) * l->slot_pitch;
        for (uint32_t i = 0; i < rope->n_pairs; ++i) {
            double c, sn, ra, rb;
            uint64_t p = clpe__host_position(&call.positions, tokens, 0, s,
                                             clpe__rope_stream(rope, i));
            clpe__rope_cos_sin(rope, p, i, sign, &c, &sn);
            size_t ka = i * stride, kb = ka + partner;
            for (size_t h = 0; q && h < rq->heads; ++h) {
                const char *src = qdata + (s * rq->row_pitch + h * rq->head_pitch) * esize;
                char *dst = qdst_data + (s * qdst->row_pitch + h * qdst->head_pitch) * esize;
                clpe__rope_rotate(dtype, clpe__load_elem(dtype, src, ka),
                                  clpe__load_elem(dtype, src, kb), c, sn, &ra, &rb);
                clpe__store_elem(dtype, dst, ka, ra);
                clpe__store_elem(dtype, dst, kb, rb);
            }
            for (size_t h = 0; slot >= 0 && h < rk->heads; ++h) {
                const char *src = kdata + (s * rk->row_pitch + h * rk->head_pitch) * esize;
                char *dst = call.key_data + (entry + h * l->head_pitch) * cache_esize;
                clpe__rope_rotate(dtype, clpe__load_elem(dtype, src, ka),
                                  clpe__load_elem(dtype, src, kb), c, sn, &ra, &rb);
                put_rotated(l->dtype, dst, ka, dtype, ra, call.key_scale);
                put_rotated(l->dtype, dst, kb, dtype, rb, call.key_scale);
            }
        }
        for (size_t h = 0; slot >= 0 && h < rk->heads; ++h) {
            const char *ksrc = kdata + (s * rk->row_pitch + h * rk->head_pitch) * esize;
            const char *vsrc = vdata + (s * rv->row_pitch + h * rv->head_pitch) * esize;
            char *kdst = call.key_data + (entry + h * l->head_pitch) * cache_esize;
            char *vdst = call.value_data + (entry + h * l->head_pitch) * cache_esize;
            for (size_t j = 0; j < head_dim; ++j)
                copy_elem(l->dtype, vdst, dtype, vsrc, j, call.value_scale);
            for (size_t j = rotary_dim; j < head_dim; ++j)
                copy_elem(l->dtype, kdst, dtype, ksrc, j, call.key_scale);
        }
        for (size_t h = 0; q_out && h < rq->heads; ++h) {
            const char *src = qdata + (s * rq->row_pitch + h * rq->head_pitch) * esize;
            char *dst = qodata + (s * rqo->row_pitch + h * rqo->head_pitch) * esize;
            memcpy(dst + rotary_dim * esize, src + rotary_dim * esize,
                   (head_dim - rotary_dim) * esize);
        }
    }
    return CLPE_SUCCESS;
}
