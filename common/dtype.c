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
    case CLPE_DTYPE_FP8_E4M3: return 1;
    case CLPE_DTYPE_FP8_E5M2: return 1;
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

/* OCP FP8 E4M3FN (bias 7, no infinities, NaN 0x7F/0xFF) and E5M2 (bias 15,
 * IEEE-like): the byte's own value, unscaled. */
static double fp8_to_double(uint8_t b, int mbits, int bias, int e4m3)
{
    int exponent = (b & 0x7F) >> mbits, mantissa = b & ((1 << mbits) - 1);
    int top = (1 << (7 - mbits)) - 1;
    double v;
    if (e4m3 ? (b & 0x7F) == 0x7F : exponent == top && mantissa)
        v = NAN;
    else if (!e4m3 && exponent == top)
        v = INFINITY;
    else if (exponent == 0)
        v = ldexp((double)mantissa, 1 - bias - mbits);
    else
        v = ldexp((double)(mantissa | (1 << mbits)), exponent - bias - mbits);
    return (b & 0x80) ? -v : v;
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
    case CLPE_DTYPE_FP8_E4M3: return fp8_to_double(*(const uint8_t *)p, 3, 7, 1);
    case CLPE_DTYPE_FP8_E5M2: return fp8_to_double(*(const uint8_t *)p, 2, 15, 0);
    }
    return NAN;
}
