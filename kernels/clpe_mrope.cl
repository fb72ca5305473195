/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_mrope.cl - multimodal rotary (M-RoPE) and vision rotary for one
 * storage type: rotating queries and keys in place (clpe_mrope_*) and the
 * cos/sin cache (clpe_mrope_cache_*), each pair by the position of the
 * stream its section gives it. Included by clpe_kernels.cl right after
 * clpe_rope.cl, once per storage type, with the same macros; the arguments
 * are those of clpe_mrope_interface.h.
 *
 * The arithmetic is clpe_rope.cl's: the sine and cosine of pair i straight
 * from the phase of its stream's position (pe_sincos_at), c = cos * m and
 * s = sin * m (s negated for the inverse), each rounded, and the rotation of
 * pe_rotate_heads. Positions are data here (three streams that jump where
 * an image starts), so there is no odometer to tick.
 *
 * Launch shape: dimension 0 a group of PE_W pairs, dimension 1 a block of
 * rows_per_item tokens, dimension 2 the sequence.
 */

#define PE_MFN(base) PE_CAT(base, PE_CAT(_, PE_NAME))
#if PE_WIDE
#define PE_MTWL ulong
#define PE_MSINCOS_AT pe_sincos_at128
#else
#define PE_MTWL uint
#define PE_MSINCOS_AT pe_sincos_at
#endif
/* the kind TWL of the argument lists names PE_TWL */
#define PE_TWL PE_MTWL

#ifndef PE_MROPE_HELPERS
#define PE_MROPE_HELPERS
/* The stream pair i turns with. */
static inline uint pe_mrope_stream(uint i, uint end0, uint end1, uint end2)
{
    return (uint)(i >= end0) + (uint)(i >= end1) + (uint)(i >= end2);
}

/* The positions of every stream of one token (up to four streams). */
static inline void pe_mrope_token_positions(global const long *positions, ulong at,
                                            ulong stream_pitch, uint streams, ulong p[4])
{
    for (uint j = 0; j < 4; ++j)
        p[j] = j < streams ? (ulong)positions[at + j * stream_pitch] : 0;
}
#endif

kernel void PE_MFN(clpe_mrope)(PE_MROPE_KERNEL_ARGS(PE_PARAM, PE_COMMA))
{
    uint i0 = (uint)get_global_id(0) * PE_W;
    uint s_begin = (uint)get_global_id(1) * rows_per_item;
    uint b = (uint)get_global_id(2);
    if (i0 >= n_pairs || s_begin >= rows || b >= batch)
        return;
    uint s_stop = s_begin + min(rows_per_item, rows - s_begin);
    uint i_end = min(i0 + PE_W, n_pairs);
    uint streams = 1 + pe_mrope_stream(n_pairs - 1, end0, end1, end2);
    PE_R sign = inverse ? (PE_R)-1 : (PE_R)1;
    /* pe_rotate_heads reads the pairing from a rotary geometry */
    pe_rope_geometry g = {0};
    g.partner = partner;
    g.stride = stride;
    global PE_T *qb = q + q_base + b * q_batch_pitch;
    global PE_T *kb = k ? k + k_base + b * k_batch_pitch : 0;
    for (uint s = s_begin; s < s_stop; ++s) {
        ulong p[4];
        pe_mrope_token_positions(positions, positions_base + ((ulong)b * seq + s) * token_pitch,
                                 stream_pitch, streams, p);
        for (uint i = i0; i < i_end; ++i) {
            PE_R sv, cv;
            PE_MSINCOS_AT(p[pe_mrope_stream(i, end0, end1, end2)], tw_hi, tw_lo, i, &sv, &cv);
            cv = cv * amplitude;
            sv = (sv * amplitude) * sign;
            PE_MFN(pe_rotate_heads)(qb + s * q_row_pitch, q_heads, q_head_pitch, i, cv, sv, &g);
            if (kb)
                PE_MFN(pe_rotate_heads)(kb + s * k_row_pitch, k_heads, k_head_pitch, i, cv, sv,
                                        &g);
        }
    }
}

/* The cos/sin cache: row s holds token t0 + s. */
kernel void PE_MFN(clpe_mrope_cache)(PE_MROPE_CACHE_ARGS(PE_PARAM, PE_COMMA))
{
    uint i0 = (uint)get_global_id(0) * PE_W;
    uint s_begin = (uint)get_global_id(1) * rows_per_item;
    if (i0 >= n_pairs || s_begin >= rows)
        return;
    uint s_stop = s_begin + min(rows_per_item, rows - s_begin);
    uint i_end = min(i0 + PE_W, n_pairs);
    uint streams = 1 + pe_mrope_stream(n_pairs - 1, end0, end1, end2);
    global PE_T *cos_rows = cos_out + cos_base;
    global PE_T *sin_rows = sin_out + sin_base;
    for (uint s = s_begin; s < s_stop; ++s) {
        ulong p[4];
        pe_mrope_token_positions(positions, positions_base + (ulong)s * token_pitch,
                                 stream_pitch, streams, p);
        global PE_T *crow = cos_rows + s * cos_row_pitch;
        global PE_T *srow = sin_rows + s * sin_row_pitch;
        for (uint i = i0; i < i_end; ++i) {
            PE_R sv, cv;
            PE_MSINCOS_AT(p[pe_mrope_stream(i, end0, end1, end2)], tw_hi, tw_lo, i, &sv, &cv);
            cv = cv * amplitude;
            sv = sv * amplitude;
            uint ka = i * stride;
            PE_MFN(pe_store)(crow, ka, cv);
            PE_MFN(pe_store)(crow, ka + partner, cv);
            PE_MFN(pe_store)(srow, ka, sv);
            PE_MFN(pe_store)(srow, ka + partner, sv);
        }
    }
}

#undef PE_MFN
#undef PE_MTWL
#undef PE_TWL
#undef PE_MSINCOS_AT
