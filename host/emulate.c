/*
 * emulate.c - the host emulation: the same arithmetic as the kernels, in C.
 *
 * clpe_phase.h is compiled here by the host compiler with contraction off
 * (see CMakeLists.txt), so every value equals, bit for bit, what a
 * conformant device writes.
 */
#include "internal.h"

#include "clpe_phase.h"

#include <stdlib.h>

/* One PE row for position p into row[0..d). */
static void pe_row_f32(const clpe_encoder *enc, int64_t p, float *row)
{
    uint32_t half_d = enc->half_d;
    bool split = enc->cfg.layout == CLPE_LAYOUT_SPLIT;
    for (uint32_t i = 0; i < half_d; ++i) {
        float s, c;
        pe_sincos(pe_phase(p, enc->tw_hi[i], enc->tw_lo[i]), &s, &c);
        if (split) {
            row[i] = s;
            row[half_d + i] = c;
        } else {
            row[2 * i] = s;
            row[2 * i + 1] = c;
        }
    }
}

clpe_status clpe_host_table(const clpe_encoder *enc, int64_t start, size_t n, void *out,
                            size_t row_pitch)
{
    if (!enc)
        return CLPE_ERROR_NULL_ENCODER;
    if (!out)
        return CLPE_ERROR_NULL_POINTER;
    if (row_pitch == 0)
        row_pitch = enc->cfg.d;
    if (row_pitch < enc->cfg.d)
        return CLPE_ERROR_INVALID_PITCH;
    if (n > 0 && (uint64_t)(n - 1) > (uint64_t)INT64_MAX - (uint64_t)start)
        return CLPE_ERROR_POSITION_OVERFLOW;
    float *rows = out;
    for (size_t r = 0; r < n; ++r)
        pe_row_f32(enc, (int64_t)((uint64_t)start + r), rows + r * row_pitch);
    return CLPE_SUCCESS;
}

clpe_status clpe_host_add(const clpe_encoder *enc, size_t batch, size_t seq, void *x,
                          size_t row_pitch, size_t batch_pitch, clpe_position_source source,
                          int64_t start, const int64_t *host_positions)
{
    if (!enc)
        return CLPE_ERROR_NULL_ENCODER;
    if (!x)
        return CLPE_ERROR_NULL_POINTER;
    uint32_t d = enc->cfg.d;
    if (row_pitch == 0)
        row_pitch = d;
    if (batch_pitch == 0)
        batch_pitch = seq * row_pitch;
    if (row_pitch < d || (batch > 1 && seq > 0 && batch_pitch < (seq - 1) * row_pitch + d))
        return CLPE_ERROR_INVALID_PITCH;
    if ((unsigned)source > CLPE_POSITIONS_IDS)
        return CLPE_ERROR_INVALID_POSITIONS;
    if (source != CLPE_POSITIONS_START && !host_positions)
        return CLPE_ERROR_NULL_POINTER;
    if (source == CLPE_POSITIONS_START && seq > 0 &&
        (uint64_t)(seq - 1) > (uint64_t)INT64_MAX - (uint64_t)start)
        return CLPE_ERROR_POSITION_OVERFLOW;

    float *pe = malloc(d * sizeof *pe);
    if (!pe)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    float scale = (float)enc->cfg.scale;
    float *data = x;
    for (size_t b = 0; b < batch; ++b) {
        for (size_t s = 0; s < seq; ++s) {
            uint64_t p;
            if (source == CLPE_POSITIONS_START)
                p = (uint64_t)start + s;
            else if (source == CLPE_POSITIONS_PER_SEQUENCE)
                p = (uint64_t)host_positions[b] + s; /* wraps like the device */
            else
                p = (uint64_t)host_positions[b * seq + s];
            pe_row_f32(enc, (int64_t)p, pe);
            float *row = data + b * batch_pitch + s * row_pitch;
            for (uint32_t k = 0; k < d; ++k)
                row[k] = fmaf(row[k], scale, pe[k]);
        }
    }
    free(pe);
    return CLPE_SUCCESS;
}
