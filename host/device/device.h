/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device.h - the library on one device: its tuning and launch shape, the
 * programs and kernel pools an object shares, the tuning words uploaded
 * beside them, and launches split to fit 32-bit indices.
 */
#ifndef CLPE_DEVICE_H
#define CLPE_DEVICE_H

#include "core/core.h"

#include <pthread.h>
#include <stdatomic.h>

/* What a kernel does; with the dtype it names one kernel of the program. */
typedef enum clpe_op {
    CLPE_OP_TABLE = 0,
    CLPE_OP_ADD = 1,
    CLPE_OP_GATHER = 2,
    CLPE_OP_ROPE = 3,       /* rotary embedding of queries and keys */
    CLPE_OP_ROPE_CACHE = 4, /* the rotary cos/sin cache */
    CLPE_OP_ROPE_KV = 5,    /* rotary into a KV cache */
    CLPE_OP_ROPE_STREAMS = 6, /* rotary with a position per stream */
    CLPE_OP_ROPE_CACHE_AT = 7, /* the cos/sin cache at positions read from a buffer */
    CLPE_OP_COUNT = 8
} clpe_op;

/* Kernels of the program, one pool of cl_kernel objects each: the
 * (op, dtype) kernels at op * 4 + dtype, then the position kernel and the
 * KV cache's slot check. */
typedef unsigned clpe_kernel_id;
#define CLPE_DTYPE_COUNT 4
#define CLPE_KERNEL_PAD_POSITIONS (CLPE_OP_COUNT * CLPE_DTYPE_COUNT)
#define CLPE_KERNEL_KV_CHECK_SLOTS (CLPE_KERNEL_PAD_POSITIONS + 1)
/* rotary into a half or bfloat16 cache under float32 (the f32 program) */
#define CLPE_KERNEL_ROPE_KV_F32_TO_F16 (CLPE_KERNEL_KV_CHECK_SLOTS + 1)
#define CLPE_KERNEL_ROPE_KV_F32_TO_BF16 (CLPE_KERNEL_KV_CHECK_SLOTS + 2)
/* rotary into an FP8 cache, in the FP8 program (CLPE_FAMILY_KV_FP8) of
 * its storage type: CLPE_KERNEL_ROPE_KV_FP8 + 2 * storage dtype (f32, f16,
 * bf16) + 0 for E4M3, 1 for E5M2 (clpe__kernel_for_fp8) */
#define CLPE_KERNEL_ROPE_KV_FP8 (CLPE_KERNEL_KV_CHECK_SLOTS + 3)
#define CLPE_KERNEL_COUNT (CLPE_KERNEL_ROPE_KV_FP8 + 6)
static inline clpe_kernel_id clpe__kernel_for_fp8(clpe_dtype storage, clpe_dtype cache)
{
    return CLPE_KERNEL_ROPE_KV_FP8 + 2u * (clpe_kernel_id)storage +
           (cache == CLPE_DTYPE_FP8_E5M2 ? 1u : 0u);
}
static inline clpe_kernel_id clpe__kernel_for(clpe_op op, clpe_dtype dtype)
{
    return (clpe_kernel_id)op * CLPE_DTYPE_COUNT + (clpe_kernel_id)dtype;
}

/* Kernels not in use, ready to be taken by one enqueue call. Setting
 * arguments on a shared cl_kernel from two threads is a race, so each call
 * takes one out of the pool and puts it back after clEnqueueNDRangeKernel
 * (which captures the arguments). */
typedef struct clpe_kernel_pool {
    pthread_mutex_t lock;
    cl_kernel *free_kernels;
    size_t count;
    size_t capacity;
} clpe_kernel_pool;

/* Pairs one work-item computes in the vector shape (the float16 path of
 * the kernels): 64 for 32- and 64-bit storage, 512 for the 16-bit row
 * kernels (a 2 KiB slice of each row, walked in steps of 128 pairs, so a
 * work-item's rows stream in long runs), 128 for the 16-bit rotary
 * kernels. */
#define CLPE_PAIRS_PER_ITEM_MAX 64
#define CLPE_PAIRS_PER_ITEM_ROWS16 512
#define CLPE_PAIRS_PER_ITEM_ROPE16 128
/* Pairs one work-item of a 16-bit rotary kernel rotates in the one-pair
 * shape: two adjacent pairs, so it moves 32-bit words where the pairs are
 * aligned (kernels/clpe_rope_pair.cl). */
#define CLPE_PAIRS_PER_ITEM_ROPE16_PORTABLE 2

/* How launches are shaped on one device (launch_shape.c). */
typedef struct clpe_launch_shape {
    cl_uint pairs_per_item;    /* 1 or CLPE_PAIRS_PER_ITEM_MAX: PE_PAIRS of the build */
    cl_uint pairs_per_item_rows16; /* 1 or CLPE_PAIRS_PER_ITEM_ROWS16: PE_PAIRS_ROWS16 */
    cl_uint pairs_per_item_rope16; /* CLPE_PAIRS_PER_ITEM_ROPE16(_PORTABLE): PE_PAIRS_ROPE16 */
    size_t local_x;            /* largest work-group size along the pair dimension */
    cl_uint rows_per_item;     /* rows one work-item walks with the odometer */
    size_t max_rows;           /* rows per launch (dimension 1 times rows_per_item) */
    size_t max_batch;          /* sequences per launch */
    bool tile_walk;            /* clpe__tile_pairs may choose the tile walk (CLPE_TILE_WALK) */
    cl_uint tile_pairs;        /* pairs a work-item of the tile walk spans (PE_TILE_PAIRS_F32) */
    cl_uint compute_units;     /* the device's CL_DEVICE_MAX_COMPUTE_UNITS (at least 1) */
} clpe_launch_shape;

/* ---- device_tuning.c: the device tuning table ---- */

/* The device's row of the tuning table with the environment's knobs
 * applied (the public clpe_get_device_tuning). */
clpe_status clpe__device_tuning(cl_device_id device, clpe_device_tuning *out);

/* A decimal knob in [lo, hi] from the environment, else `fallback` (a
 * value out of range or not a plain decimal number is ignored). */
unsigned long clpe__knob(const char *name, unsigned long lo, unsigned long hi,
                         unsigned long fallback);

/* The launch shape from the device's tuning, once the kernel's work-group
 * limit is known (sample: any kernel of the program), with the test knobs
 * CLPE_MAX_LAUNCH_ROWS and CLPE_MAX_LAUNCH_BATCH applied. */
clpe_status clpe__choose_shape(cl_device_id device, const clpe_device_tuning *tuning,
                               cl_kernel sample, clpe_launch_shape *shape);

/* Pairs one work-item of a rotary kernel of this storage type computes. */
static inline cl_uint clpe__rope_pairs_per_item(const clpe_launch_shape *shape, clpe_dtype dtype)
{
    bool bits16 = dtype == CLPE_DTYPE_F16 || dtype == CLPE_DTYPE_BF16;
    return bits16 ? shape->pairs_per_item_rope16 : shape->pairs_per_item;
}

/* Pairs one work-item of a row kernel (table, add, gather) of this storage
 * type computes. */
static inline cl_uint clpe__pairs_per_item(const clpe_launch_shape *shape, clpe_dtype dtype)
{
    bool bits16 = dtype == CLPE_DTYPE_F16 || dtype == CLPE_DTYPE_BF16;
    return bits16 ? shape->pairs_per_item_rows16 : shape->pairs_per_item;
}

/* The kernels one program holds: those of one dtype and one family (the
 * row kernels with clpe_pad_positions, for encoders; the rotary ones, for
 * rotary objects; rotary into FP8 caches), built with -DPE_DTYPE,
 * -DPE_OPS_ROWS, -DPE_OPS_ROPE, -DPE_OPS_KV_FP8 and -DPE_OPS_KV_FP8_ONLY. */
typedef enum clpe_family {
    CLPE_FAMILY_ROWS = 0,
    CLPE_FAMILY_ROPE = 1,
    CLPE_FAMILY_KV_FP8 = 2, /* rotary into FP8 caches alone (-DPE_OPS_KV_FP8_ONLY),
                               built the first time a call needs it */
    CLPE_FAMILY_COUNT = 3
} clpe_family;

/* The programs and kernel pools of one (context, device), shared by every
 * object made from one clpe_encoder_create or clpe_rope_create (the
 * *_create_like functions add a reference). Each program is built the
 * first time an object of its dtype and family needs it. */
typedef struct clpe_program_shared {
    atomic_int refcount;
    cl_context context;
    cl_device_id device;
    pthread_mutex_t build_lock; /* guards programs */
    cl_program programs[CLPE_DTYPE_COUNT][CLPE_FAMILY_COUNT];
    clpe_kernel_pool pools[CLPE_KERNEL_COUNT];
    clpe_device_tuning tuning;
    clpe_launch_shape shape;
} clpe_program_shared;

/* Bits of the tuning words a dtype uses: 128 for float64, else 96. */
static inline unsigned clpe__tuning_bits(clpe_dtype dtype)
{
    return dtype == CLPE_DTYPE_F64 ? 128u : 96u;
}

/* program.c: upload tuning words (the low words as uint, or ulong when
 * bits is 128) into *hi_buf and *lo_buf. */
clpe_status clpe__upload_tuning_words(cl_context context, const uint64_t *hi, const uint64_t *lo,
                                      size_t count, unsigned bits, cl_mem *hi_buf,
                                      cl_mem *lo_buf);

/* ---- launch.c: launches split to fit the device and 32-bit indices ---- */

/* One region a kernel indexes in 32 bits within a launch: the elements
 * from a block's first row to past its last are
 * (sequences - 1) * batch_pitch + (rows - 1) * row_pitch + extent. */
typedef struct clpe_extent {
    size_t row_pitch, batch_pitch, extent;
} clpe_extent;

/* Rows and sequences per launch: the device's caps, then the 32-bit bound
 * of every region and of the ids and positions. */
void clpe__plan_launches(const clpe_launch_shape *shape, size_t seq, size_t batch,
                         const clpe_extent *extents, size_t count, size_t *rows,
                         size_t *sequences);

/* A call split into launches of [rows_per_launch, batch_per_launch] over
 * `pairs` pairs. */
typedef struct clpe_launch_grid {
    const clpe_program_shared *program;
    size_t pairs, seq, batch, rows_per_launch, batch_per_launch;
    cl_uint pairs_per_item; /* clpe__pairs_per_item of the kernel's dtype */
    bool zero_column_item; /* one more work-item in dimension 0: the odd-d
                              zero column's (kernels/clpe_rows.cl) */
    bool shared_positions; /* one work-item serves every sequence */
    cl_uint rows_per_item; /* clpe__rows_per_item of the above */
} clpe_launch_grid;

/* Rows one work-item walks in a launch. When one work-item serves every
 * sequence (shared positions), its rows times the launch's sequences stay
 * within half the shape's rows per item, so that each work-item touches
 * few rows of output at once (8 at batch 8, not 128) and they stay in the
 * caches. */
static inline cl_uint clpe__rows_per_item(const clpe_launch_shape *shape, bool shared_positions,
                                          size_t batch_per_launch)
{
    if (!shared_positions || batch_per_launch <= 1)
        return shape->rows_per_item;
    size_t rows = shape->rows_per_item / (2 * batch_per_launch);
    return rows ? (cl_uint)rows : 1u;
}

/* Most rows a 16-bit work-item serving a batch walks (below). */
#define CLPE_ROWS16_BATCH_MAX 64u
/* Work-items per compute unit a launch keeps at least when its work-items
 * walk more rows than clpe__rows_per_item gives (below). */
#define CLPE_ITEMS_PER_UNIT_MIN 8u

/* Rows per work-item that leave a launch of launch_rows rows, pair_items
 * work-items wide, at least CLPE_ITEMS_PER_UNIT_MIN work-items per compute
 * unit; at most cap. */
static inline size_t clpe__balanced_rows(const clpe_launch_shape *shape, size_t launch_rows,
                                         size_t pair_items, size_t cap)
{
    size_t items = (size_t)CLPE_ITEMS_PER_UNIT_MIN * shape->compute_units;
    size_t balanced = launch_rows * pair_items / items;
    return balanced < cap ? balanced : cap;
}

/* The same for the row kernels (table, add, gather) of the encoder's dtype
 * outside the tile walk, for a launch of launch_rows rows whose rows take
 * pair_items work-items each. On the vector path, the 16-bit dtypes'
 * work-items serving a batch walk at least 8 times those rows (8 at batch
 * 8): since their rows are asked for ahead (clpe_rows.cl), a work-item's
 * next rows are its own, and its phases are set once for 8 rows, not for
 * each.
 * Where the launch has rows enough, up to 64 rows, as long as it keeps
 * 8 work-items per compute unit: each work-item's first steps come unasked
 * for and its phases are set from a multiply, so fewer, longer work-items
 * pay that less often, until too few are left to share the compute units
 * evenly. */
static inline cl_uint clpe__row_kernel_rows_per_item(const clpe_launch_shape *shape,
                                                     clpe_dtype dtype, bool shared_positions,
                                                     size_t batch_per_launch,
                                                     size_t launch_rows, size_t pair_items)
{
    cl_uint rows = clpe__rows_per_item(shape, shared_positions, batch_per_launch);
    bool sixteen_bit = dtype == CLPE_DTYPE_F16 || dtype == CLPE_DTYPE_BF16;
    if (!(sixteen_bit && shape->pairs_per_item > 1 && shared_positions && batch_per_launch > 1))
        return rows;
    rows *= 8; /* at most 8 x 4096 (CLPE_ROWS_PER_ITEM's limit) */
    size_t balanced = clpe__balanced_rows(shape, launch_rows, pair_items, CLPE_ROWS16_BATCH_MAX);
    return balanced > rows ? (cl_uint)balanced : rows;
}

/* The same for rotary (clpe_rope.cl). On the vector path, a work-item
 * serving a batch that shares its positions walks the shape's rows per
 * item, as one serving a single sequence does, not the 1 row (at batch 8)
 * of clpe__rows_per_item, as long as the launch keeps
 * CLPE_ITEMS_PER_UNIT_MIN work-items per compute unit: a rotary row is
 * heavier than an add's (every head of q and k), so the phases set from a
 * multiply at each work-item's first row weigh more than the rows it
 * leaves to the caches. GPUs (one pair per work-item) keep
 * clpe__rows_per_item. */
static inline cl_uint clpe__rope_rows_per_item(const clpe_launch_shape *shape,
                                               bool shared_positions, size_t batch_per_launch,
                                               size_t launch_rows, size_t pair_items)
{
    cl_uint rows = clpe__rows_per_item(shape, shared_positions, batch_per_launch);
    if (shape->pairs_per_item == 1 || !shared_positions || batch_per_launch <= 1)
        return rows;
    size_t balanced = clpe__balanced_rows(shape, launch_rows, pair_items, shape->rows_per_item);
    return balanced > rows ? (cl_uint)balanced : rows;
}

/* Pairs one work-item of a row kernel spans in the tile walk
 * (PE_FLAG_TILE_WALK, clpe_rows.cl), or 0 when the call takes the span walk:
 * the tile walk serves float32 on the vector path when one work-item serves
 * two or more sequences that share their positions: each value is computed
 * once into a tile and streamed against every sequence, as a table would
 * be added (the 16-bit and float64 types have no tile walk). Its
 * work-items walk the shape's rows_per_item rows. */
static inline cl_uint clpe__tile_pairs(const clpe_launch_shape *shape, clpe_dtype dtype,
                                       bool shared_positions, size_t batch_per_launch)
{
    if (!shape->tile_walk || shape->pairs_per_item == 1 || !shared_positions ||
        batch_per_launch < 2)
        return 0;
    return dtype == CLPE_DTYPE_F32 ? shape->tile_pairs : 0;
}

/* Sets the arguments of the launch over rows [s0, s0 + rows) of sequences
 * [b0, b0 + batch). */
typedef cl_int (*clpe_set_launch_args)(cl_kernel kernel, const void *call, size_t s0,
                                       size_t rows, size_t b0, size_t batch);

/* Enqueue every launch of the grid (fixed arguments already set); several
 * launches wait behind a gate unless the caller's wait list holds one
 * (gated), and the out event joins them. */
clpe_status clpe__run_launches(const clpe_launch_grid *grid, cl_command_queue queue,
                               cl_kernel kernel, clpe_set_launch_args set_args,
                               const void *call, bool gated, cl_uint num_events,
                               const cl_event *wait_list, cl_event *event);

/* ---- program.c: programs, kernel pools and the words beside them ---- */
void clpe__program_retain(clpe_program_shared *shared);

/* What creating an encoder and a rotary object share (program.c). */
/* Empty the caller's build log, if any. */
void clpe__log_reset(clpe_build_log *log);
/* A new reference to programs on (context, device), the one of dtype and
 * family built now. */
clpe_status clpe__program_for(cl_context context, cl_device_id device, clpe_dtype dtype,
                              clpe_family family, clpe_build_log *log,
                              clpe_program_shared **out);
/* A new reference to the programs of an existing object, the one of dtype
 * and family built now if it is not yet. */
clpe_status clpe__program_like(clpe_program_shared *like, clpe_dtype dtype, clpe_family family,
                               clpe_program_shared **out);
/* Upload an object's tuning words next to a program and take a reference
 * to it (*owner); undone by clpe__detach_words. */
clpe_status clpe__attach_words(clpe_program_shared *shared, const uint64_t *hi, const uint64_t *lo,
                               size_t count, unsigned bits, clpe_program_shared **owner,
                               cl_mem *hi_buf, cl_mem *lo_buf);
void clpe__detach_words(clpe_program_shared *shared, cl_mem hi_buf, cl_mem lo_buf);
void clpe__program_release(clpe_program_shared *shared);
clpe_status clpe__kernel_acquire(clpe_program_shared *shared, clpe_kernel_id id,
                                 cl_kernel *kernel);
void clpe__kernel_return(clpe_program_shared *shared, clpe_kernel_id id, cl_kernel kernel);

/* Does the device have what dtype needs? (config.c) */
bool clpe__device_has_dtype(cl_device_id device, clpe_dtype dtype);

#endif /* CLPE_DEVICE_H */
