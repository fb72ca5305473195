/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch.c - launching the row kernels (table, add, gather).
 *
 * The arguments are numbered by PE_ROW_KERNEL_ARGS in kernels/
 * clpe_interface.h, the list the kernels declare their parameters from.
 * A call becomes one or more launches, each over a block of rows of a block
 * of sequences, small enough that every element index within it fits in 32
 * bits (GPUs spend far fewer instructions on 32-bit indices) and within the
 * device's grid; the 64-bit part of each index goes in as a base offset.
 */
#include "sinusoid/sinusoid.h"

#include "clpe_interface.h"

#include <stdlib.h>

#define INDEX_MAX ((size_t)UINT32_MAX)

static size_t ceil_div(size_t a, size_t b) { return a / b + (a % b != 0); }
static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* Largest count n <= cap with (n - 1) * step + extra <= INDEX_MAX. */
static size_t fit_count(size_t cap, size_t step, size_t extra)
{
    if (extra > INDEX_MAX)
        return 0;
    if (step == 0)
        return cap;
    return min_size(cap, (INDEX_MAX - extra) / step + 1);
}

void clpe__plan_launches(const clpe_launch_shape *shape, size_t seq, size_t batch,
                         const clpe_extent *extents, size_t count, size_t *rows,
                         size_t *sequences)
{
    size_t r = min_size(seq, shape->max_rows);
    for (size_t k = 0; k < count; ++k)
        r = fit_count(r, extents[k].row_pitch, extents[k].extent);
    r = min_size(r, INDEX_MAX - 1); /* ids and positions: s < rows */
    if (r == 0)
        r = 1;
    size_t b = min_size(batch, shape->max_batch);
    for (size_t k = 0; k < count; ++k)
        b = fit_count(b, extents[k].batch_pitch, (r - 1) * extents[k].row_pitch + extents[k].extent);
    b = seq > INDEX_MAX ? 1 : fit_count(b, seq, r);
    *rows = r;
    *sequences = b ? b : 1;
}

/* The regions a row kernel indexes in 32 bits. */
static void plan_blocks(const clpe_encoder *enc, const clpe_row_call *c, size_t *rows,
                        size_t *batch)
{
    clpe_extent e[2] = {{c->out.row_pitch, c->out.batch_pitch, enc->cfg.d},
                        {c->in.row_pitch, c->in.batch_pitch, enc->cfg.d}};
    clpe__plan_launches(&enc->shared->shape, c->seq, c->batch, e, c->op == CLPE_OP_ADD ? 2 : 1,
                        rows, batch);
}

/* A pitch the kernel multiplies only by 0 when the block has one row or
 * sequence: pass 0 rather than a value that does not fit. */
static size_t pitch_arg(size_t pitch, size_t count) { return count > 1 ? pitch : 0; }

cl_int clpe__set_kernel_arg_refs(cl_kernel kernel, const clpe_kernel_arg_ref *args,
                                 cl_uint count, uint64_t skip)
{
    for (cl_uint k = 0; k < count; ++k) {
        if (k < 64 && ((skip >> k) & 1u))
            continue;
        cl_int err = clSetKernelArg(kernel, k, args[k].size, args[k].value);
        if (err != CL_SUCCESS)
            return err;
    }
    return CL_SUCCESS;
}

cl_int clpe__set_kernel_args(cl_kernel kernel, const clpe_kernel_arg *args, cl_uint count)
{
    clpe_kernel_arg_ref refs[64];
    uint64_t skip = 0;
    for (cl_uint k = 0; k < count && k < 64; ++k) {
        refs[k] = (clpe_kernel_arg_ref){args[k].size, &args[k].v};
        if (!args[k].size)
            skip |= (uint64_t)1 << k;
    }
    return clpe__set_kernel_arg_refs(kernel, refs, count < 64 ? count : 64, skip);
}

/* Arguments that change from one launch of a call to the next. */
static bool is_per_launch(cl_uint k)
{
    switch (k) {
    case PE_ARG_OUT_BASE:
    case PE_ARG_IN_BASE:
    case PE_ARG_IDS_BASE:
    case PE_ARG_POSITIONS_BASE:
    case PE_ARG_FLAT_BASE:
    case PE_ARG_START:
    case PE_ARG_ROWS:
    case PE_ARG_BATCH:
        return true;
    default:
        return false;
    }
}

/* The arguments that stay the same for every launch of the call. */
static cl_int set_fixed_args(const clpe_encoder *enc, cl_kernel kernel, const clpe_row_call *c,
                             const clpe_launch_grid *grid, bool tile_walk)
{
    size_t rows = grid->rows_per_launch, batch = grid->batch_per_launch;
    clpe_kernel_arg a[PE_ROW_ARG_COUNT] = {{0}};
    a[PE_ARG_OUT] = clpe__arg_mem(c->out.buffer);
    a[PE_ARG_IN] = clpe__arg_mem(c->op == CLPE_OP_TABLE ? NULL : c->in.buffer);
    a[PE_ARG_IDS] = clpe__arg_mem(c->op == CLPE_OP_GATHER ? c->ids : NULL);
    a[PE_ARG_BAD_IDS] = clpe__arg_mem(c->op == CLPE_OP_GATHER ? c->bad_ids : NULL);
    a[PE_ARG_POSITIONS] = clpe__arg_mem(c->positions.buffer);
    a[PE_ARG_TW_HI] = clpe__arg_mem(enc->tw_hi_buf);
    a[PE_ARG_TW_LO] = clpe__arg_mem(enc->tw_lo_buf);
    a[PE_ARG_PADDING_POSITION] = clpe__arg_i64(enc->cfg.padding_position);
    a[PE_ARG_SCALE] = clpe__arg_real(enc->cfg.dtype, enc->cfg.scale);
    a[PE_ARG_OUT_ROW_PITCH] = clpe__arg_u32(pitch_arg(c->out.row_pitch, rows));
    a[PE_ARG_OUT_BATCH_PITCH] = clpe__arg_u32(pitch_arg(c->out.batch_pitch, batch));
    bool gather = c->op == CLPE_OP_GATHER;
    a[PE_ARG_IN_ROW_PITCH] = clpe__arg_u32(c->op == CLPE_OP_TABLE ? 0
                                     : gather ? c->in.row_pitch
                                              : pitch_arg(c->in.row_pitch, rows));
    a[PE_ARG_IN_BATCH_PITCH] = clpe__arg_u32(c->op == CLPE_OP_ADD ? pitch_arg(c->in.batch_pitch, batch) : 0);
    a[PE_ARG_D] = clpe__arg_u32(enc->cfg.d);
    a[PE_ARG_N_PAIRS] = clpe__arg_u32(enc->slots.n_pairs);
    a[PE_ARG_N_COS] = clpe__arg_u32(enc->slots.n_cos);
    a[PE_ARG_SIN_OFF] = clpe__arg_u32(enc->slots.sin_off);
    a[PE_ARG_COS_OFF] = clpe__arg_u32(enc->slots.cos_off);
    a[PE_ARG_STRIDE] = clpe__arg_u32(enc->slots.stride);
    a[PE_ARG_FLAGS] = clpe__arg_u32(enc->cfg.flags | (tile_walk ? PE_FLAG_TILE_WALK : 0u));
    a[PE_ARG_VOCAB] = clpe__arg_u32(min_size(c->vocab, INDEX_MAX));
    a[PE_ARG_SEQ] = clpe__arg_u32(c->seq > INDEX_MAX ? 0 : c->seq);
    a[PE_ARG_ROWS_PER_ITEM] = clpe__arg_u32(grid->rows_per_item);
    a[PE_ARG_POS_SOURCE] = clpe__arg_u32((size_t)c->positions.source);
    for (cl_uint k = 0; k < PE_ROW_ARG_COUNT; ++k)
        if (is_per_launch(k))
            a[k].size = 0;
    return clpe__set_kernel_args(kernel, a, PE_ROW_ARG_COUNT);
}

/* The arguments of one launch: rows [s0, s0 + rows) of sequences
 * [b0, b0 + batch). */
static cl_int set_row_launch_args(cl_kernel kernel, const void *call, size_t s0, size_t rows,
                                  size_t b0, size_t batch)
{
    const clpe_row_call *c = call;
    clpe_kernel_arg a[PE_ROW_ARG_COUNT] = {{0}};
    const clpe_position_args *pos = &c->positions;
    /* sequence-major flat index of the launch's first row: ids, positions */
    uint64_t flat = (uint64_t)b0 * c->seq + s0;
    a[PE_ARG_OUT_BASE] = clpe__arg_u64(c->out.offset + b0 * c->out.batch_pitch + s0 * c->out.row_pitch);
    a[PE_ARG_IN_BASE] = clpe__arg_u64(c->op == CLPE_OP_ADD
                                    ? c->in.offset + b0 * c->in.batch_pitch + s0 * c->in.row_pitch
                                : c->op == CLPE_OP_GATHER ? c->in.offset
                                                          : 0);
    a[PE_ARG_IDS_BASE] = clpe__arg_u64(c->op == CLPE_OP_GATHER ? c->ids_offset + flat : 0);
    a[PE_ARG_POSITIONS_BASE] =
        clpe__arg_u64(pos->source == CLPE_POSITIONS_IDS            ? pos->offset + flat
                : pos->source == CLPE_POSITIONS_PER_SEQUENCE ? pos->offset + b0
                                                             : 0);
    a[PE_ARG_FLAT_BASE] = clpe__arg_u64(flat);
    /* positions wrap modulo 2^64 like the kernels' arithmetic */
    a[PE_ARG_START] = clpe__arg_i64(pos->source == CLPE_POSITIONS_START
                                  ? (int64_t)((uint64_t)pos->start + s0)
                                  : (int64_t)s0);
    a[PE_ARG_ROWS] = clpe__arg_u32(rows);
    a[PE_ARG_BATCH] = clpe__arg_u32(batch);
    return clpe__set_kernel_args(kernel, a, PE_ROW_ARG_COUNT);
}

clpe_status clpe__run_launches(const clpe_launch_grid *grid, cl_command_queue queue,
                               cl_kernel kernel, clpe_set_launch_args set_args,
                               const void *call, bool gated, cl_uint num_events,
                               const cl_event *wait_list, cl_event *event)
{
    const clpe_launch_shape *shape = &grid->program->shape;
    size_t launches = ceil_div(grid->seq, grid->rows_per_launch) *
                      ceil_div(grid->batch, grid->batch_per_launch);
    cl_event *events = NULL;
    size_t done = 0;
    clpe_status status = CLPE_SUCCESS;
    clpe_call_gate gate = {NULL, NULL, 0};

    if (launches > 1 && event) {
        events = malloc(launches * sizeof *events);
        if (!events)
            return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (launches > 1 && !gated) {
        status = clpe__gate_open(grid->program->context, num_events, wait_list, &gate);
        if (status != CLPE_SUCCESS) {
            free(events);
            return status;
        }
        num_events = gate.num_events;
        wait_list = gate.wait_list;
    }
    /* dimension 0 counts groups of pairs_per_item pairs (and the zero
     * column's work-item); a narrow encoding gets a narrower work-group
     * rather than idle work-items */
    size_t groups = ceil_div(grid->pairs, grid->pairs_per_item) + grid->zero_column_item;
    size_t local_x = 1;
    while (local_x < groups && local_x * 2 <= shape->local_x)
        local_x *= 2;
    size_t global0 = ceil_div(groups, local_x) * local_x;
    for (size_t b0 = 0; b0 < grid->batch && status == CLPE_SUCCESS; b0 += grid->batch_per_launch) {
        size_t nb = min_size(grid->batch - b0, grid->batch_per_launch);
        for (size_t s0 = 0; s0 < grid->seq; s0 += grid->rows_per_launch) {
            size_t nr = min_size(grid->seq - s0, grid->rows_per_launch);
            /* sequences whose positions come from one start share every
             * value: one work-item serves all sequences of the launch */
            size_t global[3] = {global0, ceil_div(nr, grid->rows_per_item),
                                grid->shared_positions ? 1 : nb};
            size_t local[3] = {local_x, 1, 1};
            cl_int err = set_args(kernel, call, s0, nr, b0, nb);
            if (err == CL_SUCCESS) {
                cl_event *ev = launches == 1 ? event : (events ? &events[done] : NULL);
                err = clEnqueueNDRangeKernel(queue, kernel, 3, NULL, global, local, num_events,
                                             wait_list, ev);
            }
            if (err != CL_SUCCESS) {
                status = err;
                break;
            }
            ++done;
        }
    }
    if (status == CLPE_SUCCESS && events)
        status = clEnqueueMarkerWithWaitList(queue, (cl_uint)done, events, event);
    clpe__gate_close(&gate, status);
    if (events) {
        for (size_t k = 0; k < done; ++k)
            clReleaseEvent(events[k]);
        free(events);
    }
    return status;
}

clpe_status clpe__launch_rows(clpe_encoder *enc, cl_command_queue queue,
                              const clpe_row_call *call, bool gated, cl_uint num_events,
                              const cl_event *wait_list, cl_event *event)
{
    clpe_kernel_id id = clpe__kernel_for(call->op, enc->cfg.dtype);
    cl_kernel kernel;
    clpe_status status = clpe__kernel_acquire(enc->shared, id, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    clpe_launch_grid grid = {.program = enc->shared, .pairs = enc->slots.n_pairs,
                             .pairs_per_item =
                                 clpe__pairs_per_item(&enc->shared->shape, enc->cfg.dtype),
                             .zero_column_item = (enc->cfg.flags & CLPE_FLAG_ODD_D_ZERO_COLUMN) &&
                                                 (enc->cfg.d & 1u),
                             .seq = call->seq, .batch = call->batch,
                             .shared_positions = call->positions.source == CLPE_POSITIONS_START};
    plan_blocks(enc, call, &grid.rows_per_launch, &grid.batch_per_launch);
    cl_uint tile_pairs = clpe__tile_pairs(&enc->shared->shape, enc->cfg.dtype,
                                          grid.shared_positions, grid.batch_per_launch);
    if (tile_pairs) {
        grid.pairs_per_item = tile_pairs;
        grid.rows_per_item = enc->shared->shape.rows_per_item;
    } else {
        grid.rows_per_item = clpe__row_kernel_rows_per_item(
            &enc->shared->shape, enc->cfg.dtype, grid.shared_positions, grid.batch_per_launch,
            min_size(grid.seq, grid.rows_per_launch), ceil_div(grid.pairs, grid.pairs_per_item));
    }
    status = set_fixed_args(enc, kernel, call, &grid, tile_pairs != 0);
    if (status == CLPE_SUCCESS)
        status = clpe__run_launches(&grid, queue, kernel, set_row_launch_args, call, gated,
                                    num_events, wait_list, event);
    clpe__kernel_return(enc->shared, id, kernel);
    return status;
}
