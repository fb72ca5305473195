/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tuning.c - the tuning word of a frequency, computed with MPFR.
 *
 * F_i = round(2^bits * w_i / 2pi) is the pair's phase step per position in
 * units of 2^-bits turn: 96 bits for the float32 arithmetic, 128 for
 * float64 (whose phase must stay exact to 2^-66 turn at |p| = 2^63). The
 * kernels need it correct to its last bit, which double precision cannot
 * give, so it is computed at 256 bits (CLPE_TUNING_PRECISION) from a
 * frequency the caller computed at that precision: the encoder's ladder
 * (sinusoid/frequencies.c), the rotary scalings (rotary/rope_freq.c).
 */
#include "core/tuning.h"

void clpe__tuning_scale(mpfr_ptr scale, unsigned bits)
{
    mpfr_const_pi(scale, MPFR_RNDN);
    mpfr_mul_2ui(scale, scale, 1, MPFR_RNDN);
    mpfr_ui_div(scale, 1, scale, MPFR_RNDN);
    mpfr_mul_2ui(scale, scale, bits, MPFR_RNDN);
}

void clpe__tuning_word(mpfr_srcptr w, mpfr_srcptr scale, unsigned bits, uint64_t *hi,
                       uint64_t *lo)
{
    unsigned low_bits = bits - 64;
    mpfr_t f, top;
    mpfr_inits2(CLPE_TUNING_PRECISION, f, top, (mpfr_ptr)0);
    mpfr_mul(f, w, scale, MPFR_RNDN);
    mpfr_rint(f, f, MPFR_RNDN);                /* an exact integer now */
    mpfr_div_2ui(top, f, bits, MPFR_RNDN);     /* exact: whole turns ... */
    mpfr_floor(top, top);
    mpfr_mul_2ui(top, top, bits, MPFR_RNDN);
    mpfr_sub(f, f, top, MPFR_RNDN);            /* ... fall off: F mod 2^bits */
    mpfr_div_2ui(top, f, low_bits, MPFR_RNDN); /* exact */
    mpfr_floor(top, top);
    *hi = (uint64_t)mpfr_get_uj(top, MPFR_RNDN);
    mpfr_mul_2ui(top, top, low_bits, MPFR_RNDN);
    mpfr_sub(f, f, top, MPFR_RNDN);            /* exact: the low bits */
    *lo = (uint64_t)mpfr_get_uj(f, MPFR_RNDN);
    mpfr_clears(f, top, (mpfr_ptr)0);
}
