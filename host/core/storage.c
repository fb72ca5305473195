/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storage.c - the elements of each storage type on the host: their size,
 * and values loaded as the kernels' arithmetic type and stored with the
 * storage type's rounding (the correctly rounded conversions OpenCL defines,
 * vstore_half_rte, or that the kernels write out, bfloat16), for every host
 * emulation.
 */
#include "core/core.h"

#include "clpe_phase.h"

#include <math.h>

size_t clpe__dtype_size(clpe_dtype dtype)
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

/* float -> IEEE binary16, round to nearest even, like vstore_half_rte. */
static uint16_t f32_to_f16(float f)
{
    uint32_t u = pe_as_uint_host(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) /* NaN: keep the top payload bits, quiet */
        return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a >= 0x477FF000u) /* rounds to infinity (65520 and up) */
        return (uint16_t)(sign | 0x7C00u);
    if (a >= 0x38800000u) { /* normal half: drop 13 bits, nearest even */
        uint32_t r = a + 0xFFFu + ((a >> 13) & 1u);
        return (uint16_t)(sign | ((r >> 13) - 0x1C000u));
    }
    /* subnormal half (or zero): count units of 2^-24; the scaling is exact
     * and rintf rounds to nearest even; 1024 units is the smallest normal */
    float units = rintf(pe_as_float_host(a) * 16777216.0f);
    return (uint16_t)(sign | (uint16_t)units);
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0) /* zero or subnormal: exact in float */
        return pe_as_float_host(sign) + (sign ? -1.0f : 1.0f) * (float)m * 0x1p-24f;
    if (e == 31)
        return pe_as_float_host(sign | 0x7F800000u | (m << 13));
    return pe_as_float_host(sign | ((e + 112u) << 23) | (m << 13));
}

/* Element k of a row of dtype, as the arithmetic type. */
double clpe__load_elem(clpe_dtype dtype, const void *row, size_t k)
{
    switch (dtype) {
    case CLPE_DTYPE_F32: return ((const float *)row)[k];
    case CLPE_DTYPE_F16: return f16_to_f32(((const uint16_t *)row)[k]);
    case CLPE_DTYPE_BF16: return pe_bf16_to_float(((const uint16_t *)row)[k]);
    case CLPE_DTYPE_F64: return ((const double *)row)[k];
    case CLPE_DTYPE_FP8_E4M3:
    case CLPE_DTYPE_FP8_E5M2: return clpe__fp8_to_float(dtype, ((const uint8_t *)row)[k]);
    }
    return 0;
}

/* Store an arithmetic value (float for the 32- and 16-bit types, so the
 * double holds a float exactly) with the storage type's rounding. */
void clpe__store_elem(clpe_dtype dtype, void *row, size_t k, double v)
{
    switch (dtype) {
    case CLPE_DTYPE_F32: ((float *)row)[k] = (float)v; break;
    case CLPE_DTYPE_F16: ((uint16_t *)row)[k] = f32_to_f16((float)v); break;
    case CLPE_DTYPE_BF16: ((uint16_t *)row)[k] = (uint16_t)pe_float_to_bf16((float)v); break;
    case CLPE_DTYPE_F64: ((double *)row)[k] = v; break;
    case CLPE_DTYPE_FP8_E4M3:
    case CLPE_DTYPE_FP8_E5M2: ((uint8_t *)row)[k] = clpe__fp8_from_float(dtype, (float)v); break;
    }
}

/* x / scale as float32 division rounds it: the quotient in double is
 * exact to 53 bits, and rounding that to float gives the correctly rounded
 * float quotient (53 >= 2 * 24 + 2), whatever the compiler's float
 * evaluation. */
float clpe__fp8_quotient(float x, float scale) { return (float)((double)x / (double)scale); }

/* A float into OCP FP8 (E4M3FN or E5M2): round to nearest even, saturated
 * to the largest finite value (an infinity too), NaN as sign | 0x7F (E4M3)
 * or sign | 0x7E (E5M2), the sign of zero kept. */
uint8_t clpe__fp8_from_float(clpe_dtype fp8, float x)
{
    const bool e4m3 = fp8 == CLPE_DTYPE_FP8_E4M3;
    const int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
    const uint32_t max_code = e4m3 ? 0x7Eu : 0x7Bu, nan_code = e4m3 ? 0x7Fu : 0x7Eu;
    uint32_t u = pe_as_uint_host(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return (uint8_t)(sign | nan_code);
    if (a == 0x7F800000u)
        return (uint8_t)(sign | max_code);
    if (a < 0x00800000u) /* float subnormal or zero: far below FP8's least value */
        return sign;
    int e = (int)(a >> 23) - 127;                /* x = 1.m * 2^e */
    uint32_t m = (a & 0x7FFFFFu) | 0x800000u;    /* 24 bits */
    int emin = 1 - bias;
    int shift = 23 - mbits + (e < emin ? emin - e : 0);
    if (shift > 25)
        shift = 25; /* m >> 25 is 0 and below half: zero */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u)))
        ++q;
    /* a normal's exponent field adds to q's leading bit; a carry moves it up */
    uint32_t code = e >= emin ? ((uint32_t)(e + bias - 1) << mbits) + q : q;
    if (code > max_code)
        code = max_code;
    return (uint8_t)(sign | code);
}

/* An FP8 byte's value (exact in a float). */
float clpe__fp8_to_float(clpe_dtype fp8, uint8_t b)
{
    const bool e4m3 = fp8 == CLPE_DTYPE_FP8_E4M3;
    const int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
    float sign = (b & 0x80u) ? -1.0f : 1.0f;
    uint32_t e = (b & 0x7Fu) >> mbits, m = b & ((1u << mbits) - 1u);
    if (e4m3 ? (b & 0x7Fu) == 0x7Fu : (e == 31 && m))
        return NAN;
    if (!e4m3 && e == 31)
        return sign * INFINITY;
    if (e == 0)
        return sign * ldexpf((float)m, 1 - bias - mbits);
    return sign * ldexpf((float)(m | (1u << mbits)), (int)e - bias - mbits);
}
