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
#define PE_KIND_F32 float

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

/* ---- FP8 caches ----
 * An FP8 cache stores x / scale, the float32 quotient correctly rounded
 * (as C and CUDA divide), converted to OCP FP8 with round to nearest even,
 * saturated to the largest finite value (an infinity too), NaN kept as
 * sign | 0x7F (E4M3) or sign | 0x7E (E5M2). OpenCL's float division may be
 * off by 2.5 ulp and a device may flush subnormals, so the quotient is
 * found without either: an estimate from the reciprocal, one fma step that
 * brings it within an ulp, and, where that estimate lies within an ulp of
 * an FP8 rounding boundary (so that the ulp decides the FP8 value), the
 * nearer of the two floats around the quotient, chosen by their
 * remainders, which fma computes exactly while they are normal floats.
 * That holds for |x| in [2^-78, 2^100] with a scale in [2^-20, 2^20] (the
 * fast path: zeros, infinities and NaN take it too, set aside at the end).
 * Elsewhere x and the scale are first split into a significand in [1, 2)
 * and a power of two by integer operations and the power added back in
 * integers: a quotient outside float's normal range is far outside FP8's
 * too (zero, or saturated). */
typedef struct pe_fp8_scale {
    float m, inv; /* the scale's significand in [1, 2) and about 1 / m */
    int e;        /* the scale's power of two */
    float s, sinv; /* the scale itself and about 1 / s */
    int fast;      /* 1: the scale is in [2^-20, 2^20) */
#if PE_PAIRS > 1
    float rcp; /* with a fast scale, 1 / s correctly rounded (the vector shape's) */
#endif
} pe_fp8_scale;

/* A positive finite float's significand bits (23, without the leading
 * one) and power of two, subnormals included. */
static inline uint pe_fp8_split(uint a, int *e)
{
    if (a >= 0x00800000u) {
        *e = (int)(a >> 23) - 127;
        return a & 0x7FFFFFu;
    }
    uint n = 31u - clz(a);
    *e = (int)n - 149;
    return (a << (23u - n)) & 0x7FFFFFu;
}

#if PE_PAIRS > 1
/* 1 / s correctly rounded, for a scale s in [2^-20, 2^20): OpenCL's
 * division may be off by 2.5 ulp, so one Newton step from it (within a
 * little over half an ulp), then the nearest of that float and its two
 * neighbours by their remainders 1 - y s, which fma computes exactly (1 / s
 * is never halfway between two floats). */
static inline float pe_fp8_rcp(float s)
{
    float y = 1.0f / s;
    y = fma(fma(-y, s, 1.0f), y, y);
    float lo = as_float(as_uint(y) - 1u), hi = as_float(as_uint(y) + 1u);
    float r = fabs(fma(-y, s, 1.0f)), rl = fabs(fma(-lo, s, 1.0f)),
          rh = fabs(fma(-hi, s, 1.0f));
    if (rl < r) {
        y = lo;
        r = rl;
    }
    return rh < r ? hi : y;
}
#endif

static inline pe_fp8_scale pe_fp8_scale_of(float scale)
{
    pe_fp8_scale s;
    s.m = as_float(pe_fp8_split(as_uint(scale) & 0x7FFFFFFFu, &s.e) | 0x3F800000u);
    s.inv = 1.0f / s.m;
    s.s = scale;
    s.sinv = 1.0f / scale;
    s.fast = s.e >= -20 && s.e < 20;
#if PE_PAIRS > 1
    s.rcp = s.fast ? pe_fp8_rcp(scale) : 1.0f;
#endif
    return s;
}

/* Whether |x| (its bits a) takes the fast path: zero, [2^-78, 2^100], or
 * not finite. */
#define PE_FP8_FAST(a)                                                                       \
    ((a) == 0u || ((a) >= 0x18800000u && (a) < 0x71800000u) || (a) >= 0x7F800000u)

/* The quotient's rounding to FP8, from its float bits qb: the significand
 * m (24 bits) keeps its top bits down to the FP8 step of its binade (the
 * subnormal step below 2^emin), sh bits dropped, low the dropped bits and
 * mid their half; the code, round to nearest even, before saturation. */
static inline uint pe_fp8_round(uint qb, int mbits, int bias, uint *low, uint *mid)
{
    int emin = 1 - bias, ex = (int)(qb >> 23) - 127;
    uint m = (qb & 0x7FFFFFu) | 0x800000u;
    uint sh = (uint)min(23 - mbits + max(emin - ex, 0), 25); /* past 24: below half the least */
    *low = m & ((1u << sh) - 1u);
    *mid = 1u << (sh - 1u);
    uint v = m >> sh;
    v += (*low > *mid || (*low == *mid && (v & 1u))) ? 1u : 0u;
    /* a normal's exponent field adds to v's leading bit; a carry moves it up */
    return ex >= emin ? ((uint)(ex + bias - 1) << mbits) + v : v;
}

/* x / scale into FP8 of mbits significand bits and that bias, max_code the
 * largest finite code, nan_code the NaN's. */
static inline uchar pe_fp8_put(float x, pe_fp8_scale sc, int mbits, int bias, uint max_code,
                               uint nan_code)
{
    uint u = as_uint(x), a = u & 0x7FFFFFFFu, sign = (u >> 24) & 0x80u;
    if (a > 0x7F800000u)
        return (uchar)(sign | nan_code);
    if (a == 0x7F800000u)
        return (uchar)(sign | max_code);
    if (a == 0u)
        return (uchar)sign;
    if (sc.fast && PE_FP8_FAST(a)) {
        float ax = as_float(a);
        float q = ax * sc.sinv;
        q = fma(fma(-q, sc.s, ax), sc.sinv, q); /* within an ulp of ax / s */
        uint low, mid, code = pe_fp8_round(as_uint(q), mbits, bias, &low, &mid);
        if (low - mid + 1u <= 2u) {
            /* within an ulp of an FP8 rounding boundary: the nearer float
             * decides, by the exact remainders (a quotient of two floats is
             * never halfway between two) */
            float r = fma(-q, sc.s, ax);
            float qn = as_float(as_uint(q) + (r > 0.0f ? 1u : 0xFFFFFFFFu));
            float rn = fma(-qn, sc.s, ax);
            if (fabs(rn) < fabs(r))
                code = pe_fp8_round(as_uint(qn), mbits, bias, &low, &mid);
        }
        return (uchar)(sign | min(code, max_code));
    }
    int e;
    float mx = as_float(pe_fp8_split(a, &e) | 0x3F800000u);
    float q = mx * sc.inv;
    q = fma(fma(-q, sc.m, mx), sc.inv, q); /* within an ulp of mx / m */
    float r = fma(-q, sc.m, mx);           /* exact, as is rn */
    float qn = as_float(as_uint(q) + (r > 0.0f ? 1u : 0xFFFFFFFFu));
    float rn = fma(-qn, sc.m, mx);
    if (r != 0.0f && (fabs(rn) < fabs(r) || (fabs(rn) == fabs(r) && !(as_uint(qn) & 1u))))
        q = qn;
    uint qb = as_uint(q);
    int ex = e - sc.e + (int)(qb >> 23) - 127; /* the quotient's power of two */
    uint m = (qb & 0x7FFFFFu) | 0x800000u;
    int emin = 1 - bias;
    int shift = min(23 - mbits + max(emin - ex, 0), 25); /* past 24: below half the least */
    uint v = m >> shift, rem = m & ((1u << shift) - 1u), mid = 1u << (shift - 1);
    v += (rem > mid || (rem == mid && (v & 1u))) ? 1u : 0u;
    /* a normal's exponent field adds to v's leading bit; a carry moves it up */
    uint code = ex >= emin ? ((uint)(ex + bias - 1) << mbits) + v : v;
    return (uchar)(sign | min(code, max_code));
}

static inline uchar pe_fp8_e4m3(float x, pe_fp8_scale sc)
{
    return pe_fp8_put(x, sc, 3, 7, 0x7Eu, 0x7Fu);
}
static inline uchar pe_fp8_e5m2(float x, pe_fp8_scale sc)
{
    return pe_fp8_put(x, sc, 2, 15, 0x7Bu, 0x7Eu);
}

/* A float rounded to a 16-bit storage type and back: the value rotation
 * stores, which an FP8 cache then quantizes. */
static inline float pe_kv_round_f16(float x)
{
    ushort h; /* a half's bits: a half variable needs cl_khr_fp16 */
    vstore_half(x, 0, (private half *)&h);
    return vload_half(0, (private const half *)&h);
}
static inline float pe_kv_round_bf16(float x) { return pe_bf16_to_float(pe_float_to_bf16(x)); }
static inline float pe_kv_round_f32(float x) { return x; }

#if PE_PAIRS > 1
/* Sixteen values as the bits a 16-bit cache of that name stores. */
static inline ushort16 pe_kv_bits16_f16(float16 v) { return pe_float16_to_half_bits(v); }
static inline ushort16 pe_kv_bits16_bf16(float16 v) { return pe_bf16_16(v); }
static inline ushort16 pe_kv_bits16_f32_to_f16(float16 v) { return pe_float16_to_half_bits(v); }
static inline ushort16 pe_kv_bits16_f32_to_bf16(float16 v) { return pe_bf16_16(v); }

/* The FP8 code of sixteen quotients q >= 0 rounded to nearest even,
 * before saturation (mbits significand bits, that bias). From 2^emin up
 * (emin = 1 - bias) the float's bits rounded at the FP8 step by adding
 * just under half of it plus the lowest kept bit, then shifted: the
 * exponent fields line up, a carry moves the exponent up. Below 2^emin
 * the float sum q + 2^(emin + 23 - mbits), whose ulp is the FP8
 * subnormal step, rounds q to that step in one correctly rounded add, and
 * the sum's bits above the constant's are the code. */
static inline uint16 pe_fp8_code16(float16 q, int mbits, int bias)
{
    uint16 qb = as_uint16(q);
    uint sh = (uint)(23 - mbits);
    uint16 normal = ((qb + (((1u << (sh - 1u)) - 1u)) + ((qb >> sh) & 1u)) >> sh) -
                    ((uint)(127 - bias) << (uint)mbits);
    float magic = as_float((uint)(24 - bias - mbits + 127) << 23);
    uint16 sub = as_uint16(q + magic) - as_uint(magic);
    return select(normal, sub, qb < ((uint)(1 - bias + 127) << 23));
}

/* pe_fp8_put on each of sixteen lanes, for a scale outside [2^-20, 2^20)
 * (rare). Out of line, so that the walk does not set up its calls'
 * arguments on every group whether it takes them or not, and because
 * sixteen lanes of its split at once outgrow some GPU compilers'
 * registers when the vector shape is compiled for them. */
static __attribute__((noinline)) uchar16 pe_fp8_put_each16(float16 x, pe_fp8_scale sc,
                                                           int mbits, int bias, uint max_code,
                                                           uint nan_code)
{
    union {
        float16 v;
        float s[16];
    } in = {x};
    union {
        uchar16 v;
        uchar s[16];
    } out;
    for (int j = 0; j < 16; ++j)
        out.s[j] = pe_fp8_put(in.s[j], sc, mbits, bias, max_code, nan_code);
    return out.v;
}

/* pe_fp8_put on sixteen lanes at once: the vector shape quantizes a group
 * of sixteen as it rotates or copies it. With a scale in [2^-20, 2^20)
 * (the call's, so every lane agrees) the quotient is correctly rounded on
 * every lane by two refinements from the correctly rounded reciprocal (two
 * fmas each: less than testing lanes for nearness to an FP8 rounding
 * boundary), for |x| in pe_fp8_put's fast range. Lanes outside it need no
 * test of their own: below 2^-78 the quotient, whatever the steps make of
 * it, stays far below half the least FP8 subnormal (zero; an x of zero
 * too), from 2^100 up it stays above 2^80 or becomes infinite or NaN,
 * whose bits of either sign give a code past the largest (saturated; an
 * infinite x too). A NaN x is set at the end. Any other scale takes
 * pe_fp8_put on each lane. */
PE_INLINE uchar16 pe_fp8_put16(float16 x, pe_fp8_scale sc, int mbits, int bias,
                                   uint max_code, uint nan_code)
{
    if (!sc.fast)
        return pe_fp8_put_each16(x, sc, mbits, bias, max_code, nan_code);
    uint16 u = as_uint16(x), a = u & 0x7FFFFFFFu, sign = (u >> 24) & 0x80u;
    float16 ax = as_float16(a), s = (float16)sc.s, y = (float16)sc.rcp;
    float16 q = ax * y;
    q = fma(fma(-q, s, ax), y, q); /* one of the two floats around ax / s */
    /* ax / s correctly rounded: from such a q and the correctly rounded
     * reciprocal, the remainder is exact and q + r y rounds to it
     * (Markstein's theorem, while q and r are normal floats) */
    q = fma(fma(-q, s, ax), y, q);
    uint16 code = min(pe_fp8_code16(q, mbits, bias), (uint16)max_code);
    code = select(code, (uint16)nan_code, a > 0x7F800000u);
    return convert_uchar16(sign | code);
}
/* Sixteen FP8 bytes into p: on x86 (PoCL) one 16-byte store at any
 * alignment, where vstore16 of uchar16 became sixteen byte stores; elsewhere
 * one store when aligned to 16 bytes, else vstore16. */
#if PE_X86
typedef uchar16 pe_uchar16_any __attribute__((aligned(1)));
#endif
static inline void pe_fp8_store16(global uchar *p, uchar16 v, bool aligned)
{
#if PE_X86
    (void)aligned;
    *(global pe_uchar16_any *)p = v;
#else
    if (aligned)
        *(global uchar16 *)p = v;
    else
        vstore16(v, 0, p);
#endif
}
PE_INLINE uchar16 pe_fp8_e4m3_16(float16 x, pe_fp8_scale sc)
{
    return pe_fp8_put16(x, sc, 3, 7, 0x7Eu, 0x7Fu);
}
PE_INLINE uchar16 pe_fp8_e5m2_16(float16 x, pe_fp8_scale sc)
{
    return pe_fp8_put16(x, sc, 2, 15, 0x7Bu, 0x7Eu);
}
/* Sixteen values rounded to the storage type and back (pe_kv_round_*). */
static inline float16 pe_kv_round16_f32(float16 x) { return x; }
static inline float16 pe_kv_round16_f16(float16 x)
{
    return pe_half_bits_to_float16(pe_float16_to_half_bits(x));
}
static inline float16 pe_kv_round16_bf16(float16 x)
{
    return as_float16(pe_bf16_round_high16(x) & 0xFFFF0000u);
}
#endif
#endif

#if !PE_OPS_KV_FP8_ONLY
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
#endif /* !PE_OPS_KV_FP8_ONLY */

/* Under float32, half and bfloat16, FP8 caches (E4M3 and E5M2), each
 * value rounded to the storage type, divided by its tensor's scale and
 * converted (pe_fp8_put). */
#if !PE_WIDE && PE_OPS_KV_FP8
#define PE_KV_T uchar
#define PE_KV_SAME 0
#define PE_KV_FP8 1
#define PE_KV_ROUND PE_CAT(pe_kv_round_, PE_NAME)
#define PE_KV_PUT pe_fp8_e4m3
#define PE_KV_PUT16 pe_fp8_e4m3_16
#define PE_KV_ROUND16 PE_CAT(pe_kv_round16_, PE_NAME)
#define PE_KV_NAME PE_CAT(PE_NAME, _to_e4m3)
#include "clpe_rope_kv_body.cl"
#include "clpe_rope_kv_clear.h"

#define PE_KV_T uchar
#define PE_KV_SAME 0
#define PE_KV_FP8 1
#define PE_KV_ROUND PE_CAT(pe_kv_round_, PE_NAME)
#define PE_KV_PUT pe_fp8_e5m2
#define PE_KV_PUT16 pe_fp8_e5m2_16
#define PE_KV_ROUND16 PE_CAT(pe_kv_round16_, PE_NAME)
#define PE_KV_NAME PE_CAT(PE_NAME, _to_e5m2)
#include "clpe_rope_kv_body.cl"
#include "clpe_rope_kv_clear.h"
#endif

#undef PE_W
#include "clpe_rope_type_clear.h"
#undef PE_KIND_KV_CACHE
#undef PE_KIND_KV_REPORT
#undef PE_KIND_KV_REPORT_OUT
#undef PE_KIND_F32
#endif
