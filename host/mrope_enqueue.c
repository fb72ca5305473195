/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mrope_enqueue.c - the multimodal rotary enqueue calls: rotating queries
 * and keys in place, and writing the cos/sin cache, each pair at its own
 * stream's position. Every argument is checked before anything is
 * enqueued; launches are split as for the rotary kernels.
 */
#include "overlap.h"

#include "clpe_mrope_interface.h"

#include <string.h>

/* Checked positions, in elements. */
typedef struct mrope_position_args {
    cl_mem buffer;
    size_t offset, stream_pitch, token_pitch;
    size_t end_bytes; /* one past the last position read, in bytes */
} mrope_position_args;

/* The positions struct, and that its buffer holds every stream of `tokens`
 * tokens. */
static clpe_status check_positions(const clpe_mrope *m, const clpe_mrope_positions *pos,
                                   size_t tokens, mrope_position_args *out)
{
    if (!pos)
        return CLPE_ERROR_NULL_POINTER;
    if (!pos->buffer)
        return CLPE_ERROR_INVALID_POSITIONS;
    if (!CLPE__RESERVED_ZERO(pos))
        return CLPE_ERROR_RESERVED_FIELD;
    if (pos->offset % sizeof(int64_t))
        return CLPE_ERROR_MISALIGNED_OFFSET;
    out->buffer = pos->buffer;
    out->offset = pos->offset / sizeof(int64_t);
    out->stream_pitch = pos->stream_pitch ? pos->stream_pitch : tokens;
    out->token_pitch = pos->token_pitch ? pos->token_pitch : 1;
    out->end_bytes = out->offset * sizeof(int64_t);
    if (tokens == 0)
        return CLPE_SUCCESS;
    /* the last stream of the last token, then one past it, in bytes */
    size_t last, t1, bytes;
    if (!clpe__mul_size(m->cfg.streams - 1, out->stream_pitch, &last) ||
        !clpe__mul_size(tokens - 1, out->token_pitch, &t1) || !clpe__add_size(last, t1, &last) ||
        !clpe__add_size(last, out->offset + 1, &last) ||
        !clpe__mul_size(last, sizeof(int64_t), &bytes))
        return CLPE_ERROR_TOO_LARGE;
    out->end_bytes = bytes;
    return clpe__check_buffer_in(m->shared->context, pos->buffer, bytes,
                                 CLPE_ERROR_INDEX_BUFFER_TOO_SMALL);
}

static cl_int set_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value)
{
    return clSetKernelArg(kernel, index, size, value);
}

#define SET(k, index, value) set_arg((k), (index), sizeof(value), &(value))

/* A pitch the kernel multiplies only by 0 when a block has one entry. */
static cl_uint pitch32(size_t pitch, size_t count) { return count > 1 ? (cl_uint)pitch : 0; }

typedef struct mrope_call {
    clpe_rope_region q, k;   /* k.buffer NULL: queries only */
    mrope_position_args positions;
    size_t seq;
} mrope_call;

static cl_int set_mrope_launch_args(cl_kernel kernel, const void *call, size_t s0, size_t rows,
                                    size_t b0, size_t batch)
{
    const mrope_call *c = call;
    cl_ulong q_base = c->q.offset + b0 * c->q.batch_pitch + s0 * c->q.row_pitch;
    cl_ulong k_base = c->k.buffer ? c->k.offset + b0 * c->k.batch_pitch + s0 * c->k.row_pitch : 0;
    cl_ulong pos_base = c->positions.offset + (b0 * c->seq + s0) * c->positions.token_pitch;
    cl_uint nr = (cl_uint)rows, nb = (cl_uint)batch;
    cl_int err = SET(kernel, PE_MROPE_ARG_Q_BASE, q_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_K_BASE, k_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_POSITIONS_BASE, pos_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_ROWS, nr);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_BATCH, nb);
    return err;
}

static cl_int set_mrope_fixed_args(const clpe_mrope *m, cl_kernel kernel, const mrope_call *c,
                                   const clpe_launch_grid *grid, cl_uint inverse)
{
    const size_t rows = grid->rows_per_launch, batch = grid->batch_per_launch;
    cl_mem q = c->q.buffer, k = c->k.buffer, positions = c->positions.buffer;
    clpe_real_arg amp = clpe__real_arg(m->cfg.rope.dtype, m->amplitude);
    bool half_split = m->cfg.rope.pairing == CLPE_ROPE_HALF_SPLIT;
    cl_uint q_heads = (cl_uint)c->q.heads, k_heads = k ? (cl_uint)c->k.heads : 0;
    cl_uint qhp = pitch32(c->q.head_pitch, c->q.heads), qrp = pitch32(c->q.row_pitch, rows),
            qbp = pitch32(c->q.batch_pitch, batch);
    cl_uint khp = k ? pitch32(c->k.head_pitch, c->k.heads) : 0,
            krp = k ? pitch32(c->k.row_pitch, rows) : 0,
            kbp = k ? pitch32(c->k.batch_pitch, batch) : 0;
    cl_uint n_pairs = m->n_pairs, partner = half_split ? m->n_pairs : 1,
            stride = half_split ? 1 : 2;
    cl_uint end0 = m->ends[0], end1 = m->ends[1], end2 = m->ends[2];
    cl_ulong sp = c->positions.stream_pitch, tp = c->positions.token_pitch, seq = c->seq;
    cl_uint rows_per_item = grid->rows_per_item;
    cl_int err = SET(kernel, PE_MROPE_ARG_Q, q);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_K, k);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_POSITIONS, positions);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_TW_HI, m->tw_hi_buf);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_TW_LO, m->tw_lo_buf);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_STREAM_PITCH, sp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_TOKEN_PITCH, tp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_SEQ, seq);
    if (err == CL_SUCCESS) err = set_arg(kernel, PE_MROPE_ARG_AMPLITUDE, amp.size, &amp.v);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_Q_HEADS, q_heads);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_Q_HEAD_PITCH, qhp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_Q_ROW_PITCH, qrp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_Q_BATCH_PITCH, qbp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_K_HEADS, k_heads);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_K_HEAD_PITCH, khp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_K_ROW_PITCH, krp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_K_BATCH_PITCH, kbp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_N_PAIRS, n_pairs);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_PARTNER, partner);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_STRIDE, stride);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_INVERSE, inverse);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_END0, end0);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_END1, end1);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_END2, end2);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_ARG_ROWS_PER_ITEM, rows_per_item);
    return err;
}

/* The bytes of the positions a call reads: the span from the first to one
 * past the last (streams and tokens interleave in any order within it). */
static clpe_operand positions_operand(const mrope_position_args *p)
{
    size_t begin = p->offset * sizeof(int64_t);
    return (clpe_operand){.buffer = p->buffer,
                          .bytes = clpe__footprint_bytes(begin, p->end_bytes - begin),
                          .access = CLPE_ACCESS_READ};
}

clpe_status clpe_enqueue_mrope(clpe_mrope *mrope, cl_command_queue queue, size_t batch,
                               size_t seq, const clpe_rope_tensor *q, const clpe_rope_tensor *k,
                               const clpe_mrope_positions *positions, uint32_t flags,
                               cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    mrope_call c = {.seq = seq};
    size_t tokens = 0;
    if (!mrope)
        return CLPE_ERROR_NULL_ENCODER;
    size_t head_dim = mrope->cfg.rope.head_dim, esize = clpe__dtype_size(mrope->cfg.rope.dtype);
    clpe_status status = clpe__check_call_on(mrope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS && (flags & ~CLPE_ROPE_INVERSE))
        status = CLPE_ERROR_INVALID_CONFIG;
    if (status == CLPE_SUCCESS && !clpe__mul_size(batch, seq, &tokens))
        status = CLPE_ERROR_TOO_LARGE;
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_rope_tensor(head_dim, esize, q, batch, seq, &c.q);
    if (status == CLPE_SUCCESS && k)
        status = clpe__resolve_rope_tensor(head_dim, esize, k, batch, seq, &c.k);
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue_on(mrope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = check_positions(mrope, positions, tokens, &c.positions);
    if (status == CLPE_SUCCESS)
        status = clpe__check_buffer_in(mrope->shared->context, c.q.buffer, c.q.end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS && k)
        status = clpe__check_buffer_in(mrope->shared->context, c.k.buffer, c.k.end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS) {
        /* q and k (rotated in place) share no element with each other or
         * the positions, through sub-buffers and host memory too: fused
         * QKV heads in one buffer are fine */
        clpe_operand ops[3] = {
            {.buffer = c.q.buffer,
             .bytes = clpe__rope_tensor_footprint(head_dim, esize, &c.q, batch, seq),
             .access = CLPE_ACCESS_READ_WRITE},
            {.buffer = k ? c.k.buffer : NULL,
             .bytes = k ? clpe__rope_tensor_footprint(head_dim, esize, &c.k, batch, seq)
                        : clpe__footprint_bytes(0, 0),
             .access = CLPE_ACCESS_READ_WRITE},
            positions_operand(&c.positions)};
        status = clpe__check_operands(ops, 3);
    }
    if (status != CLPE_SUCCESS)
        return status;
    if (tokens == 0)
        return clpe__enqueue_nothing(queue, num_events, wait_list, event);

    const clpe_launch_shape *shape = &mrope->shared->shape;
    clpe_launch_grid grid = {.program = mrope->shared, .pairs = mrope->n_pairs, .seq = seq,
                             .pairs_per_item =
                                 clpe__rope_pairs_per_item(shape, mrope->cfg.rope.dtype),
                             .batch = batch, .shared_positions = false};
    clpe_extent e[2] = {{c.q.row_pitch, c.q.batch_pitch, c.q.extent},
                        {c.k.row_pitch, c.k.batch_pitch, c.k.extent}};
    clpe__plan_launches(shape, seq, batch, e, k ? 2 : 1, &grid.rows_per_launch,
                        &grid.batch_per_launch);
    grid.rows_per_item = shape->rows_per_item;
    clpe_kernel_id id = clpe__kernel_for(CLPE_OP_MROPE, mrope->cfg.rope.dtype);
    cl_kernel kernel;
    status = clpe__kernel_acquire(mrope->shared, id, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    status = set_mrope_fixed_args(mrope, kernel, &c, &grid,
                                  (flags & CLPE_ROPE_INVERSE) ? 1u : 0u);
    if (status == CLPE_SUCCESS)
        status = clpe__run_launches(&grid, queue, kernel, set_mrope_launch_args, &c, false,
                                    num_events, wait_list, event);
    clpe__kernel_return(mrope->shared, id, kernel);
    return status;
}

/* ---- the cos/sin cache ---- */

typedef struct mrope_cache_call {
    clpe_region cos, sin;
    mrope_position_args positions;
} mrope_cache_call;

static cl_int set_cache_launch_args(cl_kernel kernel, const void *call, size_t s0, size_t rows,
                                    size_t b0, size_t batch)
{
    const mrope_cache_call *c = call;
    (void)b0;
    (void)batch;
    cl_ulong cos_base = c->cos.offset + s0 * c->cos.row_pitch;
    cl_ulong sin_base = c->sin.offset + s0 * c->sin.row_pitch;
    cl_ulong pos_base = c->positions.offset + s0 * c->positions.token_pitch;
    cl_uint nr = (cl_uint)rows;
    cl_int err = SET(kernel, PE_MROPE_CACHE_ARG_COS_BASE, cos_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_SIN_BASE, sin_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_POSITIONS_BASE, pos_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_ROWS, nr);
    return err;
}

clpe_status clpe_enqueue_mrope_cache(clpe_mrope *mrope, cl_command_queue queue, size_t n,
                                     const clpe_mrope_positions *positions,
                                     const clpe_tensor *cos, const clpe_tensor *sin,
                                     cl_uint num_events, const cl_event *wait_list,
                                     cl_event *event)
{
    mrope_cache_call c;
    memset(&c, 0, sizeof c);
    if (!mrope)
        return CLPE_ERROR_NULL_ENCODER;
    clpe_dtype dtype = mrope->cfg.rope.dtype;
    size_t esize = clpe__dtype_size(dtype);
    clpe_status status = clpe__check_call_on(mrope->shared, queue, num_events, wait_list);
    const clpe_tensor *t[2] = {cos, sin};
    clpe_region *r[2] = {&c.cos, &c.sin};
    for (int j = 0; j < 2 && status == CLPE_SUCCESS; ++j) {
        if (!t[j])
            status = CLPE_ERROR_NULL_POINTER;
        else if (!t[j]->buffer)
            status = CLPE_ERROR_NULL_BUFFER;
        else if (!CLPE__RESERVED_ZERO(t[j]))
            status = CLPE_ERROR_RESERVED_FIELD;
        else
            status = clpe__resolve_rows(mrope->rotary_dim, esize, t[j]->offset, t[j]->row_pitch,
                                        0, 1, n, r[j]);
        if (status == CLPE_SUCCESS)
            r[j]->buffer = t[j]->buffer;
    }
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue_on(mrope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = check_positions(mrope, positions, n, &c.positions);
    for (int j = 0; j < 2 && status == CLPE_SUCCESS; ++j)
        status = clpe__check_buffer_in(mrope->shared->context, r[j]->buffer, r[j]->end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS) {
        /* cos and sin may share a buffer where their rows do not meet */
        clpe_operand ops[3] = {
            clpe__region_operand(&c.cos, mrope->rotary_dim, esize, 1, n, CLPE_ACCESS_WRITE),
            clpe__region_operand(&c.sin, mrope->rotary_dim, esize, 1, n, CLPE_ACCESS_WRITE),
            positions_operand(&c.positions)};
        status = clpe__check_operands(ops, 3);
    }
    if (status != CLPE_SUCCESS)
        return status;
    if (n == 0)
        return clpe__enqueue_nothing(queue, num_events, wait_list, event);

    const clpe_launch_shape *shape = &mrope->shared->shape;
    clpe_launch_grid grid = {.program = mrope->shared, .pairs = mrope->n_pairs, .seq = n,
                             .pairs_per_item = clpe__rope_pairs_per_item(shape, dtype),
                             .batch = 1, .shared_positions = true};
    clpe_extent e[2] = {{c.cos.row_pitch, 0, mrope->rotary_dim},
                        {c.sin.row_pitch, 0, mrope->rotary_dim}};
    clpe__plan_launches(shape, n, 1, e, 2, &grid.rows_per_launch, &grid.batch_per_launch);
    grid.rows_per_item = shape->rows_per_item;
    clpe_kernel_id id = clpe__kernel_for(CLPE_OP_MROPE_CACHE, dtype);
    cl_kernel kernel;
    status = clpe__kernel_acquire(mrope->shared, id, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    bool half_split = mrope->cfg.rope.pairing == CLPE_ROPE_HALF_SPLIT;
    clpe_real_arg amp = clpe__real_arg(dtype, mrope->amplitude);
    cl_uint crp = pitch32(c.cos.row_pitch, grid.rows_per_launch),
            srp = pitch32(c.sin.row_pitch, grid.rows_per_launch);
    cl_uint n_pairs = mrope->n_pairs, partner = half_split ? mrope->n_pairs : 1,
            stride = half_split ? 1 : 2, rows_per_item = grid.rows_per_item;
    cl_uint end0 = mrope->ends[0], end1 = mrope->ends[1], end2 = mrope->ends[2];
    cl_ulong sp = c.positions.stream_pitch, tp = c.positions.token_pitch;
    cl_int err = SET(kernel, PE_MROPE_CACHE_ARG_COS, c.cos.buffer);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_SIN, c.sin.buffer);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_POSITIONS, c.positions.buffer);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_TW_HI, mrope->tw_hi_buf);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_TW_LO, mrope->tw_lo_buf);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_STREAM_PITCH, sp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_TOKEN_PITCH, tp);
    if (err == CL_SUCCESS) err = set_arg(kernel, PE_MROPE_CACHE_ARG_AMPLITUDE, amp.size, &amp.v);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_COS_ROW_PITCH, crp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_SIN_ROW_PITCH, srp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_N_PAIRS, n_pairs);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_PARTNER, partner);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_STRIDE, stride);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_END0, end0);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_END1, end1);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_END2, end2);
    if (err == CL_SUCCESS) err = SET(kernel, PE_MROPE_CACHE_ARG_ROWS_PER_ITEM, rows_per_item);
    status = err;
    if (status == CLPE_SUCCESS)
        status = clpe__run_launches(&grid, queue, kernel, set_cache_launch_args, &c, false,
                                    num_events, wait_list, event);
    clpe__kernel_return(mrope->shared, id, kernel);
    return status;
}
