/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encoder.c - creating and releasing encoders.
 */
#include "internal.h"

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

clpe_status clpe__upload_tuning_words(cl_context context, const uint64_t *hi, const uint64_t *lo,
                                      size_t count, unsigned bits, cl_mem *hi_buf,
                                      cl_mem *lo_buf)
{
    cl_int err = CL_SUCCESS;
    *hi_buf = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             count * sizeof *hi, (void *)hi, &err);
    if (err != CL_SUCCESS) {
        *hi_buf = NULL;
        return err;
    }
    /* the low words: 64 bits each for 128-bit words, else 32 (the kernels' uint) */
    size_t lo_size = bits == 128 ? sizeof(cl_ulong) : sizeof(cl_uint);
    void *packed = malloc(count * lo_size);
    if (!packed)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t i = 0; i < count; ++i) {
        if (lo_size == sizeof(cl_ulong))
            ((cl_ulong *)packed)[i] = lo[i];
        else
            ((cl_uint *)packed)[i] = (cl_uint)lo[i];
    }
    *lo_buf = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, count * lo_size,
                             packed, &err);
    free(packed);
    if (err != CL_SUCCESS) {
        *lo_buf = NULL;
        return err;
    }
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
