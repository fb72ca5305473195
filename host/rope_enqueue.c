/*
 * rope_enqueue.c - the rotary enqueue calls: rotating queries and keys in
 * place, and writing the cos/sin cache. Every argument is checked before
 * anything is enqueued; launches are split as for the row kernels.
 */
#include "internal.h"

#include "clpe_interface.h"

#define INDEX_MAX ((size_t)UINT32_MAX)

typedef clpe_rope_region rope_region;

typedef struct rope_call {
    const clpe_rope *rope;
    rope_region q, k;        /* k.buffer NULL: queries only */
    clpe_position_args positions;
    size_t batch, seq;
    uint32_t inverse;
} rope_call;

/* One of (count, pitch) nested dimensions; sorted by pitch, each must start
 * past the end of the one inside it, so no two elements coincide. */
typedef struct dim {
    size_t count, pitch;
} dim;

static clpe_status check_no_overlap(dim dims[3], size_t head_dim, size_t *extent_all)
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
        size_t span;
        if (!clpe__mul_size(dims[j].count - 1, dims[j].pitch, &span) ||
            !clpe__add_size(span, extent, &extent))
            return CLPE_ERROR_TOO_LARGE;
    }
    *extent_all = extent;
    return CLPE_SUCCESS;
}

static clpe_status resolve_rope_tensor(const clpe_rope *rope, const clpe_rope_tensor *t,
                                       size_t batch, size_t seq, rope_region *r)
{
    return clpe__resolve_rope_tensor(rope->cfg.head_dim, clpe__dtype_size(rope->cfg.dtype), t,
                                     batch, seq, r);
}

clpe_status clpe__resolve_rope_tensor(size_t head_dim, size_t esize, const clpe_rope_tensor *t,
                                      size_t batch, size_t seq, clpe_rope_region *r)
{
    if (!t)
        return CLPE_ERROR_NULL_POINTER;
    if (!t->buffer)
        return CLPE_ERROR_NULL_BUFFER;
    if (!CLPE__RESERVED_ZERO(t))
        return CLPE_ERROR_RESERVED_FIELD;
    if (t->heads == 0)
        return CLPE_ERROR_INVALID_ROPE;
    if (t->offset % esize)
        return CLPE_ERROR_MISALIGNED_OFFSET;
    r->buffer = t->buffer;
    r->heads = t->heads;
    r->offset = t->offset / esize;
    r->head_pitch = t->head_pitch ? t->head_pitch : head_dim;
    if (r->head_pitch < head_dim && t->heads > 1)
        return CLPE_ERROR_INVALID_PITCH;
    if (t->row_pitch) {
        r->row_pitch = t->row_pitch;
    } else if (!clpe__mul_size(t->heads, r->head_pitch, &r->row_pitch)) {
        return CLPE_ERROR_TOO_LARGE;
    }
    if (t->batch_pitch) {
        r->batch_pitch = t->batch_pitch;
    } else if (!clpe__mul_size(seq, r->row_pitch, &r->batch_pitch)) {
        return CLPE_ERROR_TOO_LARGE;
    }
    dim dims[3] = {{t->heads, r->head_pitch}, {seq, r->row_pitch}, {batch, r->batch_pitch}};
    size_t all;
    clpe_status status = check_no_overlap(dims, head_dim, &all);
    if (status != CLPE_SUCCESS)
        return status;
    if (!clpe__mul_size(t->heads - 1, r->head_pitch, &r->extent) ||
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
    cl_ulong k_base = c->k.buffer ? c->k.offset + b0 * c->k.batch_pitch + s0 * c->k.row_pitch : 0;
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
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_INVERSE, inverse);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_SEQ, seq);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_ROWS_PER_ITEM, rows_per_item);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_ARG_POS_SOURCE, source);
    return err;
}

/* Do [a, a_end) and [b, b_end) of one buffer intersect? */
static bool bytes_overlap(const rope_region *a, const rope_region *b)
{
    return a->buffer == b->buffer && a->begin_bytes < b->end_bytes &&
           b->begin_bytes < a->end_bytes;
}

clpe_status clpe_enqueue_rope(clpe_rope *rope, cl_command_queue queue, size_t batch, size_t seq,
                              const clpe_rope_tensor *q, const clpe_rope_tensor *k,
                              const clpe_positions *positions, uint32_t flags,
                              cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    rope_call c = {.rope = rope, .batch = batch, .seq = seq};
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    clpe_status status = clpe__check_call_on(rope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS && (flags & ~CLPE_ROPE_INVERSE))
        status = CLPE_ERROR_INVALID_CONFIG;
    if (status == CLPE_SUCCESS)
        status = resolve_rope_tensor(rope, q, batch, seq, &c.q);
    if (status == CLPE_SUCCESS && k)
        status = resolve_rope_tensor(rope, k, batch, seq, &c.k);
    if (status == CLPE_SUCCESS && k && bytes_overlap(&c.q, &c.k))
        status = CLPE_ERROR_ALIASING;
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue_on(rope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = clpe__check_positions(rope->shared->context, positions, batch, seq, &c.positions);
    if (status == CLPE_SUCCESS && c.positions.buffer &&
        (c.positions.buffer == c.q.buffer || c.positions.buffer == c.k.buffer))
        status = CLPE_ERROR_ALIASING; /* positions read while q or k is written */
    if (status == CLPE_SUCCESS)
        status = clpe__check_buffer_in(rope->shared->context, c.q.buffer, c.q.end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS && k)
        status = clpe__check_buffer_in(rope->shared->context, c.k.buffer, c.k.end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
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
    if (status == CLPE_SUCCESS && c.cos.buffer == c.sin.buffer)
        status = CLPE_ERROR_ALIASING;
    if (status == CLPE_SUCCESS)
        status = clpe__check_start(start, n);
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue_on(rope->shared, queue, num_events, wait_list);
    for (int j = 0; j < 2 && status == CLPE_SUCCESS; ++j)
        status = clpe__check_buffer_in(rope->shared->context, r[j]->buffer, r[j]->end_bytes,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
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
