/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rows_pair.cl - the table, add and gather walk with one pair per
 * work-item: the portable body, what GPUs (and llvmpipe and Oclgrind, which
 * run work-items in SIMD lanes themselves) run. Included by clpe_rows.cl
 * when PE_W is 1; defines PE_FN(pe_rows).
 *
 * Work-item (i, row block, sequence) computes pair i of the rows
 * [s_begin, s_stop) of its block, for its sequence or, when positions come
 * from a start, for every sequence of the launch (the values are the same
 * in each). The pair's phase is set once from a position (a multiply) and
 * then advanced by its odometer, one wide add per row; with positions
 * read per row (ids) it is set from each row's position instead.
 */

/* Row s of the sequences [b_first, b_stop), pair i at the odometer's phase:
 * its sine and cosine (zeros on the padding row), stored into each
 * sequence's row, x read first for add and gather. */
PE_INLINE void PE_FN(pe_pair_row)(int op, global PE_T *out, global const PE_T *in,
                                  global const int *ids, global uint *bad_ids, PE_R scale,
                                  const PE_ODO *o, uint i, uint s, bool zero_row, uint b_first,
                                  uint b_stop, const pe_geometry *g)
{
    PE_R sv, cv;
    PE_ODO_FN(PE_SIN_COS)(o, &sv, &cv);
    if (zero_row) {
        sv = 0;
        cv = 0;
    }
    bool reporter = i == 0; /* one work-item per row reports bad ids */
    PE_NO_UNROLL
    for (uint b = b_first; b < b_stop; ++b) {
        global PE_T *orow = out + (b * g->out_batch_pitch + s * g->out_row_pitch);
        global const PE_T *xrow = PE_FN(pe_input_row)(op, in, ids, bad_ids, b, s, reporter, g);
        PE_FN(pe_store_pair)(orow, xrow, op, scale, i, sv, cv, g);
    }
}

PE_INLINE void PE_FN(pe_rows)(int op, global PE_T *out, global const PE_T *in,
                              global const int *ids, global uint *bad_ids,
                              global const long *positions, global const ulong *tw_hi,
                              global const PE_TWL *tw_lo, PE_R scale, const pe_geometry *g)
{
    uint i = (uint)get_global_id(0);
    uint s_begin = (uint)get_global_id(1) * g->rows_per_item;
    if (s_begin >= g->rows)
        return;
    uint s_stop = s_begin + min(g->rows_per_item, g->rows - s_begin);
    /* positions from a start are the same in every sequence: compute each
     * value once and apply it to all of them */
    bool same_positions = g->pos_source == PE_POS_START;
    uint b_first = same_positions ? 0 : (uint)get_global_id(2);
    uint b_stop = same_positions ? g->batch : b_first + 1;
    if (i >= g->n_pairs) {
        /* the first work-item past the pairs writes the odd-d zero column */
        if ((g->flags & PE_FLAG_ODD_D_ZERO_COLUMN) && (g->d & 1u) && i == g->n_pairs)
            PE_FN(pe_zero_column)(op, out, in, ids, s_begin, s_stop, b_first, b_stop, scale, g);
        return;
    }
    PE_ODO o;
    PE_ODO_FN(load)(&o, tw_hi, tw_lo, i);

    if (g->pos_source == PE_POS_IDS) {
        /* a position per row: the phase set from each (the loop stays
         * rolled, as unrolled it costs registers) */
        PE_NO_UNROLL
        for (uint s = s_begin; s < s_stop; ++s) {
            ulong p = pe_position(positions, b_first, s, g);
            bool zero_row =
                (g->flags & PE_FLAG_PADDING_ROW) && p == (ulong)g->padding_position;
            PE_ODO_FN(set)(&o, p);
            PE_FN(pe_pair_row)(op, out, in, ids, bad_ids, scale, &o, i, s, zero_row, b_first,
                               b_stop, g);
        }
        return;
    }
    /* consecutive positions: set once, then one odometer tick per row; the
     * padding row and the wrap past INT64_MAX found once, as rows
     * (pe_row_at). Past INT64_MAX the position wraps to INT64_MIN, where the
     * sign-extended product jumps by -2^64 F: the tick then takes the tuning
     * word's low word off the top (bit-identical to a fresh set there). */
    ulong p = pe_position(positions, b_first, s_begin, g);
    PE_ODO_FN(set)(&o, p);
    uint count = s_stop - s_begin;
    uint s_zero = (g->flags & PE_FLAG_PADDING_ROW)
                      ? pe_row_at(p, (ulong)g->padding_position, s_begin, count)
                      : 0xFFFFFFFFu;
    uint s_wrap = pe_row_at(p, 0x7FFFFFFFFFFFFFFFUL, s_begin, count);
    PE_NO_UNROLL
    for (uint s = s_begin; s < s_stop; ++s) {
        PE_FN(pe_pair_row)(op, out, in, ids, bad_ids, scale, &o, i, s, s == s_zero, b_first,
                           b_stop, g);
        PE_ODO_FN(tick)(&o);
        if (s == s_wrap)
            PE_ODO_FN(wrap)(&o);
    }
}
