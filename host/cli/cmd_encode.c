/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_encode.c - `clpe encode`: the [N, D] encoding of N consecutive
 * positions, computed on the device in chunks and streamed to a .npy file.
 *
 * The chunks flow through encode_pipeline.c: the file is written without
 * pause while the device computes and transfers the chunks after the one
 * being written. Output files follow output_file.h: a file appears under
 * its name only when complete.
 *
 * A file's data bytes are reserved before they are written (cli_reserve,
 * by the pipeline's writer): the file system hands out its pages in one
 * call, and a full one is found before any byte is written.
 *
 * --measure-write first writes the same number of bytes, 8 MiB (or a chunk,
 * if larger) per write, into the same temporary file (plain_write.h) and
 * empties it again: the rate the file system takes plain writes at,
 * measured in the same run, printed next to the rate of the encode. It
 * then does the same after reserving the bytes, so the two rates tell what
 * the encode's own way of writing is worth.
 */
#include "checked_size.h"
#include "cli.h"
#include "signals.h"
#include "encode_multi.h"
#include "encode_pipeline.h"
#include "common/npy.h"
#include "plain_write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Default chunk: big enough to amortise a launch and a system call. On a
 * CPU device, small enough that a chunk the kernel just wrote is still in
 * the caches when the writer copies it into the file (measured on a 2-core
 * PoCL machine: the writer's copy of 8.2 GB took about 3.3 s from 1 MiB
 * chunks against 4.3 s from 8 MiB ones); elsewhere the chunk crosses a bus
 * and may be larger. */
#define CHUNK_BYTES_CPU ((size_t)1 << 20)
#define CHUNK_BYTES ((size_t)8 << 20)
/* The plain write --measure-write times: 8 MiB per write, or the chunk. */
#define PLAIN_WRITE_BYTES ((size_t)8 << 20)

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

static void progress_draw(progress *pg, uint64_t done_bytes, int final);

static void progress_step(void *ctx, uint64_t done_bytes)
{
    progress_draw(ctx, done_bytes, 0);
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
    if ((rc = cli_output_check_name(args->output, "-o", ".npy")) != CLI_EXIT_OK)
        return rc;
    if (args->measure_write && cli_output_is_streamed(args->output)) {
        cli_error("--measure-write needs -o to name a file, not a FIFO, device or descriptor");
        return CLI_EXIT_USAGE;
    }
    if (!cli_positions_fit(start, seq)) {
        cli_error("--start %lld plus --seq %llu passes the largest position 2^63-1",
                  (long long)start, (unsigned long long)seq);
        return CLI_EXIT_USAGE;
    }
    const size_t esize = dtype_size(cfg.dtype);
    const uint64_t row_bytes = (uint64_t)cfg.d * esize; /* <= 2^24 * 8 */
    const char *descr = npy_descr_for_dtype(cfg.dtype);
    char header[NPY_HEADER_MAX];
    const size_t header_len = npy_header(header, sizeof header, descr, seq, cfg.d);
    uint64_t total_bytes = 0, file_bytes = 0;
    if (header_len == 0 || cli_mul_u64(seq, row_bytes, &total_bytes) ||
        cli_add_u64(total_bytes, header_len, &file_bytes)) {
        cli_error("--seq %llu times --d %u is too large: the file would pass 2^64 bytes",
                  (unsigned long long)seq, (unsigned)cfg.d);
        return CLI_EXIT_USAGE;
    }

    if (args->devices && cli_output_is_streamed(args->output)) {
        cli_error("--devices needs -o to name a file: the devices write their rows at their "
                  "own offsets, which a FIFO, device or descriptor cannot take");
        return CLI_EXIT_USAGE;
    }
    if (args->devices)
        return cli_encode_multi(args, &cfg, start, seq, header, header_len, file_bytes);

    cli_device dev;
    if ((rc = cli_device_open(args->device, &dev)))
        return rc;
    clpe_encoder *enc = NULL;
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
    cl_device_type type = 0;
    clGetDeviceInfo(dev.device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    const size_t chunk_target = (type & CL_DEVICE_TYPE_CPU) ? CHUNK_BYTES_CPU : CHUNK_BYTES;
    uint64_t chunk = args->chunk_rows;
    if (chunk == 0)
        chunk = chunk_target / row_bytes ? chunk_target / row_bytes : 1;
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
        /* Became a FIFO or device since the check above. */
        cli_error("--measure-write needs -o to name a file, not a FIFO, device or descriptor");
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    uint64_t free_bytes = 0;
    if (cli_outfile_free_bytes(&out, &free_bytes) == 0 && file_bytes > free_bytes) {
        /* Refuse early rather than fill the disk and fail at the end. */
        char need[64], have[64];
        cli_format_bytes_apart(file_bytes, free_bytes, need, have, sizeof need);
        cli_error("cannot write -o '%s': needs %s, only %s free", args->output, need, have);
        goto done;
    }
    /* The data goes to the descriptor in large writes: nothing may wait in
     * the stream's buffer ahead of it (stdout, when -o names it). */
    if (fflush(out.f) != 0) {
        write_err = errno;
        goto done;
    }
    const int fd = fileno(out.f);

    enc = cli_encoder_create(&dev, &cfg);
    if (!enc)
        goto done;
    cli_signals_ignore_file_size(); /* the kernels are built: no compiler runs from here */

    double plain_rate = 0.0, plain_cpu = 0.0, reserved_rate = 0.0, reserved_cpu = 0.0;
    if (args->measure_write) {
        /* The plain writer's own best: large writes, whatever chunk the
         * encode uses, so a small chunk cannot flatter the ratio. */
        const size_t probe_bytes = chunk_bytes > PLAIN_WRITE_BYTES ? chunk_bytes
                                                                   : PLAIN_WRITE_BYTES;
        probe = malloc(probe_bytes);
        if (!probe) {
            cli_error("out of memory for a buffer of %zu bytes", probe_bytes);
            goto done;
        }
        memset(probe, 0x3c, probe_bytes); /* touched, so no page fault is timed */
        write_err = cli_measure_plain_write(fd, file_bytes, probe, probe_bytes, 0, &plain_rate,
                                            &plain_cpu);
        /* The same with the bytes reserved first, as the encode writes a
         * file: what its own way of writing is worth, printed apart. */
        if (!write_err)
            write_err = cli_measure_plain_write(fd, file_bytes, probe, probe_bytes, 1,
                                                &reserved_rate, &reserved_cpu);
        free(probe);
        probe = NULL;
        if (write_err)
            goto done;
    }

    pg.enabled = isatty(STDERR_FILENO) && !args->quiet;
    pg.t0 = cli_now();
    const double t0 = pg.t0;
    if ((write_err = cli_write_all(fd, header, header_len)))
        goto done;
    encode_job job = {
        .dev = &dev,
        .enc = enc,
        .start = start,
        .seq = seq,
        .row_bytes = row_bytes,
        .chunk_rows = chunk,
        .fd = fd,
        .reserve = !out.streamed,
        .progress = pg.enabled ? progress_step : NULL,
        .progress_ctx = &pg,
    };
    encode_timing timing = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    int failed = encode_pipeline_run(&job, &write_err, &timing);
    /* From the first chunk on (building kernels is not writing) to the last
     * write, as the plain write is timed: the commit below renames the file
     * into place, and renaming over an existing file frees that file's pages
     * (about 1.2 s for 8 GB on tmpfs), which is not writing either. */
    const double elapsed = cli_now() - (timing.started_at > t0 ? timing.started_at : t0);
    const double encode_cpu = cli_cpu_seconds() - timing.started_cpu;
    progress_draw(&pg, total_bytes, 1);
    if (failed)
        goto done;
    if ((rc = cli_outfile_commit(&out, "-o")) != CLI_EXIT_OK)
        goto done;
    const double rate = elapsed > 0 ? (double)file_bytes / elapsed : 0.0;
    char rate_s[32];
    human_bytes(rate, rate_s, sizeof rate_s);
    if (!args->quiet) {
        char size[32];
        human_bytes((double)file_bytes, size, sizeof size);
        double elems = (double)seq * (double)cfg.d;
        cli_note("wrote %s: [%llu, %u] %s, positions %lld..%lld, %s", args->output,
                 (unsigned long long)seq, (unsigned)cfg.d, cli_dtype_name(cfg.dtype),
                 (long long)start, (long long)((uint64_t)start + seq - 1), size);
        cli_note("device '%s', %.3f s, %.1f Melem/s, %s/s", dev.name, elapsed,
                 elapsed > 0 ? elems / elapsed / 1e6 : 0.0, rate_s);
    }
    if (args->measure_write) {
        char plain_s[32], reserved_s[32];
        human_bytes(plain_rate, plain_s, sizeof plain_s);
        human_bytes(reserved_rate, reserved_s, sizeof reserved_s);
        cli_note("encode %s/s; plain write of the same bytes to the same file system %s/s; "
                 "ratio %.2f", rate_s, plain_s, plain_rate > 0 ? rate / plain_rate : 0.0);
        cli_note("the same writes after reserving the bytes, as the encode does: %s/s; "
                 "ratio %.2f", reserved_s, reserved_rate > 0 ? rate / reserved_rate : 0.0);
        /* What the rates cost: on a machine other work shares, a run that
         * needs more CPU time gets its rate cut by more. */
        cli_note("encode: the writer reserved the file in %.3f s, waited %.3f s for the device "
                 "and wrote for %.3f s (its thread ran %.3f s in all); CPU time %.2f s (plain "
                 "write %.2f s, after reserving %.2f s)", timing.reserving_s, timing.waiting_s,
                 timing.writing_s, timing.writer_cpu_s, encode_cpu, plain_cpu, reserved_cpu);
    }
    rc = CLI_EXIT_OK;
done:
    if (write_err)
        cli_outfile_write_error(&out, "-o", write_err);
    free(probe);
    cli_outfile_abort(&out);
    clpe_encoder_release(enc);
    cli_device_close(&dev);
    return rc;
}
