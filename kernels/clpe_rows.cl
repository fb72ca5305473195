/*
 * clpe_rows.cl - the table, add and gather kernels for one storage type.
 *
 * clpe_kernels.cl includes this file once per storage type, with
 *   PE_NAME    f32, f16, bf16 or f64: the suffix of every name defined here
 *   PE_T       the storage type (float, half, ushort, double)
 *   PE_R       the arithmetic type (float, or double for f64)
 *   PE_WIDE    1 for the 128-bit tuning words of f64, 0 for 96-bit words
 *   PE_VECTOR  1 when the float16 path serves this type
 * (the CLBlast pattern: one body, compiled per precision, so a compiler
 * message names a line of this file).
 *
 * Launch shape:
 *   dimension 0: a group of PE_W (1 or 16) consecutive pairs i0 .. i0+PE_W-1
 *                (padded up to the work-group size; extra work-items return);
 *   dimension 1: a block of rows_per_item consecutive rows of the launch;
 *   dimension 2: the sequence, unless positions come from a start (shared
 *                by every sequence): then one work-item serves every
 *                sequence of the launch and computes each encoding value
 *                once per (row, pair), not once per sequence.
 * Between rows a work-item advances the phase with one wide add (the
 * odometer) instead of multiplying again: cheaper, and bit-identical because
 * the integer arithmetic is exact.
 *
 * Arithmetic contract (the host emulation, host/emulate.c, does the same):
 * PE is computed in PE_R and rounded once to storage; add and gather compute
 * in * scale, rounded, then + PE, rounded: exactly the separate multiply and
 * add an unfused pipeline performs.
 */

#define PE_FN(base) PE_CAT(base, PE_CAT(_, PE_NAME))
#define PE_R2 PE_CAT(PE_R, 2)
#if PE_WIDE
#define PE_TWL ulong
#define PE_ODO pe_odo128
#define PE_SINCOS_AT pe_sincos_at128
#else
#define PE_TWL uint
#define PE_ODO pe_odo96
#define PE_SINCOS_AT pe_sincos_at
#endif
#define PE_ODO_FN(name) PE_CAT(PE_ODO, PE_CAT(_, name))

/* Store one pair (sine at slot ks, cosine at kc, when the pair has one);
 * ops other than the table add in * scale first (in NULL counts as 0). */
static inline void PE_FN(pe_store_pair)(global PE_T *orow, global const PE_T *xrow, int op,
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

#if PE_VECTOR
/* Store sixteen pairs i0 .. i0+15, all with their cosines. */
static inline void PE_FN(pe_store_pairs16)(global PE_T *orow, global const PE_T *xrow, int op,
                                           float scale, uint i0, float16 sv, float16 cv,
                                           const pe_geometry *g)
{
    if (g->stride == 2) { /* interleaved: (s0, c0, s1, c1, ...) as two 16-vectors */
        float16 lo = pe_zip8(sv.lo, cv.lo), hi = pe_zip8(sv.hi, cv.hi);
        if (op != PE_OP_TABLE) {
            float16 xlo = xrow ? PE_FN(pe_load16)(xrow, 2 * i0) : (float16)(0.0f);
            float16 xhi = xrow ? PE_FN(pe_load16)(xrow, 2 * i0 + 16) : (float16)(0.0f);
            lo = xlo * scale + lo;
            hi = xhi * scale + hi;
        }
        PE_FN(pe_store16)(orow, 2 * i0, lo);
        PE_FN(pe_store16)(orow, 2 * i0 + 16, hi);
        return;
    }
    uint ks = g->sin_off + i0, kc = g->cos_off + i0;
    if (op != PE_OP_TABLE) {
        float16 xs = xrow ? PE_FN(pe_load16)(xrow, ks) : (float16)(0.0f);
        float16 xc = xrow ? PE_FN(pe_load16)(xrow, kc) : (float16)(0.0f);
        sv = xs * scale + sv;
        cv = xc * scale + cv;
    }
    PE_FN(pe_store16)(orow, ks, sv);
    PE_FN(pe_store16)(orow, kc, cv);
}
#endif

/* The row this (sequence, row) reads, or NULL: x itself for add; for
 * gather the embedding row of its id, or NULL (and a report) for a bad id. */
static inline global const PE_T *PE_FN(pe_input_row)(int op, global const PE_T *in,
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

/* The odd-d zero column: in * scale + 0 (0 for the table). */
static inline void PE_FN(pe_store_zero_column)(global PE_T *orow, global const PE_T *xrow,
                                               int op, PE_R scale, const pe_geometry *g)
{
    PE_R xz = (op != PE_OP_TABLE && xrow) ? PE_FN(pe_load)(xrow, g->d - 1) : (PE_R)0;
    PE_FN(pe_store)(orow, g->d - 1, xz * scale + (PE_R)0);
}

static inline void PE_FN(pe_rows)(int op, global PE_T *out, global const PE_T *in,
                                  global const int *ids, global uint *bad_ids,
                                  global const long *positions, global const ulong *tw_hi,
                                  global const PE_TWL *tw_lo, PE_R scale,
                                  const pe_geometry *g)
{
    uint i0 = (uint)get_global_id(0) * PE_W;
    uint s_begin = (uint)get_global_id(1) * g->rows_per_item;
    if (i0 >= g->n_pairs || s_begin >= g->rows)
        return;
    uint s_stop = s_begin + min(g->rows_per_item, g->rows - s_begin);
    /* positions from a start are the same in every sequence: compute each
     * value once and apply it to all of them */
    bool same_positions = g->pos_source == PE_POS_START;
    uint b_first = same_positions ? 0 : (uint)get_global_id(2);
    uint b_stop = same_positions ? g->batch : b_first + 1;
    uint i_end = min(i0 + PE_W, g->n_pairs);
    bool reporter = i0 == 0; /* one work-item per row reports bad ids */
    /* the odd-d zero column is written by the group holding the last pair */
    bool zero_col = (g->flags & PE_FLAG_ODD_D_ZERO_COLUMN) && (g->d & 1u) && i_end == g->n_pairs;
#if PE_VECTOR && PE_W == 16
    bool vector = i_end - i0 == 16 && i_end <= g->n_cos; /* a full group of sixteen */
#else
    bool vector = false;
#endif
    bool single = PE_W == 1 || i_end - i0 == 1; /* always, in the one-pair shape */

    /* the odometer of one pair (single) or of sixteen (vector) */
    PE_ODO odo;
    if (single)
        PE_ODO_FN(load)(&odo, tw_hi, tw_lo, i0);
#if PE_VECTOR
    pe_odo16 odo16;
    if (vector)
        pe_odo16_load(&odo16, tw_hi, tw_lo, i0);
#endif

    ulong p = 0;
    bool fresh = true; /* set the phase from p (else: odometer tick) */
    for (uint s = s_begin; s < s_stop; ++s) {
        if (fresh || g->pos_source == PE_POS_IDS) {
            p = pe_position(positions, b_first, s, g);
            fresh = true;
        }
        bool zero_row = (g->flags & PE_FLAG_PADDING_ROW) && p == (ulong)g->padding_position;
#if PE_VECTOR
        if (vector) {
            if (fresh)
                pe_odo16_set(&odo16, p);
            float16 sv, cv;
            pe_odo16_sin_cos(&odo16, &sv, &cv);
            if (zero_row) {
                sv = (float16)(0.0f);
                cv = (float16)(0.0f);
            }
            for (uint b = b_first; b < b_stop; ++b) {
                global PE_T *orow = out + (b * g->out_batch_pitch + s * g->out_row_pitch);
                global const PE_T *xrow =
                    PE_FN(pe_input_row)(op, in, ids, bad_ids, b, s, reporter, g);
                PE_FN(pe_store_pairs16)(orow, xrow, op, scale, i0, sv, cv, g);
                if (zero_col)
                    PE_FN(pe_store_zero_column)(orow, xrow, op, scale, g);
            }
            pe_odo16_tick(&odo16);
        } else
#endif
        {
            /* the scalar path: one pair with its own odometer, or a partial
             * group whose phases are computed directly */
            if (single && fresh)
                PE_ODO_FN(set)(&odo, p);
            for (uint i = i0; i < i_end; ++i) {
                PE_R sv, cv;
                if (single)
                    PE_ODO_FN(sin_cos)(&odo, &sv, &cv);
                else
                    PE_SINCOS_AT(p, tw_hi, tw_lo, i, &sv, &cv);
                if (zero_row) {
                    sv = 0;
                    cv = 0;
                }
                for (uint b = b_first; b < b_stop; ++b) {
                    global PE_T *orow = out + (b * g->out_batch_pitch + s * g->out_row_pitch);
                    global const PE_T *xrow =
                        PE_FN(pe_input_row)(op, in, ids, bad_ids, b, s, reporter && i == i0, g);
                    PE_FN(pe_store_pair)(orow, xrow, op, scale, i, sv, cv, g);
                    if (zero_col && i + 1 == i_end)
                        PE_FN(pe_store_zero_column)(orow, xrow, op, scale, g);
                }
            }
            if (single)
                PE_ODO_FN(tick)(&odo);
        }
        ++p;
        /* Past INT64_MAX the position wraps to INT64_MIN, where the
         * sign-extended product jumps: set the odometer again. */
        fresh = p == 0x8000000000000000UL;
    }
}

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
#undef PE_ODO_FN
