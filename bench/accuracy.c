/* SPDX-License-Identifier: Apache-2.0 */
/*
 * accuracy.c - clpe-accuracy: how far the usual float32 formula and clpe
 * are from the exact encoding, position by position (the README's table).
 *
 *   clpe-accuracy [--d D] [--device SEL] [POSITION ...]
 *
 * For each position it computes one row of d values three ways and prints
 * the largest |error| against the MPFR reference (reference/reference.h)
 * of sin(p * w_i) and cos(p * w_i), w_i = 10000^(-2i/d):
 *   naive f32   what frameworks write: w = exp(2i * -(ln 10000 / d)) in
 *               float32, angle = (float)p * w, sinf/cosf of it;
 *   naive f64   the same in float64 (angle and sin/cos in double);
 *   clpe        clpe_enqueue_table on the device (float32 output).
 */
#include <clpe.h>

#include "reference/reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(FILE *to, int status)
{
    fprintf(to, "usage: clpe-accuracy [--d D] [--device SEL] [POSITION ...]\n");
    return status;
}

int main(int argc, char **argv)
{
    uint32_t d = 512;
    const char *selector = NULL;
    int64_t positions[64];
    size_t n = 0;
    for (int k = 1; k < argc; ++k) {
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            return usage(stdout, 0);
        } else if (strcmp(argv[k], "--d") == 0 && k + 1 < argc) {
            d = (uint32_t)strtoul(argv[++k], NULL, 10);
        } else if (strcmp(argv[k], "--device") == 0 && k + 1 < argc) {
            selector = argv[++k];
        } else if (argv[k][0] == '-' && !(argv[k][1] >= '0' && argv[k][1] <= '9')) {
            return usage(stderr, 2);
        } else if (n < 64) {
            char *end;
            positions[n++] = strtoll(argv[k], &end, 0);
            if (*end)
                return usage(stderr, 2);
        }
    }
    if (d < 2 || d % 2)
        return usage(stderr, 2);
    if (n == 0) {
        const int64_t defaults[] = {5, 65535, 1000000, (1 << 24) + 1, INT32_MAX};
        memcpy(positions, defaults, sizeof defaults);
        n = sizeof defaults / sizeof defaults[0];
    }

    cl_platform_id platform;
    cl_device_id device;
    clpe_status st = clpe_select_device(selector, &platform, &device);
    if (st != CLPE_SUCCESS) {
        fprintf(stderr, "clpe-accuracy: %s\n", clpe_status_string(st));
        return 1;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue queue = ctx ? clCreateCommandQueue(ctx, device, 0, &err) : NULL;
    clpe_config cfg = clpe_config_default(d);
    clpe_encoder *enc = queue ? clpe_encoder_create(ctx, device, &cfg, NULL, &st) : NULL;
    cl_mem buf = enc ? clCreateBuffer(ctx, CL_MEM_READ_WRITE, d * sizeof(float), NULL, &err) : NULL;
    if (!buf) {
        fprintf(stderr, "clpe-accuracy: OpenCL setup failed (%d, %s)\n", err,
                clpe_status_string(st));
        return 1;
    }
    char name[256] = "";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
    printf("d = %u, base 10000, max |error| over the row vs a %d-bit reference; clpe on %s\n\n",
           d, REF_PRECISION, name);
    printf("| position | naive float32 | naive float64 | clpe float32 |\n");
    printf("|---:|---:|---:|---:|\n");

    float *row = malloc(d * sizeof *row);
    if (!row) {
        fprintf(stderr, "clpe-accuracy: out of memory\n");
        return 1;
    }
    ref_encoding ref;
    ref_init(&ref, &cfg); /* the defaults: base 10000, paper frequencies */
    clpe_tensor out = {.buffer = buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    for (size_t k = 0; k < n; ++k) {
        int64_t p = positions[k];
        st = clpe_enqueue_table(enc, queue, p, 1, &out, 0, NULL, NULL);
        if (st == CLPE_SUCCESS)
            st = clEnqueueReadBuffer(queue, buf, CL_TRUE, 0, d * sizeof *row, row, 0, NULL, NULL);
        if (st != CLPE_SUCCESS) {
            fprintf(stderr, "clpe-accuracy: %s\n", clpe_status_string(st));
            return 1;
        }
        double e32 = 0, e64 = 0, ec = 0;
        float step = -(logf(10000.0f) / (float)d);
        for (uint32_t i = 0; i < d / 2; ++i) {
            float w = expf((float)(2 * i) * step);
            float angle = (float)p * w;
            double w64 = exp((double)(2 * i) * -(log(10000.0) / d));
            double angle64 = (double)p * w64;
            ref_set_pair(&ref, i);
            ref_at(&ref, p);
            for (int c = 0; c < 2; ++c) {
                double exact = c ? ref_cos(&ref) : ref_sin(&ref);
                double naive32 = c ? cosf(angle) : sinf(angle);
                double naive64 = c ? cos(angle64) : sin(angle64);
                e32 = fmax(e32, fabs(naive32 - exact));
                e64 = fmax(e64, fabs(naive64 - exact));
                ec = fmax(ec, fabs((double)row[2 * i + c] - exact));
            }
        }
        printf("| %lld | %.2g | %.2g | %.2g |\n", (long long)p, e32, e64, ec);
    }
    ref_clear(&ref);
    free(row);
    clReleaseMemObject(buf);
    clpe_encoder_release(enc);
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    mpfr_free_cache();
    return 0;
}
