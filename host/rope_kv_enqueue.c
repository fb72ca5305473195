/*
 * rope_kv_enqueue.c - rotary into a KV cache (clpe_enqueue_rope_kv): every
 * argument checked before anything is enqueued, then the slot check and
 * the launches of clpe_rope_kv_*, all behind one gate.
 */
#include "rope_kv.h"

#include "clpe_rope_kv_interface.h"

_Static_assert(PE_KV_F32 == CLPE_DTYPE_F32 && PE_KV_F16 == CLPE_DTYPE_F16 &&
                   PE_KV_BF16 == CLPE_DTYPE_BF16 && PE_KV_F64 == CLPE_DTYPE_F64,
               "the kernels' cache types are clpe_dtype's");

static cl_int set_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value)
{
    return clSetKernelArg(kernel, index, size, value);
}

#define SET(k, index, value) set_arg((k), (index), sizeof(value), &(value))

static cl_int set_launch_args(cl_kernel kernel, const void *call, size_t s0, size_t rows,
                              size_t b0, size_t batch)
{
    const clpe_kv_call *c = call;
    const clpe_position_args *pos = &c->positions;
    (void)b0;
    (void)batch;
    cl_ulong q_base = c->q.r.heads ? c->q.r.offset + s0 * c->q.r.row_pitch : 0;
    cl_ulong q_out_base = c->q_out.r.heads ? c->q_out.r.offset + s0 * c->q_out.r.row_pitch : 0;
    cl_ulong k_base = c->k.r.offset + s0 * c->k.r.row_pitch;
    cl_ulong v_base = c->v.r.offset + s0 * c->v.r.row_pitch;
    cl_ulong pos_base = pos->source == CLPE_POSITIONS_IDS            ? pos->offset + s0
                        : pos->source == CLPE_POSITIONS_PER_SEQUENCE ? pos->offset
                                                                     : 0;
    cl_ulong slots_base = c->slots_offset + s0;
    /* positions wrap modulo 2^64 like the kernels' arithmetic */
    cl_long start = pos->source == CLPE_POSITIONS_START ? (cl_long)((uint64_t)pos->start + s0)
                                                        : (cl_long)s0;
    cl_uint nr = (cl_uint)rows;
    cl_int err = SET(kernel, PE_ROPE_KV_ARG_Q_BASE, q_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_Q_OUT_BASE, q_out_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_K_BASE, k_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_V_BASE, v_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_POSITIONS_BASE, pos_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_SLOTS_BASE, slots_base);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_START, start);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_ROWS, nr);
    return err;
}

/* A pitch the kernel multiplies only by 0 when its dimension has one entry. */
static cl_uint pitch32(size_t pitch, size_t count) { return count > 1 ? (cl_uint)pitch : 0; }

static cl_int set_fixed_args(const clpe_rope *rope, cl_kernel kernel, const clpe_kv_call *c,
                             cl_mem report, const clpe_launch_grid *grid)
{
    const size_t rows = grid->rows_per_launch;
    const clpe_kv_cache_layout *l = &c->cache;
    clpe_real_arg amp = clpe__real_arg(rope->cfg.dtype, rope->amplitude);
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    cl_mem q = c->q.r.buffer, q_out = c->q_out.r.buffer, k = c->k.r.buffer, v = c->v.r.buffer;
    cl_mem key = c->key, value = c->value, positions = c->positions.buffer, slots = c->slots;
    cl_ulong key_offset = c->key_offset, value_offset = c->value_offset;
    cl_ulong head_pitch = l->head_pitch, slot_pitch = l->slot_pitch,
             block_pitch = l->block_pitch, block_size = l->block_size ? l->block_size : 1;
    cl_uint cache_dtype = (cl_uint)l->dtype;
    cl_uint q_heads = (cl_uint)c->q.r.heads, kv_heads = (cl_uint)c->k.r.heads;
    cl_uint qhp = pitch32(c->q.r.head_pitch, c->q.r.heads), qrp = pitch32(c->q.r.row_pitch, rows);
    cl_uint qohp = pitch32(c->q_out.r.head_pitch, c->q_out.r.heads),
            qorp = pitch32(c->q_out.r.row_pitch, rows);
    cl_uint khp = pitch32(c->k.r.head_pitch, c->k.r.heads), krp = pitch32(c->k.r.row_pitch, rows);
    cl_uint vhp = pitch32(c->v.r.head_pitch, c->v.r.heads), vrp = pitch32(c->v.r.row_pitch, rows);
    cl_uint head_dim = rope->cfg.head_dim, n_pairs = rope->n_pairs;
    cl_uint partner = half_split ? rope->n_pairs : 1, stride = half_split ? 1 : 2;
    cl_uint inverse = c->inverse, rows_per_item = grid->rows_per_item;
    cl_uint source = (cl_uint)c->positions.source;
    cl_int err = SET(kernel, PE_ROPE_KV_ARG_Q, q);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_Q_OUT, q_out);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_K, k);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_V, v);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_KEY_CACHE, key);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_VALUE_CACHE, value);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_POSITIONS, positions);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_SLOTS, slots);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_REPORT, report);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_TW_HI, rope->tw_hi_buf);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_TW_LO, rope->tw_lo_buf);
    if (err == CL_SUCCESS) err = set_arg(kernel, PE_ROPE_KV_ARG_AMPLITUDE, amp.size, &amp.v);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_KEY_OFFSET, key_offset);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_VALUE_OFFSET, value_offset);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_CACHE_HEAD_PITCH, head_pitch);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_CACHE_SLOT_PITCH, slot_pitch);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_CACHE_BLOCK_PITCH, block_pitch);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_BLOCK_SIZE, block_size);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_CACHE_DTYPE, cache_dtype);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_Q_HEADS, q_heads);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_Q_HEAD_PITCH, qhp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_Q_ROW_PITCH, qrp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_Q_OUT_HEAD_PITCH, qohp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_Q_OUT_ROW_PITCH, qorp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_KV_HEADS, kv_heads);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_K_HEAD_PITCH, khp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_K_ROW_PITCH, krp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_V_HEAD_PITCH, vhp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_V_ROW_PITCH, vrp);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_HEAD_DIM, head_dim);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_N_PAIRS, n_pairs);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_PARTNER, partner);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_STRIDE, stride);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_INVERSE, inverse);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_ROWS_PER_ITEM, rows_per_item);
    if (err == CL_SUCCESS) err = SET(kernel, PE_ROPE_KV_ARG_POS_SOURCE, source);
    return err;
}

/* Work-items of the slot check's one work-group, and the local memory
 * its sort leaves to the rest of the kernel. */
#define CHECK_GROUP_MAX 256
#define CHECK_LOCAL_RESERVE 1024

/* The slot check, one work-group, its report in `report`. */
static clpe_status enqueue_check(clpe_program_shared *shared, cl_command_queue queue,
                                 const clpe_kv_call *c, cl_mem report, cl_uint num_events,
                                 const cl_event *wait_list, cl_event *done)
{
    cl_kernel kernel;
    clpe_status status = clpe__kernel_acquire(shared, CLPE_KERNEL_KV_CHECK_SLOTS, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    size_t group = 1;
    status = clGetKernelWorkGroupInfo(kernel, shared->device, CL_KERNEL_WORK_GROUP_SIZE,
                                      sizeof group, &group, NULL);
    cl_ulong local_mem = 0;
    if (status == CLPE_SUCCESS)
        status = clGetDeviceInfo(shared->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem,
                                 &local_mem, NULL);
    if (status == CLPE_SUCCESS) {
        size_t local = 1;
        while (local * 2 <= group && local * 2 <= CHECK_GROUP_MAX && local < c->tokens)
            local *= 2;
        /* sort where the (slot, token) pairs fit in local memory (with room
         * for the kernel's own words), else compare every pair */
        cl_uint sort_size = 1;
        while (sort_size < c->tokens)
            sort_size *= 2;
        if ((cl_ulong)sort_size * sizeof(cl_ulong) + CHECK_LOCAL_RESERVE > local_mem ||
            c->cache.capacity > ((size_t)1 << 32) || c->tokens < 2)
            sort_size = 0;
        size_t sort_bytes = (sort_size ? sort_size : 1) * sizeof(cl_ulong);
        cl_mem slots = c->slots;
        cl_ulong base = c->slots_offset, capacity = c->cache.capacity;
        cl_uint tokens = (cl_uint)c->tokens;
        cl_int err = SET(kernel, PE_KV_CHECK_ARG_SLOTS, slots);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kernel, PE_KV_CHECK_ARG_SORT_KEYS, sort_bytes, NULL);
        if (err == CL_SUCCESS) err = SET(kernel, PE_KV_CHECK_ARG_SORT_SIZE, sort_size);
        if (err == CL_SUCCESS) err = SET(kernel, PE_KV_CHECK_ARG_SLOTS_BASE, base);
        if (err == CL_SUCCESS) err = SET(kernel, PE_KV_CHECK_ARG_TOKENS, tokens);
        if (err == CL_SUCCESS) err = SET(kernel, PE_KV_CHECK_ARG_CAPACITY, capacity);
        if (err == CL_SUCCESS) err = SET(kernel, PE_KV_CHECK_ARG_REPORT_OUT, report);
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &local, &local, num_events,
                                         wait_list, done);
        status = err;
    }
    clpe__kernel_return(shared, CLPE_KERNEL_KV_CHECK_SLOTS, kernel);
    return status;
}

clpe_status clpe_enqueue_rope_kv(clpe_rope *rope, cl_command_queue queue, size_t tokens,
                                 const clpe_rope_tensor *q, const clpe_rope_tensor *q_out,
                                 const clpe_rope_tensor *k, const clpe_rope_tensor *v,
                                 const clpe_kv_cache *cache, const clpe_kv_slots *slots,
                                 const clpe_positions *positions, uint32_t flags,
                                 cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    clpe_kv_call c;
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    clpe_status status = clpe__check_call_on(rope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_kv_call(rope, tokens, q, q_out, k, v, cache, slots, positions, flags,
                                       &c);
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue_on(rope->shared, queue, num_events, wait_list);
    if (status != CLPE_SUCCESS)
        return status;
    if (tokens == 0)
        return clpe__enqueue_nothing(queue, num_events, wait_list, event);

    clpe_program_shared *shared = rope->shared;
    clpe_launch_grid grid = {.program = shared, .pairs = (rope->cfg.head_dim + 1u) / 2u,
                             .seq = tokens,
                             .pairs_per_item =
                                 clpe__rope_pairs_per_item(&shared->shape, rope->cfg.dtype),
                             .batch = 1, .shared_positions = false};
    clpe_extent e[4] = {{c.k.r.row_pitch, 0, c.k.r.extent}, {c.v.r.row_pitch, 0, c.v.r.extent},
                        {c.q.r.row_pitch, 0, c.q.r.extent},
                        {c.q_out.r.row_pitch, 0, c.q_out.r.extent}};
    size_t regions = c.q_out.r.heads ? 4 : c.q.r.heads ? 3 : 2;
    clpe__plan_launches(&shared->shape, tokens, 1, e, regions, &grid.rows_per_launch,
                        &grid.batch_per_launch);
    grid.rows_per_item = shared->shape.rows_per_item;

    /* The report the launches read: the caller's, or one of the call's own
     * (released here; OpenCL keeps it until the commands that use it end). */
    cl_mem report = c.report;
    if (!report) {
        cl_int err = CL_SUCCESS;
        report = clCreateBuffer(shared->context, CL_MEM_READ_WRITE, 2 * sizeof(cl_uint), NULL,
                                &err);
        if (err != CL_SUCCESS)
            return err;
    }
    clpe_call_gate gate = {NULL, NULL, 0};
    cl_event checked = NULL;
    cl_kernel kernel = NULL;
    clpe_kernel_id id = clpe__kernel_for(CLPE_OP_ROPE_KV, rope->cfg.dtype);
    status = clpe__gate_open(shared->context, num_events, wait_list, &gate);
    if (status == CLPE_SUCCESS)
        status = enqueue_check(shared, queue, &c, report, gate.num_events, gate.wait_list,
                               &checked);
    if (status == CLPE_SUCCESS)
        status = clpe__kernel_acquire(shared, id, &kernel);
    if (status == CLPE_SUCCESS) {
        status = set_fixed_args(rope, kernel, &c, report, &grid);
        if (status == CLPE_SUCCESS)
            status = clpe__run_launches(&grid, queue, kernel, set_launch_args, &c, true, 1,
                                        &checked, event);
        clpe__kernel_return(shared, id, kernel);
    }
    clpe__gate_close(&gate, status);
    if (checked)
        clReleaseEvent(checked);
    if (!c.report)
        clReleaseMemObject(report);
    return status;
}
