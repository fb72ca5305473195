/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_rope_cache.c - `clpe rope-cache`: the rotary cos/sin cache of N
 * consecutive positions, or of every token of a positions file with a
 * position per stream (M-RoPE, the vision rotary), each [N, rotary_dim], as
 * two .npy files, computed on the device by clpe_enqueue_rope_cache_at in
 * chunks.
 *
 * The configuration (and the positions) are checked on the host first
 * (clpe_rope_create_host), so a bad combination fails before any file or
 * device is touched. The two files are a pair: both paths are opened, the
 * room for both checked, both written in full as new files, and only then
 * both renamed into place together (cli_outfile_commit_all, signals held),
 * so a failure or a signal at any point leaves both old files or both new
 * ones, never one of each.
 */
#include "cli.h"
#include "common/npy.h"
#include "hf_config.h"
#include "rope_cache.h"
#include "signals.h"
#include "stderr_capture.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Rows per device call: about 1 MiB of each array, enough to amortise a
 * launch, small enough to stay in a CPU device's caches. */
#define ROPE_CACHE_CHUNK_BYTES (1u << 20)

/* The clpe_rope_config the flags describe. */
clpe_rope_config cli_rope_config_from_args(const cli_args *a, int64_t start)
{
    clpe_rope_config cfg = clpe_rope_config_default(a->head_dim);
    cfg.rotary_dim = a->have_rotary_dim ? a->rotary_dim : a->head_dim;
    if (a->have_base)
        cfg.base = a->base;
    if (a->pairing != CLI_UNSET)
        cfg.pairing = (clpe_rope_pairing)a->pairing;
    if (a->dtype != CLI_UNSET)
        cfg.dtype = (clpe_dtype)a->dtype;
    if (a->scaling != CLI_UNSET)
        cfg.scaling = (clpe_rope_scaling)a->scaling;
    if (a->have_factor)
        cfg.factor = a->factor;
    if (a->have_original_max_position)
        cfg.original_max_position = a->original_max_position;
    if (a->have_low_freq_factor)
        cfg.low_freq_factor = a->low_freq_factor;
    if (a->have_high_freq_factor)
        cfg.high_freq_factor = a->high_freq_factor;
    if (a->have_beta_fast)
        cfg.beta_fast = a->beta_fast;
    if (a->have_beta_slow)
        cfg.beta_slow = a->beta_slow;
    /* Dynamic NTK grows the base with the length of the whole call,
     * Hugging Face's max(position_ids) + 1: here the last row's position
     * plus one (0, the configured length, when no row is past position 0). */
    const int64_t last = (int64_t)((uint64_t)start + a->seq - 1);
    cfg.seq_len = last >= 0 ? (uint64_t)last + 1 : 0;
    return cfg;
}

/* The rotary object on the device (with position streams when sections
 * is given), printing the failure on error. */
static clpe_rope *rope_create(const cli_device *dev, const clpe_rope_config *cfg,
                              const clpe_mrope_config *sections)
{
    char log[8192];
    clpe_build_log bl = {log, sizeof log, 0};
    clpe_status st = CLPE_SUCCESS;
    log[0] = '\0';
    char printed[240];
    cli_stderr_hold(); /* the driver's compiler may print; the tool speaks one line */
    clpe_rope *rope = sections
                          ? clpe_rope_create_mrope(dev->context, dev->device, sections, &bl, &st)
                          : clpe_rope_create(dev->context, dev->device, cfg, &bl, &st);
    cli_stderr_restore(printed, sizeof printed);
    if (rope)
        return rope;
    if (st == CLPE_ERROR_UNSUPPORTED_DTYPE)
        cli_error("device '%s' does not support --dtype %s", dev->name,
                  cli_dtype_name(cfg->dtype));
    else
        cli_error("cannot create the rotary object on '%s': %s (%d)", dev->name,
                  clpe_status_string(st), (int)st);
    return NULL;
}

/* Everything one file needs. */
typedef struct rope_cache_job {
    const cli_device *dev;
    clpe_rope *rope;
    int64_t start;        /* consecutive positions from start, */
    cl_mem positions;     /* or a position per stream, [seq, streams] on the device */
    uint32_t streams;
    uint64_t seq;
    uint32_t cols;        /* rotary_dim */
    int dtype;
    size_t esize;
    size_t chunk_rows;
    cl_mem cos_buf, sin_buf;
    unsigned char *host;  /* chunk_rows rows */
} rope_cache_job;

/* Compute every chunk and write the cos (want_sin 0) or sin array into the
 * open output. Returns an exit status, after printing why on failure; the
 * output is left open either way (the caller commits or aborts it). */
static int write_array(const rope_cache_job *job, int want_sin, cli_outfile *out,
                       const char *flag)
{
    int rc = CLI_EXIT_RUNTIME;
    const size_t row_bytes = job->cols * job->esize;
    errno = 0;
    if (npy_write_header(out->f, npy_descr_for_dtype(job->dtype), job->seq, job->cols))
        goto write_failed;
    for (uint64_t row = 0; row < job->seq;) {
        const size_t n = job->seq - row < job->chunk_rows ? (size_t)(job->seq - row)
                                                          : job->chunk_rows;
        /* the stream positions lie token-first, so a chunk is a range */
        clpe_positions pos =
            job->positions
                ? (clpe_positions){.source = CLPE_POSITIONS_STREAMS_TOKEN_FIRST,
                                   .buffer = job->positions,
                                   .offset = (size_t)row * job->streams * sizeof(int64_t)}
                : (clpe_positions){.source = CLPE_POSITIONS_START,
                                   .start = (int64_t)((uint64_t)job->start + row)};
        clpe_tensor cos_t = {.buffer = job->cos_buf}, sin_t = {.buffer = job->sin_buf};
        clpe_status st = clpe_enqueue_rope_cache_at(job->rope, job->dev->queue, n, &pos, &cos_t,
                                                    &sin_t, 0, NULL, NULL);
        if (st == CLPE_SUCCESS)
            st = clEnqueueReadBuffer(job->dev->queue, want_sin ? job->sin_buf : job->cos_buf,
                                     CL_TRUE, 0, n * row_bytes, job->host, 0, NULL, NULL);
        if (st != CLPE_SUCCESS) {
            cli_status_error("rope cache", st);
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

/* The room both files need, checked against their file systems before
 * either is written (two files on one file system need the sum). */
static int check_room(cli_outfile *const *outs, const char *const *flags, const char *const *paths,
                      size_t n, uint64_t file_bytes)
{
    for (size_t i = 0; i < n; ++i) {
        uint64_t free_bytes = 0;
        struct stat dir_i;
        if (cli_outfile_free_bytes(outs[i], &free_bytes) != 0 || fstat(outs[i]->dir_fd, &dir_i))
            continue;
        uint64_t need = 0;
        size_t sharing = 0;
        for (size_t j = 0; j < n; ++j) {
            struct stat dir_j;
            if (outs[j]->dir_open && fstat(outs[j]->dir_fd, &dir_j) == 0 &&
                dir_j.st_dev == dir_i.st_dev) {
                need = need + file_bytes < need ? UINT64_MAX : need + file_bytes;
                ++sharing;
            }
        }
        if (need > free_bytes) {
            char need_s[64], have_s[64];
            cli_format_bytes_apart(need, free_bytes, need_s, have_s, sizeof need_s);
            if (sharing > 1)
                cli_error("cannot write %s '%s' and %s '%s': together they need %s, only %s "
                          "free", flags[0], paths[0], flags[1], paths[1], need_s, have_s);
            else
                cli_error("cannot write %s '%s': needs %s, only %s free", flags[i], paths[i],
                          need_s, have_s);
            return CLI_EXIT_RUNTIME;
        }
    }
    return CLI_EXIT_OK;
}

const char *const CLI_ROPE_OUTPUT_FLAGS[2] = {"--cos-out", "--sin-out"};

int cli_rope_outputs_open(const cli_args *a, uint64_t rows, uint32_t cols, int dtype,
                          cli_outfile *const outs[2])
{
    const char *const paths[2] = {a->cos_out, a->sin_out};
    memset(outs[0], 0, sizeof *outs[0]);
    memset(outs[1], 0, sizeof *outs[1]);
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < 2 && rc == CLI_EXIT_OK; ++i)
        rc = cli_outfile_open(outs[i], paths[i], CLI_ROPE_OUTPUT_FLAGS[i]);
    if (rc == CLI_EXIT_OK) {
        char header[NPY_HEADER_MAX];
        const size_t header_len =
            npy_header(header, sizeof header, npy_descr_for_dtype(dtype), rows, cols);
        /* [rows, cols] fits in 64 bits: checked by the argument parser, or
         * by the reader of the positions file. */
        uint64_t file_bytes = rows * cols * dtype_size(dtype);
        file_bytes = file_bytes + header_len < file_bytes ? UINT64_MAX : file_bytes + header_len;
        rc = check_room(outs, CLI_ROPE_OUTPUT_FLAGS, paths, 2, file_bytes);
    }
    if (rc != CLI_EXIT_OK) {
        cli_outfile_abort(outs[0]);
        cli_outfile_abort(outs[1]);
    }
    return rc;
}

/* Every file rope-cache names, inputs and outputs alike, must be a file of
 * its own; an output a file (not a stream) must be named .npy. */
static int check_paths(const cli_args *a)
{
    int rc;
    for (size_t i = 0; i < 2; ++i)
        if ((rc = cli_output_check_name(i ? a->sin_out : a->cos_out, CLI_ROPE_OUTPUT_FLAGS[i],
                                        ".npy")) != CLI_EXIT_OK)
            return rc;
    const char *paths[6] = {a->cos_out, a->sin_out};
    const char *flags[6] = {CLI_ROPE_OUTPUT_FLAGS[0], CLI_ROPE_OUTPUT_FLAGS[1]};
    size_t n = 2;
    const struct {
        const char *path, *flag;
    } inputs[] = {{a->short_factor_file, "--short-factor-file"},
                  {a->long_factor_file, "--long-factor-file"},
                  {a->positions_file, "--positions"},
                  {a->hf_config, "--hf-config"}};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; ++i)
        if (inputs[i].path) {
            paths[n] = inputs[i].path;
            flags[n++] = inputs[i].flag;
        }
    return cli_paths_distinct(paths, flags, n);
}

/* The cache of seq rows: consecutive positions from start, or the
 * positions per stream of every token (token_first, [seq, streams], with
 * sections). Returns an exit status, after printing why on failure. */
static int rope_cache_run(const cli_args *args, const clpe_rope_config *cfg,
                          const clpe_mrope_config *sections, const int64_t *token_first,
                          int64_t start, uint64_t seq)
{
    cli_device dev;
    memset(&dev, 0, sizeof dev);
    rope_cache_job job;
    memset(&job, 0, sizeof job);
    int rc = CLI_EXIT_USAGE;

    /* The configuration, checked without a device: bad values fail here. */
    clpe_status st = CLPE_SUCCESS;
    clpe_rope *host_rope = sections ? clpe_rope_create_mrope_host(sections, &st)
                                    : clpe_rope_create_host(cfg, &st);
    if (!host_rope) {
        char why[256];
        if (sections)
            clpe_mrope_config_check(sections, why, sizeof why);
        else
            clpe_rope_config_check(cfg, why, sizeof why);
        cli_error("rope-cache: %s (%d): %s", clpe_status_string(st), (int)st, why);
        return rc;
    }
    clpe_rope_release(host_rope);

    const uint32_t cols = cfg->rotary_dim ? cfg->rotary_dim : cfg->head_dim;
    cli_outfile cos_out, sin_out;
    cli_outfile *const outs[2] = {&cos_out, &sin_out};
    if ((rc = cli_rope_outputs_open(args, seq, cols, cfg->dtype, outs)) != CLI_EXIT_OK)
        return rc;
    if ((rc = cli_device_open(args->device, &dev)) != CLI_EXIT_OK) {
        cli_outfile_abort(&cos_out);
        cli_outfile_abort(&sin_out);
        return rc;
    }
    rc = CLI_EXIT_RUNTIME;
    job.dev = &dev;
    job.start = start;
    job.streams = sections ? sections->streams : 1;
    job.seq = seq;
    job.cols = cols;
    job.dtype = cfg->dtype;
    job.esize = dtype_size(cfg->dtype);
    const size_t row_bytes = job.cols * job.esize;
    job.chunk_rows = ROPE_CACHE_CHUNK_BYTES / row_bytes ? ROPE_CACHE_CHUNK_BYTES / row_bytes : 1;
    if (job.chunk_rows > job.seq)
        job.chunk_rows = (size_t)job.seq;
    if (!cli_device_supports(dev.device, cfg->dtype)) {
        cli_error("device '%s' does not support --dtype %s", dev.name,
                  cli_dtype_name(cfg->dtype));
        goto done;
    }
    job.rope = rope_create(&dev, cfg, sections);
    if (!job.rope)
        goto done;
    cli_signals_ignore_file_size(); /* the kernels are built: no compiler runs from here */
    const size_t chunk_bytes = job.chunk_rows * row_bytes;
    /* [seq, streams] int64 fits: the reader of the positions file bounds it */
    const size_t positions_bytes = token_first ? (size_t)seq * job.streams * sizeof(int64_t) : 0;
    cl_int err = CL_SUCCESS;
    if (token_first)
        job.positions = clCreateBuffer(dev.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                       positions_bytes, (void *)token_first, &err);
    if (!token_first || job.positions)
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
    if (args->quiet)
        goto done;
    char positions[160];
    if (sections)
        snprintf(positions, sizeof positions, "%u stream%s (%s), positions from %s",
                 (unsigned)sections->streams, sections->streams == 1 ? "" : "s",
                 sections->ladder == CLPE_MROPE_LADDER_PER_STREAM ? "a frequency ladder each"
                                                                   : "one frequency ladder",
                 args->positions_file);
    else
        snprintf(positions, sizeof positions, "positions %lld..%lld", (long long)start,
                 (long long)((uint64_t)start + seq - 1));
    cli_note("wrote %s and %s: [%llu, %u] %s, %s pairing, %s scaling, %s, device '%s', %.3f s",
             args->cos_out, args->sin_out, (unsigned long long)job.seq, (unsigned)job.cols,
             cli_dtype_name(cfg->dtype), cli_pairing_name(cfg->pairing),
             cli_scaling_name(cfg->scaling), positions, dev.name, cli_now() - t0);
done:
    cli_outfile_abort(&cos_out);
    cli_outfile_abort(&sin_out);
    if (job.positions) clReleaseMemObject(job.positions);
    if (job.cos_buf) clReleaseMemObject(job.cos_buf);
    if (job.sin_buf) clReleaseMemObject(job.sin_buf);
    free(job.host);
    clpe_rope_release(job.rope);
    cli_device_close(&dev);
    return rc;
}

/* The cache of consecutive positions, LongRoPE's lists in f. */
static int rope_cache_consecutive(const cli_args *args, const cli_rope_factors *f)
{
    const int64_t start = args->have_start ? args->start : 0;
    clpe_rope_config cfg = cli_rope_config_from_args(args, start);
    cfg.short_factor = f->short_factor;
    cfg.long_factor = f->long_factor;
    return rope_cache_run(args, &cfg, NULL, NULL, start, args->seq);
}

/* The cache of every token of the positions file, with position streams. */
static int rope_cache_multimodal(const cli_args *args, const cli_rope_factors *f)
{
    cli_rope_positions pos;
    int rc = cli_rope_positions_read(args, &pos);
    if (rc != CLI_EXIT_OK)
        return rc;
    clpe_mrope_config cfg = cli_mrope_config_from_args(args, f, &pos);
    rc = rope_cache_run(args, &cfg.rope, &cfg, pos.token_first, 0, pos.tokens);
    free(pos.token_first);
    return rc;
}

/* The cache of a model's config.json (hf_config.c): consecutive positions,
 * or with --positions the position streams of its rope_scaling.mrope_section.
 * Dynamic NTK and LongRoPE take max(position) + 1 as their length, as the
 * flags' configuration does. */
static int rope_cache_hf(const cli_args *args)
{
    cli_hf_rope hf;
    int rc = cli_hf_config_read(args->hf_config, &hf);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (args->dtype != CLI_UNSET)
        hf.cfg.dtype = (clpe_dtype)args->dtype;
    const uint32_t cols = hf.cfg.rotary_dim ? hf.cfg.rotary_dim : hf.cfg.head_dim;
    if (!args->positions_file) {
        const int64_t start = args->have_start ? args->start : 0;
        const int64_t last = (int64_t)((uint64_t)start + args->seq - 1);
        hf.cfg.seq_len = last >= 0 ? (uint64_t)last + 1 : 0;
        if (cols && args->seq > UINT64_MAX / cols / dtype_size(hf.cfg.dtype)) {
            cli_error("--seq %llu times the rotary width %u is too large (overflows 64 bits)",
                      (unsigned long long)args->seq, (unsigned)cols);
            rc = CLI_EXIT_USAGE;
        } else {
            rc = rope_cache_run(args, &hf.cfg, NULL, NULL, start, args->seq);
        }
        cli_hf_rope_free(&hf);
        return rc;
    }
    if (!hf.streams) {
        cli_error("--positions needs a config whose rope_scaling has an mrope_section");
        cli_hf_rope_free(&hf);
        return CLI_EXIT_USAGE;
    }
    /* the positions file is read against the config's sections */
    cli_args with_sections = *args;
    with_sections.mrope_streams = hf.streams;
    memcpy(with_sections.mrope_section, hf.section, sizeof hf.section);
    cli_rope_positions pos;
    rc = cli_rope_positions_read(&with_sections, &pos);
    if (rc == CLI_EXIT_OK) {
        clpe_mrope_config m = {.rope = hf.cfg, .streams = hf.streams};
        memcpy(m.section, hf.section, sizeof m.section);
        int64_t top = -1;
        for (uint64_t k = 0; k < pos.tokens * m.streams; ++k)
            top = pos.token_first[k] > top ? pos.token_first[k] : top;
        m.rope.seq_len = top >= 0 ? (uint64_t)top + 1 : 0;
        rc = rope_cache_run(args, &m.rope, &m, pos.token_first, 0, pos.tokens);
        free(pos.token_first);
    }
    cli_hf_rope_free(&hf);
    return rc;
}

/* LongRoPE's factor lists come from files, read once; positions from a file
 * (rope_cache_positions.c) take position streams. */
int cli_cmd_rope_cache(const cli_args *args)
{
    int rc = check_paths(args);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (args->hf_config)
        return rope_cache_hf(args);
    cli_rope_factors f;
    rc = cli_rope_factors_read(args, &f);
    if (rc != CLI_EXIT_OK)
        return rc;
    rc = args->positions_file ? rope_cache_multimodal(args, &f)
                              : rope_cache_consecutive(args, &f);
    cli_rope_factors_free(&f);
    return rc;
}
