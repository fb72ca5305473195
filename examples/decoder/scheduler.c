/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scheduler.c - continuous batching over a paged KV cache.
 */
#include "scheduler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

size_t sequence_rows(const sequence *s)
{
    return s->n + (s->steps ? s->steps - 1 : 0);
}

void sequences_free(sequence *seqs, size_t count)
{
    for (size_t i = 0; seqs && i < count; i++) {
        free(seqs[i].prompt);
        free(seqs[i].mrope);
        free(seqs[i].generated);
        free(seqs[i].logits);
    }
    free(seqs);
}

static size_t steps_of(const sequence *s, const schedule_options *opt)
{
    return opt->steps_cap && s->steps > opt->steps_cap ? opt->steps_cap : s->steps;
}

static size_t rows_of(const sequence *s, const schedule_options *opt)
{
    const size_t steps = steps_of(s, opt);
    return s->n + (steps ? steps - 1 : 0);
}

static size_t blocks_of(const sequence *s, const schedule_options *opt)
{
    return (rows_of(s, opt) + opt->block_size - 1) / opt->block_size;
}

/* The largest M-RoPE position of a prompt (every stream). */
static int64_t mrope_max(const sequence *s)
{
    int64_t top = s->mrope[0];
    for (size_t i = 1; i < 3 * s->n; i++)
        if (s->mrope[i] > top)
            top = s->mrope[i];
    return top;
}

int schedule_plan(const model_config *cfg, const sequence *seqs, size_t count,
                  schedule_options *opt, decoder_options *dopt, char *err, size_t cap)
{
    memset(dopt, 0, sizeof *dopt);
    if (opt->max_seqs == 0 || opt->max_seqs > count)
        opt->max_seqs = count;
    size_t longest = 0, most_blocks = 0;
    for (size_t i = 0; i < count; i++) {
        const sequence *s = &seqs[i];
        const size_t rows = sequence_rows(s);
        /* every position, plus XGLM's offset of 2, must stay in int64 */
        int64_t first = s->start, last;
        if (s->mrope) {
            if (!cfg->mrope_streams) {
                snprintf(err, cap, "sequence %zu: M-RoPE positions, but the model's rotary "
                                   "has no mrope_section",
                         i);
                return -1;
            }
            first = mrope_max(s) + 1 - (int64_t)s->n;
        }
        if (__builtin_add_overflow(first, (int64_t)rows - 1 + (cfg->arch == ARCH_XGLM ? 2 : 0),
                                   &last)) {
            snprintf(err, cap, "sequence %zu: --start %lld with %zu positions leaves int64", i,
                     (long long)s->start, rows);
            return -1;
        }
        if (rows > UINT32_MAX) {
            snprintf(err, cap, "sequence %zu: %zu rows is more than 2^32 - 1", i, rows);
            return -1;
        }
        if (s->n > longest)
            longest = s->n;
        const size_t blocks = blocks_of(s, opt);
        if (blocks > most_blocks)
            most_blocks = blocks;
    }
    if (opt->cache_blocks == 0) {
        /* room for the max_seqs longest at once */
        size_t *blocks = malloc(count * sizeof *blocks);
        if (!blocks) {
            snprintf(err, cap, "out of memory");
            return -1;
        }
        for (size_t i = 0; i < count; i++)
            blocks[i] = blocks_of(&seqs[i], opt);
        for (size_t k = 0; k < opt->max_seqs; k++) {
            size_t top = k;
            for (size_t i = k + 1; i < count; i++)
                if (blocks[i] > blocks[top])
                    top = i;
            const size_t t = blocks[k];
            blocks[k] = blocks[top];
            blocks[top] = t;
            opt->cache_blocks += blocks[k];
        }
        free(blocks);
    }
    if (opt->cache_blocks < most_blocks) {
        snprintf(err, cap, "--cache-blocks %zu: a sequence needs %zu blocks of %zu slots",
                 opt->cache_blocks, most_blocks, opt->block_size);
        return -1;
    }
    if (opt->max_tokens == 0)
        opt->max_tokens = longest + opt->max_seqs - 1;
    dopt->max_tokens = opt->max_tokens;
    dopt->max_logit_rows = opt->keep_logits ? opt->max_tokens : opt->max_seqs;
    dopt->max_table_entries = opt->cache_blocks;
    dopt->num_blocks = opt->cache_blocks;
    dopt->block_size = opt->block_size;
    return 0;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int32_t argmax(const float *row, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (row[i] > row[best])
            best = i;
    return (int32_t)best;
}

enum { WAITING, RUNNING, DONE };

typedef struct seq_state {
    int stage;
    uint32_t *blocks;
    size_t nblocks;
    size_t produced;   /* tokens generated */
    size_t first;      /* its first token in this call's batch */
    size_t tokens;     /* its tokens in this call */
    size_t first_logit; /* its first logit row in this call */
    size_t logit_rows;
    size_t first_row;  /* the cache row of its first token in this call */
    int64_t delta;     /* M-RoPE: position of a generated row r is r + delta */
} seq_state;

typedef struct batch_buffers {
    int32_t *ids;
    int64_t *pos[CLPE_MROPE_MAX_STREAMS];
    int64_t *positions; /* [streams, n], packed from pos */
    int64_t *slots;
    uint32_t *table_offset, *row, *tables, *logit_tokens;
    float *logits;
} batch_buffers;

static void batch_free(batch_buffers *b)
{
    free(b->ids);
    for (int j = 0; j < CLPE_MROPE_MAX_STREAMS; j++)
        free(b->pos[j]);
    free(b->positions);
    free(b->slots);
    free(b->table_offset);
    free(b->row);
    free(b->tables);
    free(b->logit_tokens);
    free(b->logits);
}

static int batch_alloc(batch_buffers *b, const decoder *d)
{
    const size_t T = d->max_tokens;
    memset(b, 0, sizeof *b);
    b->ids = malloc(T * sizeof *b->ids);
    int ok = b->ids != NULL;
    for (uint32_t j = 0; j < d->streams; j++)
        ok &= (b->pos[j] = malloc(T * sizeof *b->pos[j])) != NULL;
    ok &= (b->positions = malloc(T * d->streams * sizeof *b->positions)) != NULL;
    ok &= (b->slots = malloc(T * sizeof *b->slots)) != NULL;
    ok &= (b->table_offset = malloc(T * sizeof *b->table_offset)) != NULL;
    ok &= (b->row = malloc(T * sizeof *b->row)) != NULL;
    ok &= (b->tables = malloc(d->max_table_entries * sizeof *b->tables)) != NULL;
    ok &= (b->logit_tokens = malloc(d->max_logit_rows * sizeof *b->logit_tokens)) != NULL;
    ok &= (b->logits = malloc(d->max_logit_rows * d->cfg.vocab * sizeof(float))) != NULL;
    return ok ? 0 : -1;
}

/* Token `row` of sequence s (a prompt token or a generated one) into the
 * batch at index t. */
static void add_token(const decoder *d, batch_buffers *b, size_t t, const sequence *s,
                      const seq_state *st, size_t row, uint32_t table_offset)
{
    b->ids[t] = row < s->n ? s->prompt[row] : s->generated[row - s->n];
    for (uint32_t j = 0; j < d->streams; j++) {
        if (s->mrope && row < s->n)
            b->pos[j][t] = s->mrope[j * s->n + row];
        else
            b->pos[j][t] = (int64_t)row + st->delta;
    }
    b->slots[t] = (int64_t)st->blocks[row / d->block_size] * (int64_t)d->block_size +
                  (int64_t)(row % d->block_size);
    b->table_offset[t] = table_offset;
    b->row[t] = (uint32_t)row;
}

int schedule_run(decoder *d, sequence *seqs, size_t count, const schedule_options *opt,
                 schedule_stats *stats, char *err, size_t cap)
{
    memset(stats, 0, sizeof *stats);
    const size_t V = d->cfg.vocab;
    seq_state *st = calloc(count, sizeof *st);
    uint32_t *free_blocks = malloc(d->num_blocks * sizeof *free_blocks);
    unsigned char *used = calloc(d->num_blocks, 1);
    size_t *order = malloc(count * sizeof *order); /* running sequences, by start */
    batch_buffers b;
    memset(&b, 0, sizeof b);
    int rc = -1;
    if (!st || !free_blocks || !used || !order || batch_alloc(&b, d) != 0) {
        snprintf(err, cap, "out of memory");
        goto out;
    }
    size_t nfree = d->num_blocks;
    for (size_t i = 0; i < nfree; i++)
        free_blocks[i] = (uint32_t)(nfree - 1 - i); /* block 0 handed out first */
    for (size_t i = 0; i < count; i++) {
        sequence *s = &seqs[i];
        free(s->generated);
        free(s->logits);
        s->logits = NULL;
        s->generated = malloc((s->steps ? s->steps : 1) * sizeof *s->generated);
        if (opt->keep_logits)
            s->logits = malloc(rows_of(s, opt) * V * sizeof *s->logits);
        st[i].blocks = malloc(blocks_of(s, opt) * sizeof *st[i].blocks);
        st[i].delta = s->mrope ? mrope_max(s) + 1 - (int64_t)s->n : s->start;
        if (!s->generated || (opt->keep_logits && !s->logits) || !st[i].blocks) {
            snprintf(err, cap, "out of memory");
            goto out;
        }
    }
    size_t done = 0, next_waiting = 0, running = 0;
    while (done < count) {
        size_t n = 0, entries = 0, logit_rows = 0, prefill = 0, in_call = 0;
        /* one decode token of every running sequence, in the order they started */
        for (size_t k = 0; k < running; k++) {
            const size_t i = order[k];
            sequence *s = &seqs[i];
            seq_state *q = &st[i];
            const size_t row = s->n + q->produced - 1;
            q->first = n;
            q->tokens = 1;
            q->first_row = row;
            add_token(d, &b, n++, s, q, row, (uint32_t)entries);
            memcpy(b.tables + entries, q->blocks, q->nblocks * sizeof *q->blocks);
            entries += q->nblocks;
            ++in_call;
        }
        /* then the prompts that fit, in the order given */
        size_t admitted = 0;
        while (next_waiting < count && running + admitted < opt->max_seqs) {
            sequence *s = &seqs[next_waiting];
            seq_state *q = &st[next_waiting];
            const size_t need = blocks_of(s, opt);
            if (n + s->n > d->max_tokens || need > nfree)
                break;
            for (size_t j = 0; j < need; j++) {
                q->blocks[j] = free_blocks[--nfree];
                stats->blocks_reused += used[q->blocks[j]];
                used[q->blocks[j]] = 1;
            }
            q->nblocks = need;
            q->first = n;
            q->tokens = s->n;
            q->first_row = 0;
            for (size_t r = 0; r < s->n; r++)
                add_token(d, &b, n++, s, q, r, (uint32_t)entries);
            memcpy(b.tables + entries, q->blocks, need * sizeof *q->blocks);
            entries += need;
            prefill += s->n;
            q->stage = RUNNING;
            order[running + admitted++] = next_waiting++;
            ++in_call;
        }
        if (n == 0) {
            snprintf(err, cap, "no sequence fits the cache or the batch (a scheduling bug)");
            goto out;
        }
        running += admitted;
        /* the rows whose logits are read: every token's when they are kept,
         * else each sequence's last */
        for (size_t k = 0; k < running; k++) {
            seq_state *q = &st[order[k]];
            const size_t rows = opt->keep_logits ? q->tokens : 1;
            q->first_logit = logit_rows;
            q->logit_rows = rows;
            for (size_t r = 0; r < rows; r++)
                b.logit_tokens[logit_rows++] = (uint32_t)(q->first + q->tokens - rows + r);
        }
        for (uint32_t j = 0; j < d->streams; j++)
            memcpy(b.positions + j * n, b.pos[j], n * sizeof *b.positions);
        const forward_batch fb = {.n = n,
                                  .ids = b.ids,
                                  .positions = b.positions,
                                  .slots = b.slots,
                                  .table_offset = b.table_offset,
                                  .row = b.row,
                                  .tables = b.tables,
                                  .table_entries = entries,
                                  .logit_tokens = b.logit_tokens,
                                  .logit_rows = logit_rows};
        const double t0 = now_seconds();
        if (decoder_forward(d, &fb, b.logits, err, cap) != 0)
            goto out;
        const double dt = now_seconds() - t0;
        stats->forwards++;
        stats->mixed_forwards += prefill && prefill < n;
        stats->prefill_tokens += prefill;
        stats->decode_tokens += n - prefill;
        if (prefill) {
            stats->prefill_s += dt;
        } else {
            stats->decode_s += dt;
            stats->decode_only_tokens += n;
        }
        if (in_call > stats->most_seqs)
            stats->most_seqs = in_call;
        if (n > stats->most_tokens)
            stats->most_tokens = n;
        if (d->num_blocks - nfree > stats->most_blocks)
            stats->most_blocks = d->num_blocks - nfree;
        /* each sequence's next token; the finished ones give their blocks back */
        size_t still = 0;
        for (size_t k = 0; k < running; k++) {
            const size_t i = order[k];
            sequence *s = &seqs[i];
            seq_state *q = &st[i];
            const float *rows = b.logits + q->first_logit * V;
            if (s->logits)
                memcpy(s->logits + (q->first_row + q->tokens - q->logit_rows) * V, rows,
                       q->logit_rows * V * sizeof *rows);
            const size_t steps = steps_of(s, opt);
            if (q->produced < steps)
                s->generated[q->produced++] = argmax(rows + (q->logit_rows - 1) * V, V);
            if (q->produced == steps) {
                q->stage = DONE;
                ++done;
                for (size_t j = q->nblocks; j-- > 0;)
                    free_blocks[nfree++] = q->blocks[j];
                q->nblocks = 0;
            } else {
                order[still++] = i;
            }
        }
        running = still;
    }
    rc = decoder_check_slots(d, err, cap);
out:
    if (st)
        for (size_t i = 0; i < count; i++)
            free(st[i].blocks);
    free(st);
    free(free_blocks);
    free(used);
    free(order);
    batch_free(&b);
    return rc;
}
