/*
 * config.c - default configuration and its validation.
 */
#include "internal.h"

#include <float.h>
#include <math.h>

clpe_config clpe_config_default(uint32_t d)
{
    clpe_config cfg;
    cfg.d = d;
    cfg.base = 10000.0;
    cfg.freq = CLPE_FREQ_PAPER;
    cfg.layout = CLPE_LAYOUT_INTERLEAVED;
    cfg.dtype = CLPE_DTYPE_F32;
    cfg.scale = 1.0;
    return cfg;
}

size_t clpe__dtype_size(clpe_dtype dtype)
{
    switch (dtype) {
    case CLPE_DTYPE_F32: return 4;
    case CLPE_DTYPE_F16: return 2;
    case CLPE_DTYPE_BF16: return 2;
    case CLPE_DTYPE_F64: return 8;
    }
    return 0;
}

clpe_status clpe_config_check(const clpe_config *cfg)
{
    if (!cfg)
        return CLPE_ERROR_NULL_POINTER;
    if (cfg->d == 0 || (cfg->d & 1u) || cfg->d > CLPE_MAX_D)
        return CLPE_ERROR_INVALID_D;
    if (!isfinite(cfg->base) || !(cfg->base > 1.0))
        return CLPE_ERROR_INVALID_BASE;
    if (!isfinite(cfg->scale) || (cfg->dtype != CLPE_DTYPE_F64 && fabs(cfg->scale) > FLT_MAX))
        return CLPE_ERROR_INVALID_SCALE;
    if ((unsigned)cfg->freq > CLPE_FREQ_TENSOR2TENSOR ||
        (unsigned)cfg->layout > CLPE_LAYOUT_SPLIT || (unsigned)cfg->dtype > CLPE_DTYPE_F64)
        return CLPE_ERROR_INVALID_CONFIG;
    if (cfg->dtype != CLPE_DTYPE_F32)
        return CLPE_ERROR_UNSUPPORTED_DTYPE;
    return CLPE_SUCCESS;
}
