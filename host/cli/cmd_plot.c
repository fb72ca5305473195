/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_plot.c - `clpe plot`: a PNG of the encoding computed on the device.
 *
 * Three panels: the classic heatmap (positions down, dimensions across),
 * the dot-product similarity PE(p).PE(q)/(d/2) of every pair of positions
 * (1 on the diagonal; it depends only on p - q), and one row of it as a
 * curve: the similarity of a query position with every other. Both
 * heatmaps share one diverging colour scale, blue -1 to red +1.
 */
#include "cli.h"
#include "image.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PANEL 512   /* largest side of a heatmap, in pixels */
#define TS 2        /* text scale: 10 x 14 pixel glyphs */
#define TEXT_H (8 * TS)

static const rgb WHITE = {255, 255, 255};
static const rgb INK = {0x22, 0x22, 0x22};
static const rgb AXIS = {0x44, 0x44, 0x44};
static const rgb GRID = {0xE4, 0xE4, 0xE4};
static const rgb CURVE = {0xB2, 0x18, 0x2B};
static const rgb MARK = {0x21, 0x66, 0xAC};

/* Pixels of an axis of n cells: whole pixels per cell up to PANEL. */
static int axis_px(uint64_t n)
{
    return n <= PANEL ? (int)(n * (PANEL / n)) : PANEL;
}

/* The cell under pixel px of an axis of size px_n showing n cells. */
static uint64_t cell_at(int px, int px_n, uint64_t n)
{
    return (uint64_t)((double)px * (double)n / (double)px_n);
}

/* Pixel centre of cell k. */
static int cell_centre(uint64_t k, int px_n, uint64_t n)
{
    return (int)(((double)k + 0.5) * (double)px_n / (double)n);
}

/* A step of 1, 2 or 5 times a power of ten giving at most max_ticks ticks. */
static double nice_step(double range, int max_ticks)
{
    if (!(range > 0))
        return 1;
    double raw = range / max_ticks;
    double p = pow(10.0, floor(log10(raw)));
    double m = raw / p;
    double step = m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10;
    return step * p;
}

/* Ticks over cells [0, n) labelled first + k, at labels that are multiples
 * of a nice integer step so they read cleanly. */
typedef struct ticks {
    uint64_t cell[32];
    char label[32][24];
    int count;
} ticks;

static void integer_ticks(int64_t first, uint64_t n, int max_ticks, ticks *t)
{
    t->count = 0;
    double stepd = nice_step((double)(n > 1 ? n - 1 : 1), max_ticks);
    uint64_t step = stepd < 1 ? 1 : (uint64_t)stepd;
    /* The first cell whose label is a multiple of step. */
    int64_t r = (int64_t)(first % (int64_t)step);
    if (r < 0)
        r += (int64_t)step;
    uint64_t k = ((uint64_t)step - (uint64_t)r) % step;
    for (; k < n && t->count < 32; k += step) {
        t->cell[t->count] = k;
        snprintf(t->label[t->count], sizeof t->label[0], "%lld",
                 (long long)((uint64_t)first + k));
        ++t->count;
    }
}

static int widest(const ticks *t)
{
    int w = 0;
    for (int i = 0; i < t->count; ++i) {
        int x = image_text_width(TS, t->label[i]);
        if (x > w)
            w = x;
    }
    return w;
}

/* Heatmap of rows x cols values (row-major, doubles) at (x0, y0). */
static void draw_heatmap(image *img, int x0, int y0, int w, int h, const double *v,
                         uint64_t rows, uint64_t cols)
{
    for (int y = 0; y < h; ++y) {
        uint64_t r = cell_at(y, h, rows);
        for (int x = 0; x < w; ++x)
            image_set(img, x0 + x, y0 + y, image_diverging(v[r * cols + cell_at(x, w, cols)]));
    }
}

static void frame(image *img, int x, int y, int w, int h)
{
    image_rect(img, x - 1, y - 1, w + 2, 1, AXIS);
    image_rect(img, x - 1, y + h, w + 2, 1, AXIS);
    image_rect(img, x - 1, y - 1, 1, h + 2, AXIS);
    image_rect(img, x + w, y - 1, 1, h + 2, AXIS);
}

/* Ticks below a panel (x axis) and the axis title centred under them. */
static void x_axis(image *img, int x0, int y_bottom, int w, uint64_t n, const ticks *t,
                   const char *title)
{
    for (int i = 0; i < t->count; ++i) {
        int x = x0 + cell_centre(t->cell[i], w, n);
        image_rect(img, x, y_bottom, 1, 5, AXIS);
        int tw = image_text_width(TS, t->label[i]);
        image_text(img, x - tw / 2, y_bottom + 8, TS, t->label[i], INK);
    }
    int tw = image_text_width(TS, title);
    image_text(img, x0 + (w - tw) / 2, y_bottom + 8 + TEXT_H + 8, TS, title, INK);
}

/* Ticks left of a panel (y axis, cells going down) and the title upright. */
static void y_axis(image *img, int x_left, int y0, int h, uint64_t n, const ticks *t,
                   const char *title, int label_w)
{
    for (int i = 0; i < t->count; ++i) {
        int y = y0 + cell_centre(t->cell[i], h, n);
        image_rect(img, x_left - 6, y, 5, 1, AXIS);
        int tw = image_text_width(TS, t->label[i]);
        image_text(img, x_left - 9 - tw, y - TEXT_H / 2, TS, t->label[i], INK);
    }
    int tw = image_text_width(TS, title);
    image_text_up(img, x_left - 9 - label_w - 8 - TEXT_H, y0 + (h + tw) / 2, TS, title, INK);
}

int cli_cmd_plot(const cli_args *args)
{
    clpe_config cfg;
    int64_t start = 0;
    int rc = cli_config_from_args(args, &cfg, &start);
    if (rc)
        return rc;
    const uint64_t seq = args->seq;
    const uint32_t d = cfg.d;
    if (!cli_positions_fit(start, seq)) {
        cli_error("--start %lld plus --seq %llu passes the largest position 2^63-1",
                  (long long)start, (unsigned long long)seq);
        return CLI_EXIT_USAGE;
    }
    int64_t query = args->have_query ? args->query : (int64_t)((uint64_t)start + seq / 2);
    if (query < start || (uint64_t)query - (uint64_t)start >= seq) {
        cli_error("--query %lld is outside the plotted positions %lld..%lld", (long long)query,
                  (long long)start, (long long)((uint64_t)start + seq - 1));
        return CLI_EXIT_USAGE;
    }
    const uint64_t qrow = (uint64_t)query - (uint64_t)start;

    cli_device dev;
    if ((rc = cli_device_open(args->device, &dev)))
        return rc;
    clpe_encoder *enc = NULL;
    cl_mem buf = NULL;
    unsigned char *raw = NULL;
    double *pe = NULL, *sim = NULL, *curve = NULL;
    image img = {0, 0, NULL};
    cli_outfile out;
    memset(&out, 0, sizeof out);
    rc = CLI_EXIT_RUNTIME;

    if (!cli_device_supports(dev.device, cfg.dtype)) {
        cli_error("device '%s' does not support --dtype %s", dev.name, cli_dtype_name(cfg.dtype));
        goto done;
    }
    if ((rc = cli_outfile_open(&out, args->output, "-o")) != CLI_EXIT_OK)
        goto done;
    rc = CLI_EXIT_RUNTIME;
    enc = cli_encoder_create(&dev, &cfg);
    if (!enc)
        goto done;

    /* The encoding, on the device. */
    const size_t esize = dtype_size(cfg.dtype);
    const size_t n_el = (size_t)seq * d; /* <= 4096 * 4096: checked by the parser */
    cl_int err = CL_SUCCESS;
    buf = clCreateBuffer(dev.context, CL_MEM_WRITE_ONLY, n_el * esize, NULL, &err);
    raw = malloc(n_el * esize);
    pe = malloc(n_el * sizeof *pe);
    if (!buf || !raw || !pe) {
        cli_error("out of memory for a [%llu, %u] table", (unsigned long long)seq, (unsigned)d);
        goto done;
    }
    clpe_tensor t = {.buffer = buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_status st = clpe_enqueue_table(enc, dev.queue, start, (size_t)seq, &t, 0, NULL, NULL);
    if (st != CLPE_SUCCESS) {
        cli_status_error("table", st);
        goto done;
    }
    err = clEnqueueReadBuffer(dev.queue, buf, CL_TRUE, 0, n_el * esize, raw, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        cli_status_error("cannot read the table back", err);
        goto done;
    }
    for (size_t k = 0; k < n_el; ++k)
        pe[k] = dtype_to_double(raw + k * esize, cfg.dtype);

    /* Geometry. */
    const int aw = axis_px(d), ah = axis_px(seq); /* encoding heatmap */
    const int bw = ah, bh = ah;                    /* similarity heatmap */
    ticks t_dim, t_pos;
    integer_ticks(0, d, aw >= 384 ? 8 : 5, &t_dim);
    integer_ticks(start, seq, ah >= 384 ? 8 : 5, &t_pos);
    const int pos_label_w = widest(&t_pos);
    const int left = 24 + TEXT_H + 8 + pos_label_w + 9;
    const int top = 124;
    const int ax = left, ay = top;
    const int gap = 40 + TEXT_H + 8 + pos_label_w + 9;
    const int bx = ax + aw + gap, by = top;
    const int bar_x = bx + bw + 28, bar_w = 18;
    char subtitle[384];
    snprintf(subtitle, sizeof subtitle,
             "base %g, %s frequencies, %s layout, %s%s%s, computed by clpe on %s", cfg.base,
             cli_freq_name(cfg.freq), cli_layout_name(cfg.layout), cli_dtype_name(cfg.dtype),
             args->preset ? ", preset " : "", args->preset ? args->preset : "", dev.name);
    int right = bar_x + bar_w + 10 + image_text_width(TS, "-1.0") + 24;
    if (right < ax + image_text_width(TS, subtitle) + 24)
        right = ax + image_text_width(TS, subtitle) + 24;
    const int ly = ay + ah + 2 * TEXT_H + 60; /* the curve panel */
    const int lh = 220;
    const int lx = ax, lw = bx + bw - ax;
    const int height = ly + lh + 2 * TEXT_H + 40;
    if (image_create(&img, right, height, WHITE)) {
        cli_error("out of memory for the picture");
        goto done;
    }

    /* Similarity PE(p).PE(q)/(d/2), only at the cells shown. */
    const uint32_t pairs = d / 2;
    sim = malloc((size_t)bh * (size_t)bw * sizeof *sim);
    curve = malloc((size_t)seq * sizeof *curve);
    if (!sim || !curve) {
        cli_error("out of memory for the similarity panel");
        goto done;
    }
    for (int y = 0; y < bh; ++y) {
        const double *pp = pe + cell_at(y, bh, seq) * d;
        for (int x = 0; x < bw; ++x) {
            const double *pq = pe + cell_at(x, bw, seq) * d;
            double s = 0;
            for (uint32_t k = 0; k < d; ++k)
                s += pp[k] * pq[k];
            sim[(size_t)y * bw + x] = s / pairs;
        }
    }
    double cmin = 0.0, cmax = 0.0;
    for (uint64_t q = 0; q < seq; ++q) {
        double s = 0;
        for (uint32_t k = 0; k < d; ++k)
            s += pe[qrow * d + k] * pe[q * d + k];
        curve[q] = s / pairs;
        if (curve[q] < cmin) cmin = curve[q];
        if (curve[q] > cmax) cmax = curve[q];
    }

    /* Title. */
    char title[384];
    snprintf(title, sizeof title, "Sinusoidal position encoding, d = %u", (unsigned)d);
    image_text(&img, ax, 16, 3, title, INK);
    image_text(&img, ax, 16 + 3 * 8 + 10, TS, subtitle, AXIS);

    /* Panel A: the encoding. */
    image_text(&img, ax, ay - TEXT_H - 10, TS, "PE(pos, i)", INK);
    draw_heatmap(&img, ax, ay, aw, ah, pe, seq, d);
    frame(&img, ax, ay, aw, ah);
    x_axis(&img, ax, ay + ah + 1, aw, d, &t_dim, "dimension i");
    y_axis(&img, ax - 1, ay, ah, seq, &t_pos, "position", pos_label_w);

    /* Panel B: similarity of every pair, with the query row marked. */
    image_text(&img, bx, by - TEXT_H - 10, TS, "PE(p) . PE(q) / (d/2)", INK);
    draw_heatmap(&img, bx, by, bw, bh, sim, (uint64_t)bh, (uint64_t)bw);
    frame(&img, bx, by, bw, bh);
    x_axis(&img, bx, by + bh + 1, bw, seq, &t_pos, "position q");
    y_axis(&img, bx - 1, by, bh, seq, &t_pos, "position p", pos_label_w);
    {
        int qy = by + cell_centre(qrow, bh, seq);
        for (int k = 0; k < 7; ++k) { /* a small arrow on the right edge */
            image_rect(&img, bx + bw + 2 + k, qy - (6 - k), 1, 2 * (6 - k) + 1, MARK);
        }
    }

    /* Colour bar. */
    for (int y = 0; y < bh; ++y) {
        double v = 1.0 - 2.0 * (y + 0.5) / bh;
        image_rect(&img, bar_x, by + y, bar_w, 1, image_diverging(v));
    }
    frame(&img, bar_x, by, bar_w, bh);
    {
        const char *lab[5] = {"1.0", "0.5", "0", "-0.5", "-1.0"};
        for (int k = 0; k < 5; ++k) {
            int y = by + (int)((double)k * (bh - 1) / 4.0);
            image_rect(&img, bar_x + bar_w + 1, y, 5, 1, AXIS);
            image_text(&img, bar_x + bar_w + 9, y - TEXT_H / 2, TS, lab[k], INK);
        }
    }

    /* Panel C: one row of B as a curve. */
    double lo = floor(fmin(cmin, 0.0) * 4.0) / 4.0;
    double hi = ceil(fmax(cmax, 1.0) * 4.0) / 4.0;
    if (hi - lo < 0.5)
        lo = hi - 0.5;
    snprintf(title, sizeof title, "similarity of position p = %lld with every position q",
             (long long)query);
    image_text(&img, lx, ly - TEXT_H - 10, TS, title, INK);
    double ystep = nice_step(hi - lo, 5);
    for (double v = ceil(lo / ystep) * ystep; v <= hi + 1e-9; v += ystep) {
        int y = ly + (int)lround((hi - v) / (hi - lo) * (lh - 1));
        image_rect(&img, lx, y, lw, 1, fabs(v) < 1e-9 ? AXIS : GRID);
        char lab[32];
        snprintf(lab, sizeof lab, "%g", fabs(v) < 1e-9 ? 0.0 : v);
        int tw = image_text_width(TS, lab);
        image_rect(&img, lx - 6, y, 5, 1, AXIS);
        image_text(&img, lx - 9 - tw, y - TEXT_H / 2, TS, lab, INK);
    }
    {
        int qx = lx + cell_centre(qrow, lw, seq);
        for (int y = ly; y < ly + lh; y += 6) /* dashed marker at q = p */
            image_rect(&img, qx, y, 1, 3, MARK);
        int px_prev = 0, py_prev = 0;
        uint64_t npts = seq < (uint64_t)lw ? seq : (uint64_t)lw;
        for (uint64_t k = 0; k < npts; ++k) {
            uint64_t q = npts == seq ? k : cell_at((int)k, lw, seq);
            int px = lx + cell_centre(q, lw, seq);
            int py = ly + (int)lround((hi - curve[q]) / (hi - lo) * (lh - 1));
            if (k)
                image_line(&img, px_prev, py_prev, px, py, 2, CURVE);
            px_prev = px;
            py_prev = py;
        }
    }
    frame(&img, lx, ly, lw, lh);
    {
        ticks t_wide;
        integer_ticks(start, seq, 12, &t_wide);
        x_axis(&img, lx, ly + lh + 1, lw, seq, &t_wide, "position q");
    }

    int write_errno = 0;
    char why[192];
    if (image_write_png(&img, out.f, &write_errno, why, sizeof why) != 0) {
        if (write_errno)
            cli_outfile_write_error(&out, "-o", write_errno);
        else
            cli_error("cannot write -o '%s': %s", args->output, why);
        goto done;
    }
    rc = cli_outfile_commit(&out, "-o");
done:
    image_free(&img);
    free(sim);
    free(curve);
    free(pe);
    free(raw);
    if (buf)
        clReleaseMemObject(buf);
    cli_outfile_abort(&out);
    clpe_encoder_release(enc);
    cli_device_close(&dev);
    return rc;
}
