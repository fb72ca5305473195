/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops.c - the operation table of clpe-bench and how each one is launched
 * (see ops.h).
 */
#include "ops.h"

#include <string.h>

/* ---- kernel arguments ------------------------------------------------------- */

/* A scalar of the streams' element type (f32, u16, u64 by suffix). */
static cl_int set_stream_scalar(cl_kernel k, cl_uint index, const char *suffix, double v)
{
    if (strcmp(suffix, "f32") == 0) {
        cl_float f = (cl_float)v;
        return clSetKernelArg(k, index, sizeof f, &f);
    } else if (strcmp(suffix, "u16") == 0) {
        cl_ushort u = (cl_ushort)v;
        return clSetKernelArg(k, index, sizeof u, &u);
    }
    cl_ulong u = (cl_ulong)v;
    return clSetKernelArg(k, index, sizeof u, &u);
}

/* The element of `size` bytes every byte of which is BENCH_DATA_BYTE: what
 * the fill limit writes, the data the buffers start with. A limit's element
 * is as wide as its dtype's (f32, u16 for f16 and bf16, u64 for f64). */
static cl_int set_stream_data(cl_kernel k, cl_uint index, size_t size)
{
    unsigned char v[8];
    memset(v, BENCH_DATA_BYTE, sizeof v);
    return clSetKernelArg(k, index, size, v);
}

/* A scalar of the baselines' arithmetic type: double for f64, else float. */
static cl_int set_real(cl_kernel k, cl_uint index, const dtype_info *dt, double v)
{
    if (dt->dtype == CLPE_DTYPE_F64)
        return clSetKernelArg(k, index, sizeof v, &v);
    cl_float f = (cl_float)v;
    return clSetKernelArg(k, index, sizeof f, &f);
}

static cl_int set_mems(cl_kernel k, const cl_mem *const *mems, cl_uint n)
{
    cl_int err = CL_SUCCESS;
    for (cl_uint i = 0; i < n && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k, i, sizeof(cl_mem), mems[i]);
    return err;
}

/* stream: x = x * 1 + 0. */
static cl_int args_stream(const op_ctx *o)
{
    const cl_mem *mems[] = {&o->env->x};
    cl_int err = set_mems(o->kernel, mems, 1);
    if (err == CL_SUCCESS)
        err = set_stream_scalar(o->kernel, 1, o->dt->stream, 1.0);
    if (err == CL_SUCCESS)
        err = set_stream_scalar(o->kernel, 2, o->dt->stream, 0.0);
    return err;
}

/* fill: x = the data value (not 0: see BENCH_DATA_BYTE). */
static cl_int args_fill(const op_ctx *o)
{
    const cl_mem *mems[] = {&o->env->x};
    cl_int err = set_mems(o->kernel, mems, 1);
    if (err == CL_SUCCESS)
        err = set_stream_data(o->kernel, 1, o->dt->size);
    return err;
}

/* gather-stream: out = emb[ids] * 1 + 0. */
static cl_int args_gather_stream(const op_ctx *o)
{
    const cl_mem *mems[] = {&o->env->ids, &o->env->emb, &o->env->y};
    cl_uint d_arg = (cl_uint)(o->d / o->def->width), vocab = (cl_uint)o->env->vocab;
    cl_int err = set_mems(o->kernel, mems, 3);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(o->kernel, 3, sizeof d_arg, &d_arg);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(o->kernel, 4, sizeof vocab, &vocab);
    if (err == CL_SUCCESS)
        err = set_stream_scalar(o->kernel, 5, o->dt->stream, 1.0);
    if (err == CL_SUCCESS)
        err = set_stream_scalar(o->kernel, 6, o->dt->stream, 0.0);
    return err;
}

/* table-add: x += table. */
static cl_int args_table_add(const op_ctx *o)
{
    const cl_mem *mems[] = {&o->env->x, &o->env->table};
    return set_mems(o->kernel, mems, 2);
}

/* gather-table-add: out = emb[ids] * scale + table, scale the encoder's (1). */
static cl_int args_gather_table_add(const op_ctx *o)
{
    const cl_mem *mems[] = {&o->env->ids, &o->env->emb, &o->env->table, &o->env->y};
    cl_uint d_arg = (cl_uint)(o->d / o->def->width), vocab = (cl_uint)o->env->vocab;
    clpe_config cfg;
    cl_int err = clpe_encoder_get_config(o->enc, &cfg);
    if (err == CL_SUCCESS)
        err = set_mems(o->kernel, mems, 4);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(o->kernel, 4, sizeof d_arg, &d_arg);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(o->kernel, 5, sizeof vocab, &vocab);
    if (err == CL_SUCCESS)
        err = set_real(o->kernel, 6, o->dt, cfg.scale);
    return err;
}

/* rope-stream: q = q * 1 + 0 and k = k * 1 + 0; the queries' elements (or
 * 4-vectors) of the whole batch, where the keys start in the range. */
static cl_int args_rope_stream(const op_ctx *o)
{
    const cl_mem *mems[] = {&o->env->x, &o->env->y};
    cl_ulong nq = (cl_ulong)(o->batch * o->seq * o->heads * o->head_dim / o->def->width);
    cl_int err = set_mems(o->kernel, mems, 2);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(o->kernel, 2, sizeof nq, &nq);
    if (err == CL_SUCCESS)
        err = set_stream_scalar(o->kernel, 3, o->dt->stream, 1.0);
    if (err == CL_SUCCESS)
        err = set_stream_scalar(o->kernel, 4, o->dt->stream, 0.0);
    return err;
}

/* rope-table: q and k rotated from the cos/sin cache of seq rows. The
 * cache always has the full seq rows; the 1/64 size reads its first ones. */
static cl_int args_rope_table(const op_ctx *o)
{
    const cl_mem *mems[] = {&o->env->x, &o->env->y, &o->env->rope_cos, &o->env->rope_sin};
    cl_uint heads = (cl_uint)o->heads, head_dim = (cl_uint)o->head_dim, seq = (cl_uint)o->seq;
    cl_int err = set_mems(o->kernel, mems, 4);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(o->kernel, 4, sizeof heads, &heads);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(o->kernel, 5, sizeof head_dim, &head_dim);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(o->kernel, 6, sizeof seq, &seq);
    return err;
}

/* ---- launches ----------------------------------------------------------------- */

/* 1-D over every element of the batch. */
static cl_int enqueue_flat(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    size_t g = o->batch * o->seq * o->d / o->def->width;
    return clEnqueueNDRangeKernel(q, o->kernel, 1, NULL, &g, NULL, 0, NULL, ev);
}

/* 2-D: along the row, over the rows. */
static cl_int enqueue_rows(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    size_t g[2] = {o->d / o->def->width, o->batch * o->seq};
    return clEnqueueNDRangeKernel(q, o->kernel, 2, NULL, g, NULL, 0, NULL, ev);
}

/* 2-D: over the elements of one sequence, over the batch. */
static cl_int enqueue_sequences(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    size_t g[2] = {o->seq * o->d / o->def->width, o->batch};
    return clEnqueueNDRangeKernel(q, o->kernel, 2, NULL, g, NULL, 0, NULL, ev);
}

/* 3-D: along the row, over the sequence, over the batch. */
static cl_int enqueue_rows_by_sequence(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    size_t g[3] = {o->d / o->def->width, o->seq, o->batch};
    return clEnqueueNDRangeKernel(q, o->kernel, 3, NULL, g, NULL, 0, NULL, ev);
}

/* 3-D: over the rotation pairs of a head (or their 4-vectors), over the
 * query and key heads of a token, over tokens. */
static cl_int enqueue_head_pairs(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    size_t g[3] = {o->head_dim / 2 / o->def->width, o->heads + o->kv_heads, o->batch * o->seq};
    return clEnqueueNDRangeKernel(q, o->kernel, 3, NULL, g, NULL, 0, NULL, ev);
}

static cl_int enqueue_raw_launch(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    cl_int err = args_stream(o);
    return err == CL_SUCCESS ? enqueue_flat(o, q, ev) : err;
}

static cl_int enqueue_table(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    clpe_tensor out = {.buffer = o->env->x};
    return clpe_enqueue_table(o->enc, q, 0, o->batch * o->seq, &out, 0, NULL, ev);
}

static cl_int enqueue_add(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    clpe_tensor x = {.buffer = o->env->x};
    return clpe_enqueue_add(o->enc, q, o->batch, o->seq, &x, NULL, 0, NULL, ev);
}

static cl_int enqueue_add_out(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    clpe_tensor x = {.buffer = o->env->x}, out = {.buffer = o->env->y};
    return clpe_enqueue_add_out(o->enc, q, o->batch, o->seq, &x, &out, NULL, 0, NULL, ev);
}

static cl_int enqueue_gather(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    clpe_token_ids ids = {.buffer = o->env->ids};
    clpe_tensor emb = {.buffer = o->env->emb}, out = {.buffer = o->env->y};
    return clpe_enqueue_gather(o->enc, q, o->batch, o->seq, &ids, &emb, o->dt->dtype,
                               o->env->vocab, &out, NULL, NULL, 0, NULL, ev);
}

static cl_int enqueue_rope(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    clpe_rope_tensor qt = {.buffer = o->env->x, .heads = o->heads};
    clpe_rope_tensor kt = {.buffer = o->env->y, .heads = o->kv_heads};
    return clpe_enqueue_rope(o->rope, q, o->batch, o->seq, &qt, &kt, NULL, 0, 0, NULL, ev);
}

/* The cos/sin cache of seq rows from position 0, into rope-table's buffers. */
static cl_int enqueue_rope_cache(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    clpe_tensor cos = {.buffer = o->env->rope_cos, .row_pitch = o->head_dim};
    clpe_tensor sin = {.buffer = o->env->rope_sin, .row_pitch = o->head_dim};
    return clpe_enqueue_rope_cache(o->rope, q, 0, o->batch * o->seq, &cos, &sin, 0, NULL, ev);
}

/* Rotary into a KV cache, on the rotary shape: queries in x (rotated in
 * place), keys [batch * seq, kv_heads, head_dim] at the start of y and
 * values right after them, and the two caches after those, contiguous
 * [1, batch * seq] with token t in slot t. One k or v region's bytes: */
static size_t kv_bytes(const op_ctx *o)
{
    return o->batch * o->seq * o->kv_heads * o->head_dim * o->dt->size;
}

static cl_int enqueue_rope_kv(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    size_t tokens = o->batch * o->seq, kv = kv_bytes(o);
    clpe_rope_tensor qt = {.buffer = o->env->x, .heads = o->heads};
    clpe_rope_tensor kt = {.buffer = o->env->y, .heads = o->kv_heads};
    clpe_rope_tensor vt = {.buffer = o->env->y, .offset = kv, .heads = o->kv_heads};
    clpe_kv_cache cache = {.key = o->env->y, .value = o->env->y, .key_offset = 2 * kv,
                           .value_offset = 3 * kv, .dtype = o->dt->dtype, .num_blocks = 1,
                           .block_size = tokens, .heads = o->kv_heads};
    clpe_kv_slots slots = {.buffer = o->env->kv_slots};
    return clpe_enqueue_rope_kv(o->rope, q, tokens, &qt, NULL, &kt, &vt, &cache, &slots, NULL, 0,
                                0, NULL, ev);
}

/* What an engine does without it: rope on q and k in place, then k and v
 * copied into the cache: two commands. */
static cl_int enqueue_rope_copy(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    size_t kv = kv_bytes(o);
    clpe_rope_tensor qt = {.buffer = o->env->x, .heads = o->heads};
    clpe_rope_tensor kt = {.buffer = o->env->y, .heads = o->kv_heads};
    cl_int err = clpe_enqueue_rope(o->rope, q, 1, o->batch * o->seq, &qt, &kt, NULL, 0, 0, NULL,
                                   NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueCopyBuffer(q, o->env->y, o->env->y, 0, 2 * kv, 2 * kv, 0, NULL, ev);
    return err;
}

/* A plain copy of the bytes rope-kv moves: its queries, keys and values
 * read, as many written (two copy commands). */
static cl_int enqueue_kv_copy(const op_ctx *o, cl_command_queue q, cl_event *ev)
{
    size_t kv = kv_bytes(o), qb = o->batch * o->seq * o->heads * o->head_dim * o->dt->size;
    cl_int err = clEnqueueCopyBuffer(q, o->env->x, o->env->kv_copy, 0, 0, qb, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueCopyBuffer(q, o->env->y, o->env->kv_copy, 0, qb, 2 * kv, 0, NULL, ev);
    return err;
}

/* ---- the table ---------------------------------------------------------------- */

/* Order matters: a line's comparisons name lines measured before it. */
const op_def BENCH_OPS[] = {
    /* Limits: streams.cl. */
    {.label = "stream", .family = "stream", .role = OP_ROLE_LIMIT, .width = 1,
     .program = OP_PROGRAM_STREAMS, .kernel = "stream", .elem_bytes = 2,
     .set_args = args_stream, .enqueue = enqueue_flat},
    {.label = "fill", .family = "fill", .role = OP_ROLE_LIMIT, .width = 1,
     .program = OP_PROGRAM_STREAMS, .kernel = "fill", .elem_bytes = 1,
     .set_args = args_fill, .enqueue = enqueue_flat},
    {.label = "gather-stream", .family = "gather-stream", .role = OP_ROLE_LIMIT, .width = 1,
     .program = OP_PROGRAM_STREAMS, .kernel = "gather", .elem_bytes = 2, .row_bytes = 4,
     .writes_out = 1, .set_args = args_gather_stream, .enqueue = enqueue_rows},
    {.label = "stream-x4", .family = "stream", .role = OP_ROLE_LIMIT, .width = 4,
     .program = OP_PROGRAM_STREAMS, .kernel = "stream4", .elem_bytes = 2,
     .set_args = args_stream, .enqueue = enqueue_flat},
    {.label = "fill-x4", .family = "fill", .role = OP_ROLE_LIMIT, .width = 4,
     .program = OP_PROGRAM_STREAMS, .kernel = "fill4", .elem_bytes = 1,
     .set_args = args_fill, .enqueue = enqueue_flat},
    {.label = "gather-stream-x4", .family = "gather-stream", .role = OP_ROLE_LIMIT, .width = 4,
     .program = OP_PROGRAM_STREAMS, .kernel = "gather4", .elem_bytes = 2, .row_bytes = 4,
     .writes_out = 1, .set_args = args_gather_stream, .enqueue = enqueue_rows},

    /* Baselines: baselines.cl over the table clpe computed once (seq rows). x,
     * the table row, x again: 3 element sizes per element. */
    {.label = "table-add", .family = "table-add", .role = OP_ROLE_BASELINE, .width = 1,
     .program = OP_PROGRAM_BASELINES, .kernel = "table_add", .elem_bytes = 3,
     .limit = "stream", .needs_table = 1, .set_args = args_table_add,
     .enqueue = enqueue_sequences},
    {.label = "table-add-x4", .family = "table-add", .role = OP_ROLE_BASELINE, .width = 4,
     .program = OP_PROGRAM_BASELINES, .kernel = "table_add4", .elem_bytes = 3,
     .limit = "stream", .needs_table = 1, .set_args = args_table_add,
     .enqueue = enqueue_sequences},
    {.label = "gather-table-add", .family = "gather-table-add", .role = OP_ROLE_BASELINE,
     .width = 1, .program = OP_PROGRAM_BASELINES, .kernel = "gather_table_add",
     .elem_bytes = 3, .row_bytes = 4, .limit = "gather-stream", .needs_table = 1,
     .writes_out = 1, .set_args = args_gather_table_add, .enqueue = enqueue_rows_by_sequence},
    {.label = "gather-table-add-x4", .family = "gather-table-add", .role = OP_ROLE_BASELINE,
     .width = 4, .program = OP_PROGRAM_BASELINES, .kernel = "gather_table_add4",
     .elem_bytes = 3, .row_bytes = 4, .limit = "gather-stream", .needs_table = 1,
     .writes_out = 1, .set_args = args_gather_table_add, .enqueue = enqueue_rows_by_sequence},

    /* Rotary (see ops.h): the stream over the same queries and keys, and
     * Hugging Face's rotation from a cached cos/sin table ([seq, head_dim],
     * made once per dtype by clpe_enqueue_rope_cache): q, k, and per element
     * its cos and sin, read, q and k written: 4 element sizes per element. */
    {.label = "rope-stream", .family = "rope-stream", .role = OP_ROLE_LIMIT, .width = 1,
     .program = OP_PROGRAM_STREAMS, .kernel = "rope_stream", .elem_bytes = 2, .rotary = 1,
     .set_args = args_rope_stream, .enqueue = enqueue_flat},
    {.label = "rope-stream-x4", .family = "rope-stream", .role = OP_ROLE_LIMIT, .width = 4,
     .program = OP_PROGRAM_STREAMS, .kernel = "rope_stream4", .elem_bytes = 2, .rotary = 1,
     .set_args = args_rope_stream, .enqueue = enqueue_flat},
    {.label = "rope-table", .family = "rope-table", .role = OP_ROLE_BASELINE, .width = 1,
     .program = OP_PROGRAM_BASELINES, .kernel = "rope_table", .elem_bytes = 4,
     .limit = "rope-stream", .needs_table = 1, .rotary = 1, .set_args = args_rope_table,
     .enqueue = enqueue_head_pairs},
    {.label = "rope-table-x4", .family = "rope-table", .role = OP_ROLE_BASELINE, .width = 4,
     .program = OP_PROGRAM_BASELINES, .kernel = "rope_table4", .elem_bytes = 4,
     .limit = "rope-stream", .needs_table = 1, .rotary = 1, .set_args = args_rope_table,
     .enqueue = enqueue_head_pairs},

    /* Rotary into a KV cache: the copy of its bytes, and rope then a copy
     * of k and v into the cache (two commands each). Elements per token:
     * the rotary shape's d; bytes per element: rope-kv's at the default
     * four query heads per key head ((2 heads + 4 kv_heads) / d = 2.4). */
    {.label = "kv-copy", .family = "kv-copy", .role = OP_ROLE_LIMIT, .width = 1,
     .elem_bytes = 2.4, .rotary = 1, .enqueue = enqueue_kv_copy},
    {.label = "rope-copy", .family = "rope-copy", .role = OP_ROLE_BASELINE, .width = 1,
     .elem_bytes = 2.4, .limit = "kv-copy", .rotary = 1, .enqueue = enqueue_rope_copy},

    /* clpe. */
    {.label = "table", .family = "table", .role = OP_ROLE_CLPE, .width = 1, .elem_bytes = 1,
     .limit = "fill", .enqueue = enqueue_table},
    {.label = "add", .family = "add", .role = OP_ROLE_CLPE, .width = 1, .elem_bytes = 2,
     .limit = "stream", .baseline = "table-add", .enqueue = enqueue_add},
    {.label = "add-out", .family = "add-out", .role = OP_ROLE_CLPE, .width = 1, .elem_bytes = 2,
     .limit = "stream", .writes_out = 1, .enqueue = enqueue_add_out},
    {.label = "gather", .family = "gather", .role = OP_ROLE_CLPE, .width = 1, .elem_bytes = 2,
     .row_bytes = 4, .limit = "gather-stream", .baseline = "gather-table-add",
     .writes_out = 1, .enqueue = enqueue_gather},
    {.label = "rope", .family = "rope", .role = OP_ROLE_CLPE, .width = 1, .elem_bytes = 2,
     .limit = "rope-stream", .baseline = "rope-table", .rotary = 1, .enqueue = enqueue_rope},
    {.label = "rope-kv", .family = "rope-kv", .role = OP_ROLE_CLPE, .width = 1, .elem_bytes = 2.4,
     .limit = "kv-copy", .baseline = "rope-copy", .rotary = 1, .enqueue = enqueue_rope_kv},
};
const size_t BENCH_N_OPS = sizeof BENCH_OPS / sizeof BENCH_OPS[0];

const op_def BENCH_RAW_LAUNCH = {.label = "opencl-launch", .family = "opencl-launch",
                                 .role = OP_ROLE_LIMIT, .width = 1,
                                 .program = OP_PROGRAM_STREAMS, .kernel = "stream",
                                 .elem_bytes = 2, .enqueue = enqueue_raw_launch};

const op_def BENCH_ROPE_CACHE = {.label = "rope-cache", .family = "rope-cache",
                                 .role = OP_ROLE_CLPE, .width = 1, .elem_bytes = 1,
                                 .rotary = 1, .enqueue = enqueue_rope_cache};

int ops_family_role(const char *family)
{
    for (size_t i = 0; i < BENCH_N_OPS; i++)
        if (strcmp(BENCH_OPS[i].family, family) == 0)
            return (int)BENCH_OPS[i].role;
    return -1;
}

const char *op_dtype_label(const op_def *def, const dtype_info *dt)
{
    return def->role == OP_ROLE_LIMIT ? dt->stream : dt->name;
}

double op_bytes(const op_def *def, size_t rows, size_t d, size_t es)
{
    return (double)rows * ((double)d * (double)es * def->elem_bytes + def->row_bytes);
}

int op_fits(const op_def *def, size_t d)
{
    return def->width <= 1 || d % def->width == 0;
}

cl_int op_prepare(op_ctx *o, cl_program baselines)
{
    const op_def *def = o->def;
    if (def->program == OP_PROGRAM_NONE)
        return CL_SUCCESS;
    char name[64];
    cl_program prog = o->env->streams;
    if (def->program == OP_PROGRAM_STREAMS) {
        snprintf(name, sizeof name, "%s_%s", def->kernel, o->dt->stream);
    } else {
        snprintf(name, sizeof name, "%s", def->kernel);
        prog = baselines;
    }
    cl_int err;
    o->kernel = clCreateKernel(prog, name, &err);
    if (!o->kernel) {
        fprintf(stderr, "clpe-bench: clCreateKernel(%s): %d\n", name, err);
        return err;
    }
    err = def->set_args ? def->set_args(o) : CL_SUCCESS;
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clpe-bench: setting the arguments of %s: %d\n", name, err);
        op_release(o);
    }
    return err;
}

void op_release(op_ctx *o)
{
    if (o->kernel)
        clReleaseKernel(o->kernel);
    o->kernel = NULL;
}

cl_int op_enqueue(void *ctx, cl_command_queue q, cl_event *event)
{
    const op_ctx *o = ctx;
    return o->def->enqueue(o, q, event);
}
