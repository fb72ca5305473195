/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_shim.h - control of the OpenCL fault-injection interposer
 * (fault_shim.c), for tests.
 *
 * The interposer defines the OpenCL entry points clpe uses and forwards each
 * to the real one (dlsym(RTLD_NEXT)). Tests link it into their executable,
 * which then wins symbol lookup over libOpenCL for libclpe's calls too; the
 * same file also builds as libclpe_fault.so for LD_PRELOAD onto any
 * program (controlled by the environment, see fault_shim.c).
 *
 * It can
 *  - make the N-th call (counted from fault_arm) of one entry point fail with
 *    a chosen cl_int, without calling the real function (a failed
 *    clBuildProgram with CL_BUILD_PROGRAM_FAILURE really builds, with source
 *    broken by a macro, so the device's log is genuine);
 *  - count calls per entry point, and live objects per type (creations and
 *    clRetain* minus clRelease*), so tests can check that every reference
 *    clpe takes is given back;
 *  - make clGetDeviceInfo describe an embedded-profile device without
 *    cles_khr_int64;
 *  - make the N-th host allocation (malloc, calloc or realloc) fail, in
 *    builds without ASan or TSan (their runtimes own the allocator).
 */
#ifndef CLPE_FAULT_SHIM_H
#define CLPE_FAULT_SHIM_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

/* Entry points that can be made to fail. */
#define FAULT_FUNCS(X)                                                                         \
    X(clCreateBuffer)                                                                          \
    X(clCreateSubBuffer)                                                                       \
    X(clCreateProgramWithSource)                                                               \
    X(clCreateProgramWithBinary)                                                               \
    X(clBuildProgram)                                                                          \
    X(clGetProgramBuildInfo)                                                                   \
    X(clCreateKernel)                                                                          \
    X(clGetKernelWorkGroupInfo)                                                                \
    X(clSetKernelArg)                                                                          \
    X(clEnqueueNDRangeKernel)                                                                  \
    X(clEnqueueMarkerWithWaitList)                                                             \
    X(clEnqueueBarrierWithWaitList)                                                            \
    X(clEnqueueFillBuffer)                                                                     \
    X(clEnqueueWriteBuffer)                                                                    \
    X(clEnqueueReadBuffer)                                                                     \
    X(clEnqueueCopyBuffer)                                                                     \
    X(clCreateUserEvent)                                                                       \
    X(clGetDeviceInfo)                                                                         \
    X(clGetMemObjectInfo)                                                                      \
    X(clGetCommandQueueInfo)                                                                   \
    X(clRetainContext)                                                                         \
    X(clRetainDevice)                                                                          \
    X(clRetainProgram)                                                                         \
    X(clRetainKernel)                                                                          \
    X(clRetainMemObject)                                                                       \
    X(clRetainEvent)

#define FAULT_ENUM_(name) FAULT_##name,
typedef enum fault_fn { FAULT_FUNCS(FAULT_ENUM_) FAULT_FN_COUNT } fault_fn;
#undef FAULT_ENUM_

/* Object types whose references are counted. */
typedef enum fault_obj {
    FAULT_OBJ_CONTEXT,
    FAULT_OBJ_QUEUE,
    FAULT_OBJ_MEM,
    FAULT_OBJ_PROGRAM,
    FAULT_OBJ_KERNEL,
    FAULT_OBJ_EVENT,
    FAULT_OBJ_COUNT
} fault_obj;

/* Name of an entry point, and back (-1 when unknown). */
const char *fault_fn_name(fault_fn fn);
int fault_fn_by_name(const char *name);
const char *fault_obj_name(fault_obj obj);

/* The n-th call (n >= 1) of fn from now fails with err; every other call
 * goes through. Replaces any earlier arming. */
void fault_arm(fault_fn fn, long n, cl_int err);
void fault_disarm(void);
/* Faults injected since the process started. */
long fault_injected(void);
/* Calls of fn since the process started (injected failures included). */
long fault_calls(fault_fn fn);
/* References of one type held now: creations + retains - releases, counted
 * over every call that went through this shim. */
long fault_live(fault_obj obj);
/* Non-zero: clGetDeviceInfo reports EMBEDDED_PROFILE and no cles_khr_int64. */
void fault_set_embedded(int on);
/* Non-zero: clGetDeviceInfo reports no double precision (a device without
 * cl_khr_fp64). */
void fault_set_no_fp64(int on);

/* Host allocations. Non-zero when this build can fail them: the shim then
 * defines malloc, calloc and realloc, forwarding to the C library's own
 * allocator. Under ASan or TSan it defines none and this returns 0. */
int fault_alloc_available(void);
/* The n-th allocation (n >= 1) from now returns NULL with errno ENOMEM; the
 * rest go through. Replaces any earlier allocation arming. */
void fault_arm_alloc(long n);
void fault_disarm_alloc(void);
/* Allocations failed on purpose since the process started. */
long fault_alloc_failed(void);

#endif
