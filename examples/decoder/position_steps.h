/* SPDX-License-Identifier: Apache-2.0 */
/*
 * position_steps.h - every step of the decoder that depends on a token's
 * position, all of them clpe calls:
 *
 *   input stage (both architectures): clpe_enqueue_gather, the embedding rows
 *     of the token ids, scaled, plus the sinusoidal encoding of each row's
 *     position (XGLM: fairseq's convention), or plus nothing (Llama: every
 *     row at clpe's padding position, whose encoding is zero);
 *   rotary into the KV cache (Llama), one of two ways (rope_mode):
 *     ROPE_ENQUEUE: clpe_enqueue_rope on the layer's queries and keys, then
 *       the keys copied into the cache;
 *     ROPE_DEVICE: clpe_device.h's clpe_rope_pair in the decoder's own
 *       kernels: rope_keys_into_cache rotates the keys as it writes them
 *       into the cache, and the attention kernel rotates each query as it
 *       loads it (position_attention_args). The bits are the same.
 *
 * Each step is one function, so a one-pass "rotate keys into the cache"
 * library call can replace the body of position_rope_into_cache without
 * touching the forward pass.
 */
#ifndef DECODER_POSITION_STEPS_H
#define DECODER_POSITION_STEPS_H

#include "decoder.h"

#include <stddef.h>

/* Create the clpe objects for d->cfg on d's device (d->context, d->device
 * and d->queue set; the work buffers allocated). */
int position_steps_create(decoder *d, char *err, size_t err_cap);
void position_steps_release(decoder *d);

/* x[0 .. n) = the input stage for the n ids already in d->ids, the tokens of
 * cache rows row .. row+n-1. */
int position_input_stage(decoder *d, size_t n, size_t row, char *err, size_t err_cap);

/* Llama: rotate d->q (n tokens, all heads) and d->k (n tokens, kv heads) by
 * the positions of cache rows row .. row+n-1, and put the rotated keys into
 * the layer's key cache at those rows. */
int position_rope_into_cache(decoder *d, size_t layer, size_t n, size_t row, char *err,
                             size_t err_cap);

/* ROPE_DEVICE: the attention kernel's extra arguments (the rotary words
 * and the position of cache row `row`), from argument index first_arg. */
cl_int position_attention_args(decoder *d, cl_kernel attention, cl_uint first_arg, size_t row);

#endif
