/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_region.c - the one resolver of rotary query and key tensors, and of
 * the KV caches rotary writes into, for the enqueue calls and the host
 * emulations alike: defaults, pitches, heads, tokens, sequences, slots and
 * blocks that must not meet, sizes, and the bytes touched.
 */
#include "rotary/rotary.h"

#define INDEX_MAX ((size_t)UINT32_MAX)

/* One of (count, pitch) nested dimensions; sorted by pitch, each must start
 * past the end of the one inside it, so no two elements coincide. *span:
 * the elements from the first past the last. */
typedef struct dim {
    size_t count, pitch;
} dim;

static clpe_status check_no_overlap(dim dims[3], size_t head_dim, size_t *span)
{
    /* insertion sort by pitch (three entries) */
    for (int a = 1; a < 3; ++a)
        for (int b = a; b > 0 && dims[b].pitch < dims[b - 1].pitch; --b) {
            dim t = dims[b];
            dims[b] = dims[b - 1];
            dims[b - 1] = t;
        }
    size_t extent = head_dim;
    for (int j = 0; j < 3; ++j) {
        if (dims[j].count <= 1)
            continue;
        if (dims[j].pitch < extent)
            return CLPE_ERROR_INVALID_PITCH;
        size_t step;
        if (!clpe__mul_size(dims[j].count - 1, dims[j].pitch, &step) ||
            !clpe__add_size(step, extent, &extent))
            return CLPE_ERROR_TOO_LARGE;
    }
    *span = extent;
    return CLPE_SUCCESS;
}

static clpe_status resolve(size_t head_dim, size_t esize, size_t offset_bytes, size_t heads,
                           size_t head_pitch, size_t row_pitch, size_t batch_pitch, size_t batch,
                           size_t seq, clpe_rope_region *r)
{
    if (heads == 0)
        return CLPE_ERROR_INVALID_ROPE;
    if (offset_bytes % esize)
        return CLPE_ERROR_MISALIGNED_OFFSET;
    r->heads = heads;
    r->offset = offset_bytes / esize;
    r->head_pitch = head_pitch ? head_pitch : head_dim;
    if (r->head_pitch < head_dim && heads > 1)
        return CLPE_ERROR_INVALID_PITCH;
    if (row_pitch) {
        r->row_pitch = row_pitch;
    } else if (!clpe__mul_size(heads, r->head_pitch, &r->row_pitch)) {
        return CLPE_ERROR_TOO_LARGE;
    }
    if (batch_pitch) {
        r->batch_pitch = batch_pitch;
    } else if (!clpe__mul_size(seq, r->row_pitch, &r->batch_pitch)) {
        return CLPE_ERROR_TOO_LARGE;
    }
    dim dims[3] = {{heads, r->head_pitch}, {seq, r->row_pitch}, {batch, r->batch_pitch}};
    size_t span = 0;
    clpe_status status = check_no_overlap(dims, head_dim, &span);
    if (status != CLPE_SUCCESS)
        return status;
    if (!clpe__mul_size(heads - 1, r->head_pitch, &r->extent) ||
        !clpe__add_size(r->extent, head_dim, &r->extent))
        return CLPE_ERROR_TOO_LARGE;
    if (r->extent > INDEX_MAX) /* the kernels step heads in 32 bits */
        return CLPE_ERROR_TOO_LARGE;
    r->begin_bytes = r->offset * esize;
    r->end_bytes = 0;
    if (batch && seq) {
        size_t last = 0, t1 = 0;
        if (!clpe__mul_size(batch - 1, r->batch_pitch, &last) ||
            !clpe__mul_size(seq - 1, r->row_pitch, &t1) || !clpe__add_size(last, t1, &last) ||
            !clpe__add_size(last, r->extent, &last) || !clpe__add_size(last, r->offset, &last) ||
            !clpe__mul_size(last, esize, &r->end_bytes))
            return CLPE_ERROR_TOO_LARGE;
    }
    return CLPE_SUCCESS;
}

clpe_status clpe__resolve_rope_region(const clpe_rope *rope, size_t offset_bytes, size_t heads,
                                      size_t head_pitch, size_t row_pitch, size_t batch_pitch,
                                      size_t batch, size_t seq, clpe_rope_region *r)
{
    r->buffer = NULL;
    return resolve(rope->cfg.head_dim, clpe__dtype_size(rope->cfg.dtype), offset_bytes, heads,
                   head_pitch, row_pitch, batch_pitch, batch, seq, r);
}

clpe_footprint clpe__rope_footprint(const clpe_rope *rope, const clpe_rope_region *r,
                                    size_t batch, size_t seq)
{
    return clpe__rope_tensor_footprint(rope->cfg.head_dim, clpe__dtype_size(rope->cfg.dtype), r,
                                       batch, seq);
}

clpe_footprint clpe__rope_tensor_footprint(size_t head_dim, size_t esize,
                                           const clpe_rope_region *r, size_t batch, size_t seq)
{
    /* every pitch of a dimension of two or more entries, times esize, is
     * below end_bytes, which fit */
    clpe_footprint f = clpe__footprint_bytes(r->offset * esize, head_dim * esize);
    const size_t counts[3] = {r->heads, seq, batch};
    const size_t pitches[3] = {r->head_pitch, r->row_pitch, r->batch_pitch};
    f.ndims = 3;
    for (int j = 0; j < 3; ++j)
        f.dims[j] = (clpe_stride){counts[j], counts[j] > 1 ? pitches[j] * esize : 0};
    return f;
}

clpe_status clpe__resolve_kv_cache(const clpe_rope *rope, clpe_dtype dtype, size_t num_blocks,
                                   size_t block_size, size_t heads, size_t head_pitch,
                                   size_t slot_pitch, size_t block_pitch, clpe_kv_cache_layout *l)
{
    size_t head_dim = rope->cfg.head_dim;
    if ((unsigned)dtype > CLPE_DTYPE_F64)
        return CLPE_ERROR_INVALID_CONFIG;
    bool narrowed = rope->cfg.dtype == CLPE_DTYPE_F32 &&
                    (dtype == CLPE_DTYPE_F16 || dtype == CLPE_DTYPE_BF16);
    if (dtype != rope->cfg.dtype && !narrowed)
        return CLPE_ERROR_DTYPE_MISMATCH;
    if (heads == 0)
        return CLPE_ERROR_INVALID_ROPE;
    l->dtype = dtype;
    l->num_blocks = num_blocks;
    l->block_size = block_size;
    l->heads = heads;
    l->head_pitch = head_pitch ? head_pitch : head_dim;
    if (slot_pitch) {
        l->slot_pitch = slot_pitch;
    } else if (!clpe__mul_size(heads, l->head_pitch, &l->slot_pitch)) {
        return CLPE_ERROR_TOO_LARGE;
    }
    if (block_pitch) {
        l->block_pitch = block_pitch;
    } else if (!clpe__mul_size(block_size, l->slot_pitch, &l->block_pitch)) {
        return CLPE_ERROR_TOO_LARGE;
    }
    if (!clpe__mul_size(num_blocks, block_size, &l->capacity) || l->capacity > INT64_MAX)
        return CLPE_ERROR_TOO_LARGE;
    dim dims[3] = {{heads, l->head_pitch},
                   {block_size, l->slot_pitch},
                   {num_blocks, l->block_pitch}};
    size_t span = 0;
    clpe_status status = check_no_overlap(dims, head_dim, &span);
    if (status != CLPE_SUCCESS)
        return status;
    if (l->capacity == 0)
        span = 0; /* nothing can be written */
    if (!clpe__mul_size(span, clpe__dtype_size(dtype), &l->span_bytes))
        return CLPE_ERROR_TOO_LARGE;
    return CLPE_SUCCESS;
}

clpe_footprint clpe__kv_cache_footprint(const clpe_rope *rope, const clpe_kv_cache_layout *l,
                                        size_t offset)
{
    clpe_stride dims[3] = {{l->heads, l->head_pitch},
                           {l->block_size, l->slot_pitch},
                           {l->capacity ? l->num_blocks : 0, l->block_pitch}};
    return clpe__strided_footprint(offset, rope->cfg.head_dim, dims, 3,
                                   clpe__dtype_size(l->dtype));
}
