/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kv_cost.cl - what one token of rotary into a KV cache costs a GPU, in
 * instructions, against the two passes it replaces: clpe's kernels with
 * one call's path fixed, compiled offline by bench/kv_cost.sh.
 *
 * The call is clpe-bench's rotary comparison: 32 query heads and 8
 * key/value heads of 128 elements, full rotary, half-split pairs,
 * consecutive positions from a start, one sequence, the cache of the
 * storage type, q rotated in place, slots already checked. Each kernel
 * below walks its tokens with the library's own walk (pe_rope_rows_*,
 * pe_kv_walk_*), given the values that choose a path as constants and
 * every other argument (pitches, bases, start, amplitude) as the real
 * kernels get it, at run time. The constant head counts let the compiler
 * unroll the head loops (kv_cost.sh raises its unroll limit), so the
 * token loop's instructions are the ones a work-item issues per token:
 *   cost_rope_T   rotation of q and k in place (clpe_rope_T's walk)
 *   cost_copy_T   k and v of every KV head into the token's cache entry,
 *                 on the same grid (what a reshape-and-cache kernel does)
 *   cost_kv_T     clpe_rope_kv_T's walk: q rotated, k rotated into the
 *                 cache, v copied there
 * Instructions per token = the token loop's instructions x the work-items
 * of a token (64 in float32, 32 where a work-item takes two pairs).
 */
/* One work-item's path: the first of its token's work-items (pairs from
 * 0), which has all its pairs and all its columns, as every one but the
 * last of an odd count does; so every test of a work-item's share is
 * decided when compiling, and the token loop holds the path it runs. */
#define get_global_id(dim) ((size_t)0)
#include "clpe_kernels.cl"

#define COST_Q_HEADS 32u
#define COST_KV_HEADS 8u
#define COST_HEAD_DIM 128u
#define COST_PAIRS (COST_HEAD_DIM / 2)

/* Offsets and pitches at run time, as the real kernels get them, but even
 * (given in units of two elements): the layout for which rotation's host
 * sets pair_words and the KV walk finds words (pe_kv_words), so both move
 * 16-bit pairs as words, as they do on such a call. */
#define COST_EVEN_LAYOUT                                                                       \
    const ulong q_base = 2 * q_base_h, k_base = 2 * k_base_h;                                  \
    const uint q_head_pitch = 2 * q_head_pitch_h, q_row_pitch = 2 * q_row_pitch_h;             \
    const uint k_head_pitch = 2 * k_head_pitch_h, k_row_pitch = 2 * k_row_pitch_h;

/* The rotation: pe_rope_rows with the geometry's path fixed. */
#define COST_ROPE(NAME, T, R, TWL)                                                             \
    kernel void cost_rope_##NAME(global T *q, global T *k, global const ulong *tw_hi,          \
                                 global const TWL *tw_lo, ulong q_base_h, ulong k_base_h,     \
                                 long start, R amplitude, uint q_head_pitch_h,                 \
                                 uint q_row_pitch_h, uint k_head_pitch_h, uint k_row_pitch_h,  \
                                 uint inverse, uint rows, uint rows_per_item)                  \
    {                                                                                          \
        COST_EVEN_LAYOUT                                                                       \
        const pe_rope_geometry g = {                                                           \
            .start = start, .q_heads = COST_Q_HEADS, .q_head_pitch = q_head_pitch,             \
            .q_row_pitch = q_row_pitch, .k_heads = COST_KV_HEADS,                              \
            .k_head_pitch = k_head_pitch, .k_row_pitch = k_row_pitch,                          \
            .n_pairs = COST_PAIRS, .partner = COST_PAIRS, .stride = 1, .pair_words = 1,     \
            .inverse = inverse,                                                               \
            .seq = rows, .rows = rows, .batch = 1, .rows_per_item = rows_per_item,             \
            .pos_source = PE_POS_START};                                                       \
        pe_rope_rows_##NAME(q + q_base, k + k_base, 0, tw_hi, tw_lo, amplitude, &g);           \
    }

/* The copy: columns [2 i0, 2 i0 + 2 pairs) of k and v, bit for bit. */
#define COST_COPY(NAME, BITS, PAIRS)                                                           \
    kernel void cost_copy_##NAME(global const BITS *k, global const BITS *v,                   \
                                 global BITS *key_cache, global BITS *value_cache,             \
                                 global const long *entries, ulong k_base, ulong v_base,       \
                                 ulong key_offset, ulong value_offset, ulong cache_head_pitch, \
                                 uint k_head_pitch, uint k_row_pitch, uint v_head_pitch,       \
                                 uint v_row_pitch, uint rows, uint rows_per_item)              \
    {                                                                                          \
        uint c0 = (uint)get_global_id(0) * 2 * (PAIRS);                                        \
        uint s_begin = (uint)get_global_id(1) * rows_per_item;                                 \
        if (c0 >= COST_HEAD_DIM || s_begin >= rows)                                            \
            return;                                                                            \
        uint s_stop = s_begin + min(rows_per_item, rows - s_begin);                            \
        for (uint s = s_begin; s < s_stop; ++s) {                                              \
            long entry = entries[s];                                                           \
            if (entry < 0)                                                                     \
                continue;                                                                      \
            global const BITS *krow = k + (k_base + s * k_row_pitch) + c0;                     \
            global const BITS *vrow = v + (v_base + s * v_row_pitch) + c0;                     \
            global BITS *kdst = key_cache + (key_offset + (ulong)entry) + c0;                  \
            global BITS *vdst = value_cache + (value_offset + (ulong)entry) + c0;              \
            for (uint h = 0; h < COST_KV_HEADS; ++h)                                           \
                for (uint j = 0; j < 2 * (PAIRS); ++j) {                                       \
                    kdst[h * cache_head_pitch + j] = krow[h * k_head_pitch + j];               \
                    vdst[h * cache_head_pitch + j] = vrow[h * v_head_pitch + j];               \
                }                                                                              \
        }                                                                                      \
    }

/* The fused call: pe_kv_walk with the path fixed (q in place, slots
 * checked before, positions from a start); every argument of the walk by
 * its name, so none can be given in the wrong place. */
#define COST_KV(NAME, T, R, TWL)                                                               \
    kernel void cost_kv_##NAME(                                                                \
        global T *q, global const T *k, global const T *v, global T *key_cache,                \
        global T *value_cache, global const long *entries, global const ulong *tw_hi,          \
        global const TWL *tw_lo, ulong q_base_h, ulong k_base_h, ulong v_base_h,               \
        ulong entries_base, long start, R amplitude, ulong key_offset_h, ulong value_offset_h, \
        ulong cache_head_pitch_h, uint q_head_pitch_h, uint q_row_pitch_h,                     \
        uint k_head_pitch_h, uint k_row_pitch_h, uint v_head_pitch_h, uint v_row_pitch_h,      \
        uint inverse, uint rows, uint rows_per_item)                                           \
    {                                                                                          \
        COST_EVEN_LAYOUT                                                                       \
        const ulong v_base = 2 * v_base_h, key_offset = 2 * key_offset_h;                      \
        const ulong value_offset = 2 * value_offset_h;                                         \
        const ulong cache_head_pitch = 2 * cache_head_pitch_h;                                 \
        const uint v_head_pitch = 2 * v_head_pitch_h, v_row_pitch = 2 * v_row_pitch_h;         \
        global T *q_out = 0;                                                                   \
        global const long *positions = 0, *slots = 0;                                          \
        global const uint *report = 0;                                                         \
        global uint *report_out = 0, *stats = 0;                                               \
        const ulong q_out_base = 0, positions_base = 0, call_slots_base = 0, slots_base = 0;   \
        const ulong capacity = 0, block_size = 0, slot_pitch = 0, block_pitch = 0;             \
        const ulong stream_pitch = 0;                                                          \
        const uint entry_align = 2, inline_check = 0, call_tokens = 0, first = 0;              \
        const uint q_heads = COST_Q_HEADS, kv_heads = COST_KV_HEADS, head_dim = COST_HEAD_DIM; \
        const uint q_out_head_pitch = 0, q_out_row_pitch = 0;                                  \
        const uint n_pairs = COST_PAIRS, partner = COST_PAIRS, stride = 1;                     \
        const uint pos_source = PE_POS_START, token_pitch = 0, end0 = 0, end1 = 0, end2 = 0;   \
        pe_kv_walk_##NAME(PE_ROPE_KV_ARGS(PE_ARG_NAME, PE_COMMA), false);                      \
    }

#define COST_TWL32 uint
COST_ROPE(f32, float, float, COST_TWL32)
COST_COPY(f32, uint, PE_PAIRS)
COST_KV(f32, float, float, COST_TWL32)
COST_ROPE(f16, half, float, COST_TWL32)
COST_COPY(f16, ushort, PE_PAIRS_ROPE16)
COST_KV(f16, half, float, COST_TWL32)
COST_ROPE(bf16, ushort, float, COST_TWL32)
COST_COPY(bf16, ushort, PE_PAIRS_ROPE16)
COST_KV(bf16, ushort, float, COST_TWL32)
