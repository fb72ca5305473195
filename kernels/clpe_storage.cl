/*
 * clpe_storage.cl - loading each storage type into its arithmetic type and
 * storing back with one rounding (round to nearest even), one function per
 * access width: scalar, a (sin, cos) pair, and the 16-wide vectors of the
 * float16 path. k counts elements from p. The row kernels (clpe_rows.cl)
 * call these as pe_load_<type>, pe_store2_<type>, pe_load16_<type>, ...
 */

/* The 16-wide moves take a whole vector at once when the address is aligned
 * to the vector's size (the common case: buffers and rows that start on a
 * 32- or 64-byte boundary), else vload16/vstore16, which need only element
 * alignment. PoCL splits an unaligned vstore16 of ushort into sixteen 2-byte
 * stores: the aligned store alone made the 16-bit fused add 2.5x faster on
 * the CPU (bench/RESULTS.md). The bits moved are the same either way. */
#define PE_DEFINE_MOVE16(SUFFIX, T)                                                            \
    static inline T##16 pe_get16_##SUFFIX(global const T *p)                                   \
    {                                                                                          \
        return ((ulong)p & (sizeof(T##16) - 1)) == 0 ? *(global const T##16 *)p               \
                                                     : vload16(0, p);                          \
    }                                                                                          \
    static inline void pe_put16_##SUFFIX(global T *p, T##16 v)                                 \
    {                                                                                          \
        if (((ulong)p & (sizeof(T##16) - 1)) == 0)                                             \
            *(global T##16 *)p = v;                                                            \
        else                                                                                   \
            vstore16(v, 0, p);                                                                 \
    }

PE_DEFINE_MOVE16(f32, float)
PE_DEFINE_MOVE16(u16, ushort)

/* ---- float32 ---- */
static inline float pe_load_f32(global const float *p, uint k) { return p[k]; }
static inline void pe_store_f32(global float *p, uint k, float v) { p[k] = v; }
static inline float2 pe_load2_f32(global const float *p, uint k) { return vload2(0, p + k); }
static inline void pe_store2_f32(global float *p, uint k, float2 v) { vstore2(v, 0, p + k); }
static inline float16 pe_load16_f32(global const float *p, uint k) { return pe_get16_f32(p + k); }
static inline void pe_store16_f32(global float *p, uint k, float16 v) { pe_put16_f32(p + k, v); }

/* ---- float16: vload_half / vstore_half_rte need no cl_khr_fp16 ----
 * The 16-wide forms convert through a private vector and move the bits as
 * ushort16: PoCL's vstore_half8 on a global pointer that is not 16-byte
 * aligned crashed (an element offset of 3 halves), and the spec asks only
 * for 2-byte alignment. The conversions are the same correctly rounded ones
 * either way. */
static inline float pe_load_f16(global const half *p, uint k) { return vload_half(k, p); }
static inline void pe_store_f16(global half *p, uint k, float v) { vstore_half_rte(v, k, p); }
static inline float2 pe_load2_f16(global const half *p, uint k) { return vload_half2(0, p + k); }
static inline void pe_store2_f16(global half *p, uint k, float2 v) { vstore_half2_rte(v, 0, p + k); }
static inline float16 pe_load16_f16(global const half *p, uint k)
{
    ushort16 bits = pe_get16_u16((global const ushort *)p + k);
    return vload_half16(0, (private const half *)&bits);
}
static inline void pe_store16_f16(global half *p, uint k, float16 v)
{
    ushort16 bits;
    vstore_half16_rte(v, 0, (private half *)&bits);
    pe_put16_u16((global ushort *)p + k, bits);
}

/* ---- bfloat16: the top half of a float32 (pe_float_to_bf16 rounds) ---- */
static inline ushort16 pe_bf16_16(float16 f)
{
    uint16 u = as_uint16(f);
    uint16 rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    return convert_ushort16(select(rounded, (u >> 16) | 0x40u, (u & 0x7FFFFFFFu) > 0x7F800000u));
}
static inline float pe_load_bf16(global const ushort *p, uint k) { return pe_bf16_to_float(p[k]); }
static inline void pe_store_bf16(global ushort *p, uint k, float v)
{
    p[k] = (ushort)pe_float_to_bf16(v);
}
static inline float2 pe_load2_bf16(global const ushort *p, uint k)
{
    return as_float2(convert_uint2(vload2(0, p + k)) << 16);
}
static inline void pe_store2_bf16(global ushort *p, uint k, float2 v)
{
    vstore2((ushort2)((ushort)pe_float_to_bf16(v.x), (ushort)pe_float_to_bf16(v.y)), 0, p + k);
}
static inline float16 pe_load16_bf16(global const ushort *p, uint k)
{
    return as_float16(convert_uint16(pe_get16_u16(p + k)) << 16);
}
static inline void pe_store16_bf16(global ushort *p, uint k, float16 v)
{
    pe_put16_u16(p + k, pe_bf16_16(v));
}

/* ---- float64 (scalar path only) ---- */
#ifdef cl_khr_fp64
static inline double pe_load_f64(global const double *p, uint k) { return p[k]; }
static inline void pe_store_f64(global double *p, uint k, double v) { p[k] = v; }
static inline double2 pe_load2_f64(global const double *p, uint k) { return vload2(0, p + k); }
static inline void pe_store2_f64(global double *p, uint k, double2 v) { vstore2(v, 0, p + k); }
#endif
