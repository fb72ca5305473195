/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device_words.c - an encoder's or rotary object's tuning words for kernels
 * of the caller's own (clpe_device.h), and that header's text.
 */
#include "sinusoid/sinusoid.h"
#include "rotary/rotary.h"

#include <stdlib.h>
#include <string.h>

/* Generated at build time from kernels/clpe_device.h with clpe_phase.h
 * inlined: the installed header's text (see CMakeLists.txt). */
extern const char clpe_device_header_source[];

/* The layout of the buffer, as clpe.h and clpe_device.h describe it. */
#define WORDS_LAYOUT 1u
#define WORDS_HEADER 4u
#define WORDS_WIDE 1u
#define WORDS_NARROW 2u
#define WORDS_INTERLEAVED 4u
#define WORDS_ROTARY 8u

/* What clpe_device.h checks its own layout against. */
static const char build_options[] = "-DCLPE_DEVICE_LAYOUT=1";

/* The amplitude as the kernels receive it: float bits unless wide. */
static uint64_t amplitude_bits(bool wide, double amplitude)
{
    if (wide) {
        uint64_t bits;
        memcpy(&bits, &amplitude, sizeof bits);
        return bits;
    }
    float m = (float)amplitude;
    uint32_t bits;
    memcpy(&bits, &m, sizeof bits);
    return bits;
}

static clpe_status make_words(cl_context context, uint32_t n, uint32_t flags, double amplitude,
                              const uint64_t *hi, const uint64_t *lo, cl_mem *words,
                              const char **options)
{
    bool wide = (flags & WORDS_WIDE) != 0;
    size_t count = WORDS_HEADER + 2 * (size_t)n;
    cl_ulong *host = malloc(count * sizeof *host);
    if (!host)
        return CLPE_ERROR_OUT_OF_HOST_MEMORY;
    host[0] = WORDS_LAYOUT;
    host[1] = n;
    host[2] = flags;
    host[3] = amplitude_bits(wide, amplitude);
    for (uint32_t i = 0; i < n; ++i) {
        host[WORDS_HEADER + 2 * (size_t)i] = hi[i];
        /* 96-bit words keep 32 bits below the top 64 (host copies hold them
         * in a uint64_t already) */
        host[WORDS_HEADER + 2 * (size_t)i + 1] = wide ? lo[i] : (lo[i] & 0xFFFFFFFFu);
    }
    cl_int err = CL_SUCCESS;
    cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   count * sizeof *host, host, &err);
    free(host);
    if (err != CL_SUCCESS)
        return err;
    *words = buffer;
    if (options)
        *options = build_options;
    return CLPE_SUCCESS;
}

clpe_status clpe_encoder_device_words(const clpe_encoder *enc, cl_mem *words,
                                      const char **build_options)
{
    if (!enc)
        return CLPE_ERROR_NULL_ENCODER;
    if (!words)
        return CLPE_ERROR_NULL_POINTER;
    if (!enc->shared)
        return CLPE_ERROR_HOST_ONLY;
    clpe_dtype dtype = enc->cfg.dtype;
    uint32_t flags = dtype == CLPE_DTYPE_F64                                 ? WORDS_WIDE
                     : dtype == CLPE_DTYPE_F16 || dtype == CLPE_DTYPE_BF16 ? WORDS_NARROW
                                                                             : 0u;
    return make_words(enc->shared->context, enc->half_d, flags, 1.0, enc->tw_hi, enc->tw_lo,
                      words, build_options);
}

clpe_status clpe_rope_device_words(const clpe_rope *rope, cl_mem *words,
                                   const char **build_options)
{
    if (!rope)
        return CLPE_ERROR_NULL_ENCODER;
    if (!words)
        return CLPE_ERROR_NULL_POINTER;
    if (!rope->shared)
        return CLPE_ERROR_HOST_ONLY;
    uint32_t flags = WORDS_ROTARY;
    if (rope->cfg.dtype == CLPE_DTYPE_F64)
        flags |= WORDS_WIDE;
    if (rope->cfg.pairing == CLPE_ROPE_INTERLEAVED)
        flags |= WORDS_INTERLEAVED;
    return make_words(rope->shared->context, rope->n_pairs, flags, rope->amplitude, rope->tw_hi,
                      rope->tw_lo, words, build_options);
}

const char *clpe_device_source(void)
{
    return clpe_device_header_source;
}
