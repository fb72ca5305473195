/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_enqueue.c - the rotary enqueue calls: rotating queries and keys in
 * place, and writing the cos/sin cache, for any rotary object (one position
 * per token, or one per stream) and any position source. Every argument is
 * checked by the resolver the host emulation uses (rope_call.c) before
 * anything is enqueued; launches are split as for the row kernels, and the
 * kernels' arguments set from tables indexed by clpe_interface.h's lists.
 */
#include "rotary/rotary.h"

#include "clpe_interface.h"

#define INDEX_MAX ((size_t)UINT32_MAX)

/* The arguments of one launch: tokens [s0, s0 + rows) of sequences
 * [b0, b0 + batch). */
static cl_int set_rope_launch_args(cl_kernel kernel, const void *call, size_t s0, size_t rows,
                                   size_t b0, size_t batch)
{
    const clpe_rope_call *c = call;
    const clpe_position_args *pos = &c->positions;
    uint64_t flat = (uint64_t)b0 * c->seq + s0;
    clpe_kernel_arg a[PE_ROPE_ARG_COUNT] = {{0}};
    a[PE_ROPE_ARG_Q_BASE] = clpe__arg_u64(c->q.offset + b0 * c->q.batch_pitch + s0 * c->q.row_pitch);
    a[PE_ROPE_ARG_K_BASE] =
        clpe__arg_u64(c->has_k ? c->k.offset + b0 * c->k.batch_pitch + s0 * c->k.row_pitch : 0);
    a[PE_ROPE_ARG_POSITIONS_BASE] =
        clpe__arg_u64(pos->source == CLPE_POSITIONS_START          ? 0
                      : pos->source == CLPE_POSITIONS_PER_SEQUENCE ? pos->offset + b0
                      : pos->source == CLPE_POSITIONS_IDS          ? pos->offset + flat
                                                                   : pos->offset + flat * pos->token_pitch);
    /* positions wrap modulo 2^64 like the kernels' arithmetic */
    a[PE_ROPE_ARG_START] = clpe__arg_i64(pos->source == CLPE_POSITIONS_START
                                             ? (int64_t)((uint64_t)pos->start + s0)
                                             : (int64_t)s0);
    a[PE_ROPE_ARG_ROWS] = clpe__arg_u32(rows);
    a[PE_ROPE_ARG_BATCH] = clpe__arg_u32(batch);
    return clpe__set_kernel_args(kernel, a, PE_ROPE_ARG_COUNT);
}

/* Whether the tensor's memory starts at a multiple of `word` bytes, in
 * *aligned. Buffers the device allocates (and sub-buffers, whose origins are
 * aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN, at least 64 bytes) always do; a
 * CL_MEM_USE_HOST_PTR buffer does if its host memory does. An OpenCL error
 * if the buffer cannot be queried. */
static clpe_status storage_aligned(cl_mem buffer, size_t word, bool *aligned)
{
    cl_mem_flags flags = 0;
    void *host = NULL;
    cl_int err = clGetMemObjectInfo(buffer, CL_MEM_FLAGS, sizeof flags, &flags, NULL);
    if (err == CL_SUCCESS && (flags & CL_MEM_USE_HOST_PTR))
        err = clGetMemObjectInfo(buffer, CL_MEM_HOST_PTR, sizeof host, &host, NULL);
    *aligned = err == CL_SUCCESS && (uintptr_t)host % word == 0;
    return err;
}

/* Whether the kernel may move the two elements of an interleaved pair, or
 * the first (second) halves of two adjacent split pairs, as one aligned
 * word of two elements, in *words: every pair of the tensor starts at an
 * even element, and in the split layout the halves are an even count of
 * elements apart. The bits are the same either way. */
static clpe_status pairs_are_words(const clpe_rope *rope, const clpe_rope_region *r,
                                   bool half_split, bool *words)
{
    *words = false;
    if (half_split && rope->n_pairs % 2)
        return CLPE_SUCCESS;
    if ((r->offset | r->head_pitch | r->row_pitch | r->batch_pitch) % 2)
        return CLPE_SUCCESS;
    return storage_aligned(r->buffer, 2 * clpe__dtype_size(rope->cfg.dtype), words);
}

/* A pitch the kernel multiplies only by 0 when a block has one entry. */
static size_t pitch32(size_t pitch, size_t count) { return count > 1 ? pitch : 0; }

/* The arguments that stay the same for every launch of a rotation. */
static cl_int set_rope_fixed_args(const clpe_rope *rope, cl_kernel kernel, const clpe_rope_call *c,
                                  const clpe_launch_grid *grid, bool pair_words)
{
    const size_t rows = grid->rows_per_launch, batch = grid->batch_per_launch;
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT, k = c->has_k;
    clpe_kernel_arg a[PE_ROPE_ARG_COUNT] = {{0}};
    a[PE_ROPE_ARG_Q] = clpe__arg_mem(c->q.buffer);
    a[PE_ROPE_ARG_K] = clpe__arg_mem(k ? c->k.buffer : NULL);
    a[PE_ROPE_ARG_POSITIONS] = clpe__arg_mem(c->positions.buffer);
    a[PE_ROPE_ARG_TW_HI] = clpe__arg_mem(rope->tw_hi_buf);
    a[PE_ROPE_ARG_TW_LO] = clpe__arg_mem(rope->tw_lo_buf);
    a[PE_ROPE_ARG_STREAM_PITCH] = clpe__arg_u64(c->positions.stream_pitch);
    a[PE_ROPE_ARG_AMPLITUDE] = clpe__arg_real(rope->cfg.dtype, rope->amplitude);
    a[PE_ROPE_ARG_Q_HEADS] = clpe__arg_u32(c->q.heads);
    a[PE_ROPE_ARG_Q_HEAD_PITCH] = clpe__arg_u32(pitch32(c->q.head_pitch, c->q.heads));
    a[PE_ROPE_ARG_Q_ROW_PITCH] = clpe__arg_u32(pitch32(c->q.row_pitch, rows));
    a[PE_ROPE_ARG_Q_BATCH_PITCH] = clpe__arg_u32(pitch32(c->q.batch_pitch, batch));
    a[PE_ROPE_ARG_K_HEADS] = clpe__arg_u32(k ? c->k.heads : 0);
    a[PE_ROPE_ARG_K_HEAD_PITCH] = clpe__arg_u32(k ? pitch32(c->k.head_pitch, c->k.heads) : 0);
    a[PE_ROPE_ARG_K_ROW_PITCH] = clpe__arg_u32(k ? pitch32(c->k.row_pitch, rows) : 0);
    a[PE_ROPE_ARG_K_BATCH_PITCH] = clpe__arg_u32(k ? pitch32(c->k.batch_pitch, batch) : 0);
    a[PE_ROPE_ARG_N_PAIRS] = clpe__arg_u32(rope->n_pairs);
    a[PE_ROPE_ARG_PARTNER] = clpe__arg_u32(half_split ? rope->n_pairs : 1);
    a[PE_ROPE_ARG_STRIDE] = clpe__arg_u32(half_split ? 1 : 2);
    a[PE_ROPE_ARG_PAIR_WORDS] = clpe__arg_u32(pair_words);
    a[PE_ROPE_ARG_INVERSE] = clpe__arg_u32(c->inverse);
    a[PE_ROPE_ARG_SEQ] = clpe__arg_u32(c->seq > INDEX_MAX ? 0 : c->seq);
    a[PE_ROPE_ARG_ROWS_PER_ITEM] = clpe__arg_u32(grid->rows_per_item);
    a[PE_ROPE_ARG_POS_SOURCE] = clpe__arg_u32((size_t)c->positions.source);
    a[PE_ROPE_ARG_TOKEN_PITCH] = clpe__arg_u32(c->positions.token_pitch);
    a[PE_ROPE_ARG_END0] = clpe__arg_u32(rope->ends[0]);
    a[PE_ROPE_ARG_END1] = clpe__arg_u32(rope->ends[1]);
    a[PE_ROPE_ARG_END2] = clpe__arg_u32(rope->ends[2]);
    return clpe__set_kernel_args(kernel, a, PE_ROPE_ARG_COUNT);
}

clpe_status clpe_enqueue_rope(clpe_rope *rope, cl_command_queue queue, size_t batch, size_t seq,
                              const clpe_rope_tensor *q, const clpe_rope_tensor *k,
                              const clpe_positions *positions, uint32_t flags,
                              cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    clpe_rope_call c;
    clpe_rope_view qv, kv;
    clpe_position_args pos;
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    clpe_status status = clpe__check_call_on(rope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS && (flags & ~CLPE_ROPE_INVERSE))
        status = CLPE_ERROR_INVALID_CONFIG;
    if (status == CLPE_SUCCESS)
        status = clpe__rope_view_of_tensor(q, &qv);
    if (status == CLPE_SUCCESS && k)
        status = clpe__rope_view_of_tensor(k, &kv);
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue_on(rope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = clpe__check_stream_positions(rope->shared->context, positions, rope->streams,
                                              batch, seq, &pos);
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_rope_call(rope, batch, seq, &qv, k ? &kv : NULL, &pos, flags, &c);
    if (status != CLPE_SUCCESS)
        return status;
    if (batch == 0 || seq == 0)
        return clpe__enqueue_nothing(queue, num_events, wait_list, event);
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT, q_words, k_words = true;
    status = pairs_are_words(rope, &c.q, half_split, &q_words);
    if (status == CLPE_SUCCESS && c.has_k)
        status = pairs_are_words(rope, &c.k, half_split, &k_words);
    if (status != CLPE_SUCCESS)
        return status;

    clpe_launch_grid grid = {.program = rope->shared, .pairs = rope->n_pairs, .seq = seq,
                             .pairs_per_item =
                                 clpe__rope_pairs_per_item(&rope->shared->shape, rope->cfg.dtype),
                             .batch = batch,
                             .shared_positions = c.positions.source == CLPE_POSITIONS_START};
    clpe_extent e[2] = {{c.q.row_pitch, c.q.batch_pitch, c.q.extent},
                        {c.k.row_pitch, c.k.batch_pitch, c.k.extent}};
    clpe__plan_launches(&rope->shared->shape, seq, batch, e, c.has_k ? 2 : 1,
                        &grid.rows_per_launch, &grid.batch_per_launch);
    grid.rows_per_item = clpe__rope_rows_per_item(
        &rope->shared->shape, grid.shared_positions, grid.batch_per_launch,
        grid.seq < grid.rows_per_launch ? grid.seq : grid.rows_per_launch,
        (grid.pairs + grid.pairs_per_item - 1) / grid.pairs_per_item);
    bool streams = c.positions.source == CLPE_POSITIONS_STREAMS ||
                   c.positions.source == CLPE_POSITIONS_STREAMS_TOKEN_FIRST;
    clpe_kernel_id id =
        clpe__kernel_for(streams ? CLPE_OP_ROPE_STREAMS : CLPE_OP_ROPE, rope->cfg.dtype);
    cl_kernel kernel;
    status = clpe__kernel_acquire(rope->shared, id, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    status = set_rope_fixed_args(rope, kernel, &c, &grid, q_words && k_words);
    if (status == CLPE_SUCCESS)
        status = clpe__run_launches(&grid, queue, kernel, set_rope_launch_args, &c, false,
                                    num_events, wait_list, event);
    clpe__kernel_return(rope->shared, id, kernel);
    return status;
}

/* ---- the cos/sin cache ---- */

static cl_int set_cache_launch_args(cl_kernel kernel, const void *call, size_t s0, size_t rows,
                                    size_t b0, size_t batch)
{
    const clpe_rope_cache_call *c = call;
    const clpe_position_args *pos = &c->positions;
    (void)b0;
    (void)batch;
    clpe_kernel_arg a[PE_ROPE_CACHE_ARG_COUNT] = {{0}};
    a[PE_ROPE_CACHE_ARG_COS_BASE] = clpe__arg_u64(c->cos.offset + s0 * c->cos.row_pitch);
    a[PE_ROPE_CACHE_ARG_SIN_BASE] = clpe__arg_u64(c->sin.offset + s0 * c->sin.row_pitch);
    a[PE_ROPE_CACHE_ARG_POSITIONS_BASE] =
        clpe__arg_u64(pos->source == CLPE_POSITIONS_START          ? 0
                      : pos->source == CLPE_POSITIONS_PER_SEQUENCE ? pos->offset
                                                                   : pos->offset + s0 * (pos->source == CLPE_POSITIONS_IDS ? 1 : pos->token_pitch));
    a[PE_ROPE_CACHE_ARG_START] = clpe__arg_i64(pos->source == CLPE_POSITIONS_START
                                                   ? (int64_t)((uint64_t)pos->start + s0)
                                                   : (int64_t)s0);
    a[PE_ROPE_CACHE_ARG_ROWS] = clpe__arg_u32(rows);
    return clpe__set_kernel_args(kernel, a, PE_ROPE_CACHE_ARG_COUNT);
}

/* A cos or sin tensor's buffer, offset and row pitch, checked. */
static clpe_status cache_tensor(const clpe_tensor *t)
{
    if (!t)
        return CLPE_ERROR_NULL_POINTER;
    if (!t->buffer)
        return CLPE_ERROR_NULL_BUFFER;
    return CLPE__RESERVED_ZERO(t) ? CLPE_SUCCESS : CLPE_ERROR_RESERVED_FIELD;
}

clpe_status clpe_enqueue_rope_cache_at(clpe_rope *rope, cl_command_queue queue, size_t n,
                                       const clpe_positions *positions, const clpe_tensor *cos,
                                       const clpe_tensor *sin, cl_uint num_events,
                                       const cl_event *wait_list, cl_event *event)
{
    clpe_rope_cache_call c;
    clpe_position_args pos;
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    clpe_status status = clpe__check_call_on(rope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = cache_tensor(cos);
    if (status == CLPE_SUCCESS)
        status = cache_tensor(sin);
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue_on(rope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = clpe__check_stream_positions(rope->shared->context, positions, rope->streams, 1,
                                              n, &pos);
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_rope_cache_call(
            rope, n, &(clpe_rope_view){.buffer = cos->buffer, .offset = cos->offset,
                                       .row_pitch = cos->row_pitch},
            &(clpe_rope_view){.buffer = sin->buffer, .offset = sin->offset,
                              .row_pitch = sin->row_pitch},
            &pos, &c);
    if (status != CLPE_SUCCESS)
        return status;
    if (n == 0)
        return clpe__enqueue_nothing(queue, num_events, wait_list, event);

    clpe_launch_grid grid = {.program = rope->shared, .pairs = rope->n_pairs, .seq = n,
                             .pairs_per_item =
                                 clpe__rope_pairs_per_item(&rope->shared->shape, rope->cfg.dtype),
                             .batch = 1, .shared_positions = true};
    clpe_extent e[2] = {{c.cos.row_pitch, 0, rope->rotary_dim},
                        {c.sin.row_pitch, 0, rope->rotary_dim}};
    clpe__plan_launches(&rope->shared->shape, n, 1, e, 2, &grid.rows_per_launch,
                        &grid.batch_per_launch);
    grid.rows_per_item = rope->shared->shape.rows_per_item;
    bool start = c.positions.source == CLPE_POSITIONS_START;
    clpe_kernel_id id =
        clpe__kernel_for(start ? CLPE_OP_ROPE_CACHE : CLPE_OP_ROPE_CACHE_AT, rope->cfg.dtype);
    cl_kernel kernel;
    status = clpe__kernel_acquire(rope->shared, id, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    clpe_kernel_arg a[PE_ROPE_CACHE_ARG_COUNT] = {{0}};
    a[PE_ROPE_CACHE_ARG_COS] = clpe__arg_mem(c.cos.buffer);
    a[PE_ROPE_CACHE_ARG_SIN] = clpe__arg_mem(c.sin.buffer);
    a[PE_ROPE_CACHE_ARG_POSITIONS] = clpe__arg_mem(c.positions.buffer);
    a[PE_ROPE_CACHE_ARG_TW_HI] = clpe__arg_mem(rope->tw_hi_buf);
    a[PE_ROPE_CACHE_ARG_TW_LO] = clpe__arg_mem(rope->tw_lo_buf);
    a[PE_ROPE_CACHE_ARG_STREAM_PITCH] = clpe__arg_u64(c.positions.stream_pitch);
    a[PE_ROPE_CACHE_ARG_AMPLITUDE] = clpe__arg_real(rope->cfg.dtype, rope->amplitude);
    a[PE_ROPE_CACHE_ARG_COS_ROW_PITCH] = clpe__arg_u32(pitch32(c.cos.row_pitch, grid.rows_per_launch));
    a[PE_ROPE_CACHE_ARG_SIN_ROW_PITCH] = clpe__arg_u32(pitch32(c.sin.row_pitch, grid.rows_per_launch));
    a[PE_ROPE_CACHE_ARG_N_PAIRS] = clpe__arg_u32(rope->n_pairs);
    a[PE_ROPE_CACHE_ARG_PARTNER] = clpe__arg_u32(half_split ? rope->n_pairs : 1);
    a[PE_ROPE_CACHE_ARG_STRIDE] = clpe__arg_u32(half_split ? 1 : 2);
    a[PE_ROPE_CACHE_ARG_ROWS_PER_ITEM] = clpe__arg_u32(grid.rows_per_item);
    a[PE_ROPE_CACHE_ARG_POS_SOURCE] = clpe__arg_u32((size_t)c.positions.source);
    /* ids are one stream of pitch 1, which every pair reads */
    bool ids = c.positions.source == CLPE_POSITIONS_IDS;
    a[PE_ROPE_CACHE_ARG_TOKEN_PITCH] = clpe__arg_u32(ids ? 1 : c.positions.token_pitch);
    a[PE_ROPE_CACHE_ARG_END0] = clpe__arg_u32(ids ? rope->n_pairs : rope->ends[0]);
    a[PE_ROPE_CACHE_ARG_END1] = clpe__arg_u32(ids ? rope->n_pairs : rope->ends[1]);
    a[PE_ROPE_CACHE_ARG_END2] = clpe__arg_u32(ids ? rope->n_pairs : rope->ends[2]);
    status = clpe__set_kernel_args(kernel, a, PE_ROPE_CACHE_ARG_COUNT);
    if (status == CLPE_SUCCESS)
        status = clpe__run_launches(&grid, queue, kernel, set_cache_launch_args, &c, false,
                                    num_events, wait_list, event);
    clpe__kernel_return(rope->shared, id, kernel);
    return status;
}

clpe_status clpe_enqueue_rope_cache(clpe_rope *rope, cl_command_queue queue, int64_t start,
                                    size_t n, const clpe_tensor *cos, const clpe_tensor *sin,
                                    cl_uint num_events, const cl_event *wait_list,
                                    cl_event *event)
{
    clpe_positions from = {.source = CLPE_POSITIONS_START, .start = start};
    return clpe_enqueue_rope_cache_at(rope, queue, n, &from, cos, sin, num_events, wait_list,
                                      event);
}
