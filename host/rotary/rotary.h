/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rotary.h - rotary objects: one position per token or one per stream,
 * their frequencies, the one resolver of their calls (tensors, positions,
 * destinations) for the device and the host emulation, and the host
 * emulation's arithmetic.
 */
#ifndef CLPE_ROTARY_H
#define CLPE_ROTARY_H

#include "core/overlap.h"
#include "device/device.h"

/* A rotary object. Its pairs turn with one position per token, or, for a
 * multimodal object (clpe_rope_create_mrope), each with the position of
 * its stream: pair i belongs to stream j when j section ends are <= i
 * (ends past the last stream are n_pairs), and its tuning word is that of
 * its stream's ladder. */
struct clpe_kv_state; /* rotary/rope_kv.h */

struct clpe_rope {
    clpe_rope_config cfg;          /* its arrays point at the copies below */
    uint32_t rotary_dim, n_pairs;
    uint32_t streams;              /* 1 .. CLPE_MROPE_MAX_STREAMS */
    uint32_t ends[CLPE_MROPE_MAX_STREAMS - 1];
    clpe_mrope_ladder ladder;
    double amplitude;              /* m, multiplied into cos and sin */
    double *frequencies;           /* w_i rounded to double, for callers */
    double *arrays;                /* copies of the caller's factor/frequency arrays */
    uint64_t *tw_hi, *tw_lo;       /* tuning words, as for an encoder */
    clpe_program_shared *shared;   /* NULL for a host-only object */
    cl_mem tw_hi_buf;
    cl_mem tw_lo_buf;
    /* clpe_enqueue_rope_kv's slot table, counters and call order, made by
     * the first call (rope_kv_enqueue.c) */
    _Atomic(struct clpe_kv_state *) kv_state;
};

/* Releases a rotary object's KV state (NULL: nothing). */
void clpe__kv_state_release(struct clpe_kv_state *s);

/* The stream pair i of a rotary object turns with (rope.c). */
uint32_t clpe__rope_stream(const clpe_rope *rope, uint32_t i);

/* ---- rope_region.c: rotary query and key tensors ---- */

/* A checked query or key tensor, in elements: the device call's and the
 * host emulation's alike. */
typedef struct clpe_rope_region {
    cl_mem buffer;      /* the device tensor's buffer (clpe__resolve_rope_tensor only) */
    size_t offset, heads, head_pitch, row_pitch, batch_pitch;
    size_t extent;      /* elements of one token: (heads-1)*head_pitch + head_dim */
    size_t begin_bytes; /* bytes from the start to the first element */
    size_t end_bytes;   /* bytes from the start past the last element touched */
} clpe_rope_region;

/* Defaults (0 pitches), heads, tokens and sequences that must not share an
 * element (CLPE_ERROR_INVALID_PITCH), the kernels' 32-bit head steps and
 * the size of a [batch, seq, heads, head_dim] tensor, buffer aside. */
clpe_status clpe__resolve_rope_region(const clpe_rope *rope, size_t offset_bytes, size_t heads,
                                      size_t head_pitch, size_t row_pitch, size_t batch_pitch,
                                      size_t batch, size_t seq, clpe_rope_region *r);

/* ---- rope_call.c: the one resolver of a rotary call ---- */

/* A query or key tensor as a call gives it: a device buffer (buffer and a
 * byte offset) or host memory (host, offset 0). */
typedef struct clpe_rope_view {
    cl_mem buffer;
    void *host;
    size_t offset, heads, head_pitch, row_pitch, batch_pitch;
} clpe_rope_view;

/* The views of the public structs: pointer, buffer and reserved fields. */
clpe_status clpe__rope_view_of_tensor(const clpe_rope_tensor *t, clpe_rope_view *v);
clpe_status clpe__rope_view_of_host(const clpe_host_rope_tensor *t, clpe_rope_view *v);
/* Host positions, resolved as the device's are (clpe__resolve_positions). */
clpe_status clpe__rope_host_positions(const clpe_rope *rope, clpe_position_source source,
                                      int64_t start, const int64_t *host_positions,
                                      size_t batch, size_t seq, clpe_position_args *out);

/* A checked rotation of q and k in place. */
typedef struct clpe_rope_call {
    const clpe_rope *rope;
    size_t batch, seq;
    clpe_rope_region q, k;     /* k only when has_k */
    void *q_host, *k_host;     /* the host emulation's memory */
    bool has_k;
    clpe_position_args positions;
    uint32_t inverse;
} clpe_rope_call;

/* Flags, tensors (layout, and on the device the buffer's context and size)
 * and the bytes they share, for positions already resolved. */
clpe_status clpe__resolve_rope_call(const clpe_rope *rope, size_t batch, size_t seq,
                                   const clpe_rope_view *q, const clpe_rope_view *k,
                                   const clpe_position_args *positions, uint32_t flags,
                                   clpe_rope_call *c);

/* A checked cos/sin cache of n rows. */
typedef struct clpe_rope_cache_call {
    size_t n;
    clpe_region cos, sin;
    void *cos_host, *sin_host;
    clpe_position_args positions;
} clpe_rope_cache_call;

/* The rows of cos or sin as a call gives them (heads and batch_pitch
 * unused). */
clpe_status clpe__resolve_rope_cache_call(const clpe_rope *rope, size_t n,
                                          const clpe_rope_view *cos, const clpe_rope_view *sin,
                                          const clpe_position_args *positions,
                                          clpe_rope_cache_call *c);

/* The position of stream j of token t (b * seq + s) of a resolved source,
 * modulo 2^64, read from the host emulation's values. */
static inline uint64_t clpe__host_position(const clpe_position_args *p, size_t seq, size_t b,
                                           size_t s, uint32_t j)
{
    switch (p->source) {
    case CLPE_POSITIONS_START:
        return (uint64_t)p->start + s;
    case CLPE_POSITIONS_PER_SEQUENCE:
        return (uint64_t)p->host[b] + s;
    case CLPE_POSITIONS_IDS:
        return (uint64_t)p->host[b * seq + s];
    default:
        return (uint64_t)p->host[j * p->stream_pitch + (b * seq + s) * p->token_pitch];
    }
}

/* A KV cache's layout (clpe_kv_cache, clpe_host_kv_cache) with its defaults
 * resolved, in elements of its dtype: the device call's and the host
 * emulation's alike. */
typedef struct clpe_kv_cache_layout {
    clpe_dtype dtype;
    size_t num_blocks, block_size, heads, head_pitch, slot_pitch, block_pitch;
    size_t capacity;   /* num_blocks * block_size slots */
    size_t span_bytes; /* bytes from slot 0's first element past the last entry; 0 without a slot */
} clpe_kv_cache_layout;

/* The cache's dtype: the object's, or f16/bf16 under an f32 object
 * (CLPE_ERROR_DTYPE_MISMATCH); heads nonzero; default pitches; heads,
 * slots and blocks that must not share an element
 * (CLPE_ERROR_INVALID_PITCH); the slots within int64 and the bytes within
 * size_t (CLPE_ERROR_TOO_LARGE). Buffers and host pointers aside. */
clpe_status clpe__resolve_kv_cache(const clpe_rope *rope, clpe_dtype dtype, size_t num_blocks,
                                   size_t block_size, size_t heads, size_t head_pitch,
                                   size_t slot_pitch, size_t block_pitch, clpe_kv_cache_layout *l);

/* ---- rope_freq.c: rotary frequencies ---- */

/* Where a check writes why it refused (clpe_rope_config_check's detail);
 * text may be NULL. */
typedef struct clpe_detail {
    char *text;
    size_t capacity;
} clpe_detail;

/* Returns status, after writing the printf-style reason into d (NULL: none). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
clpe_status clpe__refuse(clpe_detail *d, clpe_status status, const char *format, ...);

/* "linear", "yarn", ... as Hugging Face's rope_type names them. */
const char *clpe__rope_scaling_name(clpe_rope_scaling s);

/* CLPE_ERROR_INVALID_SCALING unless the scaling and its parameters are
 * valid (the other fields of cfg are checked already), with the field and
 * the reason in d; n_pairs is rotary_dim / 2. */
clpe_status clpe__rope_check_scaling(const clpe_rope_config *cfg, uint32_t n_pairs,
                                     clpe_detail *d);

/* The tuning words (bits 96 or 128) of the n_pairs frequencies w_i of cfg,
 * computed in MPFR; also w_i and the amplitude m rounded to double. */
clpe_status clpe__rope_tuning_words(const clpe_rope_config *cfg, uint32_t n_pairs, unsigned bits,
                                    uint64_t *hi, uint64_t *lo, double *frequencies,
                                    double *amplitude, clpe_detail *d);

/* rope_emulate.c: the rotary arithmetic of the kernels on the host. cos
 * and sin of pair i at position p, times the amplitude, sin times sign (1,
 * or -1 for the inverse); and (a, b) rotated by them, each value held
 * exactly in a double. */
void clpe__rope_cos_sin(const clpe_rope *rope, uint64_t p, uint32_t i, double sign, double *c,
                        double *s);
void clpe__rope_rotate(clpe_dtype dtype, double a, double b, double c, double s, double *ra,
                       double *rb);

/* The bytes of a resolved rotary tensor (rope_region.c): of a rotary
 * object's, or of head_dim elements of esize bytes per head. */
clpe_footprint clpe__rope_footprint(const clpe_rope *rope, const clpe_rope_region *r,
                                    size_t batch, size_t seq);
clpe_footprint clpe__rope_tensor_footprint(size_t head_dim, size_t esize,
                                           const clpe_rope_region *r, size_t batch, size_t seq);

/* Every entry of every slot of one KV cache tensor that starts at element
 * `offset` (rope_region.c; the slots are data on the device, so any of them
 * may be written); none when the cache has no slot. */
clpe_footprint clpe__kv_cache_footprint(const clpe_rope *rope, const clpe_kv_cache_layout *l,
                                        size_t offset);

#endif /* CLPE_ROTARY_H */
