/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device_select.c - one rule for picking an OpenCL device, shared by the
 * tests, the command-line tool and the benchmark (see clpe_select_device).
 */
#include "device/device.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct device_entry {
    cl_platform_id platform;
    cl_device_id device;
} device_entry;

/* Every device of every platform, in enumeration order. */
static clpe_status list_devices(device_entry **out, size_t *count)
{
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    *out = NULL;
    *count = 0;
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || np == 0)
        return CLPE_ERROR_NO_DEVICE;
    if (err != CL_SUCCESS)
        return err;
    cl_platform_id *platforms = malloc(np * sizeof *platforms);
    if (!platforms)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    err = clGetPlatformIDs(np, platforms, NULL);
    device_entry *list = NULL;
    size_t n = 0;
    for (cl_uint p = 0; err == CL_SUCCESS && p < np; ++p) {
        cl_uint nd = 0;
        cl_int e = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
        if (e != CL_SUCCESS || nd == 0)
            continue; /* a platform without devices is not an error */
        cl_device_id *devs = malloc(nd * sizeof *devs);
        device_entry *grown = realloc(list, (n + nd) * sizeof *list);
        if (!devs || !grown) {
            free(devs);
            if (grown)
                list = grown;
            err = CLPE_ERROR_OUT_OF_HOST_MEMORY;
            break;
        }
        list = grown;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL) == CL_SUCCESS) {
            for (cl_uint k = 0; k < nd; ++k) {
                list[n].platform = platforms[p];
                list[n].device = devs[k];
                ++n;
            }
        }
        free(devs);
    }
    free(platforms);
    if (err != CL_SUCCESS) {
        free(list);
        return err;
    }
    if (n == 0) {
        free(list);
        return CLPE_ERROR_NO_DEVICE;
    }
    *out = list;
    *count = n;
    return CLPE_SUCCESS;
}

static bool contains_nocase(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    for (; *hay; ++hay) {
        size_t k = 0;
        while (k < nl && hay[k] &&
               tolower((unsigned char)hay[k]) == tolower((unsigned char)needle[k]))
            ++k;
        if (k == nl)
            return true;
    }
    return false;
}

static bool matches_name(const device_entry *e, const char *needle)
{
    char text[512];
    if (clGetPlatformInfo(e->platform, CL_PLATFORM_NAME, sizeof text, text, NULL) == CL_SUCCESS &&
        (text[sizeof text - 1] = '\0', contains_nocase(text, needle)))
        return true;
    if (clGetDeviceInfo(e->device, CL_DEVICE_NAME, sizeof text, text, NULL) == CL_SUCCESS &&
        (text[sizeof text - 1] = '\0', contains_nocase(text, needle)))
        return true;
    if (clGetDeviceInfo(e->device, CL_DEVICE_VENDOR, sizeof text, text, NULL) == CL_SUCCESS &&
        (text[sizeof text - 1] = '\0', contains_nocase(text, needle)))
        return true;
    return false;
}

static bool is_type(const device_entry *e, cl_device_type want)
{
    cl_device_type type = 0;
    return clGetDeviceInfo(e->device, CL_DEVICE_TYPE, sizeof type, &type, NULL) == CL_SUCCESS &&
           (type & want);
}

static bool is_index(const char *s)
{
    if (!*s)
        return false;
    for (; *s; ++s)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

clpe_status clpe_select_device(const char *selector, cl_platform_id *platform,
                               cl_device_id *device)
{
    if (!device)
        return CLPE_ERROR_NULL_POINTER;
    if (!selector || !*selector)
        selector = getenv("CLPE_DEVICE");
    device_entry *list;
    size_t n;
    clpe_status status = list_devices(&list, &n);
    if (status != CLPE_SUCCESS)
        return status;

    size_t found = n; /* n: none */
    if (!selector || !*selector) {
        for (size_t k = 0; k < n && found == n; ++k)
            if (is_type(&list[k], CL_DEVICE_TYPE_GPU))
                found = k;
        if (found == n)
            found = 0;
    } else if (is_index(selector)) {
        char *end;
        unsigned long long idx = strtoull(selector, &end, 10);
        if (idx < n)
            found = (size_t)idx;
    } else if (strcasecmp(selector, "gpu") == 0 || strcasecmp(selector, "cpu") == 0) {
        cl_device_type want = strcasecmp(selector, "gpu") == 0 ? CL_DEVICE_TYPE_GPU
                                                               : CL_DEVICE_TYPE_CPU;
        for (size_t k = 0; k < n && found == n; ++k)
            if (is_type(&list[k], want))
                found = k;
    } else {
        for (size_t k = 0; k < n && found == n; ++k)
            if (matches_name(&list[k], selector))
                found = k;
    }
    if (found < n) {
        if (platform)
            *platform = list[found].platform;
        *device = list[found].device;
    }
    free(list);
    return found < n ? CLPE_SUCCESS : CLPE_ERROR_NO_DEVICE;
}

/* What a device supports (clpe_device_supports_dtype). */
bool clpe__device_has_dtype(cl_device_id device, clpe_dtype dtype)
{
    if (dtype != CLPE_DTYPE_F64)
        return true; /* f16 and bf16 use only vload_half/vstore_half and integer ops */
    cl_device_fp_config fp = 0;
    return clGetDeviceInfo(device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL) ==
               CL_SUCCESS &&
           (fp & CL_FP_FMA) && (fp & CL_FP_ROUND_TO_NEAREST);
}

int clpe_device_supports_dtype(cl_device_id device, clpe_dtype dtype)
{
    if (!device || (unsigned)dtype > CLPE_DTYPE_F64)
        return 0;
    return clpe__device_has_dtype(device, dtype);
}
