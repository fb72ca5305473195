/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consumer.c - a program outside the clpe source tree that uses only the
 * installed header and library: proves the install, the CMake package and
 * the pkg-config file give a working build.
 *
 * It prints the host emulation's d = 4 row at position 2 (the seed's worked
 * example), checks it against the seed's digits, and, if an OpenCL device
 * exists, names the one clpe_select_device picks. Exit status 0 means fine.
 */
#include <clpe.h>

/* A consumer that chose its own OpenCL version keeps it: clpe.h sets
 * CL_TARGET_OPENCL_VERSION only where the includer has not. */
#if defined(CONSUMER_OPENCL_VERSION) && CL_TARGET_OPENCL_VERSION != CONSUMER_OPENCL_VERSION
#error "clpe overrode the consumer's CL_TARGET_OPENCL_VERSION"
#endif

#include <math.h>
#include <stdio.h>

int main(void)
{
    printf("clpe %s (header %s)\n", clpe_version_string(), CLPE_VERSION_STRING);
    if (clpe_version() != CLPE_VERSION_NUMBER) {
        fprintf(stderr, "consumer: library version %u, header %u\n", clpe_version(),
                (unsigned)CLPE_VERSION_NUMBER);
        return 1;
    }

    clpe_config cfg = clpe_config_default(4);
    cfg.flags = 0;
    cfg.padding_position = 0;
    clpe_status st;
    clpe_encoder *enc = clpe_encoder_create_host(&cfg, &st);
    if (!enc) {
        fprintf(stderr, "consumer: clpe_encoder_create_host: %s\n", clpe_status_string(st));
        return 1;
    }
    float row[4];
    st = clpe_host_table(enc, 2, 1, row, 0);
    clpe_encoder_release(enc);
    if (st != CLPE_SUCCESS) {
        fprintf(stderr, "consumer: clpe_host_table: %s\n", clpe_status_string(st));
        return 1;
    }
    printf("PE(2), d=4: %.4f %.4f %.4f %.4f\n", row[0], row[1], row[2], row[3]);
    const double seed[4] = {0.9093, -0.4161, 0.0200, 0.9998};
    for (int k = 0; k < 4; ++k) {
        if (fabs(row[k] - seed[k]) > 0.5e-4 + 1e-6) {
            fprintf(stderr, "consumer: slot %d is %.6f, the seed says %.4f\n", k, row[k], seed[k]);
            return 1;
        }
    }

    cl_platform_id platform;
    cl_device_id device;
    st = clpe_select_device(NULL, &platform, &device);
    if (st == CLPE_SUCCESS) {
        char name[256] = "";
        clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL);
        printf("device: %s\n", name);
    } else {
        printf("device: none (%s)\n", clpe_status_string(st));
    }
    return 0;
}
