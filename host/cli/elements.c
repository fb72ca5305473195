/*
 * elements.c - one element of any clpe dtype as a double, for printing and
 * plotting (f16 and bf16 decoded exactly).
 */
#include "cli.h"

#include <math.h>
#include <string.h>

static double half_to_double(uint16_t h)
{
    int sign = h >> 15;
    int exp = (h >> 10) & 0x1F;
    int mant = h & 0x3FF;
    double v;
    if (exp == 0)
        v = ldexp((double)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexp((double)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

double cli_elem_to_double(const void *p, int dtype)
{
    switch (dtype) {
    case CLPE_DTYPE_F32: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case CLPE_DTYPE_F16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return half_to_double(h);
    }
    case CLPE_DTYPE_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case CLPE_DTYPE_F64: {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    }
    return NAN;
}
