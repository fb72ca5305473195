/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decoder_kernels.cl - the decoder's own small kernels, float32 throughout.
 *
 * Matrix products are CLBlast's and every position step is clpe's; these are
 * the rest of a transformer layer. Rows are [tokens, width], row-major.
 * Built with -D HEAD_DIM=<head_dim> -D NORM_GROUP=<work-group size of the
 * norms, a power of two> -D CACHE_DTYPE=<0 float32, 1 float16, 2 bfloat16,
 * 3 FP8 E4M3, 4 FP8 E5M2>, the KV cache's elements (converted from float32
 * with round to nearest even, as clpe_enqueue_rope_kv converts them; an FP8
 * cache is written by clpe_enqueue_rope_kv only and read here with
 * clpe_device.h's clpe_fp8_*_to_float), -D KEY_SCALE=<float> -D
 * VALUE_SCALE=<float>, an FP8 cache's scales. With an FP8 cache, or for
 * Llama with --rope device, clpe_device.h (clpe_device_source()) comes
 * first in the program; --rope device adds -D ROPE_ON_DEVICE=1 and the
 * rotary object's word options for the kernels at the end of this file.
 */

/* No a * b + c fused into an fma behind the code's back: clpe_device.h
 * turns contraction off for what follows it, and with it off here too the
 * program computes the same bits with or without the header. */
#pragma OPENCL FP_CONTRACT OFF

/* Sum of a row's values over one work-group, in a fixed order (so every
 * run gives the same bits). */
static float group_sum(float value, __local float *scratch)
{
    const size_t lid = get_local_id(0);
    scratch[lid] = value;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t stride = NORM_GROUP / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            scratch[lid] += scratch[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float total = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

/* Llama's RMSNorm: out = weight * (x / sqrt(mean(x^2) + eps)). One
 * work-group of NORM_GROUP per row. */
__kernel void rms_norm(__global const float *x, __global const float *weight,
                       __global float *out, uint width, float eps)
{
    __local float scratch[NORM_GROUP];
    const size_t row = get_group_id(0), lid = get_local_id(0);
    __global const float *xr = x + row * width;
    float sum = 0.0f;
    for (uint i = lid; i < width; i += NORM_GROUP)
        sum += xr[i] * xr[i];
    const float inv = 1.0f / sqrt(group_sum(sum, scratch) / (float)width + eps);
    for (uint i = lid; i < width; i += NORM_GROUP)
        out[row * width + i] = weight[i] * (xr[i] * inv);
}

/* torch.nn.LayerNorm: out = (x - mean) / sqrt(var + eps) * weight + bias,
 * with the biased variance. */
__kernel void layer_norm(__global const float *x, __global const float *weight,
                         __global const float *bias, __global float *out, uint width, float eps)
{
    __local float scratch[NORM_GROUP];
    const size_t row = get_group_id(0), lid = get_local_id(0);
    __global const float *xr = x + row * width;
    float sum = 0.0f;
    for (uint i = lid; i < width; i += NORM_GROUP)
        sum += xr[i];
    const float mean = group_sum(sum, scratch) / (float)width;
    float sq = 0.0f;
    for (uint i = lid; i < width; i += NORM_GROUP) {
        const float c = xr[i] - mean;
        sq += c * c;
    }
    const float inv = 1.0f / sqrt(group_sum(sq, scratch) / (float)width + eps);
    for (uint i = lid; i < width; i += NORM_GROUP)
        out[row * width + i] = (xr[i] - mean) * inv * weight[i] + bias[i];
}

/* y[r][c] += bias[c] over rows of `width`; one work-item per element. */
__kernel void add_bias(__global float *y, __global const float *bias, uint width)
{
    const size_t i = get_global_id(0);
    y[i] += bias[i % width];
}

/* The residual connection: x += y, elementwise. */
__kernel void add_into(__global float *x, __global const float *y)
{
    const size_t i = get_global_id(0);
    x[i] += y[i];
}

#define ACT_SILU 0
#define ACT_GELU 1
#define ACT_GELU_TANH 2
#define ACT_RELU 3

static float activate(float v, int act)
{
    switch (act) {
    case ACT_SILU:
        return v / (1.0f + exp(-v));
    case ACT_GELU:
        return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));
    case ACT_GELU_TANH:
        return 0.5f * v * (1.0f + tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    default:
        return fmax(v, 0.0f);
    }
}

/* In place: x = act(x) (XGLM's fc1 output). */
__kernel void activation(__global float *x, int act)
{
    const size_t i = get_global_id(0);
    x[i] = activate(x[i], act);
}

/* Llama's gated MLP: gate = act(gate) * up. */
__kernel void gated_activation(__global float *gate, __global const float *up, int act)
{
    const size_t i = get_global_id(0);
    gate[i] = activate(gate[i], act) * up[i];
}

/* The decoder's matrix product, y = x W^T (+ bias), W [out, in] as a Hugging
 * Face Linear stores it, rows of x and y at element offsets. Each output is
 * one dot product summed in the order k = 0, 1, ..., in - 1 (the tiles only
 * bring the operands through local memory), so its bits do not depend on
 * how many rows the call has or which: a token's values are the same alone
 * or in any batch. One work-item per output, groups of TILE x TILE. */
#define TILE 16
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void linear(__global const float *x, ulong x_off, __global const float *w,
            __global const float *bias, int has_bias, __global float *y, ulong y_off, uint rows,
            uint in, uint out)
{
    __local float xs[TILE][TILE];
    __local float ws[TILE][TILE + 1];
    const uint lo = get_local_id(0), lr = get_local_id(1);
    const uint o0 = get_group_id(0) * TILE, r0 = get_group_id(1) * TILE;
    const uint o = o0 + lo, r = r0 + lr;
    float acc = 0.0f;
    for (uint k0 = 0; k0 < in; k0 += TILE) {
        const uint kx = k0 + lo;
        xs[lr][lo] = r0 + lr < rows && kx < in ? x[x_off + (size_t)(r0 + lr) * in + kx] : 0.0f;
        ws[lr][lo] = o0 + lr < out && kx < in ? w[(size_t)(o0 + lr) * in + kx] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint kn = min((uint)TILE, in - k0);
        for (uint k = 0; k < kn; k++)
            acc += xs[lr][k] * ws[lo][k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (r < rows && o < out)
        y[y_off + (size_t)r * out + o] = has_bias ? acc + bias[o] : acc;
}

/* The same products for a few rows (decode steps), one work-item per
 * output over global memory: each output the same dot product in the same
 * order as linear's, so the same bits, without a tile of rows to fill. */
__kernel void linear_rows(__global const float *x, ulong x_off, __global const float *w,
                          __global const float *bias, int has_bias, __global float *y,
                          ulong y_off, uint in, uint out)
{
    const uint o = get_global_id(0), r = get_global_id(1);
    __global const float *xr = x + x_off + (size_t)r * in;
    __global const float *wo = w + (size_t)o * in;
    float acc = 0.0f;
    for (uint k = 0; k < in; k++)
        acc += xr[k] * wo[k];
    y[y_off + (size_t)r * out + o] = has_bias ? acc + bias[o] : acc;
}

/* dst[i] = src[index[i]], rows of `width` (the rows whose logits are asked for). */
__kernel void gather_rows(__global const float *src, __global float *dst,
                          __global const uint *index, uint width)
{
    const size_t i = get_global_id(0) / width, c = get_global_id(0) % width;
    dst[get_global_id(0)] = src[(size_t)index[i] * width + c];
}

/* The KV cache's elements: cache_t in memory, float in arithmetic; keys
 * read with key_load, values with value_load (an FP8 cache's two scales). */
#if CACHE_DTYPE == 3 || CACHE_DTYPE == 4
typedef uchar cache_t;
#if CACHE_DTYPE == 3
#define FP8_TO_FLOAT clpe_fp8_e4m3_to_float
#else
#define FP8_TO_FLOAT clpe_fp8_e5m2_to_float
#endif
static float key_load(__global const cache_t *p, size_t i)
{
    return FP8_TO_FLOAT(p[i], KEY_SCALE);
}
static float value_load(__global const cache_t *p, size_t i)
{
    return FP8_TO_FLOAT(p[i], VALUE_SCALE);
}
#elif CACHE_DTYPE == 1
typedef half cache_t;
static float cache_load(__global const cache_t *p, size_t i)
{
    return vload_half(i, p);
}
static void cache_store(__global cache_t *p, size_t i, float v)
{
    vstore_half_rte(v, i, p);
}
#elif CACHE_DTYPE == 2
typedef ushort cache_t;
static float cache_load(__global const cache_t *p, size_t i)
{
    return as_float((uint)p[i] << 16);
}
static void cache_store(__global cache_t *p, size_t i, float v)
{
    const uint u = as_uint(v);
    if (isnan(v)) /* a quiet NaN keeps its sign */
        p[i] = (ushort)((u >> 16) | 0x40);
    else /* round to nearest even on the 16 bits dropped */
        p[i] = (ushort)((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
#else
typedef float cache_t;
static float cache_load(__global const cache_t *p, size_t i)
{
    return p[i];
}
static void cache_store(__global cache_t *p, size_t i, float v)
{
    p[i] = v;
}
#endif
#if CACHE_DTYPE < 3
#define key_load cache_load
#define value_load cache_load
#define CACHE_STORE 1 /* the decoder may write the cache itself */
#endif

#ifdef CACHE_STORE
/* Token t's row of src into cache slot slots[t] (none when -1); rows of
 * `width` (kv_heads * HEAD_DIM). One work-item per element. */
__kernel void scatter_rows(__global const float *src, __global cache_t *cache,
                           __global const long *slots, uint width)
{
    const size_t t = get_global_id(0) / width, c = get_global_id(0) % width;
    const long slot = slots[t];
    if (slot >= 0)
        cache_store(cache, (size_t)slot * width + c, src[get_global_id(0)]);
}
#endif

/* The cache slot of row j of a sequence whose block table starts at
 * tables[table]. */
static size_t kv_slot(__global const uint *tables, uint table, uint j, uint block_size)
{
    return (size_t)tables[table + j / block_size] * block_size + j % block_size;
}

/* Causal self-attention of one query qr (one token, one head) over its
 * sequence's rows 0 .. last in the paged cache (with a sliding window, the
 * last `window` of them):
 *   k, v  [slots, kv_heads * HEAD_DIM]
 * softmax(q . k * scale) . v, with the softmax's maximum subtracted first,
 * written to oh. The rows are visited in order, whatever the blocks. */
static void attend(const float *qr, __global const cache_t *k, __global const cache_t *v,
                   __global float *oh, __global const uint *tables, uint table, uint last,
                   uint window, uint block_size, uint kvh, uint kv_width, float scale)
{
    const uint first = window && last >= window ? last - window + 1 : 0;
    float top = -INFINITY;
    for (uint j = first; j <= last; j++) {
        const size_t kj = kv_slot(tables, table, j, block_size) * kv_width + kvh * HEAD_DIM;
        float s = 0.0f;
        for (uint d = 0; d < HEAD_DIM; d++)
            s += qr[d] * key_load(k, kj + d);
        top = fmax(top, s * scale);
    }
    float acc[HEAD_DIM];
    for (uint d = 0; d < HEAD_DIM; d++)
        acc[d] = 0.0f;
    float total = 0.0f;
    for (uint j = first; j <= last; j++) {
        const size_t at = kv_slot(tables, table, j, block_size) * kv_width + kvh * HEAD_DIM;
        float s = 0.0f;
        for (uint d = 0; d < HEAD_DIM; d++)
            s += qr[d] * key_load(k, at + d);
        const float w = exp(s * scale - top);
        total += w;
        for (uint d = 0; d < HEAD_DIM; d++)
            acc[d] += w * value_load(v, at + d);
    }
    for (uint d = 0; d < HEAD_DIM; d++)
        oh[d] = acc[d] / total;
}

/* Attention for a batch of tokens, one work-item per (token, head):
 *   q     [tokens, heads * HEAD_DIM]
 *   out   [tokens, heads * HEAD_DIM]
 *   meta  [tokens] pairs (offset of the token's block table in tables, its row)
 * token t sees rows 0 .. row of its sequence; head h reads kv head
 * h / (heads / kv_heads) (grouped-query attention). */
__kernel void attention(__global const float *q, __global const cache_t *k,
                        __global const cache_t *v, __global float *out,
                        __global const uint *tables, __global const uint *meta, uint block_size,
                        uint heads, uint kv_heads, float scale, uint window)
{
    const uint t = get_global_id(0) / heads, h = get_global_id(0) % heads;
    __global const float *qh = q + ((size_t)t * heads + h) * HEAD_DIM;
    float qr[HEAD_DIM];
    for (uint d = 0; d < HEAD_DIM; d++)
        qr[d] = qh[d];
    attend(qr, k, v, out + ((size_t)t * heads + h) * HEAD_DIM, tables, meta[2 * t],
           meta[2 * t + 1], window, block_size, h / (heads / kv_heads), kv_heads * HEAD_DIM,
           scale);
}

#ifdef ROPE_ON_DEVICE
/* The same attention, rotating each query as it loads it to its token's
 * position, with clpe's rotation of a pair (clpe_rope_pair: the bits
 * clpe_enqueue_rope writes). rope holds a rotary object's words
 * (clpe_rope_device_words). */
__kernel void attention_rotating_q(__global const float *q, __global const cache_t *k,
                                   __global const cache_t *v, __global float *out,
                                   __global const uint *tables, __global const uint *meta,
                                   uint block_size, uint heads, uint kv_heads, float scale,
                                   uint window, __global const ulong *rope,
                                   __global const long *positions)
{
    const uint t = get_global_id(0) / heads, h = get_global_id(0) % heads;
    __global const float *qh = q + ((size_t)t * heads + h) * HEAD_DIM;
    float qr[HEAD_DIM];
    for (uint d = 0; d < HEAD_DIM; d++)
        qr[d] = qh[d];
    const long p = positions[t];
    for (uint i = 0; i < clpe_words_pairs(rope); i++) {
        const uint a = clpe_rope_slot_a(rope, i), b = clpe_rope_slot_b(rope, i);
        const float2 r = clpe_rope_pair(rope, p, i, qh[a], qh[b]);
        qr[a] = r.x;
        qr[b] = r.y;
    }
    attend(qr, k, v, out + ((size_t)t * heads + h) * HEAD_DIM, tables, meta[2 * t],
           meta[2 * t + 1], window, block_size, h / (heads / kv_heads), kv_heads * HEAD_DIM,
           scale);
}

#ifdef CACHE_STORE
/* Keys rotated into the cache in one pass, one work-item per (token, kv
 * head): slot slots[t] gets k's token t rotated to positions[t] (elements
 * past the rotary ones copied as they are). */
__kernel void rope_keys_into_cache(__global const float *k, __global cache_t *cache,
                                   __global const long *slots, uint kv_heads,
                                   __global const ulong *rope, __global const long *positions)
{
    const uint t = get_global_id(0) / kv_heads, h = get_global_id(0) % kv_heads;
    const long slot = slots[t];
    if (slot < 0)
        return;
    const size_t from = ((size_t)t * kv_heads + h) * HEAD_DIM;
    const size_t to = ((size_t)slot * kv_heads + h) * HEAD_DIM;
    const long p = positions[t];
    const uint n = clpe_words_pairs(rope);
    for (uint i = 0; i < n; i++) {
        const uint a = clpe_rope_slot_a(rope, i), b = clpe_rope_slot_b(rope, i);
        const float2 r = clpe_rope_pair(rope, p, i, k[from + a], k[from + b]);
        cache_store(cache, to + a, r.x);
        cache_store(cache, to + b, r.y);
    }
    for (uint d = 2 * n; d < HEAD_DIM; d++)
        cache_store(cache, to + d, k[from + d]);
}
#endif
#endif
