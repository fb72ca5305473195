/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encode_multi.c - `clpe encode --devices LIST`: one encode spread over
 * several devices, one output file.
 *
 * Every device computes the same bits (the library's promise; `clpe check`
 * proves it per device), so the rows can be cut into one contiguous range
 * per device and the file is byte for byte the file one device writes.
 * The cut follows each device's measured speed: a short probe (two warm-up
 * chunks, then PROBE_CHUNKS chunks computed and read back to the host, each
 * device alone) gives rows per second, and each device gets its share of
 * the rows in proportion. Then every device runs the single-device
 * pipeline (encode_pipeline.c) on its range in a thread of its own,
 * writing through its own descriptor of the one temporary file at its
 * range's offset. If any device fails, the command fails and the
 * temporary file is removed (output_file.h): no file appears.
 */
#define _GNU_SOURCE /* O_CLOEXEC */
#include "encode_multi.h"

#include "encode_pipeline.h"
#include "plain_write.h"
#include "signals.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The probe: this many chunks timed, after two that warm up (a fixed
 * count, so the launches a run makes do not depend on the clock). */
#define PROBE_CHUNKS 8
/* Chunk sizes as a single-device encode takes them (cmd_encode.c). */
#define CHUNK_BYTES_CPU ((size_t)1 << 20)
#define CHUNK_BYTES ((size_t)8 << 20)

typedef struct member {
    cli_device dev;
    int open;
    clpe_encoder *enc;
    uint64_t chunk_rows;
    double rate;      /* rows per second, alone */
    uint64_t first;   /* its rows: first .. first + rows - 1 (0-based, of the file) */
    uint64_t rows;
    int fd;
    encode_job job;
    pthread_t thread;
    int started;
    int failed;
    int write_err;
    char what[300];   /* "device 'NAME': table", for an error line */
} member;

/* The selectors of LIST: "all" gives every device index in order. */
static int selectors(const char *list, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (strcmp(list, "all") == 0) {
        for (unsigned idx = 0;; ++idx) {
            char sel[24];
            snprintf(sel, sizeof sel, "%u", idx);
            cl_platform_id p;
            cl_device_id d;
            if (clpe_select_device(sel, &p, &d) != CLPE_SUCCESS)
                break;
            char **grown = realloc(*out, (*n + 1) * sizeof *grown);
            if (!grown || !(grown[*n] = strdup(sel))) {
                free(grown ? grown : *out);
                return -1;
            }
            *out = grown;
            ++*n;
        }
        return 0;
    }
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        char **grown = realloc(*out, (*n + 1) * sizeof *grown);
        if (!grown || !(grown[*n] = strndup(p, len))) {
            free(grown ? grown : *out);
            return -1;
        }
        *out = grown;
        ++*n;
        p += len;
        if (*p == ',')
            ++p;
    }
    return 0;
}

/* Rows per second of m alone: chunks computed and read back to the host,
 * as the pipeline does, after two that warm up. */
static int probe(member *m, uint64_t seq, uint64_t row_bytes)
{
    const uint64_t rows = m->chunk_rows < seq ? m->chunk_rows : seq;
    const size_t bytes = (size_t)(rows * row_bytes);
    void *host = malloc(bytes);
    cl_int err = CL_SUCCESS;
    cl_mem buf = host ? clCreateBuffer(m->dev.context, CL_MEM_WRITE_ONLY, bytes, NULL, &err)
                      : NULL;
    if (!buf) {
        free(host);
        cli_error("device '%s': cannot allocate %zu bytes to measure its speed", m->dev.name,
                  bytes);
        return -1;
    }
    clpe_tensor t = {.buffer = buf};
    double t0 = 0.0;
    clpe_status st = CLPE_SUCCESS;
    for (int k = 0; k < 2 + PROBE_CHUNKS && st == CLPE_SUCCESS; ++k) {
        if (k == 2)
            t0 = cli_now(); /* the first two built and warmed the launch shape */
        st = clpe_enqueue_table(m->enc, m->dev.queue, (int64_t)((uint64_t)k * rows), rows, &t,
                                0, NULL, NULL);
        if (st == CLPE_SUCCESS)
            st = clEnqueueReadBuffer(m->dev.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    }
    const double dt = cli_now() - t0;
    clReleaseMemObject(buf);
    free(host);
    if (st != CLPE_SUCCESS) {
        cli_error("device '%s' failed while its speed was measured: %s (%d)", m->dev.name,
                  clpe_status_string(st), (int)st);
        return -1;
    }
    m->rate = (double)((uint64_t)PROBE_CHUNKS * rows) / (dt > 1e-9 ? dt : 1e-9);
    return 0;
}

/* Rows in proportion to the rates; what rounding leaves goes to the
 * fastest. Ranges follow the order of the list. */
static void split(member *m, size_t n, uint64_t seq)
{
    double total = 0.0;
    size_t fastest = 0;
    for (size_t k = 0; k < n; ++k) {
        total += m[k].rate;
        if (m[k].rate > m[fastest].rate)
            fastest = k;
    }
    uint64_t given = 0;
    for (size_t k = 0; k < n; ++k) {
        m[k].rows = (uint64_t)((long double)seq * m[k].rate / total);
        if (m[k].rows > seq - given)
            m[k].rows = seq - given;
        given += m[k].rows;
    }
    m[fastest].rows += seq - given;
    uint64_t first = 0;
    for (size_t k = 0; k < n; ++k) {
        m[k].first = first;
        first += m[k].rows;
    }
}

static void *run_member(void *arg)
{
    member *m = arg;
    m->failed = encode_pipeline_run(&m->job, &m->write_err, NULL) != 0;
    return NULL;
}

int cli_encode_multi(const cli_args *args, const clpe_config *cfg, int64_t start, uint64_t seq,
                     const char *header, size_t header_len, uint64_t file_bytes)
{
    const uint64_t row_bytes = (uint64_t)cfg->d * dtype_size(cfg->dtype);
    char **sel = NULL;
    size_t nsel = 0;
    member *m = NULL;
    size_t n = 0;
    cli_outfile out;
    memset(&out, 0, sizeof out);
    int rc = CLI_EXIT_RUNTIME, write_err = 0;

    if (selectors(args->devices, &sel, &nsel) != 0) {
        cli_error("out of memory");
        return CLI_EXIT_RUNTIME;
    }
    if (nsel == 0) {
        cli_error("--devices %s: no OpenCL device found", args->devices);
        goto done;
    }
    m = calloc(nsel, sizeof *m);
    if (!m) {
        cli_error("out of memory");
        goto done;
    }
    for (size_t k = 0; k < nsel; ++k)
        m[k].fd = -1;
    const int all = strcmp(args->devices, "all") == 0;
    for (size_t k = 0; k < nsel; ++k) {
        member *mk = &m[n];
        memset(mk, 0, sizeof *mk);
        mk->fd = -1;
        if (cli_device_open(sel[k], &mk->dev) != CLI_EXIT_OK)
            goto done;
        mk->open = 1;
        ++n;
        if (!cli_device_supports(mk->dev.device, cfg->dtype)) {
            if (!all) {
                cli_error("device '%s' does not support --dtype %s", mk->dev.name,
                          cli_dtype_name(cfg->dtype));
                goto done;
            }
            if (!args->quiet)
                cli_note("device '%s' left out: it does not support --dtype %s", mk->dev.name,
                         cli_dtype_name(cfg->dtype));
            cli_device_close(&mk->dev);
            mk->open = 0;
            --n;
            continue;
        }
        cl_ulong max_alloc = 0;
        cl_device_type type = 0;
        clGetDeviceInfo(mk->dev.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc,
                        &max_alloc, NULL);
        clGetDeviceInfo(mk->dev.device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
        if (max_alloc == 0)
            max_alloc = 128u << 20;
        if (row_bytes > max_alloc) {
            cli_error("one row of --d %u --dtype %s (%llu bytes) is larger than device '%s' "
                      "can allocate (%llu bytes)",
                      (unsigned)cfg->d, cli_dtype_name(cfg->dtype),
                      (unsigned long long)row_bytes, mk->dev.name,
                      (unsigned long long)max_alloc);
            goto done;
        }
        const size_t target = (type & CL_DEVICE_TYPE_CPU) ? CHUNK_BYTES_CPU : CHUNK_BYTES;
        uint64_t chunk = args->chunk_rows ? args->chunk_rows
                                          : (target / row_bytes ? target / row_bytes : 1);
        if (chunk > max_alloc / row_bytes)
            chunk = max_alloc / row_bytes;
        if (chunk > seq)
            chunk = seq;
        if (chunk > SIZE_MAX / row_bytes) {
            cli_error("--chunk-rows %llu is too large", (unsigned long long)chunk);
            goto done;
        }
        mk->chunk_rows = chunk;
    }
    if (n == 0) {
        cli_error("--devices %s: no device supports --dtype %s", args->devices,
                  cli_dtype_name(cfg->dtype));
        goto done;
    }

    /* The output file first: a bad path fails before any device work. */
    if ((rc = cli_outfile_open(&out, args->output, "-o")) != CLI_EXIT_OK)
        goto done;
    rc = CLI_EXIT_RUNTIME;
    if (out.streamed) {
        cli_error("--devices needs -o to name a file: the devices write their rows at their "
                  "own offsets, which a FIFO, device or descriptor cannot take");
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    uint64_t free_bytes = 0;
    if (cli_outfile_free_bytes(&out, &free_bytes) == 0 && file_bytes > free_bytes) {
        char need[64], have[64];
        cli_format_bytes_apart(file_bytes, free_bytes, need, have, sizeof need);
        cli_error("cannot write -o '%s': needs %s, only %s free", args->output, need, have);
        goto done;
    }

    for (size_t k = 0; k < n; ++k)
        if (!(m[k].enc = cli_encoder_create(&m[k].dev, cfg)))
            goto done;
    cli_signals_ignore_file_size(); /* the kernels are built: no compiler runs from here */
    for (size_t k = 0; k < n; ++k)
        if (probe(&m[k], seq, row_bytes) != 0)
            goto done;
    split(m, n, seq);

    if (fflush(out.f) != 0) {
        write_err = errno;
        goto done;
    }
    const int fd = fileno(out.f);
    if ((write_err = cli_reserve(fd, header_len, seq * row_bytes)) != 0)
        goto done;
    if ((write_err = cli_write_all(fd, header, header_len)) != 0)
        goto done;
    const double t0 = cli_now();
    for (size_t k = 0; k < n; ++k) {
        member *mk = &m[k];
        if (!mk->rows)
            continue;
        /* a descriptor of its own: its own offset in the one file */
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        mk->fd = open(self, O_WRONLY | O_CLOEXEC);
        const off_t at = (off_t)(header_len + mk->first * row_bytes);
        if (mk->fd < 0 || lseek(mk->fd, at, SEEK_SET) != at) {
            cli_error("cannot open the output file again for device '%s': %s", mk->dev.name,
                      strerror(errno));
            break;
        }
        snprintf(mk->what, sizeof mk->what, "device '%s': table", mk->dev.name);
        mk->job = (encode_job){.dev = &mk->dev,
                               .what = mk->what,
                               .enc = mk->enc,
                               .start = (int64_t)((uint64_t)start + mk->first),
                               .seq = mk->rows,
                               .row_bytes = row_bytes,
                               .chunk_rows = mk->chunk_rows < mk->rows ? mk->chunk_rows
                                                                        : mk->rows,
                               .fd = mk->fd};
        if (pthread_create(&mk->thread, NULL, run_member, mk) != 0) {
            cli_error("cannot start a thread for device '%s'", mk->dev.name);
            break;
        }
        mk->started = 1;
    }
    int failed = 0;
    for (size_t k = 0; k < n; ++k) {
        member *mk = &m[k];
        if (mk->rows && !mk->started)
            failed = 1;
        if (!mk->started)
            continue;
        pthread_join(mk->thread, NULL);
        if (mk->failed) {
            failed = 1;
            if (mk->write_err && !write_err)
                write_err = mk->write_err;
        }
    }
    const double elapsed = cli_now() - t0;
    if (failed)
        goto done;
    if ((rc = cli_outfile_commit(&out, "-o")) != CLI_EXIT_OK)
        goto done;
    if (!args->quiet) {
        double fastest = 0.0, total = 0.0;
        for (size_t k = 0; k < n; ++k) {
            total += m[k].rate;
            if (m[k].rate > fastest)
                fastest = m[k].rate;
        }
        cli_note("wrote %s: [%llu, %u] %s, positions %lld..%lld, on %zu devices", args->output,
                 (unsigned long long)seq, (unsigned)cfg->d, cli_dtype_name(cfg->dtype),
                 (long long)start, (long long)((uint64_t)start + seq - 1), n);
        for (size_t k = 0; k < n; ++k)
            cli_note("split: device '%s': rows %llu..%llu (%llu, %.1f%%), measured alone "
                     "%.1f Mrows/s", m[k].dev.name, (unsigned long long)m[k].first,
                     (unsigned long long)(m[k].first + m[k].rows - (m[k].rows ? 1 : 0)),
                     (unsigned long long)m[k].rows,
                     100.0 * (double)m[k].rows / (double)seq, m[k].rate / 1e6);
        cli_note("%.3f s; the fastest device alone, at its measured rate: %.3f s (all together "
                 "at their summed rates: %.3f s)",
                 elapsed, (double)seq / fastest, (double)seq / total);
    }
    rc = CLI_EXIT_OK;
done:
    if (write_err)
        cli_outfile_write_error(&out, "-o", write_err);
    cli_outfile_abort(&out);
    for (size_t k = 0; k < nsel && m; ++k) {
        if (m[k].fd >= 0)
            close(m[k].fd);
        clpe_encoder_release(m[k].enc);
        if (m[k].open)
            cli_device_close(&m[k].dev);
    }
    free(m);
    for (size_t k = 0; k < nsel; ++k)
        free(sel[k]);
    free(sel);
    return rc;
}
