/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sinusoid.h - the sinusoidal encoder: its slots, its object, its tuning
 * words and its row kernels' calls (table, add, gather).
 */
#ifndef CLPE_SINUSOID_H
#define CLPE_SINUSOID_H

#include "device/device.h"

/* Where a pair's sine and cosine go within a row, from the layout and the
 * odd-d flags: pair i's sine at sin_off + i * stride, its cosine (for
 * i < n_cos) at cos_off + i * stride. The kernels get these as arguments
 * and the host emulation uses the same numbers. */
typedef struct clpe_slots {
    uint32_t n_pairs, n_cos, sin_off, cos_off, stride;
} clpe_slots;

struct clpe_encoder {
    clpe_config cfg;
    clpe_slots slots;
    uint32_t half_d;               /* pairs: slots.n_pairs */
    uint64_t *tw_hi;               /* host copy of the tuning words: top 64 bits */
    uint64_t *tw_lo;               /* the rest: 32 bits (96-bit words) or 64 (f64) */
    clpe_program_shared *shared;   /* NULL for a host-only encoder */
    cl_mem tw_hi_buf;
    cl_mem tw_lo_buf;              /* uint per pair, or ulong for f64 */
};

/* config.c: the slots of a (checked) configuration. */
clpe_slots clpe__slots(const clpe_config *cfg);

/* frequencies.c: F_i = round(2^bits * w_i / 2pi) for every pair (bits 96 or
 * 128), split into the top 64 bits and the rest. */
clpe_status clpe__tuning_words(const clpe_config *cfg, unsigned bits, uint64_t *hi, uint64_t *lo);

/* ---- launch.c: the row kernels (table, add, gather) ---- */

/* One call of a row kernel, checked. */
typedef struct clpe_row_call {
    clpe_op op;
    clpe_region out;
    clpe_region in;            /* add: x; gather: the embedding table; table: unused */
    cl_mem ids;                /* gather */
    size_t ids_offset;         /* elements */
    cl_mem bad_ids;            /* gather, may be NULL */
    size_t vocab;              /* gather */
    clpe_position_args positions;
    size_t batch, seq;
} clpe_row_call;

/* Launch the call, split into launches whose indices fit in 32 bits and the
 * device's grid. Several launches wait behind a gate unless the caller's
 * wait list already holds one (gated). */
clpe_status clpe__launch_rows(clpe_encoder *enc, cl_command_queue queue,
                              const clpe_row_call *call, bool gated, cl_uint num_events,
                              const cl_event *wait_list, cl_event *event);

/* ---- checks.c: an encoder's calls, regions and ids ---- */

/* Encoder, queue and the wait list's shape (every event non-NULL). */
clpe_status clpe__check_call(const clpe_encoder *enc, cl_command_queue queue,
                             cl_uint num_events, const cl_event *wait_list);
/* The queue (and every event) belongs to the encoder's context and device. */
clpe_status clpe__check_queue(const clpe_encoder *enc, cl_command_queue queue,
                              cl_uint num_events, const cl_event *wait_list);
/* Defaults, pitches, overlap and size of a region, buffer aside: the one
 * resolver of device tensors and host arrays. */
clpe_status clpe__resolve_shape(const clpe_encoder *enc, size_t offset_bytes, size_t row_pitch,
                                size_t batch_pitch, size_t batch, size_t seq, clpe_region *r);
clpe_status clpe__resolve_tensor(const clpe_encoder *enc, const clpe_tensor *t, size_t batch,
                                 size_t seq, clpe_region *r);
/* The buffer belongs to the encoder's context and holds `bytes` bytes. */
clpe_status clpe__check_buffer(const clpe_encoder *enc, cl_mem buffer, size_t bytes,
                               clpe_status too_small);
clpe_status clpe__check_region(const clpe_encoder *enc, const clpe_region *r);
/* The token-id buffer holds `count` int32 values after its offset. */
clpe_status clpe__check_ids(const clpe_encoder *enc, const clpe_token_ids *ids, size_t count);

#endif /* CLPE_SINUSOID_H */
