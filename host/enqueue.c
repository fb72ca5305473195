/*
 * enqueue.c - argument checks and kernel launches: table, add, gather and
 * pad-aware positions.
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

/* How a kernel's per-launch arguments are numbered, and the problem size. */
typedef struct launch_plan {
    cl_uint arg_s0, arg_s_end, arg_b0; /* arg_b0 == 0: the kernel has no b0 */
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
    if (!CLPE__RESERVED_ZERO(t))
        return CLPE_ERROR_RESERVED_FIELD;
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
    return clpe__positions_fit(start, count) ? CLPE_SUCCESS : CLPE_ERROR_POSITION_OVERFLOW;
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
    if (!CLPE__RESERVED_ZERO(pos))
        return CLPE_ERROR_RESERVED_FIELD;
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
        return CLPE_ERROR_INVALID_POSITIONS;
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

/* A call that enqueues more than one command holds them all behind a user
 * event of its own until the last one is enqueued. If a later enqueue
 * fails, the gate is set to the error and OpenCL terminates the commands
 * already waiting on it, so a failed call writes nothing. */
typedef struct call_gate {
    cl_event gate;       /* NULL: no gate, wait on the caller's list as is */
    cl_event *wait_list; /* the caller's events, then the gate */
    cl_uint num_events;
} call_gate;

static clpe_status gate_open(const clpe_encoder *enc, cl_uint num_events,
                             const cl_event *wait_list, call_gate *g)
{
    cl_int err = CL_SUCCESS;
    g->gate = NULL;
    g->wait_list = malloc((num_events + 1) * sizeof *g->wait_list);
    if (!g->wait_list)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    g->gate = clCreateUserEvent(enc->shared->context, &err);
    if (err != CL_SUCCESS) {
        free(g->wait_list);
        g->wait_list = NULL;
        g->gate = NULL;
        return err;
    }
    for (cl_uint k = 0; k < num_events; ++k)
        g->wait_list[k] = wait_list[k];
    g->wait_list[num_events] = g->gate;
    g->num_events = num_events + 1;
    return CLPE_SUCCESS;
}

/* Release the gated commands (status CLPE_SUCCESS) or terminate them. */
static void gate_close(call_gate *g, clpe_status status)
{
    if (!g->gate)
        return;
    clSetUserEventStatus(g->gate, status == CLPE_SUCCESS ? CL_COMPLETE
                                  : status < 0            ? status
                                                          : CL_INVALID_OPERATION);
    clReleaseEvent(g->gate);
    free(g->wait_list);
    g->gate = NULL;
    g->wait_list = NULL;
}

/* Launch `kernel` (its fixed arguments already set) over every chunk of
 * the plan. Several launches wait behind a gate (see call_gate) unless the
 * caller's wait list already holds one (`gated`). */
static clpe_status run_launches(clpe_encoder *enc, cl_command_queue queue, cl_kernel kernel,
                                const launch_plan *plan, bool gated, cl_uint num_events,
                                const cl_event *wait_list, cl_event *event)
{
    const clpe_launch_shape *shape = &enc->shared->shape;
    size_t rows_per_launch = shape->max_items_dim1 * shape->rows_per_item;
    size_t batch_per_launch = plan->arg_b0 ? shape->max_items_dim2 : 1;
    size_t launches = ceil_div(plan->seq, rows_per_launch) * ceil_div(plan->batch, batch_per_launch);
    cl_event *events = NULL;
    size_t done = 0;
    clpe_status status = CLPE_SUCCESS;
    call_gate gate = {NULL, NULL, 0};

    if (launches > 1 && event) {
        events = malloc(launches * sizeof *events);
        if (!events)
            return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (launches > 1 && !gated) {
        status = gate_open(enc, num_events, wait_list, &gate);
        if (status != CLPE_SUCCESS) {
            free(events);
            return status;
        }
        num_events = gate.num_events;
        wait_list = gate.wait_list;
    }
    /* dimension 0 counts groups of pairs_per_item pairs; a narrow encoding
     * gets a narrower work-group rather than idle work-items */
    size_t groups = ceil_div(enc->half_d, shape->pairs_per_item);
    size_t local_x = 1;
    while (local_x < groups && local_x * 2 <= shape->local_x)
        local_x *= 2;
    size_t global0 = ceil_div(groups, local_x) * local_x;
    for (size_t b0 = 0; b0 < plan->batch && status == CLPE_SUCCESS; b0 += batch_per_launch) {
        size_t nb = plan->batch - b0 < batch_per_launch ? plan->batch - b0 : batch_per_launch;
        for (size_t s0 = 0; s0 < plan->seq; s0 += rows_per_launch) {
            cl_ulong s0_arg = s0;
            cl_ulong s_end = plan->seq - s0 < rows_per_launch ? plan->seq : s0 + rows_per_launch;
            cl_ulong b0_arg = b0;
            size_t global[3] = {global0, ceil_div(s_end - s0, shape->rows_per_item), nb};
            size_t local[3] = {local_x, 1, 1};
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
    gate_close(&gate, status);
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

#define ARG(v) {sizeof(v), &(v)}
#define ARG_COUNT(a) ((cl_uint)(sizeof(a) / sizeof((a)[0])))

static cl_int set_args(cl_kernel kernel, const kernel_arg *args, cl_uint count)
{
    for (cl_uint k = 0; k < count; ++k) {
        cl_int err = clSetKernelArg(kernel, k, args[k].size, args[k].value);
        if (err != CL_SUCCESS)
            return err;
    }
    return CL_SUCCESS;
}

/* Arguments every row kernel takes, in its own order, typed for the device. */
typedef struct common_args {
    cl_uint d, half_d, split, flags, rows_per_item, source;
    cl_long padding_position, start;
    cl_ulong seq, positions_off, zero;
    cl_float scale_f;
    cl_double scale_d;
    cl_mem positions;
} common_args;

static void fill_common(const clpe_encoder *enc, size_t seq, const clpe_positions *pos,
                        cl_mem pos_buf, size_t pos_off, common_args *c)
{
    c->d = enc->cfg.d;
    c->half_d = enc->half_d;
    c->split = enc->cfg.layout == CLPE_LAYOUT_SPLIT;
    c->flags = enc->cfg.flags;
    c->rows_per_item = enc->shared->shape.rows_per_item;
    c->source = pos ? (cl_uint)pos->source : CLPE_POSITIONS_START;
    c->padding_position = enc->cfg.padding_position;
    c->start = pos && pos->source == CLPE_POSITIONS_START ? pos->start : 0;
    c->seq = seq;
    c->positions_off = pos_off;
    c->zero = 0;
    c->scale_f = (cl_float)enc->cfg.scale;
    c->scale_d = enc->cfg.scale;
    c->positions = pos_buf;
}

/* Scale is a double for the f64 kernels, a float otherwise. */
static kernel_arg scale_arg(const clpe_encoder *enc, const common_args *c)
{
    kernel_arg a;
    if (enc->cfg.dtype == CLPE_DTYPE_F64) {
        a.size = sizeof c->scale_d;
        a.value = &c->scale_d;
    } else {
        a.size = sizeof c->scale_f;
        a.value = &c->scale_f;
    }
    return a;
}

/* Take a kernel, set its fixed arguments, launch every chunk, give it back. */
static clpe_status launch_kernel(clpe_encoder *enc, cl_command_queue queue, clpe_kernel_id id,
                                 const kernel_arg *args, cl_uint nargs, const launch_plan *plan,
                                 bool gated, cl_uint num_events, const cl_event *wait_list,
                                 cl_event *event)
{
    cl_kernel kernel;
    clpe_status status = clpe__kernel_acquire(enc->shared, id, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    status = set_args(kernel, args, nargs);
    if (status == CLPE_SUCCESS)
        status = run_launches(enc, queue, kernel, plan, gated, num_events, wait_list, event);
    clpe__kernel_return(enc->shared, id, kernel);
    return status;
}

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

    common_args c;
    clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = start, .buffer = NULL, .offset = 0};
    fill_common(enc, n, &pos, NULL, 0, &c);
    cl_ulong off = r.offset, rp = r.row_pitch;
    kernel_arg args[] = {ARG(r.buffer), ARG(off), ARG(rp), ARG(c.d), ARG(c.half_d), ARG(c.split),
                         ARG(c.flags), ARG(c.padding_position), ARG(c.zero), ARG(c.zero),
                         ARG(c.rows_per_item), ARG(c.start), ARG(enc->tw_hi_buf),
                         ARG(enc->tw_lo_buf)};
    launch_plan plan = {8, 9, 0, 1, n};
    return launch_kernel(enc, queue, clpe__kernel_for(CLPE_OP_TABLE, enc->cfg.dtype), args,
                         ARG_COUNT(args), &plan, false, num_events, wait_list, event);
}

/* Do two regions of one buffer describe the same elements? */
static bool same_region(const region *a, const region *b, size_t batch)
{
    return a->offset == b->offset && a->row_pitch == b->row_pitch &&
           (batch <= 1 || a->batch_pitch == b->batch_pitch);
}

clpe_status clpe_enqueue_add_out(clpe_encoder *enc, cl_command_queue queue, size_t batch,
                                 size_t seq, const clpe_tensor *x, const clpe_tensor *out,
                                 const clpe_positions *positions, cl_uint num_events,
                                 const cl_event *wait_list, cl_event *event)
{
    region rx, ro;
    cl_mem pos_buf = NULL;
    size_t pos_off = 0;
    clpe_status status = check_common(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(enc, x, batch, seq, &rx);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(enc, out, batch, seq, &ro);
    if (status == CLPE_SUCCESS && rx.buffer == ro.buffer && !same_region(&rx, &ro, batch))
        status = CLPE_ERROR_ALIASING;
    if (status == CLPE_SUCCESS)
        status = check_queue(enc, queue);
    if (status == CLPE_SUCCESS)
        status = check_positions(enc, positions, batch, seq, &pos_buf, &pos_off);
    if (status == CLPE_SUCCESS)
        status = check_region(enc, &rx, batch, seq);
    if (status == CLPE_SUCCESS)
        status = check_region(enc, &ro, batch, seq);
    if (status != CLPE_SUCCESS)
        return status;
    if (batch == 0 || seq == 0)
        return enqueue_nothing(queue, num_events, wait_list, event);

    common_args c;
    fill_common(enc, seq, positions, pos_buf, pos_off, &c);
    cl_ulong xo = rx.offset, xr = rx.row_pitch, xb = rx.batch_pitch;
    cl_ulong oo = ro.offset, orp = ro.row_pitch, ob = ro.batch_pitch;
    kernel_arg args[] = {ARG(rx.buffer), ARG(ro.buffer), ARG(xo), ARG(xr), ARG(xb), ARG(oo),
                         ARG(orp), ARG(ob), scale_arg(enc, &c), ARG(c.d), ARG(c.half_d),
                         ARG(c.split), ARG(c.flags), ARG(c.padding_position), ARG(c.seq),
                         ARG(c.zero), ARG(c.zero), ARG(c.zero), ARG(c.rows_per_item),
                         ARG(c.source), ARG(c.start), ARG(c.positions), ARG(c.positions_off),
                         ARG(enc->tw_hi_buf), ARG(enc->tw_lo_buf)};
    launch_plan plan = {15, 16, 17, batch, seq};
    return launch_kernel(enc, queue, clpe__kernel_for(CLPE_OP_ADD, enc->cfg.dtype), args,
                         ARG_COUNT(args), &plan, false, num_events, wait_list, event);
}

clpe_status clpe_enqueue_add(clpe_encoder *enc, cl_command_queue queue, size_t batch, size_t seq,
                             const clpe_tensor *x, const clpe_positions *positions,
                             cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    return clpe_enqueue_add_out(enc, queue, batch, seq, x, x, positions, num_events, wait_list,
                                event);
}

/* The token-id buffer holds `count` int32 values after `offset` bytes. */
static clpe_status check_ids(const clpe_encoder *enc, const clpe_token_ids *ids, size_t count)
{
    size_t bytes;
    if (!ids || !ids->buffer || ids->offset % sizeof(cl_int))
        return CLPE_ERROR_INVALID_IDS;
    if (!CLPE__RESERVED_ZERO(ids))
        return CLPE_ERROR_RESERVED_FIELD;
    if (!clpe__mul_size(count, sizeof(cl_int), &bytes) ||
        !clpe__add_size(bytes, ids->offset, &bytes))
        return CLPE_ERROR_TOO_LARGE;
    return check_buffer(enc, ids->buffer, bytes, CLPE_ERROR_INVALID_IDS);
}

clpe_status clpe_enqueue_gather(clpe_encoder *enc, cl_command_queue queue, size_t batch,
                                size_t seq, const clpe_token_ids *ids,
                                const clpe_tensor *embedding, clpe_dtype embedding_dtype,
                                size_t vocab, const clpe_tensor *out,
                                const clpe_positions *positions, cl_mem bad_ids,
                                cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    region re, ro;
    cl_mem pos_buf = NULL;
    size_t pos_off = 0, count = 0;
    clpe_status status = check_common(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS && embedding_dtype != enc->cfg.dtype)
        status = (unsigned)embedding_dtype > CLPE_DTYPE_F64 ? CLPE_ERROR_INVALID_CONFIG
                                                            : CLPE_ERROR_DTYPE_MISMATCH;
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(enc, embedding, 1, vocab, &re);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(enc, out, batch, seq, &ro);
    if (status == CLPE_SUCCESS && re.buffer == ro.buffer)
        status = CLPE_ERROR_ALIASING;
    if (status == CLPE_SUCCESS && !clpe__mul_size(batch, seq, &count))
        status = CLPE_ERROR_TOO_LARGE;
    if (status == CLPE_SUCCESS)
        status = check_queue(enc, queue);
    if (status == CLPE_SUCCESS)
        status = check_ids(enc, ids, count);
    if (status == CLPE_SUCCESS)
        status = check_positions(enc, positions, batch, seq, &pos_buf, &pos_off);
    if (status == CLPE_SUCCESS)
        status = check_region(enc, &re, 1, vocab);
    if (status == CLPE_SUCCESS)
        status = check_region(enc, &ro, batch, seq);
    if (status == CLPE_SUCCESS && bad_ids)
        status = check_buffer(enc, bad_ids, 2 * sizeof(cl_uint), CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status != CLPE_SUCCESS)
        return status;

    /* Reset the report first; the launches wait for it, and it waits behind
     * the call's gate so that a failure later in the call undoes it. */
    cl_event reset = NULL;
    call_gate gate = {NULL, NULL, 0};
    if (bad_ids) {
        cl_uint fresh[2] = {0, 0xFFFFFFFFu};
        status = gate_open(enc, num_events, wait_list, &gate);
        if (status != CLPE_SUCCESS)
            return status;
        status = clEnqueueFillBuffer(queue, bad_ids, fresh, sizeof fresh, 0, sizeof fresh,
                                     gate.num_events, gate.wait_list, &reset);
        if (status != CLPE_SUCCESS) {
            gate_close(&gate, status);
            return status;
        }
        num_events = 1;
        wait_list = &reset;
    }
    if (count == 0) {
        status = enqueue_nothing(queue, num_events, wait_list, event);
    } else {
        common_args c;
        fill_common(enc, seq, positions, pos_buf, pos_off, &c);
        cl_ulong eo = re.offset, er = re.row_pitch, voc = vocab, io = ids->offset / sizeof(cl_int);
        cl_ulong oo = ro.offset, orp = ro.row_pitch, ob = ro.batch_pitch;
        kernel_arg args[] = {ARG(re.buffer), ARG(ro.buffer), ARG(eo), ARG(er), ARG(voc),
                             ARG(ids->buffer), ARG(io), ARG(bad_ids), ARG(oo), ARG(orp), ARG(ob),
                             scale_arg(enc, &c), ARG(c.d), ARG(c.half_d), ARG(c.split),
                             ARG(c.flags), ARG(c.padding_position), ARG(c.seq), ARG(c.zero),
                             ARG(c.zero), ARG(c.zero), ARG(c.rows_per_item), ARG(c.source),
                             ARG(c.start), ARG(c.positions), ARG(c.positions_off),
                             ARG(enc->tw_hi_buf), ARG(enc->tw_lo_buf)};
        launch_plan plan = {18, 19, 20, batch, seq};
        status = launch_kernel(enc, queue, clpe__kernel_for(CLPE_OP_GATHER, enc->cfg.dtype),
                               args, ARG_COUNT(args), &plan, reset != NULL, num_events,
                               wait_list, event);
    }
    gate_close(&gate, status);
    if (reset)
        clReleaseEvent(reset);
    return status;
}

clpe_status clpe_enqueue_pad_positions(clpe_encoder *enc, cl_command_queue queue, size_t batch,
                                       size_t seq, const clpe_token_ids *ids, int32_t pad_id,
                                       int64_t first_position, int64_t pad_position,
                                       cl_mem positions_out, size_t positions_offset,
                                       cl_uint num_events, const cl_event *wait_list,
                                       cl_event *event)
{
    size_t count = 0, bytes = 0;
    clpe_status status = check_common(enc, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS && !positions_out)
        status = CLPE_ERROR_NULL_BUFFER;
    if (status == CLPE_SUCCESS && positions_offset % sizeof(cl_long))
        status = CLPE_ERROR_MISALIGNED_OFFSET;
    if (status == CLPE_SUCCESS &&
        (!clpe__mul_size(batch, seq, &count) || !clpe__mul_size(count, sizeof(cl_long), &bytes) ||
         !clpe__add_size(bytes, positions_offset, &bytes)))
        status = CLPE_ERROR_TOO_LARGE;
    if (status == CLPE_SUCCESS)
        status = check_queue(enc, queue);
    if (status == CLPE_SUCCESS)
        status = check_ids(enc, ids, count);
    if (status == CLPE_SUCCESS)
        status = check_buffer(enc, positions_out, bytes, CLPE_ERROR_INDEX_BUFFER_TOO_SMALL);
    if (status != CLPE_SUCCESS)
        return status;
    if (count == 0)
        return enqueue_nothing(queue, num_events, wait_list, event);

    cl_kernel kernel;
    status = clpe__kernel_acquire(enc->shared, CLPE_KERNEL_PAD_POSITIONS, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    cl_ulong io = ids->offset / sizeof(cl_int), po = positions_offset / sizeof(cl_long);
    cl_ulong seq_arg = seq;
    cl_int pad = pad_id;
    cl_long first = first_position, padpos = pad_position;
    kernel_arg args[] = {ARG(ids->buffer), ARG(io),  ARG(positions_out), ARG(po),
                         ARG(seq_arg),     ARG(pad), ARG(first),         ARG(padpos)};
    status = set_args(kernel, args, ARG_COUNT(args));
    if (status == CLPE_SUCCESS) {
        size_t global = batch;
        status = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, num_events,
                                        wait_list, event);
    }
    clpe__kernel_return(enc->shared, CLPE_KERNEL_PAD_POSITIONS, kernel);
    return status;
}
