/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device.c - opening the device a command runs on: selection through the
 * library, a context and an in-order queue, and which element types it
 * runs (see cli.h).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

void cli_device_string(cl_device_id dev, cl_device_info what, char *buf, size_t cap)
{
    if (cap == 0)
        return;
    buf[0] = '\0';
    if (clGetDeviceInfo(dev, what, cap, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[cap - 1] = '\0';
    /* Some drivers pad names with spaces. */
    size_t n = strlen(buf);
    while (n && buf[n - 1] == ' ')
        buf[--n] = '\0';
}

int cli_device_open_id(cl_platform_id platform, cl_device_id device, cli_device *dev)
{
    memset(dev, 0, sizeof *dev);
    dev->platform = platform;
    dev->device = device;
    cli_device_string(device, CL_DEVICE_NAME, dev->name, sizeof dev->name);
    if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof dev->platform_name,
                          dev->platform_name, NULL) != CL_SUCCESS)
        dev->platform_name[0] = '\0';
    dev->platform_name[sizeof dev->platform_name - 1] = '\0';

    cl_int err = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    dev->context = clCreateContext(props, 1, &device, NULL, NULL, &err);
    if (!dev->context) {
        cli_status_error("cannot create an OpenCL context", err);
        return CLI_EXIT_RUNTIME;
    }
    dev->queue = clCreateCommandQueue(dev->context, device, 0, &err);
    if (!dev->queue) {
        cli_status_error("cannot create an OpenCL command queue", err);
        clReleaseContext(dev->context);
        dev->context = NULL;
        return CLI_EXIT_RUNTIME;
    }
    return CLI_EXIT_OK;
}

int cli_device_open(const char *selector, cli_device *dev)
{
    cl_platform_id platform = NULL;
    cl_device_id device = NULL;
    memset(dev, 0, sizeof *dev);
    clpe_status st = clpe_select_device(selector, &platform, &device);
    if (st == CLPE_ERROR_NO_DEVICE) {
        const char *env = getenv("CLPE_DEVICE");
        if (selector && *selector)
            cli_error("--device '%s' matches no OpenCL device (see 'clpe devices')", selector);
        else if (env && *env)
            cli_error("CLPE_DEVICE='%s' matches no OpenCL device (see 'clpe devices')", env);
        else
            cli_error("no OpenCL device found (is an OpenCL driver such as PoCL installed?)");
        return CLI_EXIT_RUNTIME;
    }
    if (st != CLPE_SUCCESS) {
        cli_status_error("cannot list OpenCL devices", st);
        return CLI_EXIT_RUNTIME;
    }
    return cli_device_open_id(platform, device, dev);
}

void cli_device_close(cli_device *dev)
{
    if (dev->queue)
        clReleaseCommandQueue(dev->queue);
    if (dev->context)
        clReleaseContext(dev->context);
    dev->queue = NULL;
    dev->context = NULL;
}

/* Test-only: is dtype listed in CLPE_CLI_HIDE_DTYPES? */
static int dtype_hidden(int dtype)
{
    const char *list = getenv("CLPE_CLI_HIDE_DTYPES");
    if (!list || !*list)
        return 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (cli_dtype_from_name(tok) == dtype)
            return 1;
    return 0;
}

int cli_device_supports(cl_device_id dev, int dtype)
{
    if (dtype_hidden(dtype))
        return 0;
    return clpe_device_supports_dtype(dev, (clpe_dtype)dtype) != 0;
}
