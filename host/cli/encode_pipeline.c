/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encode_pipeline.c - compute on the device, map and write to the file, all
 * at once (see encode_pipeline.h).
 */
#include "encode_pipeline.h"

#include "plain_write.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

/* Chunks in flight: one being written, the others computing or mapped. */
#define SLOTS 4

typedef struct slot {
    cl_mem buf;
    void *host;       /* mapped pointer, valid once `mapped` completes */
    cl_event mapped;  /* the map, enqueued after the table that fills buf */
    uint64_t rows;
    int filled;       /* 1: handed to the writer; 0: free for the next chunk */
} slot;

typedef struct pipeline {
    const encode_job *job;
    uint64_t nchunks;
    slot slots[SLOTS];
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int producer_stopped; /* the calling thread failed: no more chunks come */
    int writer_stopped;   /* the writer failed: nothing more is written */
    int write_err;
    encode_timing timing; /* the writer's */
} pipeline;

static uint64_t chunk_rows_of(const pipeline *p, uint64_t c)
{
    uint64_t chunk = p->job->chunk_rows;
    return c + 1 < p->nchunks ? chunk : p->job->seq - c * chunk;
}

/* Compute chunk c into its slot and map it for reading; neither waits. */
static int fill(pipeline *p, uint64_t c)
{
    const encode_job *job = p->job;
    slot *sl = &p->slots[c % SLOTS];
    uint64_t rows = chunk_rows_of(p, c);
    cl_event computed = NULL;
    clpe_tensor t = {.buffer = sl->buf};
    clpe_status st = clpe_enqueue_table(job->enc, job->dev->queue,
                                        (int64_t)((uint64_t)job->start + c * job->chunk_rows),
                                        (size_t)rows, &t, 0, NULL, &computed);
    if (st != CLPE_SUCCESS) {
        cli_status_error(p->job->what ? p->job->what : "table", st);
        return -1;
    }
    cl_int err = CL_SUCCESS;
    sl->host = clEnqueueMapBuffer(job->dev->queue, sl->buf, CL_FALSE, CL_MAP_READ, 0,
                                  (size_t)(rows * job->row_bytes), 1, &computed, &sl->mapped,
                                  &err);
    clReleaseEvent(computed);
    if (!sl->host || err != CL_SUCCESS) {
        cli_status_error("cannot map a chunk for reading", err);
        sl->host = NULL;
        return -1;
    }
    sl->rows = rows;
    clFlush(job->dev->queue);
    return 0;
}

static void *writer_main(void *arg)
{
    pipeline *p = arg;
    const encode_job *job = p->job;
    uint64_t written = 0;
    const double cpu0 = cli_thread_cpu_seconds();
    if (job->reserve) {
        const double t_reserve = cli_now();
        const off_t at = lseek(job->fd, 0, SEEK_CUR);
        int err = at < 0 ? 0 : cli_reserve(job->fd, (uint64_t)at, job->seq * job->row_bytes);
        p->timing.reserving_s = cli_now() - t_reserve;
        if (err) {
            pthread_mutex_lock(&p->lock);
            p->writer_stopped = 1;
            p->write_err = err;
            pthread_cond_broadcast(&p->changed);
            pthread_mutex_unlock(&p->lock);
            return NULL;
        }
    }
    for (uint64_t c = 0; c < p->nchunks; ++c) {
        slot *sl = &p->slots[c % SLOTS];
        const double t_wait = cli_now();
        pthread_mutex_lock(&p->lock);
        while (!sl->filled && !p->producer_stopped)
            pthread_cond_wait(&p->changed, &p->lock);
        int ready = sl->filled;
        pthread_mutex_unlock(&p->lock);
        if (!ready)
            return NULL;
        cl_int err = clWaitForEvents(1, &sl->mapped);
        const double t_write = cli_now();
        p->timing.waiting_s += t_write - t_wait;
        clReleaseEvent(sl->mapped);
        sl->mapped = NULL;
        const uint64_t bytes = sl->rows * job->row_bytes;
        int write_err = 0;
        if (err != CL_SUCCESS)
            cli_status_error("device failed while encoding", err);
        else
            write_err = cli_write_all(job->fd, sl->host, (size_t)bytes);
        p->timing.writing_s += cli_now() - t_write;
        const int failed = err != CL_SUCCESS || write_err;
        pthread_mutex_lock(&p->lock);
        if (failed) {
            p->writer_stopped = 1;
            p->write_err = write_err;
        } else {
            sl->filled = 0; /* the calling thread may refill it from here on */
        }
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        if (failed)
            return NULL;
        written += bytes;
        if (job->progress)
            job->progress(job->progress_ctx, written);
    }
    /* Read once, at the end: the timing is printed only when every chunk
     * is written. */
    p->timing.writer_cpu_s = cli_thread_cpu_seconds() - cpu0;
    return NULL;
}

/* Run the launch sizes of the job once, untimed (see encode_pipeline.h). */
static int warm_up(pipeline *p)
{
    const encode_job *job = p->job;
    uint64_t sizes[2] = {chunk_rows_of(p, 0), chunk_rows_of(p, p->nchunks - 1)};
    for (int k = 0; k < (sizes[1] != sizes[0] ? 2 : 1); ++k) {
        clpe_tensor t = {.buffer = p->slots[0].buf};
        clpe_status st = clpe_enqueue_table(job->enc, job->dev->queue, job->start,
                                            (size_t)sizes[k], &t, 0, NULL, NULL);
        if (st != CLPE_SUCCESS) {
            cli_status_error(p->job->what ? p->job->what : "table", st);
            return -1;
        }
    }
    cl_int err = clFinish(job->dev->queue);
    if (err != CL_SUCCESS) {
        cli_status_error("device failed while encoding", err);
        return -1;
    }
    return 0;
}

/* Produce every chunk in order, each into a slot the writer has finished. */
static int produce(pipeline *p)
{
    const encode_job *job = p->job;
    for (uint64_t c = 0; c < p->nchunks; ++c) {
        slot *sl = &p->slots[c % SLOTS];
        pthread_mutex_lock(&p->lock);
        while (sl->filled && !p->writer_stopped)
            pthread_cond_wait(&p->changed, &p->lock);
        int stopped = p->writer_stopped;
        pthread_mutex_unlock(&p->lock);
        if (stopped)
            return -1;
        if (sl->host) {
            /* Its previous chunk is written; the queue is in order, so the
             * next table into this buffer runs after this unmap. */
            cl_int err = clEnqueueUnmapMemObject(job->dev->queue, sl->buf, sl->host, 0, NULL,
                                                 NULL);
            sl->host = NULL;
            if (err != CL_SUCCESS) {
                cli_status_error("cannot unmap a chunk", err);
                return -1;
            }
        }
        if (fill(p, c))
            return -1;
        pthread_mutex_lock(&p->lock);
        sl->filled = 1;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
    }
    return 0;
}

int encode_pipeline_run(const encode_job *job, int *write_err, encode_timing *timing)
{
    pipeline p;
    memset(&p, 0, sizeof p);
    p.job = job;
    p.nchunks = (job->seq + job->chunk_rows - 1) / job->chunk_rows;
    *write_err = 0;
    const size_t chunk_bytes = (size_t)(job->chunk_rows * job->row_bytes);
    int rc = -1;
    for (int k = 0; k < SLOTS; ++k) {
        cl_int err = CL_SUCCESS;
        /* Host-visible memory: the map is a no-copy on CPUs and a DMA into
         * pinned memory on GPUs; a device without it maps a plain buffer. */
        p.slots[k].buf = clCreateBuffer(job->dev->context,
                                        CL_MEM_WRITE_ONLY | CL_MEM_ALLOC_HOST_PTR, chunk_bytes,
                                        NULL, &err);
        if (!p.slots[k].buf)
            p.slots[k].buf =
                clCreateBuffer(job->dev->context, CL_MEM_WRITE_ONLY, chunk_bytes, NULL, &err);
        if (!p.slots[k].buf) {
            cli_status_error("cannot allocate a device buffer", err);
            goto release;
        }
    }
    if (warm_up(&p))
        goto release;
    p.timing.started_at = cli_now();
    p.timing.started_cpu = cli_cpu_seconds();
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.changed, NULL);
    pthread_t writer;
    if (pthread_create(&writer, NULL, writer_main, &p) != 0) {
        cli_error("cannot start the writer thread");
    } else {
        int produced = produce(&p);
        if (produced) {
            pthread_mutex_lock(&p.lock);
            p.producer_stopped = 1;
            pthread_cond_broadcast(&p.changed);
            pthread_mutex_unlock(&p.lock);
        }
        pthread_join(writer, NULL);
        *write_err = p.write_err;
        if (timing)
            *timing = p.timing;
        rc = produced || p.writer_stopped ? -1 : 0;
    }
    pthread_cond_destroy(&p.changed);
    pthread_mutex_destroy(&p.lock);
release:
    /* Maps the writer never reached may still be in flight. */
    clFinish(job->dev->queue);
    for (int k = 0; k < SLOTS; ++k) {
        if (p.slots[k].mapped)
            clReleaseEvent(p.slots[k].mapped);
        if (p.slots[k].host)
            clEnqueueUnmapMemObject(job->dev->queue, p.slots[k].buf, p.slots[k].host, 0, NULL,
                                    NULL);
    }
    clFinish(job->dev->queue);
    for (int k = 0; k < SLOTS; ++k)
        if (p.slots[k].buf)
            clReleaseMemObject(p.slots[k].buf);
    return rc;
}
