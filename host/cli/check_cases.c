/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_cases.c - what `clpe check` runs: the configurations, the table
 * cases, and the inputs of each path (positions, activations, token ids),
 * all from one reproducible pseudo-random stream so a failure can be rerun.
 */
#include "check.h"

#include <string.h>

size_t check_widths(int quick, const uint32_t **widths)
{
    static const uint32_t full[] = {2, 6, 10, 64, 128, 384, 1024, 4096};
    static const uint32_t brief[] = {8, 96};
    *widths = quick ? brief : full;
    return quick ? sizeof brief / sizeof brief[0] : sizeof full / sizeof full[0];
}

check_need check_convention(int conv, uint32_t w, clpe_config *cfg)
{
    *cfg = clpe_config_default(w);
    switch (conv) {
    case 0: case 1: case 2: case 3: /* both conventions, both layouts */
        cfg->freq = (clpe_freq)(conv / 2);
        cfg->layout = (clpe_layout)(conv % 2);
        return CHECK_ALWAYS;
    case 4: /* fairseq at the odd width above: zero column, all-zero padding row */
        if (clpe_config_preset("fairseq", w + 1, cfg, NULL) != CLPE_SUCCESS)
            cfg->d = 0; /* the encoder then fails, and the run reports it */
        return CHECK_ALWAYS;
    case 5: case 6: /* cosines first (Hugging Face Musicgen), both conventions */
        cfg->freq = (clpe_freq)(conv - 5);
        cfg->layout = CLPE_LAYOUT_SPLIT_COS_FIRST;
        return CHECK_IF_OFFERED;
    case 7: case 8: /* the odd width above as Marian (split) and XLM (interleaved) */
        cfg->d = w + 1;
        cfg->freq = CLPE_FREQ_PAPER;
        cfg->layout = conv == 7 ? CLPE_LAYOUT_SPLIT : CLPE_LAYOUT_INTERLEAVED;
        cfg->flags = CLPE_FLAG_ODD_D_HALF_PAIR;
        return CHECK_IF_OFFERED;
    }
    return CHECK_DONE;
}

int64_t check_rand_position(uint64_t *rng)
{
    static const int64_t edges[] = {
        0, 1, -1, 2, (int64_t)1 << 24, ((int64_t)1 << 31) - 1, (int64_t)1 << 32,
        -((int64_t)1 << 32) - 1, ((int64_t)1 << 53) + 1, (int64_t)1 << 62, INT64_MAX,
        INT64_MIN, INT64_MIN + 1,
    };
    uint64_t r = splitmix64(rng);
    switch (r % 4) {
    case 0: return edges[(r >> 8) % (sizeof edges / sizeof edges[0])];
    case 1: return (int64_t)(splitmix64(rng) >> (r >> 8) % 64); /* every magnitude */
    case 2: return -(int64_t)(splitmix64(rng) >> (1 + (r >> 8) % 63));
    default: return (int64_t)splitmix64(rng);
    }
}

size_t check_table_cases(int quick, uint32_t d, uint64_t *rng,
                         check_table_case out[CHECK_MAX_TABLE_CASES])
{
    const size_t n = quick ? 9 : 33;
    const int64_t h = (int64_t)(n / 2);
    const int64_t last_start = INT64_MAX - (int64_t)n + 1; /* the range ends at INT64_MAX */
    const int64_t edges[] = {
        0, -h, ((int64_t)1 << 24) - h, ((int64_t)1 << 31) - h, ((int64_t)1 << 32) - h,
        -((int64_t)1 << 32) - h, ((int64_t)1 << 53) - h, (int64_t)1 << 62,
        last_start, INT64_MIN, INT64_MIN + ((int64_t)1 << 32) - h,
        (int64_t)0x0123456789ABCDEFll,
    };
    size_t count = 0;
    for (size_t k = 0; k < sizeof edges / sizeof edges[0]; ++k) {
        /* a quick run keeps a third of them, and both ends of int64 */
        if (quick && k % 3 != 0 && k != 8 && k != 9)
            continue;
        out[count++] = (check_table_case){edges[k], n, k % 2 ? 2 : 0};
    }
    for (int k = 0; k < (quick ? 2 : 6); ++k) {
        int64_t s = check_rand_position(rng);
        out[count++] = (check_table_case){s > last_start ? last_start : s, n, (size_t)(k % 2)};
    }
    size_t bulk = (quick ? 64u : 512u) * 1024u / d;
    if (bulk < 2 * n)
        bulk = 2 * n;
    out[count++] = (check_table_case){(int64_t)(splitmix64(rng) >> 2), bulk, 0};
    return count;
}

void check_fill_random(int dtype, void *buf, size_t count, uint64_t *rng)
{
    for (size_t k = 0; k < count; ++k) {
        uint64_t r = splitmix64(rng);
        double v = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 8.0;
        switch (dtype) {
        case CLPE_DTYPE_F32: {
            float f = (float)v;
            memcpy((char *)buf + 4 * k, &f, 4);
            break;
        }
        case CLPE_DTYPE_F64:
            memcpy((char *)buf + 8 * k, &v, 8);
            break;
        case CLPE_DTYPE_BF16: {
            float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            uint16_t h = (uint16_t)(u >> 16); /* truncation: any bf16 will do */
            memcpy((char *)buf + 2 * k, &h, 2);
            break;
        }
        case CLPE_DTYPE_F16: {
            /* sign, exponent 10..17 (2^-5 .. 4), random mantissa */
            uint16_t h = (uint16_t)(((r >> 8) & 1u) << 15 | (10u + (r >> 9) % 8u) << 10 |
                                    (r >> 20 & 0x3FFu));
            memcpy((char *)buf + 2 * k, &h, 2);
            break;
        }
        }
    }
}

void check_make_positions(uint64_t *rng, clpe_position_source src, size_t batch, size_t seq,
                          int64_t *pos, int64_t *start)
{
    *start = 0;
    if (src == CLPE_POSITIONS_IDS) {
        for (size_t k = 0; k < batch * seq; ++k)
            pos[k] = check_rand_position(rng);
    } else if (src == CLPE_POSITIONS_PER_SEQUENCE) {
        for (size_t b = 0; b < batch; ++b)
            pos[b] = check_rand_position(rng); /* start + s may wrap: both sides wrap */
    } else {
        int64_t p = check_rand_position(rng);
        *start = p > INT64_MAX - (int64_t)seq ? INT64_MAX - (int64_t)seq + 1 : p;
    }
}

void check_make_ids(uint64_t *rng, int32_t *ids, size_t n, size_t vocab, uint32_t *bad,
                    uint32_t *first_bad)
{
    *bad = 0;
    *first_bad = 0xFFFFFFFFu;
    for (size_t k = 0; k < n; ++k) {
        uint64_t r = splitmix64(rng);
        if (r % 8 == 0) /* below 0 or at/after vocab */
            ids[k] = r >> 8 & 1 ? -1 - (int32_t)(r >> 9 & 3) : (int32_t)(vocab + (r >> 9 & 3));
        else
            ids[k] = (int32_t)((r >> 8) % vocab);
        if ((ids[k] < 0 || (size_t)ids[k] >= vocab) && (*bad)++ == 0)
            *first_bad = (uint32_t)k;
    }
}

void check_make_padded_ids(uint64_t *rng, size_t batch, size_t seq, int32_t pad_id,
                           int64_t first, int64_t pad_pos, int32_t *ids, int64_t *positions)
{
    for (size_t b = 0; b < batch; ++b) {
        size_t left = (size_t)(splitmix64(rng) % (seq / 2 + 1)); /* left padding */
        int64_t k = 0;
        for (size_t s = 0; s < seq; ++s) {
            uint64_t r = splitmix64(rng);
            int32_t id = s < left || r % 7 == 0 ? pad_id : (int32_t)(r >> 8) % 1000;
            ids[b * seq + s] = id;
            positions[b * seq + s] = id == pad_id ? pad_pos : first + k++;
        }
    }
}
