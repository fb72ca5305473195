/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_common.c - the functions the tool, the benchmark and the tests share
 * (common/): element sizes, element values decoded from bit patterns whose
 * meaning the IEEE 754 and bfloat16 formats fix, JSON string escaping, and
 * the pseudo-random stream's published first value.
 */
#include "common/dtype.h"
#include "common/json.h"
#include "common/random.h"

#include <clpe.h>

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(common, dtype_sizes)
{
    cr_expect_eq(dtype_size(CLPE_DTYPE_F32), 4);
    cr_expect_eq(dtype_size(CLPE_DTYPE_F16), 2);
    cr_expect_eq(dtype_size(CLPE_DTYPE_BF16), 2);
    cr_expect_eq(dtype_size(CLPE_DTYPE_F64), 8);
    cr_expect_eq(dtype_size(CLPE_DTYPE_FP8_E4M3), 1);
    cr_expect_eq(dtype_size(CLPE_DTYPE_FP8_E5M2), 1);
    cr_expect_eq(dtype_size(6), 0);
    cr_expect_eq(dtype_size(-1), 0);
}

static double fp8(uint8_t bits, int dtype) { return dtype_to_double(&bits, dtype); }

Test(common, fp8_values)
{
    const int e4m3 = CLPE_DTYPE_FP8_E4M3, e5m2 = CLPE_DTYPE_FP8_E5M2;
    cr_expect_eq(fp8(0x38, e4m3), 1.0);
    cr_expect_eq(fp8(0x7E, e4m3), 448.0);       /* largest finite */
    cr_expect_eq(fp8(0xFE, e4m3), -448.0);
    cr_expect_eq(fp8(0x08, e4m3), 0x1p-6);      /* smallest normal */
    cr_expect_eq(fp8(0x01, e4m3), 0x1p-9);      /* smallest subnormal */
    cr_expect(isnan(fp8(0x7F, e4m3)) && isnan(fp8(0xFF, e4m3)));
    cr_expect(fp8(0x80, e4m3) == 0.0 && signbit(fp8(0x80, e4m3)));
    cr_expect_eq(fp8(0x3C, e5m2), 1.0);
    cr_expect_eq(fp8(0x7B, e5m2), 57344.0);     /* largest finite */
    cr_expect_eq(fp8(0x01, e5m2), 0x1p-16);     /* smallest subnormal */
    cr_expect(isinf(fp8(0x7C, e5m2)) && fp8(0xFC, e5m2) < 0);
    cr_expect(isnan(fp8(0x7E, e5m2)) && isnan(fp8(0x7D, e5m2)));
}

static double f16(uint16_t bits) { return dtype_to_double(&bits, CLPE_DTYPE_F16); }
static double bf16(uint16_t bits) { return dtype_to_double(&bits, CLPE_DTYPE_BF16); }

Test(common, f16_values)
{
    cr_expect_eq(f16(0x3C00), 1.0);
    cr_expect_eq(f16(0xC000), -2.0);
    cr_expect_eq(f16(0x3555), 0x1.554p-2);     /* 0.333251953125 */
    cr_expect_eq(f16(0x7BFF), 65504.0);        /* largest finite */
    cr_expect_eq(f16(0x0400), 0x1p-14);        /* smallest normal */
    cr_expect_eq(f16(0x0001), 0x1p-24);        /* smallest subnormal */
    cr_expect_eq(f16(0x03FF), 0x3FFp-24);      /* largest subnormal */
    cr_expect_eq(f16(0x8001), -0x1p-24);
    cr_expect(f16(0x0000) == 0.0 && !signbit(f16(0x0000)));
    cr_expect(f16(0x8000) == 0.0 && signbit(f16(0x8000)));
    cr_expect(isinf(f16(0x7C00)) && f16(0x7C00) > 0);
    cr_expect(isinf(f16(0xFC00)) && f16(0xFC00) < 0);
    cr_expect(isnan(f16(0x7E00)));
    cr_expect(isnan(f16(0x7C01)));
}

Test(common, bf16_f32_f64_values)
{
    cr_expect_eq(bf16(0x3F80), 1.0);
    cr_expect_eq(bf16(0xC040), -3.0);
    cr_expect_eq(bf16(0x0001), 0x1p-133);      /* smallest subnormal */
    cr_expect(isinf(bf16(0x7F80)));
    cr_expect(isnan(bf16(0x7FC0)));
    const unsigned char f32_bits[4] = {0x00, 0x00, 0xC0, 0x3F}; /* 1.5, little-endian */
    cr_expect_eq(dtype_to_double(f32_bits, CLPE_DTYPE_F32), 1.5);
    const unsigned char f64_bits[8] = {0, 0, 0, 0, 0, 0, 0xF0, 0xBF}; /* -1.0 */
    cr_expect_eq(dtype_to_double(f64_bits, CLPE_DTYPE_F64), -1.0);
    cr_expect(isnan(dtype_to_double(f64_bits, 9)), "unknown dtype");
}

Test(common, json_string_escapes)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert(f);
    json_string(f, "a\"b\\c\n\x01\t\xc3\xa9");
    fclose(f);
    cr_expect_str_eq(text, "\"a\\\"b\\\\c\\u000a\\u0001\\u0009\xc3\xa9\"");
    free(text);
}

Test(common, splitmix64_stream)
{
    uint64_t state = 0;
    cr_expect_eq(splitmix64(&state), UINT64_C(0xE220A8397B1DCDAF)); /* the published first value */
    cr_expect_eq(state, UINT64_C(0x9E3779B97F4A7C15));
}
