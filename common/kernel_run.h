/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernel_run.h - a client's own OpenCL program, built and run: the kernels
 * that `clpe check` and the tests write around clpe_device.h (the text an
 * engine puts before its own kernels), and the probes the tests compile.
 * The library launches its kernels through its own table (host/device/
 * launch.c); this is the clients' one place to do the same for theirs.
 */
#ifndef CLPE_COMMON_KERNEL_RUN_H
#define CLPE_COMMON_KERNEL_RUN_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stddef.h>

/* One kernel argument, as clSetKernelArg takes it. */
typedef struct kernel_arg {
    size_t size;
    const void *value;
} kernel_arg;

/* The argument holding *object, sized by its type: KERNEL_ARG(buffer),
 * KERNEL_ARG(head_dim). */
#define KERNEL_ARG(object) ((kernel_arg){sizeof(object), &(object)})

/* Build count sources as one program with options. On failure returns NULL
 * with the error in *err and the first cap - 1 bytes of the build log in
 * log (NUL-terminated; log may be NULL). */
cl_program kernel_program_build(cl_context context, cl_device_id device, cl_uint count,
                                const char *const *sources, const char *options, char *log,
                                size_t cap, cl_int *err);

/* Set a kernel's arguments 0 .. nargs - 1 from a table; the first OpenCL
 * error, or CL_SUCCESS. */
cl_int kernel_set_args(cl_kernel kernel, size_t nargs, const kernel_arg *args);

/* Run kernel name of program over global[0..dims) work-items with nargs
 * arguments, and wait for it. Returns the first OpenCL error, or
 * CL_SUCCESS; the kernel object is released either way. */
cl_int kernel_run(cl_command_queue queue, cl_program program, const char *name, cl_uint dims,
                  const size_t *global, size_t nargs, const kernel_arg *args);

#endif
