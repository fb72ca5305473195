/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_rope_cache_mrope.c - `clpe rope-cache --positions FILE`: the
 * multimodal (M-RoPE) or vision rotary cos/sin cache of every token of an
 * int64 .npy file of positions [streams, tokens] (Qwen2-VL's position_ids
 * [3, 1, seq] of one sequence, squeezed; or its vision tower's pos_ids
 * [patches, 2], transposed), computed on the device by
 * clpe_enqueue_mrope_cache in chunks and written as two .npy files
 * [tokens, rotary_dim].
 *
 * As for the consecutive cache (cmd_rope_cache.c): the configuration and
 * the positions are checked on the host first, both outputs are opened and
 * their room checked before any device work, and the two files appear
 * together, only when both are complete (cli_rope_outputs_open).
 */
#include "cli.h"
#include "npy.h"
#include "output_file.h"
#include "rope_cache.h"
#include "stderr_capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Rows per device call, as for the consecutive cache. */
#define MROPE_CACHE_CHUNK_BYTES (1u << 20)
/* Largest positions file read: 2^31 int64 values. */
#define POSITIONS_MAX ((uint64_t)1 << 31)

/* The positions file: int64 [streams, tokens] (or [tokens] for one
 * stream), C order, little-endian. */
typedef struct positions_file {
    int64_t *values;   /* stream j of token t at j * tokens + t */
    uint64_t tokens;
} positions_file;

static int read_positions(const char *path, uint32_t streams, positions_file *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("--positions: cannot open '%s': %s", path, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    unsigned char head[NPY_HEADER_MAX * 16];
    size_t got = fread(head, 1, sizeof head, f);
    npy_info info;
    int rc = CLI_EXIT_USAGE;
    if (npy_parse_header(head, got, &info) != 0) {
        cli_error("--positions: '%s' is not a .npy file", path);
        goto done;
    }
    const uint64_t rows = info.ndim == 2 ? info.shape[0] : 1;
    const uint64_t cols = info.ndim == 2 ? info.shape[1] : info.shape[0];
    if (strcmp(info.descr, "<i8") != 0 || info.fortran_order || info.ndim < 1) {
        cli_error("--positions: '%s' must hold int64 ('<i8') values in C order, got '%s'%s",
                  path, info.descr, info.fortran_order ? " in Fortran order" : "");
        goto done;
    }
    if (rows != streams) {
        cli_error("--positions: '%s' has %llu stream%s; the sections give %u", path,
                  (unsigned long long)rows, rows == 1 ? "" : "s", (unsigned)streams);
        goto done;
    }
    if (cols == 0 || cols > POSITIONS_MAX / rows) {
        cli_error("--positions: '%s' must hold 1 to %llu tokens, got %llu", path,
                  (unsigned long long)(POSITIONS_MAX / rows), (unsigned long long)cols);
        goto done;
    }
    const size_t count = (size_t)(rows * cols);
    out->values = malloc(count * sizeof *out->values);
    if (!out->values) {
        cli_error("--positions: out of memory for %zu positions", count);
        rc = CLI_EXIT_RUNTIME;
        goto done;
    }
    if (fseek(f, (long)info.data_offset, SEEK_SET) != 0 ||
        fread(out->values, sizeof *out->values, count, f) != count || fgetc(f) != EOF) {
        cli_error("--positions: '%s' does not hold exactly the %zu values its header "
                  "announces", path, count);
        free(out->values);
        out->values = NULL;
        goto done;
    }
    out->tokens = cols;
    rc = CLI_EXIT_OK;
done:
    fclose(f);
    return rc;
}

/* The multimodal configuration the flags describe. */
static clpe_mrope_config mrope_config_from_args(const cli_args *a, const cli_rope_factors *fac,
                                                const positions_file *pos)
{
    clpe_mrope_config m = a->vision ? clpe_mrope_config_vision(a->head_dim)
                                    : (clpe_mrope_config){.streams = a->mrope_streams};
    m.rope = cli_rope_config_from_args(a, 0);
    m.rope.short_factor = fac->short_factor;
    m.rope.long_factor = fac->long_factor;
    if (a->mrope_streams) {
        m.streams = a->mrope_streams;
        memset(m.section, 0, sizeof m.section);
        memcpy(m.section, a->mrope_section, a->mrope_streams * sizeof m.section[0]);
    } else {
        /* --vision alone: the rotary pairs in two halves (rows, columns) */
        uint32_t rotary = m.rope.rotary_dim ? m.rope.rotary_dim : m.rope.head_dim;
        m.section[0] = m.section[1] = rotary / 4;
    }
    /* dynamic NTK and LongRoPE take Hugging Face's max(position_ids) + 1 */
    int64_t top = -1;
    for (uint64_t k = 0; k < pos->tokens * m.streams; ++k)
        top = pos->values[k] > top ? pos->values[k] : top;
    m.rope.seq_len = top >= 0 ? (uint64_t)top + 1 : 0;
    return m;
}

static clpe_mrope *mrope_create(const cli_device *dev, const clpe_mrope_config *cfg)
{
    char log[8192];
    clpe_build_log bl = {log, sizeof log, 0};
    clpe_status st = CLPE_SUCCESS;
    char printed[240];
    cli_stderr_hold(); /* the driver's compiler may print; the tool speaks one line */
    clpe_mrope *m = clpe_mrope_create(dev->context, dev->device, cfg, &bl, &st);
    cli_stderr_restore(printed, sizeof printed);
    if (!m)
        cli_error("cannot create the multimodal rotary object on '%s': %s (%d)", dev->name,
                  clpe_status_string(st), (int)st);
    return m;
}

typedef struct mrope_cache_job {
    const cli_device *dev;
    clpe_mrope *mrope;
    uint64_t tokens;
    uint32_t cols;
    int dtype;
    size_t esize, chunk_rows;
    cl_mem positions, cos_buf, sin_buf;
    unsigned char *host;
} mrope_cache_job;

/* Compute every chunk and write the cos (want_sin 0) or sin array into the
 * open output, left open for the caller to commit or abort. */
static int write_array(const mrope_cache_job *job, int want_sin, cli_outfile *out,
                       const char *flag)
{
    int rc = CLI_EXIT_RUNTIME;
    const size_t row_bytes = job->cols * job->esize;
    errno = 0;
    if (npy_write_header(out->f, npy_descr_for_dtype(job->dtype), job->tokens, job->cols))
        goto write_failed;
    for (uint64_t row = 0; row < job->tokens;) {
        const size_t n = job->tokens - row < job->chunk_rows ? (size_t)(job->tokens - row)
                                                             : job->chunk_rows;
        clpe_mrope_positions pos = {.buffer = job->positions,
                                    .offset = (size_t)row * sizeof(int64_t),
                                    .stream_pitch = (size_t)job->tokens};
        clpe_tensor cos_t = {.buffer = job->cos_buf}, sin_t = {.buffer = job->sin_buf};
        clpe_status st = clpe_enqueue_mrope_cache(job->mrope, job->dev->queue, n, &pos, &cos_t,
                                                  &sin_t, 0, NULL, NULL);
        if (st == CLPE_SUCCESS)
            st = clEnqueueReadBuffer(job->dev->queue, want_sin ? job->sin_buf : job->cos_buf,
                                     CL_TRUE, 0, n * row_bytes, job->host, 0, NULL, NULL);
        if (st != CLPE_SUCCESS) {
            cli_status_error("multimodal rope cache", st);
            return rc;
        }
        if (fwrite(job->host, row_bytes, n, out->f) != n)
            goto write_failed;
        row += n;
    }
    return CLI_EXIT_OK;
write_failed:
    cli_outfile_write_error(out, flag, errno ? errno : EIO);
    return rc;
}

int cli_rope_cache_multimodal(const cli_args *args, const cli_rope_factors *fac)
{
    const uint32_t streams = args->mrope_streams ? args->mrope_streams : 2;
    positions_file pos = {NULL, 0};
    int rc = read_positions(args->positions_file, streams, &pos);
    if (rc != CLI_EXIT_OK)
        return rc;
    cli_device dev;
    memset(&dev, 0, sizeof dev);
    mrope_cache_job job;
    memset(&job, 0, sizeof job);
    cli_outfile cos_out, sin_out;
    memset(&cos_out, 0, sizeof cos_out);
    memset(&sin_out, 0, sizeof sin_out);
    cli_outfile *const outs[2] = {&cos_out, &sin_out};
    rc = CLI_EXIT_USAGE;
    if (args->have_seq && args->seq != pos.tokens) {
        cli_error("--seq %llu disagrees with the %llu tokens of '%s'",
                  (unsigned long long)args->seq, (unsigned long long)pos.tokens,
                  args->positions_file);
        goto done;
    }
    clpe_mrope_config cfg = mrope_config_from_args(args, fac, &pos);

    /* The configuration, checked without a device: bad values fail here. */
    clpe_status st = CLPE_SUCCESS;
    clpe_mrope *host = clpe_mrope_create_host(&cfg, &st);
    if (!host) {
        cli_error("rope-cache: %s (%d)", clpe_status_string(st), (int)st);
        goto done;
    }
    clpe_mrope_release(host);

    /* Both outputs open, with room for both, before any device work. */
    const clpe_rope_config *rope = &cfg.rope;
    if ((rc = cli_rope_outputs_open(args, pos.tokens,
                                    rope->rotary_dim ? rope->rotary_dim : rope->head_dim,
                                    rope->dtype, outs)) != CLI_EXIT_OK)
        goto done;
    if ((rc = cli_device_open(args->device, &dev)) != CLI_EXIT_OK)
        goto done;
    rc = CLI_EXIT_RUNTIME;
    job.dev = &dev;
    job.tokens = pos.tokens;
    job.cols = rope->rotary_dim ? rope->rotary_dim : rope->head_dim;
    job.dtype = rope->dtype;
    job.esize = dtype_size(rope->dtype);
    const size_t row_bytes = job.cols * job.esize;
    job.chunk_rows = MROPE_CACHE_CHUNK_BYTES / row_bytes ? MROPE_CACHE_CHUNK_BYTES / row_bytes : 1;
    if (job.chunk_rows > job.tokens)
        job.chunk_rows = (size_t)job.tokens;
    if (!cli_device_supports(dev.device, rope->dtype)) {
        cli_error("device '%s' does not support --dtype %s", dev.name,
                  cli_dtype_name(rope->dtype));
        goto done;
    }
    job.mrope = mrope_create(&dev, &cfg);
    if (!job.mrope)
        goto done;
    const size_t chunk_bytes = job.chunk_rows * row_bytes;
    const size_t positions_bytes = (size_t)(pos.tokens * streams) * sizeof(int64_t);
    cl_int err = CL_SUCCESS;
    job.positions = clCreateBuffer(dev.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   positions_bytes, pos.values, &err);
    if (job.positions)
        job.cos_buf = clCreateBuffer(dev.context, CL_MEM_READ_WRITE, chunk_bytes, NULL, &err);
    if (job.cos_buf)
        job.sin_buf = clCreateBuffer(dev.context, CL_MEM_READ_WRITE, chunk_bytes, NULL, &err);
    job.host = malloc(chunk_bytes);
    if (!job.sin_buf || !job.host) {
        cli_error("cannot allocate the device buffers (%zu bytes of positions, two of %zu) (%d)",
                  positions_bytes, chunk_bytes, (int)err);
        goto done;
    }
    const double t0 = cli_now();
    for (int i = 0; i < 2; ++i)
        if ((rc = write_array(&job, i, outs[i], CLI_ROPE_OUTPUT_FLAGS[i])) != CLI_EXIT_OK)
            goto done;
    if ((rc = cli_outfile_commit_all(outs, CLI_ROPE_OUTPUT_FLAGS, 2)) != CLI_EXIT_OK)
        goto done;
    if (!args->quiet)
        cli_note("wrote %s and %s: [%llu, %u] %s, %u stream%s (%s), %s scaling, positions "
                 "from %s, device '%s', %.3f s",
                 args->cos_out, args->sin_out, (unsigned long long)job.tokens,
                 (unsigned)job.cols, cli_dtype_name(rope->dtype), (unsigned)cfg.streams,
                 cfg.streams == 1 ? "" : "s",
                 cfg.ladder == CLPE_MROPE_LADDER_PER_STREAM ? "a frequency ladder each"
                                                            : "one frequency ladder",
                 cli_scaling_name(rope->scaling), args->positions_file, dev.name,
                 cli_now() - t0);
done:
    cli_outfile_abort(&cos_out);
    cli_outfile_abort(&sin_out);
    if (job.positions) clReleaseMemObject(job.positions);
    if (job.cos_buf) clReleaseMemObject(job.cos_buf);
    if (job.sin_buf) clReleaseMemObject(job.sin_buf);
    free(job.host);
    clpe_mrope_release(job.mrope);
    cli_device_close(&dev);
    free(pos.values);
    return rc;
}
