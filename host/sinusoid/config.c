/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - default configuration, framework presets, and validation.
 */
#include "sinusoid/sinusoid.h"

#include "clpe_interface.h"

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
    {"marian", CLPE_FREQ_PAPER, CLPE_LAYOUT_SPLIT, 0, CLPE_FLAG_ODD_D_HALF_PAIR, 0},
    /* transformers models/xlm/modeling_xlm.py create_sinusoidal_embeddings:
     * pos / 10000^(2 (j//2) / dim), out[:, 0::2] = sin, out[:, 1::2] = cos
     * (odd dim: one more sine than cosines); positions arange(slen) */
    {"xlm", CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED, 0, CLPE_FLAG_ODD_D_HALF_PAIR, 0},
    /* transformers models/musicgen/modeling_musicgen.py
     * MusicgenSinusoidalPositionalEmbedding.get_embedding: log(10000) /
     * (half_dim - 1), cat([cos, sin]), zero column for odd d; positions
     * arange(seq_len) + past_key_values_length */
    {"musicgen", CLPE_FREQ_TENSOR2TENSOR, CLPE_LAYOUT_SPLIT_COS_FIRST, 0,
     CLPE_FLAG_ODD_D_ZERO_COLUMN, 0},
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

clpe_status clpe_config_check(const clpe_config *cfg)
{
    if (!cfg)
        return CLPE_ERROR_NULL_POINTER;
    if (!CLPE__RESERVED_ZERO(cfg))
        return CLPE_ERROR_RESERVED_FIELD;
    bool zero_column = (cfg->flags & CLPE_FLAG_ODD_D_ZERO_COLUMN) != 0;
    bool half_pair = (cfg->flags & CLPE_FLAG_ODD_D_HALF_PAIR) != 0;
    if (zero_column && half_pair)
        return CLPE_ERROR_INVALID_CONFIG; /* two ways to fill one slot */
    bool odd_ok = (zero_column && cfg->d >= 3) || half_pair;
    if (cfg->d == 0 || cfg->d > CLPE_MAX_D || ((cfg->d & 1u) && !odd_ok))
        return CLPE_ERROR_INVALID_D;
    if (!isfinite(cfg->base) || !(cfg->base > 1.0))
        return CLPE_ERROR_INVALID_BASE;
    if (!isfinite(cfg->scale) || (cfg->dtype != CLPE_DTYPE_F64 && fabs(cfg->scale) > FLT_MAX))
        return CLPE_ERROR_INVALID_SCALE;
    if ((unsigned)cfg->freq > CLPE_FREQ_TENSOR2TENSOR ||
        (unsigned)cfg->layout > CLPE_LAYOUT_SPLIT_COS_FIRST ||
        (unsigned)cfg->dtype > CLPE_DTYPE_F64 ||
        (cfg->flags &
         ~(CLPE_FLAG_ODD_D_ZERO_COLUMN | CLPE_FLAG_PADDING_ROW | CLPE_FLAG_ODD_D_HALF_PAIR)))
        return CLPE_ERROR_INVALID_CONFIG;
    return CLPE_SUCCESS;
}

/* The kernels' flag values are the public ones. */
_Static_assert(PE_FLAG_ODD_D_ZERO_COLUMN == CLPE_FLAG_ODD_D_ZERO_COLUMN &&
                   PE_FLAG_PADDING_ROW == CLPE_FLAG_PADDING_ROW &&
                   PE_FLAG_ODD_D_HALF_PAIR == CLPE_FLAG_ODD_D_HALF_PAIR,
               "kernels/clpe_interface.h flags differ from clpe.h");
_Static_assert(PE_POS_START == CLPE_POSITIONS_START &&
                   PE_POS_PER_SEQUENCE == CLPE_POSITIONS_PER_SEQUENCE &&
                   PE_POS_IDS == CLPE_POSITIONS_IDS,
               "kernels/clpe_interface.h position sources differ from clpe.h");
_Static_assert(PE_OP_TABLE == CLPE_OP_TABLE && PE_OP_ADD == CLPE_OP_ADD &&
                   PE_OP_GATHER == CLPE_OP_GATHER,
               "kernels/clpe_interface.h operations differ from internal.h");

clpe_slots clpe__slots(const clpe_config *cfg)
{
    clpe_slots s;
    bool half_pair = (cfg->flags & CLPE_FLAG_ODD_D_HALF_PAIR) != 0;
    /* an odd d with a half pair: (d+1)/2 sines, one cosine fewer */
    s.n_pairs = half_pair ? (cfg->d + 1) / 2 : cfg->d / 2;
    s.n_cos = half_pair && (cfg->d & 1u) ? s.n_pairs - 1 : s.n_pairs;
    switch (cfg->layout) {
    case CLPE_LAYOUT_SPLIT:
        s.stride = 1, s.sin_off = 0, s.cos_off = s.n_pairs;
        break;
    case CLPE_LAYOUT_SPLIT_COS_FIRST:
        s.stride = 1, s.cos_off = 0, s.sin_off = s.n_cos;
        break;
    default: /* interleaved */
        s.stride = 2, s.sin_off = 0, s.cos_off = 1;
        break;
    }
    return s;
}
