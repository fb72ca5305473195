/* SPDX-License-Identifier: Apache-2.0 */
/*
 * image.h - a small RGB raster for `clpe plot`: rectangles, lines, text in
 * the built-in font, a diverging colour map, and PNG output through libpng.
 * No OpenCL and no global state.
 */
#ifndef CLPE_CLI_IMAGE_H
#define CLPE_CLI_IMAGE_H

#include <stdint.h>
#include <stdio.h>

typedef struct rgb {
    uint8_t r, g, b;
} rgb;

typedef struct image {
    int w, h;
    uint8_t *px; /* w * h * 3 bytes, rows top to bottom */
} image;

/* A w x h image filled with bg. Returns 0, or -1 when out of memory. */
int image_create(image *img, int w, int h, rgb bg);
void image_free(image *img);

/* Drawing clips to the image. */
void image_set(image *img, int x, int y, rgb c);
void image_rect(image *img, int x, int y, int w, int h, rgb c);
/* A line of the given thickness (1 or more) from (x0,y0) to (x1,y1). */
void image_line(image *img, int x0, int y0, int x1, int y1, int thick, rgb c);
/* Text with its top-left corner at (x, y), each font pixel scale x scale. */
void image_text(image *img, int x, int y, int scale, const char *s, rgb c);
/* Text turned 90 degrees counter-clockwise (reading upwards), its
 * bottom-left corner at (x, y). */
void image_text_up(image *img, int x, int y, int scale, const char *s, rgb c);
/* Width in pixels of s at scale. */
int image_text_width(int scale, const char *s);

/* Blue (-1) through white (0) to red (+1); v is clamped to [-1, 1]. */
rgb image_diverging(double v);

/* Write img as an 8-bit RGB PNG. Returns 0, or -1 on a libpng or I/O
 * error: *write_errno then holds the errno of a failed write (0 if none)
 * and why a one-line reason. libpng itself prints nothing. */
int image_write_png(const image *img, FILE *f, int *write_errno, char *why, size_t why_cap);

#endif
