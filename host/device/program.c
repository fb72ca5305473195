/* SPDX-License-Identifier: Apache-2.0 */
/*
 * program.c - building the kernels for one device, and the pools of
 * cl_kernel objects that let many threads enqueue on one encoder.
 */
#include "device/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Generated at build time from kernels/ (see cmake/embed_kernels.cmake). */
extern const char clpe_kernel_source[];

static const char *const kernel_names[CLPE_KERNEL_COUNT] = {
    "clpe_table_f32",  "clpe_table_f16",  "clpe_table_bf16",  "clpe_table_f64",
    "clpe_add_f32",    "clpe_add_f16",    "clpe_add_bf16",    "clpe_add_f64",
    "clpe_gather_f32", "clpe_gather_f16", "clpe_gather_bf16", "clpe_gather_f64",
    "clpe_rope_f32",   "clpe_rope_f16",   "clpe_rope_bf16",   "clpe_rope_f64",
    "clpe_rope_cache_f32", "clpe_rope_cache_f16", "clpe_rope_cache_bf16", "clpe_rope_cache_f64",
    "clpe_rope_kv_f32", "clpe_rope_kv_f16", "clpe_rope_kv_bf16", "clpe_rope_kv_f64",
    "clpe_rope_streams_f32", "clpe_rope_streams_f16", "clpe_rope_streams_bf16",
    "clpe_rope_streams_f64",
    "clpe_rope_cache_at_f32", "clpe_rope_cache_at_f16", "clpe_rope_cache_at_bf16",
    "clpe_rope_cache_at_f64",
    "clpe_pad_positions", "clpe_kv_check_slots",
    "clpe_rope_kv_f32_to_f16", "clpe_rope_kv_f32_to_bf16",
    "clpe_rope_kv_f32_to_e4m3", "clpe_rope_kv_f32_to_e5m2",
    "clpe_rope_kv_f16_to_e4m3", "clpe_rope_kv_f16_to_e5m2",
    "clpe_rope_kv_bf16_to_e4m3", "clpe_rope_kv_bf16_to_e5m2",
};

/* No fast-math flags: the arithmetic must be exactly what is written.
 * OpenCL C 1.2 so every conformant device accepts the source. PE_DTYPE and
 * PE_OPS_* select the kernels of one dtype and family. The rest is
 * the device's tuning (device_tuning.c): PE_PAIRS, PE_PAIRS_ROWS16 and
 * PE_PAIRS_ROPE16 are the pairs one work-item computes for 32/64-bit, for
 * the 16-bit row kernels and for the 16-bit rotary ones; then the tile
 * walk's pairs, the steps asked for ahead, prefetch for write and the
 * bfloat16 rounding on 16-bit halves. */
#define BUILD_OPTIONS                                                                          \
    "-cl-std=CL1.2 -DPE_DTYPE=%u -DPE_OPS_ROWS=%u -DPE_OPS_ROPE=%u "                           \
    "-DPE_PAIRS=%u -DPE_PAIRS_ROWS16=%u -DPE_PAIRS_ROPE16=%u "                                 \
    "-DPE_TILE_PAIRS_F32=%u -DPE_AHEAD_STEPS32=%u -DPE_AHEAD_STEPS16=%u "                      \
    "-DPE_PREFETCH_FOR_WRITE=%u -DPE_BF16_HALVES=%u -DPE_OPS_KV_FP8=%u -DPE_OPS_KV_FP8_ONLY=%u"

static void copy_build_log(cl_program program, cl_device_id device, clpe_build_log *log)
{
    if (!log)
        return;
    size_t size = 0;
    log->length = 0;
    if (log->buffer && log->capacity)
        log->buffer[0] = '\0';
    if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) !=
            CL_SUCCESS || size == 0)
        return;
    char *full = malloc(size);
    if (!full)
        return;
    if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, full, NULL) ==
        CL_SUCCESS) {
        full[size - 1] = '\0';
        log->length = strlen(full) + 1;
        if (log->buffer && log->capacity) {
            size_t n = log->length < log->capacity ? log->length : log->capacity;
            memcpy(log->buffer, full, n - 1);
            log->buffer[n - 1] = '\0';
        }
    }
    free(full);
}

/* Put a message of clpe's own in the caller's build log. */
static void set_log(clpe_build_log *log, const char *text)
{
    if (!log)
        return;
    log->length = strlen(text) + 1;
    if (log->buffer && log->capacity) {
        size_t n = log->length < log->capacity ? log->length : log->capacity;
        memcpy(log->buffer, text, n - 1);
        log->buffer[n - 1] = '\0';
    }
}

#define KERNEL_DIR_MAX 4096

/* Development switch: CLPE_KERNEL_DIR names a folder whose clpe_kernels.cl
 * (and the files it includes, through -I) replaces the embedded copy, so a
 * kernel can be edited and tried without rebuilding the library, and the
 * compiler's messages name the real files and lines. */
static clpe_status kernel_source_from_dir(char *options, size_t size, char **source,
                                          clpe_build_log *log)
{
    const char *dir = getenv("CLPE_KERNEL_DIR");
    *source = NULL;
    if (!dir || !*dir)
        return CLPE_SUCCESS;
    char path[KERNEL_DIR_MAX + 32];
    if (strlen(dir) >= KERNEL_DIR_MAX || strpbrk(dir, " \t\n\"'\\")) {
        set_log(log, "CLPE_KERNEL_DIR: the folder name is too long or holds a blank or quote");
        return CL_BUILD_PROGRAM_FAILURE;
    }
    snprintf(path, sizeof path, "%s/clpe_kernels.cl", dir);
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)len + 1)) != NULL && fread(text, 1, (size_t)len, f) == (size_t)len) {
        text[len] = '\0';
    } else {
        free(text);
        text = NULL;
    }
    if (f)
        fclose(f);
    if (!text) {
        set_log(log, "CLPE_KERNEL_DIR: cannot read clpe_kernels.cl in that folder");
        return CL_BUILD_PROGRAM_FAILURE;
    }
    size_t used = strlen(options);
    snprintf(options + used, size - used, " -I %s", dir);
    *source = text;
    return CLPE_SUCCESS;
}

/* Whether a string the device reports (CL_DEVICE_EXTENSIONS), whatever its
 * length, contains `needle`. */
static clpe_status device_string_contains(cl_device_id device, cl_device_info param,
                                          const char *needle, bool *contains)
{
    size_t size = 0;
    cl_int err = clGetDeviceInfo(device, param, 0, NULL, &size);
    if (err != CL_SUCCESS)
        return err;
    char *text = calloc(size + 1, 1);
    if (!text)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    err = clGetDeviceInfo(device, param, size, text, NULL);
    *contains = err == CL_SUCCESS && strstr(text, needle) != NULL;
    free(text);
    return err;
}

/* Does the device run our kernels bit-exactly? They need 64-bit integers
 * (missing on embedded-profile devices without cles_khr_int64). Embedded
 * profiles also may lack a correctly rounded fma, so only a full profile or
 * an embedded one that has 64-bit integers and says it has correct fma is
 * accepted. */
static clpe_status check_device(cl_device_id device)
{
    char profile[64] = {0};
    cl_int err = clGetDeviceInfo(device, CL_DEVICE_PROFILE, sizeof profile - 1, profile, NULL);
    if (err != CL_SUCCESS)
        return err;
    if (strcmp(profile, "FULL_PROFILE") == 0)
        return CLPE_SUCCESS;
    bool has_int64 = false;
    clpe_status status =
        device_string_contains(device, CL_DEVICE_EXTENSIONS, "cles_khr_int64", &has_int64);
    if (status != CLPE_SUCCESS)
        return status;
    cl_device_fp_config fp = 0;
    err = clGetDeviceInfo(device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    if (err != CL_SUCCESS)
        return err;
    if (!has_int64 || !(fp & CL_FP_FMA) || !(fp & CL_FP_ROUND_TO_NEAREST))
        return CLPE_ERROR_DEVICE_UNSUPPORTED;
    return CLPE_SUCCESS;
}

/* Which program holds a kernel: its dtype and family (the rotary family
 * holds rotary, its cache, rotary into a KV cache and the multimodal
 * kernels). clpe_pad_positions is in every row program and
 * clpe_kv_check_slots in every rotary one; kernel_program finds one. */
static clpe_family kernel_family(clpe_kernel_id id)
{
    if (id == CLPE_KERNEL_PAD_POSITIONS)
        return CLPE_FAMILY_ROWS;
    if (id >= CLPE_KERNEL_ROPE_KV_FP8)
        return CLPE_FAMILY_KV_FP8;
    if (id >= CLPE_KERNEL_KV_CHECK_SLOTS)
        return CLPE_FAMILY_ROPE;
    clpe_op op = (clpe_op)(id / CLPE_DTYPE_COUNT);
    return op == CLPE_OP_TABLE || op == CLPE_OP_ADD || op == CLPE_OP_GATHER ? CLPE_FAMILY_ROWS
                                                                            : CLPE_FAMILY_ROPE;
}

/* The kernel whose work-group limit shapes the launches: the first built
 * program's main kernel. */
static clpe_kernel_id sample_kernel(clpe_dtype dtype, clpe_family family)
{
    return clpe__kernel_for(family == CLPE_FAMILY_ROPE ? CLPE_OP_ROPE : CLPE_OP_ADD, dtype);
}

static void pool_destroy(clpe_kernel_pool *pool)
{
    for (size_t k = 0; k < pool->count; ++k)
        clReleaseKernel(pool->free_kernels[k]);
    free(pool->free_kernels);
    pthread_mutex_destroy(&pool->lock);
}

/* Build the program of dtype and family into shared->programs (the
 * caller holds build_lock, or is the only one to know shared). */
static clpe_status build_program(clpe_program_shared *shared, clpe_dtype dtype,
                                 clpe_family family, clpe_build_log *log)
{
    const clpe_device_tuning *t = &shared->tuning;
    char options[384 + KERNEL_DIR_MAX]; /* the options above, " -I " and the folder */
    char *from_disk = NULL;
    const char *source = clpe_kernel_source;
    snprintf(options, sizeof options, BUILD_OPTIONS, (unsigned)dtype,
             family == CLPE_FAMILY_ROWS ? 1u : 0u, family != CLPE_FAMILY_ROWS ? 1u : 0u,
             t->pairs_per_item, t->pairs_per_item_rows16, t->pairs_per_item_rope16,
             t->tile_pairs, t->ahead_steps, t->ahead_steps16, t->prefetch_for_write,
             t->bf16_halves, family == CLPE_FAMILY_KV_FP8 ? 1u : 0u, family == CLPE_FAMILY_KV_FP8 ? 1u : 0u);
    clpe_status status = kernel_source_from_dir(options, sizeof options, &from_disk, log);
    if (status != CLPE_SUCCESS)
        return status;
    if (from_disk)
        source = from_disk;
    cl_int err = CL_SUCCESS;
    cl_program program = clCreateProgramWithSource(shared->context, 1, &source, NULL, &err);
    free(from_disk);
    if (err != CL_SUCCESS)
        return err;
    err = clBuildProgram(program, 1, &shared->device, options, NULL, NULL);
    copy_build_log(program, shared->device, log);
    if (err != CL_SUCCESS) {
        clReleaseProgram(program);
        return err;
    }
    shared->programs[dtype][family] = program;
    return CLPE_SUCCESS;
}

clpe_status clpe__program_for(cl_context context, cl_device_id device, clpe_dtype dtype,
                              clpe_family family, clpe_build_log *log,
                              clpe_program_shared **out)
{
    *out = NULL;
    clpe__log_reset(log);
    if (!clpe__device_has_dtype(device, dtype))
        return CLPE_ERROR_UNSUPPORTED_DTYPE;
    clpe_status status = check_device(device);
    if (status != CLPE_SUCCESS)
        return status;

    clpe_program_shared *shared = calloc(1, sizeof *shared);
    if (!shared)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    shared->context = context;
    shared->device = device;
    int pools_ready = 0;
    bool lock_ready = false;
    cl_kernel sample = NULL;
    cl_int err = CL_SUCCESS;
    clpe_kernel_id sample_id = sample_kernel(dtype, family);

    status = clpe__device_tuning(device, &shared->tuning);
    if (status != CLPE_SUCCESS)
        goto fail;
    status = build_program(shared, dtype, family, log);
    if (status != CLPE_SUCCESS)
        goto fail;
    if (pthread_mutex_init(&shared->build_lock, NULL) != 0) {
        status = CLPE_ERROR_OUT_OF_HOST_MEMORY;
        goto fail;
    }
    lock_ready = true;
    for (; pools_ready < CLPE_KERNEL_COUNT; ++pools_ready) {
        if (pthread_mutex_init(&shared->pools[pools_ready].lock, NULL) != 0) {
            status = CLPE_ERROR_OUT_OF_HOST_MEMORY;
            goto fail;
        }
    }
    sample = clCreateKernel(shared->programs[dtype][family], kernel_names[sample_id], &err);
    if (err != CL_SUCCESS) {
        sample = NULL;
        status = err;
        goto fail;
    }
    status = clpe__choose_shape(device, &shared->tuning, sample, &shared->shape);
    if (status != CLPE_SUCCESS)
        goto fail;
    /* The sample becomes the first pooled kernel. */
    shared->pools[sample_id].free_kernels = malloc(sizeof(cl_kernel));
    if (!shared->pools[sample_id].free_kernels) {
        status = CLPE_ERROR_OUT_OF_HOST_MEMORY;
        goto fail;
    }
    shared->pools[sample_id].free_kernels[0] = sample;
    shared->pools[sample_id].count = 1;
    shared->pools[sample_id].capacity = 1;
    sample = NULL;

    err = clRetainContext(context);
    if (err != CL_SUCCESS) {
        status = err;
        goto fail;
    }
    err = clRetainDevice(device);
    if (err != CL_SUCCESS) {
        clReleaseContext(context);
        status = err;
        goto fail;
    }
    atomic_init(&shared->refcount, 1);
    *out = shared;
    return CLPE_SUCCESS;

fail:
    if (sample)
        clReleaseKernel(sample);
    for (int k = 0; k < pools_ready; ++k)
        pool_destroy(&shared->pools[k]);
    if (lock_ready)
        pthread_mutex_destroy(&shared->build_lock);
    if (shared->programs[dtype][family])
        clReleaseProgram(shared->programs[dtype][family]);
    free(shared);
    return status;
}

clpe_status clpe__program_like(clpe_program_shared *like, clpe_dtype dtype, clpe_family family,
                               clpe_program_shared **out)
{
    *out = NULL;
    if (!clpe__device_has_dtype(like->device, dtype))
        return CLPE_ERROR_UNSUPPORTED_DTYPE;
    clpe_status status = CLPE_SUCCESS;
    pthread_mutex_lock(&like->build_lock);
    if (!like->programs[dtype][family])
        status = build_program(like, dtype, family, NULL);
    pthread_mutex_unlock(&like->build_lock);
    if (status != CLPE_SUCCESS)
        return status;
    clpe__program_retain(like);
    *out = like;
    return CLPE_SUCCESS;
}

void clpe__program_retain(clpe_program_shared *shared)
{
    atomic_fetch_add(&shared->refcount, 1);
}

void clpe__program_release(clpe_program_shared *shared)
{
    if (!shared || atomic_fetch_sub(&shared->refcount, 1) != 1)
        return;
    for (int k = 0; k < CLPE_KERNEL_COUNT; ++k)
        pool_destroy(&shared->pools[k]);
    for (int d = 0; d < CLPE_DTYPE_COUNT; ++d)
        for (int f = 0; f < CLPE_FAMILY_COUNT; ++f)
            if (shared->programs[d][f])
                clReleaseProgram(shared->programs[d][f]);
    pthread_mutex_destroy(&shared->build_lock);
    clReleaseDevice(shared->device);
    clReleaseContext(shared->context);
    free(shared);
}

/* The program that holds kernel id (built: the caller's object made sure);
 * the float32 rotary program for rotary into a half or bfloat16 cache,
 * the storage type's FP8 program for rotary into an FP8 cache;
 * for the other kernels outside the (op, dtype) grid, any program of
 * their family. */
static cl_program kernel_program(clpe_program_shared *shared, clpe_kernel_id id)
{
    cl_program program = NULL;
    pthread_mutex_lock(&shared->build_lock);
    if (id == CLPE_KERNEL_ROPE_KV_F32_TO_F16 || id == CLPE_KERNEL_ROPE_KV_F32_TO_BF16) {
        program = shared->programs[CLPE_DTYPE_F32][CLPE_FAMILY_ROPE];
    } else if (id >= CLPE_KERNEL_ROPE_KV_FP8) {
        program = shared->programs[(id - CLPE_KERNEL_ROPE_KV_FP8) / 2][CLPE_FAMILY_KV_FP8];
    } else if (id >= CLPE_KERNEL_PAD_POSITIONS) {
        for (int d = 0; d < CLPE_DTYPE_COUNT && !program; ++d)
            program = shared->programs[d][kernel_family(id)];
    } else {
        program = shared->programs[id % CLPE_DTYPE_COUNT][kernel_family(id)];
    }
    pthread_mutex_unlock(&shared->build_lock);
    return program;
}

clpe_status clpe__kernel_acquire(clpe_program_shared *shared, clpe_kernel_id id, cl_kernel *kernel)
{
    clpe_kernel_pool *pool = &shared->pools[id];
    pthread_mutex_lock(&pool->lock);
    if (pool->count > 0) {
        *kernel = pool->free_kernels[--pool->count];
        pthread_mutex_unlock(&pool->lock);
        return CLPE_SUCCESS;
    }
    pthread_mutex_unlock(&pool->lock);
    if (id >= CLPE_KERNEL_ROPE_KV_FP8) {
        /* the FP8 program, built the first time a call writes an FP8 cache */
        clpe_dtype dtype = (clpe_dtype)((id - CLPE_KERNEL_ROPE_KV_FP8) / 2);
        clpe_status status = CLPE_SUCCESS;
        pthread_mutex_lock(&shared->build_lock);
        if (!shared->programs[dtype][CLPE_FAMILY_KV_FP8])
            status = build_program(shared, dtype, CLPE_FAMILY_KV_FP8, NULL);
        pthread_mutex_unlock(&shared->build_lock);
        if (status != CLPE_SUCCESS)
            return status;
    }
    cl_program program = kernel_program(shared, id);
    if (!program)
        return CL_INVALID_PROGRAM_EXECUTABLE;
    cl_int err = CL_SUCCESS;
    cl_kernel k = clCreateKernel(program, kernel_names[id], &err);
    if (err != CL_SUCCESS)
        return err;
    *kernel = k;
    return CLPE_SUCCESS;
}

void clpe__kernel_return(clpe_program_shared *shared, clpe_kernel_id id, cl_kernel kernel)
{
    clpe_kernel_pool *pool = &shared->pools[id];
    pthread_mutex_lock(&pool->lock);
    if (pool->count == pool->capacity) {
        size_t cap = pool->capacity ? pool->capacity * 2 : 4;
        cl_kernel *grown = realloc(pool->free_kernels, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&pool->lock);
            clReleaseKernel(kernel); /* cannot keep it: drop it */
            return;
        }
        pool->free_kernels = grown;
        pool->capacity = cap;
    }
    pool->free_kernels[pool->count++] = kernel;
    pthread_mutex_unlock(&pool->lock);
}

void clpe__log_reset(clpe_build_log *log)
{
    if (!log)
        return;
    log->length = 0;
    if (log->buffer && log->capacity)
        log->buffer[0] = '\0';
}

clpe_status clpe__attach_words(clpe_program_shared *shared, const uint64_t *hi, const uint64_t *lo,
                               size_t count, unsigned bits, clpe_program_shared **owner,
                               cl_mem *hi_buf, cl_mem *lo_buf)
{
    clpe_status status =
        clpe__upload_tuning_words(shared->context, hi, lo, count, bits, hi_buf, lo_buf);
    if (status != CLPE_SUCCESS)
        return status;
    clpe__program_retain(shared);
    *owner = shared;
    return CLPE_SUCCESS;
}

void clpe__detach_words(clpe_program_shared *shared, cl_mem hi_buf, cl_mem lo_buf)
{
    if (lo_buf)
        clReleaseMemObject(lo_buf);
    if (hi_buf)
        clReleaseMemObject(hi_buf);
    clpe__program_release(shared);
}

clpe_status clpe__upload_tuning_words(cl_context context, const uint64_t *hi, const uint64_t *lo,
                                      size_t count, unsigned bits, cl_mem *hi_buf,
                                      cl_mem *lo_buf)
{
    cl_int err = CL_SUCCESS;
    *hi_buf = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             count * sizeof *hi, (void *)hi, &err);
    if (err != CL_SUCCESS) {
        *hi_buf = NULL;
        return err;
    }
    /* the low words: 64 bits each for 128-bit words, else 32 (the kernels' uint) */
    size_t lo_size = bits == 128 ? sizeof(cl_ulong) : sizeof(cl_uint);
    void *packed = malloc(count * lo_size);
    if (!packed)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t i = 0; i < count; ++i) {
        if (lo_size == sizeof(cl_ulong))
            ((cl_ulong *)packed)[i] = lo[i];
        else
            ((cl_uint *)packed)[i] = (cl_uint)lo[i];
    }
    *lo_buf = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, count * lo_size,
                             packed, &err);
    free(packed);
    if (err != CL_SUCCESS) {
        *lo_buf = NULL;
        return err;
    }
    return CLPE_SUCCESS;
}
