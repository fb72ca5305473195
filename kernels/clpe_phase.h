/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_phase.h - the arithmetic of one position encoding value, written once
 * for two compilers: the OpenCL C compiler of every device (through
 * clpe_kernels.cl) and the host C compiler (through host/sinusoid/emulate.c). Because
 * both run exactly these integer operations, correctly rounded conversions
 * and fma, in this order, with contraction off, the host predicts every bit
 * a conformant device writes.
 *
 * Fixed-point phase (see the project's design notes): pair i has a 96-bit
 * tuning word F_i = round(2^96 * w_i / 2pi), kept as (hi: 64 bits, lo: 32
 * bits). The phase of position p, in units of 2^-64 turn, is the top 64 bits
 * of (p * F_i) mod 2^96, with p taken as a 96-bit two's complement number.
 * Whole turns fall off the top: the range reduction is exact for every
 * position. The same value is reached by adding F_i to a 96-bit accumulator
 * once per position (the odometer), which the kernels use between rows.
 * float64 outputs use 128-bit words the same way (pe_phase128).
 */
#ifndef CLPE_PHASE_H
#define CLPE_PHASE_H

/* OpenCL C compilers define one of these (a standalone clang -x cl only the
 * first); the host compiler neither. */
#if defined(__OPENCL_C_VERSION__) || defined(__OPENCL_VERSION__)
#define PE_OPENCL 1
#endif

#ifdef PE_OPENCL
typedef ulong pe_u64;
typedef uint pe_u32;
typedef long pe_i64;
typedef int pe_i32;
#define PE_FMAF(a, b, c) fma((a), (b), (c))
#define PE_FMA64(a, b, c) fma((a), (b), (c))
#define PE_INLINE static inline __attribute__((always_inline))
#define PE_AS_UINT(x) as_uint(x)
#define PE_AS_FLOAT(x) as_float(x)
#else
#include <math.h>
#include <stdint.h>
#include <string.h>
typedef uint64_t pe_u64;
typedef uint32_t pe_u32;
typedef int64_t pe_i64;
typedef int32_t pe_i32;
#define PE_FMAF(a, b, c) fmaf((a), (b), (c))
#define PE_FMA64(a, b, c) fma((a), (b), (c))
#define PE_INLINE static inline
static inline pe_u32 pe_as_uint_host(float f) { pe_u32 u; memcpy(&u, &f, 4); return u; }
static inline float pe_as_float_host(pe_u32 u) { float f; memcpy(&f, &u, 4); return f; }
static inline pe_i32 pe_as_int_host(pe_u32 u) { pe_i32 i; memcpy(&i, &u, 4); return i; }
#define PE_AS_UINT(x) pe_as_uint_host(x)
#define PE_AS_FLOAT(x) pe_as_float_host(x)
#endif

/* Phase of position p for tuning word (f_hi, f_lo), in 2^-64 turns.
 * p = ph * 2^32 + pl with ph signed and pl in [0, 2^32); then
 * floor(p * F / 2^32) = p * f_hi + ph * f_lo + floor(pl * f_lo / 2^32),
 * every product wrapping modulo 2^64. Written once for any unsigned 64-bit
 * type U of the words (a scalar, or a vector of words at one position p,
 * as the vector odometers take it), with f_lo already widened to U. */
#define PE_PHASE_OF(U, p, f_hi, f_lo)                                                          \
    ((U)((pe_u64)(p)) * (f_hi) +                                                               \
     (U)(((pe_u64)(p) >> 32) | (((pe_i64)(p) < 0) ? (pe_u64)0xFFFFFFFF00000000UL : (pe_u64)0)) * \
         (f_lo) +                                                                              \
     (((U)((pe_u64)(p) & (pe_u64)0xFFFFFFFFUL) * (f_lo)) >> 32))

PE_INLINE pe_u64 pe_phase(pe_i64 p, pe_u64 f_hi, pe_u32 f_lo)
{
    return PE_PHASE_OF(pe_u64, p, f_hi, (pe_u64)f_lo);
}

/* The low 32 bits of the 96-bit accumulator for position p: the odometer's
 * fractional part below the 64-bit phase. */
PE_INLINE pe_u32 pe_phase_low(pe_i64 p, pe_u32 f_lo)
{
    return (pe_u32)((pe_u64)p * (pe_u64)f_lo);
}

/* The carry out of sum = a + b for 32-bit words (scalars or vectors), in
 * pure bit logic: bit 31 of (a & b) | ((a | b) & ~sum). No comparison, so
 * no implementation can misread a vector compare's true value (-1) here. */
#define PE_CARRY32(a, b, sum) ((((a) & (b)) | (((a) | (b)) & ~(sum))) >> 31)
#define PE_CARRY64(a, b, sum) ((((a) & (b)) | (((a) | (b)) & ~(sum))) >> 63)

/* The 96-bit odometer on three 32-bit words (top first): W += F, with U32
 * uint or a uint vector type. */
#define PE_TICK96(U32, W2, W1, W0, F2, F1, F0)                                                      \
    do {                                                                                       \
        U32       pe_n0 = (W0) + (F0);                                                    \
        U32       pe_t1 = (W1) + (F1);                                                    \
        U32       pe_c0 = PE_CARRY32((W0), (F0), pe_n0);                                  \
        U32       pe_n1 = pe_t1 + pe_c0;                                                  \
        (W2) += (F2) + PE_CARRY32((W1), (F1), pe_t1) + PE_CARRY32(pe_t1, pe_c0, pe_n1);        \
        (W1) = pe_n1;                                                                          \
        (W0) = pe_n0;                                                                          \
    } while (0)

/* The high 64 bits of the 128-bit product of two 64-bit words. */
#ifdef PE_OPENCL
#define pe_mul_hi64(a, b) mul_hi((pe_u64)(a), (pe_u64)(b))
#else
static inline pe_u64 pe_mul_hi64(pe_u64 a, pe_u64 b)
{
    pe_u64 a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
    pe_u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    pe_u64 mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}
#endif

/* float64 needs a wider word: F_i = round(2^128 * w_i / 2pi) as (hi, lo),
 * two 64-bit halves, so the phase error p * 2^-129 turn stays below 2^-66
 * turn for every |p| <= 2^63. The phase is the top 64 bits of
 * (p * F_i) mod 2^128, p sign-extended: p * hi + the high half of p * lo,
 * where p's sign costs lo once (two's complement). Written once for any
 * unsigned 64-bit type U, MUL_HI its high half of a product. */
#define PE_PHASE128_OF(U, MUL_HI, p, f_hi, f_lo)                                               \
    ((U)((pe_u64)(p)) * (f_hi) + MUL_HI((U)((pe_u64)(p)), (f_lo)) -                            \
     (((pe_i64)(p) < 0) ? (f_lo) : (U)(0)))

PE_INLINE pe_u64 pe_phase128(pe_i64 p, pe_u64 f_hi, pe_u64 f_lo)
{
    return PE_PHASE128_OF(pe_u64, pe_mul_hi64, p, f_hi, f_lo);
}

/* The low 64 bits of that 128-bit accumulator. */
PE_INLINE pe_u64 pe_phase128_low(pe_i64 p, pe_u64 f_lo)
{
    return (pe_u64)p * f_lo;
}

/* Minimax polynomials on [-pi/4, pi/4] (fitted with Lawson's algorithm
 * against 200-bit references, coefficients rounded to float):
 *   sin x ~ x + x^3 (S3 + x^2 (S5 + x^2 (S7 + x^2 S9)))   |err| ~ 2.4e-12
 *   cos x ~ 1 + x^2 (-1/2 + x^2 (C4 + x^2 (C6 + x^2 C8)))  |err| ~ 5.4e-11 */
#define PE_S3 (-0x1.555556p-3f)
#define PE_S5 (0x1.111106p-7f)
#define PE_S7 (-0x1.a00e0ep-13f)
#define PE_S9 (0x1.6c8988p-19f)
#define PE_C4 (0x1.55553ep-5f)
#define PE_C6 (-0x1.6c087ep-10f)
#define PE_C8 (0x1.99343p-16f)

/* 2pi / 2^34 (radians per 2^30 phase units: a's unit, 2^38, over the 2^8
 * a comes scaled by) as a float pair: PE_K_HI is the float nearest, PE_K_LO
 * the float nearest the remainder. PE_K_HI_SMALL, 2pi / 2^50, is the weight
 * of b's unit, 2^14 phase units. */
#define PE_K_HI (0x1.921fb6p-32f)
#define PE_K_LO (-0x1.777a5cp-57f)
#define PE_K_HI_SMALL (0x1.921fb6p-48f)

/* sin and cos of a phase, float32, within about one ulp.
 * The phase comes as its top two 32-bit words (hi, lo); the 32 bits below
 * them never reach a float32 result. Round the phase to the nearest quarter
 * turn q; the signed remainder r, |r| <= 2^61 (an eighth of a turn), becomes
 * x = r * 2pi/2^64 radians as a hi + lo float pair: r's top 24 bits (a) and
 * next 24 bits (b) each convert exactly, and the last 14 bits (< 6e-15 rad)
 * are dropped. a converts as a * 2^8 (PE_A_BITS: t shifted up, the bits
 * below a cleared and the top one flipped: a shift and one three-input
 * logic instruction, where a shift, a mask and a subtraction made a), and
 * its constants carry the 2^-8: each product is the same real number as
 * before, so the same float. The small terms are summed first and the
 * leading term (x, or 1) added last. The quadrant swaps and negates with
 * masks and sign bits: no branch depends on data, and every integer
 * operation is 32-bit (cheap on GPUs and on CPU vector units alike).
 *
 * Written once as a macro over the types, so the host (scalar C), the
 * devices' scalar path and their vector path (sixteen pairs at once) are
 * one text; the tests prove the three agree bit for bit. Arguments: the
 * name; the float, uint32 and int32 types; conversions to float and int32;
 * bit casts float->uint32, uint32->float and uint32->int32; select(a, b,
 * mask) giving b where mask is all ones; fma; and the eighth of a turn to
 * add to hi, 0 where the caller's hi carries it already (the vector
 * odometer, whose accumulator holds it: one instruction less per sixteen
 * pairs).
 *
 * The steps both variants share come first: the quarter turn and the
 * remainder's two exact halves (declares t, b, fa, fb), the two
 * polynomials (ps, pc), and the quadrant's swap and signs. */
/* a * 2^8 as int32 bits, a = (t's bits 6..29) - 2^23 in [-2^23, 2^23): those
 * bits moved to the top, and the top one flipped (subtracting 2^31) */
#define PE_A_BITS(t) ((((t) << 2) & 0xFFFFFF00u) ^ 0x80000000u)

#define PE_SINCOS_REMAINDER(F, U32, I32, CVT_F, CVT_I32, AS_I32, hi, lo, EIGHTH)                \
    U32 t = (hi) + (EIGHTH);                            /* phase + 1/8 turn */                   \
    I32 b = CVT_I32(((t & 0x3Fu) << 18) | ((lo) >> 14)); /* [0, 2^24) */                         \
    F fa = CVT_F(AS_I32(PE_A_BITS(t)));                 /* a * 2^8, exact */                     \
    F fb = CVT_F(b)

#define PE_SINCOS_POLYNOMIALS(F, FMA, x2)                                                        \
    F ps = FMA(x2, FMA(x2, FMA(x2, (F)(PE_S9), (F)(PE_S7)), (F)(PE_S5)), (F)(PE_S3));            \
    F pc = FMA(x2, FMA(x2, FMA(x2, (F)(PE_C8), (F)(PE_C6)), (F)(PE_C4)), (F)(-0.5f))

/* quadrant q: (sin, cos) of (x + q/4 turn) = (s,c), (c,-s), (-s,-c), (-c,s).
 * q is t's top two bits: the swap is bit 30, sin's sign bit 31 (q's high
 * bit), and cos's sign q's two bits differing, which is bit 31 of
 * t + 2^30 (the next quadrant's high bit). Read off t so, the swap and
 * the signs need no shifts of q. */
#define PE_SINCOS_QUADRANT(F, U32, I32, CVT_I32, AS_U32, AS_F, SELECT, t, s, c)                 \
    do {                                                                                         \
        I32 swap = -CVT_I32(((t) >> 30) & 1u);                                                   \
        U32 sin_sign = (t) & 0x80000000u;                                                        \
        U32 cos_sign = ((t) + 0x40000000u) & 0x80000000u;                                        \
        F sv = SELECT(s, c, swap);                                                               \
        F cv = SELECT(c, s, swap);                                                               \
        *sin_out = AS_F(AS_U32(sv) ^ sin_sign);                                                  \
        *cos_out = AS_F(AS_U32(cv) ^ cos_sign);                                                  \
    } while (0)

#define PE_DEFINE_SINCOS(NAME, F, U32, I32, CVT_F, CVT_I32, AS_U32, AS_F, AS_I32, SELECT, FMA, \
                         EIGHTH)                                                                 \
    PE_INLINE void NAME(U32 hi, U32 lo, F *sin_out, F *cos_out)                                  \
    {                                                                                            \
        PE_SINCOS_REMAINDER(F, U32, I32, CVT_F, CVT_I32, AS_I32, hi, lo, EIGHTH);                \
        F xh = fa * PE_K_HI;                                                                     \
        F e1 = FMA(fa, (F)(PE_K_HI), -xh);                  /* exact product error */            \
        F xl = FMA(fa, (F)(PE_K_LO), FMA(fb, (F)(PE_K_HI_SMALL), e1));                           \
        F x2 = xh * xh;                                                                          \
        F x2lo = FMA(xh, xh, -x2);                                                               \
        F x3 = xh * x2;                                                                          \
        PE_SINCOS_POLYNOMIALS(F, FMA, x2);                                                       \
        /* sin(xh + xl) = sin(xh) + xl cos(xh); cos(xh + xl) = cos(xh) - xl sin(xh) */          \
        F cos_rough = FMA((F)(-0.5f), x2, (F)(1.0f));                                            \
        F s = xh + FMA(x3, ps, xl * cos_rough);                                                  \
        F c = 1.0f + FMA(x2, pc, FMA((F)(-0.5f), x2lo, -(xl * s)));                              \
        PE_SINCOS_QUADRANT(F, U32, I32, CVT_I32, AS_U32, AS_F, SELECT, t, s, c);                 \
    }

/* The variant for outputs stored in 16 bits (f16 and bf16 row kernels and
 * their host emulation): x as one float, not a hi + lo pair. A 16-bit
 * output keeps 11 or 8 bits, so the float pair's extra 24 bits reach it
 * only where the float32 value sits within an ulp of a rounding boundary
 * (one f16 output in 70,000 moves by a unit, one bf16 output in 500,000).
 * x = fa*K_HI + (fb*K_HI_SMALL + fa*K_LO), rounded once by the outer fma:
 * relative error about 2^-24 at every size of r, small remainders included
 * (fb carries them exactly). Against the pair: 42 operations instead of 46
 * as written, 39 where three-input logic (AVX-512, GPUs) takes the sign's
 * mask and merge in one. Against MPFR it is correctly rounded as often as
 * the pair to within a few outputs in 100,000, with the same largest
 * errors (2^-12 for f16, 2^-9 for bf16). */
#define PE_DEFINE_SINCOS_NARROW(NAME, F, U32, I32, CVT_F, CVT_I32, AS_U32, AS_F, AS_I32, SELECT, \
                                FMA, EIGHTH)                                                 \
    PE_INLINE void NAME(U32 hi, U32 lo, F *sin_out, F *cos_out)                                  \
    {                                                                                            \
        PE_SINCOS_REMAINDER(F, U32, I32, CVT_F, CVT_I32, AS_I32, hi, lo, EIGHTH);                \
        F x = FMA(fa, (F)(PE_K_HI), FMA(fb, (F)(PE_K_HI_SMALL), fa * (F)(PE_K_LO)));             \
        F x2 = x * x;                                                                            \
        F x3 = x * x2;                                                                           \
        PE_SINCOS_POLYNOMIALS(F, FMA, x2);                                                       \
        /* s takes r's sign from the integers, not from the fma: at r = 0 */                     \
        /* (a quarter turn exactly) IEEE gives +0, but Mesa's llvmpipe */                        \
        /* (Rusticl) returns -0 there. a is negative exactly where r is */                       \
        /* (t's bit 29 clear), and its sign bit goes in with one */                              \
        /* three-input logic instruction (where ~(t << 2) took three). */                        \
        F s_any_zero = FMA(x3, ps, x);                                                           \
        F s = AS_F((AS_U32(s_any_zero) & 0x7FFFFFFFu) | (PE_A_BITS(t) & 0x80000000u));           \
        F c = FMA(x2, pc, (F)(1.0f));                                                            \
        PE_SINCOS_QUADRANT(F, U32, I32, CVT_I32, AS_U32, AS_F, SELECT, t, s, c);                 \
    }

/* Each variant for the scalar float (pe_sincos32*, the host and the
 * devices' scalar path) and for sixteen pairs as vectors (pe_sincos16*). */
#ifdef PE_OPENCL
PE_DEFINE_SINCOS(pe_sincos32, float, uint, int, convert_float, convert_int, as_uint, as_float,
                 as_int, select, fma, 1u << 29)
PE_DEFINE_SINCOS(pe_sincos16, float16, uint16, int16, convert_float16, convert_int16,
                 as_uint16, as_float16, as_int16, select, fma, 0)
PE_DEFINE_SINCOS_NARROW(pe_sincos32_narrow, float, uint, int, convert_float, convert_int,
                        as_uint, as_float, as_int, select, fma, 1u << 29)
PE_DEFINE_SINCOS_NARROW(pe_sincos16_narrow, float16, uint16, int16, convert_float16,
                        convert_int16, as_uint16, as_float16, as_int16, select, fma, 0)
#else
#define PE_HOST_CVT_F(x) ((float)(x))
#define PE_HOST_CVT_I32(x) ((pe_i32)(x))
#define PE_HOST_SELECT(a, b, mask) ((mask) ? (b) : (a))
PE_DEFINE_SINCOS(pe_sincos32, float, pe_u32, pe_i32, PE_HOST_CVT_F, PE_HOST_CVT_I32,
                 pe_as_uint_host, pe_as_float_host, pe_as_int_host, PE_HOST_SELECT, fmaf,
                 1u << 29)
PE_DEFINE_SINCOS_NARROW(pe_sincos32_narrow, float, pe_u32, pe_i32, PE_HOST_CVT_F,
                        PE_HOST_CVT_I32, pe_as_uint_host, pe_as_float_host, pe_as_int_host,
                        PE_HOST_SELECT, fmaf, 1u << 29)
#endif

/* sin and cos of a 64-bit phase: for float32 storage, and for storage in
 * 16 bits (_narrow). */
PE_INLINE void pe_sincos(pe_u64 phase, float *sin_out, float *cos_out)
{
    pe_sincos32((pe_u32)(phase >> 32), (pe_u32)phase, sin_out, cos_out);
}

PE_INLINE void pe_sincos_narrow(pe_u64 phase, float *sin_out, float *cos_out)
{
    pe_sincos32_narrow((pe_u32)(phase >> 32), (pe_u32)phase, sin_out, cos_out);
}

/* Rounding a float to the 16-bit storage types, round to nearest even.
 * bfloat16 is the top half of a float32; NaN stays NaN (quietened). */
PE_INLINE pe_u32 pe_float_to_bf16(float f)
{
    pe_u32 u = PE_AS_UINT(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (u >> 16) | 0x40u;
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

PE_INLINE float pe_bf16_to_float(pe_u32 h)
{
    return PE_AS_FLOAT(h << 16);
}

#if defined(cl_khr_fp64) || !defined(PE_OPENCL)
/* The float64 path: the same reduction with a 53 + 9 bit split of the
 * remainder, 2pi/2^55 as a double pair, and the fdlibm kernel polynomials
 * (degree 13 for sin, 14 for cos, |err| < 2^-58 on [-pi/4, pi/4]). */
#define PE_K64_HI (0x1.921fb54442d18p-53)
#define PE_K64_LO (0x1.1a62633145c07p-107)
#define PE_K64_HI_SMALL (0x1.921fb54442d18p-62)

/* One text for the host (scalar C), the devices' scalar path and their
 * vector path (8 pairs as double8 on CPU devices), as PE_DEFINE_SINCOS.
 * Arguments: the name; the double, uint64 and int64 types; the quadrant's
 * type and its conversion from uint64 (32-bit where the lanes are scalar:
 * fewer GPU instructions); the uint64 to int64 and int64 to double
 * conversions; select(a, b, mask) giving b where
 * mask is set; fma; MASK(u), a uint64 that is 0 or 1 turned into select's
 * mask. The sign multiplies by -1.0 or 1.0 (exact). */
#define PE_DEFINE_SINCOS_F64(NAME, D, U64, I64, Q, CVT_Q, CVT_I64, CVT_D, SELECT, FMA, MASK)  \
    PE_INLINE void NAME(U64 phase, D *sin_out, D *cos_out)                                       \
    {                                                                                            \
        U64 t = phase + ((pe_u64)1 << 61);                                                       \
        Q q = CVT_Q(t >> 62);                                                                    \
        U64 m = t & (((pe_u64)1 << 62) - 1);                                                     \
        I64 a = CVT_I64(m >> 9) - ((pe_i64)1 << 52); /* [-2^52, 2^52): exact in double */        \
        I64 b = CVT_I64(m & 0x1FFu);                                                             \
        D da = CVT_D(a);                                                                         \
        D db = CVT_D(b);                                                                         \
                                                                                                 \
        D xh = da * PE_K64_HI;                                                                   \
        D e1 = FMA(da, (D)(PE_K64_HI), -xh);                                                     \
        D xl = FMA(da, (D)(PE_K64_LO), FMA(db, (D)(PE_K64_HI_SMALL), e1));                       \
                                                                                                 \
        D x2 = xh * xh;                                                                          \
        D x2lo = FMA(xh, xh, -x2);                                                               \
        D x3 = xh * x2;                                                                          \
        D ps = FMA(x2, FMA(x2, FMA(x2, FMA(x2, FMA(x2,                                           \
                   (D)(1.58969099521155010221e-10), (D)(-2.50507602534068634195e-08)),           \
                   (D)(2.75573137070700676789e-06)), (D)(-1.98412698298579493134e-04)),          \
                   (D)(8.33333333332248946124e-03)), (D)(-1.66666666666666324348e-01));          \
        D pc = FMA(x2, FMA(x2, FMA(x2, FMA(x2, FMA(x2, FMA(x2,                                   \
                   (D)(-1.13596475577881948265e-11), (D)(2.08757232129817482790e-09)),           \
                   (D)(-2.75573143513906633035e-07)), (D)(2.48015872894767294178e-05)),          \
                   (D)(-1.38888888888741095749e-03)), (D)(4.16666666666666019037e-02)),          \
                   (D)(-0.5));                                                                   \
        D cos_rough = FMA((D)(-0.5), x2, (D)(1.0));                                              \
        D s = xh + FMA(x3, ps, xl * cos_rough);                                                  \
        D c = 1.0 + FMA(x2, pc, FMA((D)(-0.5), x2lo, -(xl * s)));                                \
                                                                                                 \
        D sign_s = SELECT((D)(1.0), (D)(-1.0), MASK(q >> 1));                                    \
        D sign_c = SELECT((D)(1.0), (D)(-1.0), MASK((q ^ (q >> 1)) & 1u));                       \
        *sin_out = SELECT(s, c, MASK(q & 1u)) * sign_s;                                          \
        *cos_out = SELECT(c, s, MASK(q & 1u)) * sign_c;                                          \
    }

#define PE_F64_SCALAR_MASK(u) ((u) != 0)
#define PE_F64_SCALAR_SELECT(a, b, mask) ((mask) ? (b) : (a))
PE_DEFINE_SINCOS_F64(pe_sincos_f64, double, pe_u64, pe_i64, pe_u32, (pe_u32), (pe_i64),
                     (double), PE_F64_SCALAR_SELECT, fma, PE_F64_SCALAR_MASK)
#ifdef PE_OPENCL
#define PE_F64_VECTOR_MASK(u) (-as_long8(u)) /* all ones where u is 1 */
PE_DEFINE_SINCOS_F64(pe_sincos_f64x8, double8, ulong8, long8, ulong8, , as_long8,
                     convert_double8, select, fma, PE_F64_VECTOR_MASK)
#endif
#endif

/* The rotation of a pair: (a, b) turned by an angle whose cosine and sine,
 * times the amplitude m, are c and s (s negated for the inverse):
 *   a' = a c - b s = fma(a, c, -(b * s)),   b' = a s + b c = fma(a, s, b * c),
 * one product and one fma each, rounded once. Every rotary kernel, the
 * host emulation and clpe_device.h compute exactly this; the kernels'
 * vector types apply it lane by lane: pe_rotate_a_<type>, pe_rotate_b_<type>. */
#define PE_DEFINE_ROTATE(T, FMA)                                                                   \
    PE_INLINE T pe_rotate_a_##T(T a, T b, T c, T s) { return FMA(a, c, -(b * s)); }               \
    PE_INLINE T pe_rotate_b_##T(T a, T b, T c, T s) { return FMA(a, s, b * c); }
#ifdef PE_OPENCL
PE_DEFINE_ROTATE(float, fma)
PE_DEFINE_ROTATE(float2, fma)
PE_DEFINE_ROTATE(float8, fma)
PE_DEFINE_ROTATE(float16, fma)
#ifdef cl_khr_fp64
PE_DEFINE_ROTATE(double, fma)
PE_DEFINE_ROTATE(double2, fma)
PE_DEFINE_ROTATE(double4, fma)
PE_DEFINE_ROTATE(double8, fma)
#endif
#else
PE_DEFINE_ROTATE(float, fmaf)
PE_DEFINE_ROTATE(double, fma)
#endif

#endif /* CLPE_PHASE_H */
