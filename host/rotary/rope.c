/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope.c - rotary objects: their configuration, creation and release, for
 * one position per token and for several streams of positions (M-RoPE,
 * the vision tower's rows and columns) alike.
 */
#include "rotary/rotary.h"
#include "sinusoid/sinusoid.h" /* an encoder lends its programs (create_like) */

#include <math.h>
#include <stdlib.h>
#include <string.h>

clpe_rope_config clpe_rope_config_default(uint32_t head_dim)
{
    clpe_rope_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.head_dim = head_dim;
    cfg.base = 10000.0;
    cfg.pairing = CLPE_ROPE_HALF_SPLIT;
    cfg.dtype = CLPE_DTYPE_F32;
    cfg.scaling = CLPE_ROPE_DEFAULT;
    return cfg;
}

/* Everything but the scaling parameters. */
static clpe_status check_config(const clpe_rope_config *cfg, uint32_t *rotary_dim, clpe_detail *d)
{
    if (!cfg)
        return clpe__refuse(d, CLPE_ERROR_NULL_POINTER, "the configuration is NULL");
    if (!CLPE__RESERVED_ZERO(cfg))
        return clpe__refuse(d, CLPE_ERROR_RESERVED_FIELD, "reserved must be zero");
    uint32_t r = cfg->rotary_dim ? cfg->rotary_dim : cfg->head_dim;
    if (cfg->head_dim < 2 || cfg->head_dim > CLPE_MAX_D)
        return clpe__refuse(d, CLPE_ERROR_INVALID_ROPE, "head_dim must be in [2, %u], got %u",
                            (unsigned)CLPE_MAX_D, cfg->head_dim);
    if (r < 2 || r > cfg->head_dim || (r & 1u))
        return clpe__refuse(d, CLPE_ERROR_INVALID_ROPE,
                            "rotary_dim must be even and in [2, head_dim = %u], got %u",
                            cfg->head_dim, r);
    if ((unsigned)cfg->pairing > CLPE_ROPE_INTERLEAVED)
        return clpe__refuse(d, CLPE_ERROR_INVALID_ROPE,
                            "pairing %d is not a clpe_rope_pairing", (int)cfg->pairing);
    if (!isfinite(cfg->base) || !(cfg->base > 1.0))
        return clpe__refuse(d, CLPE_ERROR_INVALID_BASE, "base must be finite and > 1, got %g",
                            cfg->base);
    if ((unsigned)cfg->dtype > CLPE_DTYPE_F64)
        return clpe__refuse(d, CLPE_ERROR_INVALID_CONFIG, "dtype %d is not a clpe_dtype",
                            (int)cfg->dtype);
    if ((unsigned)cfg->scaling > CLPE_ROPE_FREQUENCIES)
        return clpe__refuse(d, CLPE_ERROR_INVALID_SCALING,
                            "scaling %d is not a clpe_rope_scaling", (int)cfg->scaling);
    *rotary_dim = r;
    return CLPE_SUCCESS;
}

/* A copy of a caller's array of n doubles (NULL stays NULL). */
static const double *keep_array(double **store, size_t *used, const double *src, size_t n)
{
    if (!src)
        return NULL;
    double *dst = *store + *used;
    memcpy(dst, src, n * sizeof *dst);
    *used += n;
    return dst;
}

/* Streams, sections and ladder of a multimodal object (the rope part is
 * checked by check_config). */
static clpe_status check_sections(const clpe_mrope_config *m, uint32_t n_pairs, clpe_detail *d)
{
    if (!CLPE__RESERVED_ZERO(m))
        return clpe__refuse(d, CLPE_ERROR_RESERVED_FIELD, "reserved must be zero");
    if (m->streams < 1 || m->streams > CLPE_MROPE_MAX_STREAMS)
        return clpe__refuse(d, CLPE_ERROR_INVALID_ROPE, "streams must be in [1, %d], got %u",
                            CLPE_MROPE_MAX_STREAMS, m->streams);
    if ((unsigned)m->ladder > CLPE_MROPE_LADDER_PER_STREAM)
        return clpe__refuse(d, CLPE_ERROR_INVALID_CONFIG, "ladder %d is not a clpe_mrope_ladder",
                            (int)m->ladder);
    uint64_t sum = 0;
    for (uint32_t j = 0; j < CLPE_MROPE_MAX_STREAMS; ++j) {
        if (j >= m->streams && m->section[j])
            return clpe__refuse(d, CLPE_ERROR_INVALID_ROPE,
                                "section[%u] must be 0 with %u streams, got %u", j, m->streams,
                                m->section[j]);
        sum += m->section[j];
    }
    if (sum != n_pairs)
        return clpe__refuse(d, CLPE_ERROR_INVALID_ROPE,
                            "section must sum to rotary_dim / 2 = %u, got %llu", n_pairs,
                            (unsigned long long)sum);
    if (m->ladder == CLPE_MROPE_LADDER_PER_STREAM && m->rope.scaling != CLPE_ROPE_DEFAULT &&
        m->rope.scaling != CLPE_ROPE_LINEAR)
        return clpe__refuse(d, CLPE_ERROR_INVALID_SCALING,
                            "%s: a ladder per stream takes scaling default or linear only",
                            clpe__rope_scaling_name(m->rope.scaling));
    return CLPE_SUCCESS;
}

/* The tuning words, frequencies and amplitude of `count` pairs from
 * `first`, for a ladder of cfg over rotary_dim / 2 = count pairs. */
static clpe_status take_ladder(clpe_rope *rope, const clpe_rope_config *cfg, uint32_t first,
                               uint32_t count, clpe_detail *d)
{
    return clpe__rope_tuning_words(cfg, count, clpe__tuning_bits(cfg->dtype), rope->tw_hi + first,
                                   rope->tw_lo + first, rope->frequencies + first,
                                   &rope->amplitude, d);
}

/* The host half: checked configuration, its own copies of the caller's
 * arrays, the sections (NULL: one stream) and the tuning words. With one
 * ladder every pair takes the frequency clpe_rope_create gives it; with a
 * ladder per stream each stream's pairs take those of the same
 * configuration with rotary_dim twice its section. */
static clpe_status rope_new_host(const clpe_rope_config *cfg, const clpe_mrope_config *sections,
                                 clpe_rope **out, clpe_detail *d)
{
    uint32_t rotary_dim = 0;
    clpe_status status = check_config(cfg, &rotary_dim, d);
    if (status == CLPE_SUCCESS)
        status = clpe__rope_check_scaling(cfg, rotary_dim / 2, d);
    if (status == CLPE_SUCCESS && sections)
        status = check_sections(sections, rotary_dim / 2, d);
    if (status != CLPE_SUCCESS)
        return status;
    clpe_rope *rope = calloc(1, sizeof *rope);
    if (!rope)
        return clpe__refuse(d, CLPE_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    uint32_t n = rotary_dim / 2;
    rope->cfg = *cfg;
    rope->rotary_dim = rotary_dim;
    rope->n_pairs = n;
    rope->streams = sections ? sections->streams : 1;
    rope->ladder = sections ? sections->ladder : CLPE_MROPE_ONE_LADDER;
    uint32_t first = 0;
    for (uint32_t j = 0; j < CLPE_MROPE_MAX_STREAMS - 1; ++j) {
        first += sections && j < sections->streams ? sections->section[j] : 0;
        rope->ends[j] = j + 1 < rope->streams ? first : n;
    }
    rope->frequencies = malloc(n * sizeof *rope->frequencies);
    rope->arrays = malloc(3 * (size_t)n * sizeof *rope->arrays);
    rope->tw_hi = malloc(n * sizeof *rope->tw_hi);
    rope->tw_lo = malloc(n * sizeof *rope->tw_lo);
    if (!rope->frequencies || !rope->arrays || !rope->tw_hi || !rope->tw_lo) {
        clpe_rope_release(rope);
        return clpe__refuse(d, CLPE_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    /* Only the arrays the scaling uses are read: the others may point
     * anywhere, freed memory included (a configuration reused with another
     * scaling), and the object keeps them as NULL. */
    size_t used = 0;
    bool longrope = cfg->scaling == CLPE_ROPE_LONGROPE;
    bool given = cfg->scaling == CLPE_ROPE_FREQUENCIES;
    rope->cfg.short_factor =
        longrope ? keep_array(&rope->arrays, &used, cfg->short_factor, n) : NULL;
    rope->cfg.long_factor = longrope ? keep_array(&rope->arrays, &used, cfg->long_factor, n) : NULL;
    rope->cfg.frequencies = given ? keep_array(&rope->arrays, &used, cfg->frequencies, n) : NULL;
    if (rope->ladder == CLPE_MROPE_ONE_LADDER) {
        status = take_ladder(rope, &rope->cfg, 0, n, d);
    } else {
        first = 0;
        for (uint32_t j = 0; j < rope->streams && status == CLPE_SUCCESS; ++j) {
            clpe_rope_config own = rope->cfg;
            own.rotary_dim = 2 * sections->section[j];
            if (sections->section[j])
                status = take_ladder(rope, &own, first, sections->section[j], d);
            first += sections->section[j];
        }
    }
    /* the 32- and 16-bit dtypes multiply by m as a float: from FLT_MAX plus
     * half an ulp (2^128 - 2^103) up it rounds to infinity, and every
     * rotation would be infinite or NaN */
    if (status == CLPE_SUCCESS && cfg->dtype != CLPE_DTYPE_F64 &&
        !(rope->amplitude < 0x1.ffffffp127))
        status = clpe__refuse(d, CLPE_ERROR_INVALID_SCALING,
                              "%s: the amplitude %g overflows a float; only dtype f64 takes it",
                              clpe__rope_scaling_name(cfg->scaling), rope->amplitude);
    if (status != CLPE_SUCCESS) {
        clpe_rope_release(rope);
        return status;
    }
    *out = rope;
    return CLPE_SUCCESS;
}

static clpe_rope *finish(clpe_rope *rope, clpe_program_shared *shared, clpe_status result,
                         clpe_status *status)
{
    if (result == CLPE_SUCCESS && shared)
        result = clpe__attach_words(shared, rope->tw_hi, rope->tw_lo, rope->n_pairs,
                                    clpe__tuning_bits(rope->cfg.dtype), &rope->shared,
                                    &rope->tw_hi_buf, &rope->tw_lo_buf);
    clpe__program_release(shared); /* the object holds its own reference */
    if (status)
        *status = result;
    if (result != CLPE_SUCCESS) {
        clpe_rope_release(rope);
        return NULL;
    }
    return rope;
}

static clpe_rope *create(cl_context context, cl_device_id device, const clpe_rope_config *cfg,
                         const clpe_mrope_config *sections, clpe_build_log *log,
                         clpe_status *status)
{
    clpe_rope *rope = NULL;
    clpe_program_shared *shared = NULL;
    clpe__log_reset(log);
    clpe_status result =
        context && device ? rope_new_host(cfg, sections, &rope, NULL) : CLPE_ERROR_NULL_POINTER;
    if (result == CLPE_SUCCESS)
        result = clpe__program_for(context, device, cfg->dtype, CLPE_FAMILY_ROPE, log, &shared);
    return finish(rope, shared, result, status);
}

static clpe_rope *create_like(const clpe_encoder *like, const clpe_rope_config *cfg,
                              const clpe_mrope_config *sections, clpe_status *status)
{
    clpe_rope *rope = NULL;
    clpe_program_shared *shared = NULL;
    clpe_status result = !like           ? CLPE_ERROR_NULL_ENCODER
                         : !like->shared ? CLPE_ERROR_HOST_ONLY
                                         : rope_new_host(cfg, sections, &rope, NULL);
    if (result == CLPE_SUCCESS)
        result = clpe__program_like(like->shared, cfg->dtype, CLPE_FAMILY_ROPE, &shared);
    return finish(rope, shared, result, status);
}

clpe_rope *clpe_rope_create(cl_context context, cl_device_id device, const clpe_rope_config *cfg,
                            clpe_build_log *log, clpe_status *status)
{
    return create(context, device, cfg, NULL, log, status);
}

clpe_rope *clpe_rope_create_like(const clpe_encoder *like, const clpe_rope_config *cfg,
                                 clpe_status *status)
{
    return create_like(like, cfg, NULL, status);
}

clpe_rope *clpe_rope_create_host(const clpe_rope_config *cfg, clpe_status *status)
{
    clpe_rope *rope = NULL;
    clpe_status result = rope_new_host(cfg, NULL, &rope, NULL);
    return finish(rope, NULL, result, status);
}

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

clpe_rope *clpe_rope_create_mrope(cl_context context, cl_device_id device,
                                  const clpe_mrope_config *cfg, clpe_build_log *log,
                                  clpe_status *status)
{
    if (!cfg) {
        clpe__log_reset(log);
        return finish(NULL, NULL, CLPE_ERROR_NULL_POINTER, status);
    }
    return create(context, device, &cfg->rope, cfg, log, status);
}

clpe_rope *clpe_rope_create_mrope_like(const clpe_encoder *like, const clpe_mrope_config *cfg,
                                       clpe_status *status)
{
    if (!cfg)
        return finish(NULL, NULL, CLPE_ERROR_NULL_POINTER, status);
    return create_like(like, &cfg->rope, cfg, status);
}

clpe_rope *clpe_rope_create_mrope_host(const clpe_mrope_config *cfg, clpe_status *status)
{
    clpe_rope *rope = NULL;
    clpe_status result = cfg ? rope_new_host(&cfg->rope, cfg, &rope, NULL) : CLPE_ERROR_NULL_POINTER;
    return finish(rope, NULL, result, status);
}

/* The refusal rope_new_host gives, or its success (the object it made
 * released again): every check clpe_rope_create makes before it touches a
 * device. */
static clpe_status check_host(const clpe_rope_config *cfg, const clpe_mrope_config *sections,
                              char *detail, size_t capacity)
{
    clpe_detail d = {detail, detail ? capacity : 0};
    if (d.capacity)
        detail[0] = '\0';
    clpe_rope *rope = NULL;
    clpe_status status = rope_new_host(cfg, sections, &rope, &d);
    clpe_rope_release(rope);
    return status;
}

clpe_status clpe_rope_config_check(const clpe_rope_config *cfg, char *detail, size_t capacity)
{
    return check_host(cfg, NULL, detail, capacity);
}

clpe_status clpe_mrope_config_check(const clpe_mrope_config *cfg, char *detail, size_t capacity)
{
    if (!cfg)
        return check_host(NULL, NULL, detail, capacity);
    return check_host(&cfg->rope, cfg, detail, capacity);
}

void clpe_rope_release(clpe_rope *rope)
{
    if (!rope)
        return;
    clpe__detach_words(rope->shared, rope->tw_hi_buf, rope->tw_lo_buf);
    clpe__kv_state_release(atomic_load(&rope->kv_state));
    free(rope->frequencies);
    free(rope->arrays);
    free(rope->tw_hi);
    free(rope->tw_lo);
    free(rope);
}

clpe_status clpe_rope_get_frequencies(const clpe_rope *rope, double *frequencies, size_t count,
                                      double *amplitude)
{
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    if (!frequencies && count)
        return CLPE_ERROR_NULL_POINTER;
    if (count > rope->n_pairs)
        return CLPE_ERROR_INVALID_ROPE; /* there are rotary_dim / 2 frequencies */
    if (count)
        memcpy(frequencies, rope->frequencies, count * sizeof *frequencies);
    if (amplitude)
        *amplitude = rope->amplitude;
    return CLPE_SUCCESS;
}

uint32_t clpe__rope_stream(const clpe_rope *rope, uint32_t i)
{
    uint32_t j = 0;
    for (uint32_t e = 0; e < CLPE_MROPE_MAX_STREAMS - 1; ++e)
        j += i >= rope->ends[e];
    return j;
}

clpe_status clpe_rope_get_streams(const clpe_rope *rope, uint32_t *stream_of_pair, size_t count,
                                  uint32_t *streams)
{
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    if (!stream_of_pair && count)
        return CLPE_ERROR_NULL_POINTER;
    if (count > rope->n_pairs)
        return CLPE_ERROR_INVALID_ROPE; /* there are rotary_dim / 2 pairs */
    for (size_t i = 0; i < count; ++i)
        stream_of_pair[i] = clpe__rope_stream(rope, (uint32_t)i);
    if (streams)
        *streams = rope->streams;
    return CLPE_SUCCESS;
}
