/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rows_vector.cl - the walk of the table, add and gather kernels in
 * the vector shape (PoCL on CPUs): PE_W pairs per work-item, in groups of
 * PE_GL as float16 vectors (double8 for f64), each group with its own
 * vector odometer (PE_GODO), the rows walked in steps of PE_STEP_GROUPS
 * groups with the lines of a step a few steps ahead asked for
 * (prefetch), float32 batches that share their positions in tiles, and a
 * scalar path for the pairs after the groups. Included by clpe_rows.cl
 * when PE_W > 1; defines PE_FN(pe_rows).
 */

#if PE_GROUPS
/* Store sixteen pairs i0 .. i0+15, all with their cosines. */
PE_INLINE void PE_FN(pe_store_group)(global PE_T *orow, global const PE_T *xrow, int op,
                                     PE_R scale, uint i0, PE_GV sv, PE_GV cv,
                                       bool aligned, const pe_geometry *g)
{
    if (g->stride == 2) { /* interleaved: (s0, c0, s1, c1, ...) */
        PE_GFN(pe_store_zipped)(orow, xrow, 2 * i0, sv, cv, op != PE_OP_TABLE, scale, aligned);
        return;
    }
    uint ks = g->sin_off + i0, kc = g->cos_off + i0;
    if (op != PE_OP_TABLE) {
        PE_GV xs = xrow ? PE_GFN(pe_load)(xrow, ks, aligned) : (PE_GV)(0);
        PE_GV xc = xrow ? PE_GFN(pe_load)(xrow, kc, aligned) : (PE_GV)(0);
        sv = xs * scale + sv;
        cv = xc * scale + cv;
    }
    PE_GFN(pe_store_two)(orow, ks, sv, kc, cv, aligned);
}
#endif

#if PE_GROUPS
/* The rows a row of the walk reads (x, or the embedding row of its id; NULL
 * for the table or a bad id) and writes, to ask for their lines before
 * that row's turn; none (NULL, NULL) past the launch's rows. */
typedef struct PE_FN(pe_ahead) {
    global const PE_T *in, *out;
} PE_FN(pe_ahead);

PE_INLINE PE_FN(pe_ahead) PE_FN(pe_ahead_rows)(int op, global const PE_T *out,
                                               global const PE_T *in, global const int *ids,
                                               uint b, uint s, const pe_geometry *g)
{
    PE_FN(pe_ahead) a = {0, 0};
    if (s < g->rows) {
        a.in = PE_FN(pe_input_row)(op, in, ids, 0, b, s, false, g);
        a.out = out + (b * g->out_batch_pitch + s * g->out_row_pitch);
    }
    return a;
}

/* The lines of n pairs from i0 in those rows (pe_prefetch_pairs,
 * clpe_storage.cl): the input's, and the output's unless that is the same
 * memory. An add in place asks for its lines for writing: the row is read,
 * then written back. */
PE_INLINE void PE_FN(pe_prefetch_ahead)(PE_FN(pe_ahead) a, uint i0, uint n,
                                        const pe_geometry *g)
{
#if PE_X86
    bool zipped = g->stride == 2;
    if (a.in)
        pe_prefetch_pairs(a.in, sizeof(PE_T), zipped, g->sin_off, g->cos_off, i0, n,
                          a.out == a.in);
    if (a.out && a.out != a.in)
        pe_prefetch_pairs(a.out, sizeof(PE_T), zipped, g->sin_off, g->cos_off, i0, n, true);
#endif
}

/* Row `ahead` of sequence b, when the launch has it: the lines of this
 * work-item's n pairs from i0, all at once. */
PE_INLINE void PE_FN(pe_prefetch_row)(int op, global const PE_T *out, global const PE_T *in,
                                      global const int *ids, uint b, uint ahead, uint i0,
                                      uint n, const pe_geometry *g)
{
#if PE_X86
    PE_FN(pe_prefetch_ahead)(PE_FN(pe_ahead_rows)(op, out, in, ids, b, ahead, g), i0, n, g);
#endif
}
#endif

#if PE_GROUPS
/* A row's groups from pair i0 (values sv, cv; zip_once: in storage order
 * already) stored into one sequence's row, x read from xrow (NULL: none).
 * The tests of the layout sit outside the loop over the groups, and each
 * caller passes either a row or a literal NULL, so every inlined copy has
 * a loop without tests: written inside it, clang keeps both tests, one of
 * them a load from the stack, on every group of every sequence. */
PE_INLINE void PE_FN(pe_store_groups)(global PE_T *orow, global const PE_T *xrow, int op,
                                      PE_R scale, uint i0, uint groups, const PE_GV *sv,
                                      const PE_GV *cv, bool zip_once, bool aligned,
                                      const pe_geometry *g)
{
#if PE_ZIP_ONCE
    if (zip_once) {
        for (uint k = 0; k < groups; ++k)
            PE_GFN(pe_store_ordered)(orow, xrow, 2 * (i0 + PE_GL * k), sv[k], cv[k],
                                     op != PE_OP_TABLE, scale, aligned);
        return;
    }
#endif
    if (g->stride == 2) {
        for (uint k = 0; k < groups; ++k)
            PE_GFN(pe_store_zipped)(orow, xrow, 2 * (i0 + PE_GL * k), sv[k], cv[k],
                                    op != PE_OP_TABLE, scale, aligned);
        return;
    }
    for (uint k = 0; k < groups; ++k)
        PE_FN(pe_store_group)(orow, xrow, op, scale, i0 + PE_GL * k, sv[k], cv[k], aligned, g);
}
#endif

#if PE_GROUPS
/* One step of a row (below): groups k0 .. k0+groups-1 of row s, their
 * values sv, cv, stored into every sequence this work-item serves, each
 * sequence asking for the lines of its step ahead (n_ahead pairs from
 * i_ahead of row s_ahead). */
PE_INLINE void PE_FN(pe_store_step)(int op, global PE_T *out, global const PE_T *in,
                                    global const int *ids, global uint *bad_ids, PE_R scale,
                                    uint i0, uint groups, const PE_GV *sv, const PE_GV *cv,
                                    bool zip_once, uint s, uint s_ahead, uint i_ahead,
                                    uint n_ahead, uint b_first, uint b_stop, bool reporter,
                                    bool aligned, const pe_geometry *g)
{
    PE_NO_UNROLL
    for (uint b = b_first; b < b_stop; ++b) {
        global PE_T *orow = out + (b * g->out_batch_pitch + s * g->out_row_pitch);
        global const PE_T *xrow = PE_FN(pe_input_row)(op, in, ids, bad_ids, b, s, reporter, g);
#if PE_X86
        /* an add in place on interleaved rows, the common case: its step
         * ahead is a fixed distance on in the same sequence, asked for
         * directly rather than found again through pe_ahead_rows and the
         * layout's spans (about 30 instructions per sequence and step, for
         * 8 lines in f16) */
        if (op == PE_OP_ADD && xrow == orow && g->stride == 2 && s_ahead < g->rows) {
            pe_prefetch_pairs(xrow + (s_ahead - s) * g->in_row_pitch, sizeof(PE_T), true, 0, 0,
                              i_ahead, n_ahead, true);
        } else
#endif
            PE_FN(pe_prefetch_row)(op, out, in, ids, b, s_ahead, i_ahead, n_ahead, g);
        /* called apart for a row with input and one without (the table, a
         * bad id), as pe_tile_row is */
        if (xrow)
            PE_FN(pe_store_groups)(orow, xrow, op, scale, i0, groups, sv, cv, zip_once, aligned,
                                   g);
        else
            PE_FN(pe_store_groups)(orow, 0, op, scale, i0, groups, sv, cv, zip_once, aligned, g);
    }
}
#endif

/* Row s, at position p, of every sequence this work-item serves: its pairs
 * i0 .. i_end-1 computed once and applied to each. zero_row: p is the
 * padding position (its values are zeros); wraps: p is INT64_MAX (the tick
 * to the next row, where pe_row ticks, wraps).
 *
 * The vector groups go in steps of PE_STEP_GROUPS: a step's values are
 * computed, then stored into every sequence, each asking for the lines of
 * the step PE_AHEAD_STEPS on (into the next row after a row's last step).
 * So each sequence is walked in address order, a slice at a time, with a
 * few slices asked for ahead: short slices of sequences far apart would
 * crowd a few sets of the first-level cache, and whole rows asked for
 * ahead would not fit in it. */
PE_INLINE void PE_FN(pe_row)(int op, global PE_T *out, global const PE_T *in,
                             global const int *ids, global uint *bad_ids,
                             global const ulong *tw_hi, global const PE_TWL *tw_lo,
                             PE_R scale, PE_FN(pe_phases) *ph, uint i0, uint i_end,
                             uint s, ulong p, bool zero_row, bool wraps, uint b_first,
                             uint b_stop, bool aligned, bool tick, const pe_geometry *g)
{
    bool reporter = i0 == 0; /* one work-item per row reports bad ids */
#if PE_GROUPS
    uint i = i0 + PE_GL * ph->groups;
#if PE_STEP_GROUPS == PE_GROUPS
    /* a row in one step (32- and 64-bit storage): the steps and, below,
     * the counts of a full step as constants, so the steps' arithmetic
     * folds away and the loops of asks and stores unroll */
    uint steps = ph->groups ? 1 : 0;
#else
    uint steps = (ph->groups + PE_STEP_GROUPS - 1) / PE_STEP_GROUPS;
#endif
    uint lead = pe_prefetch_steps(b_stop - b_first, PE_AHEAD_STEPS);
    PE_NO_UNROLL
    for (uint step = 0; step < steps; ++step) {
        uint k0 = step * PE_STEP_GROUPS;
        uint groups = min((uint)PE_STEP_GROUPS, ph->groups - k0);
        PE_GV sv[PE_STEP_GROUPS], cv[PE_STEP_GROUPS];
        for (uint k = 0; k < groups; ++k) {
            PE_GODO_FN(PE_SIN_COS)(&ph->group[k0 + k], &sv[k], &cv[k]);
            /* the group on to row s + 1 while its phase is at hand (tick:
             * consecutive positions and PE_TICK_IN_STEPS) */
            if (tick) {
                PE_GODO_FN(tick)(&ph->group[k0 + k]);
                if (wraps)
                    PE_GODO_FN(wrap)(&ph->group[k0 + k]);
            }
            if (zero_row) {
                sv[k] = (PE_GV)(0);
                cv[k] = (PE_GV)(0);
            }
        }
        bool zip_once = false;
#if PE_ZIP_ONCE
        /* interleaved: from here sv[k] and cv[k] hold group k0+k's values
         * in storage order, (s0, c0, s1, c1, ...), first and second half */
        zip_once = g->stride == 2;
        if (zip_once)
            for (uint k = 0; k < groups; ++k) {
                PE_GV lo = PE_GZIP(sv[k].lo, cv[k].lo), hi = PE_GZIP(sv[k].hi, cv[k].hi);
                sv[k] = lo;
                cv[k] = hi;
            }
#endif
        uint s_ahead = s + (step + lead) / steps;
        uint k_ahead = (step + lead) % steps * PE_STEP_GROUPS;
        uint n_ahead = PE_GL * min((uint)PE_STEP_GROUPS, ph->groups - k_ahead);
        uint i_step = i0 + PE_GL * k0, i_ahead = i0 + PE_GL * k_ahead;
        bool report = reporter && step == 0; /* bad ids: at the first step only */
#if PE_STEP_GROUPS == PE_GROUPS
        /* a full row (every work-item but a row's last, if that is short):
         * constant counts, see above. The 16-bit steps have no such copy:
         * it would gain nothing there and lengthen PoCL's build. */
        if (groups == PE_GROUPS)
            PE_FN(pe_store_step)(op, out, in, ids, bad_ids, scale, i_step, PE_GROUPS, sv, cv,
                                 zip_once, s, s_ahead, i0, PE_GL * PE_GROUPS, b_first, b_stop,
                                 report, aligned, g);
        else
#endif
            PE_FN(pe_store_step)(op, out, in, ids, bad_ids, scale, i_step, groups, sv, cv,
                                 zip_once, s, s_ahead, i_ahead, n_ahead, b_first, b_stop,
                                 report, aligned, g);
    }
    if (i >= i_end)
        return;
#else
    uint i = i0;
#endif
    /* the scalar path: one pair with its own odometer, or the pairs after
     * the groups, whose phases are computed directly (a do-while: the
     * one-pair shape compiles to straight code) */
    do {
        PE_R sv, cv;
        if (ph->single)
            PE_ODO_FN(PE_SIN_COS)(&ph->one, &sv, &cv);
        else
            PE_SINCOS_AT(p, tw_hi, tw_lo, i, &sv, &cv);
        if (zero_row) {
            sv = 0;
            cv = 0;
        }
        PE_NO_UNROLL
        for (uint b = b_first; b < b_stop; ++b) {
            global PE_T *orow = out + (b * g->out_batch_pitch + s * g->out_row_pitch);
            global const PE_T *xrow =
                PE_FN(pe_input_row)(op, in, ids, bad_ids, b, s, reporter && i == i0, g);
            PE_FN(pe_store_pair)(orow, xrow, op, scale, i, sv, cv, g);
        }
    } while (PE_W > 1 && ++i < i_end); /* one pair: clang kept a loop of one turn */
}

/* Pairs i0 .. i_end-1 of rows [s_begin, s_stop) of sequences [b_first,
 * b_stop): the phases set once, then the rows walked with the odometer. */
PE_INLINE void PE_FN(pe_rows_span)(int op, global PE_T *out, global const PE_T *in,
                                   global const int *ids, global uint *bad_ids,
                                   global const long *positions, global const ulong *tw_hi,
                                   global const PE_TWL *tw_lo, PE_R scale, bool aligned,
                                   uint i0, uint i_end, uint s_begin, uint s_stop,
                                   uint b_first, uint b_stop, const pe_geometry *g)
{
    PE_FN(pe_phases) ph;
    /* full groups only of pairs that all have a cosine */
    PE_FN(pe_phases_load)(&ph, tw_hi, tw_lo, i0, i_end, min(i_end, g->n_cos));

    if (g->pos_source == PE_POS_IDS) {
        /* a position per row: set the phases from each (the loops stay
         * rolled: unrolled, the 16-bit kernels ran out of GPU registers) */
        PE_NO_UNROLL
        for (uint s = s_begin; s < s_stop; ++s) {
            ulong p = pe_position(positions, b_first, s, g);
            bool zero_row =
                (g->flags & PE_FLAG_PADDING_ROW) && p == (ulong)g->padding_position;
            PE_FN(pe_phases_set)(&ph, p);
            PE_FN(pe_row)(op, out, in, ids, bad_ids, tw_hi, tw_lo, scale, &ph, i0, i_end, s, p,
                          zero_row, false, b_first, b_stop, aligned, false, g);
        }
    } else {
        /* consecutive positions: set once, then one odometer tick per row;
         * the padding row and the wrap found once, as rows (pe_row_at) */
        ulong p = pe_position(positions, b_first, s_begin, g);
        PE_FN(pe_phases_set)(&ph, p);
        uint count = s_stop - s_begin;
        uint s_zero = (g->flags & PE_FLAG_PADDING_ROW)
                          ? pe_row_at(p, (ulong)g->padding_position, s_begin, count)
                          : 0xFFFFFFFFu;
        uint s_wrap = pe_row_at(p, 0x7FFFFFFFFFFFFFFFUL, s_begin, count);
        PE_NO_UNROLL
        for (uint s = s_begin; s < s_stop; ++s, ++p) {
            PE_FN(pe_row)(op, out, in, ids, bad_ids, tw_hi, tw_lo, scale, &ph, i0, i_end, s, p,
                          s == s_zero, s == s_wrap, b_first, b_stop, aligned,
                          PE_TICK_IN_STEPS, g);
            PE_FN(pe_phases_tick)(&ph, s == s_wrap, !PE_TICK_IN_STEPS);
        }
    }
}

#if PE_GROUPS && PE_TILE_PAIRS
/* (sine, cosine) vector pairs the tile holds: 16 KiB, so it stays in the
 * first-level cache beside the rows streamed against it. */
#define PE_TILE_SLOTS 128
/* Rows of the walk asked for while a block's values are computed, so the
 * memory is busy while the arithmetic runs (more rows than this evict
 * cache-resident data). */
#define PE_TILE_FILL_ROWS 8

/* One row of the tile walk: groups from pair i0, values from the tile's
 * row (sv, cv). Interleaved rows take them zipped once at the fill, in
 * storage order, so the row is added as a table row is, with half the
 * instructions per group of zipping at every store. */
PE_INLINE void PE_FN(pe_tile_row)(global PE_T *orow, global const PE_T *xrow, int op, PE_R scale,
                                  uint i0, uint groups, const PE_GV *sv, const PE_GV *cv,
                                  PE_FN(pe_ahead) ahead, const pe_geometry *g)
{
    if (g->stride == 2) {
        PE_NO_UNROLL
        for (uint k = 0; k < groups; ++k) {
            PE_FN(pe_prefetch_ahead)(ahead, i0 + PE_GL * k, PE_GL, g);
            PE_GFN(pe_store_ordered)(orow, xrow, 2 * (i0 + PE_GL * k), sv[k], cv[k],
                                     op != PE_OP_TABLE, scale, true);
        }
        return;
    }
    PE_NO_UNROLL
    for (uint k = 0; k < groups; ++k) {
        PE_FN(pe_prefetch_ahead)(ahead, i0 + PE_GL * k, PE_GL, g);
        PE_FN(pe_store_group)(orow, xrow, op, scale, i0 + PE_GL * k, sv[k], cv[k], true, g);
    }
}

/* The tile walk, for launches whose sequences all share their positions (a
 * start) on the vector path (PE_FLAG_TILE_WALK): pairs i0 .. i_end-1 (full
 * groups, all with a cosine, aligned) of rows [s_begin, s_stop), in blocks
 * of rows whose values fill the tile. Each block's values are computed
 * once into the tile; then each sequence's rows of the block are streamed
 * against it, one contiguous span after another, as a precomputed table
 * would be added. The walk of pe_rows_span visits each row of every
 * sequence in slices of PE_W pairs, with its loop overhead per slice, which
 * dominates when the data stays in cache. CPU prefetchers do not follow the
 * walk, so it asks for every line itself: the first rows of a block while
 * the block's values are computed, then the row two steps on as each row
 * is streamed. Same values, same operations in the same order: the same
 * bits. */
PE_INLINE void PE_FN(pe_tile_walk)(int op, global PE_T *out, global const PE_T *in,
                                   global const int *ids, global uint *bad_ids,
                                   global const long *positions, global const ulong *tw_hi,
                                   global const PE_TWL *tw_lo, PE_R scale, uint i0, uint i_end,
                                   uint s_begin, uint s_stop, const pe_geometry *g)
{
    uint groups = (i_end - i0) / PE_GL;
    uint block = max(1u, PE_TILE_SLOTS / groups);
    PE_GV sv[PE_TILE_SLOTS], cv[PE_TILE_SLOTS]; /* slot r * groups + k: row r, group k */
    bool reporter = i0 == 0; /* one work-item per row reports bad ids */
    ulong p_begin = pe_position(positions, 0, s_begin, g);
    for (uint s0 = s_begin; s0 < s_stop; s0 += block) {
        uint rows = min(block, s_stop - s0);
        ulong p0 = p_begin + (s0 - s_begin);
        PE_NO_UNROLL
        for (uint k = 0; k < groups; ++k) {
            /* while the block's values are computed, the memory fetches the
             * rows the walk will stream first (steps 2 .. 9; the previous
             * block's last steps asked for 0 and 1), group k's lines at a
             * time so the requests spread over the arithmetic */
            for (uint step = 2; step < 2 + PE_TILE_FILL_ROWS && step < g->batch * rows; ++step)
                PE_FN(pe_prefetch_row)(op, out, in, ids, step / rows, s0 + step % rows,
                                       i0 + PE_GL * k, PE_GL, g);
            PE_GODO o;
            PE_GODO_FN(load)(&o, tw_hi, tw_lo, i0 + PE_GL * k);
            PE_GODO_FN(set)(&o, p0);
            ulong p = p0;
            PE_NO_UNROLL
            for (uint r = 0; r < rows; ++r, ++p) {
                uint slot = r * groups + k;
                PE_GODO_FN(PE_SIN_COS)(&o, &sv[slot], &cv[slot]);
                if ((g->flags & PE_FLAG_PADDING_ROW) && p == (ulong)g->padding_position) {
                    sv[slot] = (PE_GV)(0);
                    cv[slot] = (PE_GV)(0);
                }
                if (g->stride == 2) { /* interleaved: the tile in storage order */
                    PE_GV lo = PE_GZIP(sv[slot].lo, cv[slot].lo);
                    PE_GV hi = PE_GZIP(sv[slot].hi, cv[slot].hi);
                    sv[slot] = lo;
                    cv[slot] = hi;
                }
                /* past INT64_MAX: as pe_phases_tick */
                PE_GODO_FN(tick)(&o);
                if (p == 0x7FFFFFFFFFFFFFFFUL)
                    PE_GODO_FN(wrap)(&o);
            }
        }
        PE_NO_UNROLL
        for (uint b = 0; b < g->batch; ++b)
            PE_NO_UNROLL
            for (uint r = 0; r < rows; ++r) {
                uint s = s0 + r;
                global PE_T *orow = out + (b * g->out_batch_pitch + s * g->out_row_pitch);
                global const PE_T *xrow =
                    PE_FN(pe_input_row)(op, in, ids, bad_ids, b, s, reporter, g);
                /* the row two steps on in this walk, into the next block
                 * (its first sequence) at the end of this one, asked for a
                 * group at a time as this row is streamed: a gather's
                 * embedding rows are scattered, and each sequence's block
                 * of rows starts a fresh stream. Spread over the groups
                 * rather than all at once before the row, the requests
                 * overlap the stores. */
                uint ahead = b * rows + r + 2, steps = g->batch * rows;
                bool in_block = ahead < steps;
                uint s_ahead = in_block ? s0 + ahead % rows : s0 + rows + (ahead - steps);
                PE_FN(pe_ahead) next = {0, 0};
                if (s_ahead < s_stop)
                    next = PE_FN(pe_ahead_rows)(op, out, in, ids, in_block ? ahead / rows : 0,
                                                s_ahead, g);
                /* called apart for a row with input and one without (the
                 * table, a bad id): each copy has no test per group */
                if (xrow)
                    PE_FN(pe_tile_row)(orow, xrow, op, scale, i0, groups, sv + r * groups,
                                       cv + r * groups, next, g);
                else
                    PE_FN(pe_tile_row)(orow, 0, op, scale, i0, groups, sv + r * groups,
                                       cv + r * groups, next, g);
            }
    }
}
#undef PE_TILE_SLOTS
#undef PE_TILE_FILL_ROWS
#endif

PE_INLINE void PE_FN(pe_rows_walk)(int op, global PE_T *out, global const PE_T *in,
                                   global const int *ids, global uint *bad_ids,
                                   global const long *positions, global const ulong *tw_hi,
                                   global const PE_TWL *tw_lo, PE_R scale, bool aligned,
                                   const pe_geometry *g)
{
#if PE_GROUPS && PE_TILE_PAIRS
    bool tiles = (g->flags & PE_FLAG_TILE_WALK) != 0;
    uint span = tiles ? PE_TILE_PAIRS : PE_W;
#else
    uint span = PE_W;
#endif
    uint i0 = (uint)get_global_id(0) * span;
    uint s_begin = (uint)get_global_id(1) * g->rows_per_item;
    if (s_begin >= g->rows)
        return;
    uint s_stop = s_begin + min(g->rows_per_item, g->rows - s_begin);
    /* positions from a start are the same in every sequence: compute each
     * value once and apply it to all of them */
    bool same_positions = g->pos_source == PE_POS_START;
    uint b_first = same_positions ? 0 : (uint)get_global_id(2);
    uint b_stop = same_positions ? g->batch : b_first + 1;
    if (i0 >= g->n_pairs) {
        /* the first work-item past the pairs writes the odd-d zero column */
        if ((g->flags & PE_FLAG_ODD_D_ZERO_COLUMN) && (g->d & 1u) && i0 - span < g->n_pairs)
            PE_FN(pe_zero_column)(op, out, in, ids, s_begin, s_stop, b_first, b_stop, scale, g);
        return;
    }
#if PE_GROUPS && PE_TILE_PAIRS
    /* the tile walk; where it cannot serve (a tail of pairs, pairs without
     * a cosine, vectors not aligned), the span walk PE_W pairs at a time,
     * from one call site (a second would compile the walk twice) */
    uint i_end = min(i0 + span, g->n_pairs);
    if (tiles && same_positions && aligned && (i_end - i0) % PE_GL == 0 && i_end <= g->n_cos) {
        PE_FN(pe_tile_walk)(op, out, in, ids, bad_ids, positions, tw_hi, tw_lo, scale, i0, i_end,
                            s_begin, s_stop, g);
        return;
    }
    PE_NO_UNROLL
    for (uint c = i0; c < i_end; c += PE_W)
        PE_FN(pe_rows_span)(op, out, in, ids, bad_ids, positions, tw_hi, tw_lo, scale, aligned,
                            c, min(c + PE_W, i_end), s_begin, s_stop, b_first, b_stop, g);
#else
    uint i_end = PE_W == 1 ? i0 + 1 : min(i0 + PE_W, g->n_pairs);
    PE_FN(pe_rows_span)(op, out, in, ids, bad_ids, positions, tw_hi, tw_lo, scale, aligned, i0,
                        i_end, s_begin, s_stop, b_first, b_stop, g);
#endif
}

#if PE_GROUPS
/* Whether every vector the vector path moves is aligned to its size: every
 * row starts on a 64-byte boundary (the buffer does and every pitch is a
 * multiple of 64 bytes) and every offset in a row is a multiple of PE_GL
 * elements (the group offsets are: PE_W is a multiple of 16). A 16-bit
 * 16-vector is 32 bytes; 32 interleaved 16-bit elements, a float16 or a
 * double8, 64. */
PE_INLINE bool PE_FN(pe_rows_aligned)(int op, global const PE_T *out, global const PE_T *in,
                                      const pe_geometry *g)
{
    const uint pitch_unit = 64 / sizeof(PE_T);
    bool ok = (ulong)out % 64 == 0 &&
              (g->out_row_pitch | g->out_batch_pitch) % pitch_unit == 0 &&
              (g->stride == 2 || (g->sin_off | g->cos_off) % PE_GL == 0);
    if (op != PE_OP_TABLE)
        ok = ok && (ulong)in % 64 == 0 && g->in_row_pitch % pitch_unit == 0;
    if (op == PE_OP_ADD)
        ok = ok && g->in_batch_pitch % pitch_unit == 0;
    return ok;
}
#endif

/* The walk, compiled once for aligned vectors and once for any (the
 * vector path only; elsewhere `aligned` is unused). */
PE_INLINE void PE_FN(pe_rows)(int op, global PE_T *out, global const PE_T *in,
                              global const int *ids, global uint *bad_ids,
                              global const long *positions, global const ulong *tw_hi,
                              global const PE_TWL *tw_lo, PE_R scale,
                              const pe_geometry *g)
{
#if PE_GROUPS
    if (PE_FN(pe_rows_aligned)(op, out, in, g)) {
        /* scale 1, the default, compiled apart: x * 1 folds to x, the same
         * value (a NaN stays a NaN, any payload), and the fast path loses a
         * multiply per element */
        if (scale == (PE_R)1)
            PE_FN(pe_rows_walk)(op, out, in, ids, bad_ids, positions, tw_hi, tw_lo, (PE_R)1,
                                true, g);
        else
            PE_FN(pe_rows_walk)(op, out, in, ids, bad_ids, positions, tw_hi, tw_lo, scale,
                                true, g);
        return;
    }
#endif
    PE_FN(pe_rows_walk)(op, out, in, ids, bad_ids, positions, tw_hi, tw_lo, scale, false, g);
}
