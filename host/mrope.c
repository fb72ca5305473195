/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mrope.c - multimodal rotary objects (M-RoPE and vision rotary): their
 * configuration, frequencies, creation and release.
 *
 * The frequencies of every ladder come from a host-only rotary object of
 * the same configuration (rope.c, rope_freq.c: MPFR), so a multimodal
 * object's pairs carry exactly the tuning words clpe_rope would give them:
 * one ladder over rotary_dim / 2 pairs, or per stream a ladder over its
 * section as if rotary_dim were twice the section.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

clpe_mrope_config clpe_mrope_config_vision(uint32_t head_dim)
{
    clpe_mrope_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rope = clpe_rope_config_default(head_dim);
    cfg.streams = 2;
    cfg.section[0] = head_dim / 4;
    cfg.section[1] = head_dim / 4;
    cfg.ladder = CLPE_MROPE_LADDER_PER_STREAM;
    return cfg;
}

/* Streams, sections and ladder (the rope part is checked by the rotary
 * object made from it). */
static clpe_status check_sections(const clpe_mrope_config *cfg, uint32_t n_pairs)
{
    if (!CLPE__RESERVED_ZERO(cfg))
        return CLPE_ERROR_RESERVED_FIELD;
    if (cfg->streams < 1 || cfg->streams > CLPE_MROPE_MAX_STREAMS)
        return CLPE_ERROR_INVALID_ROPE;
    if ((unsigned)cfg->ladder > CLPE_MROPE_LADDER_PER_STREAM)
        return CLPE_ERROR_INVALID_CONFIG;
    uint64_t sum = 0;
    for (uint32_t j = 0; j < CLPE_MROPE_MAX_STREAMS; ++j) {
        if (j >= cfg->streams && cfg->section[j])
            return CLPE_ERROR_INVALID_ROPE;
        sum += cfg->section[j];
    }
    if (sum != n_pairs)
        return CLPE_ERROR_INVALID_ROPE;
    if (cfg->ladder == CLPE_MROPE_LADDER_PER_STREAM && cfg->rope.scaling != CLPE_ROPE_DEFAULT &&
        cfg->rope.scaling != CLPE_ROPE_LINEAR)
        return CLPE_ERROR_INVALID_SCALING;
    return CLPE_SUCCESS;
}

/* Copy `count` tuning words and frequencies of a host rotary object made
 * from rope_cfg into the pairs from `first`. */
static clpe_status take_ladder(clpe_mrope *m, const clpe_rope_config *rope_cfg, uint32_t first,
                               uint32_t count)
{
    clpe_status status;
    clpe_rope *rope = clpe_rope_create_host(rope_cfg, &status);
    if (!rope)
        return status;
    memcpy(m->tw_hi + first, rope->tw_hi, count * sizeof *m->tw_hi);
    memcpy(m->tw_lo + first, rope->tw_lo, count * sizeof *m->tw_lo);
    memcpy(m->frequencies + first, rope->frequencies, count * sizeof *m->frequencies);
    m->amplitude = rope->amplitude;
    clpe_rope_release(rope);
    return CLPE_SUCCESS;
}

static clpe_status mrope_new_host(const clpe_mrope_config *cfg, clpe_mrope **out)
{
    if (!cfg)
        return CLPE_ERROR_NULL_POINTER;
    /* the rope part alone, checked as clpe_rope_create checks it */
    clpe_status status;
    clpe_rope *probe = clpe_rope_create_host(&cfg->rope, &status);
    if (!probe)
        return status;
    uint32_t rotary_dim = probe->rotary_dim, n = probe->n_pairs;
    clpe_rope_release(probe);
    status = check_sections(cfg, n);
    if (status != CLPE_SUCCESS)
        return status;

    clpe_mrope *m = calloc(1, sizeof *m);
    if (!m)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    m->cfg = *cfg;
    /* the caller's arrays are read here only */
    m->cfg.rope.short_factor = m->cfg.rope.long_factor = m->cfg.rope.frequencies = NULL;
    m->rotary_dim = rotary_dim;
    m->n_pairs = n;
    m->frequencies = malloc(n * sizeof *m->frequencies);
    m->tw_hi = malloc(n * sizeof *m->tw_hi);
    m->tw_lo = malloc(n * sizeof *m->tw_lo);
    if (!m->frequencies || !m->tw_hi || !m->tw_lo) {
        clpe_mrope_release(m);
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    }
    uint32_t first = 0;
    for (uint32_t j = 0; j < CLPE_MROPE_MAX_STREAMS - 1; ++j) {
        first += j < cfg->streams ? cfg->section[j] : 0;
        m->ends[j] = j + 1 < cfg->streams ? first : n;
    }
    if (cfg->ladder == CLPE_MROPE_ONE_LADDER) {
        status = take_ladder(m, &cfg->rope, 0, n);
    } else {
        first = 0;
        for (uint32_t j = 0; j < cfg->streams && status == CLPE_SUCCESS; ++j) {
            clpe_rope_config own = cfg->rope;
            own.rotary_dim = 2 * cfg->section[j];
            if (cfg->section[j])
                status = take_ladder(m, &own, first, cfg->section[j]);
            first += cfg->section[j];
        }
    }
    if (status != CLPE_SUCCESS) {
        clpe_mrope_release(m);
        return status;
    }
    *out = m;
    return CLPE_SUCCESS;
}

static clpe_mrope *finish(clpe_mrope *m, clpe_program_shared *shared, clpe_status result,
                          clpe_status *status)
{
    if (result == CLPE_SUCCESS && shared)
        result = clpe__attach_words(shared, m->tw_hi, m->tw_lo, m->n_pairs,
                                    clpe__tuning_bits(m->cfg.rope.dtype), &m->shared,
                                    &m->tw_hi_buf, &m->tw_lo_buf);
    clpe__program_release(shared); /* the object holds its own reference */
    if (status)
        *status = result;
    if (result != CLPE_SUCCESS) {
        clpe_mrope_release(m);
        return NULL;
    }
    return m;
}

clpe_mrope *clpe_mrope_create(cl_context context, cl_device_id device,
                              const clpe_mrope_config *cfg, clpe_build_log *log,
                              clpe_status *status)
{
    clpe_mrope *m = NULL;
    clpe_program_shared *shared = NULL;
    clpe__log_reset(log);
    clpe_status result = context && device ? mrope_new_host(cfg, &m) : CLPE_ERROR_NULL_POINTER;
    if (result == CLPE_SUCCESS)
        result = clpe__program_for(context, device, cfg->rope.dtype, CLPE_FAMILY_ROPE, log,
                                   &shared);
    return finish(m, shared, result, status);
}

clpe_mrope *clpe_mrope_create_like(const clpe_encoder *like, const clpe_mrope_config *cfg,
                                   clpe_status *status)
{
    clpe_mrope *m = NULL;
    clpe_program_shared *shared = NULL;
    clpe_status result = !like           ? CLPE_ERROR_NULL_ENCODER
                         : !like->shared ? CLPE_ERROR_HOST_ONLY
                                         : mrope_new_host(cfg, &m);
    if (result == CLPE_SUCCESS)
        result = clpe__program_like(like->shared, cfg->rope.dtype, CLPE_FAMILY_ROPE, &shared);
    return finish(m, shared, result, status);
}

clpe_mrope *clpe_mrope_create_host(const clpe_mrope_config *cfg, clpe_status *status)
{
    clpe_mrope *m = NULL;
    clpe_status result = mrope_new_host(cfg, &m);
    return finish(m, NULL, result, status);
}

void clpe_mrope_release(clpe_mrope *mrope)
{
    if (!mrope)
        return;
    clpe__detach_words(mrope->shared, mrope->tw_hi_buf, mrope->tw_lo_buf);
    free(mrope->frequencies);
    free(mrope->tw_hi);
    free(mrope->tw_lo);
    free(mrope);
}

uint32_t clpe__mrope_stream(const clpe_mrope *m, uint32_t i)
{
    uint32_t j = 0;
    for (uint32_t e = 0; e < CLPE_MROPE_MAX_STREAMS - 1; ++e)
        j += i >= m->ends[e];
    return j;
}

clpe_status clpe_mrope_get_frequencies(const clpe_mrope *mrope, double *frequencies,
                                       uint32_t *stream_of_pair, size_t count, double *amplitude)
{
    if (!mrope)
        return CLPE_ERROR_NULL_ENCODER;
    if (count > mrope->n_pairs)
        return CLPE_ERROR_INVALID_ROPE; /* there are rotary_dim / 2 pairs */
    for (size_t i = 0; i < count; ++i) {
        if (frequencies)
            frequencies[i] = mrope->frequencies[i];
        if (stream_of_pair)
            stream_of_pair[i] = clpe__mrope_stream(mrope, (uint32_t)i);
    }
    if (amplitude)
        *amplitude = mrope->amplitude;
    return CLPE_SUCCESS;
}
