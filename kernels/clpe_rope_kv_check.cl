/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope_kv_check.cl - the check of a rotary-into-cache call's slots
 * (clpe_kv_check_slots, clpe_rope_kv_interface.h says how), which runs
 * before the rotation (clpe_rope_kv.cl) and tells it, through the report,
 * whether to write anything. Included by clpe_kernels.cl once, in rotary
 * builds, after clpe_rope_kv.cl (pe_kv_slot_out, pe_kv_entry).
 */

#define PE_KIND_KV_REPORT_OUT global uint *
#define PE_KIND_KV_LOCAL local ulong *
#define PE_KIND_KV_ENTRIES_OUT global long *

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
    uint h = pe_kv_hash(slot, mask), old = atomic_cmpxchg(&table[h], PE_KV_EMPTY, t);
    while (old != PE_KV_EMPTY && all[old] != slot) {
        h = (h + 1) & mask;
        old = atomic_cmpxchg(&table[h], PE_KV_EMPTY, t);
    }
    if (old != PE_KV_EMPTY)
        atomic_min(&table[h], t);
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
    /* one exit, after the loop (an exit from inside it came out wrong for
     * some lanes on Rusticl's llvmpipe); an empty entry is unreachable
     * after CLAIM, and refuses rather than writes */
    uint h = pe_kv_hash(slot, mask), owner = table[h];
    while (owner != PE_KV_EMPTY && all[owner] != slot) {
        h = (h + 1) & mask;
        owner = table[h];
    }
    return owner != t;
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
    if (phase != PE_KV_CHECK_VERIFY)
        for (uint u = t; u < tokens; u += (uint)get_global_size(0))
            entries[u] = pe_kv_entry(all[u], capacity, block_size, slot_pitch, block_pitch);
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
    } else if (lid == 0 && bad_count) {
        atomic_add(&report[0], bad_count);
        atomic_min(&report[1], first_bad);
    }
}

#undef PE_KIND_KV_REPORT_OUT
#undef PE_KIND_KV_LOCAL
#undef PE_KIND_KV_ENTRIES_OUT
