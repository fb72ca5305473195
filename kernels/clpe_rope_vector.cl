/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope_vector.cl - the rotary walk in the vector shape (PoCL on CPUs):
 * PE_W pairs per work-item, in groups of PE_GL as float16 vectors (double8
 * for f64) with their own vector odometers, the rows ahead asked for
 * (prefetch), a scalar path for the pairs after the groups. Included by
 * clpe_rope.cl when PE_W > 1; defines PE_FN(pe_rope_rows), which reads a
 * position per stream too (PE_FN(pe_rope_rows_streams) is the same walk).
 */

#if PE_GROUPS
#define PE_ROTATE_ZIPPED PE_CAT(pe_rotate_zipped_, PE_GV)
/* Rotate pairs i0 .. i0+PE_GL-1 of every head of one token of one tensor. */
static inline void PE_FN(pe_rotate_heads_group)(global PE_T *token, uint heads,
                                                uint head_pitch, uint i0, PE_GV c, PE_GV s,
                                                bool aligned, const pe_rope_geometry *g)
{
    for (uint h = 0; h < heads; ++h) {
        global PE_T *head = token + h * head_pitch;
        if (g->stride == 2) {
            PE_GV lo = PE_GFN(pe_load)(head, 2 * i0, aligned);
            PE_GV hi = PE_GFN(pe_load)(head, 2 * i0 + PE_GL, aligned);
            PE_GFN(pe_store_two)(head, 2 * i0, PE_ROTATE_ZIPPED(lo, c.lo, s.lo), 2 * i0 + PE_GL,
                                 PE_ROTATE_ZIPPED(hi, c.hi, s.hi), aligned);
        } else {
            PE_GV a = PE_GFN(pe_load)(head, i0, aligned);
            PE_GV b = PE_GFN(pe_load)(head, i0 + g->partner, aligned);
            PE_GFN(pe_store_two)(head, i0, PE_CAT(pe_rotate_a_, PE_GV)(a, b, c, s),
                                 i0 + g->partner, PE_CAT(pe_rotate_b_, PE_GV)(a, b, c, s),
                                 aligned);
        }
    }
}
#undef PE_ROTATE_ZIPPED

/* The lines of the n pairs from i0 in every head of one token of one
 * tensor, asked for as that token's turn nears (pe_prefetch_pairs). */
static inline void PE_FN(pe_prefetch_heads)(global const PE_T *token, uint heads,
                                            uint head_pitch, uint i0, uint n,
                                            const pe_rope_geometry *g)
{
#if PE_X86
    for (uint h = 0; h < heads; ++h)
        pe_prefetch_pairs(token + h * head_pitch, sizeof(PE_T), g->stride == 2, 0, g->partner, i0,
                          n, true);
#endif
}
#endif

PE_INLINE void PE_FN(pe_rope_walk)(global PE_T *q, global PE_T *k,
                                   global const long *positions, global const ulong *tw_hi,
                                   global const PE_TWL *tw_lo, PE_R amplitude, bool aligned,
                                   const pe_rope_geometry *g)
{
    PE_ROPE_ITEM(g, PE_W);
    uint i_end = min(i0 + PE_W, g->n_pairs);
    PE_R sign = g->inverse ? (PE_R)-1 : (PE_R)1;

    /* the phases as the row kernels keep them (clpe_rows.cl) */
    PE_FN(pe_phases) ph;
    PE_FN(pe_phases_load)(&ph, tw_hi, tw_lo, i0, i_end, i_end);

    /* With a position per stream, each pair's phase comes from its own
     * stream's position on the scalar path: the sections need not fall on
     * group boundaries. */
    bool streams = pe_rope_streams(g->pos_source);
    uint groups = streams ? 0 : ph.groups;
    bool single = ph.single && !streams;

    for (uint s = s_begin; s < s_stop; ++s) {
        /* the phases are set from the first row's position and from every
         * row's with ids, else ticked (past INT64_MAX with the exact wrap) */
        ulong p = pe_rope_position(positions, b_first, s, g);
        if (!streams && (s == s_begin || g->pos_source == PE_POS_IDS))
            PE_FN(pe_phases_set)(&ph, p);
#if PE_GROUPS
        PE_GV svg[PE_GROUPS], cvg[PE_GROUPS];
        for (uint n = 0; n < groups; ++n) {
            PE_GODO_FN(sin_cos)(&ph.group[n], &svg[n], &cvg[n]);
            cvg[n] = cvg[n] * amplitude;
            svg[n] = (svg[n] * amplitude) * sign;
        }
        /* two rows at batch 4 and more, for every storage type (the row
         * kernels' PE_AHEAD_STEPS count steps of a slice of a row for the
         * 16-bit types; rotary takes its rows whole) */
        uint ahead = s + pe_prefetch_steps(b_stop - b_first, 2);
        for (uint b = b_first; b < b_stop && groups; ++b) {
            global PE_T *qrow = q + (b * g->q_batch_pitch + s * g->q_row_pitch);
            global PE_T *krow = k ? k + (b * g->k_batch_pitch + s * g->k_row_pitch) : 0;
            if (ahead < g->rows) {
                PE_FN(pe_prefetch_heads)(q + (b * g->q_batch_pitch + ahead * g->q_row_pitch),
                                         g->q_heads, g->q_head_pitch, i0, PE_GL * groups, g);
                if (k)
                    PE_FN(pe_prefetch_heads)(k + (b * g->k_batch_pitch + ahead * g->k_row_pitch),
                                             g->k_heads, g->k_head_pitch, i0, PE_GL * groups, g);
            }
            for (uint n = 0; n < groups; ++n) {
                PE_FN(pe_rotate_heads_group)(qrow, g->q_heads, g->q_head_pitch, i0 + PE_GL * n,
                                             cvg[n], svg[n], aligned, g);
                if (krow)
                    PE_FN(pe_rotate_heads_group)(krow, g->k_heads, g->k_head_pitch,
                                                 i0 + PE_GL * n, cvg[n], svg[n], aligned, g);
            }
        }
#endif
        /* the scalar path: one pair with its own odometer, or the pairs
         * after the groups, computed from p */
        for (uint i = i0 + PE_GL * groups; i < i_end; ++i) {
            PE_R sv, cv;
            if (single)
                PE_ODO_FN(sin_cos)(&ph.one, &sv, &cv);
            else if (streams)
                PE_SINCOS_AT(pe_stream_position(positions, (ulong)b_first * g->seq + s,
                                                pe_rope_stream(i, g->end0, g->end1, g->end2),
                                                g->token_pitch, g->stream_pitch),
                             tw_hi, tw_lo, i, &sv, &cv);
            else
                PE_SINCOS_AT(p, tw_hi, tw_lo, i, &sv, &cv);
            cv = cv * amplitude;
            sv = (sv * amplitude) * sign;
            for (uint b = b_first; b < b_stop; ++b) {
                PE_FN(pe_rotate_heads)(q + (b * g->q_batch_pitch + s * g->q_row_pitch),
                                       g->q_heads, g->q_head_pitch, i, cv, sv, g);
                if (k)
                    PE_FN(pe_rotate_heads)(k + (b * g->k_batch_pitch + s * g->k_row_pitch),
                                           g->k_heads, g->k_head_pitch, i, cv, sv, g);
            }
        }
        PE_FN(pe_phases_tick)(&ph, p == 0x7FFFFFFFFFFFFFFFUL, true);
    }
}

#if PE_GROUPS
/* Whether every vector the vector path moves is aligned to its size: the
 * tensors start on such a boundary and every pitch and offset is a
 * multiple of PE_GL elements (as pe_rows_aligned in clpe_rows.cl). */
PE_INLINE bool PE_FN(pe_rope_aligned)(global const PE_T *q, global const PE_T *k,
                                      const pe_rope_geometry *g)
{
    const ulong bytes = PE_GL * sizeof(PE_T);
    bool ok = (ulong)q % bytes == 0 &&
              (g->q_head_pitch | g->q_row_pitch | g->q_batch_pitch) % PE_GL == 0 &&
              (g->stride == 2 || g->partner % PE_GL == 0);
    if (k)
        ok = ok && (ulong)k % bytes == 0 &&
             (g->k_head_pitch | g->k_row_pitch | g->k_batch_pitch) % PE_GL == 0;
    return ok;
}
#endif

/* The walk, compiled once for aligned vectors and once for any (the
 * vector path only). */
PE_INLINE void PE_FN(pe_rope_rows)(global PE_T *q, global PE_T *k,
                                   global const long *positions, global const ulong *tw_hi,
                                   global const PE_TWL *tw_lo, PE_R amplitude,
                                   const pe_rope_geometry *g)
{
#if PE_GROUPS
    if (PE_FN(pe_rope_aligned)(q, k, g)) {
        PE_FN(pe_rope_walk)(q, k, positions, tw_hi, tw_lo, amplitude, true, g);
        return;
    }
#endif
    PE_FN(pe_rope_walk)(q, k, positions, tw_hi, tw_lo, amplitude, false, g);
}
