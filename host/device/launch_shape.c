/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch_shape.c - how launches are shaped on one device: the defaults of
 * its row in the device tuning table, then the tuning knobs of the
 * environment, each parsed once here and range-checked.
 *
 * The table and the shapes it chooses between: device_tuning.c.
 */
#include "device/device.h"

/* Range of the test knobs; out of range or malformed values are ignored. */
#define LAUNCH_ROWS_MAX (1ul << 31)
#define LAUNCH_BATCH_MAX 65535u
/* Grid dimensions 1 and 2 are capped at 65535 on some GPUs. */
#define GRID_DIM_MAX 65535u

clpe_status clpe__choose_shape(cl_device_id device, const clpe_device_tuning *tuning,
                               cl_kernel sample, clpe_launch_shape *shape)
{
    size_t kernel_wg = 0;
    cl_uint units = 1;
    cl_int err = clGetKernelWorkGroupInfo(sample, device, CL_KERNEL_WORK_GROUP_SIZE,
                                          sizeof kernel_wg, &kernel_wg, NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    if (err != CL_SUCCESS)
        return err;
    shape->compute_units = units ? units : 1;
    shape->pairs_per_item = tuning->pairs_per_item;
    shape->pairs_per_item_rows16 = tuning->pairs_per_item_rows16;
    shape->pairs_per_item_rope16 = tuning->pairs_per_item_rope16;
    size_t local = 1;
    while (local * 2 <= tuning->work_group_size && local * 2 <= kernel_wg)
        local *= 2;
    shape->local_x = local;
    shape->rows_per_item = tuning->rows_per_item;
    shape->max_rows = (size_t)GRID_DIM_MAX * shape->rows_per_item;
    shape->max_batch = GRID_DIM_MAX;
    shape->tile_walk = tuning->tile_walk == 1;
    shape->tile_pairs = tuning->tile_pairs;

    /* Test knobs: force small launches so splitting is exercised. */
    size_t rows = clpe__knob("CLPE_MAX_LAUNCH_ROWS", 1, LAUNCH_ROWS_MAX, 0);
    if (rows) {
        if (rows < shape->rows_per_item)
            shape->rows_per_item = (cl_uint)rows;
        size_t items = rows / shape->rows_per_item;
        shape->max_rows = (items ? items : 1) * shape->rows_per_item;
    }
    shape->max_batch = clpe__knob("CLPE_MAX_LAUNCH_BATCH", 1, LAUNCH_BATCH_MAX, shape->max_batch);
    return CLPE_SUCCESS;
}
