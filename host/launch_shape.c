/*
 * launch_shape.c - how launches are shaped on one device: measured defaults
 * per device type (bench/RESULTS.md), then the tuning knobs of the
 * environment, each parsed once here and range-checked.
 *
 * PoCL runs a work-group as one loop, and its work-item-loop vectoriser
 * gives up on this code, so where a device asks for vectors each work-item
 * computes 64 pairs as explicit float16 vectors (128 for 16-bit storage).
 * GPUs and llvmpipe run work-items in lanes already: one pair each. Both
 * walk 16 rows with the odometer (on an H200, 16 rows beat 1 and 4).
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>

/* Range of each knob; a value outside it, or anything but plain decimal
 * digits, is ignored (the default stays). */
#define ROWS_PER_ITEM_MAX 4096u
#define WORK_GROUP_MAX 1024u
#define LAUNCH_ROWS_MAX (1ul << 31)
#define LAUNCH_BATCH_MAX 65535u
/* Grid dimensions 1 and 2 are capped at 65535 on some GPUs. */
#define GRID_DIM_MAX 65535u

/* A decimal knob in [lo, hi] from the environment, else `fallback`. */
static unsigned long knob(const char *name, unsigned long lo, unsigned long hi,
                          unsigned long fallback)
{
    const char *text = getenv(name);
    if (!text || *text < '0' || *text > '9')
        return fallback;
    for (const char *c = text; *c; ++c)
        if (*c < '0' || *c > '9')
            return fallback;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE || *end != '\0' || v < lo || v > hi)
        return fallback;
    return (unsigned long)v;
}

clpe_status clpe__choose_pairs_per_item(cl_device_id device, cl_uint *pairs)
{
    /* A CPU device that asks for float vectors (PoCL: 16, as wide as
     * AVX-512) gets the float16 path: PoCL's own vectoriser gives up on
     * these kernels. GPUs, and CPU devices that ask for none (Rusticl's
     * llvmpipe, which runs work-items in SIMD lanes itself), get one pair
     * per work-item; float16 code there only costs registers or compile
     * time (20 minutes on llvmpipe, measured). */
    cl_device_type type = 0;
    cl_uint preferred = 1;
    cl_int err = clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof preferred,
                              &preferred, NULL);
    if (err != CL_SUCCESS)
        return err;
    *pairs = (type & CL_DEVICE_TYPE_CPU) && preferred > 1 ? CLPE_PAIRS_PER_ITEM_MAX : 1;
    unsigned long want = knob("CLPE_PAIRS_PER_ITEM", 1, CLPE_PAIRS_PER_ITEM_MAX, *pairs);
    if (want == 1 || want == CLPE_PAIRS_PER_ITEM_MAX)
        *pairs = (cl_uint)want;
    return CLPE_SUCCESS;
}

clpe_status clpe__choose_shape(cl_device_id device, cl_kernel sample, clpe_launch_shape *shape)
{
    cl_device_type type = 0;
    size_t kernel_wg = 0;
    cl_uint units = 1;
    cl_int err = clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    if (err == CL_SUCCESS)
        err = clGetKernelWorkGroupInfo(sample, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_wg,
                                       &kernel_wg, NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    if (err != CL_SUCCESS)
        return err;
    shape->compute_units = units ? units : 1;
    bool cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    size_t want = knob("CLPE_WORK_GROUP_SIZE", 1, WORK_GROUP_MAX, cpu ? 32 : 128);
    size_t local = 1;
    while (local * 2 <= want && local * 2 <= kernel_wg)
        local *= 2;
    shape->local_x = local;
    shape->rows_per_item = (cl_uint)knob("CLPE_ROWS_PER_ITEM", 1, ROWS_PER_ITEM_MAX, 16);
    shape->max_rows = (size_t)GRID_DIM_MAX * shape->rows_per_item;
    shape->max_batch = GRID_DIM_MAX;
    shape->tile_walk = knob("CLPE_TILE_WALK", 0, 1, 1) == 1;

    /* Test knobs: force small launches so splitting is exercised. */
    size_t rows = knob("CLPE_MAX_LAUNCH_ROWS", 1, LAUNCH_ROWS_MAX, 0);
    if (rows) {
        if (rows < shape->rows_per_item)
            shape->rows_per_item = (cl_uint)rows;
        size_t items = rows / shape->rows_per_item;
        shape->max_rows = (items ? items : 1) * shape->rows_per_item;
    }
    shape->max_batch = knob("CLPE_MAX_LAUNCH_BATCH", 1, LAUNCH_BATCH_MAX, shape->max_batch);
    return CLPE_SUCCESS;
}

clpe_status clpe_encoder_get_launch_info(const clpe_encoder *enc, clpe_launch_info *info)
{
    if (!enc)
        return CLPE_ERROR_NULL_ENCODER;
    if (!enc->shared)
        return CLPE_ERROR_HOST_ONLY;
    if (!info)
        return CLPE_ERROR_NULL_POINTER;
    const clpe_launch_shape *s = &enc->shared->shape;
    clpe_launch_info out = {
        .pairs_per_item = clpe__pairs_per_item(s, enc->cfg.dtype),
        .rows_per_item = s->rows_per_item,
        .work_group_size = s->local_x,
        .max_launch_rows = s->max_rows,
        .max_launch_batch = s->max_batch,
        .tile_walk = s->tile_walk && s->pairs_per_item > 1,
    };
    *info = out;
    return CLPE_SUCCESS;
}
