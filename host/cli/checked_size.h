/* SPDX-License-Identifier: Apache-2.0 */
/*
 * checked_size.h - size arithmetic that reports overflow instead of
 * wrapping. Every byte count the tool computes from user input goes
 * through these, as every region the library computes goes through its own.
 */
#ifndef CLPE_CLI_CHECKED_SIZE_H
#define CLPE_CLI_CHECKED_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* *out = a * b; returns 1 (and leaves *out alone) if that passes 2^64 - 1. */
static inline int cli_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a)
        return 1;
    *out = a * b;
    return 0;
}

/* *out = a + b; returns 1 (and leaves *out alone) if that passes 2^64 - 1. */
static inline int cli_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (b > UINT64_MAX - a)
        return 1;
    *out = a + b;
    return 0;
}

/* *out = a * b as a size_t; returns 1 if that does not fit (32-bit hosts). */
static inline int cli_mul_size(uint64_t a, uint64_t b, size_t *out)
{
    uint64_t p;
    if (cli_mul_u64(a, b, &p) || p > SIZE_MAX)
        return 1;
    *out = (size_t)p;
    return 0;
}

#endif
