/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fastmath.c - clpe's results do not change under fast-math builds.
 *
 * The kernels use integer operations, correctly rounded conversions and fma
 * only, so -cl-fast-relaxed-math (which licenses reassociation, flushing
 * denormals and approximate builtins) must not change a single bit. PoCL
 * appends POCL_EXTRA_BUILD_FLAGS to every program build; each test here is
 * its own forked process and sets the variable before it touches OpenCL.
 * The kernel cache is switched off (POCL_KERNEL_CACHE=0) so no binary built
 * without the flag is reused.
 *
 * A probe kernel first shows that the flag really reaches the device
 * compiler: __FAST_RELAXED_MATH__ must be defined, and (reported, not
 * required) reassociation may turn (x + c) - c into x.
 */
#include "support.h"

#include "common/dtype.h"
#include "common/kernel_run.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAST_FLAGS "-cl-fast-relaxed-math"

static const char probe_source[] =
    "kernel void probe(global const float *x, float c, global float *out, global int *fast)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = (x[i] + c) - c;\n"
    "#ifdef __FAST_RELAXED_MATH__\n"
    "    fast[0] = 1;\n"
    "#else\n"
    "    fast[0] = 0;\n"
    "#endif\n"
    "}\n";

#define PROBE_N 4

static void use_fast_math(int on)
{
    if (on)
        setenv("POCL_EXTRA_BUILD_FLAGS", FAST_FLAGS, 1);
    else
        unsetenv("POCL_EXTRA_BUILD_FLAGS");
    setenv("POCL_KERNEL_CACHE", "0", 1);
}

/* Run the probe: *fast = __FAST_RELAXED_MATH__ seen; returns how many of
 * the (x + c) - c values came back as x (reassociated). */
static int run_probe(const test_cl *t, int *fast)
{
    cl_int err = CL_SUCCESS;
    const char *src = probe_source;
    cl_program prog = kernel_program_build(t->context, t->device, 1, &src, "", NULL, 0, &err);
    cr_assert_eq(err, CL_SUCCESS);
    float x[PROBE_N] = {1.25f, 3.0f, 0.1f, 7.5f};
    float c = 1e8f;
    cl_mem xb = test_buffer_from(t, x, sizeof x);
    cl_mem ob = test_buffer_poisoned(t, sizeof x, 0);
    cl_mem fb = test_buffer_poisoned(t, sizeof(int), 0x7f);
    const kernel_arg args[] = {KERNEL_ARG(xb), KERNEL_ARG(c), KERNEL_ARG(ob), KERNEL_ARG(fb)};
    const size_t global = PROBE_N;
    cr_assert_eq(kernel_run(t->queue, prog, "probe", 1, &global, 4, args), CL_SUCCESS);
    float *out = test_buffer_read(t, ob, sizeof x);
    int *f = test_buffer_read(t, fb, sizeof(int));
    *fast = *f;
    int reassociated = 0;
    for (int i = 0; i < PROBE_N; ++i) {
        volatile float strict = x[i] + c; /* rounded to float, as IEEE says */
        float want = strict - c;
        if (out[i] == x[i] && want != x[i])
            ++reassociated;
    }
    free(out);
    free(f);
    clReleaseMemObject(xb);
    clReleaseMemObject(ob);
    clReleaseMemObject(fb);
    clReleaseProgram(prog);
    return reassociated;
}

Test(fastmath, probe_without_flag)
{
    use_fast_math(0);
    test_cl t;
    test_cl_open(&t);
    int fast = -1;
    int reassociated = run_probe(&t, &fast);
    cr_assert_eq(fast, 0, "__FAST_RELAXED_MATH__ defined without the flag");
    cr_assert_eq(reassociated, 0, "strict build reassociated (x + c) - c");
    test_cl_close(&t);
}

Test(fastmath, probe_flag_reaches_compiler)
{
    use_fast_math(1);
    test_cl t;
    test_cl_open(&t);
    if (!test_platform_is(t.platform, "Portable Computing Language")) {
        test_cl_close(&t);
        cr_skip_test("POCL_EXTRA_BUILD_FLAGS is PoCL's; this device is not PoCL");
    }
    int fast = -1;
    int reassociated = run_probe(&t, &fast);
    cr_assert_eq(fast, 1, "PoCL ignored POCL_EXTRA_BUILD_FLAGS=" FAST_FLAGS);
    printf("fastmath: PoCL honours POCL_EXTRA_BUILD_FLAGS (__FAST_RELAXED_MATH__ defined); "
           "(x + c) - c reassociated in %d of %d probes\n",
           reassociated, PROBE_N);
    test_cl_close(&t);
}

/* Table and fused add, every dtype the library and device offer, both
 * layouts and conventions, positions from 0 to the int64 edges. */
Test(fastmath, results_bit_identical_under_fast_math, .timeout = 600)
{
    use_fast_math(1);
    test_cl t;
    test_cl_open(&t);
    static const int64_t starts[] = {0, -40, 65535, INT64_C(1) << 32, INT64_MAX - 63,
                                     INT64_MIN};
    const size_t n = 64;
    int tested = 0;
    for (int dt = CLPE_DTYPE_F32; dt <= CLPE_DTYPE_F64; ++dt) {
        for (int variant = 0; variant < 4; ++variant) {
            clpe_config cfg = clpe_config_default(variant & 1 ? 130 : 64);
            cfg.dtype = (clpe_dtype)dt;
            cfg.layout = variant & 1 ? CLPE_LAYOUT_SPLIT : CLPE_LAYOUT_INTERLEAVED;
            cfg.freq = variant & 2 ? CLPE_FREQ_TENSOR2TENSOR : CLPE_FREQ_PAPER;
            cfg.scale = variant & 2 ? 22.627416997969522 : 1.0;
            if (clpe_config_check(&cfg) != CLPE_SUCCESS ||
                !clpe_device_supports_dtype(t.device, cfg.dtype))
                continue;
            clpe_status st;
            clpe_encoder *enc = clpe_encoder_create(t.context, t.device, &cfg, NULL, &st);
            cr_assert_not_null(enc, "dtype %d: %s", dt, clpe_status_string(st));
            size_t es = dtype_size(cfg.dtype), bytes = n * cfg.d * es;
            unsigned char *want = malloc(bytes);
            cr_assert(want);
            for (size_t s = 0; s < sizeof starts / sizeof starts[0]; ++s) {
                /* table */
                cl_mem out = test_buffer_poisoned(&t, bytes, 0xA5);
                clpe_tensor ot = {.buffer = out, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
                cr_assert_eq(clpe_enqueue_table(enc, t.queue, starts[s], n, &ot, 0, NULL, NULL),
                             CLPE_SUCCESS);
                cr_assert_eq(clpe_host_table(enc, starts[s], n, want, 0), CLPE_SUCCESS);
                unsigned char *got = test_buffer_read(&t, out, bytes);
                cr_assert(memcmp(got, want, bytes) == 0,
                          "fast-math table differs: dtype %d variant %d start %lld", dt,
                          variant, (long long)starts[s]);
                free(got);
                /* fused add on top of the table just written: x = PE */
                clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = starts[s] / 2, .buffer = NULL, .offset = 0};
                cr_assert_eq(clpe_enqueue_add(enc, t.queue, 2, n / 2, &ot, &pos, 0, NULL, NULL),
                             CLPE_SUCCESS);
                cr_assert_eq(clpe_host_add(enc, 2, n / 2, want, 0, 0, CLPE_POSITIONS_START,
                                           starts[s] / 2, NULL),
                             CLPE_SUCCESS);
                got = test_buffer_read(&t, out, bytes);
                cr_assert(memcmp(got, want, bytes) == 0,
                          "fast-math add differs: dtype %d variant %d start %lld", dt, variant,
                          (long long)starts[s]);
                free(got);
                clReleaseMemObject(out);
                ++tested;
            }
            free(want);
            clpe_encoder_release(enc);
        }
    }
    cr_assert_gt(tested, 0);
    printf("fastmath: %d table+add cases bit-identical under " FAST_FLAGS "\n", tested);
    test_cl_close(&t);
}
