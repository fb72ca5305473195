/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope_pair.cl - the rotary walk of the portable shape, what GPUs (and
 * llvmpipe and Oclgrind) run: one pair per work-item for 32- and 64-bit
 * storage, two adjacent pairs for 16-bit storage (PE_W 1 or 2), so that a
 * 16-bit work-item moves 32-bit words as a float32 one does. Included by
 * clpe_rope.cl; defines PE_FN(pe_rope_rows) and PE_FN(pe_rope_rows_streams).
 *
 * Work-item (i, token block, sequence) rotates pairs i .. i + PE_W - 1 of
 * every head of q and k for the tokens [s_begin, s_stop) of its block, for
 * its sequence or, when positions come from a start, for every sequence of
 * the launch. The angles' cosines and sines are computed once per token
 * and applied to every head. Each pair's phase is set from the block's
 * first position (and from every token's with ids, and from its stream's
 * with a position per stream), else advanced by its odometer, one wide add
 * per token.
 */

#if PE_W == 2
/* Rotate pairs i and i + 1 (c and s hold their two angles) of every head
 * of one token of one tensor. With pair_words, as two aligned words of two
 * elements: pair i and pair i + 1 when interleaved; the first halves of
 * both pairs and their second halves when split (i is even, and so is
 * partner). Otherwise one element at a time. */
static inline void PE_FN(pe_rotate_two_heads)(global PE_T *token, uint heads, uint head_pitch,
                                              uint i, PE_R2 c, PE_R2 s,
                                              const pe_rope_geometry *g)
{
    if (!g->pair_words) {
        PE_FN(pe_rotate_heads_apart)(token, heads, head_pitch, i, c.x, s.x, g);
        PE_FN(pe_rotate_heads_apart)(token, heads, head_pitch, i + 1, c.y, s.y, g);
        return;
    }
    global PE_T *pa = token + i * g->stride;
    if (g->stride == 2) {
        for (uint h = 0; h < heads; ++h, pa += head_pitch) {
            PE_R2 u = PE_FN(pe_load_word)(pa), v = PE_FN(pe_load_word)(pa + 2);
            PE_FN(pe_store_word)(pa, (PE_R2)(PE_ROT_A(u.x, u.y, c.x, s.x),
                                             PE_ROT_B(u.x, u.y, c.x, s.x)));
            PE_FN(pe_store_word)(pa + 2, (PE_R2)(PE_ROT_A(v.x, v.y, c.y, s.y),
                                                 PE_ROT_B(v.x, v.y, c.y, s.y)));
        }
    } else {
        uint partner = g->partner;
        for (uint h = 0; h < heads; ++h, pa += head_pitch) {
            PE_R2 a = PE_FN(pe_load_word)(pa), b = PE_FN(pe_load_word)(pa + partner);
            PE_FN(pe_store_word)(pa, PE_ROT2_A(a, b, c, s));
            PE_FN(pe_store_word)(pa + partner, PE_ROT2_B(a, b, c, s));
        }
    }
}
#endif

/* A work-item's cosines or sines: PE_W of them, as one value. */
#if PE_W == 2
#define PE_RW PE_R2
#define PE_RW_OF(v) ((PE_R2)((v)[0], (v)[1]))
#else
#define PE_RW PE_R
#define PE_RW_OF(v) ((v)[0])
#endif

/* Rotate pairs i .. i + n - 1 (n of PE_W; c and s hold their angles) of
 * every head of q and k of token s, in the sequences [b_first, b_stop). */
PE_INLINE void PE_FN(pe_rotate_token)(global PE_T *q, global PE_T *k, uint b_first,
                                      uint b_stop, uint s, uint i, uint n, PE_RW c, PE_RW sn,
                                      const pe_rope_geometry *g)
{
    for (uint b = b_first; b < b_stop; ++b) {
        global PE_T *qt = q + (b * g->q_batch_pitch + s * g->q_row_pitch);
        global PE_T *kt = k ? k + (b * g->k_batch_pitch + s * g->k_row_pitch) : 0;
#if PE_W == 2
        if (n == 2) {
            PE_FN(pe_rotate_two_heads)(qt, g->q_heads, g->q_head_pitch, i, c, sn, g);
            if (kt)
                PE_FN(pe_rotate_two_heads)(kt, g->k_heads, g->k_head_pitch, i, c, sn, g);
        } else {
            PE_FN(pe_rotate_heads_apart)(qt, g->q_heads, g->q_head_pitch, i, c.x, sn.x, g);
            if (kt)
                PE_FN(pe_rotate_heads_apart)(kt, g->k_heads, g->k_head_pitch, i, c.x, sn.x, g);
        }
#else
        (void)n;
        PE_FN(pe_rotate_heads)(qt, g->q_heads, g->q_head_pitch, i, c, sn, g);
        if (kt)
            PE_FN(pe_rotate_heads)(kt, g->k_heads, g->k_head_pitch, i, c, sn, g);
#endif
    }
}

/* The walk with a position per stream: each pair's sine and cosine
 * straight from the phase of its stream's position at every token (the
 * positions are data: no odometer to tick, and no words kept in registers
 * between tokens). */
PE_INLINE void PE_FN(pe_rope_rows_streams)(global PE_T *q, global PE_T *k,
                                           global const long *positions,
                                           global const ulong *tw_hi, global const PE_TWL *tw_lo,
                                           PE_R amplitude, const pe_rope_geometry *g)
{
    PE_ROPE_ITEM(g, PE_W);
    PE_R sign = g->inverse ? (PE_R)-1 : (PE_R)1;
    uint n = min((uint)PE_W, g->n_pairs - i0);
    for (uint s = s_begin; s < s_stop; ++s) {
        PE_R cv[PE_W], sv[PE_W];
        for (uint j = 0; j < PE_W; ++j) {
            uint ij = i0 + min(j, n - 1);
            ulong p = pe_stream_position(positions, (ulong)b_first * g->seq + s,
                                         pe_rope_stream(ij, g->end0, g->end1, g->end2),
                                         g->token_pitch, g->stream_pitch);
            PE_SINCOS_AT(p, tw_hi, tw_lo, ij, &sv[j], &cv[j]);
            cv[j] = cv[j] * amplitude;
            sv[j] = (sv[j] * amplitude) * sign;
        }
        PE_FN(pe_rotate_token)(q, k, b_first, b_stop, s, i0, n, PE_RW_OF(cv), PE_RW_OF(sv), g);
    }
}

PE_INLINE void PE_FN(pe_rope_rows)(global PE_T *q, global PE_T *k,
                                   global const long *positions, global const ulong *tw_hi,
                                   global const PE_TWL *tw_lo, PE_R amplitude,
                                   const pe_rope_geometry *g)
{
    PE_ROPE_ITEM(g, PE_W);
    uint i = i0;
    PE_R sign = g->inverse ? (PE_R)-1 : (PE_R)1;
    /* the last work-item of an odd count of pairs has one (n stays 1) */
    uint n = min((uint)PE_W, g->n_pairs - i);

    PE_ODO o[PE_W];
    for (uint j = 0; j < PE_W; ++j)
        PE_ODO_FN(load)(&o[j], tw_hi, tw_lo, i + min(j, n - 1));
    for (uint s = s_begin; s < s_stop; ++s) {
        ulong p = pe_rope_position(positions, b_first, s, g);
        PE_R cv[PE_W], sv[PE_W];
        for (uint j = 0; j < PE_W; ++j) {
            if (s == s_begin || g->pos_source == PE_POS_IDS)
                PE_ODO_FN(set)(&o[j], p);
            PE_ODO_FN(sin_cos)(&o[j], &sv[j], &cv[j]);
            cv[j] = cv[j] * amplitude;
            sv[j] = (sv[j] * amplitude) * sign;
        }
        PE_FN(pe_rotate_token)(q, k, b_first, b_stop, s, i, n, PE_RW_OF(cv), PE_RW_OF(sv), g);
        /* the next token; past INT64_MAX with the exact wrap (as the row
         * kernels' odometer) */
        for (uint j = 0; j < PE_W; ++j) {
            PE_ODO_FN(tick)(&o[j]);
            if (p == 0x7FFFFFFFFFFFFFFFUL)
                PE_ODO_FN(wrap)(&o[j]);
        }
    }
}

#undef PE_RW
#undef PE_RW_OF
