/*
 * clpe_odometer.cl - the phase of one pair (or eight) walking down the rows:
 * set once from a position (a multiply), then advanced by one wide integer
 * add per row (the odometer). Both give the same bits, since the integer
 * arithmetic is exact; the add is cheaper.
 *   pe_odo96   one pair, 96-bit tuning word (float32 arithmetic)
 *   pe_odo16   sixteen pairs as vectors (the CPU path)
 *   pe_odo128  one pair, 128-bit tuning word (float64)
 *   pe_odo8x128 eight pairs as ulong8 vectors (the CPU path of float64)
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

/* pe_phase and pe_phase_low for sixteen tuning words at once. */
static inline void pe_odo16_set(pe_odo16 *o, ulong p)
{
    ulong hi_part = (p >> 32) | (((long)p < 0) ? 0xFFFFFFFF00000000UL : 0UL);
    ulong lo_part = p & 0xFFFFFFFFUL;
    ulong16 flo = convert_ulong16(o->f0);
    ulong16 ph = p * o->f_hi + hi_part * flo + ((lo_part * flo) >> 32);
    o->a = ph + (1UL << 61);
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
/* The float64 odometer over lanes of U: ulong for one pair (pe_odo128),
 * ulong8 for eight (pe_odo8x128, the CPU path); D is U's double type, SINCOS
 * its sine and cosine, LOAD reads lane words i.. of a tuning word array.
 * set is pe_phase128 and pe_phase128_low, lane by lane. */
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
    static inline void NAME##_set(NAME *o, ulong p)                                            \
    {                                                                                          \
        U up = (U)(p);                                                                         \
        o->a_hi = up * o->f_hi + mul_hi(up, o->f_lo) - (((long)p < 0) ? o->f_lo : (U)(0));   \
        o->a_lo = up * o->f_lo;                                                                \
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
#define PE_LOAD_WORD8(p, i) vload8(0, (p) + (i))
PE_DEFINE_ODO128(pe_odo128, ulong, double, pe_sincos_f64, PE_LOAD_WORD)
PE_DEFINE_ODO128(pe_odo8x128, ulong8, double8, pe_sincos_f64x8, PE_LOAD_WORD8)

static inline void pe_sincos_at128(ulong p, global const ulong *tw_hi, global const ulong *tw_lo,
                                   uint i, double *s, double *c)
{
    pe_sincos_f64(pe_phase128((long)p, tw_hi[i], tw_lo[i]), s, c);
}

#endif
