/* SPDX-License-Identifier: Apache-2.0 */
/*
 * streams.cl - the reference kernels clpe-bench measures clpe against: the
 * fastest a kernel can move the same bytes over the same buffers on the same
 * device, with no position-encoding arithmetic.
 *
 *   stream_T   x[i] = x[i] * a + b      reads and writes each element once:
 *                                       the limit for the fused add
 *   fill_T     x[i] = v                 writes each element once: the limit
 *                                       for the table
 *   gather_T   out[r][c] = emb[ids[r]][c] * a + b
 *                                       reads an int32 id per row and that
 *                                       embedding row, writes the output row:
 *                                       the limit for the fused gather
 *   rope_stream_T  q[t][c] = q[t][c] * a + b, k[t][c] = k[t][c] * a + b
 *                                       reads and writes every element of
 *                                       queries and keys once, as one
 *                                       range: the limit for rotary
 *
 * a, b and v are kernel arguments (1, 0, and for v the value each byte of
 * which is 0x3C, the data clpe-bench fills its buffers with: not zero, see
 * device.h), so the compiler cannot prove the loads useless and drop them.
 * Element types go by width, not by meaning: float32 uses fma like clpe;
 * the 16-bit dtypes stream ushort and float64 streams ulong, which move the
 * same bytes without needing cl_khr_fp16 or cl_khr_fp64. The runtime picks
 * the work-group size, as a plain user kernel would get.
 *
 * Each kernel comes twice: one element per work-item, and four (stream4_,
 * fill4_, gather4_: a 4-vector per work-item). Which is faster depends on
 * the device (GPUs issue fewer, wider memory operations with the second;
 * PoCL vectorizes the first across work-items itself), so clpe-bench times
 * both and holds clpe against the faster one.
 */

#define MAD_FLOAT(x, a, b) fma((x), (a), (b))
#define MAD_INT(x, a, b) ((x) * (a) + (b))

/* One kernel trio per element type T, named by suffix S, with arithmetic MAD. */
#define BENCH_STREAMS(T, S, MAD)                                                        \
    __kernel void stream_##S(__global T *x, T a, T b)                                   \
    {                                                                                   \
        size_t i = get_global_id(0);                                                    \
        x[i] = (T)MAD(x[i], a, b);                                                      \
    }                                                                                   \
                                                                                        \
    __kernel void fill_##S(__global T *x, T v)                                          \
    {                                                                                   \
        x[get_global_id(0)] = v;                                                        \
    }                                                                                   \
                                                                                        \
    /* 2-D range: dimension 0 runs along the row (d), dimension 1 over rows. An id      \
     * outside [0, vocab) reads nothing, as in clpe_enqueue_gather. */                  \
    __kernel void gather_##S(__global const int *ids, __global const T *emb,            \
                             __global T *out, uint d, uint vocab, T a, T b)             \
    {                                                                                   \
        size_t c = get_global_id(0);                                                    \
        size_t r = get_global_id(1);                                                    \
        int id = ids[r];                                                                \
        T e = (T)0;                                                                     \
        if ((uint)id < vocab)                                                           \
            e = emb[(size_t)id * d + c];                                                \
        out[r * d + c] = (T)MAD(e, a, b);                                               \
    }                                                                                   \
                                                                                        \
    /* nq: elements of the queries; the range covers queries then keys, so only        \
     * one work-group straddles the two. */                                             \
    __kernel void rope_stream_##S(__global T *q, __global T *k, ulong nq, T a, T b)     \
    {                                                                                   \
        size_t i = get_global_id(0);                                                    \
        if (i < nq)                                                                     \
            q[i] = (T)MAD(q[i], a, b);                                                  \
        else                                                                            \
            k[i - nq] = (T)MAD(k[i - nq], a, b);                                        \
    }

/* The same with a 4-vector VT of T per work-item; n and d multiples of 4. */
#define BENCH_STREAMS4(T, VT, S, MAD)                                                   \
    __kernel void stream4_##S(__global VT *x, T a, T b)                                 \
    {                                                                                   \
        size_t i = get_global_id(0);                                                    \
        x[i] = MAD(x[i], (VT)a, (VT)b);                                                 \
    }                                                                                   \
                                                                                        \
    __kernel void fill4_##S(__global VT *x, T v)                                        \
    {                                                                                   \
        x[get_global_id(0)] = (VT)v;                                                    \
    }                                                                                   \
                                                                                        \
    /* d4 = d / 4 vectors per row. */                                                   \
    __kernel void gather4_##S(__global const int *ids, __global const VT *emb,          \
                              __global VT *out, uint d4, uint vocab, T a, T b)          \
    {                                                                                   \
        size_t c = get_global_id(0);                                                    \
        size_t r = get_global_id(1);                                                    \
        int id = ids[r];                                                                \
        VT e = (VT)0;                                                                   \
        if ((uint)id < vocab)                                                           \
            e = emb[(size_t)id * d4 + c];                                               \
        out[r * d4 + c] = MAD(e, (VT)a, (VT)b);                                         \
    }                                                                                   \
                                                                                        \
    /* nq4: 4-vectors of the queries. */                                                \
    __kernel void rope_stream4_##S(__global VT *q, __global VT *k, ulong nq4, T a, T b) \
    {                                                                                   \
        size_t i = get_global_id(0);                                                    \
        if (i < nq4)                                                                    \
            q[i] = MAD(q[i], (VT)a, (VT)b);                                             \
        else                                                                            \
            k[i - nq4] = MAD(k[i - nq4], (VT)a, (VT)b);                                 \
    }

BENCH_STREAMS(float, f32, MAD_FLOAT)
BENCH_STREAMS(ushort, u16, MAD_INT)
BENCH_STREAMS(ulong, u64, MAD_INT)
BENCH_STREAMS4(float, float4, f32, MAD_FLOAT)
BENCH_STREAMS4(ushort, ushort4, u16, MAD_INT)
BENCH_STREAMS4(ulong, ulong4, u64, MAD_INT)
