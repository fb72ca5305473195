/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope_pair.cl - the rotary walk of the portable shape, what GPUs (and
 * llvmpipe and Oclgrind) run: one pair per work-item for 32- and 64-bit
 * storage, two adjacent pairs for 16-bit storage (PE_W 1 or 2), so that a
 * 16-bit work-item moves 32-bit words as a float32 one does. Included by
 * clpe_rope.cl; defines PE_FN(pe_rope_rows).
 *
 * Work-item (i, token block, sequence) rotates pairs i .. i + PE_W - 1 of
 * every head of q and k for the tokens [s_begin, s_stop) of its block, for
 * its sequence or, when positions come from a start, for every sequence of
 * the launch. The angles' cosines and sines are computed once per token
 * and applied to every head. Each pair's phase is set from the block's
 * first position (and from every token's with ids), else advanced by its
 * odometer, one wide add per token.
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
            PE_FN(pe_store_word)(pa, (PE_R2)(fma(u.x, c.x, -(u.y * s.x)), fma(u.x, s.x, u.y * c.x)));
            PE_FN(pe_store_word)(pa + 2,
                                 (PE_R2)(fma(v.x, c.y, -(v.y * s.y)), fma(v.x, s.y, v.y * c.y)));
        }
    } else {
        uint partner = g->partner;
        for (uint h = 0; h < heads; ++h, pa += head_pitch) {
            PE_R2 a = PE_FN(pe_load_word)(pa), b = PE_FN(pe_load_word)(pa + partner);
            PE_FN(pe_store_word)(pa, fma(a, c, -(b * s)));
            PE_FN(pe_store_word)(pa + partner, fma(a, s, b * c));
        }
    }
}
#endif

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
        for (uint b = b_first; b < b_stop; ++b) {
            global PE_T *qt = q + (b * g->q_batch_pitch + s * g->q_row_pitch);
            global PE_T *kt = k ? k + (b * g->k_batch_pitch + s * g->k_row_pitch) : 0;
#if PE_W == 2
            if (n == 2) {
                PE_R2 c2 = (PE_R2)(cv[0], cv[1]), s2 = (PE_R2)(sv[0], sv[1]);
                PE_FN(pe_rotate_two_heads)(qt, g->q_heads, g->q_head_pitch, i, c2, s2, g);
                if (kt)
                    PE_FN(pe_rotate_two_heads)(kt, g->k_heads, g->k_head_pitch, i, c2, s2, g);
            } else {
                PE_FN(pe_rotate_heads_apart)(qt, g->q_heads, g->q_head_pitch, i, cv[0], sv[0], g);
                if (kt)
                    PE_FN(pe_rotate_heads_apart)(kt, g->k_heads, g->k_head_pitch, i, cv[0], sv[0],
                                                 g);
            }
#else
            PE_FN(pe_rotate_heads)(qt, g->q_heads, g->q_head_pitch, i, cv[0], sv[0], g);
            if (kt)
                PE_FN(pe_rotate_heads)(kt, g->k_heads, g->k_head_pitch, i, cv[0], sv[0], g);
#endif
        }
        /* the next token; past INT64_MAX with the exact wrap (as the row
         * kernels' odometer) */
        for (uint j = 0; j < PE_W; ++j) {
            PE_ODO_FN(tick)(&o[j]);
            if (p == 0x7FFFFFFFFFFFFFFFUL)
                PE_ODO_FN(wrap)(&o[j]);
        }
    }
}
