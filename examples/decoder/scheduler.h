/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scheduler.h - several sequences through one decoder: a pool of cache
 * blocks, a block table per sequence, and continuous batching.
 *
 * Each forward call takes one decode token of every running sequence and
 * then, in the order given, the whole prompt of each waiting sequence that
 * fits (sequences running at once, tokens per call, free blocks). A
 * sequence gets the blocks of its whole length (prompt + steps - 1 rows)
 * when it starts, so it never waits for a block once running; when it
 * finishes its blocks go back to the pool for the sequences after it.
 */
#ifndef DECODER_SCHEDULER_H
#define DECODER_SCHEDULER_H

#include "decoder.h"
#include "position_steps.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sequence {
    int32_t *prompt; /* [n] */
    size_t n;
    int64_t start;   /* position of prompt[0] */
    size_t steps;    /* tokens to generate */
    int64_t *mrope;  /* NULL, or [3, n]: M-RoPE positions of the prompt */
    /* results of the last schedule_run */
    int32_t *generated; /* [steps] */
    float *logits;      /* [rows, vocab] when kept */
} sequence;

/* Rows a sequence puts in the cache: n + steps - 1 (n when steps is 0). */
size_t sequence_rows(const sequence *s);
void sequences_free(sequence *seqs, size_t count);

typedef struct schedule_options {
    size_t block_size;
    size_t cache_blocks; /* 0: room for the max_seqs longest sequences at once */
    size_t max_seqs;     /* 0: all */
    size_t max_tokens;   /* 0: the longest prompt + max_seqs - 1 */
    int keep_logits;     /* every row's logits into sequence.logits */
    size_t steps_cap;    /* non-zero: generate at most this many tokens (a warm-up) */
} schedule_options;

typedef struct schedule_stats {
    size_t forwards, mixed_forwards, most_seqs, most_tokens, most_blocks, blocks_reused;
    size_t prefill_tokens, decode_tokens, decode_only_tokens;
    double prefill_s; /* wall time of the forward calls with prefill tokens */
    double decode_s;  /* wall time of the decode-only calls */
} schedule_stats;

/* Check the sequences against the model (positions inside int64, M-RoPE
 * positions only for an M-RoPE model), fill the defaults of opt and the
 * sizes of the decoder's buffers in dopt. Returns 0, or -1 with a message. */
int schedule_plan(const model_config *cfg, const sequence *seqs, size_t count,
                  schedule_options *opt, decoder_options *dopt, char *err, size_t err_cap);

/* Run every sequence to its end: fills generated (and logits). */
int schedule_run(decoder *d, sequence *seqs, size_t count, const schedule_options *opt,
                 schedule_stats *stats, char *err, size_t err_cap);

#endif
