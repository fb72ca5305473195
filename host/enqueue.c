/*
 * enqueue.c - argument checks and kernel launches for table and fused add.
 *
 * Every argument is checked before anything is enqueued, so an invalid call
 * changes nothing. Large problems become several launches (see
 * clpe_launch_shape); they write disjoint rows, and a marker joins them
 * into the caller's one event.
 */
#include "internal.h"

#include <stdlib.h>

/* A [batch, seq, d] region with its defaults resolved, in elements. */
typedef struct region {
    cl_mem buffer;
    size_t offset;       /* elements */
    size_t row_pitch;
    size_t batch_pitch;
} region;

/* Which kernel and how its per-launch arguments are numbered. */
typedef struct launch_plan {
    clpe_kernel_id kernel_id;
    cl_uint arg_s0, arg_s_end, arg_b0; /* arg_b0 == 0: kernel has no b0 */
    size_t batch, seq;
} launch_plan;

static clpe_status check_queue(const clpe_encoder *enc, cl_command_queue queue)
{
    cl_context ctx = NULL;
    cl_device_id dev = NULL;
    cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err != CL_SUCCESS)
        return err;
    if (ctx != enc->shared->context)
        return CLPE_ERROR_CONTEXT_MISMATCH;
    err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    if (err != CL_SUCCESS)
        return err;
    if (dev != enc->shared->device)
        return CLPE_ERROR_DEVICE_MISMATCH;
    return CLPE_SUCCESS;
}

static clpe_status check_common(const clpe_encoder *enc, cl_command_queue queue,
                                cl_uint num_events, const cl_event *wait_list)
{
    if (!enc)
        return CLPE_ERROR_NULL_ENCODER;
    if (!enc->shared)
        return CLPE_ERROR_HOST_ONLY;
    if (!queue)
        return CLPE_ERROR_NULL_QUEUE;
    if ((num_events == 0) != (wait_list == NULL))
        return CLPE_ERROR_INVALID_WAIT_LIST;
    return CLPE_SUCCESS;
}

/* Resolve a tensor's defaults and check its shape (not yet its buffer). */
static clpe_status resolve_tensor(const clpe_encoder *enc, const clpe_tensor *t, size_t batch,
                                  size_t seq, region *r)
{
    size_t esize = clpe__dtype_size(enc->cfg.dtype);
    size_t d = enc->cfg.d;
    if (!t)
        return CLPE_ERROR_NULL_POINTER;
    if (!t->buffer)
        return CLPE_ERROR_NULL_BUFFER;
    r->buffer = t->buffer;
    r->row_pitch = t->row_pitch ? t->row_pitch : d;
    if (r->row_pitch < d)
        return CLPE_ERROR_INVALID_PITCH;
    if (t->offset % esize)
        return CLPE_ERROR_MISALIGNED_OFFSET;
    r->offset = t->offset / esize;
    if (t->batch_pitch) {
        r->batch_pitch = t->batch_pitch;
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
    return CLPE_SUCCESS;
}

/* The buffer belongs to our context and holds `bytes` bytes. */
static clpe_status check_buffer(const clpe_encoder *enc, cl_mem buffer, size_t bytes,
                                clpe_status too_small)
{
    cl_context ctx = NULL;
    size_t size = 0;
    cl_int err = clGetMemObjectInfo(buffer, CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err != CL_SUCCESS)
        return err;
    if (ctx != enc->shared->context)
        return CLPE_ERROR_CONTEXT_MISMATCH;
    err = clGetMemObjectInfo(buffer, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != CL_SUCCESS)
        return err;
    return bytes > size ? too_small : CLPE_SUCCESS;
}

/* Bytes from the buffer's start to the end of the last element touched. */
static clpe_status region_end(const clpe_encoder *enc, const region *r, size_t batch, size_t seq,
                              size_t *bytes)
{
    size_t last = 0, t = 0;
    if (batch == 0 || seq == 0) {
        *bytes = 0;
        return CLPE_SUCCESS;
    }
    if (!clpe__mul_size(batch - 1, r->batch_pitch, &last) ||
        !clpe__mul_size(seq - 1, r->row_pitch, &t) || !clpe__add_size(last, t, &last) ||
        !clpe__add_size(last, enc->cfg.d, &last) || !clpe__add_size(last, r->offset, &last) ||
        !clpe__mul_size(last, clpe__dtype_size(enc->cfg.dtype), bytes))
        return CLPE_ERROR_TOO_LARGE;
    return CLPE_SUCCESS;
}

static clpe_status check_region(const clpe_encoder *enc, const region *r, size_t batch, size_t seq)
{
    size_t bytes;
    clpe_status status = region_end(enc, r, batch, seq, &bytes);
    if (status != CLPE_SUCCESS)
        return status;
    return check_buffer(enc, r->buffer, bytes, CLPE_ERROR_BUFFER_TOO_SMALL);
}

/* Rows [start, start + count) stay inside int64. */
static clpe_status check_start(int64_t start, size_t count)
{
    if (count == 0)
        return CLPE_SUCCESS;
    uint64_t room = (uint64_t)INT64_MAX - (uint64_t)start;
    return (uint64_t)(count - 1) > room ? CLPE_ERROR_POSITION_OVERFLOW : CLPE_SUCCESS;
}

/* Check a position source; *buffer and *offset (elements) are what the
 * kernel gets. */
static clpe_status check_positions(const clpe_encoder *enc, const clpe_positions *pos,
                                   size_t batch, size_t seq, cl_mem *buffer, size_t *offset)
{
    *buffer = NULL;
    *offset = 0;
    if (!pos)
        return CLPE_SUCCESS;
    size_t count;
    switch (pos->source) {
    case CLPE_POSITIONS_START:
        return check_start(pos->start, seq);
    case CLPE_POSITIONS_PER_SEQUENCE:
        count = batch;
        break;
    case CLPE_POSITIONS_IDS:
        if (!clpe__mul_size(batch, seq, &count))
            return CLPE_ERROR_TOO_LARGE;
        break;
    default:
        return CLPE_ERROR_INVALID_POSITIONS;
    }
    if (!pos->buffer)
        return CLPE_ERROR_NULL_BUFFER;
    if (pos->offset % sizeof(int64_t))
        return CLPE_ERROR_MISALIGNED_OFFSET;
    size_t bytes;
    if (!clpe__mul_size(count, sizeof(int64_t), &bytes) ||
        !clpe__add_size(bytes, pos->offset, &bytes))
        return CLPE_ERROR_TOO_LARGE;
    clpe_status status = check_buffer(enc, pos->buffer, bytes, CLPE_ERROR_INDEX_BUFFER_TOO_SMALL);
    if (status != CLPE_SUCCESS)
        return status;
    *buffer = pos->buffer;
    *offset = pos->offset / sizeof(int64_t);
    return CLPE_SUCCESS;
}

/* Nothing to compute: still honour the event contract. */
static clpe_status enqueue_nothing(cl_command_queue queue, cl_uint num_events,
                                   const cl_event *wait_list, cl_event *event)
{
    if (!event)
        return CLPE_SUCCESS;
    return clEnqueueMarkerWithWaitList(queue, num_events, wait_list, event);
}

static size_t ceil_div(size_t a, size_t b) { return a / b + (a % b != 0); }

/* Launch `kernel` (its fixed arguments already set) over every chunk of
 * the plan. On failure, launches already enqueued stay enqueued (each
 * writes only its own rows) and the error is returned. */
static clpe_status run_launches(clpe_encoder *enc, cl_command_queue queue, cl_kernel kernel,
                                const launch_plan *plan, cl_uint num_events,
                                const cl_event *wait_list, cl_event *event)
{
    const clpe_launch_shape *shape = &enc->shared->shape;
    size_t rows_per_launch = shape->max_items_dim1 * shape->rows_per_item;
    size_t batch_per_launch = plan->arg_b0 ? shape->max_items_dim2 : 1;
    size_t launches = ceil_div(plan->seq, rows_per_launch) * ceil_div(plan->batch, batch_per_launch);
    cl_event *events = NULL;
    size_t done = 0;
    clpe_status status = CLPE_SUCCESS;

    if (launches > 1 && event) {
        events = malloc(launches * sizeof *events);
        if (!events)
            return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    }
    size_t global0 = ceil_div(enc->half_d, shape->local_x) * shape->local_x;
    for (size_t b0 = 0; b0 < plan->batch && status == CLPE_SUCCESS; b0 += batch_per_launch) {
        size_t nb = plan->batch - b0 < batch_per_launch ? plan->batch - b0 : batch_per_launch;
        for (size_t s0 = 0; s0 < plan->seq; s0 += rows_per_launch) {
            cl_ulong s0_arg = s0;
            cl_ulong s_end = plan->seq - s0 < rows_per_launch ? plan->seq : s0 + rows_per_launch;
            cl_ulong b0_arg = b0;
            size_t global[3] = {global0, ceil_div(s_end - s0, shape->rows_per_item), nb};
            size_t local[3] = {shape->local_x, 1, 1};
            cl_int err = clSetKernelArg(kernel, plan->arg_s0, sizeof s0_arg, &s0_arg);
            if (err == CL_SUCCESS)
                err = clSetKernelArg(kernel, plan->arg_s_end, sizeof s_end, &s_end);
            if (err == CL_SUCCESS && plan->arg_b0)
                err = clSetKernelArg(kernel, plan->arg_b0, sizeof b0_arg, &b0_arg);
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
    if (events) {
        for (size_t k = 0; k < done; ++k)
            clReleaseEvent(events[k]);
        free(events);
    }
    return status;
}

/* Set consecutive kernel arguments from a list of (size, pointer) pairs. */
typedef struct kernel_arg {
    size_t size;
    const void *value;
} kernel_arg;

static cl_int set_args(cl_kernel kernel, const kernel_arg *args, cl_uint count)
{
    for (cl_uint k = 0; k < count; ++k) {
        cl_int err = clSetKernelArg(kernel, k, args[k].size, args[k].value);
        if (err != CL_SUCCESS)
            return err;
    }
    return CL_SUCCESS;
}

#define ARG(v) {sizeof(v), &(v)}

clpe_status clpe_enqueue_table(clpe_encoder *enc, cl_command_queue queue, int64_t start,
                               size_t n, const clpe_tensor *out, cl_uint num_events,
                               const cl_event *wait_list, cl_event *event)
{
    region r;
    clpe_status status = check_common(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(enc, out, 1, n, &r);
    if (status == CLPE_SUCCESS)
        status = check_start(start, n);
    if (status == CLPE_SUCCESS)
        status = check_queue(enc, queue);
    if (status == CLPE_SUCCESS)
        status = check_region(enc, &r, 1, n);
    if (status != CLPE_SUCCESS)
        return status;
    if (n == 0)
        return enqueue_nothing(queue, num_events, wait_list, event);

    cl_kernel kernel;
    status = clpe__kernel_acquire(enc->shared, CLPE_KERNEL_TABLE_F32, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    cl_ulong off = r.offset, rp = r.row_pitch, zero = 0;
    cl_uint half_d = enc->half_d, split = enc->cfg.layout == CLPE_LAYOUT_SPLIT;
    cl_uint rows_per_item = enc->shared->shape.rows_per_item;
    cl_long start_arg = start;
    kernel_arg args[] = {ARG(r.buffer), ARG(off),   ARG(rp),           ARG(half_d),
                         ARG(split),    ARG(zero),  ARG(zero),         ARG(rows_per_item),
                         ARG(start_arg), ARG(enc->tw_hi_buf), ARG(enc->tw_lo_buf)};
    status = set_args(kernel, args, sizeof args / sizeof args[0]);
    if (status == CLPE_SUCCESS) {
        launch_plan plan = {CLPE_KERNEL_TABLE_F32, 5, 6, 0, 1, n};
        status = run_launches(enc, queue, kernel, &plan, num_events, wait_list, event);
    }
    clpe__kernel_return(enc->shared, CLPE_KERNEL_TABLE_F32, kernel);
    return status;
}

clpe_status clpe_enqueue_add(clpe_encoder *enc, cl_command_queue queue, size_t batch, size_t seq,
                             const clpe_tensor *x, const clpe_positions *positions,
                             cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    region r;
    cl_mem pos_buf = NULL;
    size_t pos_off = 0;
    clpe_status status = check_common(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(enc, x, batch, seq, &r);
    if (status == CLPE_SUCCESS)
        status = check_queue(enc, queue);
    if (status == CLPE_SUCCESS)
        status = check_positions(enc, positions, batch, seq, &pos_buf, &pos_off);
    if (status == CLPE_SUCCESS)
        status = check_region(enc, &r, batch, seq);
    if (status != CLPE_SUCCESS)
        return status;
    if (batch == 0 || seq == 0)
        return enqueue_nothing(queue, num_events, wait_list, event);

    cl_kernel kernel;
    status = clpe__kernel_acquire(enc->shared, CLPE_KERNEL_ADD_F32, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    cl_ulong off = r.offset, rp = r.row_pitch, bp = r.batch_pitch, seq_arg = seq, zero = 0;
    cl_uint half_d = enc->half_d, split = enc->cfg.layout == CLPE_LAYOUT_SPLIT;
    cl_uint rows_per_item = enc->shared->shape.rows_per_item;
    cl_uint source = positions ? (cl_uint)positions->source : CLPE_POSITIONS_START;
    cl_long start = positions && positions->source == CLPE_POSITIONS_START ? positions->start : 0;
    cl_ulong pos_off_arg = pos_off;
    cl_float scale = (cl_float)enc->cfg.scale;
    kernel_arg args[] = {ARG(r.buffer), ARG(r.buffer), ARG(off),     ARG(rp),
                         ARG(bp),       ARG(off),      ARG(rp),      ARG(bp),
                         ARG(scale),    ARG(half_d),   ARG(split),   ARG(seq_arg),
                         ARG(zero),     ARG(zero),     ARG(zero),    ARG(rows_per_item),
                         ARG(source),   ARG(start),    ARG(pos_buf), ARG(pos_off_arg),
                         ARG(enc->tw_hi_buf), ARG(enc->tw_lo_buf)};
    status = set_args(kernel, args, sizeof args / sizeof args[0]);
    if (status == CLPE_SUCCESS) {
        launch_plan plan = {CLPE_KERNEL_ADD_F32, 12, 13, 14, batch, seq};
        status = run_launches(enc, queue, kernel, &plan, num_events, wait_list, event);
    }
    clpe__kernel_return(enc->shared, CLPE_KERNEL_ADD_F32, kernel);
    return status;
}
