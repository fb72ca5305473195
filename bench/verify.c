/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verify.c - the baselines' self-check (see verify.h).
 */
#include "verify.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The element's bits without its sign: 0 + (-0) gives +0 where the table
 * may hold -0, so the two zeros must compare equal. */
static uint64_t magnitude_bits(const unsigned char *p, size_t es)
{
    if (es == 2) {
        uint16_t v;
        memcpy(&v, p, 2);
        return v & 0x7FFFu;
    } else if (es == 4) {
        uint32_t v;
        memcpy(&v, p, 4);
        return v & 0x7FFFFFFFu;
    }
    uint64_t v;
    memcpy(&v, p, 8);
    return v & 0x7FFFFFFFFFFFFFFFull;
}

static int same_element(const unsigned char *a, const unsigned char *b, size_t es)
{
    if (memcmp(a, b, es) == 0)
        return 1;
    return magnitude_bits(a, es) == 0 && magnitude_bits(b, es) == 0;
}

int verify_baselines(const bench_env *env, const dtype_info *dt, clpe_encoder *enc,
                     cl_program baselines, size_t batch, size_t seq, size_t d, char *why,
                     size_t why_cap)
{
    size_t es = dt->size, seq_bytes = seq * d * es, out_bytes = batch * seq_bytes;
    unsigned char *table = malloc(seq_bytes), *out = malloc(out_bytes);
    int rc = 0;
    size_t emb_bytes = 0;
    cl_int err = table && out ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(env->emb, CL_MEM_SIZE, sizeof emb_bytes, &emb_bytes, NULL);
    if (err == CL_SUCCESS)
        err = env_zero(env, env->emb, emb_bytes);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(env->queue, env->table, CL_TRUE, 0, seq_bytes, table, 0, NULL,
                                  NULL);
    for (size_t k = 0; k < BENCH_N_OPS && err == CL_SUCCESS && rc == 0; k++) {
        const op_def *def = &BENCH_OPS[k];
        if (def->role != OP_ROLE_BASELINE || def->rotary || !op_fits(def, d))
            continue;
        cl_mem dst = def->writes_out ? env->y : env->x;
        op_ctx o = {.def = def, .env = env, .dt = dt, .enc = enc, .batch = batch, .seq = seq,
                    .d = d};
        err = env_zero(env, env->x, out_bytes);
        if (err == CL_SUCCESS)
            err = env_zero(env, env->y, out_bytes);
        if (err == CL_SUCCESS)
            err = op_prepare(&o, baselines);
        if (err == CL_SUCCESS)
            err = def->enqueue(&o, env->queue, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueReadBuffer(env->queue, dst, CL_TRUE, 0, out_bytes, out, 0, NULL,
                                      NULL);
        op_release(&o);
        for (size_t i = 0; err == CL_SUCCESS && i < batch * seq * d; i++) {
            if (!same_element(out + i * es, table + (i % (seq * d)) * es, es)) {
                size_t b = i / (seq * d), s = i / d % seq, c = i % d;
                snprintf(why, why_cap,
                         "%s %s is wrong at [%zu][%zu][%zu]: it must equal the table row on "
                         "zero inputs",
                         def->label, dt->name, b, s, c);
                rc = 1;
                break;
            }
        }
    }
    if (err == CL_SUCCESS)
        err = env_zero(env, env->x, out_bytes);
    if (err == CL_SUCCESS)
        err = env_zero(env, env->y, out_bytes);
    if (err == CL_SUCCESS)
        err = env_fill_data(env, env->emb, emb_bytes);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clpe-bench: checking the %s baselines: %d\n", dt->name, err);
        rc = -1;
    }
    free(out);
    free(table);
    return rc;
}

/* Uniform values in [-1, 1) of the dtype (f32 or f64) from a fixed LCG. */
static void random_fill(unsigned char *p, size_t n, size_t es, uint64_t *state)
{
    for (size_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        double v = (double)(*state >> 11) * 0x1p-52 - 1.0;
        if (es == 4) {
            float f = (float)v;
            memcpy(p + i * 4, &f, 4);
        } else {
            memcpy(p + i * 8, &v, 8);
        }
    }
}

int verify_rope_table(op_ctx *o, cl_program baselines, char *why, size_t why_cap)
{
    const bench_env *env = o->env;
    size_t es = o->dt->size, tokens = o->batch * o->seq;
    size_t q_bytes = tokens * o->heads * o->head_dim * es;
    size_t k_bytes = tokens * o->kv_heads * o->head_dim * es;
    unsigned char *in = malloc(q_bytes + k_bytes), *want = malloc(q_bytes + k_bytes),
                  *got = malloc(q_bytes + k_bytes);
    cl_int err = in && want && got ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    uint64_t state = 0x2545F4914F6CDD1Dull;
    if (err == CL_SUCCESS)
        random_fill(in, (q_bytes + k_bytes) / es, es, &state);
    /* The same inputs through clpe (want), then through the baseline (got). */
    for (int pass = 0; pass < 2 && err == CL_SUCCESS; pass++) {
        unsigned char *out = pass == 0 ? want : got;
        err = clEnqueueWriteBuffer(env->queue, env->x, CL_TRUE, 0, q_bytes, in, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(env->queue, env->y, CL_TRUE, 0, k_bytes, in + q_bytes, 0,
                                       NULL, NULL);
        if (err == CL_SUCCESS && pass == 0) {
            clpe_rope_tensor q = {.buffer = env->x, .heads = o->heads};
            clpe_rope_tensor k = {.buffer = env->y, .heads = o->kv_heads};
            err = clpe_enqueue_rope(o->rope, env->queue, o->batch, o->seq, &q, &k, NULL, 0, 0,
                                    NULL, NULL);
        } else if (err == CL_SUCCESS) {
            err = op_prepare(o, baselines);
            if (err == CL_SUCCESS)
                err = o->def->enqueue(o, env->queue, NULL);
            op_release(o);
        }
        if (err == CL_SUCCESS)
            err = clEnqueueReadBuffer(env->queue, env->x, CL_TRUE, 0, q_bytes, out, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueReadBuffer(env->queue, env->y, CL_TRUE, 0, k_bytes, out + q_bytes, 0,
                                      NULL, NULL);
    }
    int rc = 0;
    for (size_t i = 0; err == CL_SUCCESS && i < (q_bytes + k_bytes) / es; i++) {
        if (!same_element(got + i * es, want + i * es, es)) {
            int is_q = i * es < q_bytes;
            size_t e = is_q ? i : i - q_bytes / es, heads = is_q ? o->heads : o->kv_heads;
            size_t t = e / (heads * o->head_dim);
            snprintf(why, why_cap,
                     "rope-table %s is wrong at %s[%zu][%zu][%zu][%zu]: it must equal "
                     "clpe_enqueue_rope's result",
                     o->dt->name, is_q ? "q" : "k", t / o->seq, t % o->seq,
                     e / o->head_dim % heads, e % o->head_dim);
            rc = 1;
            break;
        }
    }
    if (err == CL_SUCCESS)
        err = env_zero(env, env->x, q_bytes);
    if (err == CL_SUCCESS)
        err = env_zero(env, env->y, k_bytes);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clpe-bench: checking rope-table %s: %d\n", o->dt->name, err);
        rc = -1;
    }
    free(got);
    free(want);
    free(in);
    return rc;
}
