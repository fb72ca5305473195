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
    cl_int err = table && out ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(env->queue, env->table, CL_TRUE, 0, seq_bytes, table, 0, NULL,
                                  NULL);
    for (size_t k = 0; k < BENCH_N_OPS && err == CL_SUCCESS && rc == 0; k++) {
        const op_def *def = &BENCH_OPS[k];
        if (def->role != OP_ROLE_BASELINE || !op_fits(def, d))
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
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clpe-bench: checking the %s baselines: %d\n", dt->name, err);
        rc = -1;
    }
    free(out);
    free(table);
    return rc;
}
