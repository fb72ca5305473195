/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bad_input.c - every bad input of the core API gets its own status,
 * and a rejected call changes nothing: the buffer reads back byte-identical
 * to its poison, and the out event is left alone.
 *
 * A queue of another device of the same context needs two devices: PoCL
 * makes two CPU devices when POCL_DEVICES asks for them (set inside the
 * forked test, before OpenCL starts). A device without 64-bit integers is
 * covered by the fault-injection shim (tests/test_device_unsupported.c).
 */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rotary API is declared before the library has all of it; weak, so
 * this file links either way and tests it once it exists. */
extern __typeof__(clpe_rope_config_default) clpe_rope_config_default __attribute__((weak));
extern __typeof__(clpe_rope_create_host) clpe_rope_create_host __attribute__((weak));
extern __typeof__(clpe_rope_release) clpe_rope_release __attribute__((weak));

#define POISON 0x7E
#define D 8
#define N 4
#define REGION_BYTES (N * D * sizeof(float)) /* table of N rows, default pitch */

/* ---- configuration errors ------------------------------------------------ */

/* cfg must be rejected with `want` by every function that takes a config. */
static void expect_config_rejected(test_cl *t, clpe_encoder *like, const clpe_config *cfg,
                                   clpe_status want, const char *what)
{
    clpe_status st = CLPE_SUCCESS;
    cr_expect_eq(clpe_config_check(cfg), want, "config_check(%s)", what);
    clpe_encoder *e = clpe_encoder_create(t->context, t->device, cfg, NULL, &st);
    cr_expect_null(e, "encoder_create(%s) succeeded", what);
    cr_expect_eq(st, want, "encoder_create(%s): %d (%s), want %d", what, st,
                 clpe_status_string(st), want);
    clpe_encoder_release(e);
    st = CLPE_SUCCESS;
    e = clpe_encoder_create_host(cfg, &st);
    cr_expect_null(e, "encoder_create_host(%s) succeeded", what);
    cr_expect_eq(st, want, "encoder_create_host(%s): %d, want %d", what, st, want);
    clpe_encoder_release(e);
    st = CLPE_SUCCESS;
    e = clpe_encoder_create_like(like, cfg, &st);
    cr_expect_null(e, "encoder_create_like(%s) succeeded", what);
    cr_expect_eq(st, want, "encoder_create_like(%s): %d, want %d", what, st, want);
    clpe_encoder_release(e);
}

Test(bad_input, config_values)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config good = test_config(D, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_encoder *like = test_encoder(&t, &good);
    cr_expect_eq(clpe_config_check(&good), CLPE_SUCCESS);

    struct {
        const char *what;
        uint32_t d;
        double base, scale;
        clpe_status want;
    } cases[] = {
        {"d=0", 0, 10000.0, 1.0, CLPE_ERROR_INVALID_D},
        {"d=7", 7, 10000.0, 1.0, CLPE_ERROR_INVALID_D},
        {"d=1", 1, 10000.0, 1.0, CLPE_ERROR_INVALID_D},
        {"d=MAX+2", CLPE_MAX_D + 2, 10000.0, 1.0, CLPE_ERROR_INVALID_D},
        {"d=UINT32_MAX-1", UINT32_MAX - 1, 10000.0, 1.0, CLPE_ERROR_INVALID_D},
        {"base=1", D, 1.0, 1.0, CLPE_ERROR_INVALID_BASE},
        {"base=0.5", D, 0.5, 1.0, CLPE_ERROR_INVALID_BASE},
        {"base=0", D, 0.0, 1.0, CLPE_ERROR_INVALID_BASE},
        {"base=-10000", D, -10000.0, 1.0, CLPE_ERROR_INVALID_BASE},
        {"base=NaN", D, NAN, 1.0, CLPE_ERROR_INVALID_BASE},
        {"base=inf", D, INFINITY, 1.0, CLPE_ERROR_INVALID_BASE},
        {"base=-inf", D, -INFINITY, 1.0, CLPE_ERROR_INVALID_BASE},
        {"scale=NaN", D, 10000.0, NAN, CLPE_ERROR_INVALID_SCALE},
        {"scale=inf", D, 10000.0, INFINITY, CLPE_ERROR_INVALID_SCALE},
        {"scale=-inf", D, 10000.0, -INFINITY, CLPE_ERROR_INVALID_SCALE},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        clpe_config cfg = good;
        cfg.d = cases[k].d;
        cfg.base = cases[k].base;
        cfg.scale = cases[k].scale;
        expect_config_rejected(&t, like, &cfg, cases[k].want, cases[k].what);
    }
    clpe_config cfg = good;
    cfg.freq = (clpe_freq)7;
    expect_config_rejected(&t, like, &cfg, CLPE_ERROR_INVALID_CONFIG, "freq=7");
    cfg = good;
    cfg.layout = (clpe_layout)3;
    expect_config_rejected(&t, like, &cfg, CLPE_ERROR_INVALID_CONFIG, "layout=3");
    cfg = good;
    cfg.dtype = (clpe_dtype)99;
    expect_config_rejected(&t, like, &cfg, CLPE_ERROR_INVALID_CONFIG, "dtype=99");

    /* The limits themselves are accepted: d = 2 and base just above 1. */
    cfg = good;
    cfg.d = 2;
    cfg.base = nextafter(1.0, 2.0);
    cr_expect_eq(clpe_config_check(&cfg), CLPE_SUCCESS);

    /* NULL arguments. */
    clpe_status st = CLPE_SUCCESS;
    cr_expect_null(clpe_encoder_create(t.context, t.device, NULL, NULL, &st));
    cr_expect_eq(st, CLPE_ERROR_NULL_POINTER);
    cr_expect_null(clpe_encoder_create(NULL, t.device, &good, NULL, &st));
    cr_expect_eq(st, CLPE_ERROR_NULL_POINTER);
    cr_expect_null(clpe_encoder_create(t.context, NULL, &good, NULL, &st));
    cr_expect_eq(st, CLPE_ERROR_NULL_POINTER);
    cr_expect_null(clpe_encoder_create_like(NULL, &good, &st));
    cr_expect_eq(st, CLPE_ERROR_NULL_ENCODER);
    cr_expect_null(clpe_encoder_create_host(NULL, &st));
    cr_expect_eq(st, CLPE_ERROR_NULL_POINTER);
    cr_expect_eq(clpe_config_check(NULL), CLPE_ERROR_NULL_POINTER);
    /* A NULL status pointer is allowed. */
    cr_expect_null(clpe_encoder_create_host(NULL, NULL));
    clpe_encoder_release(NULL); /* a no-op */

    clpe_encoder_release(like);
    test_cl_close(&t);
}

/* ---- enqueue errors --------------------------------------------------------- */

typedef struct fixture {
    test_cl t;
    clpe_encoder *enc;
    cl_mem buf;        /* exactly REGION_BYTES, poisoned */
    cl_mem small;      /* REGION_BYTES - 1, poisoned */
    cl_context other_ctx;
    cl_command_queue other_queue;
    cl_mem other_buf;  /* REGION_BYTES on other_ctx, poisoned */
} fixture;

static void fixture_open(fixture *f)
{
    test_cl_open(&f->t);
    clpe_config cfg = test_config(D, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    f->enc = test_encoder(&f->t, &cfg);
    f->buf = test_buffer_poisoned(&f->t, REGION_BYTES, POISON);
    f->small = test_buffer_poisoned(&f->t, REGION_BYTES - 1, POISON);
    /* A second context on the same device: its queue and buffers belong
     * to another context. */
    cl_int err;
    f->other_ctx = clCreateContext(NULL, 1, &f->t.device, NULL, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
    f->other_queue = clCreateCommandQueue(f->other_ctx, f->t.device, 0, &err);
    cr_assert_eq(err, CL_SUCCESS);
    unsigned char poison[REGION_BYTES];
    memset(poison, POISON, sizeof poison);
    f->other_buf = clCreateBuffer(f->other_ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                  REGION_BYTES, poison, &err);
    cr_assert_eq(err, CL_SUCCESS);
}

static void fixture_close(fixture *f)
{
    clReleaseMemObject(f->other_buf);
    clReleaseCommandQueue(f->other_queue);
    clReleaseContext(f->other_ctx);
    clReleaseMemObject(f->small);
    clReleaseMemObject(f->buf);
    clpe_encoder_release(f->enc);
    test_cl_close(&f->t);
}

/* The buffer still holds `bytes` bytes of poison (after everything queued
 * on our queue has run). */
static void expect_untouched(test_cl *t, cl_command_queue q, cl_mem buf, size_t bytes,
                             const char *what)
{
    cr_assert_eq(clFinish(t->queue), CL_SUCCESS);
    unsigned char *got = malloc(bytes);
    cr_assert(got);
    cl_int err = clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, got, 0, NULL, NULL);
    cr_assert_eq(err, CL_SUCCESS, "read back: %d", err);
    size_t k = 0;
    while (k < bytes && got[k] == POISON)
        ++k;
    cr_expect_eq(k, bytes, "%s: byte %zu of the buffer changed to 0x%02x", what, k,
                 k < bytes ? got[k] : 0);
    free(got);
}

/* One rejected call: status, event untouched, buffer untouched. */
#define EXPECT_REJECTED(f, call, want, buffer, bytes, queue_for_read)                           \
    do {                                                                                         \
        cl_event ev_ = NULL;                                                                     \
        cl_event *event = &ev_;                                                                  \
        clpe_status st_ = (call);                                                                \
        cr_expect_eq(st_, (want), "%s: got %d (%s), want %d (%s)", #call, st_,                   \
                     clpe_status_string(st_), (want), clpe_status_string(want));                 \
        cr_expect_null(ev_, "%s: out event set on failure", #call);                              \
        if (ev_)                                                                                 \
            clReleaseEvent(ev_);                                                                 \
        (void)event;                                                                             \
        expect_untouched(&(f)->t, (queue_for_read), (buffer), (bytes), #call);                   \
    } while (0)

Test(bad_input, table_arguments)
{
    fixture f;
    fixture_open(&f);
    cl_command_queue q = f.t.queue;
    clpe_tensor out = {.buffer = f.buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_tensor small = {.buffer = f.small, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_tensor null_buf = {.buffer = NULL, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_tensor pitch_short = {.buffer = f.buf, .offset = 0, .row_pitch = D - 1, .batch_pitch = 0};
    clpe_tensor pitch_one = {.buffer = f.buf, .offset = 0, .row_pitch = 1, .batch_pitch = 0};
    clpe_tensor misaligned = {.buffer = f.buf, .offset = 2, .row_pitch = 0, .batch_pitch = 0};
    clpe_tensor offset_over = {.buffer = f.buf, .offset = sizeof(float), .row_pitch = 0, .batch_pitch = 0}; /* one float past the end */
    clpe_tensor pitch_huge = {.buffer = f.buf, .offset = 0, .row_pitch = SIZE_MAX / 2, .batch_pitch = 0};
    clpe_tensor foreign = {.buffer = f.other_buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    cl_event dummy = clCreateUserEvent(f.t.context, NULL);
    cr_assert_not_null(dummy);

    EXPECT_REJECTED(&f, clpe_enqueue_table(NULL, q, 0, N, &out, 0, NULL, event),
                    CLPE_ERROR_NULL_ENCODER, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, NULL, 0, N, &out, 0, NULL, event),
                    CLPE_ERROR_NULL_QUEUE, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, N, NULL, 0, NULL, event),
                    CLPE_ERROR_NULL_POINTER, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, N, &null_buf, 0, NULL, event),
                    CLPE_ERROR_NULL_BUFFER, f.buf, REGION_BYTES, q);
    /* one byte short */
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, N, &small, 0, NULL, event),
                    CLPE_ERROR_BUFFER_TOO_SMALL, f.small, REGION_BYTES - 1, q);
    /* one row too many */
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, N + 1, &out, 0, NULL, event),
                    CLPE_ERROR_BUFFER_TOO_SMALL, f.buf, REGION_BYTES, q);
    /* an offset that pushes the last element past the end */
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, N, &offset_over, 0, NULL, event),
                    CLPE_ERROR_BUFFER_TOO_SMALL, f.buf, REGION_BYTES, q);
    /* a pitch whose byte count overflows size_t */
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, N, &pitch_huge, 0, NULL, event),
                    CLPE_ERROR_TOO_LARGE, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, 2, &pitch_short, 0, NULL, event),
                    CLPE_ERROR_INVALID_PITCH, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, 1, &pitch_one, 0, NULL, event),
                    CLPE_ERROR_INVALID_PITCH, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, 1, &misaligned, 0, NULL, event),
                    CLPE_ERROR_MISALIGNED_OFFSET, f.buf, REGION_BYTES, q);
    /* start + n - 1 leaves int64 */
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, INT64_MAX, 2, &out, 0, NULL, event),
                    CLPE_ERROR_POSITION_OVERFLOW, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, INT64_MAX - 2, N, &out, 0, NULL, event),
                    CLPE_ERROR_POSITION_OVERFLOW, f.buf, REGION_BYTES, q);
    /* queue of another context */
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, f.other_queue, 0, N, &out, 0, NULL, event),
                    CLPE_ERROR_CONTEXT_MISMATCH, f.buf, REGION_BYTES, q);
    /* buffer of another context */
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, N, &foreign, 0, NULL, event),
                    CLPE_ERROR_CONTEXT_MISMATCH, f.other_buf, REGION_BYTES, f.other_queue);
    /* wait list: a count without a list, a list without a count */
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, N, &out, 1, NULL, event),
                    CLPE_ERROR_INVALID_WAIT_LIST, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_table(f.enc, q, 0, N, &out, 0, &dummy, event),
                    CLPE_ERROR_INVALID_WAIT_LIST, f.buf, REGION_BYTES, q);

    /* The boundaries are accepted: exactly the right size, and a range
     * ending at INT64_MAX. */
    cr_expect_eq(clpe_enqueue_table(f.enc, q, INT64_MAX - (N - 1), N, &out, 0, NULL, NULL),
                 CLPE_SUCCESS);
    cr_expect_eq(clpe_enqueue_table(f.enc, q, INT64_MAX, 1, &out, 0, NULL, NULL), CLPE_SUCCESS);
    cr_expect_eq(clFinish(q), CL_SUCCESS);

    clSetUserEventStatus(dummy, CL_COMPLETE);
    clReleaseEvent(dummy);
    fixture_close(&f);
}

Test(bad_input, add_arguments)
{
    fixture f;
    fixture_open(&f);
    cl_command_queue q = f.t.queue;
    /* [2, 2, D] fills the buffer exactly */
    const size_t B = 2, S = N / 2;
    clpe_tensor x = {.buffer = f.buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_tensor small = {.buffer = f.small, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_tensor null_buf = {.buffer = NULL, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_tensor pitch_short = {.buffer = f.buf, .offset = 0, .row_pitch = D - 1, .batch_pitch = 0};
    clpe_tensor overlap = {.buffer = f.buf, .offset = 0, .row_pitch = D, .batch_pitch = D}; /* sequences of 2 rows, 1 row apart */
    clpe_tensor misaligned = {.buffer = f.buf, .offset = 1, .row_pitch = 0, .batch_pitch = 0};
    clpe_tensor foreign = {.buffer = f.other_buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};

    int64_t host_pos[N] = {0, 1, 2, 3};
    cl_mem pos_exact = test_buffer_from(&f.t, host_pos, B * S * sizeof(int64_t));
    cl_mem pos_short = test_buffer_from(&f.t, host_pos, B * S * sizeof(int64_t) - 1);
    cl_mem per_seq_short = test_buffer_from(&f.t, host_pos, (B - 1) * sizeof(int64_t));
    cl_int err;
    cl_mem pos_foreign = clCreateBuffer(f.other_ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                        sizeof host_pos, host_pos, &err);
    cr_assert_eq(err, CL_SUCCESS);

    clpe_positions start_max = {.source = CLPE_POSITIONS_START, .start = INT64_MAX, .buffer = NULL, .offset = 0};
    clpe_positions ids_short = {.source = CLPE_POSITIONS_IDS, .start = 0, .buffer = pos_short, .offset = 0};
    clpe_positions ids_offset_over = {.source = CLPE_POSITIONS_IDS, .start = 0, .buffer = pos_exact, .offset = 8};
    clpe_positions ids_misaligned = {.source = CLPE_POSITIONS_IDS, .start = 0, .buffer = pos_exact, .offset = 4};
    clpe_positions per_seq_small = {.source = CLPE_POSITIONS_PER_SEQUENCE, .start = 0, .buffer = per_seq_short, .offset = 0};
    clpe_positions ids_foreign = {.source = CLPE_POSITIONS_IDS, .start = 0, .buffer = pos_foreign, .offset = 0};
    clpe_positions unknown = {.source = (clpe_position_source)3, .start = 0, .buffer = pos_exact, .offset = 0};
    clpe_positions unknown_big = {.source = (clpe_position_source)0x7fffffff, .start = 0, .buffer = pos_exact, .offset = 0};
    cl_event dummy = clCreateUserEvent(f.t.context, NULL);
    cr_assert_not_null(dummy);

    EXPECT_REJECTED(&f, clpe_enqueue_add(NULL, q, B, S, &x, NULL, 0, NULL, event),
                    CLPE_ERROR_NULL_ENCODER, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, NULL, B, S, &x, NULL, 0, NULL, event),
                    CLPE_ERROR_NULL_QUEUE, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, NULL, NULL, 0, NULL, event),
                    CLPE_ERROR_NULL_POINTER, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &null_buf, NULL, 0, NULL, event),
                    CLPE_ERROR_NULL_BUFFER, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &small, NULL, 0, NULL, event),
                    CLPE_ERROR_BUFFER_TOO_SMALL, f.small, REGION_BYTES - 1, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B + 1, S, &x, NULL, 0, NULL, event),
                    CLPE_ERROR_BUFFER_TOO_SMALL, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &pitch_short, NULL, 0, NULL, event),
                    CLPE_ERROR_INVALID_PITCH, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &overlap, NULL, 0, NULL, event),
                    CLPE_ERROR_INVALID_PITCH, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &misaligned, NULL, 0, NULL, event),
                    CLPE_ERROR_MISALIGNED_OFFSET, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &x, &start_max, 0, NULL, event),
                    CLPE_ERROR_POSITION_OVERFLOW, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, f.other_queue, B, S, &x, NULL, 0, NULL, event),
                    CLPE_ERROR_CONTEXT_MISMATCH, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &foreign, NULL, 0, NULL, event),
                    CLPE_ERROR_CONTEXT_MISMATCH, f.other_buf, REGION_BYTES, f.other_queue);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &x, &ids_foreign, 0, NULL, event),
                    CLPE_ERROR_CONTEXT_MISMATCH, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &x, NULL, 2, NULL, event),
                    CLPE_ERROR_INVALID_WAIT_LIST, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &x, NULL, 0, &dummy, event),
                    CLPE_ERROR_INVALID_WAIT_LIST, f.buf, REGION_BYTES, q);
    /* positions buffers too small: one byte short, an offset past the end,
     * per-sequence starts for one sequence fewer */
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &x, &ids_short, 0, NULL, event),
                    CLPE_ERROR_INDEX_BUFFER_TOO_SMALL, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &x, &ids_offset_over, 0, NULL, event),
                    CLPE_ERROR_INDEX_BUFFER_TOO_SMALL, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &x, &per_seq_small, 0, NULL, event),
                    CLPE_ERROR_INDEX_BUFFER_TOO_SMALL, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &x, &ids_misaligned, 0, NULL, event),
                    CLPE_ERROR_MISALIGNED_OFFSET, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &x, &unknown, 0, NULL, event),
                    CLPE_ERROR_INVALID_POSITIONS, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, B, S, &x, &unknown_big, 0, NULL, event),
                    CLPE_ERROR_INVALID_POSITIONS, f.buf, REGION_BYTES, q);

    /* The boundaries are accepted. */
    clpe_positions ids_exact = {.source = CLPE_POSITIONS_IDS, .start = 0, .buffer = pos_exact, .offset = 0};
    clpe_positions start_edge = {.source = CLPE_POSITIONS_START, .start = INT64_MAX - (int64_t)(S - 1), .buffer = NULL, .offset = 0};
    cr_expect_eq(clpe_enqueue_add(f.enc, q, B, S, &x, &ids_exact, 0, NULL, NULL), CLPE_SUCCESS);
    cr_expect_eq(clpe_enqueue_add(f.enc, q, B, S, &x, &start_edge, 0, NULL, NULL), CLPE_SUCCESS);
    cr_expect_eq(clFinish(q), CL_SUCCESS);

    clSetUserEventStatus(dummy, CL_COMPLETE);
    clReleaseEvent(dummy);
    clReleaseMemObject(pos_exact);
    clReleaseMemObject(pos_short);
    clReleaseMemObject(per_seq_short);
    clReleaseMemObject(pos_foreign);
    fixture_close(&f);
}

/* clpe.h documents CLPE_ERROR_INVALID_POSITIONS as "unknown position source,
 * or its buffer missing": a per-sequence or ids source without its buffer
 * must say so. */
Test(bad_input, add_positions_buffer_missing)
{
    fixture f;
    fixture_open(&f);
    cl_command_queue q = f.t.queue;
    clpe_tensor x = {.buffer = f.buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_positions ids_missing = {.source = CLPE_POSITIONS_IDS, .start = 0, .buffer = NULL, .offset = 0};
    clpe_positions per_seq_missing = {.source = CLPE_POSITIONS_PER_SEQUENCE, .start = 0, .buffer = NULL, .offset = 0};
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, 2, 2, &x, &ids_missing, 0, NULL, event),
                    CLPE_ERROR_INVALID_POSITIONS, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(f.enc, q, 2, 2, &x, &per_seq_missing, 0, NULL, event),
                    CLPE_ERROR_INVALID_POSITIONS, f.buf, REGION_BYTES, q);
    fixture_close(&f);
}

Test(bad_input, host_only_encoder)
{
    fixture f;
    fixture_open(&f);
    cl_command_queue q = f.t.queue;
    clpe_config cfg = test_config(D, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_status st;
    clpe_encoder *host = clpe_encoder_create_host(&cfg, &st);
    cr_assert_not_null(host, "%s", clpe_status_string(st));
    clpe_tensor out = {.buffer = f.buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    EXPECT_REJECTED(&f, clpe_enqueue_table(host, q, 0, N, &out, 0, NULL, event),
                    CLPE_ERROR_HOST_ONLY, f.buf, REGION_BYTES, q);
    EXPECT_REJECTED(&f, clpe_enqueue_add(host, q, 2, 2, &out, NULL, 0, NULL, event),
                    CLPE_ERROR_HOST_ONLY, f.buf, REGION_BYTES, q);
    /* and it cannot seed a device encoder */
    st = CLPE_SUCCESS;
    cr_expect_null(clpe_encoder_create_like(host, &cfg, &st));
    cr_expect_eq(st, CLPE_ERROR_HOST_ONLY);
    clpe_encoder_release(host);
    fixture_close(&f);
}

/* n = 0, batch = 0 and seq = 0 succeed, write nothing, and give an out event
 * that completes; it also honours the wait list (a marker after it). */
Test(bad_input, empty_work_succeeds)
{
    fixture f;
    fixture_open(&f);
    cl_command_queue q = f.t.queue;
    clpe_tensor out = {.buffer = f.buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    cl_event ev = NULL;

    cr_expect_eq(clpe_enqueue_table(f.enc, q, 0, 0, &out, 0, NULL, NULL), CLPE_SUCCESS);
    cr_expect_eq(clpe_enqueue_table(f.enc, q, 0, 0, &out, 0, NULL, &ev), CLPE_SUCCESS);
    test_event_finish(ev);
    /* n = 0 at INT64_MAX: no row, no overflow */
    ev = NULL;
    cr_expect_eq(clpe_enqueue_table(f.enc, q, INT64_MAX, 0, &out, 0, NULL, &ev), CLPE_SUCCESS);
    test_event_finish(ev);
    ev = NULL;
    cr_expect_eq(clpe_enqueue_add(f.enc, q, 0, N, &out, NULL, 0, NULL, &ev), CLPE_SUCCESS);
    test_event_finish(ev);
    ev = NULL;
    cr_expect_eq(clpe_enqueue_add(f.enc, q, 2, 0, &out, NULL, 0, NULL, &ev), CLPE_SUCCESS);
    test_event_finish(ev);
    cr_expect_eq(clpe_enqueue_add(f.enc, q, 0, 0, &out, NULL, 0, NULL, NULL), CLPE_SUCCESS);

    /* With a wait list: the event completes only after the list has. */
    cl_int err;
    cl_event gate = clCreateUserEvent(f.t.context, &err);
    cr_assert_eq(err, CL_SUCCESS);
    ev = NULL;
    cr_expect_eq(clpe_enqueue_table(f.enc, q, 0, 0, &out, 1, &gate, &ev), CLPE_SUCCESS);
    cr_assert_not_null(ev);
    clFlush(q);
    cl_int exec = CL_COMPLETE;
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, NULL);
    cr_expect_neq(exec, CL_COMPLETE, "empty table's event completed before its wait list");
    clSetUserEventStatus(gate, CL_COMPLETE);
    test_event_finish(ev);
    clReleaseEvent(gate);

    expect_untouched(&f.t, q, f.buf, REGION_BYTES, "empty work");
    fixture_close(&f);
}

/* Every status in clpe's range, from CLPE_ERROR_NULL_ENCODER down to the
 * sentinel: distinct values with distinct descriptions of their own, and
 * nothing past either end has one, so a new code cannot miss its string or
 * be left outside the sentinel. (tests/status_coverage.cmake checks that
 * each has a test.) */
Test(bad_input, every_status_has_its_own_description)
{
    const char *unknown = clpe_status_string(-2999);
    cr_assert_str_eq(unknown, "unknown status");
    cr_expect_str_eq(clpe_status_string(CLPE_ERROR_END_UNSTABLE), unknown,
                     "CLPE_ERROR_END_UNSTABLE (%d) has a description: move the sentinel",
                     CLPE_ERROR_END_UNSTABLE);
    cr_expect_str_eq(clpe_status_string(CLPE_ERROR_NULL_ENCODER + 1), unknown);
    const int first = CLPE_ERROR_NULL_ENCODER, last = CLPE_ERROR_END_UNSTABLE + 1;
    cr_assert(last <= first && last > -2999, "sentinel %d outside clpe's range",
              CLPE_ERROR_END_UNSTABLE);
    cr_expect_geq(first - last + 1, 28, "the range lost codes: %d..%d", first, last);
    for (clpe_status a = first; a >= last; --a) {
        cr_expect(!clpe_status_is_opencl(a), "%d counted as an OpenCL code", a);
        const char *sa = clpe_status_string(a);
        cr_expect(sa && *sa && strcmp(sa, unknown) != 0, "status %d has no description", a);
        for (clpe_status b = a - 1; b >= last; --b)
            cr_expect(strcmp(sa, clpe_status_string(b)) != 0,
                      "statuses %d and %d share the description \"%s\"", a, b, sa);
    }
}

/* A selector that matches no device: CLPE_ERROR_NO_DEVICE, out parameters
 * left alone. Needs no device of its own: it is about what is not there. */
Test(bad_input, selector_matching_no_device)
{
    const char *selectors[] = {"no-such-device-7c1f", "4294967296", "99999"};
    for (size_t k = 0; k < sizeof selectors / sizeof selectors[0]; ++k) {
        cl_platform_id platform = (cl_platform_id)(uintptr_t)0x5e1;
        cl_device_id device = (cl_device_id)(uintptr_t)0x5e2;
        clpe_status st = clpe_select_device(selectors[k], &platform, &device);
        cr_expect_eq(st, CLPE_ERROR_NO_DEVICE, "selector \"%s\": %d (%s)", selectors[k], st,
                     clpe_status_string(st));
        cr_expect_eq(platform, (cl_platform_id)(uintptr_t)0x5e1, "platform written");
        cr_expect_eq(device, (cl_device_id)(uintptr_t)0x5e2, "device written");
    }
    /* Through the environment variable too, the rule every tool uses. */
    setenv("CLPE_DEVICE", "no-such-device-7c1f", 1);
    cl_platform_id platform = NULL;
    cl_device_id device = NULL;
    cr_expect_eq(clpe_select_device(NULL, &platform, &device), CLPE_ERROR_NO_DEVICE);
    cr_expect_null(device);
}

/* An encoder on device 0 and a queue on device 1 of the same context. */
Test(bad_input, queue_of_another_device)
{
    setenv("POCL_DEVICES", "pthread pthread", 1);
    cl_platform_id platform = NULL;
    cl_uint nplat = 0;
    cr_assert_eq(clGetPlatformIDs(1, &platform, &nplat), CL_SUCCESS);
    cl_device_id devs[2];
    cl_uint ndev = 0;
    if (!test_platform_is(platform, "Portable Computing Language") ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 2, devs, &ndev) != CL_SUCCESS || ndev < 2)
        cr_skip_test("needs PoCL with two devices (POCL_DEVICES)");
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 2, devs, NULL, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_command_queue q1 = clCreateCommandQueue(ctx, devs[1], 0, &err);
    cr_assert_eq(err, CL_SUCCESS);
    clpe_config cfg = clpe_config_default(D);
    clpe_status st;
    clpe_encoder *enc = clpe_encoder_create(ctx, devs[0], &cfg, NULL, &st);
    cr_assert_not_null(enc, "%s", clpe_status_string(st));
    unsigned char poison[REGION_BYTES];
    memset(poison, POISON, sizeof poison);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof poison,
                                poison, &err);
    cr_assert_eq(err, CL_SUCCESS);
    clpe_tensor out = {.buffer = buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    cl_event ev = NULL;
    cr_expect_eq(clpe_enqueue_table(enc, q1, 0, N, &out, 0, NULL, &ev),
                 CLPE_ERROR_DEVICE_MISMATCH);
    cr_expect_eq(clpe_enqueue_add(enc, q1, 1, N, &out, NULL, 0, NULL, &ev),
                 CLPE_ERROR_DEVICE_MISMATCH);
    cr_expect_null(ev, "a rejected call set the out event");
    unsigned char back[REGION_BYTES];
    cr_assert_eq(clEnqueueReadBuffer(q1, buf, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL),
                 CL_SUCCESS);
    cr_expect_eq(memcmp(back, poison, sizeof back), 0, "buffer changed");
    clReleaseMemObject(buf);
    clpe_encoder_release(enc);
    clReleaseCommandQueue(q1);
    clReleaseContext(ctx);
}

/* ---- reserved fields ------------------------------------------------------------ */

/* A reserved field set to anything but zero is refused with
 * CLPE_ERROR_RESERVED_FIELD, in every struct a caller fills and in every
 * word of its reserved array, and nothing is written. */

#define N_RESERVED(s) (sizeof((s).reserved) / sizeof((s).reserved[0]))

/* The enqueue fixture plus what add_out, gather and pad_positions read
 * besides its output: a two-row embedding table of zeros, N token ids and
 * N positions. Problems are [1, N], the size of the fixture's region. */
typedef struct side_fixture {
    fixture f;
    cl_command_queue q;
    cl_mem emb_buf, ids_buf, pos_buf;
    clpe_token_ids ids;
    clpe_tensor out; /* f.buf, whose poison every rejection must leave */
    clpe_tensor emb;
} side_fixture;

static void side_fixture_open(side_fixture *s)
{
    fixture_open(&s->f);
    const float emb[2 * D] = {0};
    const int32_t ids[N] = {0, 1, 0, 1};
    const int64_t pos[N] = {5, 6, 7, 8};
    s->q = s->f.t.queue;
    s->emb_buf = test_buffer_from(&s->f.t, emb, sizeof emb);
    s->ids_buf = test_buffer_from(&s->f.t, ids, sizeof ids);
    s->pos_buf = test_buffer_from(&s->f.t, pos, sizeof pos);
    s->ids = (clpe_token_ids){.buffer = s->ids_buf};
    s->out = (clpe_tensor){.buffer = s->f.buf};
    s->emb = (clpe_tensor){.buffer = s->emb_buf};
}

static void side_fixture_close(side_fixture *s)
{
    cr_expect_eq(clFinish(s->q), CL_SUCCESS);
    clReleaseMemObject(s->pos_buf);
    clReleaseMemObject(s->ids_buf);
    clReleaseMemObject(s->emb_buf);
    fixture_close(&s->f);
}

Test(bad_input, reserved_field_in_config)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config good = test_config(D, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_encoder *like = test_encoder(&t, &good);
    cr_assert_geq(N_RESERVED(good), 1);
    for (size_t k = 0; k < N_RESERVED(good); ++k) {
        const uint64_t values[] = {1, UINT64_C(1) << 63};
        for (size_t v = 0; v < 2; ++v) {
            clpe_config cfg = good;
            cfg.reserved[k] = values[v];
            char what[64];
            snprintf(what, sizeof what, "reserved[%zu] = 0x%llx", k, (unsigned long long)values[v]);
            expect_config_rejected(&t, like, &cfg, CLPE_ERROR_RESERVED_FIELD, what);
        }
    }
    clpe_encoder_release(like);
    test_cl_close(&t);
}

Test(bad_input, reserved_field_in_tensor)
{
    side_fixture s;
    side_fixture_open(&s);
    fixture *f = &s.f;
    cl_command_queue q = s.q;
    cr_assert_geq(N_RESERVED(s.out), 1);
    for (size_t k = 0; k < N_RESERVED(s.out); ++k) {
        clpe_tensor bad = s.out, bad_emb = s.emb;
        bad.reserved[k] = 1;
        bad_emb.reserved[k] = 1;
        EXPECT_REJECTED(f, clpe_enqueue_table(f->enc, q, 0, N, &bad, 0, NULL, event),
                        CLPE_ERROR_RESERVED_FIELD, f->buf, REGION_BYTES, q);
        EXPECT_REJECTED(f, clpe_enqueue_add(f->enc, q, 1, N, &bad, NULL, 0, NULL, event),
                        CLPE_ERROR_RESERVED_FIELD, f->buf, REGION_BYTES, q);
        /* out of place: a bad input, then a bad output; f->buf is the output */
        EXPECT_REJECTED(f, clpe_enqueue_add_out(f->enc, q, 1, N, &bad_emb, &s.out, NULL, 0, NULL,
                                                event),
                        CLPE_ERROR_RESERVED_FIELD, f->buf, REGION_BYTES, q);
        EXPECT_REJECTED(f, clpe_enqueue_add_out(f->enc, q, 1, N, &s.emb, &bad, NULL, 0, NULL,
                                                event),
                        CLPE_ERROR_RESERVED_FIELD, f->buf, REGION_BYTES, q);
        EXPECT_REJECTED(f, clpe_enqueue_gather(f->enc, q, 1, N, &s.ids, &bad_emb, CLPE_DTYPE_F32,
                                               2, &s.out, NULL, NULL, 0, NULL, event),
                        CLPE_ERROR_RESERVED_FIELD, f->buf, REGION_BYTES, q);
        EXPECT_REJECTED(f, clpe_enqueue_gather(f->enc, q, 1, N, &s.ids, &s.emb, CLPE_DTYPE_F32, 2,
                                               &bad, NULL, NULL, 0, NULL, event),
                        CLPE_ERROR_RESERVED_FIELD, f->buf, REGION_BYTES, q);
    }
    /* The same call with the reserved fields zero goes through. */
    cr_expect_eq(clpe_enqueue_gather(f->enc, q, 1, N, &s.ids, &s.emb, CLPE_DTYPE_F32, 2, &s.out,
                                     NULL, NULL, 0, NULL, NULL),
                 CLPE_SUCCESS);
    side_fixture_close(&s);
}

Test(bad_input, reserved_field_in_positions)
{
    side_fixture s;
    side_fixture_open(&s);
    fixture *f = &s.f;
    cl_command_queue q = s.q;
    /* accepted calls write here, as the rejections check f->buf kept its poison */
    clpe_tensor scratch = {.buffer = test_buffer_poisoned(&f->t, REGION_BYTES, POISON)};
    const clpe_positions sources[] = {
        {.source = CLPE_POSITIONS_START, .start = 3},
        {.source = CLPE_POSITIONS_PER_SEQUENCE, .buffer = s.pos_buf},
        {.source = CLPE_POSITIONS_IDS, .buffer = s.pos_buf},
    };
    cr_assert_geq(N_RESERVED(sources[0]), 1);
    for (size_t src = 0; src < sizeof sources / sizeof sources[0]; ++src) {
        for (size_t k = 0; k < N_RESERVED(sources[src]); ++k) {
            clpe_positions bad = sources[src];
            bad.reserved[k] = 1;
            EXPECT_REJECTED(f, clpe_enqueue_add(f->enc, q, 1, N, &s.out, &bad, 0, NULL, event),
                            CLPE_ERROR_RESERVED_FIELD, f->buf, REGION_BYTES, q);
            EXPECT_REJECTED(f, clpe_enqueue_add_out(f->enc, q, 1, N, &s.emb, &s.out, &bad, 0, NULL,
                                                    event),
                            CLPE_ERROR_RESERVED_FIELD, f->buf, REGION_BYTES, q);
            EXPECT_REJECTED(f, clpe_enqueue_gather(f->enc, q, 1, N, &s.ids, &s.emb,
                                                   CLPE_DTYPE_F32, 2, &s.out, &bad, NULL, 0, NULL,
                                                   event),
                            CLPE_ERROR_RESERVED_FIELD, f->buf, REGION_BYTES, q);
        }
        cr_expect_eq(clpe_enqueue_gather(f->enc, q, 1, N, &s.ids, &s.emb, CLPE_DTYPE_F32, 2,
                                         &scratch, &sources[src], NULL, 0, NULL, NULL),
                     CLPE_SUCCESS, "source %zu", src);
    }
    cr_expect_eq(clFinish(q), CL_SUCCESS);
    clReleaseMemObject(scratch.buffer);
    side_fixture_close(&s);
}

Test(bad_input, reserved_field_in_token_ids)
{
    side_fixture s;
    side_fixture_open(&s);
    fixture *f = &s.f;
    cl_command_queue q = s.q;
    /* the positions pad_positions would write: N int64, poisoned */
    cl_mem pos_out = test_buffer_poisoned(&f->t, N * sizeof(int64_t), POISON);
    cr_assert_geq(N_RESERVED(s.ids), 1);
    for (size_t k = 0; k < N_RESERVED(s.ids); ++k) {
        clpe_token_ids bad = s.ids;
        bad.reserved[k] = 1;
        EXPECT_REJECTED(f, clpe_enqueue_gather(f->enc, q, 1, N, &bad, &s.emb, CLPE_DTYPE_F32, 2,
                                               &s.out, NULL, NULL, 0, NULL, event),
                        CLPE_ERROR_RESERVED_FIELD, f->buf, REGION_BYTES, q);
        EXPECT_REJECTED(f, clpe_enqueue_pad_positions(f->enc, q, 1, N, &bad, 1, 2, 1, pos_out, 0,
                                                      0, NULL, event),
                        CLPE_ERROR_RESERVED_FIELD, pos_out, N * sizeof(int64_t), q);
    }
    cr_expect_eq(clpe_enqueue_pad_positions(f->enc, q, 1, N, &s.ids, 1, 2, 1, pos_out, 0, 0, NULL,
                                            NULL),
                 CLPE_SUCCESS);
    cr_expect_eq(clFinish(q), CL_SUCCESS);
    clReleaseMemObject(pos_out);
    side_fixture_close(&s);
}

/* ---- rotary configuration ----------------------------------------------------- */

/* Each bad rotary configuration gets its status, and no object. */
static void expect_rope_rejected(const clpe_rope_config *cfg, clpe_status want, const char *what)
{
    clpe_status st = CLPE_SUCCESS;
    clpe_rope *rope = clpe_rope_create_host(cfg, &st);
    cr_expect_null(rope, "rope_create_host(%s) succeeded", what);
    cr_expect_eq(st, want, "rope_create_host(%s): %d (%s), want %d (%s)", what, st,
                 clpe_status_string(st), want, clpe_status_string(want));
    if (rope)
        clpe_rope_release(rope);
}

Test(bad_input, rope_config_values)
{
    if (!clpe_rope_config_default || !clpe_rope_create_host || !clpe_rope_release)
        cr_skip_test("this library build does not export the rotary API yet");
    const clpe_rope_config good = clpe_rope_config_default(64);
    clpe_status st = CLPE_SUCCESS;
    clpe_rope *rope = clpe_rope_create_host(&good, &st);
    cr_assert_not_null(rope, "the default rotary configuration: %s", clpe_status_string(st));
    clpe_rope_release(rope);

    clpe_rope_config cfg = good;
    cfg.head_dim = 0;
    expect_rope_rejected(&cfg, CLPE_ERROR_INVALID_ROPE, "head_dim 0");
    cfg = good;
    cfg.rotary_dim = 33; /* odd */
    expect_rope_rejected(&cfg, CLPE_ERROR_INVALID_ROPE, "rotary_dim 33");
    cfg = good;
    cfg.rotary_dim = 66; /* above head_dim */
    expect_rope_rejected(&cfg, CLPE_ERROR_INVALID_ROPE, "rotary_dim 66 > head_dim 64");
    cfg = good;
    cfg.pairing = (clpe_rope_pairing)7;
    expect_rope_rejected(&cfg, CLPE_ERROR_INVALID_ROPE, "pairing 7");
    cfg = good;
    cfg.scaling = (clpe_rope_scaling)99;
    expect_rope_rejected(&cfg, CLPE_ERROR_INVALID_SCALING, "scaling 99");
    cfg = good;
    cfg.scaling = CLPE_ROPE_LINEAR;
    cfg.factor = 0.5; /* the factor is >= 1 */
    expect_rope_rejected(&cfg, CLPE_ERROR_INVALID_SCALING, "linear factor 0.5");
    cfg.factor = NAN;
    expect_rope_rejected(&cfg, CLPE_ERROR_INVALID_SCALING, "linear factor NaN");
    for (size_t k = 0; k < N_RESERVED(good); ++k) {
        cfg = good;
        cfg.reserved[k] = 1;
        expect_rope_rejected(&cfg, CLPE_ERROR_RESERVED_FIELD, "reserved word set");
    }
}

/* ---- hardening: classes found by hostile use ----------------------------- */

/* Tuning knobs are parsed once and range-checked: a value out of range or not
 * a plain decimal number is ignored (it once divided by zero), and the values
 * in effect are readable. */
Test(bad_input, tuning_knobs_out_of_range_are_ignored, .timeout = 120)
{
    static const char *const bad_rows[] = {"4294967296", "0", "-3", "16x", " 8", "0x10",
                                           "99999999999999999999999", ""};
    for (size_t k = 0; k < sizeof bad_rows / sizeof bad_rows[0]; ++k) {
        setenv("CLPE_ROWS_PER_ITEM", bad_rows[k], 1);
        setenv("CLPE_MAX_LAUNCH_ROWS", bad_rows[k], 1);
        setenv("CLPE_WORK_GROUP_SIZE", bad_rows[k], 1);
        setenv("CLPE_TILE_WALK", bad_rows[k], 1);
        test_cl t;
        test_cl_open(&t);
        clpe_config cfg = clpe_config_default(520);
        clpe_encoder *enc = test_encoder(&t, &cfg);
        clpe_launch_info info;
        cr_assert_eq(clpe_encoder_get_launch_info(enc, &info), CLPE_SUCCESS);
        cr_expect_eq(info.rows_per_item, 16u, "CLPE_ROWS_PER_ITEM=%s: %u", bad_rows[k],
                     info.rows_per_item);
        cr_expect_geq(info.work_group_size, 1u);
        /* "0" is in range for CLPE_TILE_WALK (0 or 1), and taken */
        bool tiles = strcmp(bad_rows[k], "0") != 0 && info.pairs_per_item > 1;
        cr_expect_eq(info.tile_walk, tiles, "CLPE_TILE_WALK=%s: %u", bad_rows[k], info.tile_walk);
        /* and the encoder works: a table equals the host emulation */
        size_t n = 37, bytes = n * 520 * sizeof(float);
        cl_mem buf = test_buffer_poisoned(&t, bytes, POISON);
        clpe_tensor out = {.buffer = buf};
        cr_assert_eq(clpe_enqueue_table(enc, t.queue, 3, n, &out, 0, NULL, NULL), CLPE_SUCCESS);
        float *dev = test_buffer_read(&t, buf, bytes), *host = malloc(bytes);
        cr_assert_eq(clpe_host_table(enc, 3, n, host, 0), CLPE_SUCCESS);
        cr_expect_eq(memcmp(dev, host, bytes), 0, "knobs '%s': table differs", bad_rows[k]);
        free(dev);
        free(host);
        clReleaseMemObject(buf);
        clpe_encoder_release(enc);
        test_cl_close(&t);
    }
    /* values in range are taken, and reported */
    setenv("CLPE_ROWS_PER_ITEM", "7", 1);
    setenv("CLPE_MAX_LAUNCH_ROWS", "1000", 1);
    setenv("CLPE_WORK_GROUP_SIZE", "8", 1);
    setenv("CLPE_MAX_LAUNCH_BATCH", "3", 1);
    setenv("CLPE_TILE_WALK", "0", 1);
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = clpe_config_default(8);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    clpe_launch_info info;
    cr_assert_eq(clpe_encoder_get_launch_info(enc, &info), CLPE_SUCCESS);
    cr_expect_eq(info.rows_per_item, 7u);
    cr_expect_eq(info.max_launch_rows, 994u); /* whole work-items of 7 rows */
    cr_expect_leq(info.work_group_size, 8u);
    cr_expect_eq(info.max_launch_batch, 3u);
    cr_expect_eq(info.tile_walk, 0u);
    cr_expect_eq(info.reserved32, 0u);
    for (int k = 0; k < 3; ++k)
        cr_expect_eq(info.reserved[k], 0u);
    cr_expect_eq(clpe_encoder_get_launch_info(enc, NULL), CLPE_ERROR_NULL_POINTER);
    cr_expect_eq(clpe_encoder_get_launch_info(NULL, &info), CLPE_ERROR_NULL_ENCODER);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}

/* Pad-aware positions that would leave int64 are refused, nothing written. */
Test(bad_input, pad_positions_overflow_is_refused)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    int32_t ids[3] = {5, 6, 7};
    cl_mem ibuf = test_buffer_from(&t, ids, sizeof ids);
    cl_mem pbuf = test_buffer_poisoned(&t, 3 * sizeof(int64_t), POISON);
    clpe_token_ids tid = {.buffer = ibuf};
    cr_expect_eq(clpe_enqueue_pad_positions(enc, t.queue, 1, 3, &tid, 1, INT64_MAX, 1, pbuf, 0, 0,
                                            NULL, NULL),
                 CLPE_ERROR_POSITION_OVERFLOW);
    cr_expect_eq(clpe_enqueue_pad_positions(enc, t.queue, 1, 3, &tid, 1, INT64_MAX - 1, 1, pbuf,
                                            0, 0, NULL, NULL),
                 CLPE_ERROR_POSITION_OVERFLOW);
    /* ids written as their own positions: refused */
    cr_expect_eq(clpe_enqueue_pad_positions(enc, t.queue, 1, 3, &tid, 1, 2, 1, ibuf, 0, 0, NULL,
                                            NULL),
                 CLPE_ERROR_ALIASING);
    clFinish(t.queue);
    unsigned char *after = test_buffer_read(&t, pbuf, 3 * sizeof(int64_t));
    for (size_t k = 0; k < 3 * sizeof(int64_t); ++k)
        cr_assert_eq(after[k], POISON, "byte %zu written", k);
    free(after);
    /* the largest first position that fits works */
    cr_expect_eq(clpe_enqueue_pad_positions(enc, t.queue, 1, 3, &tid, 1, INT64_MAX - 2, 1, pbuf,
                                            0, 0, NULL, NULL),
                 CLPE_SUCCESS);
    int64_t *pos = test_buffer_read(&t, pbuf, 3 * sizeof(int64_t));
    cr_expect_eq(pos[2], INT64_MAX);
    free(pos);
    clReleaseMemObject(pbuf);
    clReleaseMemObject(ibuf);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}

/* A buffer a call writes may not be one it reads (or writes twice), except
 * the documented in-place add: the bad-id report over the ids, the table or
 * the output; positions inside the output. */
Test(bad_input, written_buffers_may_not_alias_inputs)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    const size_t batch = 1, seq = N, vocab = 4;
    size_t bytes = REGION_BYTES * 4;
    cl_mem emb = test_buffer_poisoned(&t, bytes, POISON);
    cl_mem out = test_buffer_poisoned(&t, bytes, POISON);
    int32_t ids[N] = {0, 1, 2, 3};
    cl_mem ibuf = test_buffer_from(&t, ids, sizeof ids);
    clpe_token_ids tid = {.buffer = ibuf};
    clpe_tensor te = {.buffer = emb}, to = {.buffer = out};
    cl_mem reports[3] = {ibuf, emb, out};
    for (int k = 0; k < 3; ++k)
        cr_expect_eq(clpe_enqueue_gather(enc, t.queue, batch, seq, &tid, &te, CLPE_DTYPE_F32, vocab,
                                         &to, NULL, reports[k], 0, NULL, NULL),
                     CLPE_ERROR_ALIASING, "bad_ids = buffer %d", k);
    cr_expect_eq(clpe_enqueue_gather(enc, t.queue, batch, seq, &(clpe_token_ids){.buffer = out},
                                     &te, CLPE_DTYPE_F32, vocab, &to, NULL, NULL, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    clpe_positions in_out = {.source = CLPE_POSITIONS_PER_SEQUENCE, .buffer = out};
    cr_expect_eq(clpe_enqueue_add(enc, t.queue, batch, seq, &to, &in_out, 0, NULL, NULL),
                 CLPE_ERROR_ALIASING);
    clFinish(t.queue);
    unsigned char *a = test_buffer_read(&t, out, bytes), *b = test_buffer_read(&t, emb, bytes);
    int32_t *i2 = test_buffer_read(&t, ibuf, sizeof ids);
    for (size_t k = 0; k < bytes; ++k)
        cr_assert(a[k] == POISON && b[k] == POISON, "byte %zu written", k);
    cr_assert_eq(memcmp(i2, ids, sizeof ids), 0);
    free(a);
    free(b);
    free(i2);
    clReleaseMemObject(ibuf);
    clReleaseMemObject(out);
    clReleaseMemObject(emb);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}

/* The host emulation resolves regions like the device calls: a pitch whose
 * byte count wraps is TOO_LARGE, never rows wrapping onto each other. */
Test(bad_input, host_calls_check_sizes_like_device_calls)
{
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = clpe_encoder_create_host(&cfg, NULL);
    cr_assert_not_null(enc);
    float buf[3 * D];
    memset(buf, POISON, sizeof buf);
    size_t huge = (size_t)1 << 63;
    cr_expect_eq(clpe_host_add(enc, 1, 3, buf, huge, 0, CLPE_POSITIONS_START, 0, NULL),
                 CLPE_ERROR_TOO_LARGE);
    cr_expect_eq(clpe_host_table(enc, 0, 3, buf, huge), CLPE_ERROR_TOO_LARGE);
    cr_expect_eq(clpe_host_add(enc, 2, 3, buf, D, huge, CLPE_POSITIONS_START, 0, NULL),
                 CLPE_ERROR_TOO_LARGE);
    int32_t ids[3] = {0, 0, 0};
    cr_expect_eq(clpe_host_gather(enc, 1, 3, ids, buf, 1, D, buf, huge, CLPE_POSITIONS_START, 0,
                                  NULL, NULL),
                 CLPE_ERROR_TOO_LARGE);
    cr_expect_eq(clpe_host_add(enc, 2, 3, buf, D, D, CLPE_POSITIONS_START, 0, NULL),
                 CLPE_ERROR_INVALID_PITCH); /* sequences overlap */
    unsigned char *bytes = (unsigned char *)buf;
    for (size_t k = 0; k < sizeof buf; ++k)
        cr_assert_eq(bytes[k], POISON, "byte %zu written", k);
    clpe_encoder_release(enc);
}

/* Every event of a wait list is checked: NULL, or of another context, is
 * refused (CLPE_ERROR_INVALID_WAIT_LIST, CLPE_ERROR_CONTEXT_MISMATCH) before
 * anything is enqueued. */
Test(bad_input, wait_list_events_are_checked_one_by_one)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    cl_mem buf = test_buffer_poisoned(&t, REGION_BYTES, POISON);
    clpe_tensor out = {.buffer = buf};
    cl_int err;
    cl_context other = clCreateContext(NULL, 1, &t.device, NULL, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_event foreign = clCreateUserEvent(other, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_event mine = clCreateUserEvent(t.context, &err);
    cr_assert_eq(err, CL_SUCCESS);
    clSetUserEventStatus(mine, CL_COMPLETE);
    cl_event with_null[2] = {mine, NULL};
    cl_event with_foreign[2] = {mine, foreign};
    cl_event ev = (cl_event)(uintptr_t)0x1234;
    cr_expect_eq(clpe_enqueue_table(enc, t.queue, 0, N, &out, 2, with_null, &ev),
                 CLPE_ERROR_INVALID_WAIT_LIST);
    cr_expect_eq(clpe_enqueue_table(enc, t.queue, 0, N, &out, 2, with_foreign, &ev),
                 CLPE_ERROR_CONTEXT_MISMATCH);
    cr_expect_eq(ev, (cl_event)(uintptr_t)0x1234, "the out event was changed");
    clFinish(t.queue);
    unsigned char *after = test_buffer_read(&t, buf, REGION_BYTES);
    for (size_t k = 0; k < REGION_BYTES; ++k)
        cr_assert_eq(after[k], POISON, "byte %zu written", k);
    free(after);
    /* a good list still works */
    cr_expect_eq(clpe_enqueue_table(enc, t.queue, 0, N, &out, 1, &mine, NULL), CLPE_SUCCESS);
    clFinish(t.queue);
    clSetUserEventStatus(foreign, CL_COMPLETE);
    clReleaseEvent(foreign);
    clReleaseEvent(mine);
    clReleaseContext(other);
    clReleaseMemObject(buf);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}
