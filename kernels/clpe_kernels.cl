/*
 * clpe_kernels.cl - the position encoding kernels (OpenCL C 1.2): the
 * program clpe builds on every device. Its parts:
 *   clpe_interface.h  what the host and the kernels agree on (arguments, flags)
 *   clpe_phase.h      phase and sin/cos arithmetic, shared with the host emulation
 *   clpe_storage.cl   loads and stores of each storage type
 *   clpe_odometer.cl  the phase of a pair walking down the rows
 *   clpe_rows.cl      table, add and gather, included once per storage type
 *   clpe_rope.cl      rotary embedding and its cos/sin cache, likewise
 * and clpe_pad_positions below.
 *
 * Contraction of a*b+c into fma is off: the host emulation must see exactly
 * the operations written in clpe_phase.h and clpe_rows.cl.
 */
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#include "clpe_interface.h"
#include "clpe_phase.h"
#include "clpe_storage.cl"
#include "clpe_odometer.cl"

/* Pairs per work-item, set by the library per device: PE_PAIRS for 32- and
 * 64-bit storage, PE_PAIRS_ROWS16 for the 16-bit row kernels (table, add,
 * gather of f16 and bf16), PE_PAIRS_ROPE16 for the 16-bit rotary kernels
 * (-DPE_PAIRS=1 -DPE_PAIRS_ROWS16=1 -DPE_PAIRS_ROPE16=1 on GPUs, which run
 * work-items in lanes already; 64, 512 and 128 on PoCL's CPUs). Those take
 * the vector path: PoCL's work-item-loop vectoriser gives up on this code,
 * and explicit vectors measured about 5x faster. A work-item walks its
 * pairs in groups of PE_GL: 16 as a float16 (4 groups, 512 bytes of each
 * float32 row), 32 groups for the 16-bit row kernels (taken 8 at a time,
 * PE_STEP_GROUPS) and 8 for the 16-bit rotary ones, 8 as a double8 for
 * float64 (8 groups).
 * Measured on the 2-core CPU (bench/RESULTS.md): 4 groups instead of 1 took the f16 add at batch 8
 * from 7.5 to 9.2 Gelem/s, and 8 instead of 4 added 10-20 % at batch 8 and
 * 8 % at batch 1; 4 groups instead of 1 took the f32 add at batch 1 up
 * 40-55 % and f64 up to 30 %. At batch 8 with shared positions f32 takes
 * the tile walk of clpe_rows.cl; f64 there runs slightly slower than with
 * 2 groups. */
#ifndef PE_PAIRS
#define PE_PAIRS 64
#endif
/* the 16-bit row kernels: 32 groups, a 2 KiB slice of each row, walked in
 * steps of 8 groups. For bf16 32 groups in one step measured 6-13 % faster
 * than 8 groups at batch 8 and 7 % at batch 1 (bench/RESULTS.md, seventh
 * round), and taking them in steps of 8 another 4 % at batch 8; f16 with
 * 512 pairs in steps of 8 against 128 pairs: +5 % at batch 8, +4 % at
 * batch 1 (fourteenth round). */
#ifndef PE_PAIRS_ROWS16
#define PE_PAIRS_ROWS16 (PE_PAIRS == 1 ? 1 : 512)
#endif
#ifndef PE_PAIRS_ROPE16
#define PE_PAIRS_ROPE16 (PE_PAIRS == 1 ? 1 : 128)
#endif

/* Groups of PE_GL pairs a work-item of the current storage type computes as
 * vectors (0: the scalar path only); read where PE_W, PE_VECTOR and PE_GL
 * are set, inside clpe_rows.cl and clpe_rope.cl. */
#define PE_GROUPS (PE_VECTOR && PE_W >= PE_GL ? PE_W / PE_GL : 0)

/* A loop the compiler must not unroll (OpenCL C 2.0's attribute; clang
 * accepts it in 1.2 too, other compilers may ignore it). */
#if defined(__clang__)
#define PE_NO_UNROLL _Pragma("unroll 1")
#else
#define PE_NO_UNROLL
#endif

#define PE_CAT_(a, b) a##b
#define PE_CAT(a, b) PE_CAT_(a, b)

/* Rotate one interleaved vector (a0, b0, a1, b1, ...) by its half as many
 * angles: pe_rotate_zipped_<vector type>. */
static inline float16 pe_rotate_zipped_float16(float16 v, float8 c, float8 s)
{
    float8 a = v.even, b = v.odd;
    return pe_zip8(fma(a, c, -(b * s)), fma(a, s, b * c));
}
#ifdef cl_khr_fp64
static inline double8 pe_rotate_zipped_double8(double8 v, double4 c, double4 s)
{
    double4 a = v.even, b = v.odd;
    return pe_zip4_f64(fma(a, c, -(b * s)), fma(a, s, b * c));
}
#endif

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

/* The position of row s (of this launch) of sequence b, modulo 2^64. */
static inline ulong pe_position(global const long *positions, uint b, uint s,
                                const pe_geometry *g)
{
    if (g->pos_source == PE_POS_IDS)
        return (ulong)positions[b * g->seq + s];
    ulong first = g->pos_source == PE_POS_START ? 0 : (ulong)positions[b];
    return first + (ulong)g->start + s;
}

/* The row of [s_begin, s_begin + count) at position `at`, where row s_begin
 * is at p and each row one on (modulo 2^64, as the positions wrap), or
 * 0xFFFFFFFF: no row (rows stay below it). Found once per walk, so a walk of
 * consecutive positions tests each row against a 32-bit row rather than a
 * 64-bit position: the padding row and the row after which the position
 * wraps past INT64_MAX. On sm_90 the one-pair add f32 kernel's loop over
 * consecutive positions went from 143 to 136 instructions (at 40 registers
 * against 36, the same occupancy; bench/RESULTS.md, twenty-first round). */
static inline uint pe_row_at(ulong p, ulong at, uint s_begin, uint count)
{
    ulong ahead = at - p;
    return ahead < count ? s_begin + (uint)ahead : 0xFFFFFFFFu;
}

/* What a rotary kernel needs besides its buffers (PE_ROPE_KERNEL_ARGS). */
typedef struct pe_rope_geometry {
    long start;
    uint q_heads, q_head_pitch, q_row_pitch, q_batch_pitch;
    uint k_heads, k_head_pitch, k_row_pitch, k_batch_pitch;
    uint n_pairs, partner, stride, inverse;
    uint seq, rows, batch, rows_per_item, pos_source;
} pe_rope_geometry;

#define PE_ROPE_GEOMETRY_FROM_ARGS(g)                                                          \
    const pe_rope_geometry g = {start,         q_heads,       q_head_pitch, q_row_pitch,       \
                                q_batch_pitch, k_heads,       k_head_pitch, k_row_pitch,       \
                                k_batch_pitch, n_pairs,       partner,      stride,            \
                                inverse,       seq,           rows,         batch,             \
                                rows_per_item, pos_source}

/* The position of token s (of this launch) of sequence b, modulo 2^64. */
static inline ulong pe_rope_position(global const long *positions, uint b, uint s,
                                     const pe_rope_geometry *g)
{
    if (g->pos_source == PE_POS_IDS)
        return (ulong)positions[b * g->seq + s];
    ulong first = g->pos_source == PE_POS_START ? 0 : (ulong)positions[b];
    return first + (ulong)g->start + s;
}

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

/* ---- the row kernels, once per storage type ---- */
/* PE_STEP_GROUPS: the groups of a row a work-item computes and stores as
 * one step (clpe_rows.cl, pe_row); PE_AHEAD_STEPS: how many steps ahead a
 * work-item serving four sequences or more asks for its next lines
 * (pe_prefetch_steps). 32- and 64-bit storage take a row's groups in one
 * step, and ask two rows ahead. */
#define PE_STEP_GROUPS PE_GROUPS
#define PE_AHEAD_STEPS 2
/* PE_TICK_IN_STEPS: a row of consecutive positions ticks each group's
 * odometer right after computing its values, in the steps (pe_row), not in
 * a pass of its own over the row's groups after the row. The 16-bit types
 * only: the f16 add +2.5 to +4.5 % at batch 8 and +5 % at batch 1, f32
 * alike at batch 1 (bench/RESULTS.md, sixteenth round); bf16 -1 to -3 %
 * then, and +3 % since the tick takes 7 instructions (seventeenth round) */
#define PE_TICK_IN_STEPS 0
/* PE_NARROW: the row kernels take the sine and cosine made for 16-bit
 * storage (clpe_phase.h, PE_DEFINE_SINCOS_NARROW); rotary always takes the
 * float32 one */
#define PE_NARROW 0
#define PE_NAME f32
#define PE_T float
#define PE_ZIP_ONCE 0 /* measured no faster: its loads and stores set the pace */
#define PE_TILE_PAIRS PE_TILE_PAIRS_F32
#define PE_R float
#define PE_WIDE 0
#define PE_VECTOR 1
#define PE_GL 16
#define PE_GODO pe_odo16
#define PE_W PE_PAIRS
#include "clpe_rows.cl"
#include "clpe_rope.cl"
#undef PE_NAME
#undef PE_T
#undef PE_W
#undef PE_ZIP_ONCE
#undef PE_TILE_PAIRS

/* the 16-bit types: steps of 8 groups (512 bytes of each row), three steps
 * ahead (the lead as the lines of one step: two, four or six steps measured
 * alike for f16; bench/RESULTS.md, fourteenth round) */
#define PE_TILE_PAIRS 0 /* the tile walk measured slower for 16-bit storage */
#undef PE_NARROW
#define PE_NARROW 1
#undef PE_STEP_GROUPS
#define PE_STEP_GROUPS 8
#undef PE_AHEAD_STEPS
#define PE_AHEAD_STEPS 3
#define PE_NAME f16
#define PE_T half
#define PE_ZIP_ONCE 1 /* f16 add at batch 8 +5 % */
#undef PE_TICK_IN_STEPS
#define PE_TICK_IN_STEPS 1
#define PE_W PE_PAIRS_ROWS16
#include "clpe_rows.cl"
#undef PE_W
#define PE_W PE_PAIRS_ROPE16
#include "clpe_rope.cl"
#undef PE_NAME
#undef PE_T
#undef PE_ZIP_ONCE
#undef PE_W

#define PE_NAME bf16
#define PE_ZIP_ONCE 0 /* its packed pairs take sines and cosines apart */
#define PE_T ushort
#define PE_W PE_PAIRS_ROWS16
#include "clpe_rows.cl"
#undef PE_TICK_IN_STEPS
#define PE_TICK_IN_STEPS 0
#undef PE_W
#define PE_W PE_PAIRS_ROPE16
#include "clpe_rope.cl"
#undef PE_NAME
#undef PE_T
#undef PE_R
#undef PE_WIDE
#undef PE_VECTOR
#undef PE_W
#undef PE_GL
#undef PE_GODO
#undef PE_ZIP_ONCE
#undef PE_TILE_PAIRS
#undef PE_NARROW
#define PE_NARROW 0
#undef PE_STEP_GROUPS
#define PE_STEP_GROUPS PE_GROUPS
#undef PE_AHEAD_STEPS
#define PE_AHEAD_STEPS 2

#ifdef cl_khr_fp64
#define PE_NAME f64
#define PE_T double
#define PE_ZIP_ONCE 1 /* f64 add at batch 8 +5 % */
#define PE_TILE_PAIRS 0 /* the tile walk measured slower at batch 8 */
#define PE_R double
#define PE_WIDE 1
#define PE_VECTOR 1
#define PE_GL 8
#define PE_GODO pe_odo8x128
#define PE_W PE_PAIRS
#include "clpe_rows.cl"
#include "clpe_rope.cl"
#undef PE_NAME
#undef PE_T
#undef PE_R
#undef PE_WIDE
#undef PE_VECTOR
#undef PE_W
#undef PE_GL
#undef PE_GODO
#undef PE_ZIP_ONCE
#undef PE_TILE_PAIRS
#endif
#undef PE_STEP_GROUPS
#undef PE_AHEAD_STEPS
#undef PE_TICK_IN_STEPS
#undef PE_NARROW

#include "clpe_rope_kv_interface.h"
#include "clpe_rope_kv.cl" /* rotary into a KV cache */

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
