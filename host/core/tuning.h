/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tuning.h - turning an exact frequency (an MPFR number) into the tuning
 * word the kernels add per position (tuning.c). Shared by the sinusoidal
 * encoder (sinusoid/frequencies.c) and the rotary frequencies
 * (rotary/rope_freq.c).
 */
#ifndef CLPE_TUNING_H
#define CLPE_TUNING_H

#include "core/core.h"

#include <mpfr.h>

/* Working precision of every frequency computation: far below the last bit
 * of a 128-bit tuning word even after 2^23 chained products. */
#define CLPE_TUNING_PRECISION 256

/* scale = 2^bits / 2pi, at CLPE_TUNING_PRECISION. */
void clpe__tuning_scale(mpfr_ptr scale, unsigned bits);

/* F = round(w * scale) mod 2^bits for a frequency w >= 0 (radians per
 * position), split into the top 64 bits (*hi) and the low bits - 64 (*lo).
 * Whole turns fall off: only the phase modulo one turn matters. */
void clpe__tuning_word(mpfr_srcptr w, mpfr_srcptr scale, unsigned bits, uint64_t *hi,
                       uint64_t *lo);

#endif /* CLPE_TUNING_H */
