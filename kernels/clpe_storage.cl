/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_storage.cl - loading each storage type into its arithmetic type and
 * storing back with one rounding (round to nearest even): one element, or
 * a (sin, cos) pair of adjacent elements. k counts elements from p. The
 * kernels call these as pe_load_<type>, pe_store2_<type>, ... The vector
 * shape's wider moves are in clpe_vector_storage.cl.
 *
 * For rotary: pe_load_word / pe_store_word move two adjacent elements
 * that start at an even element as one aligned word (the caller knows it
 * is aligned; vload2 may assume no more than one element's alignment).
 */

/* ---- float32 ---- */
static inline float pe_load_f32(global const float *p, uint k) { return p[k]; }
static inline void pe_store_f32(global float *p, uint k, float v) { p[k] = v; }
static inline float2 pe_load2_f32(global const float *p, uint k) { return vload2(0, p + k); }
static inline void pe_store2_f32(global float *p, uint k, float2 v) { vstore2(v, 0, p + k); }
static inline float2 pe_load_word_f32(global const float *p) { return *(global const float2 *)p; }
static inline void pe_store_word_f32(global float *p, float2 v) { *(global float2 *)p = v; }

/* ---- float16: vload_half / vstore_half need no cl_khr_fp16 ----
 * vstore_half rounds in the default rounding mode, which for OpenCL C is
 * round to nearest even: the rounding of vstore_half_rte, so the same bits.
 * Written without the suffix, it is the hardware's conversion where the
 * device has one (a single cvt.rn.f16.f32 on NVIDIA's GPUs, v_cvt_f16_f32
 * on AMD's), where libclc builds vstore_half_rte from some 40 integer
 * operations around it. */
static inline float pe_load_f16(global const half *p, uint k) { return vload_half(k, p); }
static inline void pe_store_f16(global half *p, uint k, float v) { vstore_half(v, k, p); }
static inline float2 pe_load2_f16(global const half *p, uint k) { return vload_half2(0, p + k); }
static inline void pe_store2_f16(global half *p, uint k, float2 v) { vstore_half2(v, 0, p + k); }
/* the word's bits pass through a private ushort2, which the compiler keeps
 * in a register: one 32-bit load or store */
static inline float2 pe_load_word_f16(global const half *p)
{
    ushort2 u = *(global const ushort2 *)p;
    return vload_half2(0, (private const half *)&u);
}
static inline void pe_store_word_f16(global half *p, float2 v)
{
    ushort2 u;
    vstore_half2(v, 0, (private half *)&u);
    *(global ushort2 *)p = u;
}

/* ---- bfloat16: the top half of a float32 (pe_float_to_bf16 rounds) ---- */
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
static inline float2 pe_load_word_bf16(global const ushort *p)
{
    return as_float2(convert_uint2(*(global const ushort2 *)p) << 16);
}
static inline void pe_store_word_bf16(global ushort *p, float2 v)
{
    *(global ushort2 *)p = (ushort2)((ushort)pe_float_to_bf16(v.x), (ushort)pe_float_to_bf16(v.y));
}

/* ---- float64 ---- */
#ifdef cl_khr_fp64
static inline double pe_load_f64(global const double *p, uint k) { return p[k]; }
static inline void pe_store_f64(global double *p, uint k, double v) { p[k] = v; }
static inline double2 pe_load2_f64(global const double *p, uint k) { return vload2(0, p + k); }
static inline void pe_store2_f64(global double *p, uint k, double2 v) { vstore2(v, 0, p + k); }
static inline double2 pe_load_word_f64(global const double *p) { return *(global const double2 *)p; }
static inline void pe_store_word_f64(global double *p, double2 v) { *(global double2 *)p = v; }
#endif
