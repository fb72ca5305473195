/* SPDX-License-Identifier: Apache-2.0 */
/*
 * baselines.cl - what a user would write instead of clpe's fused calls: a
 * position-encoding table computed once and kept in device memory, then
 *
 *   table_add         x[b][s][c] += T[s][c]
 *   gather_table_add  out[b][s][c] = E[ids[b][s]][c] * scale + T[s][c]
 *   rope_table        q and k rotated in place from a cos/sin cache of
 *                     [seq, head_dim] rows, as Hugging Face's
 *                     apply_rotary_pos_emb (half-split pairs):
 *                     q' = q * cos + rotate_half(q) * sin
 *
 * The table has seq rows shared by every sequence of the batch, as a user
 * keeps it. Arithmetic is clpe's: float32 (float64 for f64), one rounding
 * at the store; 16-bit dtypes are loaded and stored with the core OpenCL C
 * conversions (vload_half / vstore_half_rte for f16, integer shifts for
 * bf16), so no cl_khr_fp16 is needed.
 *
 * The body is written once and compiled per dtype with one of -DBENCH_F32,
 * -DBENCH_F16, -DBENCH_BF16 or -DBENCH_F64, which picks the storage type
 * `store_t`, the arithmetic type `real` and their conversions. Each kernel
 * comes with one element per work-item and with four (the `4` kernels, d a
 * multiple of 4); clpe-bench holds clpe against the faster of the two. The
 * runtime picks the work-group size, as a plain user kernel would get.
 */

#if defined(BENCH_F32)
typedef float store_t;
typedef float real;
typedef float4 real4;
inline real load1(const __global store_t *p, size_t i) { return p[i]; }
inline void store1(__global store_t *p, size_t i, real v) { p[i] = v; }
inline real4 load4(const __global store_t *p, size_t i4) { return vload4(i4, p); }
inline void store4(__global store_t *p, size_t i4, real4 v) { vstore4(v, i4, p); }

#elif defined(BENCH_F16)
typedef half store_t;
typedef float real;
typedef float4 real4;
inline real load1(const __global store_t *p, size_t i) { return vload_half(i, p); }
inline void store1(__global store_t *p, size_t i, real v) { vstore_half_rte(v, i, p); }
inline real4 load4(const __global store_t *p, size_t i4) { return vload_half4(i4, p); }
inline void store4(__global store_t *p, size_t i4, real4 v) { vstore_half4_rte(v, i4, p); }

#elif defined(BENCH_BF16)
typedef ushort store_t;
typedef float real;
typedef float4 real4;
/* bfloat16 is the top half of a float32; round to nearest even, NaN kept. */
inline ushort to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
inline ushort4 to_bf16_4(float4 f)
{
    uint4 u = as_uint4(f);
    uint4 rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    return convert_ushort4(select(rounded, (u >> 16) | 0x40u, (u & 0x7FFFFFFFu) > 0x7F800000u));
}
inline real load1(const __global store_t *p, size_t i) { return as_float((uint)p[i] << 16); }
inline void store1(__global store_t *p, size_t i, real v) { p[i] = to_bf16(v); }
inline real4 load4(const __global store_t *p, size_t i4)
{
    return as_float4(convert_uint4(vload4(i4, p)) << 16);
}
inline void store4(__global store_t *p, size_t i4, real4 v) { vstore4(to_bf16_4(v), i4, p); }

#elif defined(BENCH_F64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double store_t;
typedef double real;
typedef double4 real4;
inline real load1(const __global store_t *p, size_t i) { return p[i]; }
inline void store1(__global store_t *p, size_t i, real v) { p[i] = v; }
inline real4 load4(const __global store_t *p, size_t i4) { return vload4(i4, p); }
inline void store4(__global store_t *p, size_t i4, real4 v) { vstore4(v, i4, p); }

#else
#error "compile with one of -DBENCH_F32, -DBENCH_F16, -DBENCH_BF16, -DBENCH_F64"
#endif

/* 2-D range: dimension 0 runs over the seq * d elements of one sequence,
 * dimension 1 over the batch. */
__kernel void table_add(__global store_t *x, __global const store_t *table)
{
    size_t i = get_global_id(0);
    size_t xi = get_global_id(1) * get_global_size(0) + i;
    store1(x, xi, load1(x, xi) + load1(table, i));
}

/* The same, four elements per work-item (indices in 4-vectors). */
__kernel void table_add4(__global store_t *x, __global const store_t *table)
{
    size_t i = get_global_id(0);
    size_t xi = get_global_id(1) * get_global_size(0) + i;
    store4(x, xi, load4(x, xi) + load4(table, i));
}

/* 3-D range: dimension 0 runs along the row (d), 1 over the sequence (seq),
 * 2 over the batch. An id outside [0, vocab) reads no embedding row, as in
 * clpe_enqueue_gather. */
__kernel void gather_table_add(__global const int *ids, __global const store_t *emb,
                               __global const store_t *table, __global store_t *out, uint d,
                               uint vocab, real scale)
{
    size_t c = get_global_id(0);
    size_t s = get_global_id(1);
    size_t row = get_global_id(2) * get_global_size(1) + s;
    int id = ids[row];
    real e = 0;
    if ((uint)id < vocab)
        e = load1(emb, (size_t)id * d + c);
    store1(out, row * d + c, e * scale + load1(table, s * d + c));
}

/* The same, four elements per work-item: d4 = d / 4 vectors per row. */
__kernel void gather_table_add4(__global const int *ids, __global const store_t *emb,
                                __global const store_t *table, __global store_t *out, uint d4,
                                uint vocab, real scale)
{
    size_t c = get_global_id(0);
    size_t s = get_global_id(1);
    size_t row = get_global_id(2) * get_global_size(1) + s;
    int id = ids[row];
    real4 e = 0;
    if ((uint)id < vocab)
        e = load4(emb, (size_t)id * d4 + c);
    store4(out, row * d4 + c, e * scale + load4(table, s * d4 + c));
}

/* 3-D range: dimension 0 runs over the pairs (j, j + half) of a head,
 * dimension 1 over the heads of a token (query heads first, then key heads),
 * dimension 2 over the tokens (batch * seq). Each pair reads both halves of
 * its cache row, as Hugging Face's elementwise q * cos + rotate_half(q) *
 * sin does; in place, so one work-item owns a pair. The arithmetic is
 * clpe's: a' = fma(a, c, -(b * s)), b' = fma(a, s, b * c), rounded once at
 * the store. */
__kernel void rope_table(__global store_t *q, __global store_t *k, __global const store_t *cos_,
                         __global const store_t *sin_, uint heads, uint head_dim, uint seq)
{
    size_t j = get_global_id(0);
    size_t head = get_global_id(1);
    size_t t = get_global_id(2);
    size_t half_dim = get_global_size(0), kv_heads = get_global_size(1) - heads;
    __global store_t *x = head < heads ? q + (t * heads + head) * head_dim
                                       : k + (t * kv_heads + head - heads) * head_dim;
    size_t row = (t % seq) * head_dim;
    real a = load1(x, j), b = load1(x, j + half_dim);
    real ca = load1(cos_, row + j), sa = load1(sin_, row + j);
    real cb = load1(cos_, row + j + half_dim), sb = load1(sin_, row + j + half_dim);
    store1(x, j, fma(a, ca, -(b * sa)));
    store1(x, j + half_dim, fma(a, sb, b * cb));
}

/* The same, four pairs per work-item (head_dim a multiple of 8; indices in
 * 4-vectors). */
__kernel void rope_table4(__global store_t *q, __global store_t *k, __global const store_t *cos_,
                          __global const store_t *sin_, uint heads, uint head_dim, uint seq)
{
    size_t j = get_global_id(0);
    size_t head = get_global_id(1);
    size_t t = get_global_id(2);
    size_t half4 = get_global_size(0), kv_heads = get_global_size(1) - heads;
    __global store_t *x = head < heads ? q + (t * heads + head) * head_dim
                                       : k + (t * kv_heads + head - heads) * head_dim;
    __global const store_t *c = cos_ + (t % seq) * head_dim, *s = sin_ + (t % seq) * head_dim;
    real4 a = load4(x, j), b = load4(x, j + half4);
    real4 ca = load4(c, j), sa = load4(s, j), cb = load4(c, j + half4), sb = load4(s, j + half4);
    store4(x, j, fma(a, ca, -(b * sa)));
    store4(x, j + half4, fma(a, sb, b * cb));
}
