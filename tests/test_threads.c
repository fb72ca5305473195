/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_threads.c - one encoder shared by 8 threads, each with its own
 * command queue and buffers, enqueueing table and fused add at the same
 * time; every result equals the host emulation bit for bit.
 *
 * clpe.h promises that one encoder may be used from any number of threads
 * (each enqueue takes its own cl_kernel). A shared cl_kernel would race in
 * clSetKernelArg and show up here as rows with another thread's start,
 * pitch or buffer. Threads start together at a barrier and enqueue many
 * small jobs back to back so their argument setting interleaves. Worker
 * threads only record what they saw; the test thread asserts (Criterion's
 * assertions belong to the test's own thread).
 */
#include "support.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 8
#define JOBS 24       /* per thread */
#define SEQ 45
#define BATCH 2

typedef struct job {
    int is_add;
    clpe_encoder *enc;
    int64_t start;
    int64_t per_seq[BATCH];
    size_t count;      /* floats */
    float *init;       /* x for add; NULL for table (poison) */
    cl_mem buf;
    cl_mem pos;
} job;

typedef struct worker {
    int index;
    cl_context context;
    cl_device_id device;
    clpe_encoder *encs[2];
    uint32_t d[2];
    pthread_barrier_t *barrier;
    /* results */
    char error[256];
    size_t checked;
} worker;

static void fail(worker *w, const char *msg, long a)
{
    if (!w->error[0])
        snprintf(w->error, sizeof w->error, "thread %d: %s (%ld)", w->index, msg, a);
}

static void *run_worker(void *arg)
{
    worker *w = arg;
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(w->context, w->device, 0, &err);
    if (err != CL_SUCCESS) {
        fail(w, "clCreateCommandQueue", err);
        pthread_barrier_wait(w->barrier);
        return NULL;
    }
    uint64_t rng = 1000 + (uint64_t)w->index;
    job jobs[JOBS];
    memset(jobs, 0, sizeof jobs);
    /* Prepare buffers before the barrier, so the enqueues overlap. */
    for (int j = 0; j < JOBS; ++j) {
        job *jb = &jobs[j];
        int which = (j + w->index) % 2;
        uint32_t d = w->d[which];
        jb->enc = w->encs[which];
        jb->is_add = (j % 3) != 0;
        jb->start = (int64_t)(test_rand_u64(&rng) >> 2) - (INT64_C(1) << 61);
        jb->per_seq[0] = (int64_t)(test_rand_u64(&rng) % 100000) - 50000;
        jb->per_seq[1] = w->index * INT64_C(1000003) + j;
        jb->count = (size_t)BATCH * SEQ * d;
        size_t bytes = jb->count * sizeof(float);
        jb->init = malloc(bytes);
        if (!jb->init) {
            fail(w, "malloc", j);
            break;
        }
        for (size_t k = 0; k < jb->count; ++k)
            jb->init[k] = jb->is_add ? (float)(int32_t)test_rand_u64(&rng) * 0x1p-28f : 1234.5f;
        jb->buf = clCreateBuffer(w->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                                 jb->init, &err);
        if (err == CL_SUCCESS)
            jb->pos = clCreateBuffer(w->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                     sizeof jb->per_seq, jb->per_seq, &err);
        if (err != CL_SUCCESS)
            fail(w, "clCreateBuffer", err);
    }
    pthread_barrier_wait(w->barrier);

    for (int j = 0; j < JOBS && !w->error[0]; ++j) {
        job *jb = &jobs[j];
        clpe_tensor t = {.buffer = jb->buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
        clpe_status st;
        if (jb->is_add) {
            clpe_positions p = {.source = j % 2 ? CLPE_POSITIONS_PER_SEQUENCE : CLPE_POSITIONS_START, .start = jb->start, .buffer = j % 2 ? jb->pos : NULL, .offset = 0};
            st = clpe_enqueue_add(jb->enc, q, BATCH, SEQ, &t, &p, 0, NULL, NULL);
        } else {
            st = clpe_enqueue_table(jb->enc, q, jb->start, BATCH * SEQ, &t, 0, NULL, NULL);
        }
        if (st != CLPE_SUCCESS)
            fail(w, clpe_status_string(st), j);
    }
    if (clFinish(q) != CL_SUCCESS)
        fail(w, "clFinish", 0);

    for (int j = 0; j < JOBS; ++j) {
        job *jb = &jobs[j];
        if (!w->error[0] && jb->buf) {
            size_t bytes = jb->count * sizeof(float);
            float *got = malloc(bytes);
            float *want = malloc(bytes);
            if (!got || !want) {
                fail(w, "malloc", j);
            } else {
                memcpy(want, jb->init, bytes);
                clpe_config cfg;
                clpe_encoder_get_config(jb->enc, &cfg);
                clpe_status st;
                if (jb->is_add)
                    st = clpe_host_add(jb->enc, BATCH, SEQ, want, 0, 0,
                                       j % 2 ? CLPE_POSITIONS_PER_SEQUENCE : CLPE_POSITIONS_START,
                                       jb->start, jb->per_seq);
                else
                    st = clpe_host_table(jb->enc, jb->start, BATCH * SEQ, want, 0);
                err = clEnqueueReadBuffer(q, jb->buf, CL_TRUE, 0, bytes, got, 0, NULL, NULL);
                if (st != CLPE_SUCCESS || err != CL_SUCCESS)
                    fail(w, "emulation or read back", j);
                else if (memcmp(got, want, bytes) != 0)
                    fail(w, jb->is_add ? "add result differs from the emulation"
                                       : "table result differs from the emulation",
                         j);
                else
                    w->checked += jb->count;
            }
            free(got);
            free(want);
        }
        if (jb->pos)
            clReleaseMemObject(jb->pos);
        if (jb->buf)
            clReleaseMemObject(jb->buf);
        free(jb->init);
    }
    clReleaseCommandQueue(q);
    return NULL;
}

/* Every launch shape of the jobs, once, before the threads: PoCL before 7.0
 * aborts when a launch of a kernel wider than any before it starts while
 * narrower launches of that kernel still run (docs/guarantees.md, "Threads";
 * tests/test_stress.c explains it). In the one-pair shape the two encoders'
 * widths differ, so each job shape of each encoder is cached first. */
static void warm_up(test_cl *t, clpe_encoder *enc, uint32_t d)
{
    int64_t per_seq[BATCH] = {0};
    cl_mem buf = test_buffer_poisoned(t, (size_t)BATCH * SEQ * d * sizeof(float), 0);
    cl_mem pos = test_buffer_from(t, per_seq, sizeof per_seq);
    clpe_tensor out = {.buffer = buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_positions from_start = {.source = CLPE_POSITIONS_START, .start = 0, .buffer = NULL};
    clpe_positions per_sequence = {
        .source = CLPE_POSITIONS_PER_SEQUENCE, .start = 0, .buffer = pos};
    cr_assert_eq(clpe_enqueue_table(enc, t->queue, 0, BATCH * SEQ, &out, 0, NULL, NULL),
                 CLPE_SUCCESS);
    cr_assert_eq(clpe_enqueue_add(enc, t->queue, BATCH, SEQ, &out, &from_start, 0, NULL, NULL),
                 CLPE_SUCCESS);
    cr_assert_eq(clpe_enqueue_add(enc, t->queue, BATCH, SEQ, &out, &per_sequence, 0, NULL, NULL),
                 CLPE_SUCCESS);
    cr_assert_eq(clFinish(t->queue), CL_SUCCESS);
    clReleaseMemObject(pos);
    clReleaseMemObject(buf);
}

Test(threads, eight_threads_one_encoder, .timeout = 120)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config c0 = test_config(64, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_encoder *enc = test_encoder(&t, &c0);
    /* A second configuration on the same program: the threads share the
     * program's kernel pools across encoders too. */
    clpe_config c1 = test_config(130, 500000.0, CLPE_FREQ_TENSOR2TENSOR, CLPE_LAYOUT_SPLIT);
    c1.scale = 11.0;
    clpe_encoder *enc2 = test_encoder_like(enc, &c1);
    warm_up(&t, enc, 64);
    warm_up(&t, enc2, 130);

    pthread_barrier_t barrier;
    cr_assert_eq(pthread_barrier_init(&barrier, NULL, THREADS), 0);
    worker w[THREADS];
    pthread_t tid[THREADS];
    for (int k = 0; k < THREADS; ++k) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].index = k;
        w[k].context = t.context;
        w[k].device = t.device;
        w[k].encs[0] = enc;
        w[k].encs[1] = enc2;
        w[k].d[0] = 64;
        w[k].d[1] = 130;
        w[k].barrier = &barrier;
        cr_assert_eq(pthread_create(&tid[k], NULL, run_worker, &w[k]), 0);
    }
    size_t checked = 0;
    for (int k = 0; k < THREADS; ++k) {
        pthread_join(tid[k], NULL);
        cr_expect(!w[k].error[0], "%s", w[k].error);
        checked += w[k].checked;
    }
    pthread_barrier_destroy(&barrier);
    cr_expect_gt(checked, 0);
    cr_log_info("threads: %zu elements checked bit for bit across %d threads", checked, THREADS);
    clpe_encoder_release(enc2);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}

/* Releasing the encoder while work it enqueued is still queued is allowed
 * (clpe.h: "Work already enqueued stays valid"): each thread enqueues, the
 * last reference goes, then the results are read. */
Test(threads, release_with_work_in_flight)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = test_config(64, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_SPLIT);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    clpe_status st;
    clpe_encoder *host = clpe_encoder_create_host(&cfg, &st);
    cr_assert_not_null(host);
    size_t n = 4000, bytes = n * 64 * sizeof(float);
    cl_mem buf = test_buffer_poisoned(&t, bytes, 0);
    cl_int err;
    cl_event gate = clCreateUserEvent(t.context, &err);
    cr_assert_eq(err, CL_SUCCESS);
    clpe_tensor out = {.buffer = buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    /* Held back by the gate, so it cannot have run before the release. */
    cr_assert_eq(clpe_enqueue_table(enc, t.queue, -7, n, &out, 1, &gate, NULL), CLPE_SUCCESS);
    clpe_encoder_release(enc);
    clSetUserEventStatus(gate, CL_COMPLETE);
    float *got = test_buffer_read(&t, buf, bytes);
    float *want = malloc(bytes);
    cr_assert(want);
    cr_assert_eq(clpe_host_table(host, -7, n, want, 0), CLPE_SUCCESS);
    cr_expect(memcmp(got, want, bytes) == 0, "table enqueued before release differs");
    free(want);
    free(got);
    clReleaseEvent(gate);
    clReleaseMemObject(buf);
    clpe_encoder_release(host);
    test_cl_close(&t);
}
