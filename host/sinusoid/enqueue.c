/* SPDX-License-Identifier: Apache-2.0 */
/*
 * enqueue.c - the public enqueue calls: table, add, add_out, gather and
 * pad-aware positions. Each checks every argument (checks.c) before it
 * enqueues anything, then hands the row kernels to launch.c.
 */
#include "sinusoid/sinusoid.h"
#include "core/overlap.h"

#include "clpe_interface.h"

static size_t esize_of(const clpe_encoder *enc) { return clpe__dtype_size(enc->cfg.dtype); }

/* Do two regions of one buffer describe the same elements? */
static bool same_region(const clpe_region *a, const clpe_region *b, size_t batch)
{
    return a->offset == b->offset && a->row_pitch == b->row_pitch &&
           (batch <= 1 || a->batch_pitch == b->batch_pitch);
}

clpe_status clpe_enqueue_table(clpe_encoder *enc, cl_command_queue queue, int64_t start,
                               size_t n, const clpe_tensor *out, cl_uint num_events,
                               const cl_event *wait_list, cl_event *event)
{
    clpe_row_call c = {.op = CLPE_OP_TABLE, .batch = 1, .seq = n};
    c.positions.source = CLPE_POSITIONS_START;
    c.positions.start = start;
    clpe_status status = clpe__check_call(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_tensor(enc, out, 1, n, &c.out);
    if (status == CLPE_SUCCESS)
        status = clpe__check_start(start, n);
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = clpe__check_region(enc, &c.out);
    if (status == CLPE_SUCCESS) {
        clpe_operand out_op = clpe__region_operand(&c.out, enc->cfg.d, esize_of(enc), 1, n,
                                                   CLPE_ACCESS_WRITE);
        status = clpe__check_operands(&out_op, 1);
    }
    if (status != CLPE_SUCCESS)
        return status;
    if (n == 0)
        return clpe__enqueue_nothing(queue, num_events, wait_list, event);
    return clpe__launch_rows(enc, queue, &c, false, num_events, wait_list, event);
}

clpe_status clpe_enqueue_add_out(clpe_encoder *enc, cl_command_queue queue, size_t batch,
                                 size_t seq, const clpe_tensor *x, const clpe_tensor *out,
                                 const clpe_positions *positions, cl_uint num_events,
                                 const cl_event *wait_list, cl_event *event)
{
    clpe_row_call c = {.op = CLPE_OP_ADD, .batch = batch, .seq = seq};
    clpe_status status = clpe__check_call(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_tensor(enc, x, batch, seq, &c.in);
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_tensor(enc, out, batch, seq, &c.out);
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = clpe__check_positions(enc->shared->context, positions, batch, seq, &c.positions);
    if (status == CLPE_SUCCESS)
        status = clpe__check_region(enc, &c.in);
    if (status == CLPE_SUCCESS)
        status = clpe__check_region(enc, &c.out);
    if (status == CLPE_SUCCESS) {
        /* the same elements of the same buffer: the in-place add */
        bool in_place = c.in.buffer == c.out.buffer && same_region(&c.in, &c.out, batch);
        size_t d = enc->cfg.d, es = esize_of(enc);
        clpe_operand ops[3] = {
            clpe__region_operand(&c.out, d, es, batch, seq,
                                 in_place ? CLPE_ACCESS_READ_WRITE : CLPE_ACCESS_WRITE),
            clpe__positions_operand(&c.positions),
            clpe__region_operand(&c.in, d, es, batch, seq, CLPE_ACCESS_READ)};
        status = clpe__check_operands(ops, in_place ? 2 : 3);
    }
    if (status != CLPE_SUCCESS)
        return status;
    if (batch == 0 || seq == 0)
        return clpe__enqueue_nothing(queue, num_events, wait_list, event);
    return clpe__launch_rows(enc, queue, &c, false, num_events, wait_list, event);
}

clpe_status clpe_enqueue_add(clpe_encoder *enc, cl_command_queue queue, size_t batch, size_t seq,
                             const clpe_tensor *x, const clpe_positions *positions,
                             cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    return clpe_enqueue_add_out(enc, queue, batch, seq, x, x, positions, num_events, wait_list,
                                event);
}

clpe_status clpe_enqueue_gather(clpe_encoder *enc, cl_command_queue queue, size_t batch,
                                size_t seq, const clpe_token_ids *ids,
                                const clpe_tensor *embedding, clpe_dtype embedding_dtype,
                                size_t vocab, const clpe_tensor *out,
                                const clpe_positions *positions, cl_mem bad_ids,
                                cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    clpe_row_call c = {.op = CLPE_OP_GATHER, .batch = batch, .seq = seq, .vocab = vocab,
                       .bad_ids = bad_ids};
    size_t count = 0;
    clpe_status status = clpe__check_call(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS && embedding_dtype != enc->cfg.dtype)
        status = (unsigned)embedding_dtype > CLPE_DTYPE_F64 ? CLPE_ERROR_INVALID_CONFIG
                                                            : CLPE_ERROR_DTYPE_MISMATCH;
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_tensor(enc, embedding, 1, vocab, &c.in);
    if (status == CLPE_SUCCESS && vocab > 1 && c.in.row_pitch > UINT32_MAX)
        status = CLPE_ERROR_TOO_LARGE; /* the kernels step table rows in 32 bits */
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_tensor(enc, out, batch, seq, &c.out);
    if (status == CLPE_SUCCESS && !clpe__mul_size(batch, seq, &count))
        status = CLPE_ERROR_TOO_LARGE;
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = clpe__check_ids(enc, ids, count);
    if (status == CLPE_SUCCESS)
        status = clpe__check_positions(enc->shared->context, positions, batch, seq, &c.positions);
    if (status == CLPE_SUCCESS)
        status = clpe__check_region(enc, &c.in);
    if (status == CLPE_SUCCESS)
        status = clpe__check_region(enc, &c.out);
    if (status == CLPE_SUCCESS && bad_ids)
        status = clpe__check_buffer(enc, bad_ids, 2 * sizeof(cl_uint), CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS) {
        /* nothing written (the output, the report) may share a byte with
         * anything else of the call */
        size_t d = enc->cfg.d, es = esize_of(enc);
        clpe_operand ops[5] = {
            clpe__region_operand(&c.out, d, es, batch, seq, CLPE_ACCESS_WRITE),
            {.buffer = bad_ids, .bytes = clpe__footprint_bytes(0, 2 * sizeof(cl_uint)),
             .access = CLPE_ACCESS_READ_WRITE},
            clpe__region_operand(&c.in, d, es, 1, vocab, CLPE_ACCESS_READ),
            clpe__ids_operand(ids, count),
            clpe__positions_operand(&c.positions)};
        status = clpe__check_operands(ops, 5);
    }
    if (status != CLPE_SUCCESS)
        return status;
    c.ids = ids->buffer;
    c.ids_offset = ids->offset / sizeof(cl_int);

    /* Reset the report first; the launches wait for it, and it waits behind
     * the call's gate so that a failure later in the call undoes it. */
    cl_event reset = NULL;
    clpe_call_gate gate = {NULL, NULL, 0};
    if (bad_ids) {
        cl_uint fresh[2] = {0, 0xFFFFFFFFu};
        status = clpe__gate_open(enc->shared->context, num_events, wait_list, &gate);
        if (status != CLPE_SUCCESS)
            return status;
        status = clEnqueueFillBuffer(queue, bad_ids, fresh, sizeof fresh, 0, sizeof fresh,
                                     gate.num_events, gate.wait_list, &reset);
        if (status != CLPE_SUCCESS) {
            clpe__gate_close(&gate, status);
            return status;
        }
        num_events = 1;
        wait_list = &reset;
    }
    if (count == 0)
        status = clpe__enqueue_nothing(queue, num_events, wait_list, event);
    else
        status = clpe__launch_rows(enc, queue, &c, reset != NULL, num_events, wait_list, event);
    clpe__gate_close(&gate, status);
    if (reset)
        clReleaseEvent(reset);
    return status;
}

/* Pad-aware positions count up from first_position by at most seq - 1:
 * every value written must stay inside int64 (pad_position is written as
 * given). */
static clpe_status check_pad_positions(int64_t first_position, size_t seq)
{
    return clpe__check_start(first_position, seq);
}

clpe_status clpe_enqueue_pad_positions(clpe_encoder *enc, cl_command_queue queue, size_t batch,
                                       size_t seq, const clpe_token_ids *ids, int32_t pad_id,
                                       int64_t first_position, int64_t pad_position,
                                       cl_mem positions_out, size_t positions_offset,
                                       cl_uint num_events, const cl_event *wait_list,
                                       cl_event *event)
{
    size_t count = 0, bytes = 0;
    clpe_status status = clpe__check_call(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS && !positions_out)
        status = CLPE_ERROR_NULL_BUFFER;
    if (status == CLPE_SUCCESS && positions_offset % sizeof(cl_long))
        status = CLPE_ERROR_MISALIGNED_OFFSET;
    if (status == CLPE_SUCCESS &&
        (!clpe__mul_size(batch, seq, &count) || !clpe__mul_size(count, sizeof(cl_long), &bytes) ||
         !clpe__add_size(bytes, positions_offset, &bytes)))
        status = CLPE_ERROR_TOO_LARGE;
    if (status == CLPE_SUCCESS)
        status = check_pad_positions(first_position, seq);
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = clpe__check_ids(enc, ids, count);
    if (status == CLPE_SUCCESS) {
        clpe_operand ops[2] = {
            {.buffer = positions_out,
             .bytes = clpe__footprint_bytes(positions_offset, count * sizeof(cl_long)),
             .access = CLPE_ACCESS_WRITE},
            clpe__ids_operand(ids, count)};
        status = clpe__check_operands(ops, 2);
    }
    if (status == CLPE_SUCCESS)
        status = clpe__check_buffer(enc, positions_out, bytes, CLPE_ERROR_INDEX_BUFFER_TOO_SMALL);
    if (status != CLPE_SUCCESS)
        return status;
    if (count == 0)
        return clpe__enqueue_nothing(queue, num_events, wait_list, event);

    cl_kernel kernel;
    status = clpe__kernel_acquire(enc->shared, CLPE_KERNEL_PAD_POSITIONS, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    cl_ulong ids_base = ids->offset / sizeof(cl_int), positions_base = positions_offset / sizeof(cl_long);
    cl_ulong seq_arg = seq;
    cl_int pad = pad_id;
    cl_long first = first_position, padpos = pad_position;
    clpe_kernel_arg args[PE_PAD_ARG_COUNT];
    args[PE_PAD_ARG_IDS] = clpe__arg_mem(ids->buffer);
    args[PE_PAD_ARG_IDS_BASE] = clpe__arg_u64(ids_base);
    args[PE_PAD_ARG_POSITIONS_OUT] = clpe__arg_mem(positions_out);
    args[PE_PAD_ARG_POSITIONS_BASE] = clpe__arg_u64(positions_base);
    args[PE_PAD_ARG_SEQ] = clpe__arg_u64(seq_arg);
    args[PE_PAD_ARG_PAD_ID] = (clpe_kernel_arg){sizeof(cl_int), {.u32 = (cl_uint)pad}};
    args[PE_PAD_ARG_FIRST_POSITION] = clpe__arg_i64(first);
    args[PE_PAD_ARG_PAD_POSITION] = clpe__arg_i64(padpos);
    if (status == CLPE_SUCCESS)
        status = clpe__set_kernel_args(kernel, args, PE_PAD_ARG_COUNT);
    if (status == CLPE_SUCCESS) {
        size_t global = batch;
        status = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, num_events,
                                        wait_list, event);
    }
    clpe__kernel_return(enc->shared, CLPE_KERNEL_PAD_POSITIONS, kernel);
    return status;
}
