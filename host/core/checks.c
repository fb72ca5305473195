/* SPDX-License-Identifier: Apache-2.0 */
/*
 * checks.c - the argument checks every call shares: the call itself (object,
 * queue, wait list), regions of buffers, positions and their operands.
 *
 * Every check runs before anything is enqueued, so an invalid call changes
 * nothing. The host emulation resolves its regions with the same code
 * (clpe__resolve_rows), so host and device calls accept the same shapes.
 */
#include "device/device.h"
#include "core/overlap.h"

clpe_status clpe__check_call_on(const clpe_program_shared *shared, cl_command_queue queue,
                                cl_uint num_events, const cl_event *wait_list)
{
    if (!shared)
        return CLPE_ERROR_HOST_ONLY;
    if (!queue)
        return CLPE_ERROR_NULL_QUEUE;
    if ((num_events == 0) != (wait_list == NULL))
        return CLPE_ERROR_INVALID_WAIT_LIST;
    for (cl_uint k = 0; k < num_events; ++k)
        if (!wait_list[k])
            return CLPE_ERROR_INVALID_WAIT_LIST;
    return CLPE_SUCCESS;
}

/* Is e an event (its context in *context)? The runtime must answer the
 * queries, and with values an event has: a command type of the range OpenCL
 * and its extensions assign (0x11F0 up; other objects' fields read as one
 * are flags or sizes), an execution status that is one of the four states
 * or an error, and a reference held. */
static bool is_event(cl_event e, cl_context *context)
{
    cl_command_type type = 0;
    cl_int state = 0;
    cl_uint refs = 0;
    if (clGetEventInfo(e, CL_EVENT_CONTEXT, sizeof *context, context, NULL) != CL_SUCCESS ||
        clGetEventInfo(e, CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL) != CL_SUCCESS ||
        clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state, NULL) !=
            CL_SUCCESS ||
        clGetEventInfo(e, CL_EVENT_REFERENCE_COUNT, sizeof refs, &refs, NULL) != CL_SUCCESS)
        return false;
    return type >= CL_COMMAND_NDRANGE_KERNEL && type <= 0xFFFFu && state <= CL_QUEUED &&
           refs > 0 && *context != NULL;
}

clpe_status clpe__check_queue_on(const clpe_program_shared *shared, cl_command_queue queue,
                                 cl_uint num_events, const cl_event *wait_list)
{
    cl_context ctx = NULL;
    cl_device_id dev = NULL;
    cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err != CL_SUCCESS)
        return err;
    if (ctx != shared->context)
        return CLPE_ERROR_CONTEXT_MISMATCH;
    err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    if (err != CL_SUCCESS)
        return err;
    if (dev != shared->device)
        return CLPE_ERROR_DEVICE_MISMATCH;
    /* Each event must be an event, of this context: some runtimes accept a
     * foreign one and run the command anyway, and some answer event queries
     * on any object, so that a cl_mem passed as an event would be waited on
     * forever. */
    for (cl_uint k = 0; k < num_events; ++k) {
        cl_context event_ctx = NULL;
        if (!is_event(wait_list[k], &event_ctx))
            return CLPE_ERROR_INVALID_WAIT_LIST;
        if (event_ctx != ctx)
            return CLPE_ERROR_CONTEXT_MISMATCH;
    }
    return CLPE_SUCCESS;
}

clpe_status clpe__resolve_rows(size_t d, size_t esize, size_t offset_bytes, size_t row_pitch,
                               size_t batch_pitch, size_t batch, size_t seq, clpe_region *r)
{
    r->row_pitch = row_pitch ? row_pitch : d;
    if (r->row_pitch < d)
        return CLPE_ERROR_INVALID_PITCH;
    if (offset_bytes % esize)
        return CLPE_ERROR_MISALIGNED_OFFSET;
    r->offset = offset_bytes / esize;
    if (batch_pitch) {
        r->batch_pitch = batch_pitch;
    } else if (!clpe__mul_size(seq, r->row_pitch, &r->batch_pitch)) {
        return CLPE_ERROR_TOO_LARGE;
    }
    if (batch > 1 && seq > 0) {
        /* sequence b must end before sequence b+1 starts */
        size_t span;
        if (!clpe__mul_size(seq - 1, r->row_pitch, &span) || !clpe__add_size(span, d, &span))
            return CLPE_ERROR_TOO_LARGE;
        if (r->batch_pitch < span)
            return CLPE_ERROR_INVALID_PITCH;
    }
    /* the byte just past the last element touched must be addressable */
    r->end_bytes = 0;
    if (batch > 0 && seq > 0) {
        size_t last = 0, t = 0;
        if (!clpe__mul_size(batch - 1, r->batch_pitch, &last) ||
            !clpe__mul_size(seq - 1, r->row_pitch, &t) || !clpe__add_size(last, t, &last) ||
            !clpe__add_size(last, d, &last) || !clpe__add_size(last, r->offset, &last) ||
            !clpe__mul_size(last, esize, &r->end_bytes))
            return CLPE_ERROR_TOO_LARGE;
    }
    return CLPE_SUCCESS;
}

clpe_status clpe__check_buffer_in(cl_context context, cl_mem buffer, size_t bytes,
                                  clpe_status too_small)
{
    cl_context ctx = NULL;
    size_t size = 0;
    cl_int err = clGetMemObjectInfo(buffer, CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err != CL_SUCCESS)
        return err;
    if (ctx != context)
        return CLPE_ERROR_CONTEXT_MISMATCH;
    err = clGetMemObjectInfo(buffer, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != CL_SUCCESS)
        return err;
    return bytes > size ? too_small : CLPE_SUCCESS;
}

clpe_status clpe__check_start(int64_t start, size_t count)
{
    if (count == 0)
        return CLPE_SUCCESS;
    uint64_t room = (uint64_t)INT64_MAX - (uint64_t)start;
    return (uint64_t)(count - 1) > room ? CLPE_ERROR_POSITION_OVERFLOW : CLPE_SUCCESS;
}

clpe_status clpe__resolve_positions(clpe_position_source source, int64_t start,
                                    bool has_values, size_t offset_bytes, uint32_t streams,
                                    size_t batch, size_t seq, clpe_position_args *out)
{
    size_t tokens = 0, count = 0;
    *out = (clpe_position_args){.source = CLPE_POSITIONS_START};
    if (source != CLPE_POSITIONS_START && source != CLPE_POSITIONS_PER_SEQUENCE &&
        !clpe__mul_size(batch, seq, &tokens))
        return CLPE_ERROR_TOO_LARGE;
    switch (source) {
    case CLPE_POSITIONS_START:
        out->start = start;
        return clpe__check_start(start, seq);
    case CLPE_POSITIONS_PER_SEQUENCE:
        count = batch;
        break;
    case CLPE_POSITIONS_IDS:
        count = tokens;
        break;
    case CLPE_POSITIONS_STREAMS:
    case CLPE_POSITIONS_STREAMS_TOKEN_FIRST:
        if (!streams)
            return CLPE_ERROR_INVALID_POSITIONS; /* rotary only */
        if (!clpe__mul_size(tokens, streams, &count))
            return CLPE_ERROR_TOO_LARGE;
        bool first = source == CLPE_POSITIONS_STREAMS;
        out->stream_pitch = first ? tokens : 1;
        out->token_pitch = first ? 1 : streams;
        break;
    default:
        return CLPE_ERROR_INVALID_POSITIONS;
    }
    if (!has_values)
        return CLPE_ERROR_INVALID_POSITIONS;
    if (offset_bytes % sizeof(int64_t))
        return CLPE_ERROR_MISALIGNED_OFFSET;
    size_t bytes;
    if (!clpe__mul_size(count, sizeof(int64_t), &bytes) ||
        !clpe__add_size(bytes, offset_bytes, &bytes))
        return CLPE_ERROR_TOO_LARGE;
    out->source = source;
    out->offset = offset_bytes / sizeof(int64_t);
    out->count = count;
    return CLPE_SUCCESS;
}

clpe_status clpe__check_stream_positions(cl_context context, const clpe_positions *pos,
                                         uint32_t streams, size_t batch, size_t seq,
                                         clpe_position_args *out)
{
    *out = (clpe_position_args){.source = CLPE_POSITIONS_START};
    if (!pos)
        return CLPE_SUCCESS;
    if (!CLPE__RESERVED_ZERO(pos))
        return CLPE_ERROR_RESERVED_FIELD;
    clpe_status status = clpe__resolve_positions(pos->source, pos->start, pos->buffer != NULL,
                                                 pos->offset, streams, batch, seq, out);
    if (status != CLPE_SUCCESS || out->source == CLPE_POSITIONS_START)
        return status;
    status = clpe__check_buffer_in(context, pos->buffer,
                                   pos->offset + out->count * sizeof(int64_t),
                                   CLPE_ERROR_INDEX_BUFFER_TOO_SMALL);
    out->buffer = pos->buffer;
    return status;
}

clpe_status clpe__check_positions(cl_context context, const clpe_positions *pos,
                                  size_t batch, size_t seq, clpe_position_args *out)
{
    return clpe__check_stream_positions(context, pos, 0, batch, seq, out);
}

clpe_operand clpe__region_operand(const clpe_region *r, size_t d, size_t esize, size_t batch,
                                  size_t seq, clpe_access access)
{
    return (clpe_operand){.buffer = r->buffer,
                          .bytes = clpe__footprint_region(r, d, esize, batch, seq),
                          .access = access};
}

clpe_operand clpe__positions_operand(const clpe_position_args *p)
{
    /* the values read were counted when the source was resolved */
    return (clpe_operand){.buffer = p->count ? p->buffer : NULL,
                          .host = p->count ? p->host : NULL,
                          .bytes = clpe__footprint_bytes(p->offset * sizeof(int64_t),
                                                         p->count * sizeof(int64_t)),
                          .access = CLPE_ACCESS_READ};
}

clpe_operand clpe__ids_operand(const clpe_token_ids *ids, size_t count)
{
    return (clpe_operand){.buffer = ids->buffer,
                          .bytes = clpe__footprint_bytes(ids->offset, count * sizeof(cl_int)),
                          .access = CLPE_ACCESS_READ};
}
