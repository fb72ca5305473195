/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_device.h - clpe's exact sine and cosine as OpenCL C functions, for
 * kernels of your own: an attention kernel that rotates q and k as it loads
 * them, a GEMM epilogue, a fused KV-cache write; and the reads of an FP8
 * KV cache clpe wrote (clpe_fp8_e4m3_to_float, clpe_fp8_e5m2_to_float).
 * OpenCL C 1.2 or later, any conformant device.
 *
 * From an encoder's or a rotary object's tuning words (a buffer that
 * clpe_encoder_device_words / clpe_rope_device_words of clpe.h make, in the
 * layout described there and below), a position (int64) and a pair index,
 * these functions return the same float bits as clpe's own kernels: they
 * are the same arithmetic, written once in clpe_phase.h (the library's
 * kernels and its host emulation include that same text).
 *
 * Put it into your program either way:
 *   - an #include of clpe_device.h, with the folder it is installed in (the
 *     one that holds clpe.h) in the build options: -I <prefix>/include;
 *   - or clpe_device_source(), which returns this text, as the first string
 *     of clCreateProgramWithSource, before your own source.
 * Add the build options the *_device_words call returns (they check that
 * this header and the library agree on the layout). Never build with
 * -cl-fast-relaxed-math, -cl-unsafe-math-optimizations or -cl-mad-enable:
 * they allow the compiler to change the arithmetic, and the bits with it.
 *
 * Names beginning with pe_, PE_, clpe_ and CLPE_ are this header's.
 *
 * Floating-point contraction (a * b + c fused into one fma) is switched off
 * from here to the end of the program source, as in clpe's own kernels: the
 * results must be exactly the operations written. Put
 * `#pragma OPENCL FP_CONTRACT ON` after the #include if your own code wants
 * OpenCL's default back; the functions below keep their exact arithmetic.
 *
 * The words buffer, an array of ulong (layout 1, stable within clpe 1.x):
 *   [0]             1, the layout
 *   [1]             n: the pairs (an encoder's d/2, or (d+1)/2 with an odd
 *                   d's half pair; a rotary object's rotary_dim/2)
 *   [2]             flags, CLPE_WORDS_*:
 *                     WIDE         128-bit words, float64 arithmetic (f64)
 *                     NARROW       an encoder stored in 16 bits (f16, bf16):
 *                                  its values come from clpe_sincos's
 *                                  16-bit variant
 *                     INTERLEAVED  rotary pairs are elements (2i, 2i+1) of a
 *                                  head; otherwise (i, i + n), half-split
 *                     ROTARY       the words are a rotary object's
 *   [3]             the amplitude m by which rotary multiplies cos and sin:
 *                   its float bits in the low 32 bits, or its double bits
 *                   when WIDE; 1 for an encoder
 *   [4 + 2i]        pair i's tuning word F_i = round(2^96 w_i / 2pi) (2^128
 *   [5 + 2i]        when WIDE): its top 64 bits, then the rest (32 bits, in
 *                   the low half; 64 bits when WIDE)
 */
#ifndef CLPE_DEVICE_H
#define CLPE_DEVICE_H

/* The layout of the words buffer this header reads. The build options from
 * clpe_*_device_words define CLPE_DEVICE_LAYOUT as the library's. */
#define CLPE_DEVICE_WORDS_LAYOUT 1
#if defined(CLPE_DEVICE_LAYOUT) && CLPE_DEVICE_LAYOUT != CLPE_DEVICE_WORDS_LAYOUT
#error "clpe_device.h: this header and the clpe library differ in the layout of the words"
#endif
#ifdef __FAST_RELAXED_MATH__
#error "clpe_device.h: built with -cl-fast-relaxed-math, which changes the arithmetic and its bits"
#endif

#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#include "clpe_phase.h"

#define CLPE_WORDS_WIDE 1u
#define CLPE_WORDS_NARROW 2u
#define CLPE_WORDS_INTERLEAVED 4u
#define CLPE_WORDS_ROTARY 8u
/* ulongs before pair 0's word */
#define CLPE_WORDS_HEADER 4u

/* The pairs the words hold, and their flags. */
static inline uint clpe_words_pairs(global const ulong *words) { return (uint)words[1]; }
static inline uint clpe_words_flags(global const ulong *words) { return (uint)words[2]; }

/* The phase of pair i at position p, in units of 2^-64 turn (exact for
 * every int64 position). */
static inline ulong clpe_phase(global const ulong *words, long p, uint i)
{
    global const ulong *w = words + CLPE_WORDS_HEADER + 2 * i;
    if (clpe_words_flags(words) & CLPE_WORDS_WIDE)
        return pe_phase128(p, w[0], w[1]);
    return pe_phase(p, w[0], (uint)w[1]);
}

/* sin and cos of pair i at position p, as clpe computes them before storing
 * them: the float32 values of a float32, float16 or bfloat16 encoder's
 * table (round them to the storage type as clpe does: clpe_round_f16,
 * clpe_round_bf16), and the unscaled angle of a rotary object's pair. */
static inline void clpe_sincos(global const ulong *words, long p, uint i, float *s, float *c)
{
    ulong phase = clpe_phase(words, p, i);
    if (clpe_words_flags(words) & CLPE_WORDS_NARROW)
        pe_sincos_narrow(phase, s, c);
    else
        pe_sincos(phase, s, c);
}

/* A rotary object's cos and sin of pair i at position p, times its
 * amplitude m: c = cos * m, s = sin * m, each rounded, as clpe's rotary
 * kernels apply them (negate s for the inverse rotation). */
static inline void clpe_rope_cos_sin(global const ulong *words, long p, uint i, float *c,
                                     float *s)
{
    float m = as_float((uint)words[3]);
    float sv, cv;
    pe_sincos(clpe_phase(words, p, i), &sv, &cv);
    *c = cv * m;
    *s = sv * m;
}

/* (a, b) rotated by (c, s) as clpe rotates a pair: a c - b s and a s + b c,
 * one product and one fma each. */
static inline float2 clpe_rotate(float a, float b, float c, float s)
{
    return (float2)(pe_rotate_a_float(a, b, c, s), pe_rotate_b_float(a, b, c, s));
}

/* Pair i of a head rotated to position p: the two elements (a, b) at
 * clpe_rope_slot_a / clpe_rope_slot_b, as clpe_enqueue_rope leaves them
 * (before they are rounded to a 16-bit storage type). */
static inline float2 clpe_rope_pair(global const ulong *words, long p, uint i, float a, float b)
{
    float c, s;
    clpe_rope_cos_sin(words, p, i, &c, &s);
    return clpe_rotate(a, b, c, s);
}

/* Where pair i sits in a head: element a and its partner b. Elements from
 * 2n on (partial rotary) are not rotated. */
static inline uint clpe_rope_slot_a(global const ulong *words, uint i)
{
    return (clpe_words_flags(words) & CLPE_WORDS_INTERLEAVED) ? 2 * i : i;
}
static inline uint clpe_rope_slot_b(global const ulong *words, uint i)
{
    return (clpe_words_flags(words) & CLPE_WORDS_INTERLEAVED) ? 2 * i + 1
                                                              : i + clpe_words_pairs(words);
}

/* A float rounded to float16 and back, and to bfloat16 and back, to nearest
 * even, as clpe stores those types (NaN stays NaN). */
static inline float clpe_round_f16(float v)
{
    ushort bits; /* a half's bits: half variables need cl_khr_fp16 */
    vstore_half_rte(v, 0, (private half *)&bits);
    return vload_half(0, (private const half *)&bits);
}
static inline float clpe_round_bf16(float v) { return pe_bf16_to_float(pe_float_to_bf16(v)); }

/* An FP8 KV cache's byte (clpe_kv_cache of dtype CLPE_DTYPE_FP8_E4M3 or
 * _E5M2) as a float: clpe_fp8_*_value is the byte's own value (exact;
 * NaN for a NaN byte, and E5M2's infinities), clpe_fp8_*_to_float that
 * value times the tensor's scale (the key_scale or value_scale the cache
 * was written with) in float32, as vLLM's attention reads its fp8 cache. */
static inline float clpe_fp8_e4m3_value(uchar b)
{
    uint sign = (uint)(b & 0x80u) << 24, e = (b >> 3) & 0xFu, m = b & 7u;
    if ((b & 0x7Fu) == 0x7Fu)
        return as_float(sign | 0x7FC00000u);
    /* a subnormal: m units of 2^-9, a normal float32 either way */
    float v = e ? as_float(((e + 120u) << 23) | (m << 20)) : (float)m * 0x1p-9f;
    return as_float(as_uint(v) | sign);
}
static inline float clpe_fp8_e5m2_value(uchar b)
{
    uint sign = (uint)(b & 0x80u) << 24, e = (b >> 2) & 0x1Fu, m = b & 3u;
    if (e == 31u)
        return as_float(sign | (m ? 0x7FC00000u : 0x7F800000u));
    float v = e ? as_float(((e + 112u) << 23) | (m << 21)) : (float)m * 0x1p-16f;
    return as_float(as_uint(v) | sign);
}
static inline float clpe_fp8_e4m3_to_float(uchar b, float scale)
{
    return clpe_fp8_e4m3_value(b) * scale;
}
static inline float clpe_fp8_e5m2_to_float(uchar b, float scale)
{
    return clpe_fp8_e5m2_value(b) * scale;
}

#ifdef cl_khr_fp64
/* The same for float64 objects (CLPE_WORDS_WIDE). */
static inline void clpe_sincos_f64(global const ulong *words, long p, uint i, double *s,
                                   double *c)
{
    pe_sincos_f64(clpe_phase(words, p, i), s, c);
}

static inline void clpe_rope_cos_sin_f64(global const ulong *words, long p, uint i, double *c,
                                         double *s)
{
    double m = as_double(words[3]);
    double sv, cv;
    pe_sincos_f64(clpe_phase(words, p, i), &sv, &cv);
    *c = cv * m;
    *s = sv * m;
}

static inline double2 clpe_rotate_f64(double a, double b, double c, double s)
{
    return (double2)(pe_rotate_a_double(a, b, c, s), pe_rotate_b_double(a, b, c, s));
}

static inline double2 clpe_rope_pair_f64(global const ulong *words, long p, uint i, double a,
                                         double b)
{
    double c, s;
    clpe_rope_cos_sin_f64(words, p, i, &c, &s);
    return clpe_rotate_f64(a, b, c, s);
}
#endif

#endif /* CLPE_DEVICE_H */
