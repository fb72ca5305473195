/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dtype.h - storage types as the clients of libclpe (the clpe tool, the
 * benchmark, the tests) read them: the size of an element and its value.
 * The library keeps its own internal copy; these are for programs that only
 * see clpe.h.
 */
#ifndef CLPE_COMMON_DTYPE_H
#define CLPE_COMMON_DTYPE_H

#include <stddef.h>

/* Bytes of one element of a clpe_dtype value; 0 for an unknown one. */
size_t dtype_size(int dtype);

/* The element of dtype stored at p (little-endian, as every buffer clpe
 * writes on such hosts), as a double. Exact for every type: f16, bf16 and
 * FP8 (its byte's own value, without the cache's scale) decoded bit by bit,
 * subnormals, infinities and NaN included. NaN for an unknown dtype. */
double dtype_to_double(const void *p, int dtype);

#endif
