/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_emulate.c - the host emulation of the rotary kernels: the same phase,
 * sin/cos and rotation arithmetic as kernels/clpe_rope.cl, in C, with
 * contraction off, so every output bit matches a conformant device.
 */
#include "overlap.h"

#include "clpe_phase.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* cos and sin of pair i at position p, times the amplitude; sin negated for
 * the inverse. Float values are held exactly in the doubles. */
void clpe__rope_cos_sin(const clpe_rope *rope, uint64_t p, uint32_t i, double sign, double *c,
                        double *s)
{
    if (rope->cfg.dtype == CLPE_DTYPE_F64) {
        double sv, cv;
        pe_sincos_f64(pe_phase128((int64_t)p, rope->tw_hi[i], rope->tw_lo[i]), &sv, &cv);
        *c = cv * rope->amplitude;
        *s = (sv * rope->amplitude) * sign;
        return;
    }
    float sv, cv, m = (float)rope->amplitude;
    pe_sincos(pe_phase((int64_t)p, rope->tw_hi[i], (pe_u32)rope->tw_lo[i]), &sv, &cv);
    *c = cv * m;
    *s = (sv * m) * (float)sign;
}

/* (a, b) -> (a c - b s, a s + b c): one product and one fma each. */
void clpe__rope_rotate(clpe_dtype dtype, double a, double b, double c, double s, double *ra,
                       double *rb)
{
    if (dtype == CLPE_DTYPE_F64) {
        *ra = fma(a, c, -(b * s));
        *rb = fma(a, s, b * c);
        return;
    }
    float fa = (float)a, fb = (float)b, fc = (float)c, fs = (float)s;
    *ra = fmaf(fa, fc, -(fb * fs));
    *rb = fmaf(fa, fs, fb * fc);
}

/* A host tensor: its data and its layout, resolved by the device call's
 * resolver, so host and device accept the same tensors. */
typedef struct host_region {
    char *data;
    size_t heads, head_pitch, row_pitch, batch_pitch;
    clpe_rope_region r;
} host_region;

static clpe_status resolve_host(const clpe_rope *rope, const clpe_host_rope_tensor *t,
                                size_t batch, size_t seq, host_region *r)
{
    if (!t->data)
        return CLPE_ERROR_NULL_POINTER;
    if (!CLPE__RESERVED_ZERO(t))
        return CLPE_ERROR_RESERVED_FIELD;
    clpe_status status = clpe__resolve_rope_region(rope, 0, t->heads, t->head_pitch, t->row_pitch,
                                                   t->batch_pitch, batch, seq, &r->r);
    if (status != CLPE_SUCCESS)
        return status;
    r->data = t->data;
    r->heads = r->r.heads;
    r->head_pitch = r->r.head_pitch;
    r->row_pitch = r->r.row_pitch;
    r->batch_pitch = r->r.batch_pitch;
    return CLPE_SUCCESS;
}

/* The host operand of a resolved tensor (NULL: absent). */
static clpe_operand host_operand(const clpe_rope *rope, const host_region *r, size_t batch,
                                 size_t seq)
{
    if (!r)
        return (clpe_operand){.bytes = clpe__footprint_bytes(0, 0)};
    return (clpe_operand){.host = r->data, .bytes = clpe__rope_footprint(rope, &r->r, batch, seq),
                          .access = CLPE_ACCESS_READ_WRITE};
}

static uint64_t position_of(clpe_position_source source, int64_t start, const int64_t *positions,
                            size_t seq, size_t b, size_t s)
{
    if (source == CLPE_POSITIONS_START)
        return (uint64_t)start + s;
    if (source == CLPE_POSITIONS_PER_SEQUENCE)
        return (uint64_t)positions[b] + s;
    return (uint64_t)positions[b * seq + s];
}

static void rotate_token(const clpe_rope *rope, const host_region *r, size_t b, size_t s,
                         uint32_t i, double c, double sn)
{
    clpe_dtype dtype = rope->cfg.dtype;
    size_t esize = clpe__dtype_size(dtype);
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    size_t ka = half_split ? i : 2 * (size_t)i;
    size_t kb = ka + (half_split ? rope->n_pairs : 1);
    for (size_t h = 0; h < r->heads; ++h) {
        char *head = r->data + (b * r->batch_pitch + s * r->row_pitch + h * r->head_pitch) * esize;
        double ra, rb;
        clpe__rope_rotate(dtype, clpe__load_elem(dtype, head, ka),
                          clpe__load_elem(dtype, head, kb), c, sn, &ra, &rb);
        clpe__store_elem(dtype, head, ka, ra);
        clpe__store_elem(dtype, head, kb, rb);
    }
}

clpe_status clpe_host_rope(const clpe_rope *rope, size_t batch, size_t seq,
                           const clpe_host_rope_tensor *q, const clpe_host_rope_tensor *k,
                           clpe_position_source source, int64_t start,
                           const int64_t *host_positions, uint32_t flags)
{
    host_region rq, rk;
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    if (!q)
        return CLPE_ERROR_NULL_POINTER;
    if (flags & ~CLPE_ROPE_INVERSE)
        return CLPE_ERROR_INVALID_CONFIG;
    clpe_status status = resolve_host(rope, q, batch, seq, &rq);
    if (status == CLPE_SUCCESS && k)
        status = resolve_host(rope, k, batch, seq, &rk);
    if (status != CLPE_SUCCESS)
        return status;
    if ((unsigned)source > CLPE_POSITIONS_IDS)
        return CLPE_ERROR_INVALID_POSITIONS;
    if (source != CLPE_POSITIONS_START && !host_positions)
        return CLPE_ERROR_NULL_POINTER;
    if (source == CLPE_POSITIONS_START)
        status = clpe__check_start(start, seq);
    if (status != CLPE_SUCCESS)
        return status;
    size_t npos = source == CLPE_POSITIONS_IDS ? batch * seq
                  : source == CLPE_POSITIONS_PER_SEQUENCE ? batch : 0;
    clpe_operand ops[3] = {
        host_operand(rope, &rq, batch, seq), host_operand(rope, k ? &rk : NULL, batch, seq),
        {.host = npos ? host_positions : NULL,
         .bytes = clpe__footprint_bytes(0, npos * sizeof(int64_t)), .access = CLPE_ACCESS_READ}};
    status = clpe__check_operands(ops, 3);
    if (status != CLPE_SUCCESS)
        return status;
    double sign = (flags & CLPE_ROPE_INVERSE) ? -1.0 : 1.0;
    for (size_t b = 0; b < batch; ++b) {
        for (size_t s = 0; s < seq; ++s) {
            uint64_t p = position_of(source, start, host_positions, seq, b, s);
            for (uint32_t i = 0; i < rope->n_pairs; ++i) {
                double c, sn;
                clpe__rope_cos_sin(rope, p, i, sign, &c, &sn);
                rotate_token(rope, &rq, b, s, i, c, sn);
                if (k)
                    rotate_token(rope, &rk, b, s, i, c, sn);
            }
        }
    }
    return CLPE_SUCCESS;
}

clpe_status clpe_host_rope_cache(const clpe_rope *rope, int64_t start, size_t n, void *cos,
                                 void *sin, size_t row_pitch)
{
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    if (!cos || !sin)
        return CLPE_ERROR_NULL_POINTER;
    clpe_dtype dtype = rope->cfg.dtype;
    size_t esize = clpe__dtype_size(dtype);
    clpe_region r;
    clpe_status status = clpe__resolve_rows(rope->rotary_dim, esize, 0, row_pitch, 0, 1, n, &r);
    if (status == CLPE_SUCCESS)
        status = clpe__check_start(start, n);
    if (status == CLPE_SUCCESS) {
        clpe_footprint rows = clpe__footprint_region(&r, rope->rotary_dim, esize, 1, n);
        clpe_operand ops[2] = {{.host = cos, .bytes = rows, .access = CLPE_ACCESS_WRITE},
                               {.host = sin, .bytes = rows, .access = CLPE_ACCESS_WRITE}};
        status = clpe__check_operands(ops, 2);
    }
    if (status != CLPE_SUCCESS)
        return status;
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    size_t partner = half_split ? rope->n_pairs : 1, stride = half_split ? 1 : 2;
    for (size_t s = 0; s < n; ++s) {
        char *crow = (char *)cos + s * r.row_pitch * esize;
        char *srow = (char *)sin + s * r.row_pitch * esize;
        for (uint32_t i = 0; i < rope->n_pairs; ++i) {
            double c, sn;
            clpe__rope_cos_sin(rope, (uint64_t)start + s, i, 1.0, &c, &sn);
            size_t ka = i * stride;
            clpe__store_elem(dtype, crow, ka, c);
            clpe__store_elem(dtype, crow, ka + partner, c);
            clpe__store_elem(dtype, srow, ka, sn);
            clpe__store_elem(dtype, srow, ka + partner, sn);
        }
    }
    return CLPE_SUCCESS;
}
