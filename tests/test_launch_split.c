/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_launch_split.c - problems split into several kernel launches give
 * the same bits as one launch, and the out event covers every launch.
 *
 * The library splits work whose grid would exceed per-launch limits (65535
 * work-items per dimension on some GPUs). Reaching those sizes for real
 * would take gigabytes, so the test knobs CLPE_MAX_LAUNCH_ROWS and
 * CLPE_MAX_LAUNCH_BATCH, read when an encoder's program is built, shrink
 * the limits. Criterion runs each test in its own process, so setenv here
 * touches no other test.
 *
 * The out event check: every split call waits on a user event (the gate),
 * so none of its launches can run before the call returns; the test then
 * opens the gate, waits on the call's out event alone, and reads the
 * buffer through a second queue that knows nothing of the first. If the
 * event stood for only some launches, the read would race the rest and
 * see poison.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POISON 0xEE

typedef struct split_env {
    test_cl t;
    cl_command_queue reader; /* a second, independent queue */
} split_env;

static void env_open(split_env *e)
{
    /* The baseline must be unsplit whatever the caller's environment. */
    unsetenv("CLPE_MAX_LAUNCH_ROWS");
    unsetenv("CLPE_MAX_LAUNCH_BATCH");
    test_cl_open(&e->t);
    cl_int err;
    e->reader = clCreateCommandQueue(e->t.context, e->t.device, 0, &err);
    cr_assert_eq(err, CL_SUCCESS);
}

static void env_close(split_env *e)
{
    clReleaseCommandQueue(e->reader);
    test_cl_close(&e->t);
}

/* An encoder built under the given knobs (NULL: unset). */
static clpe_encoder *encoder_with_knobs(split_env *e, const clpe_config *cfg, const char *rows,
                                        const char *batch)
{
    if (rows)
        setenv("CLPE_MAX_LAUNCH_ROWS", rows, 1);
    else
        unsetenv("CLPE_MAX_LAUNCH_ROWS");
    if (batch)
        setenv("CLPE_MAX_LAUNCH_BATCH", batch, 1);
    else
        unsetenv("CLPE_MAX_LAUNCH_BATCH");
    clpe_encoder *enc = test_encoder(&e->t, cfg);
    unsetenv("CLPE_MAX_LAUNCH_ROWS");
    unsetenv("CLPE_MAX_LAUNCH_BATCH");
    return enc;
}

/* Open the gate, wait for the call's own event, read through the other
 * queue. */
static float *finish_and_read(split_env *e, cl_event gate, cl_event ev, cl_mem buf, size_t bytes)
{
    cr_assert_not_null(ev, "no out event");
    cl_int exec = CL_COMPLETE;
    clFlush(e->t.queue);
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, NULL);
    cr_expect_neq(exec, CL_COMPLETE, "out event complete while its wait list is not");
    cr_assert_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    test_event_finish(ev);
    float *host = malloc(bytes);
    cr_assert(host);
    cl_int err = clEnqueueReadBuffer(e->reader, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    cr_assert_eq(err, CL_SUCCESS);
    return host;
}

/* Table of n rows (row pitch rp, element offset off) from enc, gated. */
static float *table_gated(split_env *e, clpe_encoder *enc, uint32_t d, int64_t start, size_t n,
                          size_t rp, size_t off, size_t *bytes_out)
{
    size_t bytes = (off + (n - 1) * rp + d + 3) * sizeof(float);
    cl_mem buf = test_buffer_poisoned(&e->t, bytes, POISON);
    cl_int err;
    cl_event gate = clCreateUserEvent(e->t.context, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_event ev = NULL;
    clpe_tensor out = {.buffer = buf, .offset = off * sizeof(float), .row_pitch = rp, .batch_pitch = 0};
    clpe_status st = clpe_enqueue_table(enc, e->t.queue, start, n, &out, 1, &gate, &ev);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_enqueue_table: %s", clpe_status_string(st));
    float *host = finish_and_read(e, gate, ev, buf, bytes);
    clReleaseEvent(gate);
    clReleaseMemObject(buf);
    *bytes_out = bytes;
    return host;
}

typedef struct add_job {
    size_t batch, seq, rp, bp;
    clpe_position_source source;
    int64_t start;
    const int64_t *positions;
    const float *x;
    size_t count; /* floats in the buffer */
} add_job;

static float *add_gated(split_env *e, clpe_encoder *enc, const add_job *j)
{
    size_t bytes = j->count * sizeof(float);
    cl_mem buf = test_buffer_from(&e->t, j->x, bytes);
    size_t npos = j->source == CLPE_POSITIONS_PER_SEQUENCE ? j->batch
                  : j->source == CLPE_POSITIONS_IDS      ? j->batch * j->seq
                                                         : 0;
    cl_mem pbuf = npos ? test_buffer_from(&e->t, j->positions, npos * sizeof(int64_t)) : NULL;
    cl_int err;
    cl_event gate = clCreateUserEvent(e->t.context, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_event ev = NULL;
    clpe_tensor x = {.buffer = buf, .offset = 0, .row_pitch = j->rp, .batch_pitch = j->bp};
    clpe_positions pos = {.source = j->source, .start = j->start, .buffer = pbuf, .offset = 0};
    clpe_status st = clpe_enqueue_add(enc, e->t.queue, j->batch, j->seq, &x, &pos, 1, &gate, &ev);
    cr_assert_eq(st, CLPE_SUCCESS, "clpe_enqueue_add: %s", clpe_status_string(st));
    float *host = finish_and_read(e, gate, ev, buf, bytes);
    clReleaseEvent(gate);
    if (pbuf)
        clReleaseMemObject(pbuf);
    clReleaseMemObject(buf);
    return host;
}

static const char *const row_knobs[] = {"1", "3", "5", "16", "17", "40"};
#define N_ROW_KNOBS (sizeof row_knobs / sizeof row_knobs[0])

Test(launch_split, table_rows_split, .timeout = 120)
{
    split_env e;
    env_open(&e);
    const uint32_t ds[] = {8, 130};
    for (size_t k = 0; k < 2; ++k) {
        uint32_t d = ds[k];
        clpe_config cfg = test_config(d, 10000.0, CLPE_FREQ_PAPER, (clpe_layout)k);
        clpe_encoder *whole = encoder_with_knobs(&e, &cfg, NULL, NULL);
        const int64_t start = -150;
        const size_t n = 301, rp = d + 3, off = 5;
        size_t bytes;
        float *ref = table_gated(&e, whole, d, start, n, rp, off, &bytes);
        /* the unsplit result is itself the emulation's */
        float *emu = malloc(bytes);
        cr_assert(emu);
        memset(emu, POISON, bytes);
        cr_assert_eq(clpe_host_table(whole, start, n, emu + off, rp), CLPE_SUCCESS);
        cr_expect(memcmp(ref, emu, bytes) == 0, "unsplit table differs from the emulation");
        for (size_t r = 0; r < N_ROW_KNOBS; ++r) {
            clpe_encoder *split = encoder_with_knobs(&e, &cfg, row_knobs[r], NULL);
            size_t b2;
            float *got = table_gated(&e, split, d, start, n, rp, off, &b2);
            cr_expect(memcmp(got, ref, bytes) == 0,
                      "d=%u table with CLPE_MAX_LAUNCH_ROWS=%s differs from one launch", d,
                      row_knobs[r]);
            free(got);
            clpe_encoder_release(split);
        }
        free(emu);
        free(ref);
        clpe_encoder_release(whole);
    }
    env_close(&e);
}

Test(launch_split, add_rows_and_batch_split, .timeout = 120)
{
    split_env e;
    env_open(&e);
    uint64_t rng = 77;
    const uint32_t d = 130;
    clpe_config cfg = test_config(d, 10000.0, CLPE_FREQ_TENSOR2TENSOR, CLPE_LAYOUT_SPLIT);
    cfg.scale = 3.0;
    const size_t batch = 7, seq = 53, rp = d + 2, bp = seq * rp + 3;
    const size_t count = (batch - 1) * bp + (seq - 1) * rp + d + 4;
    float *x = malloc(count * sizeof *x);
    cr_assert(x);
    for (size_t k = 0; k < count; ++k)
        x[k] = (float)(int32_t)test_rand_u64(&rng) * 0x1p-30f;
    int64_t per_seq[7];
    for (size_t b = 0; b < batch; ++b)
        per_seq[b] = (int64_t)(test_rand_u64(&rng) >> 1) - (INT64_C(1) << 62);
    int64_t *ids = malloc(batch * seq * sizeof *ids);
    cr_assert(ids);
    for (size_t k = 0; k < batch * seq; ++k)
        ids[k] = (int64_t)test_rand_u64(&rng);
    add_job jobs[3] = {
        {batch, seq, rp, bp, CLPE_POSITIONS_START, -20, NULL, x, count},
        {batch, seq, rp, bp, CLPE_POSITIONS_PER_SEQUENCE, 0, per_seq, x, count},
        {batch, seq, rp, bp, CLPE_POSITIONS_IDS, 0, ids, x, count},
    };
    struct {
        const char *rows, *batch;
    } knobs[] = {{NULL, "1"}, {NULL, "3"}, {"7", NULL}, {"5", "2"}, {"1", "4"}, {"16", "6"},
                 {"17", "1"}};

    clpe_encoder *whole = encoder_with_knobs(&e, &cfg, NULL, NULL);
    for (size_t j = 0; j < 3; ++j) {
        float *ref = add_gated(&e, whole, &jobs[j]);
        float *emu = malloc(count * sizeof *emu);
        cr_assert(emu);
        memcpy(emu, x, count * sizeof *emu);
        cr_assert_eq(clpe_host_add(whole, batch, seq, emu, rp, bp, jobs[j].source, jobs[j].start,
                                   jobs[j].positions),
                     CLPE_SUCCESS);
        cr_expect(memcmp(ref, emu, count * sizeof *emu) == 0,
                  "unsplit add (source %d) differs from the emulation", (int)jobs[j].source);
        for (size_t k = 0; k < sizeof knobs / sizeof knobs[0]; ++k) {
            clpe_encoder *split = encoder_with_knobs(&e, &cfg, knobs[k].rows, knobs[k].batch);
            float *got = add_gated(&e, split, &jobs[j]);
            cr_expect(memcmp(got, ref, count * sizeof *got) == 0,
                      "add (source %d) with ROWS=%s BATCH=%s differs from one launch",
                      (int)jobs[j].source, knobs[k].rows ? knobs[k].rows : "-",
                      knobs[k].batch ? knobs[k].batch : "-");
            free(got);
            clpe_encoder_release(split);
        }
        free(emu);
        free(ref);
    }
    clpe_encoder_release(whole);
    free(ids);
    free(x);
    env_close(&e);
}

/* Without an out event, split work still runs in queue order: a blocking
 * read on the same queue sees every launch's rows. And encoders made with
 * clpe_encoder_create_like share the split encoder's program, so they
 * split too and must still be right. */
Test(launch_split, no_event_and_create_like)
{
    split_env e;
    env_open(&e);
    clpe_config cfg = test_config(8, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_encoder *split = encoder_with_knobs(&e, &cfg, "2", "1");
    clpe_config cfg2 = test_config(6, 2.0, CLPE_FREQ_TENSOR2TENSOR, CLPE_LAYOUT_SPLIT);
    clpe_encoder *like = test_encoder_like(split, &cfg2);
    clpe_encoder *encs[2] = {split, like};
    const uint32_t ds[2] = {8, 6};
    for (int k = 0; k < 2; ++k) {
        size_t n = 99, bytes = n * ds[k] * sizeof(float);
        cl_mem buf = test_buffer_poisoned(&e.t, bytes, POISON);
        clpe_tensor out = {.buffer = buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
        cr_assert_eq(clpe_enqueue_table(encs[k], e.t.queue, INT64_MAX - 98, n, &out, 0, NULL, NULL),
                     CLPE_SUCCESS);
        float *got = test_buffer_read(&e.t, buf, bytes);
        float *want = malloc(bytes);
        cr_assert(want);
        cr_assert_eq(clpe_host_table(encs[k], INT64_MAX - 98, n, want, 0), CLPE_SUCCESS);
        cr_expect(memcmp(got, want, bytes) == 0, "split table (encoder %d) differs", k);
        free(want);
        free(got);
        clReleaseMemObject(buf);
    }
    clpe_encoder_release(like);
    clpe_encoder_release(split);
    env_close(&e);
}
