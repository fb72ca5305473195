/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_vector_storage.cl - the vector shape's loads and stores (PoCL on
 * CPUs): 16-wide vectors (8 for float64) of each storage type, alone, two
 * at once (pe_store_two) or interleaved from sines and cosines
 * (pe_store_zipped), and asking for the lines of rows ahead (prefetch).
 * The same roundings as clpe_storage.cl's, so the same bits. Included by
 * clpe_kernels.cl when the build has the vector shape (PE_PAIRS > 1).
 */

/* The vector moves (16 wide; 8 for float64) take a whole vector at once when the caller knows every
 * vector it moves is aligned to its size (`aligned`: buffers, pitches and
 * offsets that are multiples of 16 elements, the common case), else
 * vload16/vstore16, which need only element alignment. PoCL splits an
 * unaligned vstore16 of ushort into sixteen 2-byte stores. The kernels
 * decide `aligned` once per work-item and compile their walk once for each
 * answer, so no branch on it is left inside the walk. The bits moved are
 * the same either way. */
#define PE_DEFINE_MOVE(SUFFIX, T, N)                                                           \
    PE_INLINE T##N pe_get##N##_##SUFFIX(global const T *p, bool aligned)                       \
    {                                                                                          \
        return aligned ? *(global const T##N *)p : vload##N(0, p);                             \
    }                                                                                          \
    PE_INLINE void pe_put##N##_##SUFFIX(global T *p, T##N v, bool aligned)                     \
    {                                                                                          \
        if (aligned)                                                                           \
            *(global T##N *)p = v;                                                             \
        else                                                                                   \
            vstore##N(v, 0, p);                                                                \
    }

PE_DEFINE_MOVE(f32, float, 16)
PE_DEFINE_MOVE(u16, ushort, 16)
#ifdef cl_khr_fp64
PE_DEFINE_MOVE(f64, double, 8) /* the float64 groups: 8 pairs as double8 */
#endif

/* Asking for the lines of rows a work-item will reach a few rows from now.
 * On the CPU a work-item's slice of a row is 128-512 bytes and the next row
 * of the same sequence is a row pitch further: too far apart for the
 * hardware's stream prefetcher, so every slice would arrive as a cache
 * miss. Named a few rows ahead, the lines are there in time. x86 under
 * clang (PoCL) only, where a prefetch never faults; elsewhere (GPUs, and
 * Rusticl and Oclgrind, which compile for SPIR) it is nothing. */
#if defined(__clang__) && defined(__x86_64__)
#define PE_X86 1
#else
#define PE_X86 0
#endif

/* How many steps of a walk ahead (a step: a row, or a slice of a row, of
 * every sequence a work-item serves): about eight sequences' steps of work
 * (a work-item serving the whole batch spends longer on each step),
 * measured at batch 1 and 8; at least two. `batch_steps` is the distance
 * for four sequences or more, which a storage type may set (PE_AHEAD_STEPS,
 * clpe_kernels.cl). */
static inline uint pe_prefetch_steps(uint sequences, uint batch_steps)
{
    return sequences >= 4 ? batch_steps : sequences >= 2 ? 4 : 8;
}

/* PE_PREFETCH_FOR_WRITE: whether lines that will be written are asked for
 * for writing (prefetchw). A build option from the device's row of the
 * library's tuning table (host/device/device_tuning.c): AMD's cores gain from it,
 * Intel's lose. A prefetch is a hint: the same bits. */
#ifndef PE_PREFETCH_FOR_WRITE
#define PE_PREFETCH_FOR_WRITE 1
#endif

/* The lines of n pairs from pair i0 of one row (elements of `size` bytes):
 * interleaved, one span of 2n elements; else two of n, from element a + i0
 * and b + i0 (where the sines and the cosines, or a rotary pair's halves,
 * start). for_write when the lines will be written (PE_PREFETCH_FOR_WRITE). */
static inline void pe_prefetch_pairs(global const void *row, uint size, bool interleaved,
                                     uint a, uint b, uint i0, uint n, bool for_write)
{
#if PE_X86
    const char *base = (const char *)(ulong)row; /* the CPU has one address space */
    uint spans = interleaved ? 1 : 2, bytes = (interleaved ? 2 : 1) * n * size;
    for (uint k = 0; k < spans; ++k) {
        const char *p = base + (ulong)((interleaved ? 2 * i0 : (k ? b : a) + i0) * size);
        for (uint off = 0; off < bytes; off += 64) {
            if (for_write && PE_PREFETCH_FOR_WRITE)
                __builtin_prefetch(p + off, 1);
            else
                __builtin_prefetch(p + off);
        }
    }
#endif
}

/* (s0, c0, s1, c1, ...): the interleaved layout of eight pairs. */
static inline float16 pe_zip8(float8 s, float8 c)
{
    return (float16)(s.s0, c.s0, s.s1, c.s1, s.s2, c.s2, s.s3, c.s3, s.s4, c.s4, s.s5, c.s5,
                     s.s6, c.s6, s.s7, c.s7);
}

/* N (sine, cosine) pairs (vectors V of R) stored interleaved from element
 * k, 2N elements: x * scale + value each when add (x read from xrow, which
 * NULL reads as 0), else the values alone. NAME takes the sines and the
 * cosines apart and zips them; ORDERED takes them zipped already, as two
 * vectors in storage order (a caller that applies one row's values to
 * several sequences zips once). One text for every storage type
 * (pe_store_zipped16_<type>, pe_store_zipped8_f64); bfloat16 has a
 * shortcut of its own below. */
#define PE_DEFINE_ZIPPED(NAME, ORDERED, LOAD, STORE, T, V, R, N, ZIP)                          \
    PE_INLINE void ORDERED(global T *orow, global const T *xrow, uint k, V lo, V hi, bool add, \
                           R scale, bool aligned)                                              \
    {                                                                                          \
        if (add) {                                                                             \
            V xlo = xrow ? LOAD(xrow, k, aligned) : (V)(0);                                    \
            V xhi = xrow ? LOAD(xrow, k + N, aligned) : (V)(0);                                \
            lo = xlo * scale + lo;                                                             \
            hi = xhi * scale + hi;                                                             \
        }                                                                                      \
        STORE(orow, k, lo, aligned);                                                           \
        STORE(orow, k + N, hi, aligned);                                                       \
    }                                                                                          \
    PE_INLINE void NAME(global T *orow, global const T *xrow, uint k, V sv, V cv, bool add,    \
                        R scale, bool aligned)                                                 \
    {                                                                                          \
        ORDERED(orow, xrow, k, ZIP(sv.lo, cv.lo), ZIP(sv.hi, cv.hi), add, scale, aligned);     \
    }
#define PE_DEFINE_ZIPPED16(NAME, ORDERED, SUFFIX, T)                                           \
    PE_DEFINE_ZIPPED(NAME, ORDERED, pe_load16_##SUFFIX, pe_store16_##SUFFIX, T, float16,       \
                     float, 16, pe_zip8)

/* ---- float32 ---- */
PE_INLINE float16 pe_load16_f32(global const float *p, uint k, bool aligned)
{
    return pe_get16_f32(p + k, aligned);
}
PE_INLINE void pe_store16_f32(global float *p, uint k, float16 v, bool aligned)
{
    pe_put16_f32(p + k, v, aligned);
}

/* ---- float16 ----
 * The 16-wide forms convert through a private vector and move the bits as
 * ushort16: PoCL's vstore_half8 on a global pointer that is not 16-byte
 * aligned crashed (an element offset of 3 halves), and the spec asks only
 * for 2-byte alignment. The conversions are the same correctly rounded ones
 * either way. */
/* On x86 under clang (PoCL), the 16 lanes convert as one vector of clang's
 * __fp16 (storage-only, needs no cl_khr_fp16): vcvtph2ps or vcvtps2ph
 * each way, where PoCL's vload_half16 and vstore_half16_rte are built
 * from scalar conversions. The same correctly rounded conversions (round
 * to nearest even: the default rounding the kernels' arithmetic runs
 * under), so the same bits. */
#if PE_X86
typedef __fp16 pe_fp16x16 __attribute__((ext_vector_type(16)));
static inline float16 pe_half_bits_to_float16(ushort16 bits)
{
    return __builtin_convertvector(__builtin_astype(bits, pe_fp16x16), float16);
}
static inline ushort16 pe_float16_to_half_bits(float16 v)
{
    return __builtin_astype(__builtin_convertvector(v, pe_fp16x16), ushort16);
}
#else
static inline float16 pe_half_bits_to_float16(ushort16 bits)
{
    return vload_half16(0, (private const half *)&bits);
}
static inline ushort16 pe_float16_to_half_bits(float16 v)
{
    ushort16 bits;
    vstore_half16(v, 0, (private half *)&bits);
    return bits;
}
#endif
PE_INLINE float16 pe_load16_f16(global const half *p, uint k, bool aligned)
{
    return pe_half_bits_to_float16(pe_get16_u16((global const ushort *)p + k, aligned));
}
PE_INLINE void pe_store16_f16(global half *p, uint k, float16 v, bool aligned)
{
    pe_put16_u16((global ushort *)p + k, pe_float16_to_half_bits(v), aligned);
}

/* ---- bfloat16 ---- */
/* pe_float_to_bf16 on 16 lanes, left in each lane's high half. The low
 * half is left as the rounding made it, not cleared: every caller drops it
 * anyway (a shift, or the mask that merges a packed pair), and a NaN lane
 * needs only its quiet bit set, not a mask first. A NaN is the lane that
 * is not equal to itself: one compare (vcmpunordps on x86, where isnan
 * becomes an add and an integer compare). */
static inline uint16 pe_bf16_round_high16(float16 f)
{
    uint16 u = as_uint16(f);
    return select(u + 0x7FFFu + ((u >> 16) & 1u), u | 0x400000u, as_uint16(f != f));
}
static inline ushort16 pe_bf16_16(float16 f)
{
    return convert_ushort16(pe_bf16_round_high16(f) >> 16);
}
PE_INLINE float16 pe_load16_bf16(global const ushort *p, uint k, bool aligned)
{
    return as_float16(convert_uint16(pe_get16_u16(p + k, aligned)) << 16);
}
PE_INLINE void pe_store16_bf16(global ushort *p, uint k, float16 v, bool aligned)
{
    pe_put16_u16(p + k, pe_bf16_16(v), aligned);
}

PE_DEFINE_ZIPPED16(pe_store_zipped16_f32, pe_store_ordered16_f32, f32, float)
PE_DEFINE_ZIPPED16(pe_store_zipped16_f16, pe_store_ordered16_f16, f16, half)
PE_DEFINE_ZIPPED16(pe_store_zipped16_any_bf16, pe_store_ordered16_any_bf16, bf16, ushort)

/* Float16 vectors rounded to bfloat16 in pairs, on CPUs with AVX-512BW
 * whose tuning row asks for it (PE_BF16_HALVES: Intel's cores gain from
 * it, AMD's do not): the rounding done on 16-bit halves, 32 lanes at a
 * time. The high halves H of both vectors are gathered in the order they
 * are stored, and their low halves L in the same order (below); a value
 * rounds up when L + 0x7FFF + (H & 1) carries out of 16 bits, that is
 * when L | (H & 1) > 0x8000 (the | differs from a + only where L is odd,
 * and L | 1 reaches 0x8001 exactly when L + 1 does): one three-input
 * logic instruction, one unsigned compare into a mask, and H + 1 under
 * that mask. Seven instructions for 32 elements (four gather, three round),
 * where rounding each float's 32 bits takes thirteen. The same bits as
 * pe_float_to_bf16 for every float32 that is not NaN.
 * A NaN needs no test of its own here: every NaN the callers' arithmetic
 * can make has a low half of 0, so it does not round up, and a high half
 * already quiet, which is what pe_float_to_bf16 gives. Their inputs (x,
 * an embedding row, a query or key) are bfloat16 widened (low halves 0),
 * and the values, cos, sin and scale are finite (the host refuses any
 * other scale); so a result is NaN only where an input is, and x86
 * arithmetic returns that operand quieted, payload kept, or for inf * 0
 * and inf - inf its default NaN 0xFFC00000.
 * The empty asm hides the 1: otherwise clang turns the masked add into a
 * subtraction of the mask widened to a vector (one instruction more). */
#ifndef PE_BF16_HALVES
#define PE_BF16_HALVES 0
#endif
#if PE_X86 && defined(__AVX512BW__) && PE_BF16_HALVES
#define PE_BF16_PACK16 1
typedef ushort pe_u16x32 __attribute__((ext_vector_type(32)));
static inline uint16 pe_bf16_round_halves(pe_u16x32 hi, pe_u16x32 lo)
{
    pe_u16x32 one = 1;
    __asm__("" : "+v"(one));
    return __builtin_astype((lo | (hi & (ushort)1)) > (ushort)0x8000 ? hi + one : hi, uint16);
}
/* Sines and cosines, zipped: (s0, c0, s1, c1, ...), as interleaved rows
 * store them. Pair j's halves stay in lane j: H is (c & 0xFFFF0000) |
 * (s >> 16), L is (c << 16) | (s & 0xFFFF), two shifts and two vpternlog.
 * clang reads those as word shuffles and makes them two vpermt2w, which
 * run one per two cycles on a single port, where each shift or vpternlog
 * takes one; the empty asms keep them apart (and L whole, so that
 * L | (H & 1) is one more vpternlog). */
static inline uint16 pe_bf16_pack_rounded16(float16 sv, float16 cv)
{
    uint16 s = as_uint16(sv), c = as_uint16(cv), s_hi = s >> 16, c_lo = c << 16;
    __asm__("" : "+v"(s_hi), "+v"(c_lo));
    uint16 lo = c_lo | (s & 0xFFFFu);
    __asm__("" : "+v"(lo));
    return pe_bf16_round_halves(__builtin_astype((c & 0xFFFF0000u) | s_hi, pe_u16x32),
                                __builtin_astype(lo, pe_u16x32));
}
/* a then b: a's 16 elements in the low 32 bytes, b's in the high. Rounded
 * as if zipped, then taken apart by one single-source vpermw (one per
 * cycle, where two vpermt2w take four). */
static inline uint16 pe_bf16_pack_rounded16_apart(float16 av, float16 bv)
{
    pe_u16x32 z = __builtin_astype(pe_bf16_pack_rounded16(av, bv), pe_u16x32);
    return __builtin_astype(__builtin_shufflevector(z, z, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                                    22, 24, 26, 28, 30, 1, 3, 5, 7, 9, 11, 13,
                                                    15, 17, 19, 21, 23, 25, 27, 29, 31),
                            uint16);
}
#else
#define PE_BF16_PACK16 0
#endif

/* The bfloat16 shortcut, for rows aligned to 64 bytes on a little-endian
 * device: 32 interleaved elements are 16 uint lanes, each holding one pair
 * (the sine in its low half; a big-endian device takes the generic path), so
 * the pairs are read, added and stored without being widened, zipped or
 * narrowed (the generic path spent most of its time on those). Each element
 * gets the same multiply, add, then rounding. */
PE_INLINE void pe_store_zipped16_bf16(global ushort *orow, global const ushort *xrow, uint k,
                                      float16 sv, float16 cv, bool add, float scale,
                                      bool aligned)
{
#ifdef __ENDIAN_LITTLE__
    if (aligned) {
        if (add) {
            uint16 x = xrow ? *(global const uint16 *)(xrow + k) : (uint16)(0u);
            sv = as_float16(x << 16) * scale + sv;
            cv = as_float16(x & 0xFFFF0000u) * scale + cv;
        }
#if PE_BF16_PACK16
        /* AVX-512BW: both rounded at once on 16-bit halves (above) */
        *(global uint16 *)(orow + k) = pe_bf16_pack_rounded16(sv, cv);
        return;
#endif
        /* elsewhere: the sine's high half into the low half, the cosine's
         * kept in place: one merge. The rounding leaves the low halves
         * uncleared, as the merge drops them (four instructions fewer per
         * 64 bytes) */
        *(global uint16 *)(orow + k) = (pe_bf16_round_high16(sv) >> 16) |
                                        (pe_bf16_round_high16(cv) & 0xFFFF0000u);
        return;
    }
#endif
    pe_store_zipped16_any_bf16(orow, xrow, k, sv, cv, add, scale, aligned);
}

/* Two vectors stored at elements ka and kb of p (a rotary pair's two
 * halves, a split row's sines and cosines, or two halves of 32 interleaved
 * elements): pe_store_two<N>_<type>, two pe_store<N>_<type>; bfloat16 on
 * AVX-512BW rounds both vectors at once on 16-bit halves (above). */
#define PE_DEFINE_STORE_TWO(SUFFIX, T, V, N)                                                   \
    PE_INLINE void pe_store_two##N##_##SUFFIX(global T *p, uint ka, V a, uint kb, V b,         \
                                              bool aligned)                                    \
    {                                                                                          \
        pe_store##N##_##SUFFIX(p, ka, a, aligned);                                             \
        pe_store##N##_##SUFFIX(p, kb, b, aligned);                                             \
    }
PE_DEFINE_STORE_TWO(f32, float, float16, 16)
PE_DEFINE_STORE_TWO(f16, half, float16, 16)
PE_INLINE void pe_store_two16_bf16(global ushort *p, uint ka, float16 a, uint kb, float16 b,
                                   bool aligned)
{
#if PE_BF16_PACK16
    /* AVX-512BW: both vectors rounded at once on 16-bit halves (above) */
    if (aligned) {
        uint16 ab = pe_bf16_pack_rounded16_apart(a, b);
        *(global uint8 *)(p + ka) = ab.lo;
        *(global uint8 *)(p + kb) = ab.hi;
        return;
    }
#endif
    pe_store16_bf16(p, ka, a, aligned);
    pe_store16_bf16(p, kb, b, aligned);
}

/* ---- float64 ---- */
#ifdef cl_khr_fp64
PE_INLINE double8 pe_load8_f64(global const double *p, uint k, bool aligned)
{
    return pe_get8_f64(p + k, aligned);
}
PE_INLINE void pe_store8_f64(global double *p, uint k, double8 v, bool aligned)
{
    pe_put8_f64(p + k, v, aligned);
}
/* (s0, c0, s1, c1, ...): the interleaved layout of four pairs. */
static inline double8 pe_zip4_f64(double4 s, double4 c)
{
    return (double8)(s.s0, c.s0, s.s1, c.s1, s.s2, c.s2, s.s3, c.s3);
}
PE_DEFINE_ZIPPED(pe_store_zipped8_f64, pe_store_ordered8_f64, pe_load8_f64, pe_store8_f64, double,
                 double8, double, 8, pe_zip4_f64)
PE_DEFINE_STORE_TWO(f64, double, double8, 8)
#endif

/* Rotate one interleaved vector (a0, b0, a1, b1, ...) by its half as many
 * angles: pe_rotate_zipped_<vector type>. */
static inline float16 pe_rotate_zipped_float16(float16 v, float8 c, float8 s)
{
    float8 a = v.even, b = v.odd;
    return pe_zip8(pe_rotate_a_float8(a, b, c, s), pe_rotate_b_float8(a, b, c, s));
}
#ifdef cl_khr_fp64
static inline double8 pe_rotate_zipped_double8(double8 v, double4 c, double4 s)
{
    double4 a = v.even, b = v.odd;
    return pe_zip4_f64(pe_rotate_a_double4(a, b, c, s), pe_rotate_b_double4(a, b, c, s));
}
#endif
