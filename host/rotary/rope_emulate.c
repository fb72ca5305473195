/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_emulate.c - the host emulation of the rotary kernels: the same phase,
 * sin/cos and rotation arithmetic as kernels/clpe_rope.cl, in C, with
 * contraction off, so every output bit matches a conformant device; each
 * pair at its stream's position. Calls are checked by the device calls'
 * resolver (rope_call.c).
 */
#include "rotary/rotary.h"

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

/* (a, b) -> (a c - b s, a s + b c): the rotation of clpe_phase.h. */
void clpe__rope_rotate(clpe_dtype dtype, double a, double b, double c, double s, double *ra,
                       double *rb)
{
    if (dtype == CLPE_DTYPE_F64) {
        *ra = pe_rotate_a_double(a, b, c, s);
        *rb = pe_rotate_b_double(a, b, c, s);
        return;
    }
    float fa = (float)a, fb = (float)b, fc = (float)c, fs = (float)s;
    *ra = pe_rotate_a_float(fa, fb, fc, fs);
    *rb = pe_rotate_b_float(fa, fb, fc, fs);
}

static void rotate_token(const clpe_rope *rope, char *data, const clpe_rope_region *r, size_t b,
                         size_t s, uint32_t i, double c, double sn)
{
    clpe_dtype dtype = rope->cfg.dtype;
    size_t esize = clpe__dtype_size(dtype);
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    size_t ka = half_split ? i : 2 * (size_t)i;
    size_t kb = ka + (half_split ? rope->n_pairs : 1);
    for (size_t h = 0; h < r->heads; ++h) {
        char *head = data + (b * r->batch_pitch + s * r->row_pitch + h * r->head_pitch) * esize;
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
    clpe_rope_view qv, kv;
    clpe_position_args pos;
    clpe_rope_call c;
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    clpe_status status = flags & ~CLPE_ROPE_INVERSE ? CLPE_ERROR_INVALID_CONFIG : CLPE_SUCCESS;
    if (status == CLPE_SUCCESS)
        status = clpe__rope_view_of_host(q, &qv);
    if (status == CLPE_SUCCESS && k)
        status = clpe__rope_view_of_host(k, &kv);
    if (status == CLPE_SUCCESS)
        status = clpe__rope_host_positions(rope, source, start, host_positions, batch, seq, &pos);
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_rope_call(rope, batch, seq, &qv, k ? &kv : NULL, &pos, flags, &c);
    if (status != CLPE_SUCCESS)
        return status;
    double sign = c.inverse ? -1.0 : 1.0;
    for (size_t b = 0; b < batch; ++b) {
        for (size_t s = 0; s < seq; ++s) {
            for (uint32_t i = 0; i < rope->n_pairs; ++i) {
                uint64_t p = clpe__host_position(&c.positions, seq, b, s,
                                                 clpe__rope_stream(rope, i));
                double cv, sn;
                clpe__rope_cos_sin(rope, p, i, sign, &cv, &sn);
                rotate_token(rope, c.q_host, &c.q, b, s, i, cv, sn);
                if (c.has_k)
                    rotate_token(rope, c.k_host, &c.k, b, s, i, cv, sn);
            }
        }
    }
    return CLPE_SUCCESS;
}

clpe_status clpe_host_rope_cache_at(const clpe_rope *rope, size_t n, clpe_position_source source,
                                    int64_t start, const int64_t *host_positions, void *cos,
                                    void *sin, size_t row_pitch)
{
    clpe_position_args pos;
    clpe_rope_cache_call c;
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    if (!cos || !sin)
        return CLPE_ERROR_NULL_POINTER;
    clpe_status status =
        clpe__rope_host_positions(rope, source, start, host_positions, 1, n, &pos);
    if (status == CLPE_SUCCESS)
        status = clpe__resolve_rope_cache_call(
            rope, n, &(clpe_rope_view){.host = cos, .row_pitch = row_pitch},
            &(clpe_rope_view){.host = sin, .row_pitch = row_pitch}, &pos, &c);
    if (status != CLPE_SUCCESS)
        return status;
    clpe_dtype dtype = rope->cfg.dtype;
    size_t esize = clpe__dtype_size(dtype);
    bool half_split = rope->cfg.pairing == CLPE_ROPE_HALF_SPLIT;
    size_t partner = half_split ? rope->n_pairs : 1, stride = half_split ? 1 : 2;
    for (size_t s = 0; s < n; ++s) {
        char *crow = (char *)cos + s * c.cos.row_pitch * esize;
        char *srow = (char *)sin + s * c.sin.row_pitch * esize;
        for (uint32_t i = 0; i < rope->n_pairs; ++i) {
            uint64_t p = clpe__host_position(&c.positions, n, 0, s, clpe__rope_stream(rope, i));
            double cv, sn;
            clpe__rope_cos_sin(rope, p, i, 1.0, &cv, &sn);
            size_t ka = i * stride;
            clpe__store_elem(dtype, crow, ka, cv);
            clpe__store_elem(dtype, crow, ka + partner, cv);
            clpe__store_elem(dtype, srow, ka, sn);
            clpe__store_elem(dtype, srow, ka + partner, sn);
        }
    }
    return CLPE_SUCCESS;
}

clpe_status clpe_host_rope_cache(const clpe_rope *rope, int64_t start, size_t n, void *cos,
                                 void *sin, size_t row_pitch)
{
    return clpe_host_rope_cache_at(rope, n, CLPE_POSITIONS_START, start, NULL, cos, sin,
                                   row_pitch);
}
