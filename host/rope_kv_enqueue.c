/*
 * rope_kv_enqueue.c - rotary into a KV cache (clpe_enqueue_rope_kv): every
 * argument checked before anything is enqueued, then the slot check and
 * the launches of clpe_rope_kv_*, all behind one gate.
 */
#include "overlap.h"

#include "clpe_rope_kv_interface.h"

#define INDEX_MAX ((size_t)UINT32_MAX)

_Static_assert(PE_KV_F32 == CLPE_DTYPE_F32 && PE_KV_F16 == CLPE_DTYPE_F16 &&
                   PE_KV_BF16 == CLPE_DTYPE_BF16 && PE_KV_F64 == CLPE_DTYPE_F64,
               "the kernels' cache types are clpe_dtype's");

/* A checked [tokens, heads, head_dim] tensor, in elements; its bytes span
 * [begin_bytes, end_bytes) of the buffer. */
typedef struct kv_region {
    cl_mem buffer;
    size_t offset, heads, head_pitch, row_pitch;
    size_t extent; /* elements of one token: (heads - 1) * head_pitch + head_dim */
    size_t begin_bytes, end_bytes;
} kv_region;

/* A checked cache: both tensors, in elements of its dtype. */
typedef struct kv_cache_region {
    cl_mem key, value;
    size_t key_offset, value_offset;
    clpe_kv_cache_layout l;
} kv_cache_region;

typedef struct kv_call {
    const clpe_rope *rope;
    kv_region q, q_out, k, v;     /* q.buffer NULL: no queries; q_out.buffer NULL: in place */
    kv_cache_region cache;
    cl_mem slots, report;
    size_t slots_offset;          /* elements */
    clpe_position_args positions;
    size_t tokens;
    uint32_t inverse;
} kv_call;

/* Heads of a token must not share elements, nor tokens (rows of one
 * region; with one token, none to compare). */
static clpe_status resolve_tensor(const clpe_rope *rope, const clpe_rope_tensor *t, size_t tokens,
                                  kv_region *r)
{
    size_t head_dim = rope->cfg.head_dim;
    size_t esize = clpe__dtype_size(rope->cfg.dtype);
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
    if (!clpe__mul_size(t->heads - 1, r->head_pitch, &r->extent) ||
        !clpe__add_size(r->extent, head_dim, &r->extent))
        return CLPE_ERROR_TOO_LARGE;
    if (t->row_pitch) {
        r->row_pitch = t->row_pitch;
    } else if (!clpe__mul_size(t->heads, r->head_pitch, &r->row_pitch)) {
        return CLPE_ERROR_TOO_LARGE;
    }
    if (tokens > 1 && r->row_pitch < r->extent)
        return CLPE_ERROR_INVALID_PITCH;
    if (r->extent > INDEX_MAX || r->head_pitch > INDEX_MAX) /* the kernel steps heads in 32 bits */
        return CLPE_ERROR_TOO_LARGE;
    r->begin_bytes = r->offset * esize;
    r->end_bytes = r->begin_bytes;
    if (tokens) {
        size_t last = 0;
        if (!clpe__mul_size(tokens - 1, r->row_pitch, &last) ||
            !clpe__add_size(last, r->extent, &last) || !clpe__add_size(last, r->offset, &last) ||
            !clpe__mul_size(last, esize, &r->end_bytes))
            return CLPE_ERROR_TOO_LARGE;
    }
    return CLPE_SUCCESS;
}

static clpe_status resolve_cache(const clpe_rope *rope, const clpe_kv_cache *c,
                                 kv_cache_region *r)
{
    if (!c->key || !c->value)
        return CLPE_ERROR_NULL_BUFFER;
    if (!CLPE__RESERVED_ZERO(c))
        return CLPE_ERROR_RESERVED_FIELD;
    clpe_status status =
        clpe__resolve_kv_cache(rope, c->dtype, c->num_blocks, c->block_size, c->heads,
                               c->head_pitch, c->slot_pitch, c->block_pitch, &r->l);
    if (status != CLPE_SUCCESS)
        return status;
    size_t esize = clpe__dtype_size(c->dtype);
    if (c->key_offset % esize || c->value_offset % esize)
        return CLPE_ERROR_MISALIGNED_OFFSET;
    r->key = c->key;
    r->value = c->value;
    r->key_offset = c->key_offset / esize;
    r->value_offset = c->value_offset / esize;
    return CLPE_SUCCESS;
}

static clpe_footprint tensor_footprint(const kv_region *r, size_t tokens, size_t head_dim,
                                       size_t esize)
{
    clpe_stride dims[2] = {{r->heads, r->head_pitch}, {tokens, r->row_pitch}};
    return clpe__strided_footprint(r->offset, head_dim, dims, 2, esize);
}

/* No argument written shares an element with another argument, through
 * sub-buffers and host memory too (clpe__check_operands): q, k and v heads
 * of one fused buffer are fine, and so are the key and value of each block
 * side by side in one cache buffer. */
static clpe_status check_aliasing(const kv_call *c)
{
    size_t head_dim = c->rope->cfg.head_dim, esize = clpe__dtype_size(c->rope->cfg.dtype);
    const kv_cache_region *kc = &c->cache;
    clpe_operand ops[9] = {
        {.buffer = c->q.buffer, .bytes = tensor_footprint(&c->q, c->tokens, head_dim, esize),
         .access = c->q_out.buffer ? CLPE_ACCESS_READ : CLPE_ACCESS_READ_WRITE},
        {.buffer = c->q_out.buffer,
         .bytes = tensor_footprint(&c->q_out, c->tokens, head_dim, esize),
         .access = CLPE_ACCESS_WRITE},
        {.buffer = c->k.buffer, .bytes = tensor_footprint(&c->k, c->tokens, head_dim, esize),
         .access = CLPE_ACCESS_READ},
        {.buffer = c->v.buffer, .bytes = tensor_footprint(&c->v, c->tokens, head_dim, esize),
         .access = CLPE_ACCESS_READ},
        {.buffer = kc->key, .bytes = clpe__kv_cache_footprint(c->rope, &kc->l, kc->key_offset),
         .access = CLPE_ACCESS_WRITE},
        {.buffer = kc->value, .bytes = clpe__kv_cache_footprint(c->rope, &kc->l, kc->value_offset),
         .access = CLPE_ACCESS_WRITE},
        clpe__positions_operand(&c->positions, 1, c->tokens),
        {.buffer = c->slots,
         .bytes = clpe__footprint_bytes(c->slots_offset * sizeof(cl_long),
                                        c->tokens * sizeof(cl_long)),
         .access = CLPE_ACCESS_READ},
        {.buffer = c->report, .bytes = clpe__footprint_bytes(0, 2 * sizeof(cl_uint)),
         .access = CLPE_ACCESS_WRITE}};
    return clpe__check_operands(ops, 9);
}

static clpe_status check_buffers(const clpe_rope *rope, const kv_call *c)
{
    cl_context context = rope->shared->context;
    const kv_region *tensors[4] = {&c->q, &c->q_out, &c->k, &c->v};
    clpe_status status = CLPE_SUCCESS;
    for (int j = 0; j < 4 && status == CLPE_SUCCESS; ++j)
        if (tensors[j]->buffer)
            status = clpe__check_buffer_in(context, tensors[j]->buffer, tensors[j]->end_bytes,
                                           CLPE_ERROR_BUFFER_TOO_SMALL);
    /* the offsets are the caller's: their ends must not wrap */
    size_t esize = clpe__dtype_size(c->cache.l.dtype), key_end = 0, value_end = 0, slots_end = 0;
    if (status == CLPE_SUCCESS &&
        (!clpe__add_size(c->cache.key_offset * esize, c->cache.l.span_bytes, &key_end) ||
         !clpe__add_size(c->cache.value_offset * esize, c->cache.l.span_bytes, &value_end) ||
         !clpe__add_size(c->slots_offset, c->tokens, &slots_end) ||
         !clpe__mul_size(slots_end, sizeof(cl_long), &slots_end)))
        status = CLPE_ERROR_TOO_LARGE;
    if (status == CLPE_SUCCESS)
        status = clpe__check_buffer_in(context, c->cache.key, key_end,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS)
        status = clpe__check_buffer_in(context, c->cache.value, value_end,
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS)
        status = clpe__check_buffer_in(context, c->slots, slots_end,
                                       CLPE_ERROR_INDEX_BUFFER_TOO_SMALL);
    if (status == CLPE_SUCCESS && c->report)
        status = clpe__check_buffer_in(context, c->report, 2 * sizeof(cl_uint),
                                       CLPE_ERROR_BUFFER_TOO_SMALL);
    return status;
}

static cl_int set_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value)
{
    return clSetKernelArg(kernel, index, size, value);
}

#define SET(k, index, value) set_arg((k), (index), sizeof(value), &(value))

static cl_int set_launch_args(cl_kernel kernel, const void *call, size_t s0, size_t rows,
                              size_t b0, size_t batch)
{
    const kv_call *c = call;
    const clpe_position_args *pos = &c->positions;
    (void)b0;
    (void)batch;
    cl_ulong q_base = c->q.buffer ? c->q.offset + s0 * c->q.row_pitch : 0;
    cl_ulong q_out_base = c->q_out.buffer ? c->q_out.offset + s0 * c->q_out.row_pitch : 0;
    cl_ulong k_base = c->k.offset + s0 * c->k.row_pitch;
    cl_ulong v_base = c->v.offset + s0 * c->v.row_pitch;
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

/* A row pitch the kernel multiplies only by 0 when a launch has one token. */
static cl_uint pitch32(size_t pitch, size_t count) { return count > 1 ? (cl_uint)pitch : 0; }

static cl_int set_fixed_args(const clpe_rope *rope, cl_kernel kernel, const kv_call *c,
                             cl_mem report, const clpe_launch_grid *grid)
{
    const size_t rows = grid->rows_per_launch;
    const kv_cache_region *kc = &c->cache;
    clpe_real_arg amp = clpe__real_arg(rope->cfg.dtype, rope->amplitude);
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    cl_mem q = c->q.buffer, q_out = c->q_out.buffer, k = c->k.buffer, v = c->v.buffer;
    cl_mem key = kc->key, value = kc->value, positions = c->positions.buffer, slots = c->slots;
    cl_ulong key_offset = kc->key_offset, value_offset = kc->value_offset;
    cl_ulong head_pitch = kc->l.head_pitch, slot_pitch = kc->l.slot_pitch,
             block_pitch = kc->l.block_pitch, block_size = kc->l.block_size ? kc->l.block_size : 1;
    cl_uint cache_dtype = (cl_uint)kc->l.dtype;
    cl_uint q_heads = q ? (cl_uint)c->q.heads : 0, kv_heads = (cl_uint)c->k.heads;
    cl_uint qhp = q ? (cl_uint)c->q.head_pitch : 0, qrp = q ? pitch32(c->q.row_pitch, rows) : 0;
    cl_uint qohp = q_out ? (cl_uint)c->q_out.head_pitch : 0,
            qorp = q_out ? pitch32(c->q_out.row_pitch, rows) : 0;
    cl_uint khp = (cl_uint)c->k.head_pitch, krp = pitch32(c->k.row_pitch, rows);
    cl_uint vhp = (cl_uint)c->v.head_pitch, vrp = pitch32(c->v.row_pitch, rows);
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
                                 const kv_call *c, cl_mem report, cl_uint num_events,
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
            c->cache.l.capacity > ((size_t)1 << 32) || c->tokens < 2)
            sort_size = 0;
        size_t sort_bytes = (sort_size ? sort_size : 1) * sizeof(cl_ulong);
        cl_mem slots = c->slots;
        cl_ulong base = c->slots_offset, capacity = c->cache.l.capacity;
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

/* Every argument, checked; nothing enqueued. */
static clpe_status check_call(clpe_rope *rope, size_t tokens, const clpe_rope_tensor *q,
                              const clpe_rope_tensor *q_out, const clpe_rope_tensor *k,
                              const clpe_rope_tensor *v, const clpe_kv_cache *cache,
                              const clpe_kv_slots *slots, const clpe_positions *positions,
                              uint32_t flags, kv_call *c)
{
    if (!k || !v || !cache || !slots || (q_out && !q))
        return CLPE_ERROR_NULL_POINTER;
    if (flags & ~CLPE_ROPE_INVERSE)
        return CLPE_ERROR_INVALID_CONFIG;
    if (tokens >= INDEX_MAX)
        return CLPE_ERROR_TOO_LARGE;
    c->tokens = tokens;
    c->inverse = (flags & CLPE_ROPE_INVERSE) ? 1u : 0u;
    clpe_status status = CLPE_SUCCESS;
    if (q)
        status = resolve_tensor(rope, q, tokens, &c->q);
    if (status == CLPE_SUCCESS && q_out)
        status = resolve_tensor(rope, q_out, tokens, &c->q_out);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(rope, k, tokens, &c->k);
    if (status == CLPE_SUCCESS)
        status = resolve_tensor(rope, v, tokens, &c->v);
    if (status != CLPE_SUCCESS)
        return status;
    if (c->k.heads != cache->heads || c->v.heads != cache->heads ||
        (q_out && c->q_out.heads != c->q.heads))
        return CLPE_ERROR_INVALID_ROPE;
    status = resolve_cache(rope, cache, &c->cache);
    if (status != CLPE_SUCCESS)
        return status;
    if (!slots->buffer)
        return CLPE_ERROR_NULL_BUFFER;
    if (!CLPE__RESERVED_ZERO(slots))
        return CLPE_ERROR_RESERVED_FIELD;
    if (slots->offset % sizeof(cl_long))
        return CLPE_ERROR_MISALIGNED_OFFSET;
    c->slots = slots->buffer;
    c->slots_offset = slots->offset / sizeof(cl_long);
    c->report = slots->report;
    status = clpe__check_positions(rope->shared->context, positions, 1, tokens, &c->positions);
    if (status == CLPE_SUCCESS)
        status = check_aliasing(c);
    if (status == CLPE_SUCCESS)
        status = check_buffers(rope, c);
    return status;
}

clpe_status clpe_enqueue_rope_kv(clpe_rope *rope, cl_command_queue queue, size_t tokens,
                                 const clpe_rope_tensor *q, const clpe_rope_tensor *q_out,
                                 const clpe_rope_tensor *k, const clpe_rope_tensor *v,
                                 const clpe_kv_cache *cache, const clpe_kv_slots *slots,
                                 const clpe_positions *positions, uint32_t flags,
                                 cl_uint num_events, const cl_event *wait_list, cl_event *event)
{
    kv_call c = {.rope = rope};
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    clpe_status status = clpe__check_call_on(rope->shared, queue, num_events, wait_list);
    if (status == CLPE_SUCCESS)
        status = check_call(rope, tokens, q, q_out, k, v, cache, slots, positions, flags, &c);
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
    clpe_extent e[4] = {{c.k.row_pitch, 0, c.k.extent}, {c.v.row_pitch, 0, c.v.extent},
                        {c.q.row_pitch, 0, c.q.extent}, {c.q_out.row_pitch, 0, c.q_out.extent}};
    size_t regions = c.q_out.buffer ? 4 : c.q.buffer ? 3 : 2;
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
