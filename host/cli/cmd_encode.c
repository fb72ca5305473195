/*
 * cmd_encode.c - `clpe encode`: the [N, D] encoding of N consecutive
 * positions, computed on the device in chunks and streamed to a .npy file.
 *
 * Three device buffers in host-visible memory rotate: while the host writes
 * chunk k to the file, the device computes chunks k+1 and k+2 and maps them
 * for reading (no copy where the device shares host memory, a DMA into
 * pinned memory where it does not). Output files follow output_file.h: a
 * file appears under its name only when complete.
 *
 * --measure-write first writes the same number of bytes, in the same chunk
 * sizes, into the same temporary file, times it, and truncates it again: the
 * rate the file system takes plain writes at, measured in the same run, to
 * set the encode rate against.
 */
#include "cli.h"
#include "checked_size.h"
#include "npy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Default chunk: big enough to amortise launches and system calls, small
 * enough that a chunk the device just wrote is still in the CPU's cache
 * when it is copied into the file. */
#define CHUNK_BYTES ((size_t)8 << 20)
/* Chunks in flight: one being written, two computing or mapped. */
#define SLOTS 3

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

/* Write all of buf to fd. Returns 0, or the errno of the failed write. */
static int write_all(int fd, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The plain write rate of the file system: `bytes` bytes from buf, chunk
 * bytes per write as encode writes them, into fd; then the file is emptied
 * for the real data. Returns 0 with *rate in bytes per second, or errno. */
static int measure_plain_write(int fd, uint64_t bytes, const unsigned char *buf, size_t chunk,
                               double *rate)
{
    double t0 = cli_now();
    for (uint64_t done = 0; done < bytes;) {
        size_t n = bytes - done < chunk ? (size_t)(bytes - done) : chunk;
        int e = write_all(fd, buf, n);
        if (e)
            return e;
        done += n;
    }
    double elapsed = cli_now() - t0;
    if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
        return errno;
    *rate = elapsed > 0 ? (double)bytes / elapsed : 0.0;
    return 0;
}

/* One chunk in flight: a device buffer the host can map. */
typedef struct slot {
    cl_mem buf;
    void *host;       /* mapped pointer, valid once `mapped` completes */
    cl_event mapped;  /* the map, after the table that fills the buffer */
    uint64_t rows;
} slot;

/* Compute rows positions from first into the slot and map it for reading;
 * neither waits. */
static int slot_fill(const cli_device *dev, clpe_encoder *enc, slot *sl, int64_t first,
                     uint64_t rows, uint64_t row_bytes)
{
    cl_event computed = NULL;
    clpe_tensor t = {.buffer = sl->buf};
    clpe_status st = clpe_enqueue_table(enc, dev->queue, first, (size_t)rows, &t, 0, NULL,
                                        &computed);
    if (st != CLPE_SUCCESS) {
        cli_status_error("table", st);
        return -1;
    }
    cl_int err = CL_SUCCESS;
    sl->host = clEnqueueMapBuffer(dev->queue, sl->buf, CL_FALSE, CL_MAP_READ, 0,
                                  (size_t)(rows * row_bytes), 1, &computed, &sl->mapped, &err);
    clReleaseEvent(computed);
    if (!sl->host || err != CL_SUCCESS) {
        cli_status_error("cannot map a chunk for reading", err);
        sl->host = NULL;
        return -1;
    }
    sl->rows = rows;
    clFlush(dev->queue);
    return 0;
}

/* Wait for the slot's chunk, write it to fd and hand the buffer back to the
 * device. *write_err gets the errno of a failed write. */
static int slot_drain(const cli_device *dev, slot *sl, int fd, uint64_t row_bytes,
                      int *write_err)
{
    cl_int err = clWaitForEvents(1, &sl->mapped);
    clReleaseEvent(sl->mapped);
    sl->mapped = NULL;
    if (err != CL_SUCCESS) {
        cli_status_error("device failed while encoding", err);
        return -1;
    }
    *write_err = write_all(fd, sl->host, (size_t)(sl->rows * row_bytes));
    err = clEnqueueUnmapMemObject(dev->queue, sl->buf, sl->host, 0, NULL, NULL);
    sl->host = NULL;
    if (*write_err)
        return -1;
    if (err != CL_SUCCESS) {
        cli_status_error("cannot unmap a chunk", err);
        return -1;
    }
    return 0;
}

static cl_mem create_slot_buffer(const cli_device *dev, size_t bytes, cl_int *err)
{
    /* Host-visible memory makes the map a no-copy on CPUs and a DMA into
     * pinned memory on GPUs; a device without it still maps a plain buffer. */
    cl_mem m = clCreateBuffer(dev->context, CL_MEM_WRITE_ONLY | CL_MEM_ALLOC_HOST_PTR, bytes,
                              NULL, err);
    if (!m)
        m = clCreateBuffer(dev->context, CL_MEM_WRITE_ONLY, bytes, NULL, err);
    return m;
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
    const size_t esize = cli_dtype_size(cfg.dtype);
    const uint64_t row_bytes = (uint64_t)cfg.d * esize; /* <= 2^24 * 8 */
    const char *descr = npy_descr_for_dtype(cfg.dtype);
    char header[NPY_HEADER_MAX];
    const size_t header_len = npy_header(header, sizeof header, descr, seq, cfg.d);
    uint64_t total_bytes = 0, file_bytes = 0;
    if (header_len == 0 || cli_mul_u64(seq, row_bytes, &total_bytes) ||
        cli_add_u64(total_bytes, header_len, &file_bytes)) {
        cli_error("--seq %llu times --d %u is too large: the file size passes 2^64 bytes",
                  (unsigned long long)seq, (unsigned)cfg.d);
        return CLI_EXIT_USAGE;
    }

    cli_device dev;
    if ((rc = cli_device_open(args->device, &dev)))
        return rc;
    clpe_encoder *enc = NULL;
    slot slots[SLOTS];
    memset(slots, 0, sizeof slots);
    unsigned char *probe = NULL;
    cli_outfile out;
    memset(&out, 0, sizeof out);
    progress pg = {0, 0.0, 0.0, total_bytes};
    int write_err = 0;
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
    size_t chunk_bytes = 0;
    if (cli_mul_size(chunk, row_bytes, &chunk_bytes)) {
        cli_error("--chunk-rows %llu is too large", (unsigned long long)chunk);
        goto done;
    }

    /* The output file first: a bad path fails before any device work. */
    if ((rc = cli_outfile_open(&out, args->output, "-o")) != CLI_EXIT_OK)
        goto done;
    rc = CLI_EXIT_RUNTIME;
    if (args->measure_write && out.streamed) {
        cli_error("--measure-write needs -o to name a file, not a FIFO, device or descriptor");
        goto done;
    }
    uint64_t free_bytes = 0;
    if (cli_outfile_free_bytes(&out, &free_bytes) == 0 && file_bytes > free_bytes) {
        /* Refuse early rather than fill the disk and fail at the end. */
        char need[32], have[32];
        human_bytes((double)file_bytes, need, sizeof need);
        human_bytes((double)free_bytes, have, sizeof have);
        cli_error("cannot write -o '%s': needs %s, only %s free", args->output, need, have);
        goto done;
    }
    /* The data goes to the descriptor in large writes; nothing may wait in
     * the stream's buffer (stdout, when -o names it). */
    fflush(out.f);
    const int fd = fileno(out.f);

    enc = cli_encoder_create(&dev, &cfg);
    if (!enc)
        goto done;
    for (int k = 0; k < SLOTS; ++k) {
        cl_int err = CL_SUCCESS;
        slots[k].buf = create_slot_buffer(&dev, chunk_bytes, &err);
        if (!slots[k].buf) {
            cli_status_error("cannot allocate a device buffer", err);
            goto done;
        }
    }

    double plain_rate = 0.0;
    if (args->measure_write) {
        probe = malloc(chunk_bytes);
        if (!probe) {
            cli_error("out of memory for a chunk of %zu bytes", chunk_bytes);
            goto done;
        }
        memset(probe, 0x3c, chunk_bytes); /* touched: no page faults timed */
        if ((write_err = measure_plain_write(fd, file_bytes, probe, chunk_bytes, &plain_rate)))
            goto done;
        free(probe);
        probe = NULL;
    }

    pg.enabled = isatty(STDERR_FILENO) && !args->quiet;
    pg.t0 = cli_now();
    const double t0 = pg.t0;
    if ((write_err = write_all(fd, header, header_len)))
        goto done;
    const uint64_t nchunks = (seq + chunk - 1) / chunk;
    uint64_t written = 0;
    /* Chunk c uses slot c % SLOTS. The queue is in order, so a slot's next
     * table runs after the unmap that ended its previous chunk. */
    for (uint64_t c = 0; c < nchunks && c < SLOTS - 1; ++c)
        if (slot_fill(&dev, enc, &slots[c % SLOTS], (int64_t)((uint64_t)start + c * chunk),
                      c + 1 < nchunks ? chunk : seq - c * chunk, row_bytes))
            goto fail;
    for (uint64_t c = 0; c < nchunks; ++c) {
        uint64_t ahead = c + SLOTS - 1;
        if (ahead < nchunks &&
            slot_fill(&dev, enc, &slots[ahead % SLOTS], (int64_t)((uint64_t)start + ahead * chunk),
                      ahead + 1 < nchunks ? chunk : seq - ahead * chunk, row_bytes))
            goto fail;
        slot *sl = &slots[c % SLOTS];
        uint64_t bytes = sl->rows * row_bytes;
        if (slot_drain(&dev, sl, fd, row_bytes, &write_err))
            goto fail;
        written += bytes;
        progress_draw(&pg, written, 0);
    }
    progress_draw(&pg, written, 1);
    if ((rc = cli_outfile_commit(&out, "-o")) != CLI_EXIT_OK)
        goto done;
    const double elapsed = cli_now() - t0;
    const double rate = elapsed > 0 ? (double)file_bytes / elapsed : 0.0;
    if (!args->quiet) {
        char size[32], rate_s[32];
        human_bytes((double)file_bytes, size, sizeof size);
        human_bytes(rate, rate_s, sizeof rate_s);
        double elems = (double)seq * (double)cfg.d;
        cli_note("wrote %s: [%llu, %u] %s, positions %lld..%lld, %s", args->output,
                 (unsigned long long)seq, (unsigned)cfg.d, cli_dtype_name(cfg.dtype),
                 (long long)start, (long long)((uint64_t)start + seq - 1), size);
        cli_note("device '%s', %.3f s, %.1f Melem/s, %s/s", dev.name, elapsed,
                 elapsed > 0 ? elems / elapsed / 1e6 : 0.0, rate_s);
    }
    if (args->measure_write) {
        char rate_s[32], plain_s[32];
        human_bytes(rate, rate_s, sizeof rate_s);
        human_bytes(plain_rate, plain_s, sizeof plain_s);
        cli_note("encode %s/s, plain write of the same bytes to the same file system %s/s: "
                 "%.2fx", rate_s, plain_s, plain_rate > 0 ? rate / plain_rate : 0.0);
    }
    rc = CLI_EXIT_OK;
    goto done;
fail:
    progress_draw(&pg, 0, 1);
done:
    if (write_err)
        cli_outfile_write_error(&out, "-o", write_err);
    /* Maps may still be in flight into the slots. */
    if (dev.queue)
        clFinish(dev.queue);
    for (int k = 0; k < SLOTS; ++k) {
        if (slots[k].mapped)
            clReleaseEvent(slots[k].mapped);
        if (slots[k].host)
            clEnqueueUnmapMemObject(dev.queue, slots[k].buf, slots[k].host, 0, NULL, NULL);
    }
    if (dev.queue)
        clFinish(dev.queue);
    for (int k = 0; k < SLOTS; ++k)
        if (slots[k].buf)
            clReleaseMemObject(slots[k].buf);
    free(probe);
    cli_outfile_abort(&out);
    clpe_encoder_release(enc);
    cli_device_close(&dev);
    return rc;
}
