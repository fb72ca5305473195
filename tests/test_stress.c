/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_stress.c - many threads, one encoder, shared queues, bit-exact.
 *
 * 16 threads share one encoder (and a second encoder made with
 * clpe_encoder_create_like, so two encoders share one program and its
 * kernel pools) and four command queues: two in-order, two out-of-order.
 * Each thread, many times over:
 *   1. writes a table into its own buffer on one queue (event e1), waiting
 *      for the last command another thread published;
 *   2. adds the encoding on top of it on another queue, waiting for e1 -
 *      the data dependency crosses queues, and on an out-of-order queue only
 *      the wait list orders the two;
 *   3. (once the library has it) gathers from an embedding table;
 *   4. reads the result back behind the last event and compares it bit for
 *      bit with the host emulation.
 * It then publishes its last event for the next thread's wait list.
 * Every command whose event another queue waits on is flushed first, as
 * OpenCL requires of events used across queues (clFlush's specification).
 *
 * On Intel's OpenCL CPU runtime (2026.2, with oneTBB 2023.2) all four queues
 * are in-order. With out-of-order queues that runtime deadlocks in 15 to 40 %
 * of runs: every thread waits inside it, in a blocking read or
 * clWaitForEvents, and no command runs. A short program without clpe (16
 * threads: a fill, a kernel and a blocking read per iteration, each on a
 * random one of two in-order and two out-of-order queues) hangs the same way
 * there, with or without the flushes, and never with in-order queues only or
 * on PoCL. The out-of-order queues stay in the test on every other runtime.
 *
 * The same test runs under ThreadSanitizer (tests/sanitize.sh tsan). There
 * it is built with CLPE_STRESS_STANDALONE as a plain program (Criterion's
 * process arena and TSan's shadow memory cannot share an address space), so
 * the stress itself uses no Criterion calls. The iteration count comes from
 * CLPE_STRESS_ITERS (default 20).
 */
#include "support.h"

#include "common/random.h"

#ifndef CLPE_STRESS_STANDALONE
#include <criterion/criterion.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern __typeof__(clpe_enqueue_gather) clpe_enqueue_gather __attribute__((weak));
extern __typeof__(clpe_host_gather) clpe_host_gather __attribute__((weak));

#define THREADS 16
#define QUEUES 4
#define D 64u
#define VOCAB 50
#define MAX_BATCH 3u
#define MAX_ROWS 300u /* rows of one call: batch * seq */

/* common/random.h directly: the standalone build has no test support library */
static uint64_t rnd(uint64_t *state) { return splitmix64(state); }

typedef struct shared_state {
    test_cl t;
    cl_command_queue queues[QUEUES];
    clpe_encoder *enc[2];
    int iters;
    pthread_mutex_t lock;
    cl_event published[THREADS]; /* each thread's latest command, retained */
    cl_mem embedding;
    float *host_embedding;
} shared_state;

typedef struct worker {
    shared_state *s;
    int id;
    char failure[256]; /* empty when every check passed */
    long checked;      /* values compared */
} worker;

#define FAIL(w, ...)                                                                           \
    do {                                                                                       \
        snprintf((w)->failure, sizeof (w)->failure, __VA_ARGS__);                              \
        goto out;                                                                              \
    } while (0)

/* Take a reference to the latest command of thread `of` (NULL if none). */
static cl_event take_published(shared_state *s, int of)
{
    pthread_mutex_lock(&s->lock);
    cl_event e = s->published[of];
    if (e)
        clRetainEvent(e);
    pthread_mutex_unlock(&s->lock);
    return e;
}

static void publish(shared_state *s, int id, cl_event e)
{
    clRetainEvent(e);
    pthread_mutex_lock(&s->lock);
    cl_event old = s->published[id];
    s->published[id] = e;
    pthread_mutex_unlock(&s->lock);
    if (old)
        clReleaseEvent(old);
}

static void *work(void *arg)
{
    worker *w = arg;
    shared_state *s = w->s;
    uint64_t rng = 0x5eed0000u + (uint64_t)w->id;
    const size_t max_rows = MAX_ROWS;
    size_t bytes = max_rows * D * sizeof(float);
    float *expect = malloc(bytes), *got = malloc(bytes);
    cl_int err;
    cl_mem buf = clCreateBuffer(s->t.context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem ids_buf = NULL, bad_buf = NULL;
    size_t want_bad = 0, first_bad = 0xFFFFFFFFu;
    int gathered = 0;
    cl_event e1 = NULL, e2 = NULL, e3 = NULL, other = NULL;
    if (!expect || !got || err != CL_SUCCESS)
        FAIL(w, "thread %d: setup failed", w->id);

    for (int it = 0; it < s->iters; ++it) {
        clpe_encoder *enc = s->enc[(w->id + it) % 2];
        cl_command_queue q1 = s->queues[rnd(&rng) % QUEUES];
        cl_command_queue q2 = s->queues[rnd(&rng) % QUEUES];
        size_t batch = 1 + rnd(&rng) % MAX_BATCH;
        size_t seq = 1 + rnd(&rng) % (max_rows / batch);
        int64_t start = (int64_t)(rnd(&rng) >> (rnd(&rng) % 64)) / 2;
        int64_t start2 = (int64_t)(rnd(&rng) % 100000);

        /* 1. the table, behind the neighbour's latest command */
        other = take_published(s, (w->id + 1) % THREADS);
        clpe_tensor t = {.buffer = buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
        clpe_status st = clpe_enqueue_table(enc, q1, start, batch * seq, &t, other ? 1 : 0,
                                            other ? &other : NULL, &e1);
        if (st != CLPE_SUCCESS)
            FAIL(w, "thread %d: table: %s", w->id, clpe_status_string(st));
        clFlush(q1); /* e1 is waited on from q2 */
        if (clpe_host_table(enc, start, batch * seq, expect, 0) != CLPE_SUCCESS)
            FAIL(w, "thread %d: host table", w->id);

        /* 2. add on top of it, on another queue, ordered only by e1 */
        clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = start2, .buffer = NULL, .offset = 0};
        st = clpe_enqueue_add(enc, q2, batch, seq, &t, &pos, 1, &e1, &e2);
        if (st != CLPE_SUCCESS)
            FAIL(w, "thread %d: add: %s", w->id, clpe_status_string(st));
        clFlush(q2); /* e2 is waited on from other queues and threads */
        if (clpe_host_add(enc, batch, seq, expect, 0, 0, CLPE_POSITIONS_START, start2, NULL) !=
            CLPE_SUCCESS)
            FAIL(w, "thread %d: host add", w->id);
        cl_event last = e2;

        /* 3. gather into the same buffer, behind the add */
        if (clpe_enqueue_gather && clpe_host_gather && it % 3 == 0) {
            int32_t ids[300];
            for (size_t k = 0; k < batch * seq; ++k)
                ids[k] = (int32_t)(rnd(&rng) % (VOCAB + 2)) - 1; /* some bad */
            want_bad = 0;
            first_bad = 0xFFFFFFFFu;
            for (size_t k = 0; k < batch * seq; ++k) {
                if (ids[k] < 0 || ids[k] >= VOCAB) {
                    if (!want_bad++)
                        first_bad = k;
                }
            }
            if (!ids_buf) {
                ids_buf = clCreateBuffer(s->t.context, CL_MEM_READ_ONLY, sizeof ids, NULL, &err);
                if (err == CL_SUCCESS)
                    bad_buf = clCreateBuffer(s->t.context, CL_MEM_READ_WRITE, 8, NULL, &err);
                if (err != CL_SUCCESS)
                    FAIL(w, "thread %d: ids buffer", w->id);
            }
            cl_event wrote = NULL;
            err = clEnqueueWriteBuffer(q1, ids_buf, CL_FALSE, 0, batch * seq * sizeof(int32_t),
                                       ids, 1, &e2, &wrote);
            if (err != CL_SUCCESS)
                FAIL(w, "thread %d: write ids: %d", w->id, err);
            clFlush(q1);
            clpe_token_ids tid = {.buffer = ids_buf, .offset = 0};
            clpe_tensor emb = {.buffer = s->embedding, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
            st = clpe_enqueue_gather(enc, q2, batch, seq, &tid, &emb, CLPE_DTYPE_F32, VOCAB, &t,
                                     &pos, bad_buf, 1, &wrote, &e3);
            clFlush(q2);
            clWaitForEvents(1, &wrote); /* ids is on this stack frame */
            clReleaseEvent(wrote);
            if (st != CLPE_SUCCESS)
                FAIL(w, "thread %d: gather: %s", w->id, clpe_status_string(st));
            if (clpe_host_gather(enc, batch, seq, ids, s->host_embedding, VOCAB, 0, expect, 0,
                                 CLPE_POSITIONS_START, start2, NULL, NULL) != CLPE_SUCCESS)
                FAIL(w, "thread %d: host gather", w->id);
            last = e3;
            gathered = 1;
        }

        /* 4. read back behind the last command, on a third queue */
        cl_command_queue q3 = s->queues[rnd(&rng) % QUEUES];
        err = clEnqueueReadBuffer(q3, buf, CL_TRUE, 0, batch * seq * D * sizeof(float), got, 1,
                                  &last, NULL);
        if (err != CL_SUCCESS)
            FAIL(w, "thread %d: read: %d", w->id, err);
        if (memcmp(got, expect, batch * seq * D * sizeof(float)) != 0) {
            size_t k = 0;
            while (memcmp(&got[k], &expect[k], sizeof(float)) == 0)
                ++k;
            FAIL(w, "thread %d iteration %d: element %zu is %a, host says %a", w->id, it, k,
                 got[k], expect[k]);
        }
        if (gathered) {
            uint32_t bad[2];
            err = clEnqueueReadBuffer(q3, bad_buf, CL_TRUE, 0, sizeof bad, bad, 1, &last, NULL);
            if (err != CL_SUCCESS)
                FAIL(w, "thread %d: read bad ids: %d", w->id, err);
            if (bad[0] != want_bad || bad[1] != first_bad)
                FAIL(w, "thread %d: bad ids {%u, %u}, want {%zu, %zu}", w->id, bad[0], bad[1],
                     want_bad, first_bad);
            gathered = 0;
        }
        w->checked += (long)(batch * seq * D);
        publish(s, w->id, last);
        if (other)
            clReleaseEvent(other);
        clReleaseEvent(e1);
        clReleaseEvent(e2);
        if (e3)
            clReleaseEvent(e3);
        other = e1 = e2 = e3 = NULL;
    }
out:
    if (other)
        clReleaseEvent(other);
    if (e1)
        clReleaseEvent(e1);
    if (e2)
        clReleaseEvent(e2);
    if (e3)
        clReleaseEvent(e3);
    if (ids_buf)
        clReleaseMemObject(ids_buf);
    if (bad_buf)
        clReleaseMemObject(bad_buf);
    if (buf)
        clReleaseMemObject(buf);
    free(expect);
    free(got);
    return NULL;
}

/*
 * PoCL 3.1 (Debian 12) counts the users of a compiled work-group function
 * per kernel and local size, but hands a launch the first cached function
 * whose grid is at least as wide as the launch's. When a launch wider than
 * any before it starts while narrower launches of the same kernel are still
 * running, PoCL caches a second function, and the narrower launches give
 * their references back to it: its count falls below zero and PoCL aborts
 * ("pocl_release_dlhandle_cache: Assertion `found->ref_count > 0'"; fixed in
 * PoCL 7.0). So before the threads start, every shape they can launch runs
 * once, and the widest grid of each kernel is cached before any thread
 * launches it. (How wide a call's grid is depends on the launch shape's rows
 * per work-item, so the warm-up tries the shapes rather than guessing the
 * widest.) The warm-up's results are not checked: the threads check theirs.
 */
static int warm_up(shared_state *s, char *msg, size_t msg_len)
{
    cl_int err;
    cl_command_queue q = s->queues[0];
    cl_mem buf = clCreateBuffer(s->t.context, CL_MEM_READ_WRITE, MAX_ROWS * D * sizeof(float),
                                NULL, &err);
    cl_mem ids_buf = NULL, bad_buf = NULL;
    clpe_status st = CLPE_SUCCESS;
    if (err == CL_SUCCESS) {
        int32_t ids[MAX_ROWS] = {0};
        ids_buf = clCreateBuffer(s->t.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                 sizeof ids, ids, &err);
    }
    if (err == CL_SUCCESS)
        bad_buf = clCreateBuffer(s->t.context, CL_MEM_READ_WRITE, 8, NULL, &err);
    clpe_tensor t = {.buffer = buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_tensor emb = {.buffer = s->embedding, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_token_ids tid = {.buffer = ids_buf, .offset = 0};
    clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = 0, .buffer = NULL, .offset = 0};
    for (int k = 0; k < 2 && err == CL_SUCCESS && st == CLPE_SUCCESS; ++k) {
        for (size_t rows = 1; rows <= MAX_ROWS && st == CLPE_SUCCESS; ++rows)
            st = clpe_enqueue_table(s->enc[k], q, 0, rows, &t, 0, NULL, NULL);
        for (size_t batch = 1; batch <= MAX_BATCH; ++batch) {
            for (size_t seq = 1; seq <= MAX_ROWS / batch && st == CLPE_SUCCESS; ++seq) {
                st = clpe_enqueue_add(s->enc[k], q, batch, seq, &t, &pos, 0, NULL, NULL);
                if (st == CLPE_SUCCESS && clpe_enqueue_gather)
                    st = clpe_enqueue_gather(s->enc[k], q, batch, seq, &tid, &emb,
                                             CLPE_DTYPE_F32, VOCAB, &t, &pos, bad_buf, 0, NULL,
                                             NULL);
            }
        }
    }
    if (err == CL_SUCCESS && st == CLPE_SUCCESS)
        err = clFinish(q);
    if (bad_buf)
        clReleaseMemObject(bad_buf);
    if (ids_buf)
        clReleaseMemObject(ids_buf);
    if (buf)
        clReleaseMemObject(buf);
    if (err != CL_SUCCESS || st != CLPE_SUCCESS) {
        snprintf(msg, msg_len, "warm-up: OpenCL error %d, %s", err, clpe_status_string(st));
        return -1;
    }
    return 0;
}

/* Intel's OpenCL CPU runtime, whose out-of-order queues deadlock under
 * this test (see the top of the file). */
static bool is_intel_cpu_runtime(cl_platform_id platform, cl_device_id device)
{
    cl_device_type type = 0;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    return test_platform_is(platform, "Intel(R) OpenCL") && (type & CL_DEVICE_TYPE_CPU);
}

/* Run the whole stress; 0 and a summary in msg on success, else -1 and
 * the first failure in msg. */
static int stress_run(int iters, char *msg, size_t msg_len)
{
    static shared_state s;
    static worker workers[THREADS];
    int rc = -1;
    clpe_status st;
    cl_int err = CL_SUCCESS;
    memset(&s, 0, sizeof s);
    s.iters = iters;
    pthread_mutex_init(&s.lock, NULL);
    snprintf(msg, msg_len, "setup failed");
    if ((st = clpe_select_device(NULL, &s.t.platform, &s.t.device)) != CLPE_SUCCESS) {
        snprintf(msg, msg_len, "no device: %s", clpe_status_string(st));
        goto out;
    }
    s.t.context = clCreateContext(NULL, 1, &s.t.device, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        goto out;
    bool out_of_order = !is_intel_cpu_runtime(s.t.platform, s.t.device);
    for (int k = 0; k < QUEUES; ++k) {
        cl_command_queue_properties props =
            out_of_order && k % 2 ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0;
        s.queues[k] = clCreateCommandQueue(s.t.context, s.t.device, props, &err);
        if (err == CL_INVALID_QUEUE_PROPERTIES) /* a device without out-of-order queues */
            s.queues[k] = clCreateCommandQueue(s.t.context, s.t.device, 0, &err);
        if (err != CL_SUCCESS)
            goto out;
    }
    clpe_config cfg = clpe_config_default(D);
    cfg.scale = 8.0;
    static char log[16384];
    clpe_build_log build_log = {log, sizeof log, 0};
    s.enc[0] = clpe_encoder_create(s.t.context, s.t.device, &cfg, &build_log, &st);
    if (!s.enc[0]) {
        snprintf(msg, msg_len, "clpe_encoder_create: %s\n%.900s", clpe_status_string(st), log);
        goto out;
    }
    cfg.layout = CLPE_LAYOUT_SPLIT;
    cfg.freq = CLPE_FREQ_TENSOR2TENSOR;
    cfg.scale = 0.5;
    s.enc[1] = clpe_encoder_create_like(s.enc[0], &cfg, &st);
    if (!s.enc[1]) {
        snprintf(msg, msg_len, "clpe_encoder_create_like: %s", clpe_status_string(st));
        goto out;
    }
    s.host_embedding = malloc((size_t)VOCAB * D * sizeof(float));
    if (!s.host_embedding)
        goto out;
    uint64_t seed = 99;
    for (size_t k = 0; k < (size_t)VOCAB * D; ++k)
        s.host_embedding[k] = (float)(int64_t)(rnd(&seed) % 1000) / 64.0f;
    s.embedding = clCreateBuffer(s.t.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                 (size_t)VOCAB * D * sizeof(float), s.host_embedding, &err);
    if (err != CL_SUCCESS)
        goto out;
    if (warm_up(&s, msg, msg_len) != 0)
        goto out;

    pthread_t threads[THREADS];
    for (int k = 0; k < THREADS; ++k) {
        workers[k] = (worker){.s = &s, .id = k};
        if (pthread_create(&threads[k], NULL, work, &workers[k]) != 0) {
            snprintf(msg, msg_len, "pthread_create failed");
            for (int j = 0; j < k; ++j)
                pthread_join(threads[j], NULL);
            goto out;
        }
    }
    long checked = 0;
    for (int k = 0; k < THREADS; ++k)
        pthread_join(threads[k], NULL);
    rc = 0;
    for (int k = 0; k < THREADS; ++k) {
        if (workers[k].failure[0] && rc == 0) {
            snprintf(msg, msg_len, "%s", workers[k].failure);
            rc = -1;
        }
        checked += workers[k].checked;
    }
    for (int k = 0; k < QUEUES; ++k)
        if (clFinish(s.queues[k]) != CL_SUCCESS)
            rc = -1;
    if (rc == 0)
        snprintf(msg, msg_len, "stress: %d threads x %d iterations, %ld values bit-exact%s%s",
                 THREADS, s.iters, checked, clpe_enqueue_gather ? " (with gather)" : "",
                 out_of_order ? "" : " (in-order queues only)");
out:
    for (int k = 0; k < THREADS; ++k)
        if (s.published[k])
            clReleaseEvent(s.published[k]);
    clpe_encoder_release(s.enc[1]);
    clpe_encoder_release(s.enc[0]);
    if (s.embedding)
        clReleaseMemObject(s.embedding);
    free(s.host_embedding);
    for (int k = 0; k < QUEUES; ++k)
        if (s.queues[k])
            clReleaseCommandQueue(s.queues[k]);
    if (s.t.context)
        clReleaseContext(s.t.context);
    pthread_mutex_destroy(&s.lock);
    return rc;
}

static int iterations(void)
{
    const char *iters = getenv("CLPE_STRESS_ITERS");
    return iters && *iters ? atoi(iters) : 20;
}

#ifdef CLPE_STRESS_STANDALONE
int main(void)
{
    char msg[1024];
    int rc = stress_run(iterations(), msg, sizeof msg);
    printf("%s\n", msg);
    return rc == 0 ? 0 : 1;
}
#else
Test(stress, sixteen_threads_shared_encoder_and_queues, .timeout = 900)
{
    char msg[1024];
    int rc = stress_run(iterations(), msg, sizeof msg);
    cr_assert_eq(rc, 0, "%s", msg);
    printf("%s\n", msg);
}

/* The header allows bad_ids == NULL with bad ids present: the kernel must
 * not count through the NULL pointer (it once did and crashed). */
Test(stress, gather_bad_id_without_counter)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    int32_t ids[4] = {0, -1, 1, 7};
    float emb[2 * D] = {0};
    cl_mem ids_buf = test_buffer_from(&t, ids, sizeof ids);
    cl_mem emb_buf = test_buffer_from(&t, emb, sizeof emb);
    cl_mem out = test_buffer_poisoned(&t, 4 * D * sizeof(float), 0xA5);
    clpe_token_ids tid = {.buffer = ids_buf, .offset = 0};
    clpe_tensor e = {.buffer = emb_buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0}, o = {.buffer = out};
    cr_assert_eq(clpe_enqueue_gather(enc, t.queue, 1, 4, &tid, &e, CLPE_DTYPE_F32, 2, &o, NULL,
                                     NULL, 0, NULL, NULL),
                 CLPE_SUCCESS);
    cr_assert_eq(clFinish(t.queue), CL_SUCCESS);
    clReleaseMemObject(out);
    clReleaseMemObject(emb_buf);
    clReleaseMemObject(ids_buf);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}
#endif /* CLPE_STRESS_STANDALONE */
