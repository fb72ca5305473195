/*
 * clpe_rope_kv.cl - rotary into a KV cache (clpe_rope_kv_*): q rotated in
 * place or into q_out, k rotated and v copied into a contiguous or paged
 * cache at each token's slot, in one pass over the projection output; and
 * the check of the slots that comes before it (clpe_kv_check_slots).
 * Included by clpe_kernels.cl after everything else (and after
 * clpe_rope_kv_interface.h): it needs the storage functions
 * (clpe_storage.cl) and the sine and cosine of a pair at a position
 * (clpe_odometer.cl). The functions and kernel of one storage type are
 * PE_ROPE_KV_FUNCTIONS, written once below and expanded for each type with
 * PE_NAME, PE_T, PE_R, PE_TWL, PE_W, PE_SINCOS_AT, PE_KV_SELF and PE_KV_BITS
 * (an unsigned type of the storage type's size: copies move bits) set.
 *
 * The arithmetic is clpe_rope.cl's, pair by pair: c = cos * m, s = sin * m
 * (s negated for the inverse), each rounded; a' = fma(a, c, -(b * s)),
 * b' = fma(a, s, b * c), rounded once to the storage type, and for the
 * cache from there to the cache's type: the bits of clpe_rope followed by
 * a copy. The angles of a token are computed once, for every head of q
 * and k.
 *
 * A work-item takes PE_W pairs of a block of rows_per_item tokens, as the
 * rotary kernels do, with the same pairs per work-item (the host plans its
 * launches with them); each token's angles come straight from its
 * position (pe_sincos_at), since the tokens of a call rarely run in order.
 */


#define PE_KIND_KV_CACHE global uchar *
#define PE_KIND_KV_REPORT global const uint *
#define PE_KIND_KV_REPORT_OUT global uint *
#define PE_KIND_KV_LOCAL local ulong *
#define PE_FN(base) PE_CAT(base, PE_CAT(_, PE_NAME))

/* The scalar helpers of one storage type. */
#define PE_ROPE_KV_HELPERS                                                                        \
/* A value of the storage type's arithmetic into element j of a cache                             \
 * entry: the storage type's own rounding where the cache has that type,                          \
 * else (under float32 only) half or bfloat16, round to nearest even. */                          \
static inline void PE_FN(pe_kv_put)(global uchar *entry, uint j, PE_R x, uint cache_dtype)        \
{                                                                                                 \
    if (PE_KV_SELF == PE_KV_F32 && cache_dtype == PE_KV_F16) {                                    \
        pe_store_f16((global half *)entry, j, (float)x);                                          \
        return;                                                                                   \
    }                                                                                             \
    if (PE_KV_SELF == PE_KV_F32 && cache_dtype == PE_KV_BF16) {                                   \
        pe_store_bf16((global ushort *)entry, j, (float)x);                                       \
        return;                                                                                   \
    }                                                                                             \
    PE_FN(pe_store)((global PE_T *)entry, j, x);                                                  \
}                                                                                                 \
                                                                                                  \
/* Element j of a token's head, copied into a cache entry: the bits as they                       \
 * are where the types agree, else converted. */                                                  \
static inline void PE_FN(pe_kv_copy)(global uchar *entry, global const PE_T *head, uint j,        \
                                     uint cache_dtype)                                            \
{                                                                                                 \
    if (cache_dtype == PE_KV_SELF)                                                                \
        ((global PE_KV_BITS *)entry)[j] = ((global const PE_KV_BITS *)head)[j];                   \
    else                                                                                          \
        PE_FN(pe_kv_put)(entry, j, PE_FN(pe_load)(head, j), cache_dtype);                         \
}

/* Elements [j, j_end) of a head into a cache entry, one at a time. */
#define PE_ROPE_KV_SCALAR_SPAN                                                                    \
static inline void PE_FN(pe_kv_copy_span)(global uchar *entry, global const PE_T *head, uint j,   \
                                          uint j_end, uint cache_dtype)                           \
{                                                                                                 \
    for (; j < j_end; ++j)                                                                        \
        PE_FN(pe_kv_copy)(entry, head, j, cache_dtype);                                           \
}

/* The vector path of the float types on CPUs (PE_W >= 16): sixteen pairs
 * at once, as clpe_rope.cl's groups compute them (pe_sincos16 and the same
 * fma per element: the bits of the scalar path). Loads and stores need no
 * alignment. */
#define PE_ROPE_KV_VECTOR                                                                         \
static inline void PE_FN(pe_kv_put16)(global uchar *entry, uint j, float16 x, uint cache_dtype)   \
{                                                                                                 \
    if (PE_KV_SELF == PE_KV_F32 && cache_dtype == PE_KV_F16) {                                    \
        pe_store16_f16((global half *)entry, j, x, false);                                        \
        return;                                                                                   \
    }                                                                                             \
    if (PE_KV_SELF == PE_KV_F32 && cache_dtype == PE_KV_BF16) {                                   \
        pe_store16_bf16((global ushort *)entry, j, x, false);                                     \
        return;                                                                                   \
    }                                                                                             \
    PE_FN(pe_store16)((global PE_T *)entry, j, x, false);                                         \
}                                                                                                 \
                                                                                                  \
static inline void PE_FN(pe_kv_copy_span)(global uchar *entry, global const PE_T *head, uint j,   \
                                          uint j_end, uint cache_dtype)                           \
{                                                                                                 \
    for (; j + 16 <= j_end; j += 16) {                                                            \
        if (cache_dtype == PE_KV_SELF)                                                            \
            vstore16(vload16(0, (global const PE_KV_BITS *)head + j), 0,                          \
                     (global PE_KV_BITS *)entry + j);                                             \
        else                                                                                      \
            PE_FN(pe_kv_put16)(entry, j, PE_FN(pe_load16)(head, j, false), cache_dtype);          \
    }                                                                                             \
    for (; j < j_end; ++j)                                                                        \
        PE_FN(pe_kv_copy)(entry, head, j, cache_dtype);                                           \
}                                                                                                 \
                                                                                                  \
/* Pairs i .. i+15 of one head rotated: from src into dst (the storage                            \
 * type), or into a cache entry (dst NULL). */                                                    \
static inline void PE_FN(pe_kv_rotate16)(global const PE_T *src, global PE_T *dst,                \
                                         global uchar *entry, uint i, float16 c, float16 s,       \
                                         uint stride, uint partner, uint cache_dtype)             \
{                                                                                                 \
    float16 ra, rb;                                                                               \
    uint ka, kb;                                                                                  \
    if (stride == 2) { /* interleaved: 32 elements, two vectors of zipped pairs */                \
        ka = 2 * i;                                                                               \
        kb = ka + 16;                                                                             \
        ra = pe_rotate_zipped_float16(PE_FN(pe_load16)(src, ka, false), c.lo, s.lo);              \
        rb = pe_rotate_zipped_float16(PE_FN(pe_load16)(src, kb, false), c.hi, s.hi);              \
    } else {                                                                                      \
        ka = i;                                                                                   \
        kb = i + partner;                                                                         \
        float16 a = PE_FN(pe_load16)(src, ka, false), b = PE_FN(pe_load16)(src, kb, false);       \
        ra = fma(a, c, -(b * s));                                                                 \
        rb = fma(a, s, b * c);                                                                    \
    }                                                                                             \
    if (dst) {                                                                                    \
        PE_FN(pe_store16)(dst, ka, ra, false);                                                    \
        PE_FN(pe_store16)(dst, kb, rb, false);                                                    \
    } else {                                                                                      \
        PE_FN(pe_kv_put16)(entry, ka, ra, cache_dtype);                                           \
        PE_FN(pe_kv_put16)(entry, kb, rb, cache_dtype);                                           \
    }                                                                                             \
}

/* In the kernel's pair loop: the groups of sixteen first (i advances). */
#define PE_KV_PAIR_GROUPS_VECTOR                                                                  \
for (; i + 16 <= i_rot; i += 16) {                                                                \
    uint hs[16], ls[16];                                                                          \
    for (uint l = 0; l < 16; ++l) {                                                               \
        ulong ph = pe_phase((long)p, tw_hi[i + l], tw_lo[i + l]);                                 \
        hs[l] = (uint)(ph >> 32) + (1u << 29); /* pe_sincos16 takes the eighth turn added */      \
        ls[l] = (uint)ph;                                                                         \
    }                                                                                             \
    float16 sv, cv;                                                                               \
    pe_sincos16(vload16(0, hs), vload16(0, ls), &sv, &cv);                                        \
    cv = cv * amplitude;                                                                          \
    sv = (sv * amplitude) * sign;                                                                 \
    for (uint h = 0; qrow && h < q_heads; ++h)                                                    \
        PE_FN(pe_kv_rotate16)(qrow + h * q_head_pitch, qdrow + h * qd_head_pitch, 0, i, cv, sv,   \
                              stride, partner, cache_dtype);                                      \
    for (uint h = 0; slot >= 0 && h < kv_heads; ++h)                                              \
        PE_FN(pe_kv_rotate16)(krow + h * k_head_pitch, 0,                                         \
                              key_entry + h * cache_head_pitch * esize, i, cv, sv, stride,        \
                              partner, cache_dtype);                                              \
}

#define PE_ROPE_KV_KERNEL                                                                         \
kernel void PE_FN(clpe_rope_kv)(PE_ROPE_KV_ARGS(PE_PARAM, PE_COMMA))                              \
{                                                                                                 \
    uint i0 = (uint)get_global_id(0) * PE_W;                                                      \
    uint s_begin = (uint)get_global_id(1) * rows_per_item;                                        \
    uint n_cols = (head_dim + 1) / 2; /* columns counted in twos */                               \
    if (i0 >= n_cols || s_begin >= rows || report[0] != 0)                                        \
        return;                                                                                   \
    uint s_stop = s_begin + min(rows_per_item, rows - s_begin);                                   \
    uint i_rot = min(i0 + PE_W, n_pairs);         /* pairs this work-item rotates */              \
    uint c_begin = 2 * i0, c_end = min(2 * (i0 + PE_W), head_dim); /* columns it copies */        \
    uint tail = max(c_begin, 2 * n_pairs);        /* ... of k and q past rotary_dim */            \
    PE_R sign = inverse ? (PE_R)-1 : (PE_R)1;                                                     \
    uint esize = cache_dtype == PE_KV_F64 ? 8 : cache_dtype == PE_KV_F32 ? 4 : 2;                 \
    global PE_T *q_dst = q_out ? q_out : q;                                                       \
    uint qd_head_pitch = q_out ? q_out_head_pitch : q_head_pitch;                                 \
    uint qd_row_pitch = q_out ? q_out_row_pitch : q_row_pitch;                                    \
    ulong qd_base = q_out ? q_out_base : q_base;                                                  \
                                                                                                  \
    for (uint s = s_begin; s < s_stop; ++s) {                                                     \
        ulong p = pos_source == PE_POS_IDS ? (ulong)positions[positions_base + s]                 \
                  : pos_source == PE_POS_START ? (ulong)start + s                                 \
                                               : (ulong)positions[positions_base] +               \
                                                     (ulong)start + s;                            \
        long slot = slots[slots_base + s];                                                        \
        global PE_T *qrow = q ? q + (q_base + s * q_row_pitch) : 0;                               \
        global PE_T *qdrow = q ? q_dst + (qd_base + s * qd_row_pitch) : 0;                        \
        global const PE_T *krow = k + (k_base + s * k_row_pitch);                                 \
        global const PE_T *vrow = v + (v_base + s * v_row_pitch);                                 \
        ulong entry = 0;                                                                          \
        if (slot >= 0)                                                                            \
            entry = ((ulong)slot / block_size) * cache_block_pitch +                              \
                    ((ulong)slot % block_size) * cache_slot_pitch;                                \
        global uchar *key_entry = key_cache + (key_offset + entry) * esize;                       \
        global uchar *value_entry = value_cache + (value_offset + entry) * esize;                 \
                                                                                                  \
        uint i = i0;                                                                              \
        PE_KV_PAIR_GROUPS                                                                         \
        for (; i < i_rot; ++i) {                                                                  \
            PE_R sv, cv;                                                                          \
            PE_SINCOS_AT(p, tw_hi, tw_lo, i, &sv, &cv);                                           \
            cv = cv * amplitude;                                                                  \
            sv = (sv * amplitude) * sign;                                                         \
            uint ka = i * stride, kb = ka + partner;                                              \
            for (uint h = 0; qrow && h < q_heads; ++h) {                                          \
                global PE_T *src = qrow + h * q_head_pitch;                                       \
                global PE_T *dst = qdrow + h * qd_head_pitch;                                     \
                PE_R a = PE_FN(pe_load)(src, ka), b = PE_FN(pe_load)(src, kb);                    \
                PE_FN(pe_store)(dst, ka, fma(a, cv, -(b * sv)));                                  \
                PE_FN(pe_store)(dst, kb, fma(a, sv, b * cv));                                     \
            }                                                                                     \
            for (uint h = 0; slot >= 0 && h < kv_heads; ++h) {                                    \
                global const PE_T *src = krow + h * k_head_pitch;                                 \
                global uchar *dst = key_entry + h * cache_head_pitch * esize;                     \
                PE_R a = PE_FN(pe_load)(src, ka), b = PE_FN(pe_load)(src, kb);                    \
                PE_FN(pe_kv_put)(dst, ka, fma(a, cv, -(b * sv)), cache_dtype);                    \
                PE_FN(pe_kv_put)(dst, kb, fma(a, sv, b * cv), cache_dtype);                       \
            }                                                                                     \
        }                                                                                         \
        for (uint h = 0; slot >= 0 && h < kv_heads; ++h) {                                        \
            PE_FN(pe_kv_copy_span)(value_entry + h * cache_head_pitch * esize,                    \
                                   vrow + h * v_head_pitch, c_begin, c_end, cache_dtype);         \
            PE_FN(pe_kv_copy_span)(key_entry + h * cache_head_pitch * esize,                      \
                                   krow + h * k_head_pitch, tail, c_end, cache_dtype);            \
        }                                                                                         \
        for (uint h = 0; q_out && qrow && h < q_heads; ++h)                                       \
            PE_FN(pe_kv_copy_span)((global uchar *)(qdrow + h * qd_head_pitch),                   \
                                   qrow + h * q_head_pitch, tail, c_end, PE_KV_SELF);             \
    }                                                                                             \
}

/* One block per storage type, each compiled only where the build asks for
 * that type (PE_BUILD_*, clpe_kernels.cl); a block sets every macro the
 * bodies above read and clears them all again with clpe_rope_kv_clear.h,
 * so nothing carries over to the next type. f32, f16 and bf16: float
 * arithmetic and 96-bit tuning words, the vector path where a work-item
 * takes sixteen pairs or more; f64: double arithmetic, 128-bit words, the
 * scalar path. */
#if PE_BUILD_F32
#define PE_NAME f32
#define PE_T float
#define PE_R float
#define PE_TWL uint
#define PE_SINCOS_AT pe_sincos_at
#define PE_KV_BITS uint
#define PE_KV_SELF PE_KV_F32
#define PE_W PE_PAIRS
PE_ROPE_KV_HELPERS
#if PE_W >= 16
PE_ROPE_KV_VECTOR
#define PE_KV_PAIR_GROUPS PE_KV_PAIR_GROUPS_VECTOR
#else
PE_ROPE_KV_SCALAR_SPAN
#define PE_KV_PAIR_GROUPS
#endif
PE_ROPE_KV_KERNEL
#include "clpe_rope_kv_clear.h"
#endif

#if PE_BUILD_F16
#define PE_NAME f16
#define PE_T half
#define PE_R float
#define PE_TWL uint
#define PE_SINCOS_AT pe_sincos_at
#define PE_KV_BITS ushort
#define PE_KV_SELF PE_KV_F16
#define PE_W PE_PAIRS_ROPE16
PE_ROPE_KV_HELPERS
#if PE_W >= 16
PE_ROPE_KV_VECTOR
#define PE_KV_PAIR_GROUPS PE_KV_PAIR_GROUPS_VECTOR
#else
PE_ROPE_KV_SCALAR_SPAN
#define PE_KV_PAIR_GROUPS
#endif
PE_ROPE_KV_KERNEL
#include "clpe_rope_kv_clear.h"
#endif

#if PE_BUILD_BF16
#define PE_NAME bf16
#define PE_T ushort
#define PE_R float
#define PE_TWL uint
#define PE_SINCOS_AT pe_sincos_at
#define PE_KV_BITS ushort
#define PE_KV_SELF PE_KV_BF16
#define PE_W PE_PAIRS_ROPE16
PE_ROPE_KV_HELPERS
#if PE_W >= 16
PE_ROPE_KV_VECTOR
#define PE_KV_PAIR_GROUPS PE_KV_PAIR_GROUPS_VECTOR
#else
PE_ROPE_KV_SCALAR_SPAN
#define PE_KV_PAIR_GROUPS
#endif
PE_ROPE_KV_KERNEL
#include "clpe_rope_kv_clear.h"
#endif

#if PE_BUILD_F64 && defined(cl_khr_fp64)
#define PE_NAME f64
#define PE_T double
#define PE_R double
#define PE_TWL ulong
#define PE_SINCOS_AT pe_sincos_at128
#define PE_KV_BITS ulong
#define PE_KV_SELF PE_KV_F64
#define PE_W PE_PAIRS
#define PE_KV_PAIR_GROUPS
PE_ROPE_KV_HELPERS
PE_ROPE_KV_SCALAR_SPAN
PE_ROPE_KV_KERNEL
#include "clpe_rope_kv_clear.h"
#endif

/* A token's slot out of [-1, capacity). */
static inline bool pe_kv_slot_out(long slot, ulong capacity)
{
    return slot < -1 || (slot >= 0 && (ulong)slot >= capacity);
}

/* The first entry of a slot's probe sequence: Fibonacci hashing of the
 * 64-bit slot, so consecutive slots (a contiguous or a paged cache fills
 * in runs) spread over the table. */
static inline uint pe_kv_hash(long slot, uint mask)
{
    return (uint)(((ulong)slot * 0x9E3779B97F4A7C15UL) >> 32) & mask;
}

/* One work-group. Each work-item takes every get_local_size(0)-th token
 * and checks its slot's range; the (slot, token) pairs are sorted
 * (bitonic, in local memory; empty places and tokens without a slot sort
 * last) and a token whose slot equals the one before it in that order is
 * refused: it has an earlier token with its slot. */
static inline void pe_kv_check_sort(global const long *all, uint tokens, ulong capacity,
                                    local ulong *sort_keys, uint sort_size,
                                    local uint *bad_count, local uint *first_bad)
{
    uint lid = (uint)get_local_id(0), step = (uint)get_local_size(0);
    for (uint t = lid; t < sort_size; t += step) {
        long slot = t < tokens ? all[t] : -1;
        bool bad = pe_kv_slot_out(slot, capacity);
        sort_keys[t] = slot >= 0 && !bad ? ((ulong)slot << 32) | t : 0xFFFFFFFFFFFFFFFFUL;
        if (bad) {
            atomic_inc(bad_count);
            atomic_min(first_bad, t);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = 2; k <= sort_size; k <<= 1) {
        for (uint j = k >> 1; j > 0; j >>= 1) {
            for (uint t = lid; t < sort_size; t += step) {
                uint other = t ^ j;
                if (other > t) {
                    ulong a = sort_keys[t], b = sort_keys[other];
                    if ((a > b) == ((t & k) == 0)) {
                        sort_keys[t] = b;
                        sort_keys[other] = a;
                    }
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    for (uint t = lid + 1; t < sort_size; t += step) {
        ulong a = sort_keys[t - 1], b = sort_keys[t];
        if (b != 0xFFFFFFFFFFFFFFFFUL && (a >> 32) == (b >> 32)) {
            atomic_inc(bad_count);
            atomic_min(first_bad, (uint)b);
        }
    }
}

/* Token t's slot claimed in the table: an empty entry becomes t's, an
 * entry of t's slot keeps the smaller token (entries never change slot,
 * so the compare against the occupant's slot is stable), another slot's
 * entry sends t on to the next one. At most half the entries fill, so the
 * walk ends. */
static inline void pe_kv_claim(global const long *all, uint t, ulong capacity,
                               global uint *table, uint mask)
{
    long slot = all[t];
    if (slot < 0 || (ulong)slot >= capacity)
        return;
    for (uint h = pe_kv_hash(slot, mask);; h = (h + 1) & mask) {
        uint old = atomic_cmpxchg(&table[h], PE_KV_EMPTY, t);
        if (old == PE_KV_EMPTY)
            return;
        if (all[old] == slot) {
            atomic_min(&table[h], t);
            return;
        }
    }
}

/* Whether token t is refused: its slot out of range, or its slot's entry
 * (on the walk CLAIM took, every entry of it filled) held by an earlier
 * token. */
static inline bool pe_kv_refused(global const long *all, uint t, ulong capacity,
                                 global const uint *table, uint mask)
{
    long slot = all[t];
    if (pe_kv_slot_out(slot, capacity))
        return true;
    if (slot < 0)
        return false;
    for (uint h = pe_kv_hash(slot, mask);; h = (h + 1) & mask) {
        uint owner = table[h];
        if (owner == PE_KV_EMPTY)
            return true; /* unreachable after CLAIM: refuse rather than write */
        if (all[owner] == slot)
            return owner != t;
    }
}

kernel void clpe_kv_check_slots(PE_KV_CHECK_ARGS(PE_PARAM, PE_COMMA))
{
    local uint bad_count, first_bad;
    uint lid = (uint)get_local_id(0), t = (uint)get_global_id(0);
    global const long *all = slots + slots_base;
    if (lid == 0) {
        bad_count = 0;
        first_bad = 0xFFFFFFFFu;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (phase == PE_KV_CHECK_SORT) {
        pe_kv_check_sort(all, tokens, capacity, sort_keys, sort_size, &bad_count, &first_bad);
    } else if (phase == PE_KV_CHECK_CLAIM) {
        if (t == 0) {
            report[0] = 0;
            report[1] = 0xFFFFFFFFu;
        }
        if (t < tokens)
            pe_kv_claim(all, t, capacity, table, table_mask);
    } else if (t < tokens && pe_kv_refused(all, t, capacity, table, table_mask)) {
        atomic_inc(&bad_count);
        atomic_min(&first_bad, t);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0 && phase == PE_KV_CHECK_SORT) {
        report[0] = bad_count;
        report[1] = first_bad;
        if (bad_count)
            atomic_inc(&stats[PE_KV_STAT_REFUSED_CALLS]);
    } else if (lid == 0 && bad_count) {
        /* the group that finds the call's first refusal counts the call */
        if (atomic_add(&report[0], bad_count) == 0)
            atomic_inc(&stats[PE_KV_STAT_REFUSED_CALLS]);
        atomic_min(&report[1], first_bad);
    }
}

#undef PE_KIND_KV_CACHE
#undef PE_KIND_KV_REPORT
#undef PE_KIND_KV_REPORT_OUT
#undef PE_KIND_KV_LOCAL
#undef PE_FN
#undef PE_ROPE_KV_FUNCTIONS
