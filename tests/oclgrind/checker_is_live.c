/* SPDX-License-Identifier: Apache-2.0 */
/*
 * checker_is_live.c - two deliberately broken kernels, to prove that the
 * Oclgrind checkers tests/oclgrind/run.sh relies on are on: a clean report
 * for clpe's kernels means something only if these are flagged.
 *
 *   checker_is_live out-of-bounds   each work-item writes one element
 *                                   further on: the last writes past the end
 *   checker_is_live data-race       every work-item writes its own id to the
 *                                   same element
 *
 * Exits 0 once the kernel ran (the verdict is Oclgrind's, read by run.sh);
 * 2 if it could not run.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdio.h>
#include <string.h>

static const char *source =
    "kernel void past_end(global int *p) { p[get_global_id(0) + 1] = 1; }\n"
    "kernel void same_slot(global int *p) { p[0] = (int)get_global_id(0); }\n";

int main(int argc, char **argv)
{
    const char *kernel_name = NULL;
    if (argc == 2 && strcmp(argv[1], "out-of-bounds") == 0)
        kernel_name = "past_end";
    else if (argc == 2 && strcmp(argv[1], "data-race") == 0)
        kernel_name = "same_slot";
    if (!kernel_name) {
        fprintf(stderr, "usage: checker_is_live out-of-bounds|data-race\n");
        return 2;
    }
    enum { ITEMS = 4 };
    cl_platform_id platform;
    cl_device_id device;
    cl_int err = clGetPlatformIDs(1, &platform, NULL);
    if (err == CL_SUCCESS)
        err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL);
    cl_context context = NULL;
    if (err == CL_SUCCESS)
        context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue queue = NULL;
    if (err == CL_SUCCESS)
        queue = clCreateCommandQueue(context, device, 0, &err);
    cl_program program = NULL;
    if (err == CL_SUCCESS)
        program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    if (err == CL_SUCCESS)
        err = clBuildProgram(program, 1, &device, "", NULL, NULL);
    cl_kernel kernel = NULL;
    if (err == CL_SUCCESS)
        kernel = clCreateKernel(program, kernel_name, &err);
    cl_mem buf = NULL;
    int zeros[ITEMS] = {0};
    if (err == CL_SUCCESS)
        buf = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros, zeros,
                             &err);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kernel, 0, sizeof buf, &buf);
    const size_t global = ITEMS, local = ITEMS;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, &local, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(queue);
    if (buf)
        clReleaseMemObject(buf);
    if (kernel)
        clReleaseKernel(kernel);
    if (program)
        clReleaseProgram(program);
    if (queue)
        clReleaseCommandQueue(queue);
    if (context)
        clReleaseContext(context);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "checker_is_live: OpenCL error %d\n", err);
        return 2;
    }
    return 0;
}
