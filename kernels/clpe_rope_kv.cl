/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope_kv.cl - rotary into a KV cache for one storage type: q rotated
 * in place or into q_out, k rotated and v copied into a contiguous or
 * paged cache at each token's slot, in one pass over the projection
 * output (clpe_rope_kv_<cache>). Included by clpe_kernels.cl once per
 * storage type, after clpe_rope.cl, with the macros it lists there; the
 * body (clpe_rope_kv_body.cl) is compiled once per cache type this storage
 * type writes: its own, and for float32 also half and bfloat16, so the
 * cache's type is fixed when the program is built, never tested per
 * element. clpe_rope_kv_check.cl's check runs first and leaves its verdict
 * in the report.
 *
 * The arithmetic is clpe_rope.cl's, pair by pair: c = cos * m, s = sin * m
 * (s negated for the inverse), each rounded; a' = fma(a, c, -(b * s)),
 * b' = fma(a, s, b * c), rounded once to the storage type, and for the
 * cache from there to the cache's type: the bits of clpe_rope followed by
 * a copy.
 */
#if PE_OPS_ROPE
#define PE_W PE_ROPE_PAIRS
#include "clpe_rope_type.h"
#define PE_KIND_KV_CACHE global PE_KV_T *
#define PE_KIND_KV_REPORT global const uint *
#define PE_KIND_KV_REPORT_OUT global uint *

#ifndef PE_KV_BITS_TYPES
#define PE_KV_BITS_TYPES
/* An unsigned type of each storage type's size, and a vector of PE_GL of
 * them: copies move bits. */
typedef uint pe_bits_f32;
typedef ushort pe_bits_f16;
typedef ushort pe_bits_bf16;
typedef ulong pe_bits_f64;
typedef uint16 pe_bitsv_f32;
typedef ushort16 pe_bitsv_f16;
typedef ushort16 pe_bitsv_bf16;
typedef ulong8 pe_bitsv_f64;
#define PE_ARG_NAME(NAME, KIND, name) name

/* A token's slot out of [-1, capacity). */
static inline bool pe_kv_slot_out(long slot, ulong capacity)
{
    return slot < -1 || (slot >= 0 && (ulong)slot >= capacity);
}

/* Token t's cache entry, in elements from slot 0 (-1: none, or a slot
 * out of range: the call is refused then). */
static inline long pe_kv_entry(long slot, ulong capacity, ulong block_size, ulong slot_pitch,
                               ulong block_pitch)
{
    if (slot < 0 || (ulong)slot >= capacity)
        return -1;
    ulong block = (ulong)slot / block_size, within = (ulong)slot % block_size;
    return (long)(block * block_pitch + within * slot_pitch);
}

/* The verdict on a small call's slots, taken by every work-item of the
 * rotation itself (INLINE_CHECK): how many tokens are refused (a slot out
 * of range, or one an earlier token has) and the first of them. Each slot
 * is compared with every earlier one, n^2 / 2 compares, which is less than
 * a launch of its own up to PE_KV_INLINE_TOKENS_MAX tokens. */
static inline void pe_kv_check_inline(global const long *all, uint tokens, ulong capacity,
                                      uint *refused, uint *first)
{
    *refused = 0;
    *first = 0xFFFFFFFFu;
    for (uint t = 0; t < tokens; ++t) {
        long slot = all[t];
        bool bad = pe_kv_slot_out(slot, capacity);
        for (uint u = 0; u < t && !bad && slot >= 0; ++u)
            bad = all[u] == slot;
        if (bad) {
            *refused += 1;
            *first = min(*first, t);
        }
    }
}
/* A store of a whole aligned vector into the cache, which nothing reads
 * soon: on x86 (PoCL) a non-temporal store, so the line is not first read
 * for ownership (the copy a fused call replaces, memcpy, streams its
 * stores too; at 32,768 tokens of 32 + 8 + 8 heads of 128 float32 that
 * read was the difference). PE_KV_STREAMED orders them before the
 * work-item ends. Elsewhere a plain store. */
#if PE_X86
#define PE_KV_STREAM(value, pointer) __builtin_nontemporal_store((value), (pointer))
#define PE_KV_STREAMED() __builtin_ia32_sfence()
#else
#define PE_KV_STREAM(value, pointer) (*(pointer) = (value))
#define PE_KV_STREAMED()
#endif
#if PE_PAIRS > 1
/* Sixteen values as the bits a 16-bit cache of that name stores. */
static inline ushort16 pe_kv_bits16_f16(float16 v) { return pe_float16_to_half_bits(v); }
static inline ushort16 pe_kv_bits16_bf16(float16 v) { return pe_bf16_16(v); }
static inline ushort16 pe_kv_bits16_f32_to_f16(float16 v) { return pe_float16_to_half_bits(v); }
static inline ushort16 pe_kv_bits16_f32_to_bf16(float16 v) { return pe_bf16_16(v); }
#endif
#endif

/* The cache of the storage type itself. */
#define PE_KV_NAME PE_NAME
#define PE_KV_T PE_T
#define PE_KV_SAME 1
#include "clpe_rope_kv_body.cl"
#include "clpe_rope_kv_clear.h"

/* Under float32 (neither 128-bit words nor a 16-bit type), half and
 * bfloat16 caches too, round to nearest even. */
#if !PE_WIDE && !PE_NARROW
#define PE_KV_NAME f32_to_f16
#define PE_KV_T half
#define PE_KV_SAME 0
#define PE_KV_PUT pe_store_f16
#define PE_KV_PUT16 pe_store16_f16
#include "clpe_rope_kv_body.cl"
#include "clpe_rope_kv_clear.h"

#define PE_KV_NAME f32_to_bf16
#define PE_KV_T ushort
#define PE_KV_SAME 0
#define PE_KV_PUT pe_store_bf16
#define PE_KV_PUT16 pe_store16_bf16
#include "clpe_rope_kv_body.cl"
#include "clpe_rope_kv_clear.h"
#endif

#undef PE_W
#include "clpe_rope_type_clear.h"
#undef PE_KIND_KV_CACHE
#undef PE_KIND_KV_REPORT
#undef PE_KIND_KV_REPORT_OUT
#endif
