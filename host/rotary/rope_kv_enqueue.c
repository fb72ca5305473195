/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_kv_enqueue.c - rotary into a KV cache (clpe_enqueue_rope_kv): the
 * call resolved (rope_kv_call.c), then the slot check and the launches of
 * clpe_rope_kv_*, whose kernel alone writes what the caller sees. Kernel
 * arguments are set from tables built from the X-macro lists of
 * clpe_rope_kv_interface.h.
 */
#include "rotary/rope_kv.h"

#include "clpe_rope_kv_interface.h"

#include <stdlib.h>

/* ---- kernel arguments from the X-macro lists ---- */

/* The C type of each argument kind of the lists. */
#define KV_TYPE_OUT cl_mem
#define KV_TYPE_IN cl_mem
#define KV_TYPE_POS cl_mem
#define KV_TYPE_TWH cl_mem
#define KV_TYPE_TWL cl_mem
#define KV_TYPE_KV_CACHE cl_mem
#define KV_TYPE_KV_REPORT cl_mem
#define KV_TYPE_KV_REPORT_OUT cl_mem
#define KV_TYPE_U32 cl_uint
#define KV_TYPE_F32 cl_float
#define KV_TYPE_U64 cl_ulong
#define KV_TYPE_I64 cl_long
#define KV_TYPE_SCALE clpe_kernel_arg /* float or double (clpe__arg_real) */
#define KV_TYPE_KV_LOCAL size_t /* bytes of local memory */
#define KV_TYPE_KV_ENTRIES_OUT cl_mem

/* Arguments are set by reference (clpe_kernel_arg_ref): their values
 * are the fields of the structs below. */
typedef clpe_kernel_arg_ref kv_arg;

#define KV_ENTRY_VALUE(a, name) {sizeof((a)->name), &(a)->name}
#define KV_ENTRY_OUT KV_ENTRY_VALUE
#define KV_ENTRY_IN KV_ENTRY_VALUE
#define KV_ENTRY_POS KV_ENTRY_VALUE
#define KV_ENTRY_TWH KV_ENTRY_VALUE
#define KV_ENTRY_TWL KV_ENTRY_VALUE
#define KV_ENTRY_KV_CACHE KV_ENTRY_VALUE
#define KV_ENTRY_KV_REPORT KV_ENTRY_VALUE
#define KV_ENTRY_KV_REPORT_OUT KV_ENTRY_VALUE
#define KV_ENTRY_KV_ENTRIES_OUT KV_ENTRY_VALUE
#define KV_ENTRY_U32 KV_ENTRY_VALUE
#define KV_ENTRY_F32 KV_ENTRY_VALUE
#define KV_ENTRY_U64 KV_ENTRY_VALUE
#define KV_ENTRY_I64 KV_ENTRY_VALUE
#define KV_ENTRY_SCALE(a, name) {(a)->name.size, &(a)->name.v}
#define KV_ENTRY_KV_LOCAL(a, name) {(a)->name, NULL}

#define KV_FIELD(NAME, KIND, name) KV_TYPE_##KIND name
#define KV_SEMI() ;
#define KV_ENTRY(NAME, KIND, name) KV_ENTRY_##KIND(a, name)

/* The values of clpe_rope_kv_*'s and clpe_kv_check_slots's arguments:
 * one field per entry of their lists, of its kind's type. */
typedef struct rope_kv_args {
    PE_ROPE_KV_ARGS(KV_FIELD, KV_SEMI);
} rope_kv_args;
typedef struct kv_check_args {
    PE_KV_CHECK_ARGS(KV_FIELD, KV_SEMI);
} kv_check_args;

static cl_int set_table(cl_kernel kernel, const kv_arg *table, cl_uint count, uint64_t skip)
{
    return clpe__set_kernel_arg_refs(kernel, table, count, skip);
}

#define BIT(NAME) ((uint64_t)1 << PE_ROPE_KV_ARG_##NAME)
/* The rotation's arguments that change from launch to launch. */
static const uint64_t per_launch =
    BIT(Q_BASE) | BIT(Q_OUT_BASE) | BIT(K_BASE) | BIT(V_BASE) | BIT(POSITIONS_BASE) |
    BIT(ENTRIES_BASE) | BIT(SLOTS_BASE) | BIT(START) | BIT(ROWS) | BIT(FIRST);
_Static_assert(PE_ROPE_KV_ARG_COUNT <= 64 && PE_KV_CHECK_ARG_COUNT <= 64, "skip masks are 64-bit");

static cl_int set_rope_kv_args(cl_kernel kernel, const rope_kv_args *a, bool launch)
{
    const kv_arg table[PE_ROPE_KV_ARG_COUNT] = {PE_ROPE_KV_ARGS(KV_ENTRY, PE_COMMA)};
    return set_table(kernel, table, PE_ROPE_KV_ARG_COUNT, launch ? ~per_launch : per_launch);
}

static cl_int set_check_args(cl_kernel kernel, const kv_check_args *a)
{
    const kv_arg table[PE_KV_CHECK_ARG_COUNT] = {PE_KV_CHECK_ARGS(KV_ENTRY, PE_COMMA)};
    return set_table(kernel, table, PE_KV_CHECK_ARG_COUNT, 0);
}

/* ---- the rotation ---- */

/* A pitch the kernel multiplies only by 0 when its dimension has one entry. */
static cl_uint pitch32(size_t pitch, size_t count) { return count > 1 ? (cl_uint)pitch : 0; }

/* What a launch callback needs: the call and its arguments. */
typedef struct kv_launch {
    const clpe_kv_call *c;
    rope_kv_args a;
} kv_launch;

static cl_int set_launch_args(cl_kernel kernel, const void *launch, size_t s0, size_t rows,
                              size_t b0, size_t batch)
{
    const clpe_kv_call *c = ((const kv_launch *)launch)->c;
    rope_kv_args a = ((const kv_launch *)launch)->a;
    const clpe_position_args *pos = &c->positions;
    (void)b0;
    (void)batch;
    a.q_base = c->q.r.heads ? c->q.r.offset + s0 * c->q.r.row_pitch : 0;
    a.q_out_base = c->q_out.r.heads ? c->q_out.r.offset + s0 * c->q_out.r.row_pitch : 0;
    a.k_base = c->k.r.offset + s0 * c->k.r.row_pitch;
    a.v_base = c->v.r.offset + s0 * c->v.r.row_pitch;
    a.positions_base = pos->source == CLPE_POSITIONS_START          ? 0
                       : pos->source == CLPE_POSITIONS_PER_SEQUENCE ? pos->offset
                       : pos->source == CLPE_POSITIONS_IDS          ? pos->offset + s0
                                                                    : pos->offset + s0 * pos->token_pitch;
    a.entries_base = s0;
    a.slots_base = c->slots_offset + s0;
    /* positions wrap modulo 2^64 like the kernels' arithmetic */
    a.start = pos->source == CLPE_POSITIONS_START ? (cl_long)((uint64_t)pos->start + s0)
                                                  : (cl_long)s0;
    a.rows = (cl_uint)rows;
    a.first = s0 == 0;
    return set_rope_kv_args(kernel, &a, true);
}

/* The largest power of two up to 64 that divides every entry offset
 * (pitches is the OR of the pitches entries step by). */
static cl_uint entry_align(size_t pitches)
{
    cl_uint align = 64;
    while (align > 1 && pitches % align)
        align /= 2;
    return align;
}

static void fixed_args(const clpe_kv_call *c, cl_mem stats, cl_mem entries, bool inline_check,
                       const clpe_launch_grid *grid, rope_kv_args *a)
{
    const clpe_rope *rope = c->rope;
    const size_t rows = grid->rows_per_launch;
    const clpe_kv_cache_layout *l = &c->cache;
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    *a = (rope_kv_args){
        .q = c->q.r.buffer, .q_out = c->q_out.r.buffer, .k = c->k.r.buffer, .v = c->v.r.buffer,
        .key_cache = c->key, .value_cache = c->value, .positions = c->positions.buffer,
        .entries = entries, .report = stats, .report_out = c->report, .stats = stats,
        .tw_hi = rope->tw_hi_buf, .tw_lo = rope->tw_lo_buf,
        .amplitude = clpe__arg_real(rope->cfg.dtype, rope->amplitude),
        .key_scale = c->key_scale, .value_scale = c->value_scale,
        .key_offset = c->key_offset, .value_offset = c->value_offset,
        .cache_head_pitch = l->head_pitch,
        .entry_align = entry_align(l->slot_pitch | (l->num_blocks > 1 ? l->block_pitch : 0)),
        .q_heads = (cl_uint)c->q.r.heads,
        .q_head_pitch = pitch32(c->q.r.head_pitch, c->q.r.heads),
        .q_row_pitch = pitch32(c->q.r.row_pitch, rows),
        .q_out_head_pitch = pitch32(c->q_out.r.head_pitch, c->q_out.r.heads),
        .q_out_row_pitch = pitch32(c->q_out.r.row_pitch, rows),
        .kv_heads = (cl_uint)c->k.r.heads,
        .k_head_pitch = pitch32(c->k.r.head_pitch, c->k.r.heads),
        .k_row_pitch = pitch32(c->k.r.row_pitch, rows),
        .v_head_pitch = pitch32(c->v.r.head_pitch, c->v.r.heads),
        .v_row_pitch = pitch32(c->v.r.row_pitch, rows),
        .head_dim = rope->cfg.head_dim, .n_pairs = rope->n_pairs,
        .partner = half_split ? rope->n_pairs : 1, .stride = half_split ? 1 : 2,
        .inverse = c->inverse, .rows_per_item = grid->rows_per_item,
        .pos_source = (cl_uint)c->positions.source, .inline_check = inline_check,
        .stream_pitch = c->positions.stream_pitch,
        .token_pitch = (cl_uint)c->positions.token_pitch, .end0 = rope->ends[0],
        .end1 = rope->ends[1], .end2 = rope->ends[2],
        .slots = c->slots, .call_slots_base = c->slots_offset, .call_tokens = (cl_uint)c->tokens,
        .capacity = l->capacity, .block_size = l->block_size ? l->block_size : 1,
        .slot_pitch = l->slot_pitch, .block_pitch = l->block_pitch};
}

/* ---- the object's slot-check state ---- */

/* What every KV call on one object shares: the hash table of the slot
 * check, and the counters and the report of calls without one. Calls on
 * the object run one after another on the device (each waits for the end
 * of the one before, on any queue), so one table and one report serve
 * them all. */
struct clpe_kv_state {
    pthread_mutex_t lock;           /* guards everything below */
    cl_mem stats;                   /* uint[4]: [0..1] report of a call without one,
                                       [PE_KV_STAT_REFUSED_CALLS] refused calls */
    cl_mem table;                   /* PE_KV_CHECK_CLAIM's table */
    size_t table_entries;
    cl_mem entries;                 /* each token's cache entry, from the check */
    size_t entries_tokens;
    cl_command_queue last_queue;    /* the last call's queue: a call on another waits for it */
    size_t check_group;             /* clpe_kv_check_slots's work-group limit */
    cl_ulong local_mem;             /* the device's local memory */
    unsigned path;                  /* CLPE_KV_SLOT_CHECK: 0 chosen by size, 1 sort, 2 hash,
                                       3 in the rotation */
};

void clpe__kv_state_release(struct clpe_kv_state *s)
{
    if (!s)
        return;
    if (s->stats)
        clReleaseMemObject(s->stats);
    if (s->table)
        clReleaseMemObject(s->table);
    if (s->entries)
        clReleaseMemObject(s->entries);
    if (s->last_queue)
        clReleaseCommandQueue(s->last_queue);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static clpe_status state_make(clpe_rope *rope, struct clpe_kv_state **out)
{
    clpe_program_shared *shared = rope->shared;
    struct clpe_kv_state *s = calloc(1, sizeof *s);
    if (!s)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    }
    s->path = (unsigned)clpe__knob("CLPE_KV_SLOT_CHECK", 0, 3, 0);
    cl_uint zero[4] = {0, 0, 0, 0};
    cl_int err = CL_SUCCESS;
    s->stats = clCreateBuffer(shared->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              sizeof zero, zero, &err);
    cl_kernel kernel = NULL;
    clpe_status status = err;
    if (status == CLPE_SUCCESS)
        status = clpe__kernel_acquire(shared, CLPE_KERNEL_KV_CHECK_SLOTS, &kernel);
    if (status == CLPE_SUCCESS) {
        status = clGetKernelWorkGroupInfo(kernel, shared->device, CL_KERNEL_WORK_GROUP_SIZE,
                                          sizeof s->check_group, &s->check_group, NULL);
        clpe__kernel_return(shared, CLPE_KERNEL_KV_CHECK_SLOTS, kernel);
    }
    if (status == CLPE_SUCCESS)
        status = clGetDeviceInfo(shared->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof s->local_mem,
                                 &s->local_mem, NULL);
    if (status != CLPE_SUCCESS) {
        clpe__kv_state_release(s);
        return status;
    }
    *out = s;
    return CLPE_SUCCESS;
}

/* The object's state, made by its first call (two threads may race to
 * make it: one keeps its own, the other's is released). */
static clpe_status state_of(clpe_rope *rope, struct clpe_kv_state **out)
{
    struct clpe_kv_state *s = atomic_load(&rope->kv_state);
    if (s) {
        *out = s;
        return CLPE_SUCCESS;
    }
    clpe_status status = state_make(rope, &s);
    if (status != CLPE_SUCCESS)
        return status;
    struct clpe_kv_state *expected = NULL;
    if (!atomic_compare_exchange_strong(&rope->kv_state, &expected, s)) {
        clpe__kv_state_release(s);
        s = expected;
    }
    *out = s;
    return CLPE_SUCCESS;
}

/* ---- the slot check ---- */

/* Work-items of the sort's one work-group, the local memory its sort
 * leaves to the rest of the kernel, the tokens up to which the sort (one
 * launch) beats the hash table (a fill and two launches) when the size
 * chooses, the most it takes when the knob forces it (one work-group's
 * n log^2 n steps: at 100,000 tokens on PoCL it took 4.5 times a rotation
 * of the same tokens, at 4,096 1.4 times), and the work-group of the hash
 * path's launches. */
#define SORT_GROUP_MAX 256
#define SORT_LOCAL_RESERVE 1024
#define SORT_TOKENS_MAX 128
#define SORT_TOKENS_FORCED_MAX 4096
#define HASH_GROUP 64

/* Whether the rotation checks the slots itself (no check before it): a
 * small call, when the size chooses (one command where a check of its own
 * costs more host time than the check does device time), and up to eight
 * times that when the knob forces it. */
static bool check_inline(const struct clpe_kv_state *s, const clpe_kv_call *c)
{
    return (s->path == 0 && c->tokens <= PE_KV_INLINE_TOKENS_MAX) ||
           (s->path == 3 && c->tokens <= 8 * PE_KV_INLINE_TOKENS_MAX);
}

/* Sort keys (a power of two >= tokens) for the sort path, or 0 where the
 * hash table takes the call: forced by the knob, past the sort's token
 * limit, or where the keys do not fit local memory or slots do not fit 32
 * bits. */
static cl_uint sort_size_for(const struct clpe_kv_state *s, const clpe_kv_call *c)
{
    size_t limit = s->path == 1 ? SORT_TOKENS_FORCED_MAX : SORT_TOKENS_MAX;
    if (s->path == 2 || c->tokens > limit)
        return 0;
    cl_uint size = 1;
    while (size < c->tokens)
        size *= 2;
    if ((cl_ulong)size * sizeof(cl_ulong) + SORT_LOCAL_RESERVE > s->local_mem ||
        c->cache.capacity > ((size_t)1 << 32))
        return 0;
    return size;
}

/* A scratch buffer of the state holding `want` elements of `size` bytes or
 * more, grown (to a power of two, at least 64) when it does not. */
static clpe_status scratch_for(cl_context context, size_t want, size_t size, cl_mem *buffer,
                               size_t *have)
{
    if (*have >= want && *buffer)
        return CLPE_SUCCESS;
    size_t count = 64;
    while (count < want)
        count *= 2;
    cl_int err = CL_SUCCESS;
    cl_mem grown = clCreateBuffer(context, CL_MEM_READ_WRITE, count * size, NULL, &err);
    if (err != CL_SUCCESS)
        return err;
    if (*buffer)
        clReleaseMemObject(*buffer); /* OpenCL keeps it for commands still using it */
    *buffer = grown;
    *have = count;
    return CLPE_SUCCESS;
}

/* The check, its report in the object's own buffer (s->stats), each
 * token's entry in s->entries, its end in *done (NULL: an in-order queue, where what follows waits anyway;
 * then its commands need no events between them either). */
static clpe_status enqueue_check(clpe_program_shared *shared, struct clpe_kv_state *s,
                                 cl_command_queue queue, const clpe_kv_call *c,
                                 cl_uint num_events, const cl_event *wait_list, cl_event *done)
{
    bool ordered = !done;
    cl_kernel kernel;
    clpe_status status = clpe__kernel_acquire(shared, CLPE_KERNEL_KV_CHECK_SLOTS, &kernel);
    if (status != CLPE_SUCCESS)
        return status;
    const clpe_kv_cache_layout *l = &c->cache;
    kv_check_args a = {.slots = c->slots, .slots_base = c->slots_offset,
                       .tokens = (cl_uint)c->tokens, .capacity = l->capacity,
                       .report = s->stats, .sort_keys = sizeof(cl_ulong),
                       .table = s->stats, .entries = s->entries,
                       .block_size = l->block_size ? l->block_size : 1,
                       .slot_pitch = l->slot_pitch, .block_pitch = l->block_pitch};
    a.sort_size = sort_size_for(s, c);
    if (a.sort_size) {
        size_t local = 1;
        while (local * 2 <= s->check_group && local * 2 <= SORT_GROUP_MAX && local < c->tokens)
            local *= 2;
        a.phase = PE_KV_CHECK_SORT;
        a.sort_keys = a.sort_size * sizeof(cl_ulong);
        status = set_check_args(kernel, &a);
        if (status == CLPE_SUCCESS)
            status = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &local, &local, num_events,
                                            wait_list, done);
    } else {
        size_t local = HASH_GROUP < s->check_group ? HASH_GROUP : s->check_group;
        size_t global = (c->tokens + local - 1) / local * local;
        cl_event cleared = NULL, claimed = NULL;
        /* 2 * tokens entries at least: half full at most */
        status = scratch_for(shared->context, 2 * c->tokens, sizeof(cl_uint), &s->table,
                             &s->table_entries);
        if (status == CLPE_SUCCESS) {
            cl_uint empty = PE_KV_EMPTY;
            size_t entries = 64;
            while (entries < 2 * c->tokens)
                entries *= 2;
            a.table = s->table;
            a.table_mask = (cl_uint)(entries - 1);
            status = clEnqueueFillBuffer(queue, s->table, &empty, sizeof empty, 0,
                                         entries * sizeof empty, num_events, wait_list,
                                         ordered ? NULL : &cleared);
        }
        a.phase = PE_KV_CHECK_CLAIM;
        if (status == CLPE_SUCCESS)
            status = set_check_args(kernel, &a);
        if (status == CLPE_SUCCESS)
            status = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, &local,
                                            ordered ? 0 : 1, ordered ? NULL : &cleared,
                                            ordered ? NULL : &claimed);
        a.phase = PE_KV_CHECK_VERIFY;
        if (status == CLPE_SUCCESS)
            status = set_check_args(kernel, &a);
        if (status == CLPE_SUCCESS)
            status = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, &local,
                                            ordered ? 0 : 1, ordered ? NULL : &claimed, done);
        if (cleared)
            clReleaseEvent(cleared);
        if (claimed)
            clReleaseEvent(claimed);
    }
    clpe__kernel_return(shared, CLPE_KERNEL_KV_CHECK_SLOTS, kernel);
    return status;
}

/* The rotation's kernel: one per (storage type, cache type), the cache's
 * type fixed when the program is built. */
static clpe_kernel_id kernel_for(const clpe_rope *rope, clpe_dtype cache)
{
    if (cache == rope->cfg.dtype)
        return clpe__kernel_for(CLPE_OP_ROPE_KV, rope->cfg.dtype);
    if (clpe__dtype_is_fp8(cache))
        return clpe__kernel_for_fp8(rope->cfg.dtype, cache);
    return cache == CLPE_DTYPE_F16 ? CLPE_KERNEL_ROPE_KV_F32_TO_F16
                                   : CLPE_KERNEL_ROPE_KV_F32_TO_BF16;
}

/* Whether commands of the queue run in the order they are enqueued. */
static bool in_order(cl_command_queue queue)
{
    cl_command_queue_properties props = 0;
    return clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL) ==
               CL_SUCCESS &&
           !(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
}

/* An event that completes after the object's previous calls, or NULL when
 * queue runs them first anyway (the same in-order queue). Another queue
 * gets a marker on the last call's queue, flushed so the wait can end;
 * an out-of-order queue a marker on itself. */
static clpe_status after_previous(struct clpe_kv_state *s, cl_command_queue queue, bool ordered,
                                  cl_event *prior)
{
    *prior = NULL;
    if (!s->last_queue || (s->last_queue == queue && ordered))
        return CLPE_SUCCESS;
    clpe_status status = clEnqueueMarkerWithWaitList(s->last_queue, 0, NULL, prior);
    if (status == CLPE_SUCCESS && s->last_queue != queue)
        status = clFlush(s->last_queue);
    return status;
}

/* The caller's wait list, and the object's previous calls. */
#define WAIT_INLINE 8

/* The check, then the rotation. No gate: the check writes only what the
 * object keeps (its report, the hash table, the entries), so a call whose
 * rotation cannot be enqueued after it writes nothing the caller sees; the
 * rotation, of several launches, holds them behind a gate of its own
 * (clpe__run_launches). */
static clpe_status enqueue_call(clpe_rope *rope, struct clpe_kv_state *s,
                                cl_command_queue queue, const clpe_kv_call *c,
                                const clpe_launch_grid *grid, cl_uint num_events,
                                const cl_event *wait_list, cl_event *event)
{
    clpe_program_shared *shared = rope->shared;
    bool ordered = in_order(queue);
    cl_event prior = NULL;
    clpe_status status = after_previous(s, queue, ordered, &prior);
    if (status != CLPE_SUCCESS)
        return status;
    cl_event inline_waits[WAIT_INLINE], *waits = inline_waits;
    cl_uint num_waits = num_events + (prior ? 1 : 0);
    if (num_waits > WAIT_INLINE && !(waits = malloc(num_waits * sizeof *waits))) {
        clReleaseEvent(prior);
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    }
    for (cl_uint k = 0; k < num_events; ++k)
        waits[k] = wait_list[k];
    if (prior)
        waits[num_events] = prior;
    cl_event checked = NULL;
    cl_kernel kernel = NULL;
    clpe_kernel_id id = kernel_for(rope, c->cache.dtype);
    /* the rotation's kernel and arguments first: nothing left to fail but
     * its enqueue once the check is in the queue */
    bool inline_check = check_inline(s, c);
    status = clpe__kernel_acquire(shared, id, &kernel);
    kv_launch launch = {.c = c};
    if (status == CLPE_SUCCESS && !inline_check)
        status = scratch_for(shared->context, c->tokens, sizeof(cl_long), &s->entries,
                             &s->entries_tokens);
    if (status == CLPE_SUCCESS) {
        fixed_args(c, s->stats, s->entries, inline_check, grid, &launch.a);
        status = set_rope_kv_args(kernel, &launch.a, false);
    }
    if (status == CLPE_SUCCESS && !inline_check)
        status = enqueue_check(shared, s, queue, c, num_waits, num_waits ? waits : NULL,
                               ordered ? NULL : &checked);
    if (status == CLPE_SUCCESS && inline_check)
        status = clpe__run_launches(grid, queue, kernel, set_launch_args, &launch, false,
                                    num_waits, num_waits ? waits : NULL, event);
    else if (status == CLPE_SUCCESS)
        status = clpe__run_launches(grid, queue, kernel, set_launch_args, &launch, false,
                                    checked ? 1 : 0, checked ? &checked : NULL, event);
    if (kernel)
        clpe__kernel_return(shared, id, kernel);
    if (checked)
        clReleaseEvent(checked);
    if (prior)
        clReleaseEvent(prior);
    if (waits != inline_waits)
        free(waits);
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
    struct clpe_kv_state *s = NULL;
    status = state_of(rope, &s);
    if (status != CLPE_SUCCESS)
        return status;

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

    pthread_mutex_lock(&s->lock);
    status = enqueue_call(rope, s, queue, &c, &grid, num_events, wait_list, event);
    if (status == CLPE_SUCCESS && s->last_queue != queue) {
        clRetainCommandQueue(queue);
        if (s->last_queue)
            clReleaseCommandQueue(s->last_queue);
        s->last_queue = queue;
    }
    pthread_mutex_unlock(&s->lock);
    return status;
}

clpe_status clpe_rope_kv_refused_calls(clpe_rope *rope, cl_command_queue queue, uint64_t *calls)
{
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    if (!calls)
        return CLPE_ERROR_NULL_POINTER;
    clpe_status status = clpe__check_call_on(rope->shared, queue, 0, NULL);
    if (status == CLPE_SUCCESS)
        status = clpe__check_queue_on(rope->shared, queue, 0, NULL);
    if (status != CLPE_SUCCESS)
        return status;
    *calls = 0;
    struct clpe_kv_state *s = atomic_load(&rope->kv_state);
    if (!s)
        return CLPE_SUCCESS; /* no call yet */
    pthread_mutex_lock(&s->lock);
    cl_event prior = NULL;
    cl_uint count = 0, zero = 0;
    size_t at = PE_KV_STAT_REFUSED_CALLS * sizeof(cl_uint);
    status = after_previous(s, queue, in_order(queue), &prior);
    if (status == CLPE_SUCCESS)
        status = clEnqueueReadBuffer(queue, s->stats, CL_TRUE, at, sizeof count, &count,
                                     prior ? 1 : 0, prior ? &prior : NULL, NULL);
    if (status == CLPE_SUCCESS)
        status = clEnqueueWriteBuffer(queue, s->stats, CL_TRUE, at, sizeof zero, &zero, 0, NULL,
                                      NULL);
    if (prior)
        clReleaseEvent(prior);
    pthread_mutex_unlock(&s->lock);
    if (status == CLPE_SUCCESS)
        *calls = count;
    return status;
}
