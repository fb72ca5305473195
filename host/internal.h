/*
 * internal.h - what the library's own files share and callers never see.
 */
#ifndef CLPE_INTERNAL_H
#define CLPE_INTERNAL_H

#include "clpe.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

/* What a kernel does; with the dtype it names one kernel of the program. */
typedef enum clpe_op {
    CLPE_OP_TABLE = 0,
    CLPE_OP_ADD = 1,
    CLPE_OP_GATHER = 2,
    CLPE_OP_COUNT = 3
} clpe_op;

/* Kernels of the program, one pool of cl_kernel objects each: the
 * (op, dtype) kernels at op * 4 + dtype, then the position kernel. */
typedef unsigned clpe_kernel_id;
#define CLPE_DTYPE_COUNT 4
#define CLPE_KERNEL_PAD_POSITIONS (CLPE_OP_COUNT * CLPE_DTYPE_COUNT)
#define CLPE_KERNEL_COUNT (CLPE_KERNEL_PAD_POSITIONS + 1)
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

/* Most pairs one work-item computes (the float8 path of the kernels). */
#define CLPE_PAIRS_PER_ITEM_MAX 8

/* How launches are shaped on one device. */
typedef struct clpe_launch_shape {
    cl_uint pairs_per_item;    /* 1 or CLPE_PAIRS_PER_ITEM_MAX: PE_W of the build */
    size_t local_x;            /* largest work-group size along the pair dimension */
    cl_uint rows_per_item;     /* rows one work-item walks with the odometer */
    size_t max_items_dim1;     /* work-items per launch along dimension 1 */
    size_t max_items_dim2;     /* work-items per launch along dimension 2 */
} clpe_launch_shape;

/* The built program and its kernel pools, shared by every encoder made from
 * one clpe_encoder_create (clpe_encoder_create_like adds a reference). */
typedef struct clpe_program_shared {
    atomic_int refcount;
    cl_context context;
    cl_device_id device;
    cl_program program;
    clpe_kernel_pool pools[CLPE_KERNEL_COUNT];
    clpe_launch_shape shape;
} clpe_program_shared;

struct clpe_encoder {
    clpe_config cfg;
    uint32_t half_d;
    uint64_t *tw_hi;               /* host copy of the tuning words */
    uint32_t *tw_lo;
    clpe_program_shared *shared;   /* NULL for a host-only encoder */
    cl_mem tw_hi_buf;
    cl_mem tw_lo_buf;
};

/* tuning.c: F_i = round(2^96 * w_i / 2pi) for every pair, split into the top
 * 64 and the low 32 bits. */
clpe_status clpe__tuning_words(const clpe_config *cfg, uint64_t *hi, uint32_t *lo);

/* program.c */
clpe_status clpe__program_build(cl_context context, cl_device_id device, clpe_build_log *log,
                                clpe_program_shared **out);
void clpe__program_retain(clpe_program_shared *shared);
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

/* True when the positions start .. start + count - 1 all fit in int64. */
static inline bool clpe__positions_fit(int64_t start, uint64_t count)
{
    return count == 0 || count - 1 <= (uint64_t)INT64_MAX - (uint64_t)start;
}

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
