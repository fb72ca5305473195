/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_kv.h - rotary into a KV cache: one call (clpe_enqueue_rope_kv, or
 * clpe_host_rope_kv on host memory) resolved once into clpe_kv_call, so
 * the device path and the host emulation accept exactly the same calls
 * with the same status.
 */
#ifndef CLPE_ROPE_KV_H
#define CLPE_ROPE_KV_H

#include "rotary/rotary.h"

/* A resolved q, q_out, k or v [tokens, heads, head_dim]: the region of
 * rope_region.c (offset in elements; buffer NULL on the host) and, on the
 * host, its memory. heads 0: absent (no q, or q rotated in place). */
typedef struct clpe_kv_tensor {
    clpe_rope_region r;
    char *data;
} clpe_kv_tensor;

/* A checked call, every size within size_t and every offset in elements. */
typedef struct clpe_kv_call {
    const clpe_rope *rope;
    size_t tokens;
    uint32_t inverse;
    clpe_kv_tensor q, q_out, k, v;
    clpe_kv_cache_layout cache;
    cl_mem key, value;            /* the device's caches */
    char *key_data, *value_data;  /* the host's */
    size_t key_offset, value_offset; /* elements of the cache's dtype to slot 0 */
    size_t key_end_bytes, value_end_bytes;
    float key_scale, value_scale; /* FP8: the divisors; else 1 */
    cl_mem slots;                 /* the device's int64 slots ... */
    const int64_t *slots_data;    /* ... or the host's */
    size_t slots_offset;          /* elements */
    size_t slots_end_bytes;
    cl_mem report;                /* the caller's report buffer, or NULL */
    clpe_position_args positions; /* the device's buffer, or the host's values */
} clpe_kv_call;

/* Every argument of clpe_enqueue_rope_kv, checked; nothing enqueued. */
clpe_status clpe__resolve_kv_call(clpe_rope *rope, size_t tokens, const clpe_rope_tensor *q,
                                  const clpe_rope_tensor *q_out, const clpe_rope_tensor *k,
                                  const clpe_rope_tensor *v, const clpe_kv_cache *cache,
                                  const clpe_kv_slots *slots, const clpe_positions *positions,
                                  uint32_t flags, clpe_kv_call *c);

/* The arguments of clpe_host_rope_kv, as the caller gave them. */
typedef struct clpe_host_kv_args {
    size_t tokens;
    const clpe_host_rope_tensor *q, *q_out, *k, *v;
    const clpe_host_kv_cache *cache;
    const int64_t *slots;
    clpe_position_source source;
    int64_t start;
    const int64_t *positions;
    uint32_t flags;
} clpe_host_kv_args;

/* Every argument of clpe_host_rope_kv, checked by the same rules (the
 * slots' values aside); nothing written. */
clpe_status clpe__resolve_host_kv_call(const clpe_rope *rope, const clpe_host_kv_args *a,
                                       clpe_kv_call *c);

#endif /* CLPE_ROPE_KV_H */
