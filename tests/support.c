/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support.c - shared test fixtures (see support.h).
 */
#include "support.h"

#include "common/dtype.h"
#include "common/random.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void test_cl_open(test_cl *t)
{
    memset(t, 0, sizeof *t);
    clpe_status st = clpe_select_device(NULL, &t->platform, &t->device);
    cr_assert_eq(st, CLPE_SUCCESS, "no OpenCL device: %s", clpe_status_string(st));
    cl_int err;
    t->context = clCreateContext(NULL, 1, &t->device, NULL, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS, "clCreateContext: %d", err);
    t->queue = clCreateCommandQueue(t->context, t->device, 0, &err);
    cr_assert_eq(err, CL_SUCCESS, "clCreateCommandQueue: %d", err);
}

void test_cl_close(test_cl *t)
{
    if (t->queue)
        clReleaseCommandQueue(t->queue);
    if (t->context)
        clReleaseContext(t->context);
    memset(t, 0, sizeof *t);
}

cl_mem test_buffer_poisoned(const test_cl *t, size_t bytes, unsigned char poison)
{
    unsigned char *host = malloc(bytes);
    cr_assert(host);
    memset(host, poison, bytes);
    cl_mem buf = test_buffer_from(t, host, bytes);
    free(host);
    return buf;
}

cl_mem test_buffer_from(const test_cl *t, const void *host, size_t bytes)
{
    cl_int err;
    cl_mem buf = clCreateBuffer(t->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                                (void *)host, &err);
    cr_assert_eq(err, CL_SUCCESS, "clCreateBuffer(%zu): %d", bytes, err);
    return buf;
}

void *test_buffer_read(const test_cl *t, cl_mem buf, size_t bytes)
{
    void *host = malloc(bytes ? bytes : 1);
    cr_assert(host);
    cl_int err = clEnqueueReadBuffer(t->queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    cr_assert_eq(err, CL_SUCCESS, "clEnqueueReadBuffer: %d", err);
    return host;
}

clpe_encoder *test_encoder(const test_cl *t, const clpe_config *cfg)
{
    static char log_text[16384];
    clpe_build_log log = {log_text, sizeof log_text, 0};
    clpe_status st;
    clpe_encoder *enc = clpe_encoder_create(t->context, t->device, cfg, &log, &st);
    cr_assert_not_null(enc, "clpe_encoder_create: %s\n%s", clpe_status_string(st), log_text);
    return enc;
}

clpe_encoder *test_encoder_like(const clpe_encoder *like, const clpe_config *cfg)
{
    clpe_status st;
    clpe_encoder *enc = clpe_encoder_create_like(like, cfg, &st);
    cr_assert_not_null(enc, "clpe_encoder_create_like: %s", clpe_status_string(st));
    return enc;
}

clpe_config test_config(uint32_t d, double base, clpe_freq freq, clpe_layout layout)
{
    clpe_config cfg = clpe_config_default(d);
    cfg.base = base;
    cfg.freq = freq;
    cfg.layout = layout;
    cfg.flags = 0;
    cfg.padding_position = 0;
    return cfg;
}

void test_event_finish(cl_event ev)
{
    cr_assert_not_null(ev, "no event returned");
    cl_int err = clWaitForEvents(1, &ev);
    cr_assert_eq(err, CL_SUCCESS, "clWaitForEvents: %d", err);
    cl_int exec = 1;
    err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, NULL);
    cr_assert_eq(err, CL_SUCCESS, "clGetEventInfo: %d", err);
    cr_assert_eq(exec, CL_COMPLETE, "event status %d, not CL_COMPLETE", exec);
    clReleaseEvent(ev);
}

uint64_t test_rand_u64(uint64_t *state) { return splitmix64(state); }

void test_fill_any_bits(void *data, size_t count, size_t elem_size, uint64_t *rng)
{
    unsigned char *x = data;
    size_t bytes = count * elem_size;
    for (size_t k = 0; k < bytes; k += 8) {
        uint64_t r = splitmix64(rng);
        memcpy(x + k, &r, bytes - k < 8 ? bytes - k : 8);
    }
    for (size_t e = 0; e < count; ++e)
        if (e % 61 == 7 || e % 61 == 19) {
            memset(x + e * elem_size, 0xFF, elem_size);
            if (e % 61 == 19)
                x[e * elem_size + elem_size - 1] = 0x7F; /* little-endian: the sign's byte */
        }
}

void test_expect_same_nan_any(const void *dev, const void *host, size_t count, clpe_dtype t,
                              const char *what)
{
    size_t es = dtype_size(t);
    const unsigned char *a = dev, *b = host;
    for (size_t k = 0; k < count; ++k) {
        const unsigned char *av = a + k * es, *bv = b + k * es;
        if (memcmp(av, bv, es) == 0)
            continue;
        double hv = dtype_to_double(bv, t), dv = dtype_to_double(av, t);
        if (isnan(hv) && isnan(dv))
            continue;
        cr_assert_fail("%s (dtype %d): device and host emulation differ first at element %zu "
                       "of %zu (%.9g, expected %.9g)",
                       what, (int)t, k, count, dv, hv);
    }
}
