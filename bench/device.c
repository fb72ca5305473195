/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device.c - device description and shared buffers of clpe-bench (see device.h).
 */
#include "device.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern const char bench_streams_source[];

static void info_string(cl_device_id dev, cl_platform_id plat, cl_uint param, char *out,
                        size_t cap)
{
    out[0] = '\0';
    cl_int err = plat ? clGetPlatformInfo(plat, param, cap, out, NULL)
                      : clGetDeviceInfo(dev, param, cap, out, NULL);
    if (err != CL_SUCCESS)
        snprintf(out, cap, "?");
    out[cap - 1] = '\0';
}

static int has_extension(cl_device_id dev, const char *ext)
{
    size_t len = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &len) != CL_SUCCESS || len == 0)
        return 0;
    char *s = malloc(len + 1);
    if (!s)
        return 0;
    int found = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, len, s, NULL) == CL_SUCCESS) {
        s[len] = '\0';
        size_t n = strlen(ext);
        for (char *p = strstr(s, ext); p && !found; p = strstr(p + 1, ext))
            found = (p == s || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0');
    }
    free(s);
    return found;
}

void device_describe(cl_platform_id plat, cl_device_id dev, device_desc *d)
{
    memset(d, 0, sizeof *d);
    info_string(NULL, plat, CL_PLATFORM_NAME, d->platform, sizeof d->platform);
    info_string(NULL, plat, CL_PLATFORM_VERSION, d->platform_version, sizeof d->platform_version);
    info_string(dev, NULL, CL_DEVICE_NAME, d->name, sizeof d->name);
    info_string(dev, NULL, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
    info_string(dev, NULL, CL_DEVICE_VERSION, d->version, sizeof d->version);
    info_string(dev, NULL, CL_DRIVER_VERSION, d->driver, sizeof d->driver);
    info_string(dev, NULL, CL_DEVICE_OPENCL_C_VERSION, d->c_version, sizeof d->c_version);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->compute_units, &d->compute_units,
                    NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof d->clock_mhz, &d->clock_mhz, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof d->type, &d->type, NULL);
    d->fp16 = has_extension(dev, "cl_khr_fp16");
    d->fp64 = has_extension(dev, "cl_khr_fp64");
}

const char *device_type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return "gpu";
    if (t & CL_DEVICE_TYPE_CPU)
        return "cpu";
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return "accelerator";
    return "other";
}

cl_program env_build(const bench_env *env, const char *source, const char *build_options,
                     const char *what)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(env->ctx, 1, &source, NULL, &err);
    if (p)
        err = clBuildProgram(p, 1, &env->device, build_options, NULL, NULL);
    if (err == CL_SUCCESS)
        return p;
    fprintf(stderr, "clpe-bench: building %s failed: %d\n", what, err);
    if (p) {
        char log[8192] = "";
        clGetProgramBuildInfo(p, env->device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        log[sizeof log - 1] = '\0';
        fprintf(stderr, "%s\n", log);
        clReleaseProgram(p);
    }
    return NULL;
}

static cl_int fill_bytes(const bench_env *env, cl_mem buf, size_t bytes, cl_uchar byte)
{
    cl_int err = clEnqueueFillBuffer(env->queue, buf, &byte, 1, 0, bytes, 0, NULL, NULL);
    return err == CL_SUCCESS ? clFinish(env->queue) : err;
}

cl_int env_zero(const bench_env *env, cl_mem buf, size_t bytes)
{
    return fill_bytes(env, buf, bytes, 0);
}

cl_int env_fill_data(const bench_env *env, cl_mem buf, size_t bytes)
{
    return fill_bytes(env, buf, bytes, BENCH_DATA_BYTE);
}

static cl_mem make_buffer(cl_context ctx, size_t bytes, cl_ulong max_alloc, const char *what)
{
    if (bytes > max_alloc) {
        fprintf(stderr,
                "clpe-bench: the %s buffer needs %zu bytes, above the device's %llu-byte "
                "allocation limit; lower --seq, --batch, --d or --vocab\n",
                what, bytes, (unsigned long long)max_alloc);
        return NULL;
    }
    cl_int err;
    /* a buffer no selected operation uses may be empty; OpenCL wants a size */
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes ? bytes : 64, NULL, &err);
    if (!m)
        fprintf(stderr, "clpe-bench: clCreateBuffer(%s, %zu bytes): %d\n", what, bytes, err);
    return m;
}

/* rope-kv's slots: token t into slot t of a contiguous cache. */
static cl_int write_slots(const bench_env *env, size_t rows)
{
    cl_long *slots = malloc(rows * sizeof *slots);
    if (!slots)
        return CL_OUT_OF_HOST_MEMORY;
    for (size_t i = 0; i < rows; i++)
        slots[i] = (cl_long)i;
    cl_int err = clEnqueueWriteBuffer(env->queue, env->kv_slots, CL_TRUE, 0, rows * sizeof *slots,
                                      slots, 0, NULL, NULL);
    free(slots);
    return err;
}

/* Random token ids (a fixed LCG, so every run gathers the same rows): the
 * access pattern of real text, not a sequential copy. */
static cl_int write_ids(const bench_env *env, size_t rows)
{
    cl_int *ids = malloc(rows * sizeof *ids);
    if (!ids)
        return CL_OUT_OF_HOST_MEMORY;
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < rows; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (cl_int)((state >> 33) % env->vocab);
    }
    cl_int err = clEnqueueWriteBuffer(env->queue, env->ids, CL_TRUE, 0, rows * sizeof *ids, ids,
                                      0, NULL, NULL);
    free(ids);
    return err;
}

int env_create(bench_env *env, cl_device_id device, const device_desc *dd, const options *o)
{
    memset(env, 0, sizeof *env);
    env->device = device;
    env->vocab = o->vocab;
    cl_int err;
    env->ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (!env->ctx) {
        fprintf(stderr, "clpe-bench: clCreateContext: %d\n", err);
        return -1;
    }
    env->queue = clCreateCommandQueue(env->ctx, device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (env->queue)
        env->host_queue = clCreateCommandQueue(env->ctx, device, 0, &err);
    if (!env->queue || !env->host_queue) {
        fprintf(stderr, "clpe-bench: clCreateCommandQueue: %d\n", err);
        return -1;
    }
    env->streams = env_build(env, bench_streams_source, "", "the reference kernels");
    if (!env->streams)
        return -1;

    env->widest = 4;
    for (size_t i = 0; i < BENCH_N_DTYPES; i++)
        if ((o->dtype_mask & (1u << i)) && BENCH_DTYPES[i].size > env->widest)
            env->widest = BENCH_DTYPES[i].size;
    size_t rows = o->batch * o->seq; /* options_parse bounded these */
    size_t x_bytes = rows * o->d * env->widest, emb_bytes = o->vocab * o->d * env->widest;
    size_t table_bytes = o->seq * o->d * env->widest;
    size_t cache_bytes = o->seq * o->head_dim * env->widest;
    /* rope-kv reads queries, keys and values: heads + 2 kv_heads per token */
    size_t kv_copy_bytes = rows * (o->heads + 2 * o->kv_heads) * o->head_dim * env->widest;
    if (!(env->x = make_buffer(env->ctx, x_bytes, dd->max_alloc, "x")) ||
        !(env->y = make_buffer(env->ctx, x_bytes, dd->max_alloc, "out")) ||
        !(env->emb = make_buffer(env->ctx, emb_bytes, dd->max_alloc, "embedding")) ||
        !(env->ids = make_buffer(env->ctx, rows * sizeof(cl_int), dd->max_alloc, "ids")) ||
        !(env->table = make_buffer(env->ctx, table_bytes, dd->max_alloc, "table")) ||
        !(env->rope_cos = make_buffer(env->ctx, cache_bytes, dd->max_alloc, "cos cache")) ||
        !(env->rope_sin = make_buffer(env->ctx, cache_bytes, dd->max_alloc, "sin cache")) ||
        !(env->kv_slots = make_buffer(env->ctx, rows * sizeof(cl_long), dd->max_alloc,
                                      "cache slots")) ||
        !(env->kv_copy = make_buffer(env->ctx, kv_copy_bytes, dd->max_alloc, "copy")))
        return -1;
    printf("buffers: x and out %.1f MiB each, embedding %.1f MiB, ids %.1f MiB, "
           "table %.1f MiB\n\n",
           (double)x_bytes / 1048576.0, (double)emb_bytes / 1048576.0,
           (double)(rows * 4) / 1048576.0, (double)table_bytes / 1048576.0);
    err = write_ids(env, rows);
    if (err == CL_SUCCESS)
        err = write_slots(env, rows);
    if (err == CL_SUCCESS)
        err = env_fill_data(env, env->emb, emb_bytes);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clpe-bench: initialising buffers: %d\n", err);
        return -1;
    }
    return 0;
}

void env_release(bench_env *env)
{
    cl_mem *bufs[] = {&env->kv_copy, &env->kv_slots, &env->rope_sin, &env->rope_cos, &env->table,
                      &env->ids, &env->emb, &env->y, &env->x};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (*bufs[i]) {
            clReleaseMemObject(*bufs[i]);
            *bufs[i] = NULL;
        }
    if (env->streams)
        clReleaseProgram(env->streams);
    if (env->host_queue)
        clReleaseCommandQueue(env->host_queue);
    if (env->queue)
        clReleaseCommandQueue(env->queue);
    if (env->ctx)
        clReleaseContext(env->ctx);
    memset(env, 0, sizeof *env);
}
