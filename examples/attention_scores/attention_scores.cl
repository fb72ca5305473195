/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attention_scores.cl - a user's own attention-scores kernel that rotates q
 * and k (rotary position embedding) as it loads them, with clpe's exact
 * sine and cosine from clpe_device.h: one head,
 *   scores[t][s] = scale * sum_j rot(q[t], q_pos[t])[j] * rot(k[s], k_pos[s])[j]
 * and, for comparison, the same kernel on q and k that clpe_enqueue_rope
 * has rotated already. The two give the same bits (tests/
 * test_device_header.c checks it): the rotation is the one clpe applies,
 * and both kernels add the products in the same order.
 *
 * The header comes either from an #include, with its folder in the build
 * options (-I), or from clpe_device_source() put before this text; its
 * include guard then skips the #include.
 */
#ifndef CLPE_DEVICE_H
#include "clpe_device.h"
#endif

/* The dot product of one query and one key of head_dim elements: pair by
 * pair (element a, then b), then the elements after the rotary ones
 * (partial rotary leaves them as they are). With rotate, each pair is
 * rotated to its token's position as it is loaded. */
static inline float head_dot(global const float *q, global const float *k, long q_pos,
                             long k_pos, global const ulong *rope, uint head_dim, bool rotate)
{
    uint pairs = clpe_words_pairs(rope);
    float acc = 0.0f;
    for (uint i = 0; i < pairs; ++i) {
        uint a = clpe_rope_slot_a(rope, i), b = clpe_rope_slot_b(rope, i);
        float2 qv = (float2)(q[a], q[b]);
        float2 kv = (float2)(k[a], k[b]);
        if (rotate) {
            qv = clpe_rope_pair(rope, q_pos, i, qv.x, qv.y);
            kv = clpe_rope_pair(rope, k_pos, i, kv.x, kv.y);
        }
        acc = fma(qv.x, kv.x, acc);
        acc = fma(qv.y, kv.y, acc);
    }
    for (uint j = 2 * pairs; j < head_dim; ++j)
        acc = fma(q[j], k[j], acc);
    return acc;
}

/* One work-item per score: dimension 0 the key s, dimension 1 the query t.
 * q and k: rows of one head, q_pitch and k_pitch elements apart (a head of
 * a [tokens, heads * head_dim] projection output: its offset, and
 * heads * head_dim). scores: [n_q, n_k]. */
kernel void attention_scores_rope(global const float *q, uint q_pitch,
                                  global const long *q_pos, global const float *k,
                                  uint k_pitch, global const long *k_pos,
                                  global const ulong *rope, uint head_dim, float scale,
                                  uint n_q, uint n_k, global float *scores)
{
    uint s = (uint)get_global_id(0), t = (uint)get_global_id(1);
    if (s >= n_k || t >= n_q)
        return;
    float dot = head_dot(q + (size_t)t * q_pitch, k + (size_t)s * k_pitch, q_pos[t], k_pos[s],
                         rope, head_dim, true);
    scores[(size_t)t * n_k + s] = dot * scale;
}

/* The same scores from q and k rotated already (rope gives only the pair
 * order of the sum). */
kernel void attention_scores(global const float *q, uint q_pitch, global const float *k,
                             uint k_pitch, global const ulong *rope, uint head_dim, float scale,
                             uint n_q, uint n_k, global float *scores)
{
    uint s = (uint)get_global_id(0), t = (uint)get_global_id(1);
    if (s >= n_k || t >= n_q)
        return;
    float dot = head_dot(q + (size_t)t * q_pitch, k + (size_t)s * k_pitch, 0, 0, rope,
                         head_dim, false);
    scores[(size_t)t * n_k + s] = dot * scale;
}
