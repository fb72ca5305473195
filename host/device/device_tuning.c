/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device_tuning.c - the device tuning table: every device-dependent choice
 * of the library (pairs and rows per work-item, work-group size, tile
 * size, how far ahead rows are asked for, prefetch for write, how bfloat16
 * is rounded), one row per
 * kind of device, keyed by device type, vendor and whether the device asks
 * for float vectors, with a default row for any other device. The
 * environment's knobs override a row's launch values. No other file looks
 * at a device's vendor.
 *
 * None of these choices changes an output bit: they decide how the work is
 * cut up and which lines are asked for early, never the arithmetic.
 *
 * The two shapes:
 *   one pair per work-item (GPUs; CPU devices that run work-items in SIMD
 *     lanes themselves and ask for no vectors, such as Mesa's llvmpipe and
 *     Oclgrind): the portable body, kernels/clpe_rows_pair.cl and
 *     kernels/clpe_rope_pair.cl;
 *   the vector shape (PoCL on CPUs, which asks for float vectors but whose
 *     work-item-loop vectoriser gives up on these kernels): each
 *     work-item computes 64 pairs as explicit float16 vectors (512 for the
 *     16-bit row kernels, 128 for the 16-bit rotary ones),
 *     kernels/clpe_rows_vector.cl and kernels/clpe_rope_vector.cl.
 */
#include "device/device.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One row. type: a CL_DEVICE_TYPE_* bit the device must have (0: any);
 * vendor: a string CL_DEVICE_VENDOR must contain (NULL: any); vectors:
 * 1 when the row is for devices that ask for float vectors
 * (CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT > 1), 0 for those that do not,
 * -1 either. The first row that matches is the device's. */
typedef struct tuning_row {
    cl_device_type type;
    const char *vendor;
    int vectors;
    clpe_device_tuning t;
} tuning_row;

/* The vector shape's values, shared by the CPU rows. */
#define VECTOR_SHAPE(NAME, FOR_WRITE, BF16_HALVES)                                             \
    {.row = NAME, .pairs_per_item = CLPE_PAIRS_PER_ITEM_MAX,                                   \
     .pairs_per_item_rows16 = CLPE_PAIRS_PER_ITEM_ROWS16,                                      \
     .pairs_per_item_rope16 = CLPE_PAIRS_PER_ITEM_ROPE16, .rows_per_item = 16,                 \
     .work_group_size = 32, .tile_walk = 1, .tile_pairs = PE_TILE_PAIRS_F32,                   \
     .ahead_steps = 2, .ahead_steps16 = 3, .prefetch_for_write = (FOR_WRITE),               \
     .bf16_halves = (BF16_HALVES)}

/* The one-pair shape: one pair per work-item (two for 16-bit rotary, so a
 * work-item moves 32-bit words), work-groups of WG, 16 rows walked per
 * work-item (the tile walk, the steps ahead and prefetch act in the vector
 * shape only, should a knob ask for it). */
#define ONE_PAIR_SHAPE(NAME, WG)                                                               \
    {.row = NAME, .pairs_per_item = 1, .pairs_per_item_rows16 = 1,                             \
     .pairs_per_item_rope16 = CLPE_PAIRS_PER_ITEM_ROPE16_PORTABLE, .rows_per_item = 16,        \
     .work_group_size = (WG),                                                                  \
     .tile_walk = 1, .tile_pairs = PE_TILE_PAIRS_F32, .ahead_steps = 2, .ahead_steps16 = 3,    \
     .prefetch_for_write = 0, .bf16_halves = 0}

static const tuning_row table[] = {
    /* PoCL on Intel cores: a plain read prefetch beats prefetchw when x
     * streams from memory; bfloat16 rounded on 16-bit halves (two shifts,
     * three logic operations, a compare and a masked add per 32 values)
     * beats rounding each float's 32 bits. */
    {CL_DEVICE_TYPE_CPU, "Intel", 1, VECTOR_SHAPE("cpu-intel", 0, 1)},
    /* PoCL on AMD cores: prefetchw of lines about to be written pays; the
     * 32-bit rounding of bfloat16 does at least as well as the halves. */
    {CL_DEVICE_TYPE_CPU, "AMD", 1, VECTOR_SHAPE("cpu-amd", 1, 0)},
    /* Any other CPU that asks for vectors (PoCL on other cores). */
    {CL_DEVICE_TYPE_CPU, NULL, 1, VECTOR_SHAPE("cpu", 1, 0)},
    /* CPUs that ask for no vectors run work-items in lanes themselves
     * (llvmpipe, Oclgrind): vector code there only costs compile time. */
    {CL_DEVICE_TYPE_CPU, NULL, 0, ONE_PAIR_SHAPE("cpu-lanes", 32)},
    /* GPUs: one pair per lane; on an H200, 16 rows per work-item beat 1
     * and 4. */
    {CL_DEVICE_TYPE_GPU, NULL, -1, ONE_PAIR_SHAPE("gpu", 128)},
    /* Anything else: the portable shape. */
    {0, NULL, -1, ONE_PAIR_SHAPE("default", 128)},
};

/* Range of each knob; a value outside it, or anything but plain decimal
 * digits, is ignored (the row's value stays). */
#define ROWS_PER_ITEM_MAX 4096u
#define WORK_GROUP_MAX 1024u

unsigned long clpe__knob(const char *name, unsigned long lo, unsigned long hi,
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

/* The device's vendor string, whatever its length (NULL if out of memory). */
static clpe_status device_vendor(cl_device_id device, char **vendor)
{
    size_t size = 0;
    *vendor = NULL;
    cl_int err = clGetDeviceInfo(device, CL_DEVICE_VENDOR, 0, NULL, &size);
    if (err != CL_SUCCESS)
        return err;
    char *text = calloc(size + 1, 1);
    if (!text)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    err = clGetDeviceInfo(device, CL_DEVICE_VENDOR, size, text, NULL);
    if (err != CL_SUCCESS) {
        free(text);
        return err;
    }
    *vendor = text;
    return CLPE_SUCCESS;
}

static bool row_matches(const tuning_row *r, cl_device_type type, const char *vendor,
                        bool vectors)
{
    return (!r->type || (type & r->type)) && (!r->vendor || strstr(vendor, r->vendor)) &&
           (r->vectors < 0 || r->vectors == (int)vectors);
}

clpe_status clpe__device_tuning(cl_device_id device, clpe_device_tuning *out)
{
    cl_device_type type = 0;
    cl_uint preferred = 1;
    cl_int err = clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceInfo(device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof preferred,
                              &preferred, NULL);
    if (err != CL_SUCCESS)
        return err;
    char *vendor = NULL;
    clpe_status status = device_vendor(device, &vendor);
    if (status != CLPE_SUCCESS)
        return status;
    size_t k = 0;
    while (!row_matches(&table[k], type, vendor, preferred > 1))
        ++k; /* the last row matches every device */
    free(vendor);
    clpe_device_tuning t = table[k].t;

    /* the environment's knobs: the shape as a whole (1 or 64) */
    unsigned long pairs = clpe__knob("CLPE_PAIRS_PER_ITEM", 1, CLPE_PAIRS_PER_ITEM_MAX,
                                     t.pairs_per_item);
    if (pairs == 1) {
        t.pairs_per_item = t.pairs_per_item_rows16 = 1;
        t.pairs_per_item_rope16 = CLPE_PAIRS_PER_ITEM_ROPE16_PORTABLE;
    } else if (pairs == CLPE_PAIRS_PER_ITEM_MAX) {
        t.pairs_per_item = CLPE_PAIRS_PER_ITEM_MAX;
        t.pairs_per_item_rows16 = CLPE_PAIRS_PER_ITEM_ROWS16;
        t.pairs_per_item_rope16 = CLPE_PAIRS_PER_ITEM_ROPE16;
    }
    t.work_group_size =
        (uint32_t)clpe__knob("CLPE_WORK_GROUP_SIZE", 1, WORK_GROUP_MAX, t.work_group_size);
    t.rows_per_item =
        (uint32_t)clpe__knob("CLPE_ROWS_PER_ITEM", 1, ROWS_PER_ITEM_MAX, t.rows_per_item);
    t.tile_walk = (uint32_t)clpe__knob("CLPE_TILE_WALK", 0, 1, t.tile_walk);
    *out = t;
    return CLPE_SUCCESS;
}

clpe_status clpe_get_device_tuning(cl_device_id device, clpe_device_tuning *tuning)
{
    if (!device || !tuning)
        return CLPE_ERROR_NULL_POINTER;
    clpe_device_tuning t;
    clpe_status status = clpe__device_tuning(device, &t);
    if (status == CLPE_SUCCESS)
        *tuning = t;
    return status;
}
