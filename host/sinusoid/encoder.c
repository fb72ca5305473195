/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encoder.c - creating and releasing encoders.
 */
#include "sinusoid/sinusoid.h"

#include <stdlib.h>

/* The host half of an encoder: configuration and tuning words. */
static clpe_status encoder_new_host(const clpe_config *cfg, clpe_encoder **out)
{
    clpe_status status = clpe_config_check(cfg);
    if (status != CLPE_SUCCESS)
        return status;
    clpe_encoder *enc = calloc(1, sizeof *enc);
    if (!enc)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    enc->cfg = *cfg;
    enc->slots = clpe__slots(cfg);
    enc->half_d = enc->slots.n_pairs;
    enc->tw_hi = malloc(enc->half_d * sizeof *enc->tw_hi);
    enc->tw_lo = malloc(enc->half_d * sizeof *enc->tw_lo);
    if (!enc->tw_hi || !enc->tw_lo) {
        clpe_encoder_release(enc);
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    }
    status = clpe__tuning_words(cfg, clpe__tuning_bits(cfg->dtype), enc->tw_hi, enc->tw_lo);
    if (status != CLPE_SUCCESS) {
        clpe_encoder_release(enc);
        return status;
    }
    *out = enc;
    return CLPE_SUCCESS;
}

static clpe_encoder *finish(clpe_encoder *enc, clpe_program_shared *shared, clpe_status result,
                            clpe_status *status)
{
    if (result == CLPE_SUCCESS && shared)
        result = clpe__attach_words(shared, enc->tw_hi, enc->tw_lo, enc->half_d,
                                    clpe__tuning_bits(enc->cfg.dtype), &enc->shared,
                                    &enc->tw_hi_buf, &enc->tw_lo_buf);
    clpe__program_release(shared); /* the encoder holds its own reference */
    if (status)
        *status = result;
    if (result != CLPE_SUCCESS) {
        clpe_encoder_release(enc);
        return NULL;
    }
    return enc;
}

clpe_encoder *clpe_encoder_create(cl_context context, cl_device_id device, const clpe_config *cfg,
                                  clpe_build_log *log, clpe_status *status)
{
    clpe_encoder *enc = NULL;
    clpe_program_shared *shared = NULL;
    clpe__log_reset(log);
    clpe_status result = context && device ? encoder_new_host(cfg, &enc) : CLPE_ERROR_NULL_POINTER;
    if (result == CLPE_SUCCESS)
        result = clpe__program_for(context, device, cfg->dtype, CLPE_FAMILY_ROWS, log, &shared);
    return finish(enc, shared, result, status);
}

clpe_encoder *clpe_encoder_create_like(const clpe_encoder *like, const clpe_config *cfg,
                                       clpe_status *status)
{
    clpe_encoder *enc = NULL;
    clpe_program_shared *shared = NULL;
    clpe_status result = !like           ? CLPE_ERROR_NULL_ENCODER
                         : !like->shared ? CLPE_ERROR_HOST_ONLY
                                         : encoder_new_host(cfg, &enc);
    if (result == CLPE_SUCCESS)
        result = clpe__program_like(like->shared, cfg->dtype, CLPE_FAMILY_ROWS, &shared);
    return finish(enc, shared, result, status);
}

clpe_encoder *clpe_encoder_create_host(const clpe_config *cfg, clpe_status *status)
{
    clpe_encoder *enc = NULL;
    clpe_status result = encoder_new_host(cfg, &enc);
    return finish(enc, NULL, result, status);
}

void clpe_encoder_release(clpe_encoder *enc)
{
    if (!enc)
        return;
    clpe__detach_words(enc->shared, enc->tw_hi_buf, enc->tw_lo_buf);
    free(enc->tw_hi);
    free(enc->tw_lo);
    free(enc);
}

clpe_status clpe_encoder_get_config(const clpe_encoder *enc, clpe_config *cfg)
{
    if (!enc)
        return CLPE_ERROR_NULL_ENCODER;
    if (!cfg)
        return CLPE_ERROR_NULL_POINTER;
    *cfg = enc->cfg;
    return CLPE_SUCCESS;
}

clpe_status clpe_encoder_get_launch_info(const clpe_encoder *enc, clpe_launch_info *info)
{
    if (!enc)
        return CLPE_ERROR_NULL_ENCODER;
    if (!enc->shared)
        return CLPE_ERROR_HOST_ONLY;
    if (!info)
        return CLPE_ERROR_NULL_POINTER;
    const clpe_launch_shape *s = &enc->shared->shape;
    clpe_launch_info out = {
        .pairs_per_item = clpe__pairs_per_item(s, enc->cfg.dtype),
        .rows_per_item = s->rows_per_item,
        .work_group_size = s->local_x,
        .max_launch_rows = s->max_rows,
        .max_launch_batch = s->max_batch,
        .tile_walk = s->tile_walk && s->pairs_per_item > 1,
    };
    *info = out;
    return CLPE_SUCCESS;
}
