/*
 * clpe_rope_pair.cl - the rotary walk with one pair per work-item: the
 * portable body, what GPUs (and llvmpipe and Oclgrind) run. Included by
 * clpe_rope.cl when PE_W is 1; defines PE_FN(pe_rope_rows).
 *
 * Work-item (i, token block, sequence) rotates pair i of every head of q
 * and k for the tokens [s_begin, s_stop) of its block, for its sequence or,
 * when positions come from a start, for every sequence of the launch. The
 * angle's cosine and sine are computed once per token and applied to every
 * head. The phase is set from the block's first position (and from every
 * token's with ids), else advanced by the odometer, one wide add per token.
 */

PE_INLINE void PE_FN(pe_rope_rows)(global PE_T *q, global PE_T *k,
                                   global const long *positions, global const ulong *tw_hi,
                                   global const PE_TWL *tw_lo, PE_R amplitude,
                                   const pe_rope_geometry *g)
{
    uint i = (uint)get_global_id(0);
    uint s_begin = (uint)get_global_id(1) * g->rows_per_item;
    if (i >= g->n_pairs || s_begin >= g->rows)
        return;
    uint s_stop = s_begin + min(g->rows_per_item, g->rows - s_begin);
    /* positions from a start are the same in every sequence */
    bool same_positions = g->pos_source == PE_POS_START;
    uint b_first = same_positions ? 0 : (uint)get_global_id(2);
    uint b_stop = same_positions ? g->batch : b_first + 1;
    PE_R sign = g->inverse ? (PE_R)-1 : (PE_R)1;

    PE_ODO o;
    PE_ODO_FN(load)(&o, tw_hi, tw_lo, i);
    for (uint s = s_begin; s < s_stop; ++s) {
        ulong p = pe_rope_position(positions, b_first, s, g);
        if (s == s_begin || g->pos_source == PE_POS_IDS)
            PE_ODO_FN(set)(&o, p);
        PE_R sv, cv;
        PE_ODO_FN(sin_cos)(&o, &sv, &cv);
        cv = cv * amplitude;
        sv = (sv * amplitude) * sign;
        for (uint b = b_first; b < b_stop; ++b) {
            PE_FN(pe_rotate_heads)(q + (b * g->q_batch_pitch + s * g->q_row_pitch), g->q_heads,
                                   g->q_head_pitch, i, cv, sv, g);
            if (k)
                PE_FN(pe_rotate_heads)(k + (b * g->k_batch_pitch + s * g->k_row_pitch),
                                       g->k_heads, g->k_head_pitch, i, cv, sv, g);
        }
        /* the next token; past INT64_MAX with the exact wrap (as the row
         * kernels' odometer) */
        PE_ODO_FN(tick)(&o);
        if (p == 0x7FFFFFFFFFFFFFFFUL)
            PE_ODO_FN(wrap)(&o);
    }
}
