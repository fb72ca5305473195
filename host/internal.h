/*
 * internal.h - what the library's own files share and callers never see.
 */
#ifndef CLPE_INTERNAL_H
#define CLPE_INTERNAL_H

#include "clpe.h"
#include "clpe_interface.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

/* What a kernel does; with the dtype it names one kernel of the program. */
typedef enum clpe_op {
    CLPE_OP_TABLE = 0,
    CLPE_OP_ADD = 1,
    CLPE_OP_GATHER = 2,
    CLPE_OP_ROPE = 3,       /* rotary embedding of queries and keys */
    CLPE_OP_ROPE_CACHE = 4, /* the rotary cos/sin cache */
    CLPE_OP_ROPE_KV = 5,     /* rotary into a KV cache */
    CLPE_OP_MROPE = 6,       /* multimodal rotary of queries and keys (mrope.c) */
    CLPE_OP_MROPE_CACHE = 7, /* its cos/sin cache */
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
#define CLPE_KERNEL_COUNT (CLPE_KERNEL_KV_CHECK_SLOTS + 3)
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
 * rotary objects), built with -DPE_DTYPE, -DPE_OPS_ROWS and -DPE_OPS_ROPE. */
typedef enum clpe_family {
    CLPE_FAMILY_ROWS = 0,
    CLPE_FAMILY_ROPE = 1,
    CLPE_FAMILY_COUNT = 2
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

/* Where a pair's sine and cosine go within a row, from the layout and the
 * odd-d flags: pair i's sine at sin_off + i * stride, its cosine (for
 * i < n_cos) at cos_off + i * stride. The kernels get these as arguments
 * and the host emulation uses the same numbers. */
typedef struct clpe_slots {
    uint32_t n_pairs, n_cos, sin_off, cos_off, stride;
} clpe_slots;

struct clpe_kv_state;

struct clpe_rope {
    clpe_rope_config cfg;          /* its arrays point at the copies below */
    uint32_t rotary_dim, n_pairs;
    double amplitude;              /* m, multiplied into cos and sin */
    double *frequencies;           /* w_i rounded to double, for callers */
    double *arrays;                /* copies of the caller's factor/frequency arrays */
    uint64_t *tw_hi, *tw_lo;       /* tuning words, as for an encoder */
    clpe_program_shared *shared;   /* NULL for a host-only object */
    cl_mem tw_hi_buf;
    cl_mem tw_lo_buf;
    /* clpe_enqueue_rope_kv's slot table, counters and call order, made by
     * the first call (rope_kv_enqueue.c) */
    _Atomic(struct clpe_kv_state *) kv_state;
};

/* Releases a rotary object's KV state (NULL: nothing). */
void clpe__kv_state_release(struct clpe_kv_state *s);

/* A multimodal rotary object: per-pair tuning words laid out as the pairs
 * are (each stream's ladder in its own section), and the section ends. */
struct clpe_mrope {
    clpe_mrope_config cfg;         /* cfg.rope's arrays point at the copies below */
    uint32_t rotary_dim, n_pairs;
    uint32_t ends[CLPE_MROPE_MAX_STREAMS - 1]; /* pair i's stream: how many ends are <= i */
    double amplitude;
    double *frequencies;
    double *arrays;
    uint64_t *tw_hi, *tw_lo;
    clpe_program_shared *shared;   /* NULL for a host-only object */
    cl_mem tw_hi_buf;
    cl_mem tw_lo_buf;
};

/* The stream pair i of a multimodal rotary object turns with (mrope.c). */
uint32_t clpe__mrope_stream(const clpe_mrope *m, uint32_t i);

struct clpe_encoder {
    clpe_config cfg;
    clpe_slots slots;
    uint32_t half_d;               /* pairs: slots.n_pairs */
    uint64_t *tw_hi;               /* host copy of the tuning words: top 64 bits */
    uint64_t *tw_lo;               /* the rest: 32 bits (96-bit words) or 64 (f64) */
    clpe_program_shared *shared;   /* NULL for a host-only encoder */
    cl_mem tw_hi_buf;
    cl_mem tw_lo_buf;              /* uint per pair, or ulong for f64 */
};

/* Bits of the tuning words a dtype uses: 128 for float64, else 96. */
static inline unsigned clpe__tuning_bits(clpe_dtype dtype)
{
    return dtype == CLPE_DTYPE_F64 ? 128u : 96u;
}

/* ---- checks.c: argument checks shared by every call ---- */

/* A [batch, seq, d] region with its defaults resolved, in elements. */
typedef struct clpe_region {
    cl_mem buffer;
    size_t offset;
    size_t row_pitch;
    size_t batch_pitch;
    size_t end_bytes;  /* bytes from the buffer's start past the last element */
} clpe_region;

/* A checked position source, offsets in elements. */
typedef struct clpe_position_args {
    clpe_position_source source;
    int64_t start;
    cl_mem buffer;
    size_t offset;
} clpe_position_args;

/* Encoder, queue and the wait list's shape (every event non-NULL). */
clpe_status clpe__check_call(const clpe_encoder *enc, cl_command_queue queue,
                             cl_uint num_events, const cl_event *wait_list);
/* The queue (and every event) belongs to the encoder's context and device. */
clpe_status clpe__check_queue(const clpe_encoder *enc, cl_command_queue queue,
                              cl_uint num_events, const cl_event *wait_list);
/* The same two checks for any object holding a built program (NULL: host only). */
clpe_status clpe__check_call_on(const clpe_program_shared *shared, cl_command_queue queue,
                                cl_uint num_events, const cl_event *wait_list);
clpe_status clpe__check_queue_on(const clpe_program_shared *shared, cl_command_queue queue,
                                 cl_uint num_events, const cl_event *wait_list);
/* Defaults, pitches, overlap and size of a region, buffer aside: the one
 * resolver of device tensors and host arrays. */
clpe_status clpe__resolve_shape(const clpe_encoder *enc, size_t offset_bytes, size_t row_pitch,
                                size_t batch_pitch, size_t batch, size_t seq, clpe_region *r);
/* The same for rows of d elements of esize bytes. */
clpe_status clpe__resolve_rows(size_t d, size_t esize, size_t offset_bytes, size_t row_pitch,
                               size_t batch_pitch, size_t batch, size_t seq, clpe_region *r);
clpe_status clpe__resolve_tensor(const clpe_encoder *enc, const clpe_tensor *t, size_t batch,
                                 size_t seq, clpe_region *r);
/* The buffer belongs to the encoder's context and holds `bytes` bytes. */
clpe_status clpe__check_buffer(const clpe_encoder *enc, cl_mem buffer, size_t bytes,
                               clpe_status too_small);
clpe_status clpe__check_buffer_in(cl_context context, cl_mem buffer, size_t bytes,
                                  clpe_status too_small);
clpe_status clpe__check_region(const clpe_encoder *enc, const clpe_region *r);
/* Rows [start, start + count) stay inside int64. */
clpe_status clpe__check_start(int64_t start, size_t count);
clpe_status clpe__check_positions(cl_context context, const clpe_positions *pos,
                                  size_t batch, size_t seq, clpe_position_args *out);
/* The token-id buffer holds `count` int32 values after its offset. */
clpe_status clpe__check_ids(const clpe_encoder *enc, const clpe_token_ids *ids, size_t count);

/* ---- call_gate.c: all-or-nothing calls of several commands ---- */

/* A call that enqueues more than one command holds them all behind a user
 * event of its own until the last one is enqueued. If a later enqueue
 * fails, the gate is set to the error and OpenCL terminates the commands
 * already waiting on it, so a failed call writes nothing. */
typedef struct clpe_call_gate {
    cl_event gate;       /* NULL: no gate */
    cl_event *wait_list; /* the caller's events, then the gate */
    cl_uint num_events;
} clpe_call_gate;

clpe_status clpe__gate_open(cl_context context, cl_uint num_events,
                            const cl_event *wait_list, clpe_call_gate *g);
/* Release the gated commands (status CLPE_SUCCESS) or terminate them. */
void clpe__gate_close(clpe_call_gate *g, clpe_status status);

/* Nothing to compute: still honour the event contract (a marker). */
clpe_status clpe__enqueue_nothing(cl_command_queue queue, cl_uint num_events,
                                  const cl_event *wait_list, cl_event *event);

/* ---- launch.c: the row kernels (table, add, gather) ---- */

/* One call of a row kernel, checked. */
typedef struct clpe_row_call {
    clpe_op op;
    clpe_region out;
    clpe_region in;            /* add: x; gather: the embedding table; table: unused */
    cl_mem ids;                /* gather */
    size_t ids_offset;         /* elements */
    cl_mem bad_ids;            /* gather, may be NULL */
    size_t vocab;              /* gather */
    clpe_position_args positions;
    size_t batch, seq;
} clpe_row_call;

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

/* Launch the call, split into launches whose indices fit in 32 bits and the
 * device's grid. Several launches wait behind a gate unless the caller's
 * wait list already holds one (gated). */
clpe_status clpe__launch_rows(clpe_encoder *enc, cl_command_queue queue,
                              const clpe_row_call *call, bool gated, cl_uint num_events,
                              const cl_event *wait_list, cl_event *event);

/* ---- rope_region.c: rotary query and key tensors ---- */

/* A checked query or key tensor, in elements: the device call's and the
 * host emulation's alike. */
typedef struct clpe_rope_region {
    cl_mem buffer;      /* the device tensor's buffer (clpe__resolve_rope_tensor only) */
    size_t offset, heads, head_pitch, row_pitch, batch_pitch;
    size_t extent;      /* elements of one token: (heads-1)*head_pitch + head_dim */
    size_t begin_bytes; /* bytes from the start to the first element */
    size_t end_bytes;   /* bytes from the start past the last element touched */
} clpe_rope_region;

/* Defaults (0 pitches), heads, tokens and sequences that must not share an
 * element (CLPE_ERROR_INVALID_PITCH), the kernels' 32-bit head steps and
 * the size of a [batch, seq, heads, head_dim] tensor, buffer aside. */
clpe_status clpe__resolve_rope_region(const clpe_rope *rope, size_t offset_bytes, size_t heads,
                                      size_t head_pitch, size_t row_pitch, size_t batch_pitch,
                                      size_t batch, size_t seq, clpe_rope_region *r);

/* The same for a device tensor of head_dim elements of esize bytes per
 * head, with its pointer, buffer and reserved fields checked. */
clpe_status clpe__resolve_rope_tensor(size_t head_dim, size_t esize, const clpe_rope_tensor *t,
                                      size_t batch, size_t seq, clpe_rope_region *r);

/* A KV cache's layout (clpe_kv_cache, clpe_host_kv_cache) with its defaults
 * resolved, in elements of its dtype: the device call's and the host
 * emulation's alike. */
typedef struct clpe_kv_cache_layout {
    clpe_dtype dtype;
    size_t num_blocks, block_size, heads, head_pitch, slot_pitch, block_pitch;
    size_t capacity;   /* num_blocks * block_size slots */
    size_t span_bytes; /* bytes from slot 0's first element past the last entry; 0 without a slot */
} clpe_kv_cache_layout;

/* The cache's dtype: the object's, or f16/bf16 under an f32 object
 * (CLPE_ERROR_DTYPE_MISMATCH); heads nonzero; default pitches; heads,
 * slots and blocks that must not share an element
 * (CLPE_ERROR_INVALID_PITCH); the slots within int64 and the bytes within
 * size_t (CLPE_ERROR_TOO_LARGE). Buffers and host pointers aside. */
clpe_status clpe__resolve_kv_cache(const clpe_rope *rope, clpe_dtype dtype, size_t num_blocks,
                                   size_t block_size, size_t heads, size_t head_pitch,
                                   size_t slot_pitch, size_t block_pitch, clpe_kv_cache_layout *l);

/* ---- rope_freq.c: rotary frequencies ---- */

/* CLPE_ERROR_INVALID_SCALING unless the scaling and its parameters are
 * valid (the other fields of cfg are checked already); n_pairs is
 * rotary_dim / 2. */
clpe_status clpe__rope_check_scaling(const clpe_rope_config *cfg, uint32_t n_pairs);

/* The tuning words (bits 96 or 128) of the n_pairs frequencies w_i of cfg,
 * computed in MPFR; also w_i and the amplitude m rounded to double. */
clpe_status clpe__rope_tuning_words(const clpe_rope_config *cfg, uint32_t n_pairs, unsigned bits,
                                    uint64_t *hi, uint64_t *lo, double *frequencies,
                                    double *amplitude);

/* rope_emulate.c: the rotary arithmetic of the kernels on the host. cos
 * and sin of pair i at position p, times the amplitude, sin times sign (1,
 * or -1 for the inverse); and (a, b) rotated by them, each value held
 * exactly in a double. */
void clpe__rope_cos_sin(const clpe_rope *rope, uint64_t p, uint32_t i, double sign, double *c,
                        double *s);
void clpe__rope_rotate(clpe_dtype dtype, double a, double b, double c, double s, double *ra,
                       double *rb);

/* encoder.c: upload tuning words (the low words as uint, or ulong when
 * bits is 128) into *hi_buf and *lo_buf. */
clpe_status clpe__upload_tuning_words(cl_context context, const uint64_t *hi, const uint64_t *lo,
                                      size_t count, unsigned bits, cl_mem *hi_buf,
                                      cl_mem *lo_buf);

/* The arithmetic-type bits of a dtype's scale-like argument. */
typedef struct clpe_real_arg {
    size_t size;
    union {
        cl_float f32;
        cl_double f64;
    } v;
} clpe_real_arg;
static inline clpe_real_arg clpe__real_arg(clpe_dtype dtype, double value)
{
    clpe_real_arg a;
    if (dtype == CLPE_DTYPE_F64) {
        a.size = sizeof(cl_double);
        a.v.f64 = value;
    } else {
        a.size = sizeof(cl_float);
        a.v.f32 = (cl_float)value;
    }
    return a;
}

/* emulate.c: element k of a row of dtype, loaded as the arithmetic type
 * (float values held exactly in a double), and stored with the storage
 * type's rounding. */
double clpe__load_elem(clpe_dtype dtype, const void *row, size_t k);
void clpe__store_elem(clpe_dtype dtype, void *row, size_t k, double v);

/* config.c: the slots of a (checked) configuration. */
clpe_slots clpe__slots(const clpe_config *cfg);

/* tuning.c: F_i = round(2^bits * w_i / 2pi) for every pair (bits 96 or
 * 128), split into the top 64 bits and the rest. */
clpe_status clpe__tuning_words(const clpe_config *cfg, unsigned bits, uint64_t *hi, uint64_t *lo);

/* program.c */
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

/* True when the n reserved words of a caller-filled struct are all zero. */
static inline bool clpe__reserved_zero(const uint64_t *reserved, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (reserved[i])
            return false;
    return true;
}
#define CLPE__RESERVED_ZERO(s) clpe__reserved_zero((s)->reserved, sizeof((s)->reserved) / sizeof(uint64_t))

/* Bytes of one element of dtype. */
size_t clpe__dtype_size(clpe_dtype dtype);

/* Overflow-checked size_t arithmetic: false when the result does not fit. */
static inline bool clpe__mul_size(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool clpe__add_size(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

#endif /* CLPE_INTERNAL_H */
