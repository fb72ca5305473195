/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mrope_emulate.c - the host emulation of the multimodal rotary kernels
 * (kernels/clpe_mrope.cl): rope_emulate.c's phase, sin/cos and rotation
 * arithmetic, each pair at its own stream's position, with contraction off,
 * so every output bit matches a conformant device.
 */
#include "overlap.h"

#include "clpe_phase.h"

#include <math.h>
#include <stdint.h>

/* cos and sin of pair i at position p, times the amplitude; sin negated
 * for the inverse. Float values are held exactly in the doubles. */
static void mrope_cos_sin(const clpe_mrope *m, uint64_t p, uint32_t i, double sign, double *c,
                          double *s)
{
    if (m->cfg.rope.dtype == CLPE_DTYPE_F64) {
        double sv, cv;
        pe_sincos_f64(pe_phase128((int64_t)p, m->tw_hi[i], m->tw_lo[i]), &sv, &cv);
        *c = cv * m->amplitude;
        *s = (sv * m->amplitude) * sign;
        return;
    }
    float sv, cv, amp = (float)m->amplitude;
    pe_sincos(pe_phase((int64_t)p, m->tw_hi[i], (pe_u32)m->tw_lo[i]), &sv, &cv);
    *c = cv * amp;
    *s = (sv * amp) * (float)sign;
}

/* (a, b) -> (a c - b s, a s + b c): one product and one fma each. */
static void rotate(clpe_dtype dtype, double a, double b, double c, double s, double *ra,
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

/* A host tensor checked by the device call's own rules (the resolver
 * reads the buffer handle only to require one). */
static clpe_status resolve_host(const clpe_mrope *m, const clpe_host_rope_tensor *t,
                                size_t batch, size_t seq, clpe_rope_region *r)
{
    if (!t->data)
        return CLPE_ERROR_NULL_POINTER;
    if (!CLPE__RESERVED_ZERO(t))
        return CLPE_ERROR_RESERVED_FIELD;
    clpe_rope_tensor as_device = {.buffer = (cl_mem)t->data, .heads = t->heads,
                                  .head_pitch = t->head_pitch, .row_pitch = t->row_pitch,
                                  .batch_pitch = t->batch_pitch};
    return clpe__resolve_rope_tensor(m->cfg.rope.head_dim, clpe__dtype_size(m->cfg.rope.dtype),
                                     &as_device, batch, seq, r);
}

/* The pitches of the positions, and the operand they are: the bytes from
 * the first position read to one past the last. */
static clpe_status resolve_positions(const clpe_mrope *m, const clpe_host_mrope_positions *pos,
                                     size_t tokens, size_t *stream_pitch, size_t *token_pitch,
                                     clpe_operand *op)
{
    if (!pos || !pos->data)
        return CLPE_ERROR_NULL_POINTER;
    if (!CLPE__RESERVED_ZERO(pos))
        return CLPE_ERROR_RESERVED_FIELD;
    *stream_pitch = pos->stream_pitch ? pos->stream_pitch : tokens;
    *token_pitch = pos->token_pitch ? pos->token_pitch : 1;
    size_t span = 0, last, t1;
    if (tokens && (!clpe__mul_size(m->cfg.streams - 1, *stream_pitch, &last) ||
                   !clpe__mul_size(tokens - 1, *token_pitch, &t1) ||
                   !clpe__add_size(last, t1, &last) || !clpe__add_size(last, 1, &last) ||
                   !clpe__mul_size(last, sizeof(int64_t), &span)))
        return CLPE_ERROR_TOO_LARGE;
    *op = (clpe_operand){.host = pos->data, .bytes = clpe__footprint_bytes(0, span),
                         .access = CLPE_ACCESS_READ};
    return CLPE_SUCCESS;
}

static void rotate_token(const clpe_mrope *m, const clpe_host_rope_tensor *t,
                         const clpe_rope_region *r, size_t b, size_t s, uint32_t i, double c,
                         double sn)
{
    clpe_dtype dtype = m->cfg.rope.dtype;
    size_t esize = clpe__dtype_size(dtype);
    bool half_split = m->cfg.rope.pairing == CLPE_ROPE_HALF_SPLIT;
    size_t ka = half_split ? i : 2 * (size_t)i;
    size_t kb = ka + (half_split ? m->n_pairs : 1);
    for (size_t h = 0; h < r->heads; ++h) {
        char *head = (char *)t->data +
                     (b * r->batch_pitch + s * r->row_pitch + h * r->head_pitch) * esize;
        double ra, rb;
        rotate(dtype, clpe__load_elem(dtype, head, ka), clpe__load_elem(dtype, head, kb), c, sn,
               &ra, &rb);
        clpe__store_elem(dtype, head, ka, ra);
        clpe__store_elem(dtype, head, kb, rb);
    }
}

clpe_status clpe_host_mrope(const clpe_mrope *mrope, size_t batch, size_t seq,
                            const clpe_host_rope_tensor *q, const clpe_host_rope_tensor *k,
                            const clpe_host_mrope_positions *positions, uint32_t flags)
{
    clpe_rope_region rq, rk;
    size_t tokens, sp, tp;
    if (!mrope)
        return CLPE_ERROR_NULL_ENCODER;
    if (!q)
        return CLPE_ERROR_NULL_POINTER;
    if (flags & ~CLPE_ROPE_INVERSE)
        return CLPE_ERROR_INVALID_CONFIG;
    if (!clpe__mul_size(batch, seq, &tokens))
        return CLPE_ERROR_TOO_LARGE;
    clpe_status status = resolve_host(mrope, q, batch, seq, &rq);
    if (status == CLPE_SUCCESS && k)
        status = resolve_host(mrope, k, batch, seq, &rk);
    clpe_operand pos_op;
    if (status == CLPE_SUCCESS)
        status = resolve_positions(mrope, positions, tokens, &sp, &tp, &pos_op);
    if (status == CLPE_SUCCESS) {
        /* the device call's rule: q and k share no element with each other
         * or the positions */
        size_t head_dim = mrope->cfg.rope.head_dim, esize = clpe__dtype_size(mrope->cfg.rope.dtype);
        clpe_operand ops[3] = {
            {.host = q->data,
             .bytes = clpe__rope_tensor_footprint(head_dim, esize, &rq, batch, seq),
             .access = CLPE_ACCESS_READ_WRITE},
            {.host = k ? k->data : NULL,
             .bytes = k ? clpe__rope_tensor_footprint(head_dim, esize, &rk, batch, seq)
                        : clpe__footprint_bytes(0, 0),
             .access = CLPE_ACCESS_READ_WRITE},
            pos_op};
        status = clpe__check_operands(ops, 3);
    }
    if (status != CLPE_SUCCESS)
        return status;
    double sign = (flags & CLPE_ROPE_INVERSE) ? -1.0 : 1.0;
    for (size_t b = 0; b < batch; ++b)
        for (size_t s = 0; s < seq; ++s) {
            const int64_t *at = positions->data + (b * seq + s) * tp;
            for (uint32_t i = 0; i < mrope->n_pairs; ++i) {
                double c, sn;
                uint64_t p = (uint64_t)at[clpe__mrope_stream(mrope, i) * sp];
                mrope_cos_sin(mrope, p, i, sign, &c, &sn);
                rotate_token(mrope, q, &rq, b, s, i, c, sn);
                if (k)
                    rotate_token(mrope, k, &rk, b, s, i, c, sn);
            }
        }
    return CLPE_SUCCESS;
}

clpe_status clpe_host_mrope_cache(const clpe_mrope *mrope, size_t n,
                                  const clpe_host_mrope_positions *positions, void *cos,
                                  void *sin, size_t row_pitch)
{
    size_t sp, tp;
    if (!mrope)
        return CLPE_ERROR_NULL_ENCODER;
    if (!cos || !sin)
        return CLPE_ERROR_NULL_POINTER;
    clpe_dtype dtype = mrope->cfg.rope.dtype;
    size_t esize = clpe__dtype_size(dtype);
    clpe_region r;
    clpe_status status = clpe__resolve_rows(mrope->rotary_dim, esize, 0, row_pitch, 0, 1, n, &r);
    clpe_operand pos_op;
    if (status == CLPE_SUCCESS)
        status = resolve_positions(mrope, positions, n, &sp, &tp, &pos_op);
    if (status == CLPE_SUCCESS) {
        /* the device call's rule: cos and sin share no element with each
         * other or the positions */
        clpe_operand ops[3] = {
            {.host = cos, .bytes = clpe__footprint_region(&r, mrope->rotary_dim, esize, 1, n),
             .access = CLPE_ACCESS_WRITE},
            {.host = sin, .bytes = clpe__footprint_region(&r, mrope->rotary_dim, esize, 1, n),
             .access = CLPE_ACCESS_WRITE},
            pos_op};
        status = clpe__check_operands(ops, 3);
    }
    if (status != CLPE_SUCCESS)
        return status;
    bool half_split = mrope->cfg.rope.pairing == CLPE_ROPE_HALF_SPLIT;
    size_t partner = half_split ? mrope->n_pairs : 1, stride = half_split ? 1 : 2;
    for (size_t s = 0; s < n; ++s) {
        char *crow = (char *)cos + s * r.row_pitch * esize;
        char *srow = (char *)sin + s * r.row_pitch * esize;
        for (uint32_t i = 0; i < mrope->n_pairs; ++i) {
            double c, sn;
            uint64_t p = (uint64_t)positions->data[s * tp + clpe__mrope_stream(mrope, i) * sp];
            mrope_cos_sin(mrope, p, i, 1.0, &c, &sn);
            size_t ka = i * stride;
            clpe__store_elem(dtype, crow, ka, c);
            clpe__store_elem(dtype, crow, ka + partner, c);
            clpe__store_elem(dtype, srow, ka, sn);
            clpe__store_elem(dtype, srow, ka + partner, sn);
        }
    }
    return CLPE_SUCCESS;
}
