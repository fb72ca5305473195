/* SPDX-License-Identifier: Apache-2.0 */
/*
 * image.c - the RGB raster of `clpe plot` and its PNG writer (see image.h).
 */
#include "image.h"
#include "font.h"

#include <png.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int image_create(image *img, int w, int h, rgb bg)
{
    img->w = w;
    img->h = h;
    img->px = malloc((size_t)w * (size_t)h * 3);
    if (!img->px)
        return -1;
    for (size_t i = 0; i < (size_t)w * (size_t)h; ++i) {
        img->px[3 * i] = bg.r;
        img->px[3 * i + 1] = bg.g;
        img->px[3 * i + 2] = bg.b;
    }
    return 0;
}

void image_free(image *img)
{
    free(img->px);
    img->px = NULL;
}

void image_set(image *img, int x, int y, rgb c)
{
    if (x < 0 || y < 0 || x >= img->w || y >= img->h)
        return;
    uint8_t *p = img->px + 3 * ((size_t)y * (size_t)img->w + (size_t)x);
    p[0] = c.r;
    p[1] = c.g;
    p[2] = c.b;
}

void image_rect(image *img, int x, int y, int w, int h, rgb c)
{
    for (int j = y; j < y + h; ++j)
        for (int i = x; i < x + w; ++i)
            image_set(img, i, j, c);
}

void image_line(image *img, int x0, int y0, int x1, int y1, int thick, rgb c)
{
    /* Bresenham, stamping a thick x thick square at every step. */
    int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
    int dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    int off = (thick - 1) / 2;
    for (;;) {
        image_rect(img, x0 - off, y0 - off, thick, thick, c);
        if (x0 == x1 && y0 == y1)
            break;
        int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

int image_text_width(int scale, const char *s)
{
    int n = (int)strlen(s);
    return n ? (n * (FONT_W + 1) - 1) * scale : 0;
}

void image_text(image *img, int x, int y, int scale, const char *s, rgb c)
{
    for (; *s; ++s, x += (FONT_W + 1) * scale) {
        const uint8_t *g = font_glyph(*s);
        for (int col = 0; col < FONT_W; ++col)
            for (int row = 0; row < FONT_H; ++row)
                if (g[col] >> row & 1)
                    image_rect(img, x + col * scale, y + row * scale, scale, scale, c);
    }
}

void image_text_up(image *img, int x, int y, int scale, const char *s, rgb c)
{
    /* Turned counter-clockwise: glyph column -> image row going up, glyph
     * row -> image column going right. */
    for (; *s; ++s, y -= (FONT_W + 1) * scale) {
        const uint8_t *g = font_glyph(*s);
        for (int col = 0; col < FONT_W; ++col)
            for (int row = 0; row < FONT_H; ++row)
                if (g[col] >> row & 1)
                    image_rect(img, x + row * scale, y - (col + 1) * scale, scale, scale, c);
    }
}

rgb image_diverging(double v)
{
    /* ColorBrewer RdBu (11 classes), from blue at -1 to red at +1. */
    static const rgb stops[11] = {
        {0x05, 0x30, 0x61}, {0x21, 0x66, 0xac}, {0x43, 0x93, 0xc3}, {0x92, 0xc5, 0xde},
        {0xd1, 0xe5, 0xf0}, {0xf7, 0xf7, 0xf7}, {0xfd, 0xdb, 0xc7}, {0xf4, 0xa5, 0x82},
        {0xd6, 0x60, 0x4d}, {0xb2, 0x18, 0x2b}, {0x67, 0x00, 0x1f},
    };
    if (!(v > -1.0))
        v = -1.0; /* NaN too */
    if (v > 1.0)
        v = 1.0;
    double t = (v + 1.0) * 5.0;
    int k = (int)t;
    if (k > 9)
        k = 9;
    double f = t - k;
    rgb a = stops[k], b = stops[k + 1];
    rgb out = {(uint8_t)lround(a.r + f * (b.r - a.r)), (uint8_t)lround(a.g + f * (b.g - a.g)),
               (uint8_t)lround(a.b + f * (b.b - a.b))};
    return out;
}

/* Where libpng's complaints go instead of its own printing to stderr: the
 * first error (or write failure, with its errno) is kept for the tool's
 * one line. */
typedef struct png_sink {
    FILE *f;
    int err;            /* errno of a failed write, 0 if none */
    char message[128];  /* libpng's error text */
} png_sink;

static void on_png_error(png_structp png, png_const_charp message)
{
    png_sink *sink = png_get_error_ptr(png);
    if (sink && !sink->message[0])
        snprintf(sink->message, sizeof sink->message, "%s", message ? message : "PNG error");
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp message)
{
    (void)png;
    (void)message; /* nothing clpe writes can draw a warning worth a line */
}

static void on_png_write(png_structp png, png_bytep data, size_t len)
{
    png_sink *sink = png_get_io_ptr(png);
    if (fwrite(data, 1, len, sink->f) != len) {
        sink->err = errno ? errno : EIO;
        png_error(png, "write failed");
    }
}

static void on_png_flush(png_structp png)
{
    png_sink *sink = png_get_io_ptr(png);
    if (fflush(sink->f) != 0) {
        sink->err = errno ? errno : EIO;
        png_error(png, "write failed");
    }
}

int image_write_png(const image *img, FILE *f, int *write_errno, char *why, size_t why_cap)
{
    png_sink sink;
    memset(&sink, 0, sizeof sink);
    sink.f = f;
    *write_errno = 0;
    if (why_cap)
        why[0] = '\0';
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_png_error,
                                              on_png_warning);
    if (!png) {
        snprintf(why, why_cap, "out of memory for the PNG encoder");
        return -1;
    }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        snprintf(why, why_cap, "out of memory for the PNG encoder");
        return -1;
    }
    /* libpng reports errors by longjmp; nothing here needs unwinding but
     * the png structs themselves. */
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        *write_errno = sink.err;
        snprintf(why, why_cap, "PNG encoding failed: %s", sink.message);
        return -1;
    }
    png_set_write_fn(png, &sink, on_png_write, on_png_flush);
    png_set_IHDR(png, info, (png_uint_32)img->w, (png_uint_32)img->h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_text text;
    memset(&text, 0, sizeof text);
    text.compression = PNG_TEXT_COMPRESSION_NONE;
    text.key = (png_charp) "Software";
    text.text = (png_charp) "clpe plot";
    png_set_text(png, info, &text, 1);
    png_write_info(png, info);
    for (int y = 0; y < img->h; ++y)
        png_write_row(png, img->px + (size_t)y * (size_t)img->w * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return 0;
}
