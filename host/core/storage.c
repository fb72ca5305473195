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
    }
}
