/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dtype.c - element sizes and values of the storage types (see dtype.h).
 */
#include "common/dtype.h"

#include <clpe.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

size_t dtype_size(int dtype)
{
    switch (dtype) {
    case CLPE_DTYPE_F32: return 4;
    case CLPE_DTYPE_F16: return 2;
    case CLPE_DTYPE_BF16: return 2;
    case CLPE_DTYPE_F64: return 8;
    }
    return 0;
}

/* IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
static double half_to_double(uint16_t h)
{
    int exponent = (h >> 10) & 0x1F;
    int mantissa = h & 0x3FF;
    double v;
    if (exponent == 0)
        v = ldexp((double)mantissa, -24); /* subnormal: mantissa * 2^-24 */
    else if (exponent == 31)
        v = mantissa ? NAN : INFINITY;
    else
        v = ldexp((double)(mantissa | 0x400), exponent - 25);
    return (h & 0x8000) ? -v : v;
}

double dtype_to_double(const void *p, int dtype)
{
    switch (dtype) {
    case CLPE_DTYPE_F32: {
        float f;
        memcpy(&f, p, sizeof f);
        return f;
    }
    case CLPE_DTYPE_F16: {
        uint16_t h;
        memcpy(&h, p, sizeof h);
        return half_to_double(h);
    }
    case CLPE_DTYPE_BF16: { /* the top half of a float32 */
        uint16_t h;
        memcpy(&h, p, sizeof h);
        uint32_t bits = (uint32_t)h << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    case CLPE_DTYPE_F64: {
        double v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    }
    return NAN;
}
