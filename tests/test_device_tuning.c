/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_device_tuning.c - the device tuning table (host/device/device_tuning.c)
 * through clpe_get_device_tuning: bad arguments, the row the test device
 * gets, the environment's knobs overriding it, the launch info of an
 * encoder agreeing with it, and each object building only its own dtype's
 * kernels while *_create_like still serves every dtype and rotary.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static test_cl cl;
static void setup(void) { test_cl_open(&cl); }
static void teardown(void) { test_cl_close(&cl); }
TestSuite(device_tuning, .init = setup, .fini = teardown);

static const char *const knobs[] = {"CLPE_PAIRS_PER_ITEM", "CLPE_ROWS_PER_ITEM",
                                    "CLPE_WORK_GROUP_SIZE", "CLPE_TILE_WALK"};

/* The tuning with none of the knobs set (restored after). */
static clpe_device_tuning tuning_without_knobs(void)
{
    char *saved[4];
    for (int k = 0; k < 4; ++k) {
        const char *v = getenv(knobs[k]);
        saved[k] = v ? strdup(v) : NULL;
        unsetenv(knobs[k]);
    }
    clpe_device_tuning t;
    memset(&t, 0xA5, sizeof t);
    cr_assert_eq(clpe_get_device_tuning(cl.device, &t), CLPE_SUCCESS);
    for (int k = 0; k < 4; ++k) {
        if (saved[k])
            setenv(knobs[k], saved[k], 1);
        free(saved[k]);
    }
    return t;
}

Test(device_tuning, null_arguments_are_refused_and_nothing_is_written)
{
    clpe_device_tuning t;
    memset(&t, 0x5A, sizeof t);
    clpe_device_tuning before = t;
    cr_assert_eq(clpe_get_device_tuning(NULL, &t), CLPE_ERROR_NULL_POINTER);
    cr_assert_eq(memcmp(&t, &before, sizeof t), 0);
    cr_assert_eq(clpe_get_device_tuning(cl.device, NULL), CLPE_ERROR_NULL_POINTER);
}

Test(device_tuning, the_device_gets_the_row_of_its_kind)
{
    clpe_device_tuning t = tuning_without_knobs();
    cr_assert(t.row[0] != '\0' && memchr(t.row, '\0', sizeof t.row), "row name unterminated");
    cr_assert_eq(t.reserved32, 0);
    for (size_t k = 0; k < sizeof t.reserved / sizeof t.reserved[0]; ++k)
        cr_assert_eq(t.reserved[k], 0);
    cl_device_type type = 0;
    cl_uint preferred = 1;
    clGetDeviceInfo(cl.device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(cl.device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof preferred,
                    &preferred, NULL);
    if ((type & CL_DEVICE_TYPE_CPU) && preferred > 1) {
        /* PoCL: the vector shape */
        cr_assert_eq(strncmp(t.row, "cpu", 3), 0, "row %s", t.row);
        cr_assert_eq(t.pairs_per_item, 64);
        cr_assert_eq(t.pairs_per_item_rows16, 512);
        cr_assert_eq(t.pairs_per_item_rope16, 128);
        /* bfloat16 on 16-bit halves: Intel's cores only */
        cr_assert_eq(t.bf16_halves, strcmp(t.row, "cpu-intel") == 0 ? 1u : 0u, "row %s", t.row);
    } else {
        /* GPUs and CPUs running work-items in lanes: one pair each, two
         * adjacent ones for 16-bit rotary */
        cr_assert_eq(t.pairs_per_item, 1, "row %s", t.row);
        cr_assert_eq(t.pairs_per_item_rows16, 1);
        cr_assert_eq(t.pairs_per_item_rope16, 2);
        if (type & CL_DEVICE_TYPE_GPU)
            cr_assert_str_eq(t.row, "gpu");
        cr_assert_eq(t.bf16_halves, 0);
    }
    cr_assert(t.rows_per_item >= 1 && t.work_group_size >= 1 && t.tile_pairs >= 16);
    cr_assert(t.ahead_steps >= 1 && t.ahead_steps16 >= 1);
    cr_assert(t.tile_walk <= 1 && t.prefetch_for_write <= 1 && t.bf16_halves <= 1);
}

Test(device_tuning, the_knobs_override_the_row)
{
    clpe_device_tuning row = tuning_without_knobs();
    setenv("CLPE_PAIRS_PER_ITEM", "1", 1);
    setenv("CLPE_ROWS_PER_ITEM", "4", 1);
    setenv("CLPE_WORK_GROUP_SIZE", "8", 1);
    setenv("CLPE_TILE_WALK", "0", 1);
    clpe_device_tuning t;
    cr_assert_eq(clpe_get_device_tuning(cl.device, &t), CLPE_SUCCESS);
    cr_assert_str_eq(t.row, row.row);
    cr_assert_eq(t.pairs_per_item, 1);
    cr_assert_eq(t.pairs_per_item_rows16, 1);
    cr_assert_eq(t.pairs_per_item_rope16, 2);
    cr_assert_eq(t.rows_per_item, 4);
    cr_assert_eq(t.work_group_size, 8);
    cr_assert_eq(t.tile_walk, 0);

    /* the vector shape asked for; malformed and out-of-range values ignored */
    setenv("CLPE_PAIRS_PER_ITEM", "64", 1);
    setenv("CLPE_ROWS_PER_ITEM", "4x", 1);
    setenv("CLPE_WORK_GROUP_SIZE", "999999", 1);
    setenv("CLPE_TILE_WALK", "2", 1);
    cr_assert_eq(clpe_get_device_tuning(cl.device, &t), CLPE_SUCCESS);
    cr_assert_eq(t.pairs_per_item, 64);
    cr_assert_eq(t.pairs_per_item_rows16, 512);
    cr_assert_eq(t.pairs_per_item_rope16, 128);
    cr_assert_eq(t.rows_per_item, row.rows_per_item);
    cr_assert_eq(t.work_group_size, row.work_group_size);
    cr_assert_eq(t.tile_walk, row.tile_walk);
    for (int k = 0; k < 4; ++k)
        unsetenv(knobs[k]);
}

Test(device_tuning, an_encoder_launches_as_its_device_tuning_says)
{
    clpe_device_tuning t = tuning_without_knobs();
    for (int k = 0; k < 4; ++k)
        unsetenv(knobs[k]);
    clpe_config cfg = clpe_config_default(64);
    clpe_encoder *enc = test_encoder(&cl, &cfg);
    clpe_launch_info info;
    cr_assert_eq(clpe_encoder_get_launch_info(enc, &info), CLPE_SUCCESS);
    cr_assert_eq(info.pairs_per_item, t.pairs_per_item);
    cr_assert_eq(info.rows_per_item, t.rows_per_item);
    cr_assert(info.work_group_size >= 1 && info.work_group_size <= t.work_group_size);
    cr_assert_eq(info.tile_walk, t.tile_walk && t.pairs_per_item > 1);
    clpe_encoder_release(enc);
}

/* Each object builds its own dtype's program; objects made like it build
 * theirs on first use and give the same bits as objects of their own. */
Test(device_tuning, objects_made_like_another_build_their_own_dtype, .timeout = 600)
{
    clpe_config cfg = clpe_config_default(16);
    clpe_encoder *first = test_encoder(&cl, &cfg);
    const clpe_dtype dtypes[] = {CLPE_DTYPE_F16, CLPE_DTYPE_BF16, CLPE_DTYPE_F32};
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; ++k) {
        clpe_config c = cfg;
        c.dtype = dtypes[k];
        clpe_status st = CLPE_ERROR_NULL_ENCODER;
        clpe_encoder *like = clpe_encoder_create_like(first, &c, &st);
        cr_assert_eq(st, CLPE_SUCCESS, "dtype %d: status %d", (int)c.dtype, st);
        size_t bytes = 16 * 8 * (c.dtype == CLPE_DTYPE_F32 ? 4 : 2);
        cl_mem buf = test_buffer_poisoned(&cl, bytes, 0xCD);
        clpe_tensor out = {.buffer = buf};
        cr_assert_eq(clpe_enqueue_table(like, cl.queue, 0, 8, &out, 0, NULL, NULL),
                     CLPE_SUCCESS);
        void *got = test_buffer_read(&cl, buf, bytes);
        void *want = malloc(bytes);
        cr_assert_eq(clpe_host_table(like, 0, 8, want, 0), CLPE_SUCCESS);
        cr_assert_eq(memcmp(got, want, bytes), 0, "dtype %d differs from the host", (int)c.dtype);
        free(got);
        free(want);
        clReleaseMemObject(buf);
        clpe_encoder_release(like);
    }
    clpe_rope_config rc = clpe_rope_config_default(64);
    clpe_status st = CLPE_ERROR_NULL_ENCODER;
    clpe_rope *rope = clpe_rope_create_like(first, &rc, &st);
    cr_assert_eq(st, CLPE_SUCCESS, "rotary made like an encoder: status %d", st);
    clpe_rope_release(rope);
    clpe_encoder_release(first);
}
