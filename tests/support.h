/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support.h - what every test file shares: an OpenCL context and queue on
 * the device CLPE_DEVICE selects (clpe_select_device's rule), and small
 * buffer helpers.
 *
 * Criterion forks each test, so create OpenCL objects inside the test (or
 * its .init fixture), never in the parent process.
 */
#ifndef CLPE_TEST_SUPPORT_H
#define CLPE_TEST_SUPPORT_H

#include <clpe.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct test_cl {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
} test_cl;

/* Whether the platform's name contains `part` ("Portable Computing
 * Language" is PoCL, "Intel(R) OpenCL" Intel's CPU runtime). Inline: the
 * standalone stress build links no test support library. */
static inline bool test_platform_is(cl_platform_id platform, const char *part)
{
    char name[256] = "";
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
    return strstr(name, part) != NULL;
}

/* Fill *t for the selected device (asserts on failure). */
void test_cl_open(test_cl *t);
void test_cl_close(test_cl *t);

/* A buffer of `bytes` bytes, every byte set to `poison`. */
cl_mem test_buffer_poisoned(const test_cl *t, size_t bytes, unsigned char poison);
/* A buffer holding a copy of host[0..bytes). */
cl_mem test_buffer_from(const test_cl *t, const void *host, size_t bytes);
/* Read a whole buffer back (blocking); free() the result. */
void *test_buffer_read(const test_cl *t, cl_mem buf, size_t bytes);

/* An encoder on the test device; asserts success and prints the build log
 * on failure. */
clpe_encoder *test_encoder(const test_cl *t, const clpe_config *cfg);

/* Another encoder on the same program as `like` (clpe_encoder_create_like:
 * no recompilation); asserts success. */
clpe_encoder *test_encoder_like(const clpe_encoder *like, const clpe_config *cfg);

/* clpe_config_default(d) with the given base, convention and layout; every
 * other field (flags, padding_position) set to a known value. */
clpe_config test_config(uint32_t d, double base, clpe_freq freq, clpe_layout layout);

/* Wait for an event, assert it completed without error, release it. */
void test_event_finish(cl_event ev);

/* Deterministic pseudo-random numbers (splitmix64). */
uint64_t test_rand_u64(uint64_t *state);

/* count elements of elem_size bytes of every bit pattern: random bytes,
 * NaNs (signalling and quiet, any payload), infinities, zeros and
 * subnormals included, and at fixed places NaNs with every payload bit
 * set, of both signs, where a rounding that let a NaN round up would carry
 * into the sign and give a zero (random bits hold them at 1 in 65536 for
 * the 16-bit types). */
void test_fill_any_bits(void *data, size_t count, size_t elem_size, uint64_t *rng);

/* Device and host elements of dtype t agree bit for bit, except that where
 * the host (the emulation) has a NaN the device must have a NaN, of any
 * sign and payload: OpenCL leaves those open (PoCL's scalar and vector
 * half conversions already differ there, and GPUs return one canonical NaN
 * from arithmetic). Asserts, naming `what` and the first element that
 * differs. */
void test_expect_same_nan_any(const void *dev, const void *host, size_t count, clpe_dtype t,
                              const char *what);

#endif
