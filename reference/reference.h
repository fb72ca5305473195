/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reference.h - the independent MPFR reference of the sinusoidal encoding,
 * shared by clpe's tests, `clpe check` and clpe-accuracy. It is not part of
 * libclpe and is not installed.
 *
 * It computes what the encoding is by definition, never how clpe computes
 * it: w_i = base^e with mpfr_pow (e = -2i/d for CLPE_FREQ_PAPER,
 * -i/max(pairs-1, 1) for CLPE_FREQ_TENSOR2TENSOR), the angle p * w_i from
 * the exact int64 p, and sin and cos of it with mpfr_sin_cos. No tuning
 * words, no fixed-point phase, no repeated addition. At REF_PRECISION bits
 * the angle of any |p| <= 2^63 keeps more than 190 fractional bits, so the
 * reference is exact far below the resolution of every output format.
 *
 * Which value sits in which slot of a row (ref_slot) follows clpe.h's
 * description of the layouts and flags, written out again here, so a layout
 * mistake in the library shows as an error too.
 *
 * Use: ref_init for a configuration, then per value ref_set_pair (w_i; the
 * expensive part, so loop pair-major where you can), ref_at (the position),
 * and ref_sin / ref_cos / ref_error. ref_clear frees it; call
 * mpfr_free_cache() once at the end of a program or test if leak checkers
 * run.
 */
#ifndef CLPE_REFERENCE_H
#define CLPE_REFERENCE_H

#include <clpe.h>

#include <stdint.h> /* before mpfr.h, for its intmax_t functions */
#include <mpfr.h>

/* Bits of every MPFR number of the reference. */
#define REF_PRECISION 256

typedef struct ref_encoding {
    uint32_t d;
    uint32_t pairs;     /* frequencies: d/2, or (d+1)/2 with CLPE_FLAG_ODD_D_HALF_PAIR */
    double base;
    clpe_freq freq;
    mpfr_t exponent, w, position, angle, sin, cos, scratch;
} ref_encoding;

/* Prepare a reference for cfg's width, base, frequency convention and odd-d
 * flags. */
void ref_init(ref_encoding *ref, const clpe_config *cfg);
void ref_clear(ref_encoding *ref);

/* w_i for pair i (0 <= i < ref->pairs), computed directly with mpfr_pow. */
void ref_set_pair(ref_encoding *ref, uint32_t i);

/* sin and cos of p * w_i, for the pair last set. */
void ref_at(ref_encoding *ref, int64_t p);

/* The values of ref_at, rounded to nearest double. */
double ref_sin(const ref_encoding *ref);
double ref_cos(const ref_encoding *ref);

/* |got - exact| for the sine (is_cos 0) or cosine (is_cos 1) of ref_at,
 * subtracted at full precision and rounded once. NaN stays NaN. */
double ref_error(ref_encoding *ref, int is_cos, double got);

/* What one slot of a row holds. */
typedef enum ref_wave { REF_ZERO = 0, REF_SIN = 1, REF_COS = 2 } ref_wave;

/* Slot k (0 <= k < cfg->d) of a row under cfg's layout and flags: the sine
 * or cosine of pair *pair, or a constant zero (the zero column of an odd
 * width). For CLPE_FLAG_ODD_D_HALF_PAIR the last pair has only its sine;
 * cosines-first puts the floor(d/2) cosines before the sines. */
ref_wave ref_slot(const clpe_config *cfg, uint32_t k, uint32_t *pair);

/* Non-zero when the row at position p is all zeros (CLPE_FLAG_PADDING_ROW). */
int ref_row_is_zero(const clpe_config *cfg, int64_t p);

#endif
