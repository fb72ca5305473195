/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope_kv_body.cl - the kernel clpe_rope_kv_<PE_KV_NAME> for one
 * storage type (PE_T, PE_R) and one cache type (PE_KV_T: the storage type
 * itself with PE_KV_SAME, else half or bfloat16 under float32, stored by
 * PE_KV_PUT and PE_KV_PUT16, or with PE_KV_FP8 an FP8 byte, PE_KV_PUT
 * quantizing a value PE_KV_ROUND has rounded to the storage type by the
 * tensor's scale, sc). Included by clpe_rope_kv.cl once per cache type.
 *
 * Launch shape, as clpe_rope.cl's: dimension 0 counts a head's columns in
 * twos, PE_W pairs' worth per work-item, dimension 1 a block of
 * rows_per_item tokens. A work-item rotates those of its pairs below
 * n_pairs, for every head of q and k, and copies its columns [2 i0,
 * 2 (i0 + PE_W)) of v and, past rotary_dim, of k (and of q into q_out).
 * Each token's angles are computed once and applied to every head; the
 * phases are set from the block's first position (every token's with
 * ids) and then advanced by the odometer, one add per token, as rotation
 * does.
 */
#define PE_KV_FN(base) PE_CAT(base, PE_CAT(_, PE_KV_NAME))
#define PE_KV_BITS PE_CAT(pe_bits_, PE_NAME)
#define PE_KV_BITSV PE_CAT(pe_bitsv_, PE_NAME)

/* ---- destinations ---- */

/* A value of the arithmetic type into element j of a cache entry. */
static inline void PE_KV_FN(pe_kv_put)(global PE_KV_T *entry, uint j, PE_R x, pe_fp8_scale sc)
{
#if PE_KV_SAME
    PE_FN(pe_store)(entry, j, x);
#elif PE_KV_FP8
    entry[j] = PE_KV_PUT(PE_KV_ROUND(x), sc);
#else
    PE_KV_PUT(entry, j, x);
#endif
}

/* Elements [j, j_end) of src into dst, both of the storage type: their
 * bits (aligned: every PE_GL elements from j are one aligned vector,
 * streamed past the caches). */
static inline void PE_KV_FN(pe_kv_copy_bits)(global PE_T *dst, global const PE_T *src, uint j,
                                             uint j_end, bool aligned)
{
    global PE_KV_BITS *to = (global PE_KV_BITS *)dst;
    global const PE_KV_BITS *from = (global const PE_KV_BITS *)src;
    aligned = aligned && j % PE_GL == 0; /* a tail past rotary_dim may start anywhere */
#if PE_GROUPS
    for (; j + PE_GL <= j_end; j += PE_GL) {
        if (aligned)
            PE_KV_STREAM(*(global const PE_KV_BITSV *)(from + j), (global PE_KV_BITSV *)(to + j));
        else
            PE_CAT(vstore, PE_GL)(PE_CAT(vload, PE_GL)(0, from + j), 0, to + j);
    }
#endif
    for (; j < j_end; ++j)
        to[j] = from[j];
}

/* Elements [j, j_end) of a head into a cache entry: their bits where the
 * types agree, else each converted (FP8: inlined, so the quantization's
 * constants stay in registers across the walk). */
#if PE_KV_FP8
PE_INLINE
#else
static inline
#endif
void PE_KV_FN(pe_kv_copy)(global PE_KV_T *entry, global const PE_T *head, uint j,
                                        uint j_end, bool aligned, pe_fp8_scale sc)
{
#if PE_KV_SAME
    PE_KV_FN(pe_kv_copy_bits)(entry, head, j, j_end, aligned);
#elif PE_KV_FP8
#if PE_GROUPS
    aligned = aligned && j % PE_GL == 0;
    for (; j + PE_GL <= j_end; j += PE_GL)
        pe_fp8_store16(entry + j, PE_KV_PUT16(PE_GFN(pe_load)(head, j, aligned), sc), aligned);
#else
    (void)aligned;
#endif
    for (; j < j_end; ++j)
        entry[j] = PE_KV_PUT(PE_FN(pe_load)(head, j), sc);
#else
    aligned = aligned && j % 16 == 0;
#if PE_GROUPS
    for (; j + 16 <= j_end; j += 16) {
        float16 x = pe_load16_f32(head, j, aligned);
        if (aligned)
            PE_KV_STREAM(PE_KV_FN(pe_kv_bits16)(x), (global ushort16 *)(entry + j));
        else
            PE_KV_PUT16(entry, j, x, false);
    }
#endif
    for (; j < j_end; ++j)
        PE_KV_PUT(entry, j, PE_FN(pe_load)(head, j));
#endif
}

/* Pair i (angle c, s) of every head of one token, rotated from src into
 * dst of the storage type (q in place, or into q_out): a pointer to the
 * pair's first element walks from head to head, as rotation's does
 * (pe_rotate_heads_apart), so a head costs two moves and no address
 * arithmetic beyond the step. */
static inline void PE_KV_FN(pe_kv_rotate_heads)(global PE_T *dst, uint dst_pitch,
                                                global const PE_T *src, uint src_pitch,
                                                uint heads, uint i, PE_R c, PE_R s,
                                                uint stride, uint partner)
{
    global const PE_T *pa = src + i * stride;
    global PE_T *pd = dst + i * stride;
    for (uint h = 0; h < heads; ++h, pa += src_pitch, pd += dst_pitch) {
        PE_R a = PE_FN(pe_load)(pa, 0), b = PE_FN(pe_load)(pa, partner);
        PE_FN(pe_store)(pd, 0, PE_CAT(pe_rotate_a_, PE_R)(a, b, c, s));
        PE_FN(pe_store)(pd, partner, PE_CAT(pe_rotate_b_, PE_R)(a, b, c, s));
    }
}

/* The same from k into the cache entries of every head. */
static inline void PE_KV_FN(pe_kv_rotate_heads_cached)(global PE_KV_T *entry, ulong entry_pitch,
                                                       global const PE_T *src, uint src_pitch,
                                                       uint heads, uint i, PE_R c, PE_R s,
                                                       uint stride, uint partner,
                                                       pe_fp8_scale sc)
{
    global const PE_T *pa = src + i * stride;
    global PE_KV_T *pd = entry + i * stride;
    for (uint h = 0; h < heads; ++h, pa += src_pitch, pd += entry_pitch) {
        PE_R a = PE_FN(pe_load)(pa, 0), b = PE_FN(pe_load)(pa, partner);
        PE_KV_FN(pe_kv_put)(pd, 0, PE_CAT(pe_rotate_a_, PE_R)(a, b, c, s), sc);
        PE_KV_FN(pe_kv_put)(pd, partner, PE_CAT(pe_rotate_b_, PE_R)(a, b, c, s), sc);
    }
}

#if PE_W <= 2
#define PE_KV_ROT2_A PE_CAT(pe_rotate_a_, PE_CAT(PE_R, 2))
#define PE_KV_ROT2_B PE_CAT(pe_rotate_b_, PE_CAT(PE_R, 2))

/* Pairs i .. i + PE_W - 1 (angles c[j], s[j]) of every head, from src into
 * dst: pe_kv_rotate_heads for all of a work-item's pairs at once, so a
 * head's pointer step serves them all. With words (two pairs of 16-bit
 * storage, every offset and pitch even: pe_kv_words), each two adjacent
 * elements move as one word, as rotation's pe_rotate_two_heads moves them:
 * pair i and pair i + 1 when interleaved, the first halves of both and
 * their second halves when split. */
static inline void PE_KV_FN(pe_kv_rotate_item)(global PE_T *dst, ulong dst_pitch,
                                               global const PE_T *src, uint src_pitch,
                                               uint heads, uint i, const PE_R *c, const PE_R *s,
                                               uint stride, uint partner, bool words)
{
    global const PE_T *pa = src + i * stride;
    global PE_T *pd = dst + i * stride;
#if PE_W == 2
    if (words) {
        PE_CAT(PE_R, 2) cw = (PE_CAT(PE_R, 2))(c[0], c[1]), sw = (PE_CAT(PE_R, 2))(s[0], s[1]);
        uint second = stride == 2 ? 2 : partner; /* the other word */
        for (uint h = 0; h < heads; ++h, pa += src_pitch, pd += dst_pitch) {
            PE_CAT(PE_R, 2) u = PE_FN(pe_load_word)(pa), v = PE_FN(pe_load_word)(pa + second);
            if (stride == 2) {
                PE_FN(pe_store_word)(pd, (PE_CAT(PE_R, 2))(
                    PE_CAT(pe_rotate_a_, PE_R)(u.x, u.y, cw.x, sw.x),
                    PE_CAT(pe_rotate_b_, PE_R)(u.x, u.y, cw.x, sw.x)));
                PE_FN(pe_store_word)(pd + 2, (PE_CAT(PE_R, 2))(
                    PE_CAT(pe_rotate_a_, PE_R)(v.x, v.y, cw.y, sw.y),
                    PE_CAT(pe_rotate_b_, PE_R)(v.x, v.y, cw.y, sw.y)));
            } else {
                PE_FN(pe_store_word)(pd, PE_KV_ROT2_A(u, v, cw, sw));
                PE_FN(pe_store_word)(pd + partner, PE_KV_ROT2_B(u, v, cw, sw));
            }
        }
        return;
    }
#else
    (void)words;
#endif
    for (uint h = 0; h < heads; ++h, pa += src_pitch, pd += dst_pitch)
        for (uint j = 0; j < PE_W; ++j) {
            uint ka = j * stride, kb = ka + partner;
            PE_R a = PE_FN(pe_load)(pa, ka), b = PE_FN(pe_load)(pa, kb);
            PE_FN(pe_store)(pd, ka, PE_CAT(pe_rotate_a_, PE_R)(a, b, c[j], s[j]));
            PE_FN(pe_store)(pd, kb, PE_CAT(pe_rotate_b_, PE_R)(a, b, c[j], s[j]));
        }
}

/* The same from k into the cache entries (words where the cache holds the
 * storage type). */
static inline void PE_KV_FN(pe_kv_rotate_item_cached)(global PE_KV_T *entry, ulong entry_pitch,
                                                      global const PE_T *src, uint src_pitch,
                                                      uint heads, uint i, const PE_R *c,
                                                      const PE_R *s, uint stride, uint partner,
                                                      bool words, pe_fp8_scale sc)
{
#if PE_KV_SAME
    if (PE_W == 2 && words) {
        PE_KV_FN(pe_kv_rotate_item)((global PE_T *)entry, entry_pitch, src, src_pitch,
                                    heads, i, c, s, stride, partner, true);
        return;
    }
#else
    (void)words;
#endif
    global const PE_T *pa = src + i * stride;
    global PE_KV_T *pd = entry + i * stride;
    for (uint h = 0; h < heads; ++h, pa += src_pitch, pd += entry_pitch)
        for (uint j = 0; j < PE_W; ++j) {
            uint ka = j * stride, kb = ka + partner;
            PE_R a = PE_FN(pe_load)(pa, ka), b = PE_FN(pe_load)(pa, kb);
            PE_KV_FN(pe_kv_put)(pd, ka, PE_CAT(pe_rotate_a_, PE_R)(a, b, c[j], s[j]), sc);
            PE_KV_FN(pe_kv_put)(pd, kb, PE_CAT(pe_rotate_b_, PE_R)(a, b, c[j], s[j]), sc);
        }
}

/* Element c of a head into a cache entry: its bits where the types agree,
 * else converted. */
static inline void PE_KV_FN(pe_kv_move)(global PE_KV_T *entry, global const PE_T *head, uint c,
                                        pe_fp8_scale sc)
{
#if PE_KV_SAME
    (void)sc;
    ((global PE_KV_BITS *)entry)[c] = ((global const PE_KV_BITS *)head)[c];
#elif PE_KV_FP8
    entry[c] = PE_KV_PUT(PE_FN(pe_load)(head, c), sc);
#else
    (void)sc;
    PE_KV_PUT(entry, c, PE_FN(pe_load)(head, c));
#endif
}

/* A work-item's columns [c_begin, c_end) of every head's v, and those at
 * or past tail (past rotary_dim) of k, into their cache entries: at most
 * 2 PE_W columns, a count the compiler knows; with words (and a cache of
 * the storage type), two columns at a time as one 32-bit word. */
static inline void PE_KV_FN(pe_kv_copy_item)(global PE_KV_T *key_entry,
                                             global PE_KV_T *value_entry, ulong entry_pitch,
                                             global const PE_T *krow, uint k_pitch,
                                             global const PE_T *vrow, uint v_pitch, uint heads,
                                             uint c_begin, uint c_end, uint tail, bool words,
                                             pe_fp8_scale ksc, pe_fp8_scale vsc)
{
#if PE_W == 2 && PE_KV_SAME
    if (words) {
        for (uint h = 0; h < heads; ++h, key_entry += entry_pitch, value_entry += entry_pitch,
                  krow += k_pitch, vrow += v_pitch)
            for (uint j = 0; j < 2 * PE_W; j += 2) {
                uint c = c_begin + j;
                if (c + 1 < c_end) {
                    *(global uint *)(value_entry + c) = *(global const uint *)(vrow + c);
                    if (c >= tail)
                        *(global uint *)(key_entry + c) = *(global const uint *)(krow + c);
                } else if (c < c_end) {
                    PE_KV_FN(pe_kv_move)(value_entry, vrow, c, vsc);
                    if (c >= tail)
                        PE_KV_FN(pe_kv_move)(key_entry, krow, c, ksc);
                }
            }
        return;
    }
#else
    (void)words;
#endif
    for (uint h = 0; h < heads; ++h, key_entry += entry_pitch, value_entry += entry_pitch,
              krow += k_pitch, vrow += v_pitch)
        for (uint j = 0; j < 2 * PE_W; ++j) {
            uint c = c_begin + j;
            if (c < c_end) {
                PE_KV_FN(pe_kv_move)(value_entry, vrow, c, vsc);
                if (c >= tail)
                    PE_KV_FN(pe_kv_move)(key_entry, krow, c, ksc);
            }
        }
}
#undef PE_KV_ROT2_A
#undef PE_KV_ROT2_B
#endif

#if PE_GROUPS
#if !PE_KV_SAME && !PE_KV_FP8
/* Sixteen float32 values into a 16-bit cache. */
static inline void PE_KV_FN(pe_kv_put16)(global PE_KV_T *entry, uint j, float16 x, bool aligned)
{
    if (aligned)
        *(global ushort16 *)(entry + j) = PE_KV_FN(pe_kv_bits16)(x);
    else
        vstore16(PE_KV_FN(pe_kv_bits16)(x), 0, (global ushort *)(entry + j));
}
#endif
#define PE_KV_ROTATE_ZIPPED PE_CAT(pe_rotate_zipped_, PE_GV)
/* Pairs i .. i + PE_GL - 1 of one head (angles c, s), rotated: the results
 * ra and rb belong at elements ka and kb (two vectors of zipped pairs when
 * interleaved, the two halves when split). */
static inline void PE_KV_FN(pe_kv_rotate_group)(global const PE_T *src, uint i, PE_GV c,
                                                PE_GV s, uint stride, uint partner, PE_GV *ra,
                                                PE_GV *rb, uint *ka, uint *kb, bool aligned)
{
    if (stride == 2) {
        *ka = 2 * i;
        *kb = *ka + PE_GL;
        *ra = PE_KV_ROTATE_ZIPPED(PE_GFN(pe_load)(src, *ka, aligned), c.lo, s.lo);
        *rb = PE_KV_ROTATE_ZIPPED(PE_GFN(pe_load)(src, *kb, aligned), c.hi, s.hi);
    } else {
        *ka = i;
        *kb = i + partner;
        PE_GV a = PE_GFN(pe_load)(src, *ka, aligned), b = PE_GFN(pe_load)(src, *kb, aligned);
        *ra = PE_CAT(pe_rotate_a_, PE_GV)(a, b, c, s);
        *rb = PE_CAT(pe_rotate_b_, PE_GV)(a, b, c, s);
    }
}

/* The group's results into a cache entry. */
static inline void PE_KV_FN(pe_kv_put_group)(global PE_KV_T *entry, uint ka, PE_GV ra, uint kb,
                                             PE_GV rb, bool aligned, pe_fp8_scale sc)
{
#if PE_KV_FP8
    /* an FP8 cache: sixteen bytes per vector, rounded to the storage type
     * first */
    pe_fp8_store16(entry + ka, PE_KV_PUT16(PE_KV_ROUND16(ra), sc), aligned);
    pe_fp8_store16(entry + kb, PE_KV_PUT16(PE_KV_ROUND16(rb), sc), aligned);
#elif PE_KV_SAME && PE_NARROW
    /* a 16-bit cache of the storage type: stored as rotation stores q (not
     * streamed: a line streamed in halves far apart in time is written to
     * memory twice) */
    (void)sc;
    PE_GFN(pe_store_two)(entry, ka, ra, kb, rb, aligned);
#elif PE_KV_SAME
    /* 32- and 64-bit storage: the vector is the stored bits, streamed */
    if (aligned) {
        PE_KV_STREAM(ra, (global PE_GV *)(entry + ka));
        PE_KV_STREAM(rb, (global PE_GV *)(entry + kb));
        return;
    }
    PE_GFN(pe_store)(entry, ka, ra, false);
    PE_GFN(pe_store)(entry, kb, rb, false);
#else
    /* a 16-bit cache under float32: half a line per vector, not streamed */
    PE_KV_FN(pe_kv_put16)(entry, ka, ra, aligned);
    PE_KV_FN(pe_kv_put16)(entry, kb, rb, aligned);
#endif
}
#undef PE_KV_ROTATE_ZIPPED
#endif

#if PE_GROUPS && PE_X86
/* The lines of pairs [i0, i0 + n) of every head of one token's q, k and v,
 * asked for as that token's turn nears (pe_prefetch_pairs). */
static inline void PE_KV_FN(pe_kv_prefetch)(global const PE_T *q, uint q_heads, uint q_pitch,
                                            global const PE_T *k, global const PE_T *v,
                                            uint kv_heads, uint k_pitch, uint v_pitch, uint i0,
                                            uint n, uint stride, uint partner)
{
    for (uint h = 0; q && h < q_heads; ++h)
        pe_prefetch_pairs(q + h * q_pitch, sizeof(PE_T), stride == 2, 0, partner, i0, n, true);
    for (uint h = 0; h < kv_heads; ++h) {
        pe_prefetch_pairs(k + h * k_pitch, sizeof(PE_T), stride == 2, 0, partner, i0, n, false);
        pe_prefetch_pairs(v + h * v_pitch, sizeof(PE_T), true, 0, 0, i0, n, false);
    }
}
#endif

/* ---- the walk over the tokens ---- */

/* The kernel's work, its arguments as they are; aligned: every vector
 * moved is aligned to its size (the vector shape; pe_kv_aligned). */
PE_INLINE void PE_KV_FN(pe_kv_walk)(PE_ROPE_KV_ARGS(PE_PARAM, PE_COMMA), bool aligned)
{
    uint i0 = (uint)get_global_id(0) * PE_W;
    uint s_begin = (uint)get_global_id(1) * rows_per_item;
    uint n_cols = (head_dim + 1) / 2; /* columns counted in twos */
    if (i0 >= n_cols || s_begin >= rows)
        return;
    uint s_stop = s_begin + min(rows_per_item, rows - s_begin);
    uint i_rot = max(i0, min(i0 + PE_W, n_pairs)); /* pairs [i0, i_rot) rotated */
    uint c_begin = 2 * i0, c_end = min(2 * (i0 + PE_W), head_dim); /* columns copied */
    uint tail = max(c_begin, 2 * n_pairs); /* ... of k and q past rotary_dim */
    PE_R sign = inverse ? (PE_R)-1 : (PE_R)1;
    bool ids = pos_source == PE_POS_IDS;
#if PE_KV_FP8
    pe_fp8_scale ksc = pe_fp8_scale_of(key_scale), vsc = pe_fp8_scale_of(value_scale);
#else
    pe_fp8_scale ksc = {1.0f, 1.0f, 0, 1.0f, 1.0f, 1}, vsc = ksc; /* no scaling */
#endif
    /* a position per stream: each pair's phase from its stream's position,
     * every token (no vector groups: sections need not fall on them) */
    bool streams = pe_rope_streams(pos_source);
    global PE_T *q_dst = q_out ? q_out : q;
    uint qd_head_pitch = q_out ? q_out_head_pitch : q_head_pitch;
    uint qd_row_pitch = q_out ? q_out_row_pitch : q_row_pitch;
    ulong qd_base = q_out ? q_out_base : q_base;

    /* the phases of the work-item's pairs: groups of PE_GL as vectors, then
     * the rest one at a time, with an odometer each where a work-item has
     * at most two (the GPU shape), else from the position (a tail) */
    uint groups = 0;
#if PE_GROUPS
    PE_FN(pe_phases) ph;
    if (i_rot > i0 && !streams) {
        PE_FN(pe_phases_load)(&ph, tw_hi, tw_lo, i0, i_rot, i_rot);
        groups = ph.groups;
    }
#endif
    uint i_one = i0 + PE_GL * groups; /* the first pair rotated alone */
#if PE_W <= 2
    /* 16-bit pairs move as words where every tensor, cache entry and pitch
     * keeps two adjacent elements in one aligned word (buffers start
     * aligned; rotation's host finds the same as pair_words) */
    const bool words = PE_W == 2 && (stride == 2 || partner % 2 == 0) &&
                       ((q_base | q_out_base | k_base | v_base | key_offset | value_offset |
                         cache_head_pitch) % 2 == 0) &&
                       ((q_head_pitch | q_row_pitch | q_out_head_pitch | q_out_row_pitch |
                         k_head_pitch | k_row_pitch | v_head_pitch | v_row_pitch | entry_align) %
                            2 == 0);
    PE_ODO o[PE_W];
    for (uint j = 0; j < PE_W; ++j)
        PE_ODO_FN(load)(&o[j], tw_hi, tw_lo, min(i0 + j, n_pairs - 1));
#endif

    for (uint s = s_begin; s < s_stop; ++s) {
        ulong p = ids                         ? (ulong)positions[positions_base + s]
                  : pos_source == PE_POS_START ? (ulong)start + s
                                               : (ulong)positions[positions_base] +
                                                     (ulong)start + s;
        long entry = inline_check ? pe_kv_entry(slots[slots_base + s], capacity, block_size,
                                                slot_pitch, block_pitch)
                                  : entries[entries_base + s];
        global const PE_T *qrow = q ? q + (q_base + s * q_row_pitch) : 0;
        global PE_T *qdrow = q ? q_dst + (qd_base + s * qd_row_pitch) : 0;
        global const PE_T *krow = k + (k_base + s * k_row_pitch);
        global const PE_T *vrow = v + (v_base + s * v_row_pitch);
#if PE_W > 2
        uint k_heads = entry >= 0 ? kv_heads : 0; /* padding: nothing cached */
#endif
        global PE_KV_T *key_entry = key_cache + (key_offset + (ulong)entry);
        global PE_KV_T *value_entry = value_cache + (value_offset + (ulong)entry);
        bool set = s == s_begin || ids || streams;
#if PE_GROUPS && PE_X86
        /* the lines of the token 8 ahead asked for, as rotation does */
        if (s + 8 < rows && groups)
            PE_KV_FN(pe_kv_prefetch)(q ? q + (q_base + (s + 8) * q_row_pitch) : 0, q_heads,
                                     q_head_pitch, k + (k_base + (s + 8) * k_row_pitch),
                                     v + (v_base + (s + 8) * v_row_pitch), kv_heads,
                                     k_head_pitch, v_head_pitch, i0, PE_GL * groups, stride,
                                     partner);
#endif

#if PE_GROUPS
        if (groups && set)
            PE_FN(pe_phases_set)(&ph, p);
        for (uint n = 0; n < groups; ++n) {
            PE_GV sv, cv, ra, rb;
            uint ka, kb, i = i0 + PE_GL * n;
            PE_GODO_FN(sin_cos)(&ph.group[n], &sv, &cv);
            cv = cv * amplitude;
            sv = (sv * amplitude) * sign;
            for (uint h = 0; qrow && h < q_heads; ++h) {
                PE_KV_FN(pe_kv_rotate_group)(qrow + h * q_head_pitch, i, cv, sv, stride, partner,
                                             &ra, &rb, &ka, &kb, aligned);
                PE_GFN(pe_store_two)(qdrow + h * qd_head_pitch, ka, ra, kb, rb, aligned);
            }
            for (uint h = 0; h < k_heads; ++h) {
                PE_KV_FN(pe_kv_rotate_group)(krow + h * k_head_pitch, i, cv, sv, stride, partner,
                                             &ra, &rb, &ka, &kb, aligned);
                PE_KV_FN(pe_kv_put_group)(key_entry + h * cache_head_pitch, ka, ra, kb, rb,
                                          aligned, ksc);
            }
        }
#endif
#if PE_W <= 2
        /* the pair shape: the work-item's PE_W pairs' angles, then every
         * head with all of them (a count the compiler knows), or the one
         * pair of the last work-item of an odd count; columns copied one
         * by one, at most 2 PE_W of them */
        uint n = i_rot - i0;
        PE_R cv[PE_W], sv[PE_W];
        for (uint j = 0; n && j < PE_W; ++j) {
            ulong pj = streams ? pe_stream_position(positions + positions_base, s,
                                                    pe_rope_stream(min(i0 + j, n_pairs - 1),
                                                                   end0, end1, end2),
                                                    token_pitch, stream_pitch)
                               : p;
            if (set)
                PE_ODO_FN(set)(&o[j], pj);
            PE_ODO_FN(sin_cos)(&o[j], &sv[j], &cv[j]);
            cv[j] = cv[j] * amplitude;
            sv[j] = (sv[j] * amplitude) * sign;
        }
        if (n == PE_W && words) {
            if (qrow)
                PE_KV_FN(pe_kv_rotate_item)(qdrow, qd_head_pitch, qrow, q_head_pitch, q_heads,
                                            i0, cv, sv, stride, partner, true);
            if (entry >= 0)
                PE_KV_FN(pe_kv_rotate_item_cached)(key_entry, cache_head_pitch, krow,
                                                   k_head_pitch, kv_heads, i0, cv, sv, stride,
                                                   partner, true, ksc);
        } else {
            for (uint j = 0; j < n; ++j) {
                if (qrow)
                    PE_KV_FN(pe_kv_rotate_heads)(qdrow, qd_head_pitch, qrow, q_head_pitch,
                                                 q_heads, i0 + j, cv[j], sv[j], stride, partner);
                if (entry >= 0)
                    PE_KV_FN(pe_kv_rotate_heads_cached)(key_entry, cache_head_pitch, krow,
                                                        k_head_pitch, kv_heads, i0 + j, cv[j],
                                                        sv[j], stride, partner, ksc);
            }
        }
        if (entry >= 0)
            PE_KV_FN(pe_kv_copy_item)(key_entry, value_entry, cache_head_pitch, krow,
                                      k_head_pitch, vrow, v_head_pitch, kv_heads, c_begin,
                                      c_end, tail, words, ksc, vsc);
#else
        for (uint i = i_one; i < i_rot; ++i) {
            PE_R sv, cv;
            ulong pi = streams ? pe_stream_position(positions + positions_base, s,
                                                    pe_rope_stream(i, end0, end1, end2),
                                                    token_pitch, stream_pitch)
                               : p;
            PE_SINCOS_AT(pi, tw_hi, tw_lo, i, &sv, &cv);
            cv = cv * amplitude;
            sv = (sv * amplitude) * sign;
            if (qrow)
                PE_KV_FN(pe_kv_rotate_heads)(qdrow, qd_head_pitch, qrow, q_head_pitch, q_heads,
                                             i, cv, sv, stride, partner);
            PE_KV_FN(pe_kv_rotate_heads_cached)(key_entry, cache_head_pitch, krow, k_head_pitch,
                                                k_heads, i, cv, sv, stride, partner, ksc);
        }
        {
            global PE_KV_T *kd = key_entry, *vd = value_entry;
            global const PE_T *ks = krow, *vs = vrow;
            for (uint h = 0; h < k_heads; ++h, kd += cache_head_pitch, vd += cache_head_pitch,
                      ks += k_head_pitch, vs += v_head_pitch) {
                PE_KV_FN(pe_kv_copy)(vd, vs, c_begin, c_end, aligned, vsc);
                PE_KV_FN(pe_kv_copy)(kd, ks, tail, c_end, aligned, ksc);
            }
        }
#endif
        for (uint h = 0; q_out && qrow && h < q_heads; ++h)
            PE_KV_FN(pe_kv_copy_bits)(qdrow + h * qd_head_pitch, qrow + h * q_head_pitch, tail,
                                      c_end, aligned);

        /* the next token, one odometer tick; past INT64_MAX with the exact
         * wrap, as rotation's */
        if (!ids && !streams) {
            bool wraps = p == 0x7FFFFFFFFFFFFFFFUL;
#if PE_GROUPS
            if (groups)
                PE_FN(pe_phases_tick)(&ph, wraps, true);
#endif
#if PE_W <= 2
            for (uint j = 0; j < PE_W; ++j) {
                PE_ODO_FN(tick)(&o[j]);
                if (wraps)
                    PE_ODO_FN(wrap)(&o[j]);
            }
#endif
        }
    }
    if (aligned)
        PE_KV_STREAMED();
}

/* ---- the kernel ---- */

#if PE_GROUPS
/* Whether every vector the walk moves is aligned to its size: the tensors
 * and caches start on such a boundary and every pitch and offset is a
 * multiple of PE_GL elements (as pe_rope_aligned in clpe_rope_vector.cl). */
PE_INLINE bool PE_KV_FN(pe_kv_aligned)(PE_ROPE_KV_ARGS(PE_PARAM, PE_COMMA))
{
    const ulong bytes = PE_GL * sizeof(PE_T), cache_bytes = PE_GL * sizeof(PE_KV_T);
    bool ok = (stride == 2 || partner % PE_GL == 0) &&
              (ulong)(k + k_base) % bytes == 0 && (ulong)(v + v_base) % bytes == 0 &&
              (k_head_pitch | k_row_pitch | v_head_pitch | v_row_pitch) % PE_GL == 0 &&
              (ulong)(key_cache + key_offset) % cache_bytes == 0 &&
              (ulong)(value_cache + value_offset) % cache_bytes == 0 &&
              cache_head_pitch % PE_GL == 0 && entry_align % PE_GL == 0;
    if (q)
        ok = ok && (ulong)(q + q_base) % bytes == 0 && (q_head_pitch | q_row_pitch) % PE_GL == 0;
    if (q_out)
        ok = ok && (ulong)(q_out + q_out_base) % bytes == 0 &&
             (q_out_head_pitch | q_out_row_pitch) % PE_GL == 0;
    return ok;
}
#endif

/* The walk, compiled once for aligned vectors and once for any (the
 * vector shape only). */
kernel void PE_KV_FN(clpe_rope_kv)(PE_ROPE_KV_ARGS(PE_PARAM, PE_COMMA))
{
    uint refused, first_refused;
    if (inline_check) {
        pe_kv_check_inline(slots + call_slots_base, call_tokens, capacity, &refused,
                           &first_refused);
    } else {
        refused = report[0];
        first_refused = report[1];
    }
    if (first && get_global_id(0) == 0 && get_global_id(1) == 0) {
        if (report_out) {
            report_out[0] = refused;
            report_out[1] = first_refused;
        }
        if (refused)
            atomic_inc(&stats[PE_KV_STAT_REFUSED_CALLS]);
    }
    if (refused)
        return; /* a bad slot: nothing written */
#if PE_GROUPS
    if (PE_KV_FN(pe_kv_aligned)(PE_ROPE_KV_ARGS(PE_ARG_NAME, PE_COMMA))) {
        PE_KV_FN(pe_kv_walk)(PE_ROPE_KV_ARGS(PE_ARG_NAME, PE_COMMA), true);
        return;
    }
#endif
    PE_KV_FN(pe_kv_walk)(PE_ROPE_KV_ARGS(PE_ARG_NAME, PE_COMMA), false);
}

#undef PE_KV_FN
#undef PE_KV_BITS
#undef PE_KV_BITSV
