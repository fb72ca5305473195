/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_shim.c - OpenCL fault-injection interposer for clpe's tests.
 *
 * Defines the OpenCL entry points clpe (and its tests) call; each counts the
 * call, may fail on purpose (see fault_shim.h), and otherwise forwards to the
 * real function found with dlsym(RTLD_NEXT). Creations, clRetain* and
 * clRelease* update per-type reference counts so a test can check that clpe
 * gives back every reference it takes, on success and on every failure path.
 *
 * Two ways to use it:
 *  - linked into a test executable (the tests do this): an executable's own
 *    definitions come first in symbol lookup, so libclpe's calls land here
 *    too, and this works under every sanitizer without LD_PRELOAD order
 *    games;
 *  - as libclpe_fault.so with LD_PRELOAD, controlled by the environment:
 *      CLPE_FAULT_FUNC=clCreateKernel  entry point to fail
 *      CLPE_FAULT_N=3                  its 3rd call fails (default 1)
 *      CLPE_FAULT_ERR=-5               with this cl_int (default
 *                                      CL_OUT_OF_RESOURCES)
 *      CLPE_FAULT_EMBEDDED=1           pretend an embedded-profile device
 *      CLPE_FAULT_ALLOC_N=2            the 2nd host allocation fails
 *      CLPE_FAULT_REPORT=1             print the counts to stderr at exit
 *    Programs can also resolve fault_arm() etc. with dlsym. A shim built
 *    without sanitizers replaces malloc, calloc and realloc: preload the one
 *    built with the program's sanitizer, which leaves them alone.
 *
 * Only enqueue functions listed here count the events they create; a test
 * that makes events with other calls must not rely on FAULT_OBJ_EVENT.
 */
#define _GNU_SOURCE
#include "fault_shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHIM_API __attribute__((visibility("default")))

/* ---- state ---------------------------------------------------------------- */

static atomic_long calls[FAULT_FN_COUNT];
static atomic_long live[FAULT_OBJ_COUNT];
static atomic_long injected;
static atomic_int armed_fn = -1;
static atomic_long countdown;
static atomic_int armed_err;
static atomic_int embedded;
static atomic_int no_fp64;

#define FAULT_NAME_(name) #name,
static const char *const fn_names[FAULT_FN_COUNT] = {FAULT_FUNCS(FAULT_NAME_)};
#undef FAULT_NAME_
static const char *const obj_names[FAULT_OBJ_COUNT] = {"context", "queue", "mem",
                                                       "program", "kernel", "event"};

SHIM_API const char *fault_fn_name(fault_fn fn)
{
    return (unsigned)fn < FAULT_FN_COUNT ? fn_names[fn] : "?";
}

SHIM_API int fault_fn_by_name(const char *name)
{
    for (int k = 0; name && k < FAULT_FN_COUNT; ++k)
        if (strcmp(name, fn_names[k]) == 0)
            return k;
    return -1;
}

SHIM_API const char *fault_obj_name(fault_obj obj)
{
    return (unsigned)obj < FAULT_OBJ_COUNT ? obj_names[obj] : "?";
}

SHIM_API void fault_arm(fault_fn fn, long n, cl_int err)
{
    atomic_store(&armed_fn, -1);
    atomic_store(&countdown, n);
    atomic_store(&armed_err, err);
    atomic_store(&armed_fn, (int)fn);
}

SHIM_API void fault_disarm(void) { atomic_store(&armed_fn, -1); }
SHIM_API long fault_injected(void) { return atomic_load(&injected); }
SHIM_API long fault_calls(fault_fn fn) { return atomic_load(&calls[fn]); }
SHIM_API long fault_live(fault_obj obj) { return atomic_load(&live[obj]); }
SHIM_API void fault_set_embedded(int on) { atomic_store(&embedded, on); }
SHIM_API void fault_set_no_fp64(int on) { atomic_store(&no_fp64, on); }

/* Count a call of fn; true (and the error in *err) when it must fail. */
static int should_fail(fault_fn fn, cl_int *err)
{
    atomic_fetch_add(&calls[fn], 1);
    if (atomic_load(&armed_fn) != (int)fn)
        return 0;
    if (atomic_fetch_sub(&countdown, 1) != 1)
        return 0;
    atomic_fetch_add(&injected, 1);
    *err = atomic_load(&armed_err);
    return 1;
}

static void count(fault_obj obj, long delta) { atomic_fetch_add(&live[obj], delta); }

__attribute__((constructor)) static void fault_from_env(void)
{
    const char *fn = getenv("CLPE_FAULT_FUNC");
    if (fn && *fn) {
        int k = fault_fn_by_name(fn);
        if (k < 0) {
            fprintf(stderr, "fault shim: unknown CLPE_FAULT_FUNC %s\n", fn);
            abort();
        }
        const char *n = getenv("CLPE_FAULT_N");
        const char *e = getenv("CLPE_FAULT_ERR");
        fault_arm((fault_fn)k, n && *n ? atol(n) : 1,
                  e && *e ? (cl_int)atoi(e) : CL_OUT_OF_RESOURCES);
    }
    const char *emb = getenv("CLPE_FAULT_EMBEDDED");
    if (emb && *emb && strcmp(emb, "0") != 0)
        fault_set_embedded(1);
    const char *alloc_n = getenv("CLPE_FAULT_ALLOC_N");
    if (alloc_n && *alloc_n)
        fault_arm_alloc(atol(alloc_n));
}

__attribute__((destructor)) static void fault_report(void)
{
    const char *r = getenv("CLPE_FAULT_REPORT");
    if (!r || !*r || strcmp(r, "0") == 0)
        return;
    fprintf(stderr, "fault shim: %ld faults injected; live references:", fault_injected());
    for (int k = 0; k < FAULT_OBJ_COUNT; ++k)
        fprintf(stderr, " %s=%ld", obj_names[k], fault_live((fault_obj)k));
    fprintf(stderr, "\n");
}

/* ---- forwarding ------------------------------------------------------------- */

/* real_NAME(): the next definition of NAME after this one, looked up once. */
#define DEFINE_REAL(name)                                                                      \
    static __typeof__(&name) real_##name(void)                                                 \
    {                                                                                          \
        static _Atomic(__typeof__(&name)) cached;                                              \
        __typeof__(&name) f = atomic_load_explicit(&cached, memory_order_acquire);             \
        if (!f) {                                                                              \
            f = (__typeof__(&name))dlsym(RTLD_NEXT, #name);                                    \
            if (!f) {                                                                          \
                fprintf(stderr, "fault shim: no real %s: %s\n", #name, dlerror());            \
                abort();                                                                       \
            }                                                                                  \
            atomic_store_explicit(&cached, f, memory_order_release);                           \
        }                                                                                      \
        return f;                                                                              \
    }

/* Creation: fail with *errcode_ret and NULL, or forward and count. */
#define CREATE_BODY(name, obj, call)                                                           \
    cl_int injected_err;                                                                       \
    if (should_fail(FAULT_##name, &injected_err)) {                                            \
        if (errcode_ret)                                                                       \
            *errcode_ret = injected_err;                                                       \
        return NULL;                                                                           \
    }                                                                                          \
    cl_int real_err = CL_SUCCESS;                                                              \
    __typeof__(call) result = call;                                                            \
    if (result)                                                                                \
        count(obj, 1);                                                                         \
    if (errcode_ret)                                                                           \
        *errcode_ret = real_err;                                                               \
    return result;

/* An enqueue with an optional out event. */
#define ENQUEUE_BODY(name, call)                                                               \
    cl_int injected_err;                                                                       \
    if (should_fail(FAULT_##name, &injected_err))                                              \
        return injected_err;                                                                   \
    cl_int real_err = call;                                                                    \
    if (real_err == CL_SUCCESS && event)                                                       \
        count(FAULT_OBJ_EVENT, 1);                                                             \
    return real_err;

/* clRetain*: fail, or forward and count one more reference. */
#define RETAIN(name, type, obj)                                                                \
    DEFINE_REAL(name)                                                                          \
    SHIM_API cl_int name(type x)                                                               \
    {                                                                                          \
        cl_int injected_err;                                                                   \
        if (should_fail(FAULT_##name, &injected_err))                                          \
            return injected_err;                                                               \
        cl_int err = real_##name()(x);                                                         \
        if (err == CL_SUCCESS)                                                                 \
            count(obj, 1);                                                                     \
        return err;                                                                            \
    }

/* clRelease*: never fails on purpose; count one reference less. */
#define RELEASE(name, type, obj)                                                               \
    DEFINE_REAL(name)                                                                          \
    SHIM_API cl_int name(type x)                                                               \
    {                                                                                          \
        cl_int err = real_##name()(x);                                                         \
        if (err == CL_SUCCESS)                                                                 \
            count(obj, -1);                                                                    \
        return err;                                                                            \
    }

RETAIN(clRetainContext, cl_context, FAULT_OBJ_CONTEXT)
RETAIN(clRetainProgram, cl_program, FAULT_OBJ_PROGRAM)
RETAIN(clRetainKernel, cl_kernel, FAULT_OBJ_KERNEL)
RETAIN(clRetainMemObject, cl_mem, FAULT_OBJ_MEM)
RETAIN(clRetainEvent, cl_event, FAULT_OBJ_EVENT)
RELEASE(clReleaseContext, cl_context, FAULT_OBJ_CONTEXT)
RELEASE(clReleaseCommandQueue, cl_command_queue, FAULT_OBJ_QUEUE)
RELEASE(clReleaseProgram, cl_program, FAULT_OBJ_PROGRAM)
RELEASE(clReleaseKernel, cl_kernel, FAULT_OBJ_KERNEL)
RELEASE(clReleaseMemObject, cl_mem, FAULT_OBJ_MEM)
RELEASE(clReleaseEvent, cl_event, FAULT_OBJ_EVENT)

DEFINE_REAL(clRetainCommandQueue)
SHIM_API cl_int clRetainCommandQueue(cl_command_queue q)
{
    cl_int err = real_clRetainCommandQueue()(q);
    if (err == CL_SUCCESS)
        count(FAULT_OBJ_QUEUE, 1);
    return err;
}

/* Devices are not counted: root devices ignore retain and release. */
DEFINE_REAL(clRetainDevice)
SHIM_API cl_int clRetainDevice(cl_device_id d)
{
    cl_int injected_err;
    if (should_fail(FAULT_clRetainDevice, &injected_err))
        return injected_err;
    return real_clRetainDevice()(d);
}

DEFINE_REAL(clCreateContext)
SHIM_API cl_context clCreateContext(const cl_context_properties *props, cl_uint n,
                                    const cl_device_id *devices,
                                    void(CL_CALLBACK *notify)(const char *, const void *, size_t,
                                                              void *),
                                    void *user, cl_int *errcode_ret)
{
    cl_int real_err = CL_SUCCESS;
    cl_context c = real_clCreateContext()(props, n, devices, notify, user, &real_err);
    if (c)
        count(FAULT_OBJ_CONTEXT, 1);
    if (errcode_ret)
        *errcode_ret = real_err;
    return c;
}

DEFINE_REAL(clCreateContextFromType)
SHIM_API cl_context clCreateContextFromType(const cl_context_properties *props,
                                            cl_device_type type,
                                            void(CL_CALLBACK *notify)(const char *, const void *,
                                                                      size_t, void *),
                                            void *user, cl_int *errcode_ret)
{
    cl_int real_err = CL_SUCCESS;
    cl_context c = real_clCreateContextFromType()(props, type, notify, user, &real_err);
    if (c)
        count(FAULT_OBJ_CONTEXT, 1);
    if (errcode_ret)
        *errcode_ret = real_err;
    return c;
}

DEFINE_REAL(clCreateCommandQueue)
SHIM_API cl_command_queue clCreateCommandQueue(cl_context ctx, cl_device_id dev,
                                               cl_command_queue_properties props,
                                               cl_int *errcode_ret)
{
    cl_int real_err = CL_SUCCESS;
    cl_command_queue q = real_clCreateCommandQueue()(ctx, dev, props, &real_err);
    if (q)
        count(FAULT_OBJ_QUEUE, 1);
    if (errcode_ret)
        *errcode_ret = real_err;
    return q;
}

DEFINE_REAL(clCreateBuffer)
SHIM_API cl_mem clCreateBuffer(cl_context ctx, cl_mem_flags flags, size_t size, void *host,
                               cl_int *errcode_ret)
{
    CREATE_BODY(clCreateBuffer, FAULT_OBJ_MEM,
                real_clCreateBuffer()(ctx, flags, size, host, &real_err))
}

DEFINE_REAL(clCreateSubBuffer)
SHIM_API cl_mem clCreateSubBuffer(cl_mem buf, cl_mem_flags flags, cl_buffer_create_type type,
                                  const void *info, cl_int *errcode_ret)
{
    CREATE_BODY(clCreateSubBuffer, FAULT_OBJ_MEM,
                real_clCreateSubBuffer()(buf, flags, type, info, &real_err))
}

DEFINE_REAL(clCreateProgramWithSource)
SHIM_API cl_program clCreateProgramWithSource(cl_context ctx, cl_uint count_, const char **strings,
                                              const size_t *lengths, cl_int *errcode_ret)
{
    CREATE_BODY(clCreateProgramWithSource, FAULT_OBJ_PROGRAM,
                real_clCreateProgramWithSource()(ctx, count_, strings, lengths, &real_err))
}

DEFINE_REAL(clCreateProgramWithBinary)
SHIM_API cl_program clCreateProgramWithBinary(cl_context ctx, cl_uint n,
                                              const cl_device_id *devices, const size_t *lengths,
                                              const unsigned char **binaries,
                                              cl_int *binary_status, cl_int *errcode_ret)
{
    CREATE_BODY(clCreateProgramWithBinary, FAULT_OBJ_PROGRAM,
                real_clCreateProgramWithBinary()(ctx, n, devices, lengths, binaries,
                                                 binary_status, &real_err))
}

/* A build failure is made real: the source is broken by a macro that turns
 * the kernel qualifier into an unknown identifier, so the caller gets the
 * device compiler's genuine log (naming FAULT_BUILD_MARKER). Other injected
 * errors return at once. */
#define FAULT_BUILD_MARKER "clpe_fault_injected_build_error"
DEFINE_REAL(clBuildProgram)
SHIM_API cl_int clBuildProgram(cl_program program, cl_uint n, const cl_device_id *devices,
                               const char *options,
                               void(CL_CALLBACK *notify)(cl_program, void *), void *user)
{
    cl_int injected_err;
    if (!should_fail(FAULT_clBuildProgram, &injected_err))
        return real_clBuildProgram()(program, n, devices, options, notify, user);
    if (injected_err != CL_BUILD_PROGRAM_FAILURE)
        return injected_err;
    static const char breaker[] = " -D__kernel=" FAULT_BUILD_MARKER " -Dkernel=" FAULT_BUILD_MARKER;
    size_t len = options ? strlen(options) : 0;
    char *broken = malloc(len + sizeof breaker);
    if (!broken)
        return CL_OUT_OF_HOST_MEMORY;
    memcpy(broken, options ? options : "", len);
    memcpy(broken + len, breaker, sizeof breaker);
    real_clBuildProgram()(program, n, devices, broken, notify, user);
    free(broken);
    return CL_BUILD_PROGRAM_FAILURE;
}

DEFINE_REAL(clGetProgramBuildInfo)
SHIM_API cl_int clGetProgramBuildInfo(cl_program program, cl_device_id device,
                                      cl_program_build_info name, size_t size, void *value,
                                      size_t *size_ret)
{
    cl_int injected_err;
    if (should_fail(FAULT_clGetProgramBuildInfo, &injected_err))
        return injected_err;
    return real_clGetProgramBuildInfo()(program, device, name, size, value, size_ret);
}

DEFINE_REAL(clCreateKernel)
SHIM_API cl_kernel clCreateKernel(cl_program program, const char *name, cl_int *errcode_ret)
{
    CREATE_BODY(clCreateKernel, FAULT_OBJ_KERNEL, real_clCreateKernel()(program, name, &real_err))
}

DEFINE_REAL(clCreateKernelsInProgram)
SHIM_API cl_int clCreateKernelsInProgram(cl_program program, cl_uint n, cl_kernel *kernels,
                                         cl_uint *n_ret)
{
    cl_uint made = 0;
    cl_int err = real_clCreateKernelsInProgram()(program, n, kernels, &made);
    if (err == CL_SUCCESS && kernels)
        count(FAULT_OBJ_KERNEL, (long)made);
    if (n_ret)
        *n_ret = made;
    return err;
}

DEFINE_REAL(clGetKernelWorkGroupInfo)
SHIM_API cl_int clGetKernelWorkGroupInfo(cl_kernel kernel, cl_device_id device,
                                         cl_kernel_work_group_info name, size_t size,
                                         void *value, size_t *size_ret)
{
    cl_int injected_err;
    if (should_fail(FAULT_clGetKernelWorkGroupInfo, &injected_err))
        return injected_err;
    return real_clGetKernelWorkGroupInfo()(kernel, device, name, size, value, size_ret);
}

DEFINE_REAL(clSetKernelArg)
SHIM_API cl_int clSetKernelArg(cl_kernel kernel, cl_uint index, size_t size, const void *value)
{
    cl_int injected_err;
    if (should_fail(FAULT_clSetKernelArg, &injected_err))
        return injected_err;
    return real_clSetKernelArg()(kernel, index, size, value);
}

DEFINE_REAL(clEnqueueNDRangeKernel)
SHIM_API cl_int clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel kernel, cl_uint dim,
                                       const size_t *offset, const size_t *global,
                                       const size_t *local, cl_uint nwait, const cl_event *wait,
                                       cl_event *event)
{
    ENQUEUE_BODY(clEnqueueNDRangeKernel, real_clEnqueueNDRangeKernel()(
                                             q, kernel, dim, offset, global, local, nwait, wait,
                                             event))
}

DEFINE_REAL(clEnqueueMarkerWithWaitList)
SHIM_API cl_int clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint nwait,
                                            const cl_event *wait, cl_event *event)
{
    ENQUEUE_BODY(clEnqueueMarkerWithWaitList,
                 real_clEnqueueMarkerWithWaitList()(q, nwait, wait, event))
}

DEFINE_REAL(clEnqueueBarrierWithWaitList)
SHIM_API cl_int clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint nwait,
                                             const cl_event *wait, cl_event *event)
{
    ENQUEUE_BODY(clEnqueueBarrierWithWaitList,
                 real_clEnqueueBarrierWithWaitList()(q, nwait, wait, event))
}

DEFINE_REAL(clEnqueueFillBuffer)
SHIM_API cl_int clEnqueueFillBuffer(cl_command_queue q, cl_mem buf, const void *pattern,
                                    size_t pattern_size, size_t offset, size_t size,
                                    cl_uint nwait, const cl_event *wait, cl_event *event)
{
    ENQUEUE_BODY(clEnqueueFillBuffer, real_clEnqueueFillBuffer()(q, buf, pattern, pattern_size,
                                                                  offset, size, nwait, wait,
                                                                  event))
}

DEFINE_REAL(clEnqueueWriteBuffer)
SHIM_API cl_int clEnqueueWriteBuffer(cl_command_queue q, cl_mem buf, cl_bool blocking,
                                     size_t offset, size_t size, const void *ptr, cl_uint nwait,
                                     const cl_event *wait, cl_event *event)
{
    ENQUEUE_BODY(clEnqueueWriteBuffer, real_clEnqueueWriteBuffer()(q, buf, blocking, offset, size,
                                                                    ptr, nwait, wait, event))
}

DEFINE_REAL(clEnqueueReadBuffer)
SHIM_API cl_int clEnqueueReadBuffer(cl_command_queue q, cl_mem buf, cl_bool blocking,
                                    size_t offset, size_t size, void *ptr, cl_uint nwait,
                                    const cl_event *wait, cl_event *event)
{
    ENQUEUE_BODY(clEnqueueReadBuffer, real_clEnqueueReadBuffer()(q, buf, blocking, offset, size,
                                                                  ptr, nwait, wait, event))
}

DEFINE_REAL(clEnqueueCopyBuffer)
SHIM_API cl_int clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t src_off,
                                    size_t dst_off, size_t size, cl_uint nwait,
                                    const cl_event *wait, cl_event *event)
{
    ENQUEUE_BODY(clEnqueueCopyBuffer, real_clEnqueueCopyBuffer()(q, src, dst, src_off, dst_off,
                                                                  size, nwait, wait, event))
}

DEFINE_REAL(clCreateUserEvent)
SHIM_API cl_event clCreateUserEvent(cl_context ctx, cl_int *errcode_ret)
{
    CREATE_BODY(clCreateUserEvent, FAULT_OBJ_EVENT, real_clCreateUserEvent()(ctx, &real_err))
}

DEFINE_REAL(clGetMemObjectInfo)
SHIM_API cl_int clGetMemObjectInfo(cl_mem mem, cl_mem_info name, size_t size, void *value,
                                   size_t *size_ret)
{
    cl_int injected_err;
    if (should_fail(FAULT_clGetMemObjectInfo, &injected_err))
        return injected_err;
    return real_clGetMemObjectInfo()(mem, name, size, value, size_ret);
}

DEFINE_REAL(clGetCommandQueueInfo)
SHIM_API cl_int clGetCommandQueueInfo(cl_command_queue q, cl_command_queue_info name, size_t size,
                                      void *value, size_t *size_ret)
{
    cl_int injected_err;
    if (should_fail(FAULT_clGetCommandQueueInfo, &injected_err))
        return injected_err;
    return real_clGetCommandQueueInfo()(q, name, size, value, size_ret);
}

/* Answer a string query with `text` the way OpenCL does. */
static cl_int string_answer(const char *text, size_t size, void *value, size_t *size_ret)
{
    size_t need = strlen(text) + 1;
    if (size_ret)
        *size_ret = need;
    if (value) {
        if (size < need)
            return CL_INVALID_VALUE;
        memcpy(value, text, need);
    }
    return CL_SUCCESS;
}

DEFINE_REAL(clGetDeviceInfo)

/* The real extension list without cles_khr_int64. */
static cl_int embedded_extensions(cl_device_id dev, size_t size, void *value, size_t *size_ret)
{
    size_t real_size = 0;
    cl_int err = real_clGetDeviceInfo()(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &real_size);
    if (err != CL_SUCCESS)
        return err;
    char *text = calloc(real_size + 1, 1);
    if (!text)
        return CL_OUT_OF_HOST_MEMORY;
    err = real_clGetDeviceInfo()(dev, CL_DEVICE_EXTENSIONS, real_size, text, NULL);
    if (err == CL_SUCCESS) {
        static const char drop[] = "cles_khr_int64";
        char *hit;
        while ((hit = strstr(text, drop)) != NULL)
            memmove(hit, hit + sizeof drop - 1, strlen(hit + sizeof drop - 1) + 1);
        err = string_answer(text, size, value, size_ret);
    }
    free(text);
    return err;
}

SHIM_API cl_int clGetDeviceInfo(cl_device_id dev, cl_device_info name, size_t size, void *value,
                                size_t *size_ret)
{
    cl_int injected_err;
    if (should_fail(FAULT_clGetDeviceInfo, &injected_err))
        return injected_err;
    if (atomic_load(&no_fp64) && name == CL_DEVICE_DOUBLE_FP_CONFIG) {
        cl_device_fp_config none = 0;
        if (value && size < sizeof none)
            return CL_INVALID_VALUE;
        if (value)
            memcpy(value, &none, sizeof none);
        if (size_ret)
            *size_ret = sizeof none;
        return CL_SUCCESS;
    }
    if (atomic_load(&embedded)) {
        if (name == CL_DEVICE_PROFILE)
            return string_answer("EMBEDDED_PROFILE", size, value, size_ret);
        if (name == CL_DEVICE_EXTENSIONS)
            return embedded_extensions(dev, size, value, size_ret);
    }
    return real_clGetDeviceInfo()(dev, name, size, value, size_ret);
}

/* ---- host allocations --------------------------------------------------------- */

/* ASan and TSan define malloc themselves and track every block; a second
 * definition here would hand them blocks they never saw. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FAULT_NO_ALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                    \
    __has_feature(memory_sanitizer)
#define FAULT_NO_ALLOC 1
#endif
#endif

static atomic_long alloc_countdown; /* 0: disarmed */
static atomic_long alloc_failed;

SHIM_API void fault_arm_alloc(long n) { atomic_store(&alloc_countdown, n > 0 ? n : 0); }
SHIM_API void fault_disarm_alloc(void) { atomic_store(&alloc_countdown, 0); }
SHIM_API long fault_alloc_failed(void) { return atomic_load(&alloc_failed); }

#ifdef FAULT_NO_ALLOC
SHIM_API int fault_alloc_available(void) { return 0; }
#else
SHIM_API int fault_alloc_available(void) { return 1; }

/* glibc's allocator under its own names: forwarding there needs no dlsym,
 * which itself allocates. free stays glibc's, the same heap. */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);

/* True when this allocation must fail: the armed count reached 1 now. */
static int alloc_should_fail(void)
{
    long left = atomic_load(&alloc_countdown);
    while (left > 0) {
        if (atomic_compare_exchange_weak(&alloc_countdown, &left, left - 1)) {
            if (left != 1)
                return 0;
            atomic_fetch_add(&alloc_failed, 1);
            errno = ENOMEM;
            return 1;
        }
    }
    return 0;
}

SHIM_API void *malloc(size_t size) { return alloc_should_fail() ? NULL : __libc_malloc(size); }

SHIM_API void *calloc(size_t count, size_t size)
{
    return alloc_should_fail() ? NULL : __libc_calloc(count, size);
}

SHIM_API void *realloc(void *ptr, size_t size)
{
    return alloc_should_fail() ? NULL : __libc_realloc(ptr, size);
}
#endif
