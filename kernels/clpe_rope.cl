/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope.cl - rotary position embedding for one storage type: rotating
 * queries and keys in place (clpe_rope_*), and the cos/sin cache
 * frameworks consume (clpe_rope_cache_*). Included by clpe_kernels.cl once
 * per storage type, with the macros it lists there. The rotation's walk
 * comes from the file of the shape in use:
 *   clpe_rope_pair.cl    one pair per work-item, two for 16-bit storage
 *                        (PE_W 1 or 2): the portable body
 *   clpe_rope_vector.cl  PE_W pairs per work-item as vectors (PoCL on CPUs)
 *
 * Launch shape, as the row kernels: dimension 0 a group of PE_W pairs,
 * dimension 1 a block of rows_per_item tokens walked with the odometer,
 * dimension 2 the sequence (or none when every sequence has the same
 * positions: then one work-item serves all of them). The angles of a token
 * are computed once and applied to every head of q and of k.
 *
 * Arithmetic (host/rotary/rope_emulate.c does the same): c = cos * m, s = sin * m
 * (s negated for the inverse), each rounded; the rotation of clpe_phase.h
 * (pe_rotate_a, pe_rotate_b); rounded once to storage.
 */
#if PE_OPS_ROPE
#define PE_W PE_ROPE_PAIRS

#include "clpe_rope_type.h"
#define PE_R2 PE_CAT(PE_R, 2)
/* the rotation (clpe_phase.h) of a scalar, a word of two, a group */
#define PE_ROT_A PE_CAT(pe_rotate_a_, PE_R)
#define PE_ROT_B PE_CAT(pe_rotate_b_, PE_R)
#define PE_ROT2_A PE_CAT(pe_rotate_a_, PE_R2)
#define PE_ROT2_B PE_CAT(pe_rotate_b_, PE_R2)

/* Rotate pair i of every head of one token of one tensor, moving its two
 * elements, partner apart, each on its own: the halves of a split pair,
 * or an interleaved pair (partner 1) that may start at an odd element. The
 * walk moves a pointer to the pair's first element from head to head. */
static inline void PE_FN(pe_rotate_heads_apart)(global PE_T *token, uint heads,
                                                uint head_pitch, uint i, PE_R c, PE_R s,
                                                const pe_rope_geometry *g)
{
    uint partner = g->partner;
    global PE_T *pa = token + i * g->stride;
    for (uint h = 0; h < heads; ++h, pa += head_pitch) {
        PE_R a = PE_FN(pe_load)(pa, 0), b = PE_FN(pe_load)(pa, partner);
        PE_FN(pe_store)(pa, 0, PE_ROT_A(a, b, c, s));
        PE_FN(pe_store)(pa, partner, PE_ROT_B(a, b, c, s));
    }
}

/* Rotate pair i of every head of one token of one tensor. An interleaved
 * pair that starts at an even element (the host found every offset and
 * pitch even: pair_words) is one aligned word, moved by one load and one
 * store; the loop of each way is its own, so a GPU issues only the
 * instructions of the one in use. */
static inline void PE_FN(pe_rotate_heads)(global PE_T *token, uint heads, uint head_pitch,
                                          uint i, PE_R c, PE_R s, const pe_rope_geometry *g)
{
    if (!(g->pair_words && g->stride == 2)) {
        PE_FN(pe_rotate_heads_apart)(token, heads, head_pitch, i, c, s, g);
        return;
    }
    global PE_T *pa = token + i * 2;
    for (uint h = 0; h < heads; ++h, pa += head_pitch) {
        PE_R2 v = PE_FN(pe_load_word)(pa);
        PE_FN(pe_store_word)(pa, (PE_R2)(PE_ROT_A(v.x, v.y, c, s), PE_ROT_B(v.x, v.y, c, s)));
    }
}

#if PE_W <= 2
#include "clpe_rope_pair.cl"
#else
#include "clpe_rope_vector.cl"
#endif

#if !PE_OPS_KV_FP8_ONLY
kernel void PE_FN(clpe_rope)(PE_ROPE_KERNEL_ARGS(PE_PARAM, PE_COMMA))
{
    PE_ROPE_GEOMETRY_FROM_ARGS(g);
    PE_FN(pe_rope_rows)(q + q_base, k ? k + k_base : 0,
                        positions ? positions + positions_base : 0, tw_hi, tw_lo, amplitude,
                        &g);
}

/* The same rotation with a position per stream (the host picks this kernel
 * for those sources): a kernel of its own, so that the registers of its
 * walk (a position per pair, no odometer) do not lower the occupancy of
 * the one-position kernel, which GPUs run far more often. */
kernel void PE_FN(clpe_rope_streams)(PE_ROPE_KERNEL_ARGS(PE_PARAM, PE_COMMA))
{
    PE_ROPE_GEOMETRY_FROM_ARGS(g);
#if PE_W <= 2
    PE_FN(pe_rope_rows_streams)(q + q_base, k ? k + k_base : 0, positions + positions_base,
                                tw_hi, tw_lo, amplitude, &g);
#else
    PE_FN(pe_rope_rows)(q + q_base, k ? k + k_base : 0, positions + positions_base, tw_hi,
                        tw_lo, amplitude, &g);
#endif
}

/* Pair i's cos and sin at position p, times the amplitude, into a row of
 * the cos/sin cache: elements i * stride and i * stride + partner of each. */
static inline void PE_FN(pe_rope_cache_pair)(global PE_T *crow, global PE_T *srow, uint i,
                                             ulong p, global const ulong *tw_hi,
                                             global const PE_TWL *tw_lo, PE_R amplitude,
                                             uint stride, uint partner)
{
    PE_R sv, cv;
    PE_SINCOS_AT(p, tw_hi, tw_lo, i, &sv, &cv);
    cv = cv * amplitude;
    sv = sv * amplitude;
    uint ka = i * stride;
    PE_FN(pe_store)(crow, ka, cv);
    PE_FN(pe_store)(crow, ka + partner, cv);
    PE_FN(pe_store)(srow, ka, sv);
    PE_FN(pe_store)(srow, ka + partner, sv);
}

/* The cos/sin cache: row s holds position start + s. */
kernel void PE_FN(clpe_rope_cache)(PE_ROPE_CACHE_ARGS(PE_PARAM, PE_COMMA))
{
    uint i0 = (uint)get_global_id(0) * PE_W;
    uint s_begin = (uint)get_global_id(1) * rows_per_item;
    if (i0 >= n_pairs || s_begin >= rows)
        return;
    uint s_stop = s_begin + min(rows_per_item, rows - s_begin);
    uint i_end = min(i0 + PE_W, n_pairs);
    global PE_T *cos_rows = cos_out + cos_base;
    global PE_T *sin_rows = sin_out + sin_base;
    for (uint s = s_begin; s < s_stop; ++s) {
        /* the cache is written once: a direct phase per row is cheap enough */
        ulong p = (ulong)start + s;
        global PE_T *crow = cos_rows + s * cos_row_pitch;
        global PE_T *srow = sin_rows + s * sin_row_pitch;
        for (uint i = i0; i < i_end; ++i)
            PE_FN(pe_rope_cache_pair)(crow, srow, i, p, tw_hi, tw_lo, amplitude, stride, partner);
    }
}

/* The same at positions read from a buffer (the host picks this kernel for
 * them), a kernel of its own so the common cache keeps its registers: a
 * sequence's start (then row s holds start + s), or a position per token
 * and stream (ids are one stream, token pitch 1), each pair its stream's. */
kernel void PE_FN(clpe_rope_cache_at)(PE_ROPE_CACHE_ARGS(PE_PARAM, PE_COMMA))
{
    uint i0 = (uint)get_global_id(0) * PE_W;
    uint s_begin = (uint)get_global_id(1) * rows_per_item;
    if (i0 >= n_pairs || s_begin >= rows)
        return;
    uint s_stop = s_begin + min(rows_per_item, rows - s_begin);
    uint i_end = min(i0 + PE_W, n_pairs);
    global PE_T *cos_rows = cos_out + cos_base;
    global PE_T *sin_rows = sin_out + sin_base;
    global const long *pos = positions + positions_base;
    bool from_start = pos_source == PE_POS_PER_SEQUENCE;
    ulong first = from_start ? (ulong)pos[0] + (ulong)start : 0;
    for (uint s = s_begin; s < s_stop; ++s) {
        global PE_T *crow = cos_rows + s * cos_row_pitch;
        global PE_T *srow = sin_rows + s * sin_row_pitch;
        for (uint i = i0; i < i_end; ++i) {
            ulong p = from_start ? first + s
                                 : pe_stream_position(pos, s, pe_rope_stream(i, end0, end1, end2),
                                                      token_pitch, stream_pitch);
            PE_FN(pe_rope_cache_pair)(crow, srow, i, p, tw_hi, tw_lo, amplitude, stride, partner);
        }
    }
}
#endif /* !PE_OPS_KV_FP8_ONLY */

#include "clpe_rope_type_clear.h"
#undef PE_R2
#undef PE_ROT_A
#undef PE_ROT_B
#undef PE_ROT2_A
#undef PE_ROT2_B
#undef PE_W
#endif
