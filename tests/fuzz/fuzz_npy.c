/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_npy.c - libFuzzer target for the .npy code (common/npy.c).
 *
 *  - npy_parse_header on the raw input (an exact-size copy: reading past
 *    `len` is caught by ASan) must accept or refuse, never overrun, and
 *    anything it accepts must be self-consistent;
 *  - npy_header with a fuzzed dtype, shape and capacity must write within
 *    the capacity, pad to a multiple of 64, and read back to the same shape
 *    through npy_parse_header;
 *  - npy_write_header to a memory stream gives the same bytes.
 */
#include "common/npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, msg)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz_npy: %s\n", msg);                                            \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

/* npy_parse_header accepts the 0-D shape "()" (common/npy.c parse_shape
 * returns at ')' before reading any dimension), though npy.h promises 1-D
 * or 2-D only. Set to 0 once that is fixed. */
#define FUZZ_KNOWN_BUG_NPY_0D 0

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t take(const uint8_t **p, size_t *n, int bytes)
{
    uint64_t v = 0;
    for (int k = 0; k < bytes; ++k) {
        v <<= 8;
        if (*n) {
            v |= **p;
            ++*p;
            --*n;
        }
    }
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* 1. parse the input as a header */
    uint8_t *copy = malloc(size ? size : 1);
    CHECK(copy, "malloc");
    if (size)
        memcpy(copy, data, size);
    npy_info info;
    memset(&info, 0, sizeof info);
    if (npy_parse_header(copy, size, &info) == 0) {
        CHECK(info.ndim == 1 || info.ndim == 2 || (FUZZ_KNOWN_BUG_NPY_0D && info.ndim == 0),
              "accepted a header that is not 1-D or 2-D");
        CHECK(info.data_offset <= size, "data offset beyond the bytes parsed");
        CHECK(memchr(info.descr, '\0', sizeof info.descr) != NULL, "descr not terminated");
    }
    free(copy);

    /* 2. build a header and read it back */
    const uint8_t *p = data;
    size_t n = size;
    int dtype = (int)(take(&p, &n, 1) % 6) - 1;
    uint8_t shape_mode = (uint8_t)take(&p, &n, 1);
    uint64_t rows = shape_mode & 1 ? take(&p, &n, 8) : take(&p, &n, 3);
    uint64_t cols = shape_mode & 2 ? take(&p, &n, 8) : take(&p, &n, 3);
    size_t cap = (size_t)(take(&p, &n, 2) % (NPY_HEADER_MAX + 64));
    const char *descr = npy_descr_for_dtype(dtype);
    if (shape_mode & 4) {
        /* an arbitrary descr string from the rest of the input */
        static char odd[24];
        size_t len = n < sizeof odd - 1 ? n : sizeof odd - 1;
        memcpy(odd, p, len);
        odd[len] = '\0';
        descr = odd;
    }
    if (!descr)
        return 0;
    char *buf = malloc(cap ? cap : 1);
    CHECK(buf, "malloc");
    size_t len = npy_header(buf, cap, descr, rows, cols);
    if (len) {
        CHECK(len <= cap, "header longer than its buffer");
        CHECK(len % 64 == 0, "header not padded to 64 bytes");
        CHECK(buf[len - 1] == '\n', "header does not end in a newline");
        npy_info back;
        if (!(shape_mode & 4)) {
            CHECK(npy_parse_header(buf, len, &back) == 0, "own header does not parse");
            CHECK(back.ndim == 2 && back.shape[0] == rows && back.shape[1] == cols,
                  "shape does not round-trip");
            CHECK(strcmp(back.descr, descr) == 0, "descr does not round-trip");
            CHECK(back.data_offset == len && !back.fortran_order, "offset or order");
        }
        /* the stream writer agrees byte for byte */
        char *mem = NULL;
        size_t mem_len = 0;
        FILE *f = open_memstream(&mem, &mem_len);
        CHECK(f, "open_memstream");
        int rc = npy_write_header(f, descr, rows, cols);
        fclose(f);
        CHECK(rc == 0, "npy_write_header failed where npy_header worked");
        CHECK(mem_len == len && memcmp(mem, buf, len) == 0, "npy_write_header differs");
        free(mem);
    }
    free(buf);
    return 0;
}
