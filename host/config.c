/*
 * config.c - default configuration, framework presets, and validation.
 */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

clpe_config clpe_config_default(uint32_t d)
{
    clpe_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.d = d;
    cfg.base = 10000.0;
    cfg.freq = CLPE_FREQ_PAPER;
    cfg.layout = CLPE_LAYOUT_INTERLEAVED;
    cfg.dtype = CLPE_DTYPE_F32;
    cfg.scale = 1.0;
    cfg.flags = 0;
    cfg.padding_position = 0;
    return cfg;
}

/* One framework's table. Each row names the source its numbers come from. */
typedef struct preset {
    const char *name;
    clpe_freq freq;
    clpe_layout layout;
    int64_t first_position;
    uint32_t flags;
    int64_t padding_position;
} preset;

static const preset presets[] = {
    /* Vaswani et al. 2017, section 3.5: PE(pos, 2i) = sin, PE(pos, 2i+1) = cos */
    {"vaswani", CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED, 0, 0, 0},
    /* tensor2tensor layers/common_attention.py get_timing_signal_1d:
     * log_timescale_increment = log(max/min) / max(num_timescales - 1, 1),
     * concat([sin, cos]), odd channels padded with one zero column */
    {"tensor2tensor", CLPE_FREQ_TENSOR2TENSOR, CLPE_LAYOUT_SPLIT, 0,
     CLPE_FLAG_ODD_D_ZERO_COLUMN, 0},
    /* fairseq modules/sinusoidal_positional_embedding.py get_embedding:
     * half_dim - 1 in the exponent, cat([sin, cos]), zero column for odd d,
     * row padding_idx (1) zeroed; utils.make_positions starts at padding_idx+1 */
    {"fairseq", CLPE_FREQ_TENSOR2TENSOR, CLPE_LAYOUT_SPLIT, 2,
     CLPE_FLAG_ODD_D_ZERO_COLUMN | CLPE_FLAG_PADDING_ROW, 1},
    /* transformers models/marian/modeling_marian.py
     * MarianSinusoidalPositionalEmbedding: pos / 10000^(2 (j//2) / dim),
     * sin of even j in the first half, cos of odd j in the second */
    {"marian", CLPE_FREQ_PAPER, CLPE_LAYOUT_SPLIT, 0, 0, 0},
    /* OpenNMT-tf opennmt/layers/position.py SinusoidalPositionEncoder:
     * log(10000) / (depth/2 - 1), concat([sin, cos]); positions start at 1 */
    {"opennmt-tf", CLPE_FREQ_TENSOR2TENSOR, CLPE_LAYOUT_SPLIT, 1, 0, 0},
};

clpe_status clpe_config_preset(const char *name, uint32_t d, clpe_config *cfg,
                               int64_t *first_position)
{
    if (!name || !cfg)
        return CLPE_ERROR_NULL_POINTER;
    for (size_t k = 0; k < sizeof presets / sizeof presets[0]; ++k) {
        const preset *p = &presets[k];
        if (strcasecmp(name, p->name) != 0)
            continue;
        *cfg = clpe_config_default(d);
        cfg->freq = p->freq;
        cfg->layout = p->layout;
        cfg->flags = p->flags;
        cfg->padding_position = p->padding_position;
        if (first_position)
            *first_position = p->first_position;
        return CLPE_SUCCESS;
    }
    return CLPE_ERROR_UNKNOWN_PRESET;
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
    if (!CLPE__RESERVED_ZERO(cfg))
        return CLPE_ERROR_RESERVED_FIELD;
    bool odd_ok = (cfg->flags & CLPE_FLAG_ODD_D_ZERO_COLUMN) != 0;
    if (cfg->d == 0 || cfg->d > CLPE_MAX_D || ((cfg->d & 1u) && !(odd_ok && cfg->d >= 3)))
        return CLPE_ERROR_INVALID_D;
    if (!isfinite(cfg->base) || !(cfg->base > 1.0))
        return CLPE_ERROR_INVALID_BASE;
    if (!isfinite(cfg->scale) || (cfg->dtype != CLPE_DTYPE_F64 && fabs(cfg->scale) > FLT_MAX))
        return CLPE_ERROR_INVALID_SCALE;
    if ((unsigned)cfg->freq > CLPE_FREQ_TENSOR2TENSOR ||
        (unsigned)cfg->layout > CLPE_LAYOUT_SPLIT || (unsigned)cfg->dtype > CLPE_DTYPE_F64 ||
        (cfg->flags & ~(CLPE_FLAG_ODD_D_ZERO_COLUMN | CLPE_FLAG_PADDING_ROW)))
        return CLPE_ERROR_INVALID_CONFIG;
    return CLPE_SUCCESS;
}

bool clpe__device_has_dtype(cl_device_id device, clpe_dtype dtype)
{
    if (dtype != CLPE_DTYPE_F64)
        return true; /* f16 and bf16 use only vload_half/vstore_half and integer ops */
    cl_device_fp_config fp = 0;
    return clGetDeviceInfo(device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL) ==
               CL_SUCCESS &&
           (fp & CL_FP_FMA) && (fp & CL_FP_ROUND_TO_NEAREST);
}

int clpe_device_supports_dtype(cl_device_id device, clpe_dtype dtype)
{
    if (!device || (unsigned)dtype > CLPE_DTYPE_F64)
        return 0;
    return clpe__device_has_dtype(device, dtype);
}
