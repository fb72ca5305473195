/*
 * clpe_storage.cl - loading each storage type into its arithmetic type and
 * storing back with one rounding (round to nearest even): one element, or
 * a (sin, cos) pair of adjacent elements. k counts elements from p. The
 * kernels call these as pe_load_<type>, pe_store2_<type>, ... The vector
 * shape's wider moves are in clpe_vector_storage.cl.
 */

/* ---- float32 ---- */
static inline float pe_load_f32(global const float *p, uint k) { return p[k]; }
static inline void pe_store_f32(global float *p, uint k, float v) { p[k] = v; }
static inline float2 pe_load2_f32(global const float *p, uint k) { return vload2(0, p + k); }
static inline void pe_store2_f32(global float *p, uint k, float2 v) { vstore2(v, 0, p + k); }

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

/* ---- float64 ---- */
#ifdef cl_khr_fp64
static inline double pe_load_f64(global const double *p, uint k) { return p[k]; }
static inline void pe_store_f64(global double *p, uint k, double v) { p[k] = v; }
static inline double2 pe_load2_f64(global const double *p, uint k) { return vload2(0, p + k); }
static inline void pe_store2_f64(global double *p, uint k, double2 v) { vstore2(v, 0, p + k); }
#endif
