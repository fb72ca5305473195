/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emulate.c - the host emulation: the same arithmetic as the kernels, in C.
 *
 * clpe_phase.h is compiled here by the host compiler with contraction off
 * (see CMakeLists.txt), so every value equals, bit for bit, what a
 * conformant device writes. The storage conversions below are the
 * correctly rounded ones OpenCL defines (vstore_half_rte) or that the
 * kernels write out (bfloat16).
 */
#include "sinusoid/sinusoid.h"
#include "core/overlap.h"

#include "clpe_phase.h"

#include <stdlib.h>
#include <string.h>

/* PE(p) for every slot of a row, in the arithmetic type (float values
 * held in doubles for the 32- and 16-bit types). */
static void pe_values(const clpe_encoder *enc, uint64_t p, double *pe)
{
    const clpe_slots *sl = &enc->slots;
    bool zero_row = (enc->cfg.flags & CLPE_FLAG_PADDING_ROW) &&
                    p == (uint64_t)enc->cfg.padding_position;
    for (uint32_t i = 0; i < sl->n_pairs; ++i) {
        double s = 0, c = 0;
        if (enc->cfg.dtype == CLPE_DTYPE_F64) {
            pe_sincos_f64(pe_phase128((int64_t)p, enc->tw_hi[i], enc->tw_lo[i]), &s, &c);
        } else {
            /* 16-bit storage takes the narrow variant, as its row kernels do */
            float sf, cf;
            pe_u64 phase = pe_phase((int64_t)p, enc->tw_hi[i], (pe_u32)enc->tw_lo[i]);
            if (enc->cfg.dtype == CLPE_DTYPE_F32)
                pe_sincos(phase, &sf, &cf);
            else
                pe_sincos_narrow(phase, &sf, &cf);
            s = sf;
            c = cf;
        }
        if (zero_row)
            s = c = 0;
        pe[sl->sin_off + i * sl->stride] = s;
        if (i < sl->n_cos)
            pe[sl->cos_off + i * sl->stride] = c;
    }
    if ((enc->cfg.flags & CLPE_FLAG_ODD_D_ZERO_COLUMN) && (enc->cfg.d & 1u))
        pe[enc->cfg.d - 1] = 0;
}

/* x * scale + pe in the arithmetic type, as two rounded operations (the
 * kernels' contract; contraction is off for this file). */
static double scale_add(clpe_dtype dtype, double x, double scale, double pe)
{
    if (dtype == CLPE_DTYPE_F64) {
        double t = x * scale;
        return t + pe;
    }
    float t = (float)x * (float)scale;
    return t + (float)pe;
}

/* The scale as the kernels see it: a float, except for f64. */
static double arith_scale(const clpe_encoder *enc)
{
    return enc->cfg.dtype == CLPE_DTYPE_F64 ? enc->cfg.scale : (double)(float)enc->cfg.scale;
}

/* Position of row s of sequence b, wrapping modulo 2^64 like the device. */
static uint64_t position_of(clpe_position_source source, int64_t start,
                            const int64_t *positions, size_t seq, size_t b, size_t s)
{
    if (source == CLPE_POSITIONS_START)
        return (uint64_t)start + s;
    if (source == CLPE_POSITIONS_PER_SEQUENCE)
        return (uint64_t)positions[b] + s;
    return (uint64_t)positions[b * seq + s];
}

/* The host positions a call reads, as an operand (none for a start). */
static clpe_operand host_positions_operand(clpe_position_source source, const int64_t *positions,
                                           size_t batch, size_t seq)
{
    size_t count = source == CLPE_POSITIONS_IDS           ? batch * seq
                   : source == CLPE_POSITIONS_PER_SEQUENCE ? batch
                                                           : 0;
    return (clpe_operand){.host = count ? positions : NULL,
                          .bytes = clpe__footprint_bytes(0, count * sizeof(int64_t)),
                          .access = CLPE_ACCESS_READ};
}

static clpe_status check_host_positions(clpe_position_source source, int64_t start,
                                        const int64_t *positions, size_t seq)
{
    if ((unsigned)source > CLPE_POSITIONS_IDS)
        return CLPE_ERROR_INVALID_POSITIONS;
    if (source != CLPE_POSITIONS_START && !positions)
        return CLPE_ERROR_NULL_POINTER;
    return source == CLPE_POSITIONS_START ? clpe__check_start(start, seq) : CLPE_SUCCESS;
}

clpe_status clpe_host_table(const clpe_encoder *enc, int64_t start, size_t n, void *out,
                            size_t row_pitch)
{
    if (!enc)
        return CLPE_ERROR_NULL_ENCODER;
    if (!out)
        return CLPE_ERROR_NULL_POINTER;
    uint32_t d = enc->cfg.d;
    clpe_region r;
    clpe_status status = clpe__resolve_shape(enc, 0, row_pitch, 0, 1, n, &r);
    if (status != CLPE_SUCCESS)
        return status;
    row_pitch = r.row_pitch;
    status = check_host_positions(CLPE_POSITIONS_START, start, NULL, n);
    if (status != CLPE_SUCCESS)
        return status;
    double *pe = malloc(d * sizeof *pe);
    if (!pe)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    size_t esize = clpe__dtype_size(enc->cfg.dtype);
    for (size_t r = 0; r < n; ++r) {
        pe_values(enc, (uint64_t)start + r, pe);
        char *row = (char *)out + r * row_pitch * esize;
        for (uint32_t k = 0; k < d; ++k)
            clpe__store_elem(enc->cfg.dtype, row, k, pe[k]);
    }
    free(pe);
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
    clpe_region r;
    clpe_status status = clpe__resolve_shape(enc, 0, row_pitch, batch_pitch, batch, seq, &r);
    if (status != CLPE_SUCCESS)
        return status;
    row_pitch = r.row_pitch;
    batch_pitch = r.batch_pitch;
    status = check_host_positions(source, start, host_positions, seq);
    if (status == CLPE_SUCCESS) {
        clpe_operand ops[2] = {
            {.host = x,
             .bytes = clpe__footprint_region(&r, enc->cfg.d, clpe__dtype_size(enc->cfg.dtype),
                                             batch, seq),
             .access = CLPE_ACCESS_READ_WRITE},
            host_positions_operand(source, host_positions, batch, seq)};
        status = clpe__check_operands(ops, 2);
    }
    if (status != CLPE_SUCCESS)
        return status;

    double *pe = malloc(d * sizeof *pe);
    if (!pe)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    clpe_dtype dtype = enc->cfg.dtype;
    size_t esize = clpe__dtype_size(dtype);
    double scale = arith_scale(enc);
    for (size_t b = 0; b < batch; ++b) {
        for (size_t s = 0; s < seq; ++s) {
            pe_values(enc, position_of(source, start, host_positions, seq, b, s), pe);
            char *row = (char *)x + (b * batch_pitch + s * row_pitch) * esize;
            for (uint32_t k = 0; k < d; ++k)
                clpe__store_elem(dtype, row, k, scale_add(dtype, clpe__load_elem(dtype, row, k), scale, pe[k]));
        }
    }
    free(pe);
    return CLPE_SUCCESS;
}

clpe_status clpe_host_gather(const clpe_encoder *enc, size_t batch, size_t seq,
                             const int32_t *ids, const void *embedding, size_t vocab,
                             size_t emb_row_pitch, void *out, size_t out_row_pitch,
                             clpe_position_source source, int64_t start,
                             const int64_t *host_positions, size_t *bad_count)
{
    if (!enc)
        return CLPE_ERROR_NULL_ENCODER;
    if (!ids || !out || (!embedding && vocab > 0))
        return CLPE_ERROR_NULL_POINTER;
    uint32_t d = enc->cfg.d;
    clpe_region re, ro;
    size_t rows;
    if (!clpe__mul_size(batch, seq, &rows))
        return CLPE_ERROR_TOO_LARGE;
    clpe_status status = clpe__resolve_shape(enc, 0, emb_row_pitch, 0, 1, vocab, &re);
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_shape(enc, 0, out_row_pitch, 0, 1, rows, &ro);
    if (status != CLPE_SUCCESS)
        return status;
    emb_row_pitch = re.row_pitch;
    out_row_pitch = ro.row_pitch;
    status = check_host_positions(source, start, host_positions, seq);
    if (status == CLPE_SUCCESS) {
        /* the output shares no byte with the table, the ids or the positions */
        size_t es = clpe__dtype_size(enc->cfg.dtype);
        clpe_operand ops[4] = {
            {.host = out, .bytes = clpe__footprint_region(&ro, d, es, 1, rows),
             .access = CLPE_ACCESS_WRITE},
            {.host = embedding, .bytes = clpe__footprint_region(&re, d, es, 1, vocab),
             .access = CLPE_ACCESS_READ},
            {.host = ids, .bytes = clpe__footprint_bytes(0, rows * sizeof(int32_t)),
             .access = CLPE_ACCESS_READ},
            host_positions_operand(source, host_positions, batch, seq)};
        status = clpe__check_operands(ops, 4);
    }
    if (status != CLPE_SUCCESS)
        return status;

    double *pe = malloc(d * sizeof *pe);
    if (!pe)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    clpe_dtype dtype = enc->cfg.dtype;
    size_t esize = clpe__dtype_size(dtype), bad = 0;
    double scale = arith_scale(enc);
    for (size_t b = 0; b < batch; ++b) {
        for (size_t s = 0; s < seq; ++s) {
            int32_t id = ids[b * seq + s];
            const char *erow = NULL;
            if (id >= 0 && (size_t)id < vocab)
                erow = (const char *)embedding + (size_t)id * emb_row_pitch * esize;
            else
                ++bad;
            pe_values(enc, position_of(source, start, host_positions, seq, b, s), pe);
            char *row = (char *)out + (b * seq + s) * out_row_pitch * esize;
            for (uint32_t k = 0; k < d; ++k) {
                double e = erow ? clpe__load_elem(dtype, erow, k) : 0.0;
                clpe__store_elem(dtype, row, k, scale_add(dtype, e, scale, pe[k]));
            }
        }
    }
    free(pe);
    if (bad_count)
        *bad_count = bad;
    return CLPE_SUCCESS;
}
