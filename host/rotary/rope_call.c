/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_call.c - the one resolver of a rotary call, for the enqueue calls
 * and the host emulation alike: the tensors rotated (q and k, in place) or
 * written (the cos/sin rows), the position source, the flags, the sizes
 * and the bytes no two arguments may share. Where a call is on the device
 * the buffers are checked against the object's context; on the host the
 * same rules apply to host memory. So host and device accept exactly the
 * same calls, with the same status.
 */
#include "rotary/rotary.h"

clpe_status clpe__rope_view_of_tensor(const clpe_rope_tensor *t, clpe_rope_view *v)
{
    if (!t)
        return CLPE_ERROR_NULL_POINTER;
    if (!t->buffer)
        return CLPE_ERROR_NULL_BUFFER;
    if (!CLPE__RESERVED_ZERO(t))
        return CLPE_ERROR_RESERVED_FIELD;
    *v = (clpe_rope_view){.buffer = t->buffer, .offset = t->offset, .heads = t->heads,
                          .head_pitch = t->head_pitch, .row_pitch = t->row_pitch,
                          .batch_pitch = t->batch_pitch};
    return CLPE_SUCCESS;
}

clpe_status clpe__rope_view_of_host(const clpe_host_rope_tensor *t, clpe_rope_view *v)
{
    if (!t || !t->data)
        return CLPE_ERROR_NULL_POINTER;
    if (!CLPE__RESERVED_ZERO(t))
        return CLPE_ERROR_RESERVED_FIELD;
    *v = (clpe_rope_view){.host = t->data, .heads = t->heads, .head_pitch = t->head_pitch,
                          .row_pitch = t->row_pitch, .batch_pitch = t->batch_pitch};
    return CLPE_SUCCESS;
}

clpe_status clpe__rope_host_positions(const clpe_rope *rope, clpe_position_source source,
                                      int64_t start, const int64_t *host_positions,
                                      size_t batch, size_t seq, clpe_position_args *out)
{
    clpe_status status = clpe__resolve_positions(source, start, host_positions != NULL, 0,
                                                 rope->streams, batch, seq, out);
    out->host = out->count ? host_positions : NULL;
    return status;
}

/* One tensor of the call: its layout, and on the device its buffer's
 * context and size. */
static clpe_status resolve_view(const clpe_rope *rope, const clpe_rope_view *v, size_t batch,
                                size_t seq, clpe_rope_region *r)
{
    clpe_status status = clpe__resolve_rope_region(rope, v->offset, v->heads, v->head_pitch,
                                                   v->row_pitch, v->batch_pitch, batch, seq, r);
    r->buffer = v->buffer;
    if (status == CLPE_SUCCESS && v->buffer)
        status = clpe__check_buffer_in(rope->shared->context, v->buffer, r->end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    return status;
}

static clpe_operand view_operand(const clpe_rope *rope, const clpe_rope_view *v,
                                 const clpe_rope_region *r, size_t batch, size_t seq)
{
    return (clpe_operand){.buffer = v->buffer, .host = v->host,
                          .bytes = clpe__rope_footprint(rope, r, batch, seq),
                          .access = CLPE_ACCESS_READ_WRITE};
}

clpe_status clpe__resolve_rope_call(const clpe_rope *rope, size_t batch, size_t seq,
                                   const clpe_rope_view *q, const clpe_rope_view *k,
                                   const clpe_position_args *positions, uint32_t flags,
                                   clpe_rope_call *c)
{
    *c = (clpe_rope_call){.rope = rope, .batch = batch, .seq = seq, .positions = *positions,
                          .inverse = (flags & CLPE_ROPE_INVERSE) ? 1u : 0u};
    if (flags & ~CLPE_ROPE_INVERSE)
        return CLPE_ERROR_INVALID_CONFIG;
    clpe_status status = resolve_view(rope, q, batch, seq, &c->q);
    c->q_host = q->host;
    if (status == CLPE_SUCCESS && k) {
        status = resolve_view(rope, k, batch, seq, &c->k);
        c->k_host = k->host;
        c->has_k = true;
    }
    if (status != CLPE_SUCCESS)
        return status;
    /* q and k (rotated in place) share no byte with each other or the positions */
    clpe_operand ops[3] = {view_operand(rope, q, &c->q, batch, seq),
                           k ? view_operand(rope, k, &c->k, batch, seq)
                             : (clpe_operand){.bytes = clpe__footprint_bytes(0, 0)},
                           clpe__positions_operand(positions)};
    return clpe__check_operands(ops, 3);
}

clpe_status clpe__resolve_rope_cache_call(const clpe_rope *rope, size_t n,
                                          const clpe_rope_view *cos, const clpe_rope_view *sin,
                                          const clpe_position_args *positions,
                                          clpe_rope_cache_call *c)
{
    size_t esize = clpe__dtype_size(rope->cfg.dtype);
    *c = (clpe_rope_cache_call){.n = n, .positions = *positions, .cos_host = cos->host,
                                .sin_host = sin->host};
    const clpe_rope_view *t[2] = {cos, sin};
    clpe_region *r[2] = {&c->cos, &c->sin};
    clpe_status status = CLPE_SUCCESS;
    for (int j = 0; j < 2 && status == CLPE_SUCCESS; ++j) {
        status = clpe__resolve_rows(rope->rotary_dim, esize, t[j]->offset, t[j]->row_pitch, 0, 1,
                                    n, r[j]);
        r[j]->buffer = t[j]->buffer;
        if (status == CLPE_SUCCESS && t[j]->buffer)
            status = clpe__check_buffer_in(rope->shared->context, t[j]->buffer, r[j]->end_bytes,
                                           CLPE_ERROR_BUFFER_TOO_SMALL);
    }
    if (status != CLPE_SUCCESS)
        return status;
    clpe_operand ops[3] = {
        clpe__region_operand(&c->cos, rope->rotary_dim, esize, 1, n, CLPE_ACCESS_WRITE),
        clpe__region_operand(&c->sin, rope->rotary_dim, esize, 1, n, CLPE_ACCESS_WRITE),
        clpe__positions_operand(positions)};
    ops[0].host = cos->host;
    ops[1].host = sin->host;
    return clpe__check_operands(ops, 3);
}
