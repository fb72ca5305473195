/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_kernels.cl - the position encoding kernels (OpenCL C 1.2): the
 * program clpe builds on every device. Its parts:
 *   clpe_interface.h    what the host and the kernels agree on (arguments, flags)
 *   clpe_phase.h        phase and sin/cos arithmetic, shared with the host emulation
 *   clpe_storage.cl     loads and stores of one element or a pair, each storage type
 *   clpe_odometer.cl    the phase of one pair walking down the rows
 *   clpe_phases.cl      the phases a work-item keeps, per storage type
 *   clpe_rows.cl        table, add and gather, included once per storage type,
 *                       with the walk of one of the two shapes:
 *     clpe_rows_pair.cl    one pair per work-item: GPUs, llvmpipe, Oclgrind
 *     clpe_rows_vector.cl  many pairs per work-item as vectors: PoCL on CPUs
 *   clpe_rope.cl        rotary embedding and its cos/sin cache, likewise with
 *     clpe_rope_pair.cl    and clpe_rope_vector.cl
 *   clpe_rope_kv.cl     rotary into a KV cache (clpe_rope_kv_interface.h),
 *                       included once per storage type, its body
 *                       (clpe_rope_kv_body.cl) once per cache type; the
 *                       slot check before it in clpe_rope_kv_check.cl
 *   clpe_vector_storage.cl, clpe_vector_odometer.cl  the vector shape's moves
 *                       and odometers (compiled only where PE_PAIRS > 1)
 *   clpe_dtype_clear.h  clears a storage type's macros after its kernels
 * and clpe_pad_positions below. The shape comes from the device's row of the
 * library's tuning table (host/device/device_tuning.c) as build options.
 *
 * Contraction of a*b+c into fma is off: the host emulation must see exactly
 * the operations written in clpe_phase.h and clpe_rows.cl.
 */
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#include "clpe_interface.h"
#include "clpe_rope_kv_interface.h"
#include "clpe_phase.h"
#include "clpe_storage.cl"
#include "clpe_odometer.cl"

/* Pairs per work-item, set by the library per device: PE_PAIRS for 32- and
 * 64-bit storage, PE_PAIRS_ROWS16 for the 16-bit row kernels (table, add,
 * gather of f16 and bf16), PE_PAIRS_ROPE16 for the 16-bit rotary kernels
 * (-DPE_PAIRS=1 -DPE_PAIRS_ROWS16=1 -DPE_PAIRS_ROPE16=2 on GPUs, which run
 * work-items in lanes already: 16-bit rotary takes two adjacent pairs to
 * move 32-bit words; 64, 512 and 128 on PoCL's CPUs). The last three take
 * the vector path: PoCL's work-item-loop vectoriser gives up on this code,
 * and explicit vectors measured about 5x faster. A work-item walks its
 * pairs in groups of PE_GL: 16 as a float16 (4 groups, 512 bytes of each
 * float32 row), 32 groups for the 16-bit row kernels (taken 8 at a time,
 * PE_STEP_GROUPS) and 8 for the 16-bit rotary ones, 8 as a double8 for
 * float64 (8 groups). Several groups per work-item give the CPU's
 * out-of-order core independent work and fewer loop turns per row. */
#ifndef PE_PAIRS
#define PE_PAIRS 64
#endif
/* the 16-bit row kernels: 32 groups, a 2 KiB slice of each row, walked in
 * steps of 8 groups (long runs of each row, a few lines asked for at a
 * time). */
#ifndef PE_PAIRS_ROWS16
#define PE_PAIRS_ROWS16 (PE_PAIRS == 1 ? 1 : 512)
#endif
#ifndef PE_PAIRS_ROPE16
#define PE_PAIRS_ROPE16 (PE_PAIRS == 1 ? 2 : 128)
#endif

/* The vector shape's loads, stores and odometers, where the build has it. */
#if PE_PAIRS > 1
#include "clpe_vector_storage.cl"
#include "clpe_vector_odometer.cl"
#endif

/* Groups of PE_GL pairs a work-item of the current storage type computes as
 * vectors (0: the scalar path only); read where PE_W and PE_GL
 * are set, inside clpe_rows.cl and clpe_rope.cl. */
#define PE_GROUPS (PE_W >= PE_GL ? PE_W / PE_GL : 0)

/* A loop the compiler must not unroll (OpenCL C 2.0's attribute; clang
 * accepts it in 1.2 too, other compilers may ignore it). */
#if defined(__clang__)
#define PE_NO_UNROLL _Pragma("unroll 1")
#else
#define PE_NO_UNROLL
#endif

#define PE_CAT_(a, b) a##b
#define PE_CAT(a, b) PE_CAT_(a, b)

/* Everything a row kernel needs besides its buffers, gathered from its
 * arguments once (the fields are the PE_ROW_KERNEL_ARGS of that name). */
typedef struct pe_geometry {
    ulong flat_base;
    long start, padding_position;
    uint out_row_pitch, out_batch_pitch, in_row_pitch, in_batch_pitch;
    uint d, n_pairs, n_cos, sin_off, cos_off, stride, flags;
    uint vocab, seq, rows, batch, rows_per_item, pos_source;
} pe_geometry;

#define PE_GEOMETRY_FROM_ARGS(g)                                                               \
    const pe_geometry g = {flat_base,       start,         padding_position, out_row_pitch,    \
                           out_batch_pitch, in_row_pitch,  in_batch_pitch,   d,                \
                           n_pairs,         n_cos,         sin_off,          cos_off,          \
                           stride,          flags,         vocab,            seq,              \
                           rows,            batch,         rows_per_item,    pos_source}

/* The position of row s (of this launch) of sequence b, modulo 2^64: the
 * row kernels' and the rotary kernels' alike (a rotary call with a
 * position per stream reads each pair's with pe_stream_position). */
static inline ulong pe_position_of(global const long *positions, uint pos_source, uint seq,
                                   long start, uint b, uint s)
{
    if (pos_source == PE_POS_IDS)
        return (ulong)positions[b * seq + s];
    ulong first = pos_source == PE_POS_PER_SEQUENCE ? (ulong)positions[b] : 0;
    return first + (ulong)start + s;
}

static inline ulong pe_position(global const long *positions, uint b, uint s,
                                const pe_geometry *g)
{
    return pe_position_of(positions, g->pos_source, g->seq, g->start, b, s);
}

/* The row of [s_begin, s_begin + count) at position `at`, where row s_begin
 * is at p and each row one on (modulo 2^64, as the positions wrap), or
 * 0xFFFFFFFF: no row (rows stay below it). Found once per walk, so a walk of
 * consecutive positions tests each row against a 32-bit row rather than a
 * 64-bit position: the padding row and the row after which the position
 * wraps past INT64_MAX: a 32-bit compare per row instead of a 64-bit
 * one. */
static inline uint pe_row_at(ulong p, ulong at, uint s_begin, uint count)
{
    ulong ahead = at - p;
    return ahead < count ? s_begin + (uint)ahead : 0xFFFFFFFFu;
}

/* What a rotary kernel needs besides its buffers (PE_ROPE_KERNEL_ARGS). */
typedef struct pe_rope_geometry {
    long start;
    ulong stream_pitch;
    uint q_heads, q_head_pitch, q_row_pitch, q_batch_pitch;
    uint k_heads, k_head_pitch, k_row_pitch, k_batch_pitch;
    uint n_pairs, partner, stride, pair_words, inverse;
    uint seq, rows, batch, rows_per_item, pos_source;
    uint token_pitch, end0, end1, end2;
} pe_rope_geometry;

#define PE_ROPE_GEOMETRY_FROM_ARGS(g)                                                          \
    const pe_rope_geometry g = {start,         stream_pitch,  q_heads,       q_head_pitch,     \
                                q_row_pitch,   q_batch_pitch, k_heads,       k_head_pitch,     \
                                k_row_pitch,   k_batch_pitch, n_pairs,       partner,          \
                                stride,        pair_words,    inverse,       seq,              \
                                rows,          batch,         rows_per_item, pos_source,       \
                                token_pitch,   end0,          end1,          end2}

/* Whether the positions are one per stream (each pair reads its own). */
static inline bool pe_rope_streams(uint pos_source) { return pos_source >= PE_POS_STREAMS; }

/* The stream pair i turns with: the section ends at or below it. */
static inline uint pe_rope_stream(uint i, uint end0, uint end1, uint end2)
{
    return (uint)(i >= end0) + (uint)(i >= end1) + (uint)(i >= end2);
}

/* The position of stream j of token s (of this launch) of sequence b. */
static inline ulong pe_stream_position(global const long *positions, ulong token, uint j,
                                       uint token_pitch, ulong stream_pitch)
{
    return (ulong)positions[token * token_pitch + j * stream_pitch];
}

static inline ulong pe_rope_position(global const long *positions, uint b, uint s,
                                     const pe_rope_geometry *g)
{
    return pe_position_of(positions, g->pos_source, g->seq, g->start, b, s);
}

/* The share of the grid one rotary work-item walks (the launch shape in
 * clpe_rope.cl), declared in the caller: pairs from i0, pairs_per_item of
 * them; tokens [s_begin, s_stop) of the sequences [b_first, b_stop). A
 * work-item past the last pair or token returns from the caller. (A macro
 * rather than a function filling a struct: the compilers schedule the
 * struct's version differently, a few registers more on sm_90.) */
#define PE_ROPE_ITEM(g, pairs_per_item)                                                        \
    uint i0 = (uint)get_global_id(0) * (pairs_per_item);                                       \
    uint s_begin = (uint)get_global_id(1) * (g)->rows_per_item;                                \
    if (i0 >= (g)->n_pairs || s_begin >= (g)->rows)                                            \
        return;                                                                                \
    uint s_stop = s_begin + min((g)->rows_per_item, (g)->rows - s_begin);                      \
    /* positions from a start are the same in every sequence */                                \
    bool same_positions = (g)->pos_source == PE_POS_START;                                     \
    uint b_first = same_positions ? 0 : (uint)get_global_id(2);                                \
    uint b_stop = same_positions ? (g)->batch : b_first + 1

/* Parameter types of each argument kind of PE_ROW_KERNEL_ARGS. */
#define PE_KIND_OUT global PE_T *
#define PE_KIND_IN global const PE_T *
#define PE_KIND_IDS global const int *
#define PE_KIND_BAD global uint *
#define PE_KIND_POS global const long *
#define PE_KIND_POS_OUT global long *
#define PE_KIND_TWH global const ulong *
#define PE_KIND_TWL global const PE_TWL *
#define PE_KIND_SCALE PE_R
#define PE_KIND_U32 uint
#define PE_KIND_U64 ulong
#define PE_KIND_I64 long
#define PE_KIND_I32 int
#define PE_PARAM(NAME, KIND, name) PE_KIND_##KIND name

/* ---- the kernels of each storage type ----
 * What a build holds: PE_DTYPE (a clpe_dtype value: 0 f32, 1 f16, 2 bf16,
 * 3 f64) selects one storage type, and PE_OPS_ROWS / PE_OPS_ROPE (1 or 0)
 * the row kernels (table, add, gather, and clpe_pad_positions) and the
 * rotary ones; the library builds only what an object uses. Without them,
 * everything.
 *
 * Each storage type's block below sets every macro the bodies read, then
 * includes the bodies (each compiled only where PE_OPS_* asks for it) and
 * clpe_dtype_clear.h, which clears every one of those macros again, so
 * nothing carries over from one type to the next:
 *   PE_NAME    f32, f16, bf16 or f64: the suffix of every name defined
 *   PE_T       the storage type (float, half, ushort, double)
 *   PE_R       the arithmetic type (float, or double for f64)
 *   PE_WIDE    1 for the 128-bit tuning words of f64, 0 for 96-bit words
 *   PE_NARROW  1: the row kernels take the sine and cosine made for 16-bit
 *              storage (clpe_phase.h, PE_DEFINE_SINCOS_NARROW); rotary
 *              always takes the float32 one
 *   PE_ROW_PAIRS, PE_ROPE_PAIRS  pairs per work-item of the row and the
 *              rotary kernels (1: the portable one-pair body)
 * and, for the vector path only (clpe_rows_vector.cl, clpe_rope_vector.cl):
 *   PE_GL      pairs per vector group: 16 as float16, 8 as double8
 *   PE_GODO    the group's odometer (pe_odo16, pe_odo8x128)
 *   PE_ZIP_ONCE 1: interleave a row's sines and cosines into storage order
 *              once, before the walk over the sequences, rather than at
 *              every store (0 where the loads and stores set the pace, and
 *              for bf16, whose packed pairs want them apart)
 *   PE_TILE_PAIRS  pairs a work-item of the tile walk spans, 0: no tile
 *              walk (it serves float32 only)
 *   PE_STEP_GROUPS groups of a row computed and stored as one step
 *   PE_AHEAD_STEPS how many steps ahead a work-item serving four sequences
 *              or more asks for its next lines (pe_prefetch_steps)
 *   PE_TICK_IN_STEPS 1: a row of consecutive positions ticks each group's
 *              odometer right after computing its values, while its phase
 *              is still in registers, not in a pass after the row
 * (the CLBlast pattern: one body, compiled per precision, so a compiler
 * message names a line of the body's file). */
#ifdef PE_DTYPE
#define PE_BUILD_F32 (PE_DTYPE == 0)
#define PE_BUILD_F16 (PE_DTYPE == 1)
#define PE_BUILD_BF16 (PE_DTYPE == 2)
#define PE_BUILD_F64 (PE_DTYPE == 3)
#else
#define PE_BUILD_F32 1
#define PE_BUILD_F16 1
#define PE_BUILD_BF16 1
#define PE_BUILD_F64 1
#endif
#ifndef PE_OPS_ROWS
#define PE_OPS_ROWS 1
#endif
#ifndef PE_OPS_ROPE
#define PE_OPS_ROPE 1
#endif
/* PE_OPS_KV_FP8 (1 or 0): rotary into FP8 KV caches among the rotary
 * kernels; PE_OPS_KV_FP8_ONLY 1: those kernels alone. The library builds
 * them as a program of their own the first time a call writes an FP8
 * cache, so that the rotary program every object builds does not grow. */
#ifndef PE_OPS_KV_FP8
#define PE_OPS_KV_FP8 1
#endif
#ifndef PE_OPS_KV_FP8_ONLY
#define PE_OPS_KV_FP8_ONLY 0
#endif
/* Steps asked for ahead, from the device's tuning: 32- and 64-bit storage
 * take a row in one step and ask two rows ahead; the 16-bit row kernels
 * take steps of 8 groups (512 bytes of each row) and ask three ahead. */
#ifndef PE_AHEAD_STEPS32
#define PE_AHEAD_STEPS32 2
#endif
#ifndef PE_AHEAD_STEPS16
#define PE_AHEAD_STEPS16 3
#endif

#if PE_BUILD_F32
#define PE_NAME f32
#define PE_T float
#define PE_R float
#define PE_WIDE 0
#define PE_NARROW 0
#define PE_ROW_PAIRS PE_PAIRS
#define PE_ROPE_PAIRS PE_PAIRS
#define PE_GL 16
#define PE_GODO pe_odo16
#define PE_ZIP_ONCE 0
#define PE_TILE_PAIRS PE_TILE_PAIRS_F32
#define PE_STEP_GROUPS PE_GROUPS
#define PE_AHEAD_STEPS PE_AHEAD_STEPS32
#define PE_TICK_IN_STEPS 0
#include "clpe_phases.cl"
#include "clpe_rows.cl"
#include "clpe_rope.cl"
#include "clpe_rope_kv.cl"
#include "clpe_dtype_clear.h"
#endif

#if PE_BUILD_F16
#define PE_NAME f16
#define PE_T half
#define PE_R float
#define PE_WIDE 0
#define PE_NARROW 1
#define PE_ROW_PAIRS PE_PAIRS_ROWS16
#define PE_ROPE_PAIRS PE_PAIRS_ROPE16
#define PE_GL 16
#define PE_GODO pe_odo16
#define PE_ZIP_ONCE 1
#define PE_TILE_PAIRS 0
#define PE_STEP_GROUPS 8
#define PE_AHEAD_STEPS PE_AHEAD_STEPS16
#define PE_TICK_IN_STEPS 1
#include "clpe_phases.cl"
#include "clpe_rows.cl"
#include "clpe_rope.cl"
#include "clpe_rope_kv.cl"
#include "clpe_dtype_clear.h"
#endif

#if PE_BUILD_BF16
#define PE_NAME bf16
#define PE_T ushort
#define PE_R float
#define PE_WIDE 0
#define PE_NARROW 1
#define PE_ROW_PAIRS PE_PAIRS_ROWS16
#define PE_ROPE_PAIRS PE_PAIRS_ROPE16
#define PE_GL 16
#define PE_GODO pe_odo16
#define PE_ZIP_ONCE 0
#define PE_TILE_PAIRS 0
#define PE_STEP_GROUPS 8
#define PE_AHEAD_STEPS PE_AHEAD_STEPS16
#define PE_TICK_IN_STEPS 1
#include "clpe_phases.cl"
#include "clpe_rows.cl"
#include "clpe_rope.cl"
#include "clpe_rope_kv.cl"
#include "clpe_dtype_clear.h"
#endif

#if PE_BUILD_F64 && defined(cl_khr_fp64)
#define PE_NAME f64
#define PE_T double
#define PE_R double
#define PE_WIDE 1
#define PE_NARROW 0
#define PE_ROW_PAIRS PE_PAIRS
#define PE_ROPE_PAIRS PE_PAIRS
#define PE_GL 8
#define PE_GODO pe_odo8x128
#define PE_ZIP_ONCE 1
#define PE_TILE_PAIRS 0
#define PE_STEP_GROUPS PE_GROUPS
#define PE_AHEAD_STEPS PE_AHEAD_STEPS32
#define PE_TICK_IN_STEPS 0
#include "clpe_phases.cl"
#include "clpe_rows.cl"
#include "clpe_rope.cl"
#include "clpe_rope_kv.cl"
#include "clpe_dtype_clear.h"
#endif

#if PE_OPS_ROPE && !PE_OPS_KV_FP8_ONLY
#include "clpe_rope_kv_check.cl" /* the slot check before rotary into a KV cache */
#endif

#if PE_OPS_ROWS
/* Pad-aware positions: one work-item per sequence walks its row, counting
 * the tokens that are not padding (fairseq's make_positions). */
kernel void clpe_pad_positions(PE_PAD_POSITIONS_ARGS(PE_PARAM, PE_COMMA))
{
    ulong b = (ulong)get_global_id(0);
    ulong next = (ulong)first_position;
    for (ulong s = 0; s < seq; ++s) {
        int id = ids[ids_base + b * seq + s];
        ulong value = (ulong)pad_position;
        if (id != pad_id)
            value = next++;
        positions[positions_base + b * seq + s] = (long)value;
    }
}
#endif
