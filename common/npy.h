/* SPDX-License-Identifier: Apache-2.0 */
/*
 * npy.h - the NumPy .npy format, version 1.0, for 2-D C-order arrays.
 *
 * Only what clpe writes: a little-endian header dictionary followed by the
 * raw elements. bf16 has no NumPy dtype, so it is stored as '<u2' holding
 * the raw bfloat16 bits (view them with np.uint32(a) << 16 as float32).
 * Pure functions on memory and stdio: no OpenCL and no global state.
 */
#ifndef CLPE_CLI_NPY_H
#define CLPE_CLI_NPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A header is padded so the data starts on a multiple of 64 bytes; a 2-D
 * header never needs more than this. */
#define NPY_HEADER_MAX 256

/* The .npy descr of a clpe dtype: "<f4", "<f2", "<u2" (bf16), "<f8";
 * NULL for an unknown dtype. */
const char *npy_descr_for_dtype(int dtype);

/* Build the header (magic, version, length, dictionary, padding, newline)
 * for a C-order array of shape (rows, cols) into buf. Returns its length in
 * bytes (a multiple of 64), or 0 if descr is bad or cap is too small. */
size_t npy_header(char *buf, size_t cap, const char *descr, uint64_t rows, uint64_t cols);

/* What a header says. */
typedef struct npy_info {
    char descr[16];
    int fortran_order;
    int ndim;
    uint64_t shape[2];
    size_t data_offset;   /* bytes from the start of the file to the data */
} npy_info;

/* Parse a version 1.0 or 2.0 header of a 1-D or 2-D array from the first
 * len bytes of a file. Returns 0 and fills *info, or -1 if the bytes are not
 * such a header. Never reads past len. */
int npy_parse_header(const void *bytes, size_t len, npy_info *info);

/* Write a header to f. Returns 0, or -1 with errno set by stdio. */
int npy_write_header(FILE *f, const char *descr, uint64_t rows, uint64_t cols);

#endif
