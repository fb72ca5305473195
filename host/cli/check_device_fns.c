/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_device_fns.c - the device functions in `clpe check`: the OpenCL C
 * functions of clpe_device.h (clpe_device_source(), the text an engine
 * puts before its own kernels) compiled by the device into kernels of the
 * check's own, a table row writer (clpe_sincos) and an in-place rotation
 * (clpe_rope_cos_sin, clpe_rotate), each stored in every dtype the way
 * clpe stores it. Their output is compared bit for bit with the host
 * emulation of the library's table and rotation, which the library's own
 * kernels match on the table and rope paths: so the header, compiled
 * inside someone else's program, gives the library's bits. Float32
 * rotations are sampled against the exact rotation too.
 */
#include "check.h"
#include "common/header_kernels.h"
#include "common/kernel_run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct fns_run {
    check_checker *ck;
    check_tally *t;
    int dtype;
    cl_program program;
} fns_run;

static void fns_fail(fns_run *f, const char *what, cl_int err)
{
    if (!f->t->error[0])
        snprintf(f->t->error, sizeof f->t->error, "%s device_functions %s: %s (%d)",
                 cli_dtype_name(f->dtype), what, clpe_status_string(err), (int)err);
}

/* The check's program: clpe_device_source() and HEADER_KERNELS, with the options
 * the words ask for. */
static cl_program fns_build(fns_run *f, const char *options)
{
    const char *sources[2] = {clpe_device_source(), HEADER_KERNELS};
    char opts[512], log[160];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 %s", options ? options : "");
    cl_int err = CL_SUCCESS;
    cl_program p = kernel_program_build(f->ck->dev->context, f->ck->dev->device, 2, sources, opts,
                                        log, sizeof log, &err);
    if (!p) {
        log[strcspn(log, "\n")] = '\0';
        snprintf(f->t->error, sizeof f->t->error,
                 "%s device_functions: building clpe_device.h: %s (%d)%s%s",
                 cli_dtype_name(f->dtype), clpe_status_string(err), (int)err, log[0] ? ": " : "",
                 log);
    }
    return p;
}

/* Run kernel name over global work-items with the arguments given. */
static cl_int fns_launch(fns_run *f, const char *name, size_t global, size_t nargs,
                         const kernel_arg *args)
{
    return kernel_run(f->ck->dev->queue, f->program, name, 1, &global, nargs, args);
}

static void fns_compare(fns_run *f, const char *what, const unsigned char *dev,
                        const unsigned char *ref, size_t count, uint64_t data_elements)
{
    const size_t esize = dtype_size(f->dtype);
    f->t->elements += data_elements;
    for (size_t k = 0; k < count; ++k) {
        if (memcmp(dev + k * esize, ref + k * esize, esize) == 0)
            continue;
        if (f->t->mismatches++ == 0) {
            uint64_t got = 0, want = 0;
            memcpy(&got, dev + k * esize, esize);
            memcpy(&want, ref + k * esize, esize);
            snprintf(f->t->first_mismatch, sizeof f->t->first_mismatch,
                     "%s device_functions %s: element %zu: device 0x%0*llx, host emulation "
                     "0x%0*llx",
                     cli_dtype_name(f->dtype), what, k, (int)(2 * esize),
                     (unsigned long long)got, (int)(2 * esize), (unsigned long long)want);
        }
    }
}

/* clpe_sincos rows against clpe_host_table of an interleaved encoder. */
static void fns_table(fns_run *f, clpe_encoder *enc, const clpe_config *cfg, cl_mem words)
{
    const size_t n = f->ck->quick ? 9 : 37, count = n * cfg->d;
    const size_t bytes = count * dtype_size(f->dtype);
    unsigned char *dev = malloc(bytes), *ref = malloc(bytes);
    cl_mem out = NULL;
    cl_int err = CL_SUCCESS;
    if (!dev || !ref) {
        snprintf(f->t->error, sizeof f->t->error, "out of host memory");
        goto done;
    }
    int64_t start = check_rand_position(&f->ck->rng);
    if (start > INT64_MAX - (int64_t)n)
        start = INT64_MAX - (int64_t)n + 1;
    clpe_status st = clpe_host_table(enc, start, n, ref, cfg->d);
    if (st != CLPE_SUCCESS) {
        fns_fail(f, "clpe_host_table", st);
        goto done;
    }
    memset(dev, CHECK_POISON, bytes);
    out = clCreateBuffer(f->ck->dev->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                         dev, &err);
    if (!out) {
        fns_fail(f, "clCreateBuffer", err);
        goto done;
    }
    char name[32];
    snprintf(name, sizeof name, "table_%s", header_kernel_type(f->dtype));
    cl_long first = start;
    const kernel_arg args[] = {KERNEL_ARG(out), KERNEL_ARG(words), KERNEL_ARG(first)};
    err = fns_launch(f, name, n, 3, args);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(f->ck->dev->queue, out, CL_TRUE, 0, bytes, dev, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        fns_fail(f, name, err);
        goto done;
    }
    char what[80];
    snprintf(what, sizeof what, "clpe_sincos table d=%u start=%lld", (unsigned)cfg->d,
             (long long)start);
    fns_compare(f, what, dev, ref, count, count);
done:
    if (out) clReleaseMemObject(out);
    free(dev);
    free(ref);
}

/* clpe_rope_cos_sin + clpe_rotate against clpe_host_rope, forward and
 * inverse; float32 rotations sampled against the exact one. */
static void fns_rotate(fns_run *f, const clpe_rope *rope, const clpe_rope_config *cfg,
                       cl_mem words)
{
    const size_t n = f->ck->quick ? 16 : 48, count = n * cfg->head_dim;
    const size_t bytes = count * dtype_size(f->dtype);
    unsigned char *in = malloc(bytes), *dev = malloc(bytes), *ref = malloc(bytes);
    int64_t *pos = malloc(n * sizeof *pos);
    cl_mem x = NULL, pbuf = NULL;
    cl_int err = CL_SUCCESS;
    if (!in || !dev || !ref || !pos) {
        snprintf(f->t->error, sizeof f->t->error, "out of host memory");
        goto done;
    }
    int64_t unused;
    check_make_positions(&f->ck->rng, CLPE_POSITIONS_IDS, 1, n, pos, &unused);
    pbuf = clCreateBuffer(f->ck->dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                          n * sizeof *pos, pos, &err);
    if (!pbuf) {
        fns_fail(f, "clCreateBuffer", err);
        goto done;
    }
    for (cl_uint inverse = 0; inverse < 2 && !f->t->error[0]; ++inverse) {
        check_fill_random(f->dtype, in, count, &f->ck->rng);
        memcpy(ref, in, bytes);
        clpe_host_rope_tensor hq = {.data = ref, .heads = 1};
        clpe_status st = clpe_host_rope(rope, 1, n, &hq, NULL, CLPE_POSITIONS_IDS, 0, pos,
                                        inverse ? CLPE_ROPE_INVERSE : 0);
        if (st != CLPE_SUCCESS) {
            fns_fail(f, "clpe_host_rope", st);
            break;
        }
        x = clCreateBuffer(f->ck->dev->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                           in, &err);
        if (!x) {
            fns_fail(f, "clCreateBuffer", err);
            break;
        }
        char name[32];
        snprintf(name, sizeof name, "rotate_%s", header_kernel_type(f->dtype));
        cl_uint head_dim = cfg->head_dim;
        const kernel_arg args[] = {KERNEL_ARG(x), KERNEL_ARG(pbuf), KERNEL_ARG(words),
                                   KERNEL_ARG(head_dim), KERNEL_ARG(inverse)};
        err = fns_launch(f, name, n, 5, args);
        if (err == CL_SUCCESS)
            err = clEnqueueReadBuffer(f->ck->dev->queue, x, CL_TRUE, 0, bytes, dev, 0, NULL,
                                      NULL);
        clReleaseMemObject(x);
        x = NULL;
        if (err != CL_SUCCESS) {
            fns_fail(f, name, err);
            break;
        }
        char lab[96], what[160];
        check_rope_label(cfg, lab, sizeof lab);
        snprintf(what, sizeof what, "clpe_rotate %s%s", lab + strcspn(lab, " ") + 1,
                 inverse ? " inverse" : "");
        fns_compare(f, what, dev, ref, count, count);
        if (f->dtype != CLPE_DTYPE_F32 || cfg->scaling != CLPE_ROPE_DEFAULT)
            continue;
        clpe_config enc_cfg = clpe_config_default(cfg->rotary_dim);
        enc_cfg.base = cfg->base;
        ref_encoding exact;
        ref_init(&exact, &enc_cfg);
        const uint32_t half = cfg->rotary_dim / 2;
        const float *a = (const float *)in, *b = (const float *)dev;
        for (int s = 0; s < (f->ck->quick ? 8 : 32); ++s) {
            uint64_t u = splitmix64(&f->ck->rng);
            size_t tok = u % n;
            uint32_t i = (uint32_t)((u >> 32) % half);
            size_t ia = cfg->pairing == CLPE_ROPE_INTERLEAVED ? 2 * i : i;
            size_t ib = cfg->pairing == CLPE_ROPE_INTERLEAVED ? 2 * i + 1 : i + half;
            size_t row = tok * cfg->head_dim;
            ref_set_pair(&exact, i);
            ref_at(&exact, pos[tok]);
            double ratio = check_rope_error_ratio(&exact, (int)inverse, a[row + ia],
                                                  a[row + ib], b[row + ia], b[row + ib]);
            ++f->t->samples;
            ++f->t->rope_samples;
            if (!(ratio <= 1.0) && f->t->over_bound++ == 0)
                snprintf(f->t->first_over, sizeof f->t->first_over,
                         "%.120s: position %lld pair %u: |error| %.3f x 2^-22 hypot(a, b)", what,
                         (long long)pos[tok], (unsigned)i, ratio);
            if (!(ratio <= f->t->rope_max_ratio))
                f->t->rope_max_ratio = isnan(ratio) ? INFINITY : ratio;
        }
        ref_clear(&exact);
    }
done:
    if (x) clReleaseMemObject(x);
    if (pbuf) clReleaseMemObject(pbuf);
    free(in);
    free(dev);
    free(ref);
    free(pos);
}

void check_device_functions(check_checker *ck, check_tally *t, clpe_encoder *like, int dtype)
{
    const check_mark mark = check_mark_now(t);
    fns_run f = {.ck = ck, .t = t, .dtype = dtype};
    clpe_encoder *enc = NULL;
    clpe_rope *ropes[2] = {NULL, NULL};
    cl_mem words[3] = {NULL, NULL, NULL};
    const char *options = NULL;
    clpe_status st = CLPE_SUCCESS;

    /* an interleaved encoder (the kernel writes sin, cos pairs) */
    clpe_config cfg = clpe_config_default(96);
    cfg.layout = CLPE_LAYOUT_INTERLEAVED;
    cfg.dtype = (clpe_dtype)dtype;
    if (like) {
        enc = clpe_encoder_create_like(like, &cfg, &st);
    } else {
        enc = clpe_encoder_create(ck->dev->context, ck->dev->device, &cfg, NULL, &st);
    }
    if (!enc) {
        fns_fail(&f, "encoder", st);
        return;
    }
    /* a half-split partial rotary with an amplitude (YaRN), and an
     * interleaved one with plain frequencies (sampled against MPFR) */
    clpe_rope_config rcfg[2] = {clpe_rope_config_default(80), clpe_rope_config_default(64)};
    rcfg[0].rotary_dim = 48;
    rcfg[0].scaling = CLPE_ROPE_YARN;
    rcfg[0].factor = 8.0;
    rcfg[0].original_max_position = 4096.0;
    rcfg[1].rotary_dim = 64;
    rcfg[1].pairing = CLPE_ROPE_INTERLEAVED;
    rcfg[1].base = 500000.0;
    for (int k = 0; k < 2; ++k) {
        rcfg[k].dtype = (clpe_dtype)dtype;
        ropes[k] = clpe_rope_create_like(enc, &rcfg[k], &st);
        if (!ropes[k]) {
            fns_fail(&f, "rope", st);
            goto done;
        }
    }
    st = clpe_encoder_device_words(enc, &words[0], &options);
    for (int k = 0; k < 2 && st == CLPE_SUCCESS; ++k)
        st = clpe_rope_device_words(ropes[k], &words[1 + k], &options);
    if (st != CLPE_SUCCESS) {
        fns_fail(&f, "device words", st);
        goto done;
    }
    f.program = fns_build(&f, options);
    if (!f.program)
        goto done;
    fns_table(&f, enc, &cfg, words[0]);
    for (int k = 0; k < 2 && !t->error[0]; ++k)
        fns_rotate(&f, ropes[k], &rcfg[k], words[1 + k]);
    ++t->configurations;
done:
    if (f.program)
        clReleaseProgram(f.program);
    for (int k = 0; k < 3; ++k)
        if (words[k])
            clReleaseMemObject(words[k]);
    clpe_rope_release(ropes[0]);
    clpe_rope_release(ropes[1]);
    clpe_encoder_release(enc);
    check_credit(t, CHECK_PATH_DEVICE_FUNCTIONS, mark);
}
