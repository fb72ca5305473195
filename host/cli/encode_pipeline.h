/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encode_pipeline.h - the device-to-file pipeline of `clpe encode`.
 *
 * Four device buffers in host-visible memory rotate through the chunks. The
 * calling thread computes each chunk on the device and maps it for reading
 * (neither waits); a writer thread waits for each mapped chunk in turn and
 * writes it to the file; the calling thread unmaps a written chunk's buffer
 * and fills it with the next one. So the file is written without pause
 * while the device computes and transfers the chunks after it, and the
 * writer never waits on an enqueue. Where the device shares host memory the
 * map copies nothing; on a discrete GPU it is a DMA into pinned memory.
 *
 * A regular file's bytes are reserved first (cli_reserve), by the writer
 * while the device computes the first chunks: the file system then hands
 * out its pages in one call, not in every write.
 *
 * Before the first chunk, each launch size the run uses (the chunk, and a
 * shorter last chunk) is run once: drivers compile a kernel per launch
 * shape on first use (PoCL does), which would otherwise stall the writer
 * for a good part of a second, once at the start and once at the end.
 */
#ifndef CLPE_CLI_ENCODE_PIPELINE_H
#define CLPE_CLI_ENCODE_PIPELINE_H

#include "cli.h"

#include <stdint.h>

typedef struct encode_job {
    const cli_device *dev;
    clpe_encoder *enc;
    int64_t start;         /* first position; start + seq - 1 must fit */
    uint64_t seq;          /* rows, >= 1 */
    uint64_t row_bytes;
    uint64_t chunk_rows;   /* >= 1; chunk_rows * row_bytes fits a size_t and a device buffer */
    int fd;                /* the data goes here, in order, after what fd holds */
    int reserve;           /* 1: fd is a regular file; the writer first reserves the
                              data's bytes (cli_reserve) while the first chunks compute */
    const char *what;      /* names the launch in an error line (NULL: "table") */
    /* Called by the writer thread after each chunk (may be NULL). */
    void (*progress)(void *ctx, uint64_t bytes_written);
    void *progress_ctx;
} encode_job;

/* Where the writer thread's time went: in write() calls, or waiting for the
 * device (a well-fed pipeline waits only for the first chunk). */
typedef struct encode_timing {
    double started_at; /* cli_now() when the first chunk was enqueued, after warm-up */
    double started_cpu; /* cli_cpu_seconds() then */
    double reserving_s; /* in cli_reserve, with job->reserve */
    double writing_s;
    double waiting_s;
    double writer_cpu_s; /* the writer thread's CPU time, when every chunk is written:
                            below reserving_s + writing_s when other threads took its core */
} encode_timing;

/* Run the job. Returns 0 when every row is written. On failure returns -1:
 * a device failure has been printed, or *write_err holds the errno of the
 * write that failed (not printed: the caller names the file). timing may be
 * NULL. */
int encode_pipeline_run(const encode_job *job, int *write_err, encode_timing *timing);

#endif
