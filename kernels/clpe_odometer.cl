/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_odometer.cl - the phase of one pair walking down the rows: set once
 * from a position (a multiply), then advanced by one wide integer add per
 * row (the odometer). Both give the same bits, since the integer
 * arithmetic is exact; the add is cheaper.
 *   pe_odo96   one pair, 96-bit tuning word (float32 arithmetic)
 *   pe_odo128  one pair, 128-bit tuning word (float64)
 * The vector shape's odometers (sixteen or eight pairs as vectors) are in
 * clpe_vector_odometer.cl.
 * Positions are unsigned (they wrap modulo 2^64); past INT64_MAX, where
 * the sign-extended product jumps, a caller follows the tick with *_wrap.
 */

typedef struct pe_odo96 {
    uint f2, f1, f0; /* tuning word, top first */
    uint w2, w1, w0; /* accumulator */
} pe_odo96;

static inline void pe_odo96_load(pe_odo96 *o, global const ulong *tw_hi,
                                 global const uint *tw_lo, uint i)
{
    o->f2 = (uint)(tw_hi[i] >> 32);
    o->f1 = (uint)tw_hi[i];
    o->f0 = tw_lo[i];
}

static inline void pe_odo96_set(pe_odo96 *o, ulong p)
{
    ulong ph = pe_phase((long)p, ((ulong)o->f2 << 32) | o->f1, o->f0);
    o->w2 = (uint)(ph >> 32);
    o->w1 = (uint)ph;
    o->w0 = pe_phase_low((long)p, o->f0);
}

static inline void pe_odo96_tick(pe_odo96 *o)
{
    PE_TICK96(uint, o->w2, o->w1, o->w0, o->f2, o->f1, o->f0);
}

/* After the tick past INT64_MAX: the sign-extended position jumped by
 * -2^64, so the accumulator drops 2^64 F (mod 2^96): the low word of F off
 * the top word. */
static inline void pe_odo96_wrap(pe_odo96 *o) { o->w2 -= o->f0; }

/* The sine and cosine at the odometer's phase; _narrow: for storage in 16
 * bits (clpe_phase.h, PE_DEFINE_SINCOS_NARROW). */
static inline void pe_odo96_sin_cos(const pe_odo96 *o, float *s, float *c)
{
    pe_sincos32(o->w2, o->w1, s, c);
}

static inline void pe_odo96_sin_cos_narrow(const pe_odo96 *o, float *s, float *c)
{
    pe_sincos32_narrow(o->w2, o->w1, s, c);
}

/* The sine and cosine of pair i at position p, without an odometer. */
static inline void pe_sincos_at(ulong p, global const ulong *tw_hi, global const uint *tw_lo,
                                uint i, float *s, float *c)
{
    ulong ph = pe_phase((long)p, tw_hi[i], tw_lo[i]);
    pe_sincos32((uint)(ph >> 32), (uint)ph, s, c);
}

static inline void pe_sincos_at_narrow(ulong p, global const ulong *tw_hi,
                                       global const uint *tw_lo, uint i, float *s, float *c)
{
    ulong ph = pe_phase((long)p, tw_hi[i], tw_lo[i]);
    pe_sincos32_narrow((uint)(ph >> 32), (uint)ph, s, c);
}

#ifdef cl_khr_fp64
/* The float64 odometer over lanes of U: ulong for one pair (pe_odo128),
 * ulong8 for eight (pe_odo8x128, the vector shape); D is U's double type,
 * SINCOS its sine and cosine, LOAD reads lane words i.. of a tuning word
 * array. Each defines its own NAME_set, from pe_phase128 and
 * pe_phase128_low. */
#define PE_DEFINE_ODO128(NAME, U, D, SINCOS, LOAD)                                             \
    typedef struct NAME {                                                                      \
        U f_hi, f_lo; /* tuning word */                                                        \
        U a_hi, a_lo; /* accumulator */                                                        \
    } NAME;                                                                                    \
    static inline void NAME##_load(NAME *o, global const ulong *tw_hi,                         \
                                   global const ulong *tw_lo, uint i)                          \
    {                                                                                          \
        o->f_hi = LOAD(tw_hi, i);                                                              \
        o->f_lo = LOAD(tw_lo, i);                                                              \
    }                                                                                          \
    static inline void NAME##_tick(NAME *o)                                                    \
    {                                                                                          \
        U lo = o->a_lo + o->f_lo;                                                              \
        o->a_hi += o->f_hi + PE_CARRY64(o->a_lo, o->f_lo, lo);                                 \
        o->a_lo = lo;                                                                          \
    }                                                                                          \
    /* As pe_odo96_wrap: 2^64 F (mod 2^128) is F's low word in the top word. */               \
    static inline void NAME##_wrap(NAME *o) { o->a_hi -= o->f_lo; }                            \
    static inline void NAME##_sin_cos(const NAME *o, D *s, D *c) { SINCOS(o->a_hi, s, c); }

#define PE_LOAD_WORD(p, i) ((p)[i])
PE_DEFINE_ODO128(pe_odo128, ulong, double, pe_sincos_f64, PE_LOAD_WORD)

static inline void pe_odo128_set(pe_odo128 *o, ulong p)
{
    o->a_hi = pe_phase128((long)p, o->f_hi, o->f_lo);
    o->a_lo = pe_phase128_low((long)p, o->f_lo);
}

static inline void pe_sincos_at128(ulong p, global const ulong *tw_hi, global const ulong *tw_lo,
                                   uint i, double *s, double *c)
{
    pe_sincos_f64(pe_phase128((long)p, tw_hi[i], tw_lo[i]), s, c);
}

#endif
