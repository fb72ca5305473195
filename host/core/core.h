/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core.h - what every part of the library shares: checked size arithmetic,
 * the elements of each storage type on the host, reserved fields, the
 * checks every call makes (regions, positions, queues, buffers), the
 * all-or-nothing gate of a call of several commands, and the table kernel
 * arguments are set from. Callers never see it.
 */
#ifndef CLPE_CORE_H
#define CLPE_CORE_H

#include "clpe.h"
#include "clpe_interface.h"

#include <stdbool.h>
#include <stdint.h>

/* The programs of one (context, device) (device/device.h). */
typedef struct clpe_program_shared clpe_program_shared;

/* True when the n reserved words of a caller-filled struct are all zero. */
static inline bool clpe__reserved_zero(const uint64_t *reserved, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (reserved[i])
            return false;
    return true;
}
#define CLPE__RESERVED_ZERO(s) clpe__reserved_zero((s)->reserved, sizeof((s)->reserved) / sizeof(uint64_t))

/* Bytes of one element of dtype (storage.c). */
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


/* storage.c: element k of a row of dtype, loaded as the arithmetic type
 * (float values held exactly in a double), and stored with the storage
 * type's rounding. */
double clpe__load_elem(clpe_dtype dtype, const void *row, size_t k);
void clpe__store_elem(clpe_dtype dtype, void *row, size_t k, double v);
/* FP8 (CLPE_DTYPE_FP8_E4M3 / _E5M2) as vLLM stores it: the float32
 * quotient x / scale, then that float into FP8 (round to nearest even,
 * saturated, NaN kept); and an FP8 byte's value. */
float clpe__fp8_quotient(float x, float scale);
uint8_t clpe__fp8_from_float(clpe_dtype fp8, float x);
float clpe__fp8_to_float(clpe_dtype fp8, uint8_t b);
static inline bool clpe__dtype_is_fp8(clpe_dtype dtype)
{
    return dtype == CLPE_DTYPE_FP8_E4M3 || dtype == CLPE_DTYPE_FP8_E5M2;
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
    cl_mem buffer;            /* the device's values (NULL for a start) */
    const int64_t *host;      /* the host emulation's values */
    size_t offset;
    size_t stream_pitch;      /* a position per stream: stream j of token t is at */
    size_t token_pitch;       /*   j * stream_pitch + t * token_pitch */
    size_t count;             /* values from the offset to one past the last read */
} clpe_position_args;

/* The same two checks for any object holding a built program (NULL: host only). */
clpe_status clpe__check_call_on(const clpe_program_shared *shared, cl_command_queue queue,
                                cl_uint num_events, const cl_event *wait_list);
clpe_status clpe__check_queue_on(const clpe_program_shared *shared, cl_command_queue queue,
                                 cl_uint num_events, const cl_event *wait_list);
/* The same for rows of d elements of esize bytes. */
clpe_status clpe__resolve_rows(size_t d, size_t esize, size_t offset_bytes, size_t row_pitch,
                               size_t batch_pitch, size_t batch, size_t seq, clpe_region *r);
clpe_status clpe__check_buffer_in(cl_context context, cl_mem buffer, size_t bytes,
                                  clpe_status too_small);
/* Rows [start, start + count) stay inside int64. */
clpe_status clpe__check_start(int64_t start, size_t count);
clpe_status clpe__check_positions(cl_context context, const clpe_positions *pos,
                                  size_t batch, size_t seq, clpe_position_args *out);
/* The same for a rotary call of an object of `streams` streams, which may
 * take a position per stream. */
clpe_status clpe__check_stream_positions(cl_context context, const clpe_positions *pos,
                                         uint32_t streams, size_t batch, size_t seq,
                                         clpe_position_args *out);
/* A position source of batch x seq tokens, the device's and the host
 * emulation's alike: has_values says whether values are given (a buffer,
 * or host memory); streams is 0 for a call that is not rotary (no position
 * per stream). Buffers and pointers aside. */
clpe_status clpe__resolve_positions(clpe_position_source source, int64_t start,
                                    bool has_values, size_t offset_bytes, uint32_t streams,
                                    size_t batch, size_t seq, clpe_position_args *out);

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

/* ---- the kernels' arguments (device/launch.c sets them) ---- */

/* One kernel argument as clSetKernelArg takes it: kernels get their
 * arguments from a table indexed by the X-macro lists of
 * clpe_interface.h, filled by the call and set in one loop. An entry of
 * size 0 is left as it is (arguments that change per launch are set by
 * the launch, the others once per call). */
typedef struct clpe_kernel_arg {
    size_t size;
    union {
        cl_mem mem;
        cl_uint u32;
        cl_ulong u64;
        cl_long i64;
        cl_float f32;
        cl_double f64;
    } v;
} clpe_kernel_arg;

static inline clpe_kernel_arg clpe__arg_mem(cl_mem m)
{
    return (clpe_kernel_arg){sizeof(cl_mem), {.mem = m}};
}
static inline clpe_kernel_arg clpe__arg_u32(size_t x)
{
    return (clpe_kernel_arg){sizeof(cl_uint), {.u32 = (cl_uint)x}};
}
static inline clpe_kernel_arg clpe__arg_u64(uint64_t x)
{
    return (clpe_kernel_arg){sizeof(cl_ulong), {.u64 = x}};
}
static inline clpe_kernel_arg clpe__arg_i64(int64_t x)
{
    return (clpe_kernel_arg){sizeof(cl_long), {.i64 = x}};
}
/* A real of the kernel's arithmetic type: double for f64, else float. */
static inline clpe_kernel_arg clpe__arg_real(clpe_dtype dtype, double x)
{
    if (dtype == CLPE_DTYPE_F64)
        return (clpe_kernel_arg){sizeof(cl_double), {.f64 = x}};
    return (clpe_kernel_arg){sizeof(cl_float), {.f32 = (cl_float)x}};
}

/* An argument by reference: its bytes and where its value is (NULL:
 * local memory of that size), for tables whose values live in a struct of
 * the call's (rotary/rope_kv_enqueue.c). */
typedef struct clpe_kernel_arg_ref {
    size_t size;
    const void *value;
} clpe_kernel_arg_ref;

/* Set arguments [0, count) of a table, those whose bit in skip is clear
 * (device/launch.c): the one place the library calls clSetKernelArg. */
cl_int clpe__set_kernel_arg_refs(cl_kernel kernel, const clpe_kernel_arg_ref *args,
                                 cl_uint count, uint64_t skip);
/* The same for a table of values, an entry of size 0 left as it is. */
cl_int clpe__set_kernel_args(cl_kernel kernel, const clpe_kernel_arg *args, cl_uint count);

#endif /* CLPE_CORE_H */
