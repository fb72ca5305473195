/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope_kv_interface.h - what the host library and the rotary-into-cache
 * kernels (clpe_rope_kv.cl) agree on: their argument lists, written once
 * as clpe_interface.h writes the others. Included by both, after
 * clpe_interface.h (PE_COMMA).
 */
#ifndef CLPE_ROPE_KV_INTERFACE_H
#define CLPE_ROPE_KV_INTERFACE_H

/*
 * The arguments of clpe_rope_kv_<cache> (clpe_rope_kv_f32, ..., and
 * clpe_rope_kv_f32_to_f16 / _to_bf16 for half and bfloat16 caches under
 * float32): tokens [rows] of q, k and v ([rows, heads, head_dim] through
 * head and row pitches, 32-bit within a launch); q rotated into q_out (q
 * itself when q_out is NULL; q NULL: none), k rotated and v copied into
 * the key and value caches at each token's slot (-1: not written). The
 * slot check leaves each token's cache entry in entries, in elements of
 * the cache's type from slot 0 (-1: none): entry (slot, head h, element
 * j) is at offset + entries[t] + h * head_pitch + j, the entries offset
 * by (slot / block_size) * block_pitch + (slot % block_size) * slot_pitch,
 * 64-bit, computed once per token there rather than in every work-item
 * of the token here. Dimension 0 counts
 * columns in twos: a work-item of PE_W pairs rotates those of its pairs
 * below n_pairs and copies the columns [2 i0, 2 i_end) of v and, past
 * rotary_dim, of k (and of q into q_out). Nothing is written when
 * report[0] (written by clpe_kv_check_slots) is not zero. Work-item (0, 0)
 * of the first launch passes the report on into report_out and counts a
 * refused call in stats[PE_KV_STAT_REFUSED_CALLS]: every write the caller
 * sees is this kernel's. With inline_check (small calls: at most
 * PE_KV_INLINE_TOKENS_MAX tokens) no check runs before: every work-item
 * checks all call_tokens slots itself (pe_kv_check_inline) and finds its
 * tokens' entries from their slots, one command in all, as rotation is.
 */
#define PE_ROPE_KV_ARGS(X, SEP)                                                          \
    X(Q, OUT, q) SEP()                          /* NULL: no queries */                   \
    X(Q_OUT, OUT, q_out) SEP()                  /* NULL: q in place */                   \
    X(K, IN, k) SEP()                                                                    \
    X(V, IN, v) SEP()                                                                    \
    X(KEY_CACHE, KV_CACHE, key_cache) SEP()                                              \
    X(VALUE_CACHE, KV_CACHE, value_cache) SEP()                                          \
    X(POSITIONS, POS, positions) SEP()                                                   \
    X(ENTRIES, POS, entries) SEP()              /* clpe_kv_check_slots's */              \
    X(REPORT, KV_REPORT, report) SEP()          /* the check's, the object's own */      \
    X(REPORT_OUT, KV_REPORT_OUT, report_out) SEP() /* the caller's, or NULL */          \
    X(STATS, KV_REPORT_OUT, stats) SEP()        /* the object's counters */              \
    X(TW_HI, TWH, tw_hi) SEP()                                                           \
    X(TW_LO, TWL, tw_lo) SEP()                                                           \
    X(Q_BASE, U64, q_base) SEP()                /* elements to this launch's first token */ \
    X(Q_OUT_BASE, U64, q_out_base) SEP()                                                 \
    X(K_BASE, U64, k_base) SEP()                                                         \
    X(V_BASE, U64, v_base) SEP()                                                         \
    X(POSITIONS_BASE, U64, positions_base) SEP()                                         \
    X(ENTRIES_BASE, U64, entries_base) SEP()                                             \
    X(START, I64, start) SEP()                  /* as for the rotary kernels */          \
    X(AMPLITUDE, SCALE, amplitude) SEP()                                                 \
    X(KEY_OFFSET, U64, key_offset) SEP()        /* cache elements to slot 0 */           \
    X(VALUE_OFFSET, U64, value_offset) SEP()                                             \
    X(CACHE_HEAD_PITCH, U64, cache_head_pitch) SEP()                                     \
    X(ENTRY_ALIGN, U32, entry_align) SEP()      /* a power of two dividing every entry */ \
    X(INLINE_CHECK, U32, inline_check) SEP()    /* 1: no check before; see below */      \
    X(SLOTS, POS, slots) SEP()                  /* the call's slots ... */               \
    X(CALL_SLOTS_BASE, U64, call_slots_base) SEP() /* ... from this element */          \
    X(SLOTS_BASE, U64, slots_base) SEP()        /* this launch's first token's */        \
    X(CALL_TOKENS, U32, call_tokens) SEP()                                               \
    X(CAPACITY, U64, capacity) SEP()                                                     \
    X(BLOCK_SIZE, U64, block_size) SEP()                                                 \
    X(SLOT_PITCH, U64, slot_pitch) SEP()                                                 \
    X(BLOCK_PITCH, U64, block_pitch) SEP()                                               \
    X(Q_HEADS, U32, q_heads) SEP()                                                       \
    X(Q_HEAD_PITCH, U32, q_head_pitch) SEP()                                             \
    X(Q_ROW_PITCH, U32, q_row_pitch) SEP()                                               \
    X(Q_OUT_HEAD_PITCH, U32, q_out_head_pitch) SEP()                                     \
    X(Q_OUT_ROW_PITCH, U32, q_out_row_pitch) SEP()                                       \
    X(KV_HEADS, U32, kv_heads) SEP()                                                     \
    X(K_HEAD_PITCH, U32, k_head_pitch) SEP()                                             \
    X(K_ROW_PITCH, U32, k_row_pitch) SEP()                                               \
    X(V_HEAD_PITCH, U32, v_head_pitch) SEP()                                             \
    X(V_ROW_PITCH, U32, v_row_pitch) SEP()                                               \
    X(HEAD_DIM, U32, head_dim) SEP()                                                     \
    X(N_PAIRS, U32, n_pairs) SEP()              /* rotary_dim / 2 */                     \
    X(PARTNER, U32, partner) SEP()                                                       \
    X(STRIDE, U32, stride) SEP()                                                         \
    X(INVERSE, U32, inverse) SEP()                                                       \
    X(ROWS, U32, rows) SEP()                                                             \
    X(FIRST, U32, first) SEP()                  /* 1: the launch of token 0 */           \
    X(ROWS_PER_ITEM, U32, rows_per_item) SEP()                                           \
    PE_POSITION_SOURCE_ARGS(X, SEP)

#define PE_ROPE_KV_ENUM_ENTRY(NAME, KIND, name) PE_ROPE_KV_ARG_##NAME
enum pe_rope_kv_arg { PE_ROPE_KV_ARGS(PE_ROPE_KV_ENUM_ENTRY, PE_COMMA), PE_ROPE_KV_ARG_COUNT };

/* clpe_kv_check_slots: finds the tokens whose slot is out of [-1,
 * capacity) or equals an earlier token's, and writes report[0] (how many)
 * and report[1] (the first of them, or 0xFFFFFFFF) into the object's own
 * buffer, which nothing outside the library sees (the rotation passes the
 * report on), so a call whose rotation cannot be enqueued after its check
 * still writes nothing the caller sees. Its phase says how:
 *  - PE_KV_CHECK_SORT: one work-group sorts the (slot, token) pairs in
 *    sort_keys, local memory of sort_size ulongs (a power of two >=
 *    tokens; capacity <= 2^32), the whole check in one launch;
 *  - PE_KV_CHECK_CLAIM, then PE_KV_CHECK_VERIFY, one token per
 *    work-item: each token with a slot claims it in table, an open-
 *    addressing hash table of table_mask + 1 uints (2 * tokens or more,
 *    every entry PE_KV_EMPTY before CLAIM), each entry ending with the
 *    first token of its slot; VERIFY refuses every token that is not the
 *    first of its slot, and every slot out of range. CLAIM also resets
 *    the report. Linear in tokens, whatever the local memory.
 * Every phase but VERIFY also writes entries[t], token t's cache entry
 * (see PE_ROPE_KV_ARGS), for the rotation. */
#define PE_KV_CHECK_SORT 0
#define PE_KV_CHECK_CLAIM 1
#define PE_KV_CHECK_VERIFY 2
#define PE_KV_EMPTY 0xFFFFFFFFu
#define PE_KV_STAT_REFUSED_CALLS 2
#define PE_KV_INLINE_TOKENS_MAX 32
#define PE_KV_CHECK_ARGS(X, SEP)                                                         \
    X(SLOTS, POS, slots) SEP()                                                           \
    X(SLOTS_BASE, U64, slots_base) SEP()                                                 \
    X(TOKENS, U32, tokens) SEP()                                                         \
    X(CAPACITY, U64, capacity) SEP()            /* num_blocks * block_size */            \
    X(REPORT_OUT, KV_REPORT_OUT, report) SEP()                                           \
    X(PHASE, U32, phase) SEP()                                                           \
    X(SORT_KEYS, KV_LOCAL, sort_keys) SEP()                                              \
    X(SORT_SIZE, U32, sort_size) SEP()                                                   \
    X(TABLE, KV_REPORT_OUT, table) SEP()                                                 \
    X(TABLE_MASK, U32, table_mask) SEP()                                                 \
    X(ENTRIES, KV_ENTRIES_OUT, entries) SEP()                                            \
    X(BLOCK_SIZE, U64, block_size) SEP()                                                 \
    X(SLOT_PITCH, U64, slot_pitch) SEP()                                                 \
    X(BLOCK_PITCH, U64, block_pitch)

#define PE_KV_CHECK_ENUM_ENTRY(NAME, KIND, name) PE_KV_CHECK_ARG_##NAME
enum pe_kv_check_arg { PE_KV_CHECK_ARGS(PE_KV_CHECK_ENUM_ENTRY, PE_COMMA), PE_KV_CHECK_ARG_COUNT };

#endif /* CLPE_ROPE_KV_INTERFACE_H */
