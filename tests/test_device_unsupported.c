/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_device_unsupported.c - a device clpe cannot run exactly is refused
 * cleanly.
 *
 * The fault shim (tests/fault/) makes clGetDeviceInfo describe the PoCL
 * device as an embedded-profile device without cles_khr_int64: the kernels
 * need 64-bit integers, so clpe_encoder_create must return
 * CLPE_ERROR_DEVICE_UNSUPPORTED before it builds anything, and hold no
 * OpenCL reference afterwards.
 */
#include "fault/fault_shim.h"
#include "support.h"

#include <criterion/criterion.h>
#include <string.h>

static void assert_live(const long before[FAULT_OBJ_COUNT])
{
    for (int k = 0; k < FAULT_OBJ_COUNT; ++k)
        cr_assert_eq(fault_live((fault_obj)k), before[k], "%s references leaked",
                     fault_obj_name((fault_obj)k));
}

Test(device_unsupported, embedded_profile_without_int64)
{
    test_cl t;
    test_cl_open(&t);
    long before[FAULT_OBJ_COUNT];
    for (int k = 0; k < FAULT_OBJ_COUNT; ++k)
        before[k] = fault_live((fault_obj)k);

    fault_set_embedded(1);
    char profile[64] = {0};
    cr_assert_eq(clGetDeviceInfo(t.device, CL_DEVICE_PROFILE, sizeof profile, profile, NULL),
                 CL_SUCCESS);
    cr_assert_str_eq(profile, "EMBEDDED_PROFILE", "the shim's embedded mode is not active");

    long builds = fault_calls(FAULT_clBuildProgram);
    char log_text[256];
    clpe_build_log log = {log_text, sizeof log_text, 99};
    clpe_status st = 0;
    clpe_config cfg = clpe_config_default(64);
    clpe_encoder *enc = clpe_encoder_create(t.context, t.device, &cfg, &log, &st);
    cr_assert_null(enc);
    cr_assert_eq(st, CLPE_ERROR_DEVICE_UNSUPPORTED, "status %d (%s)", st, clpe_status_string(st));
    cr_assert_eq(fault_calls(FAULT_clBuildProgram), builds, "built for an unsupported device");
    cr_assert_eq(log.length, 0, "no build ran, so the log length must be 0");
    cr_assert_str_eq(log_text, "");
    cr_assert_str_neq(clpe_status_string(st), "unknown status");
    assert_live(before);

    /* The same device, honestly described, works. */
    fault_set_embedded(0);
    enc = test_encoder(&t, &cfg);
    clpe_encoder_release(enc);
    assert_live(before);
    test_cl_close(&t);
}

/* clpe_encoder_create with a NULL status pointer is fine on this path too. */
Test(device_unsupported, null_status_pointer)
{
    test_cl t;
    test_cl_open(&t);
    fault_set_embedded(1);
    clpe_config cfg = clpe_config_default(8);
    cr_assert_null(clpe_encoder_create(t.context, t.device, &cfg, NULL, NULL));
    fault_set_embedded(0);
    test_cl_close(&t);
}

/* A device without double precision: f64 encoders are refused with
 * CLPE_ERROR_UNSUPPORTED_DTYPE, nothing built or held; the other dtypes
 * still work on it. */
Test(device_unsupported, f64_without_double_precision)
{
    test_cl t;
    test_cl_open(&t);
    long before[FAULT_OBJ_COUNT];
    for (int k = 0; k < FAULT_OBJ_COUNT; ++k)
        before[k] = fault_live((fault_obj)k);
    fault_set_no_fp64(1);
    cr_expect_eq(clpe_device_supports_dtype(t.device, CLPE_DTYPE_F64), 0);
    cr_expect_eq(clpe_device_supports_dtype(t.device, CLPE_DTYPE_F16), 1);

    long builds = fault_calls(FAULT_clBuildProgram);
    clpe_config cfg = clpe_config_default(8);
    cfg.dtype = CLPE_DTYPE_F64;
    clpe_status st = CLPE_SUCCESS;
    cr_expect_null(clpe_encoder_create(t.context, t.device, &cfg, NULL, &st));
    cr_expect_eq(st, CLPE_ERROR_UNSUPPORTED_DTYPE, "status %d (%s)", st, clpe_status_string(st));
    cr_expect_eq(fault_calls(FAULT_clBuildProgram), builds, "built a program for nothing");
    assert_live(before);

    clpe_config f32 = clpe_config_default(8);
    clpe_encoder *enc = clpe_encoder_create(t.context, t.device, &f32, NULL, &st);
    cr_assert_not_null(enc, "f32 on the same device: %s", clpe_status_string(st));
    st = CLPE_SUCCESS;
    cr_expect_null(clpe_encoder_create_like(enc, &cfg, &st));
    cr_expect_eq(st, CLPE_ERROR_UNSUPPORTED_DTYPE);
    clpe_encoder_release(enc);
    fault_set_no_fp64(0);
    assert_live(before);
    test_cl_close(&t);
}
