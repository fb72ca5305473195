/* SPDX-License-Identifier: Apache-2.0 */
/*
 * font.h - a tiny built-in 5x7 (+ descender) bitmap font for the labels of `clpe plot`,
 * so the tool needs no font files and no font library.
 */
#ifndef CLPE_CLI_FONT_H
#define CLPE_CLI_FONT_H

#include <stdint.h>

#define FONT_W 5
#define FONT_H 8 /* 7 rows and a descender row */

/* The glyph of printable ASCII character c (others draw as '?'): FONT_W
 * column bytes, bit r of a column set where row r (0 = top) is inked. */
const uint8_t *font_glyph(char c);

#endif
