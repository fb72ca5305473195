/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernel_run.c - build a client's program, and set and run its kernels
 * with their arguments given as a table (kernel_run.h).
 */
#include "kernel_run.h"

cl_program kernel_program_build(cl_context context, cl_device_id device, cl_uint count,
                                const char *const *sources, const char *options, char *log,
                                size_t cap, cl_int *err)
{
    if (log && cap)
        log[0] = '\0';
    cl_program program = clCreateProgramWithSource(context, count, (const char **)sources, NULL,
                                                   err);
    if (!program)
        return NULL;
    *err = clBuildProgram(program, 1, &device, options, NULL, NULL);
    if (*err == CL_SUCCESS)
        return program;
    if (log && cap > 1) {
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, cap - 1, log, NULL);
        log[cap - 1] = '\0';
    }
    clReleaseProgram(program);
    return NULL;
}

cl_int kernel_set_args(cl_kernel kernel, size_t nargs, const kernel_arg *args)
{
    cl_int err = CL_SUCCESS;
    for (size_t a = 0; err == CL_SUCCESS && a < nargs; ++a)
        err = clSetKernelArg(kernel, (cl_uint)a, args[a].size, args[a].value);
    return err;
}

cl_int kernel_run(cl_command_queue queue, cl_program program, const char *name, cl_uint dims,
                  const size_t *global, size_t nargs, const kernel_arg *args)
{
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(program, name, &err);
    if (!kernel)
        return err;
    err = kernel_set_args(kernel, nargs, args);
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(queue, kernel, dims, NULL, global, NULL, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(queue);
    clReleaseKernel(kernel);
    return err;
}
