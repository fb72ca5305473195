/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_vector_odometer.cl - the odometers of the vector shape (PoCL on
 * CPUs): the phases of a group of pairs as vectors, with the same bits as
 * the one-pair odometers of clpe_odometer.cl.
 *   pe_odo16    sixteen pairs, 96-bit tuning words (float32 arithmetic)
 *   pe_odo8x128 eight pairs as ulong8 vectors, 128-bit words (float64)
 * Included by clpe_kernels.cl when the build has the vector shape.
 */

/* Sixteen pairs. The accumulator's top 64 bits are one ulong lane each,
 * holding the phase plus an eighth of a turn (what the sine and cosine add
 * first, pe_sincos16), and its low 32 bits a uint lane: a tick is a 32-bit
 * add, a compare for its carry, and two 64-bit adds, the carry added under
 * that compare's mask (about half the vector instructions of a tick on
 * three 32-bit words). The sine and cosine take the two 32-bit halves of
 * the top apart (two permutes). */
typedef struct pe_odo16 {
    ulong16 f_hi; /* tuning word: top 64 bits */
    uint16 f0;    /* and low 32 */
    ulong16 a;    /* accumulator: top 64 bits, plus 2^61 (an eighth of a turn) */
    uint16 w0;    /* and low 32 */
} pe_odo16;

static inline void pe_odo16_load(pe_odo16 *o, global const ulong *tw_hi,
                                 global const uint *tw_lo, uint i0)
{
    o->f_hi = vload16(0, tw_hi + i0);
    o->f0 = vload16(0, tw_lo + i0);
}

/* pe_phase (the same text, PE_PHASE_OF) and pe_phase_low for sixteen
 * tuning words at once. */
static inline void pe_odo16_set(pe_odo16 *o, ulong p)
{
    ulong16 flo = convert_ulong16(o->f0);
    o->a = PE_PHASE_OF(ulong16, p, o->f_hi, flo) + (1UL << 61);
    o->w0 = convert_uint16(p * flo);
}

static inline void pe_odo16_tick(pe_odo16 *o)
{
    uint16 n0 = o->w0 + o->f0;
    /* all ones where the low word carried: a vector comparison gives -1 for
     * true (OpenCL C), and select reads its top bit. The scalar odometers
     * keep PE_CARRY32's bit logic, one text for scalars and vectors. */
    long16 carried = convert_long16(n0 < o->f0);
    ulong16 a = o->a + o->f_hi;
    o->a = select(a, a + (ulong16)(1), carried);
    o->w0 = n0;
}

/* as pe_odo96_wrap: the tuning word's low word off the top word */
static inline void pe_odo16_wrap(pe_odo16 *o) { o->a -= convert_ulong16(o->f0) << 32; }

/* The high (odd) or low (even) 32-bit halves of sixteen 64-bit lanes. */
static inline uint16 pe_halves16(ulong16 a, bool high)
{
    uint16 lo = as_uint16(a.lo), hi = as_uint16(a.hi);
    return high ? (uint16)(lo.s1, lo.s3, lo.s5, lo.s7, lo.s9, lo.sb, lo.sd, lo.sf, hi.s1, hi.s3,
                           hi.s5, hi.s7, hi.s9, hi.sb, hi.sd, hi.sf)
                : (uint16)(lo.s0, lo.s2, lo.s4, lo.s6, lo.s8, lo.sa, lo.sc, lo.se, hi.s0, hi.s2,
                           hi.s4, hi.s6, hi.s8, hi.sa, hi.sc, hi.se);
}

static inline void pe_odo16_sin_cos(const pe_odo16 *o, float16 *s, float16 *c)
{
    pe_sincos16(pe_halves16(o->a, true), pe_halves16(o->a, false), s, c);
}

static inline void pe_odo16_sin_cos_narrow(const pe_odo16 *o, float16 *s, float16 *c)
{
    pe_sincos16_narrow(pe_halves16(o->a, true), pe_halves16(o->a, false), s, c);
}

#ifdef cl_khr_fp64
#define PE_LOAD_WORD8(p, i) vload8(0, (p) + (i))
PE_DEFINE_ODO128(pe_odo8x128, ulong8, double8, pe_sincos_f64x8, PE_LOAD_WORD8)

/* pe_phase128 (the same text, PE_PHASE128_OF) and pe_phase128_low for
 * eight tuning words at once. */
static inline void pe_odo8x128_set(pe_odo8x128 *o, ulong p)
{
    o->a_hi = PE_PHASE128_OF(ulong8, mul_hi, p, o->f_hi, o->f_lo);
    o->a_lo = (ulong8)(p) * o->f_lo;
}
#endif
