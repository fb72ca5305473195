/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_enqueue.c - the rotary enqueue calls: rotating queries and keys in
 * place, and writing the cos/sin cache. Every argument is checked before
 * anything is enqueued; launches are split as for the row kernels.
 */
#include "overlap.h"

#include "clpe_interface.h"

#define INDEX_MAX ((size_t)UINT32_MAX)

typedef struct rope_call {
    const clpe_rope *rope;
    clpe_rope_region q, k;   /* k.buffer NULL: queries only */
    clpe_position_args positions;
    size_t batch, seq;
    uint32_t inverse;
} rope_call;

static cl_int set_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value)
{
    return clSetKernelArg(kernel, index, size, value);
}

#define SET(k, index, value) set_arg((k), (index), sizeof(value), &(value))

static cl_int set_rope_launch_args(cl_kernel kernel, const void *call, size_t s0, size_t rows,
                                   size_t b0, size_t batch)
{
    const rope_call *c = call;
    const clpe_position_args *pos = &c->positions;
    cl_ulong flat = (cl_ulong)b0 * c->seq + s0;
    cl_ulong q_base = c->q.offset + b0 * c->q.batch_pitch + s0 * c->q.row_pitch;
    cl_ulong k_base =
        c->k.buffer ? c->k.offset + b0 * c->k.batch_pitch + s0 * c->k.row_pitch : 0;
    cl_ulong pos_base = pos->source == CLPE_POSITIONS_IDS            ? pos->offset + flat
                        : pos->source == CLPE_POSITIONS_PER_SEQUENCE ? pos->offset + b0
                                                                     : 0;
    /* positions wrap modulo 2^64 like the kernels' arithmetic */
    cl_long start = pos->source == CLPE_POSITIONS_START ? (cl_long)((uint64_t)pos->start + s0)
                                                        : (cl_long)s0;
    cl_uint nr = (cl_uint)rows, nb = (cl_uint)batch;
    cl_int err = SET(kernel, PE_ROPE_ARG_Q_BASE, q_base);
    if (err == CL_SUCCESS)
        err = SET(kernel, PE_ROPE_ARG_K_BASE, k_base);
    if (err == CL_SUCCESS)
        err = SET(kernel, PE_ROPE_ARG_POSITIONS_BASE, pos_base);
    if (err == CL_SUCCESS)
        err = SET(kernel, PE_ROPE_ARG_START, start);
    if (err == CL_SUCCESS)
        err = SET(kernel, PE_ROPE_ARG_ROWS, nr);
    if (err == CL_SUCCESS)
        err = SET(kernel, PE_ROPE_ARG_BATCH, nb);
    return err;
}

/* Whether the tensor's memory starts at a multiple of `word` bytes. Buffers
 * the device allocates (and sub-buffers, whose origins are aligned to
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN, at least 64 bytes) always do; a
 * CL_MEM_USE_HOST_PTR buffer does if its host memory does. */
static bool storage_aligned(cl_mem buffer, size_t word)
{
    cl_mem_flags flags = 0;
    void *host = NULL;
    if (clGetMemObjectInfo(buffer, CL_MEM_FLAGS, sizeof flags, &flags, NULL) != CL_SUCCESS)
        return false;
    if (!(flags & CL_MEM_USE_HOST_PTR))
        return true;
    if (clGetMemObjectInfo(buffer, CL_MEM_HOST_PTR, sizeof host, &host, NULL) != CL_SUCCESS)
        return false;
    return (uintptr_t)host % word == 0;
}

/* Whether the kernel may move the two elements of an interleaved pair, or
 * the first (second) halves of two adjacent split pairs, as one aligned
 * word of two elements (pair_words): every pair of the tensor starts at an
 * even element, and in the split layout the halves are an even count of
 * elements apart. The bits are the same either way. */
static bool pairs_are_words(const clpe_rope *rope, const clpe_rope_region *r, bool half_split)
{
    if (half_split && rope->n_pairs % 2)
        return false;
    if ((r->offset | r->head_pitch | r->row_pitch | r->batch_pitch) % 2)
        return false;
    return storage_aligned(r->buffer, 2 * clpe__dtype_size(rope->cfg.dtype));
}

/* A pitch the kernel multiplies only by 0 when a block has one entry. */
static cl_uint pitch32(size_t pitch, size_t count) { return count > 1 ? (cl_uint)pitch : 0; }

static cl_int set_rope_fixed_args(const clpe_rope *rope, cl_kernel kernel, const rope_call *c,
                                  const clpe_launch_grid *grid)
{
    const size_t rows = grid->rows_per_launch, batch = grid->batch_per_launch;
    cl_mem q = c->q.buffer, k = c->k.buffer, positions = c->positions.buffer;
    clpe_real_arg amp = clpe__real_arg(rope->cfg.dtype, rope->amplitude);
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    cl_uint q_heads = (cl_uint)c->q.heads, k_heads = k ? (cl_uint)c->k.heads : 0;
    cl_uint qhp = pitch32(c->q.head_pitch, c->q.heads), qrp = pitch32(c->q.row_pitch, rows),
            qbp = pitch32(c->q.batch_pitch, batch);
    cl_uint khp = k ? pitch32(c->k.head_pitch, c->k.heads) : 0,
            krp = k ? pitch32(c->k.row_pitch, rows) : 0,
            kbp = k ? pitch32(c->k.batch_pitch, batch) : 0;
    cl_uint n_pairs = rope->n_pairs, partner = half_split ? rope->n_pairs : 1,
            stride = half_split ? 1 : 2, inverse = c->inverse;
    cl_uint pair_words = pairs_are_words(rope, &c->q, half_split) &&
                         (!k || pairs_are_words(rope, &c->k, half_split));
    cl_uint seq = c->seq > INDEX_MAX ? 0 : (cl_uint)c->seq;
    cl_uint rows_per_item = grid->rows_per_item;
    cl_uint source = (cl_uint)c->positions.source;
    cl_int err = SET(kernel, PE_ROPE_ARG_Q, q);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_K, k);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_POSITIONS, positions);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_TW_HI, rope->tw_hi_buf);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_TW_LO, rope->tw_lo_buf);
    if (err == CL_SUCCESS) err = set_arg(kernel, PE_ROPE_ARG_AMPLITUDE, amp.size, &amp.v);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_Q_HEADS, q_heads);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_Q_HEAD_PITCH, qhp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_Q_ROW_PITCH, qrp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_Q_BATCH_PITCH, qbp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_K_HEADS, k_heads);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_K_HEAD_PITCH, khp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_K_ROW_PITCH, krp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_K_BATCH_PITCH, kbp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_N_PAIRS, n_pairs);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_PARTNER, partner);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_STRIDE, stride);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_PAIR_WORDS, pair_words);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_INVERSE, inverse);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_SEQ, seq);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_ROWS_PER_ITEM, rows_per_item);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_POS_SOURCE, source);
    return err;
}

clpe_status clpe_enqueue_rope(clpe_rope *rope, cl_command_queue queue, size_t batch, size_t seq,
                              const clpe_rope_tensor *q, const clpe_rope_tensor *k,
                              const clpe_positions *positions, uint32_t flags,
                              cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    rope_call c = {.rope = rope, .batch = batch, .seq = seq};
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    size_t head_dim = rope->cfg.head_dim, esize = clpe__dtype_size(rope->cfg.dtype);
    clpe_status status = clpe__check_call_on(rope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS && (flags & ~CLPE_ROPE_INVERSE))
        status = CLPE_ERROR_INVALID_CONFIG;
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_rope_tensor(head_dim, esize, q, batch, seq, &c.q);
    if (status == CLPE_SUCCESS && k)
        status = clpe__resolve_rope_tensor(head_dim, esize, k, batch, seq, &c.k);
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue_on(rope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = clpe__check_positions(rope->shared->context, positions, batch, seq, &c.positions);
    if (status == CLPE_SUCCESS)
        status = clpe__check_buffer_in(rope->shared->context, c.q.buffer, c.q.end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS && k)
        status = clpe__check_buffer_in(rope->shared->context, c.k.buffer, c.k.end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS) {
        /* q and k (rotated in place) share no byte with each other or the positions */
        clpe_operand ops[3] = {
            {.buffer = c.q.buffer, .bytes = clpe__rope_footprint(rope, &c.q, batch, seq),
             .access = CLPE_ACCESS_READ_WRITE},
            {.buffer = k ? c.k.buffer : NULL,
             .bytes = k ? clpe__rope_footprint(rope, &c.k, batch, seq)
                        : clpe__footprint_bytes(0, 0),
             .access = CLPE_ACCESS_READ_WRITE},
            clpe__positions_operand(&c.positions, batch, seq)};
        status = clpe__check_operands(ops, 3);
    }
    if (status != CLPE_SUCCESS)
        return status;
    if (batch == 0 || seq == 0)
        return clpe__enqueue_nothing(queue, num_events, wait_list, event);
    c.inverse = (flags & CLPE_ROPE_INVERSE) ? 1u : 0u;

    clpe_launch_grid grid = {.program = rope->shared, .pairs = rope->n_pairs, .seq = seq,
                             .pairs_per_item =
                                 clpe__rope_pairs_per_item(&rope->shared->shape, rope->cfg.dtype),
                             .batch = batch,
                             .shared_positions = c.positions.source == CLPE_POSITIONS_START};
    clpe_extent e[2] = {{c.q.row_pitch, c.q.batch_pitch, c.q.extent},
                        {c.k.row_pitch, c.k.batch_pitch, c.k.extent}};
    clpe__plan_launches(&rope->shared->shape, seq, batch, e, k ? 2 : 1, &grid.rows_per_launch,
                        &grid.batch_per_launch);
    grid.rows_per_item = clpe__rope_rows_per_item(
        &rope->shared->shape, grid.shared_positions, grid.batch_per_launch,
        grid.seq < grid.rows_per_launch ? grid.seq : grid.rows_per_launch,
        (grid.pairs + grid.pairs_per_item - 1) / grid.pairs_per_item);
    clpe_kernel_id id = clpe__kernel_for(CLPE_OP_ROPE, rope->cfg.dtype);
    cl_kernel kernel;
    status = clpe__kernel_acquire(rope->shared, id, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    status = set_rope_fixed_args(rope, kernel, &c, &grid);
    if (status == CLPE_SUCCESS)
        status = clpe__run_launches(&grid, queue, kernel, set_rope_launch_args, &c, false,
                                    num_events, wait_list, event);
    clpe__kernel_return(rope->shared, id, kernel);
    return status;
}

/* ---- the cos/sin cache ---- */

typedef struct cache_call {
    clpe_region cos, sin;
    int64_t start;
} cache_call;

static cl_int set_cache_launch_args(cl_kernel kernel, const void *call, size_t s0, size_t rows,
                                    size_t b0, size_t batch)
{
    const cache_call *c = call;
    (void)b0;
    (void)batch;
    cl_ulong cos_base = c->cos.offset + s0 * c->cos.row_pitch;
    cl_ulong sin_base = c->sin.offset + s0 * c->sin.row_pitch;
    cl_long start = (cl_long)((uint64_t)c->start + s0);
    cl_uint nr = (cl_uint)rows;
    cl_int err = SET(kernel, PE_ROPE_CACHE_ARG_COS_BASE, cos_base);
    if (err == CL_SUCCESS)
        err = SET(kernel, PE_ROPE_CACHE_ARG_SIN_BASE, sin_base);
    if (err == CL_SUCCESS)
        err = SET(kernel, PE_ROPE_CACHE_ARG_START, start);
    if (err == CL_SUCCESS)
        err = SET(kernel, PE_ROPE_CACHE_ARG_ROWS, nr);
    return err;
}

clpe_status clpe_enqueue_rope_cache(clpe_rope *rope, cl_command_queue queue, int64_t start,
                                    size_t n, const clpe_tensor *cos, const clpe_tensor *sin,
                                    cl_uint num_events, const cl_event *wait_list,
                                    cl_event *event)
{
    cache_call c = {.start = start};
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    size_t esize = clpe__dtype_size(rope->cfg.dtype);
    clpe_status status = clpe__check_call_on(rope->shared, queue, num_events, wait_list);
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
            status = clpe__resolve_rows(rope->rotary_dim, esize, t[j]->offset, t[j]->row_pitch,
                                        0, 1, n, r[j]);
        if (status == CLPE_SUCCESS)
            r[j]->buffer = t[j]->buffer;
    }
    if (status == CLPE_SUCCESS)
        status = clpe__check_start(start, n);
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue_on(rope->shared, queue, num_events, wait_list);
    for (int j = 0; j < 2 && status == CLPE_SUCCESS; ++j)
        status = clpe__check_buffer_in(rope->shared->context, r[j]->buffer, r[j]->end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS) {
        clpe_operand ops[2] = {
            clpe__region_operand(&c.cos, rope->rotary_dim, esize, 1, n, CLPE_ACCESS_WRITE),
            clpe__region_operand(&c.sin, rope->rotary_dim, esize, 1, n, CLPE_ACCESS_WRITE)};
        status = clpe__check_operands(ops, 2);
    }
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
    clpe_kernel_id id = clpe__kernel_for(CLPE_OP_ROPE_CACHE, rope->cfg.dtype);
    cl_kernel kernel;
    status = clpe__kernel_acquire(rope->shared, id, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    clpe_real_arg amp = clpe__real_arg(rope->cfg.dtype, rope->amplitude);
    cl_uint crp = pitch32(c.cos.row_pitch, grid.rows_per_launch),
            srp = pitch32(c.sin.row_pitch, grid.rows_per_launch);
    cl_uint n_pairs = rope->n_pairs, partner = half_split ? rope->n_pairs : 1,
            stride = half_split ? 1 : 2, rows_per_item = rope->shared->shape.rows_per_item;
    cl_int err = SET(kernel, PE_ROPE_CACHE_ARG_COS, c.cos.buffer);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_CACHE_ARG_SIN, c.sin.buffer);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_CACHE_ARG_TW_HI, rope->tw_hi_buf);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_CACHE_ARG_TW_LO, rope->tw_lo_buf);
    if (err == CL_SUCCESS) err = set_arg(kernel, PE_ROPE_CACHE_ARG_AMPLITUDE, amp.size, &amp.v);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_CACHE_ARG_COS_ROW_PITCH, crp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_CACHE_ARG_SIN_ROW_PITCH, srp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_CACHE_ARG_N_PAIRS, n_pairs);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_CACHE_ARG_PARTNER, partner);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_CACHE_ARG_STRIDE, stride);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_CACHE_ARG_ROWS_PER_ITEM, rows_per_item);
    status = err;
    if (status == CLPE_SUCCESS)
        status = clpe__run_launches(&grid, queue, kernel, set_cache_launch_args, &c, false,
                                    num_events, wait_list, event);
    clpe__kernel_return(rope->shared, id, kernel);
    return status;
}
