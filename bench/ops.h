/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops.h - the operations clpe-bench times, as one table.
 *
 * Every line of the report is an entry of BENCH_OPS run for one dtype at
 * one size. Three roles:
 *   limits     streams.cl: the fastest a kernel moves the same bytes
 *              (stream, fill, gather-stream)
 *   baselines  baselines.cl: what a user writes instead of clpe, with a
 *              table precomputed by clpe (table-add, gather-table-add)
 *   clpe       the library's calls (table, add, add-out, gather)
 * Kernel operations come in a family of variants (one and four elements
 * per work-item, labelled NAME and NAME-x4); a comparison takes the
 * fastest variant of the family it names.
 *
 * Adding an operation is one entry: its label, family, role, bytes moved,
 * what it is compared with, and the functions that set its arguments and
 * enqueue one iteration (a new operation that needs its own buffers adds
 * them to bench_env).
 *
 * Rotary operations (.rotary) run on another shape: queries [batch, seq,
 * heads, head_dim] in env->x and keys [batch, seq, kv_heads, head_dim] in
 * env->y; their d is the elements of one token, (heads + kv_heads) * head_dim.
 * Their 4-wide variants fit when head_dim / 2 is a multiple of 4.
 */
#ifndef CLPE_BENCH_OPS_H
#define CLPE_BENCH_OPS_H

#include "device.h"

typedef enum op_role { OP_ROLE_LIMIT, OP_ROLE_BASELINE, OP_ROLE_CLPE } op_role;

/* Where a kernel operation's kernel lives. */
typedef enum op_program {
    OP_PROGRAM_NONE,      /* a clpe call */
    OP_PROGRAM_STREAMS,   /* streams.cl, one program for every dtype: NAME_<stream suffix> */
    OP_PROGRAM_BASELINES  /* baselines.cl, built per dtype: NAME */
} op_program;

struct op_ctx;

typedef struct op_def {
    const char *label;       /* the report's name: "stream-x4", "table-add", "add" */
    const char *family;      /* what comparisons name: "stream", "table-add", "add" */
    op_role role;
    unsigned width;          /* elements per work-item: 4 needs d % 4 == 0; 1 for clpe */
    op_program program;
    const char *kernel;      /* kernel name (streams: without the dtype suffix) */
    double elem_bytes;       /* bytes it must move per element, in element sizes */
    double row_bytes;        /* and per row (int32 token ids) */
    const char *limit;       /* family it is held against, or NULL */
    const char *baseline;    /* family of the user's alternative it is compared with, or NULL */
    int needs_table;         /* reads the precomputed table (env->table) */
    int writes_out;          /* writes env->y (else env->x, in place) */
    int rotary;              /* runs on the rotary shape (q in env->x, k in env->y) */
    /* Set the kernel arguments that stay fixed over a run; NULL for clpe calls. */
    cl_int (*set_args)(const struct op_ctx *o);
    /* Enqueue one iteration; with event non-NULL, return its event. */
    cl_int (*enqueue)(const struct op_ctx *o, cl_command_queue q, cl_event *event);
} op_def;

/* One operation bound to a dtype, a shape and its kernel. */
typedef struct op_ctx {
    const op_def *def;
    const bench_env *env;
    const dtype_info *dt;
    clpe_encoder *enc;       /* clpe calls */
    clpe_rope *rope;         /* rotary clpe calls */
    size_t heads, kv_heads, head_dim; /* rotary shape */
    cl_kernel kernel;        /* kernel operations, made by op_prepare */
    size_t batch, seq, d;
} op_ctx;

extern const op_def BENCH_OPS[];
extern const size_t BENCH_N_OPS;

/* A bare clSetKernelArg x 3 + clEnqueueNDRangeKernel (stream_f32): what any
 * library launch must at least do, for the host cost comparison. */
extern const op_def BENCH_RAW_LAUNCH;

/* clpe_enqueue_rope_cache, for the host cost of every rotary entry point
 * (no line of its own in the tables). */
extern const op_def BENCH_ROPE_CACHE;

/* The role of the operations of a family; -1 for an unknown family. */
int ops_family_role(const char *family);

/* The dtype label of the op's lines: limits move bytes, so they go by the
 * stream suffix (f16 and bf16 share "u16"); the others by dtype name. */
const char *op_dtype_label(const op_def *def, const dtype_info *dt);

/* Bytes the operation must move on rows x d elements of es bytes, counted
 * from its definition, not from what a kernel happens to touch. */
double op_bytes(const op_def *def, size_t rows, size_t d, size_t es);

/* Whether the op can run on width d. */
int op_fits(const op_def *def, size_t d);

/* Create o->kernel from its program (baselines: the dtype's build) and set
 * its fixed arguments. Nothing to do for clpe calls. Returns 0 or a status,
 * after printing one line. */
cl_int op_prepare(op_ctx *o, cl_program baselines);

/* Release what op_prepare made. */
void op_release(op_ctx *o);

/* bench_enqueue_fn over an op_ctx. */
cl_int op_enqueue(void *ctx, cl_command_queue q, cl_event *event);

#endif /* CLPE_BENCH_OPS_H */
