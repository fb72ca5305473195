/*
 * cmd_encode.c - `clpe encode`: the [N, D] encoding of N consecutive
 * positions, computed on the device in chunks and streamed to a .npy file.
 *
 * Two device buffers and two host buffers alternate, so the device computes
 * and reads back chunk k+1 while the host writes chunk k to disk. The file
 * is written under a temporary name and renamed only when complete.
 */
#include "cli.h"
#include "npy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Default chunk: big enough to amortise launches, small enough for any device. */
#define CHUNK_BYTES ((size_t)32 << 20)

typedef struct progress {
    int enabled;
    double t0, last;
    uint64_t total_bytes;
} progress;

static void human_bytes(double b, char *out, size_t cap)
{
    const char *unit[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (b >= 1000.0 && u < 5) {
        b /= 1000.0;
        ++u;
    }
    snprintf(out, cap, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
}

static void progress_draw(progress *pg, uint64_t done_bytes, int final)
{
    if (!pg->enabled)
        return;
    double now = cli_now();
    if (!final && now - pg->last < 0.1)
        return;
    pg->last = now;
    if (final) {
        fputs("\r\033[K", stderr); /* erase the bar; the summary follows */
        return;
    }
    double frac = pg->total_bytes ? (double)done_bytes / (double)pg->total_bytes : 1.0;
    char bar[41];
    int fill = (int)(frac * 40.0);
    for (int i = 0; i < 40; ++i)
        bar[i] = i < fill ? '#' : '.';
    bar[40] = '\0';
    double el = now - pg->t0;
    char rate[32] = "";
    if (el > 0)
        human_bytes((double)done_bytes / el, rate, sizeof rate);
    double eta = frac > 0 ? el * (1.0 - frac) / frac : 0.0;
    fprintf(stderr, "\r[%s] %5.1f%%  %s/s  ETA %.0f s\033[K", bar, 100.0 * frac, rate, eta);
    fflush(stderr);
}

int cli_cmd_encode(const cli_args *args)
{
    clpe_config cfg;
    int64_t start = 0;
    int rc = cli_config_from_args(args, &cfg, &start);
    if (rc)
        return rc;
    const uint64_t seq = args->seq;
    if (!cli_positions_fit(start, seq)) {
        cli_error("--start %lld plus --seq %llu passes the largest position 2^63-1",
                  (long long)start, (unsigned long long)seq);
        return CLI_EXIT_USAGE;
    }
    const size_t esize = dtype_size(cfg.dtype);
    const uint64_t row_bytes = (uint64_t)cfg.d * esize;
    const uint64_t total_bytes = seq * row_bytes; /* fits: checked by the parser */
    const char *descr = npy_descr_for_dtype(cfg.dtype);

    cli_device dev;
    if ((rc = cli_device_open(args->device, &dev)))
        return rc;
    clpe_encoder *enc = NULL;
    cl_mem dbuf[2] = {NULL, NULL};
    unsigned char *hbuf[2] = {NULL, NULL};
    cl_event ready[2] = {NULL, NULL};
    cli_outfile out;
    memset(&out, 0, sizeof out);
    progress pg = {0, 0.0, 0.0, total_bytes};
    rc = CLI_EXIT_RUNTIME;

    if (!cli_device_supports(dev.device, cfg.dtype)) {
        cli_error("device '%s' does not support --dtype %s", dev.name, cli_dtype_name(cfg.dtype));
        goto done;
    }
    cl_ulong max_alloc = 0;
    clGetDeviceInfo(dev.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    if (max_alloc == 0)
        max_alloc = 128u << 20; /* the smallest a conformant device may report */
    if (row_bytes > max_alloc) {
        cli_error("one row of --d %u --dtype %s (%llu bytes) is larger than device '%s' "
                  "can allocate (%llu bytes)",
                  (unsigned)cfg.d, cli_dtype_name(cfg.dtype), (unsigned long long)row_bytes,
                  dev.name, (unsigned long long)max_alloc);
        goto done;
    }
    uint64_t chunk = args->chunk_rows;
    if (chunk == 0)
        chunk = CHUNK_BYTES / row_bytes ? CHUNK_BYTES / row_bytes : 1;
    if (chunk > max_alloc / row_bytes)
        chunk = max_alloc / row_bytes;
    if (chunk > seq)
        chunk = seq;
    if (chunk > SIZE_MAX / row_bytes) {
        cli_error("--chunk-rows %llu is too large", (unsigned long long)chunk);
        goto done;
    }
    const size_t chunk_bytes = (size_t)(chunk * row_bytes);

    /* The output file first: a bad path fails before any device work. */
    if ((rc = cli_outfile_open(&out, args->output, "-o")) != CLI_EXIT_OK)
        goto done;
    rc = CLI_EXIT_RUNTIME;
    {
        /* Refuse early rather than fill the disk and fail at the end. */
        char dir[4096];
        const char *slash = strrchr(out.tmp_path, '/');
        size_t dl = slash ? (size_t)(slash - out.tmp_path) + 1 : 0;
        if (dl < sizeof dir) {
            memcpy(dir, out.tmp_path, dl);
            snprintf(dir + dl, sizeof dir - dl, ".");
            struct statvfs vfs;
            if (statvfs(dir, &vfs) == 0 && vfs.f_frsize &&
                (uint64_t)vfs.f_bavail < (total_bytes + NPY_HEADER_MAX) / vfs.f_frsize) {
                char need[32], have[32];
                human_bytes((double)total_bytes, need, sizeof need);
                human_bytes((double)vfs.f_bavail * (double)vfs.f_frsize, have, sizeof have);
                cli_error("cannot write -o '%s': needs %s, only %s free", args->output, need,
                          have);
                goto done;
            }
        }
    }
    char header[NPY_HEADER_MAX];
    const size_t header_len = npy_header(header, sizeof header, descr, seq, cfg.d);
    if (header_len == 0 || fwrite(header, 1, header_len, out.f) != header_len) {
        cli_error("cannot write -o '%s': %s", args->output, strerror(errno));
        goto done;
    }

    enc = cli_encoder_create(&dev, &cfg);
    if (!enc)
        goto done;
    for (int k = 0; k < 2; ++k) {
        cl_int err = CL_SUCCESS;
        dbuf[k] = clCreateBuffer(dev.context, CL_MEM_WRITE_ONLY, chunk_bytes, NULL, &err);
        if (!dbuf[k]) {
            cli_status_error("cannot allocate a device buffer", err);
            goto done;
        }
        hbuf[k] = malloc(chunk_bytes);
        if (!hbuf[k]) {
            cli_error("out of memory for a chunk of %zu bytes", chunk_bytes);
            goto done;
        }
    }

    pg.enabled = isatty(STDERR_FILENO) && !args->quiet;
    pg.t0 = cli_now();
    const double t0 = pg.t0;
    const uint64_t nchunks = (seq + chunk - 1) / chunk;
    uint64_t written = 0;
    /* Chunk c goes to slot c % 2; chunk c is written while c + 1 computes. */
    for (uint64_t c = 0; c <= nchunks; ++c) {
        if (c < nchunks) {
            int s = (int)(c % 2);
            uint64_t rows = c + 1 < nchunks ? chunk : seq - c * chunk;
            clpe_tensor t = {.buffer = dbuf[s], .offset = 0, .row_pitch = 0, .batch_pitch = 0};
            cl_event done_table = NULL;
            clpe_status st = clpe_enqueue_table(enc, dev.queue, (int64_t)((uint64_t)start + c * chunk),
                                                (size_t)rows, &t, 0, NULL, &done_table);
            if (st != CLPE_SUCCESS) {
                progress_draw(&pg, 0, 1);
                cli_status_error("table", st);
                goto done;
            }
            cl_int err = clEnqueueReadBuffer(dev.queue, dbuf[s], CL_FALSE, 0,
                                             (size_t)(rows * row_bytes), hbuf[s], 1, &done_table,
                                             &ready[s]);
            clReleaseEvent(done_table);
            if (err != CL_SUCCESS) {
                progress_draw(&pg, 0, 1);
                cli_status_error("cannot read a chunk back", err);
                goto done;
            }
            clFlush(dev.queue);
        }
        if (c > 0) {
            int s = (int)((c - 1) % 2);
            uint64_t rows = c < nchunks ? chunk : seq - (c - 1) * chunk;
            cl_int err = clWaitForEvents(1, &ready[s]);
            clReleaseEvent(ready[s]);
            ready[s] = NULL;
            if (err != CL_SUCCESS) {
                progress_draw(&pg, 0, 1);
                cli_status_error("device failed while encoding", err);
                goto done;
            }
            size_t bytes = (size_t)(rows * row_bytes);
            if (fwrite(hbuf[s], 1, bytes, out.f) != bytes) {
                progress_draw(&pg, 0, 1);
                cli_error("cannot write -o '%s': %s", args->output, strerror(errno));
                goto done;
            }
            written += bytes;
            progress_draw(&pg, written, 0);
        }
    }
    progress_draw(&pg, written, 1);
    if ((rc = cli_outfile_commit(&out, "-o")) != CLI_EXIT_OK)
        goto done;
    if (!args->quiet) {
        double el = cli_now() - t0;
        char size[32], rate[32];
        human_bytes((double)(total_bytes + header_len), size, sizeof size);
        human_bytes(el > 0 ? (double)total_bytes / el : 0.0, rate, sizeof rate);
        double elems = (double)seq * (double)cfg.d;
        fprintf(stderr,
                "clpe: wrote %s: [%llu, %u] %s, positions %lld..%lld, %s\n"
                "clpe: device '%s', %.3f s, %.1f Melem/s, %s/s\n",
                args->output, (unsigned long long)seq, (unsigned)cfg.d,
                cli_dtype_name(cfg.dtype), (long long)start,
                (long long)((uint64_t)start + seq - 1), size, dev.name, el,
                el > 0 ? elems / el / 1e6 : 0.0, rate);
    }
    rc = CLI_EXIT_OK;
done:
    /* Reads may still be in flight into the host buffers. */
    if (dev.queue)
        clFinish(dev.queue);
    for (int k = 0; k < 2; ++k) {
        if (ready[k])
            clReleaseEvent(ready[k]);
        if (dbuf[k])
            clReleaseMemObject(dbuf[k]);
        free(hbuf[k]);
    }
    cli_outfile_abort(&out);
    clpe_encoder_release(enc);
    cli_device_close(&dev);
    return rc;
}
