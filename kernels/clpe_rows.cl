/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rows.cl - the table, add and gather kernels for one storage type:
 * what both shapes share (storing a pair, the input row, the odd-d zero
 * column, the kernels' entry points), and the walk of the shape in use:
 *   clpe_rows_pair.cl    one pair per work-item (PE_W 1): GPUs, llvmpipe,
 *                        Oclgrind; the portable body
 *   clpe_rows_vector.cl  PE_W pairs per work-item as float16 (double8)
 *                        vectors: PoCL on CPUs
 * clpe_kernels.cl includes this file once per storage type, with the
 * macros it lists there (PE_NAME, PE_T, PE_R, ...).
 *
 * Launch shape:
 *   dimension 0: a group of PE_W (1, 64 or 512) consecutive pairs i0 ..
 *                i0+PE_W-1 (PE_TILE_PAIRS in the tile walk; padded up to
 *                the work-group size; extra work-items return, but the
 *                first one past the pairs writes the odd-d zero column);
 *   dimension 1: a block of rows_per_item consecutive rows of the launch;
 *   dimension 2: the sequence, unless positions come from a start (shared
 *                by every sequence): then one work-item serves every
 *                sequence of the launch and computes each encoding value
 *                once per (row, pair), not once per sequence.
 * Between rows a work-item advances the phase with one wide add (the
 * odometer) instead of multiplying again: cheaper, and bit-identical because
 * the integer arithmetic is exact. Positions read per row (ids) have a loop
 * of their own that sets the phase from each, so the common loop carries no
 * multiply and no test of the position source.
 *
 * Arithmetic contract (the host emulation, host/sinusoid/emulate.c, does the same):
 * PE is computed in PE_R, then rounded once to storage; add and gather
 * compute in * scale, rounded, then + PE, rounded: exactly the separate
 * multiply and add an unfused pipeline performs.
 */
#if PE_OPS_ROWS
#define PE_W PE_ROW_PAIRS

#define PE_FN(base) PE_CAT(base, PE_CAT(_, PE_NAME))
#define PE_R2 PE_CAT(PE_R, 2)
/* PE_SIN_COS names the odometers' sine and cosine, PE_SINCOS_AT the direct
 * one: for 16-bit storage (PE_NARROW) the narrow variant (clpe_phase.h) */
#if PE_WIDE
#define PE_TWL ulong
#define PE_ODO pe_odo128
#define PE_SINCOS_AT pe_sincos_at128
#define PE_SIN_COS sin_cos
#else
#define PE_TWL uint
#define PE_ODO pe_odo96
#if PE_NARROW
#define PE_SINCOS_AT pe_sincos_at_narrow
#define PE_SIN_COS sin_cos_narrow
#else
#define PE_SINCOS_AT pe_sincos_at
#define PE_SIN_COS sin_cos
#endif
#endif
#define PE_ODO_FN(name) PE_CAT(PE_ODO, PE_CAT(_, name))
#define PE_GODO_FN(name) PE_CAT(PE_GODO, PE_CAT(_, name))
/* a group's vector type, and the storage function of that width */
#define PE_GV PE_CAT(PE_R, PE_GL)
#define PE_GFN(base) PE_CAT(PE_CAT(base, PE_GL), PE_CAT(_, PE_NAME))
#if PE_GL == 16
#define PE_GZIP pe_zip8
#else
#define PE_GZIP pe_zip4_f64
#endif

/* Store one pair (sine at slot ks, cosine at kc, when the pair has one);
 * ops other than the table add in * scale first (in NULL counts as 0). */
PE_INLINE void PE_FN(pe_store_pair)(global PE_T *orow, global const PE_T *xrow, int op,
                                    PE_R scale, uint i, PE_R sv, PE_R cv,
                                    const pe_geometry *g)
{
    uint ks = g->sin_off + i * g->stride;
    uint kc = g->cos_off + i * g->stride;
    bool has_cos = i < g->n_cos;
    if (g->stride == 2 && has_cos) { /* interleaved: one 2-vector access */
        PE_R2 v = (PE_R2)(sv, cv);
        if (op != PE_OP_TABLE) {
            PE_R2 xv = xrow ? PE_FN(pe_load2)(xrow, ks) : (PE_R2)(0);
            v = xv * scale + v;
        }
        PE_FN(pe_store2)(orow, ks, v);
        return;
    }
    if (op != PE_OP_TABLE) {
        PE_R xs = xrow ? PE_FN(pe_load)(xrow, ks) : (PE_R)0;
        sv = xs * scale + sv;
        if (has_cos) {
            PE_R xc = xrow ? PE_FN(pe_load)(xrow, kc) : (PE_R)0;
            cv = xc * scale + cv;
        }
    }
    PE_FN(pe_store)(orow, ks, sv);
    if (has_cos)
        PE_FN(pe_store)(orow, kc, cv);
}

/* The row this (sequence, row) reads, or NULL: x itself for add; for
 * gather the embedding row of its id, or NULL (and a report) for a bad id. */
PE_INLINE global const PE_T *PE_FN(pe_input_row)(int op, global const PE_T *in,
                                                 global const int *ids,
                                                 global uint *bad_ids, uint b, uint s,
                                                 bool reporter, const pe_geometry *g)
{
    if (op == PE_OP_ADD)
        return in + (b * g->in_batch_pitch + s * g->in_row_pitch);
    if (op != PE_OP_GATHER)
        return 0;
    uint flat = b * g->seq + s;
    int id = ids[flat];
    if (id >= 0 && (uint)id < g->vocab)
        return in + (ulong)id * g->in_row_pitch;
    if (reporter && bad_ids) {
        ulong where = g->flat_base + flat;
        atomic_inc(&bad_ids[0]);
        atomic_min(&bad_ids[1], (uint)min(where, (ulong)0xFFFFFFFEu));
    }
    return 0;
}

/* The odd-d zero column of rows [s_begin, s_stop): in * scale + 0 (0 for
 * the table), written by a work-item of its own, the one after the last
 * pair's (the host adds it to the grid): the row loop carries no test for
 * it, and the walk keeps none of its bounds live past the rows. Written
 * after the rows by the last pair's work-item, it would keep the column's
 * bounds in registers through the whole walk of the one-pair shape. */
PE_INLINE void PE_FN(pe_zero_column)(int op, global PE_T *out, global const PE_T *in,
                                     global const int *ids, uint s_begin, uint s_stop,
                                     uint b_first, uint b_stop, PE_R scale,
                                     const pe_geometry *g)
{
    for (uint s = s_begin; s < s_stop; ++s)
        PE_NO_UNROLL
        for (uint b = b_first; b < b_stop; ++b) {
            global PE_T *orow = out + (b * g->out_batch_pitch + s * g->out_row_pitch);
            global const PE_T *xrow = PE_FN(pe_input_row)(op, in, ids, 0, b, s, false, g);
            PE_R xz = (op != PE_OP_TABLE && xrow) ? PE_FN(pe_load)(xrow, g->d - 1) : (PE_R)0;
            PE_FN(pe_store)(orow, g->d - 1, xz * scale + (PE_R)0);
        }
}

#if PE_W == 1
#include "clpe_rows_pair.cl"
#else
#include "clpe_rows_vector.cl"
#endif

kernel void PE_FN(clpe_table)(PE_ROW_KERNEL_ARGS(PE_PARAM, PE_COMMA))
{
    PE_GEOMETRY_FROM_ARGS(g);
    PE_FN(pe_rows)(PE_OP_TABLE, out + out_base, 0, 0, 0, 0, tw_hi, tw_lo, (PE_R)1, &g);
}

kernel void PE_FN(clpe_add)(PE_ROW_KERNEL_ARGS(PE_PARAM, PE_COMMA))
{
    PE_GEOMETRY_FROM_ARGS(g);
    PE_FN(pe_rows)(PE_OP_ADD, out + out_base, in + in_base, 0, 0,
                   positions ? positions + positions_base : 0, tw_hi, tw_lo, scale, &g);
}

kernel void PE_FN(clpe_gather)(PE_ROW_KERNEL_ARGS(PE_PARAM, PE_COMMA))
{
    PE_GEOMETRY_FROM_ARGS(g);
    PE_FN(pe_rows)(PE_OP_GATHER, out + out_base, in + in_base, ids + ids_base, bad_ids,
                   positions ? positions + positions_base : 0, tw_hi, tw_lo, scale, &g);
}

#undef PE_FN
#undef PE_R2
#undef PE_TWL
#undef PE_ODO
#undef PE_SINCOS_AT
#undef PE_SIN_COS
#undef PE_ODO_FN
#undef PE_GZIP
#undef PE_GODO_FN
#undef PE_GV
#undef PE_GFN
#undef PE_W
#endif
