/* SPDX-License-Identifier: Apache-2.0 */
/*
 * position_steps.h - every step of the decoder that depends on a token's
 * position, all of them clpe calls:
 *
 *   input stage (every architecture): clpe_enqueue_gather, the embedding
 *     rows of the token ids, scaled, plus the sinusoidal encoding of each
 *     row's position (XGLM: fairseq's convention), or plus nothing (rotary
 *     models: every row at clpe's padding position, whose encoding is zero);
 *   rotary into the KV cache (rotary models), one of three ways (rope_mode):
 *     ROPE_KV: clpe_enqueue_rope_kv, one call per layer: the queries rotated
 *       in place, the keys rotated and the values written into their slots
 *       of the paged cache;
 *     ROPE_TWO_PASS: clpe_enqueue_rope on the layer's queries and keys, then
 *       keys and values copied into their slots (scatter_rows);
 *     ROPE_DEVICE: clpe_device.h's clpe_rope_pair in the decoder's own
 *       kernels: rope_keys_into_cache rotates the keys as it writes them
 *       into the cache, and the attention kernel rotates each query as it
 *       loads it (position_attention_args).
 *   The bits are the same all three ways. XGLM has no rotary: its keys and
 *   values are copied into their slots.
 *
 * The tokens' positions and slots are in d->positions and d->slots (one
 * forward call's worth, uploaded by decoder_forward).
 */
#ifndef DECODER_POSITION_STEPS_H
#define DECODER_POSITION_STEPS_H

#include "decoder.h"
#include "common/kernel_run.h"

#include <stddef.h>

/* Create the clpe objects for d->cfg on d's device (d->context, d->device
 * and d->queue set; the work buffers allocated). */
int position_steps_create(decoder *d, char *err, size_t err_cap);
void position_steps_release(decoder *d);

/* x[0 .. n) = the input stage for the n ids already in d->ids (their
 * gather positions in d->gather_positions). */
int position_input_stage(decoder *d, size_t n, char *err, size_t err_cap);

/* The layer's d->q (n tokens, all heads) rotated, d->k rotated and d->v
 * written into the layer's cache at the tokens' slots (rotary models), or
 * d->k and d->v copied there (XGLM). With ROPE_DEVICE d->q stays as it is:
 * the attention kernel rotates it. */
int position_rope_into_cache(decoder *d, size_t layer, size_t n, char *err, size_t err_cap);

/* ROPE_DEVICE: the attention kernel's extra arguments (the rotary words
 * and the tokens' positions), written to args; returns how many (2). */
size_t position_attention_args(decoder *d, kernel_arg *args);

/* What the report says rotary into the cache is, for --stats. */
const char *position_rope_description(const decoder *d);

#endif
