/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fault.c - every OpenCL failure becomes a clean clpe status.
 *
 * The fault shim (tests/fault/) is linked into this executable: it makes the
 * N-th call of one OpenCL entry point fail. For every entry point it wraps,
 * the walks below try N = 1, 2, ... until the operation under test no longer
 * reaches an N-th call:
 *  - creation: clpe_encoder_create and clpe_encoder_create_like;
 *  - each enqueue path (table in one launch and split into several, the
 *    empty table that only places a marker, add from a start, per-sequence
 *    and per-token positions, and add_out / gather / pad_positions once the
 *    library has them).
 * Each injected failure must come back as the raw cl_int (the documented
 * status), must not crash, must leave the out event and the caller's buffer
 * alone, and must give back every OpenCL reference clpe took (the shim
 * counts creations, retains and releases). After a failed enqueue the same
 * encoder must still work: the same call without a fault is bit-exact
 * against the host emulation.
 *
 * The shim can also fail a host allocation (malloc, calloc, realloc): the
 * library's own allocations must come back as CLPE_ERROR_OUT_OF_HOST_MEMORY
 * and write nothing.
 */
#include "fault/fault_shim.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Functions the library may not have yet (they land in stages); weak, so
 * this file links either way and covers them once they exist. */
extern __typeof__(clpe_enqueue_add_out) clpe_enqueue_add_out __attribute__((weak));
extern __typeof__(clpe_enqueue_gather) clpe_enqueue_gather __attribute__((weak));
extern __typeof__(clpe_host_gather) clpe_host_gather __attribute__((weak));
extern __typeof__(clpe_enqueue_pad_positions) clpe_enqueue_pad_positions
    __attribute__((weak));

#define D 24u
/* Launches are capped at this many rows (CLPE_MAX_LAUNCH_ROWS), so a
 * 200-row table is split into several launches joined by a marker. */
#define MAX_LAUNCH_ROWS "64"
#define POISON 0xA5
#define MAX_N 400

static const cl_event EVENT_SENTINEL = (cl_event)(uintptr_t)0x5e47;

/* The error each entry point is made to return: a plausible one. */
static cl_int error_for(fault_fn fn)
{
    switch (fn) {
    case FAULT_clCreateBuffer:
    case FAULT_clCreateSubBuffer:
        return CL_MEM_OBJECT_ALLOCATION_FAILURE;
    case FAULT_clBuildProgram:
        return CL_BUILD_PROGRAM_FAILURE;
    case FAULT_clCreateProgramWithSource:
    case FAULT_clCreateProgramWithBinary:
    case FAULT_clRetainContext:
        return CL_OUT_OF_HOST_MEMORY;
    case FAULT_clGetDeviceInfo:
        return CL_INVALID_DEVICE;
    default:
        return CL_OUT_OF_RESOURCES;
    }
}

/* Failures clpe may absorb: the build log is best effort. */
static bool may_absorb(fault_fn fn) { return fn == FAULT_clGetProgramBuildInfo; }

static long total_steps;
/* Faults that fired per entry point, in this (forked) test. */
static long fired_per_fn[FAULT_FN_COUNT];

static void assert_covered(const fault_fn *fns, size_t count, const char *walk)
{
    for (size_t k = 0; k < count; ++k)
        cr_assert_gt(fired_per_fn[fns[k]], 0, "%s walk never reached %s", walk,
                     fault_fn_name(fns[k]));
}

typedef struct live_snapshot {
    long n[FAULT_OBJ_COUNT];
} live_snapshot;

static live_snapshot live_now(void)
{
    live_snapshot s;
    for (int k = 0; k < FAULT_OBJ_COUNT; ++k)
        s.n[k] = fault_live((fault_obj)k);
    return s;
}

static void assert_balanced(const live_snapshot *before, const char *what, fault_fn fn, long n)
{
    for (int k = 0; k < FAULT_OBJ_COUNT; ++k) {
        long now = fault_live((fault_obj)k);
        cr_assert_eq(now, before->n[k], "%s, %s fails at call %ld: %ld %s reference(s) %s", what,
                     fault_fn_name(fn), n, labs(now - before->n[k]), fault_obj_name((fault_obj)k),
                     now > before->n[k] ? "leaked" : "over-released");
    }
}

static void setup(void) { setenv("CLPE_MAX_LAUNCH_ROWS", MAX_LAUNCH_ROWS, 1); }

/* ---- creation walk ---------------------------------------------------------- */

Test(fault, creation_walk, .init = setup, .timeout = 600)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *parent = test_encoder(&t, &cfg);
    live_snapshot base = live_now();
    long start_injected = fault_injected();

    for (int fn = 0; fn < FAULT_FN_COUNT; ++fn) {
        for (int like = 0; like < 2; ++like) {
            const char *what = like ? "clpe_encoder_create_like" : "clpe_encoder_create";
            for (long n = 1; n <= MAX_N; ++n) {
                char log_text[8192];
                clpe_build_log log = {log_text, sizeof log_text, 12345};
                clpe_status st = 12345;
                long before = fault_injected();
                fault_arm((fault_fn)fn, n, error_for((fault_fn)fn));
                clpe_encoder *enc = like ? clpe_encoder_create_like(parent, &cfg, &st)
                                         : clpe_encoder_create(t.context, t.device, &cfg, &log,
                                                               &st);
                fault_disarm();
                bool fired = fault_injected() > before;
                fired_per_fn[fn] += fired;
                ++total_steps;
                if (fired && !(may_absorb((fault_fn)fn) && st == CLPE_SUCCESS)) {
                    cr_assert_null(enc, "%s returned an encoder although %s failed", what,
                                   fault_fn_name((fault_fn)fn));
                    cr_assert_eq(st, error_for((fault_fn)fn),
                                 "%s with %s failing at call %ld: status %d (%s), want %d", what,
                                 fault_fn_name((fault_fn)fn), n, st, clpe_status_string(st),
                                 error_for((fault_fn)fn));
                    if (fn == FAULT_clBuildProgram && !like) {
                        cr_assert(log.length > 1, "failed build returned no log");
                        cr_assert(strstr(log_text, "clpe_fault_injected_build_error"),
                                  "build log does not carry the compiler's message:\n%s",
                                  log_text);
                    }
                } else {
                    cr_assert_not_null(enc, "%s failed without a fault: %s", what,
                                       clpe_status_string(st));
                    cr_assert_eq(st, CLPE_SUCCESS);
                }
                clpe_encoder_release(enc);
                assert_balanced(&base, what, (fault_fn)fn, n);
                if (!fired)
                    break;
            }
        }
    }
    clpe_encoder_release(parent);
    test_cl_close(&t);
    static const fault_fn required[] = {FAULT_clCreateBuffer, FAULT_clCreateProgramWithSource,
                                        FAULT_clBuildProgram, FAULT_clCreateKernel,
                                        FAULT_clGetDeviceInfo, FAULT_clRetainContext};
    assert_covered(required, sizeof required / sizeof required[0], "creation");
    printf("fault creation walk: %ld steps, %ld faults injected\n", total_steps,
           fault_injected() - start_injected);
}

/* ---- enqueue walk ------------------------------------------------------------- */

/* One enqueue path: its buffers, what it writes, and the call. */
typedef struct path_state {
    const test_cl *t;
    clpe_encoder *enc;
    cl_mem out;          /* the buffer the call writes */
    size_t out_bytes;
    void *initial;       /* out's content before the call */
    void *expected;      /* out's content after a successful call */
    cl_mem aux[3];       /* inputs: positions, ids, embedding, x */
    cl_event wait;       /* a completed user event for wait lists, or NULL */
    int counter;         /* 1 + index in aux of a bad-id counter the call resets */
} path_state;

typedef struct enqueue_path {
    const char *name;
    bool split;              /* several launches: a late failure may leave rows written */
    bool available;          /* false while the library lacks the function */
    void (*prepare)(path_state *p);
    clpe_status (*call)(path_state *p, cl_event *event);
} enqueue_path;

static float *host_rows(size_t elems, uint64_t seed)
{
    float *v = malloc(elems * sizeof *v);
    cr_assert(v);
    for (size_t k = 0; k < elems; ++k)
        v[k] = (float)((int64_t)(test_rand_u64(&seed) % 2001) - 1000) / 256.0f;
    return v;
}

static void set_out(path_state *p, void *initial, size_t bytes)
{
    p->initial = initial;
    p->out_bytes = bytes;
    p->out = test_buffer_from(p->t, initial, bytes);
    p->expected = malloc(bytes);
    cr_assert(p->expected);
    memcpy(p->expected, initial, bytes);
}

static void *poisoned(size_t bytes)
{
    void *v = malloc(bytes);
    cr_assert(v);
    memset(v, POISON, bytes);
    return v;
}

static void make_wait_event(path_state *p)
{
    cl_int err;
    p->wait = clCreateUserEvent(p->t->context, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cr_assert_eq(clSetUserEventStatus(p->wait, CL_COMPLETE), CL_SUCCESS);
}

/* table: 48 rows (one launch), padded rows, an offset. */
#define T1_N 48
#define T1_PITCH (D + 3)
#define T1_OFF 4
static void prep_table_one(path_state *p)
{
    size_t bytes = ((size_t)T1_OFF + T1_N * T1_PITCH) * sizeof(float);
    set_out(p, poisoned(bytes), bytes);
    float *e = (float *)p->expected + T1_OFF;
    cr_assert_eq(clpe_host_table(p->enc, 1000, T1_N, e, T1_PITCH), CLPE_SUCCESS);
}
static clpe_status call_table_one(path_state *p, cl_event *event)
{
    clpe_tensor out = {.buffer = p->out, .offset = T1_OFF * sizeof(float), .row_pitch = T1_PITCH, .batch_pitch = 0};
    return clpe_enqueue_table(p->enc, p->t->queue, 1000, T1_N, &out, 0, NULL, event);
}

/* table: 200 rows (several launches and a marker), behind a wait list. */
#define T2_N 200
static void prep_table_split(path_state *p)
{
    size_t bytes = (size_t)T2_N * D * sizeof(float);
    set_out(p, poisoned(bytes), bytes);
    cr_assert_eq(clpe_host_table(p->enc, -77, T2_N, p->expected, 0), CLPE_SUCCESS);
    make_wait_event(p);
}
static clpe_status call_table_split(path_state *p, cl_event *event)
{
    clpe_tensor out = {.buffer = p->out, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    return clpe_enqueue_table(p->enc, p->t->queue, -77, T2_N, &out, 1, &p->wait, event);
}

/* table of no rows: only the marker for the event. */
static void prep_table_empty(path_state *p)
{
    size_t bytes = D * sizeof(float);
    set_out(p, poisoned(bytes), bytes);
}
static clpe_status call_table_empty(path_state *p, cl_event *event)
{
    clpe_tensor out = {.buffer = p->out, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    return clpe_enqueue_table(p->enc, p->t->queue, 5, 0, &out, 0, NULL, event);
}

/* add from a start: [3, 20, D] with padded rows. */
#define A1_B 3
#define A1_S 20
#define A1_PITCH (D + 2)
static void prep_add_start(path_state *p)
{
    size_t elems = (size_t)A1_B * A1_S * A1_PITCH;
    set_out(p, host_rows(elems, 11), elems * sizeof(float));
    cr_assert_eq(clpe_host_add(p->enc, A1_B, A1_S, p->expected, A1_PITCH, 0,
                               CLPE_POSITIONS_START, 123456789, NULL),
                 CLPE_SUCCESS);
}
static clpe_status call_add_start(path_state *p, cl_event *event)
{
    clpe_tensor x = {.buffer = p->out, .offset = 0, .row_pitch = A1_PITCH, .batch_pitch = 0};
    clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = 123456789, .buffer = NULL, .offset = 0};
    return clpe_enqueue_add(p->enc, p->t->queue, A1_B, A1_S, &x, &pos, 0, NULL, event);
}

/* add with per-sequence starts: [2, 150, D], several launches. */
#define A2_B 2
#define A2_S 150
static const int64_t a2_starts[A2_B] = {-3, INT64_C(1) << 40};
static void prep_add_per_sequence(path_state *p)
{
    size_t elems = (size_t)A2_B * A2_S * D;
    set_out(p, host_rows(elems, 12), elems * sizeof(float));
    cr_assert_eq(clpe_host_add(p->enc, A2_B, A2_S, p->expected, 0, 0,
                               CLPE_POSITIONS_PER_SEQUENCE, 0, a2_starts),
                 CLPE_SUCCESS);
    p->aux[0] = test_buffer_from(p->t, a2_starts, sizeof a2_starts);
    make_wait_event(p);
}
static clpe_status call_add_per_sequence(path_state *p, cl_event *event)
{
    clpe_tensor x = {.buffer = p->out, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_positions pos = {.source = CLPE_POSITIONS_PER_SEQUENCE, .start = 0, .buffer = p->aux[0], .offset = 0};
    return clpe_enqueue_add(p->enc, p->t->queue, A2_B, A2_S, &x, &pos, 1, &p->wait, event);
}

/* add with one position per token: [2, 10, D]. */
#define A3_B 2
#define A3_S 10
static void prep_add_ids(path_state *p)
{
    int64_t ids[A3_B * A3_S];
    uint64_t seed = 5;
    for (size_t k = 0; k < A3_B * A3_S; ++k)
        ids[k] = (int64_t)test_rand_u64(&seed);
    size_t elems = (size_t)A3_B * A3_S * D;
    set_out(p, host_rows(elems, 13), elems * sizeof(float));
    cr_assert_eq(clpe_host_add(p->enc, A3_B, A3_S, p->expected, 0, 0, CLPE_POSITIONS_IDS, 0, ids),
                 CLPE_SUCCESS);
    p->aux[0] = test_buffer_from(p->t, ids, sizeof ids);
}
static clpe_status call_add_ids(path_state *p, cl_event *event)
{
    clpe_tensor x = {.buffer = p->out, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_positions pos = {.source = CLPE_POSITIONS_IDS, .start = 0, .buffer = p->aux[0], .offset = 0};
    return clpe_enqueue_add(p->enc, p->t->queue, A3_B, A3_S, &x, &pos, 0, NULL, event);
}

/* add out of place: [2, 5, D] from x into a poisoned out. */
static void prep_add_out(path_state *p)
{
    size_t elems = 2 * 5 * D;
    float *x = host_rows(elems, 14);
    p->aux[0] = test_buffer_from(p->t, x, elems * sizeof(float));
    set_out(p, poisoned(elems * sizeof(float)), elems * sizeof(float));
    memcpy(p->expected, x, elems * sizeof(float));
    cr_assert_eq(clpe_host_add(p->enc, 2, 5, p->expected, 0, 0, CLPE_POSITIONS_START, 7, NULL),
                 CLPE_SUCCESS);
    free(x);
}
static clpe_status call_add_out(path_state *p, cl_event *event)
{
    clpe_tensor x = {.buffer = p->aux[0], .offset = 0, .row_pitch = 0, .batch_pitch = 0}, out = {.buffer = p->out};
    clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = 7, .buffer = NULL, .offset = 0};
    return clpe_enqueue_add_out(p->enc, p->t->queue, 2, 5, &x, &out, &pos, 0, NULL, event);
}

/* gather: [2, 6] ids (one bad) from a [9, D] table, bad-id counter. */
#define G_B 2
#define G_S 6
#define G_VOCAB 9
static const int32_t g_ids[G_B * G_S] = {0, 8, 3, 3, -1, 2, 7, 1, 9, 4, 5, 6};
static void prep_gather(path_state *p)
{
    float *emb = host_rows((size_t)G_VOCAB * D, 15);
    p->aux[0] = test_buffer_from(p->t, g_ids, sizeof g_ids);
    p->aux[1] = test_buffer_from(p->t, emb, (size_t)G_VOCAB * D * sizeof(float));
    uint32_t bad[2] = {77, 77};
    p->aux[2] = test_buffer_from(p->t, bad, sizeof bad);
    p->counter = 3;
    size_t bytes = (size_t)G_B * G_S * D * sizeof(float);
    set_out(p, poisoned(bytes), bytes);
    cr_assert_eq(clpe_host_gather(p->enc, G_B, G_S, g_ids, emb, G_VOCAB, 0, p->expected, 0,
                                  CLPE_POSITIONS_START, 0, NULL, NULL),
                 CLPE_SUCCESS);
    free(emb);
}
static clpe_status call_gather(path_state *p, cl_event *event)
{
    clpe_token_ids ids = {.buffer = p->aux[0], .offset = 0};
    clpe_tensor emb = {.buffer = p->aux[1], .offset = 0, .row_pitch = 0, .batch_pitch = 0}, out = {.buffer = p->out};
    return clpe_enqueue_gather(p->enc, p->t->queue, G_B, G_S, &ids, &emb, CLPE_DTYPE_F32,
                               G_VOCAB, &out, NULL, p->aux[2], 0, NULL, event);
}

/* pad-aware positions: [2, 6] ids with pad id 1, fairseq's numbering. */
static const int32_t pp_ids[2 * 6] = {1, 1, 5, 6, 7, 8, 4, 1, 9, 9, 1, 1};
static void prep_pad_positions(path_state *p)
{
    p->aux[0] = test_buffer_from(p->t, pp_ids, sizeof pp_ids);
    size_t bytes = 2 * 6 * sizeof(int64_t);
    set_out(p, poisoned(bytes), bytes);
    int64_t *e = p->expected;
    for (int b = 0; b < 2; ++b) {
        int64_t k = 0;
        for (int s = 0; s < 6; ++s)
            e[b * 6 + s] = pp_ids[b * 6 + s] == 1 ? 1 : 2 + k++;
    }
}
static clpe_status call_pad_positions(path_state *p, cl_event *event)
{
    clpe_token_ids ids = {.buffer = p->aux[0], .offset = 0};
    return clpe_enqueue_pad_positions(p->enc, p->t->queue, 2, 6, &ids, 1, 2, 1, p->out, 0, 0,
                                      NULL, event);
}

static enqueue_path paths[] = {
    {"table (one launch)", false, true, prep_table_one, call_table_one},
    {"table (split, wait list)", true, true, prep_table_split, call_table_split},
    {"table (no rows)", false, true, prep_table_empty, call_table_empty},
    {"add (start)", false, true, prep_add_start, call_add_start},
    {"add (per sequence, split)", true, true, prep_add_per_sequence, call_add_per_sequence},
    {"add (ids)", false, true, prep_add_ids, call_add_ids},
    {"add_out", false, false, prep_add_out, call_add_out},
    {"gather", false, false, prep_gather, call_gather},
    {"pad_positions", false, false, prep_pad_positions, call_pad_positions},
};
#define NPATHS (sizeof paths / sizeof paths[0])

static void mark_available(void)
{
    paths[6].available = clpe_enqueue_add_out != NULL;
    paths[7].available = clpe_enqueue_gather != NULL && clpe_host_gather != NULL;
    paths[8].available = clpe_enqueue_pad_positions != NULL;
}

static void path_cleanup(path_state *p)
{
    if (p->out)
        clReleaseMemObject(p->out);
    for (int k = 0; k < 3; ++k)
        if (p->aux[k])
            clReleaseMemObject(p->aux[k]);
    if (p->wait)
        clReleaseEvent(p->wait);
    free(p->initial);
    free(p->expected);
    memset(p, 0, sizeof *p);
}

/* Run the path once without faults and check it bit for bit. */
static void run_clean(const test_cl *t, clpe_encoder *enc, const enqueue_path *path,
                      const char *when)
{
    path_state p = {.t = t, .enc = enc};
    path->prepare(&p);
    cl_event ev = NULL;
    clpe_status st = path->call(&p, &ev);
    cr_assert_eq(st, CLPE_SUCCESS, "%s %s: %s", path->name, when, clpe_status_string(st));
    cr_assert_not_null(ev);
    cr_assert_eq(clWaitForEvents(1, &ev), CL_SUCCESS);
    clReleaseEvent(ev);
    void *got = test_buffer_read(t, p.out, p.out_bytes);
    cr_assert(memcmp(got, p.expected, p.out_bytes) == 0, "%s %s: not bit-exact", path->name, when);
    free(got);
    path_cleanup(&p);
}

/* One step of the walk: path with fn failing at call n. True when it fired. */
static bool enqueue_step(const test_cl *t, clpe_encoder *enc, const enqueue_path *path,
                         fault_fn fn, long n)
{
    path_state p = {.t = t, .enc = enc};
    path->prepare(&p);
    cl_event ev = EVENT_SENTINEL;
    long before = fault_injected();
    fault_arm(fn, n, error_for(fn));
    clpe_status st = path->call(&p, &ev);
    fault_disarm();
    bool fired = fault_injected() > before;
    fired_per_fn[fn] += fired;
    ++total_steps;
    cr_assert_eq(clFinish(t->queue), CL_SUCCESS);
    void *got = test_buffer_read(t, p.out, p.out_bytes);
    if (fired && !(may_absorb(fn) && st == CLPE_SUCCESS)) {
        cr_assert_eq(st, error_for(fn), "%s with %s failing at call %ld: status %d (%s), want %d",
                     path->name, fault_fn_name(fn), n, st, clpe_status_string(st),
                     error_for(fn));
        cr_assert_eq(ev, EVENT_SENTINEL, "%s: failed call wrote the out event", path->name);
        if (p.counter) {
            /* gather resets its bad-id counter with a fill before the kernel:
             * a failed launch must not leave it reset either (the call's gate
             * terminates the fill) */
            uint32_t *bad = test_buffer_read(t, p.aux[p.counter - 1], 2 * sizeof(uint32_t));
            cr_assert(bad[0] == 77 && bad[1] == 77,
                      "%s with %s failing at call %ld reset bad_ids", path->name,
                      fault_fn_name(fn), n);
            free(bad);
        }
        /* "nothing is written": a split call whose later launch fails has
         * enqueued the earlier ones behind its gate, which terminates them */
        cr_assert(memcmp(got, p.initial, p.out_bytes) == 0,
                  "%s with %s failing at call %ld wrote its output", path->name,
                  fault_fn_name(fn), n);
    } else {
        cr_assert_eq(st, CLPE_SUCCESS, "%s failed without a fault: %s", path->name,
                     clpe_status_string(st));
        cr_assert_neq(ev, EVENT_SENTINEL);
        cr_assert_eq(clWaitForEvents(1, &ev), CL_SUCCESS);
        clReleaseEvent(ev);
        cr_assert(memcmp(got, p.expected, p.out_bytes) == 0, "%s: not bit-exact", path->name);
    }
    free(got);
    path_cleanup(&p);
    return fired;
}

Test(fault, enqueue_walk, .init = setup, .timeout = 900)
{
    test_cl t;
    test_cl_open(&t);
    mark_available();
    live_snapshot outer = live_now();
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    /* Warm the kernel pools so later steps take their kernels from there. */
    for (size_t k = 0; k < NPATHS; ++k)
        if (paths[k].available)
            run_clean(&t, enc, &paths[k], "warm-up");
    long start_injected = fault_injected();
    long steps_before = total_steps;

    for (size_t k = 0; k < NPATHS; ++k) {
        if (!paths[k].available) {
            printf("fault enqueue walk: %s not in the library yet, skipped\n", paths[k].name);
            continue;
        }
        for (int fn = 0; fn < FAULT_FN_COUNT; ++fn) {
            /* A fresh encoder has empty kernel pools, so its first enqueue
             * creates a kernel: the only way to reach clCreateKernel there. */
            bool fresh = fn == FAULT_clCreateKernel;
            for (long n = 1; n <= MAX_N; ++n) {
                /* A fresh encoder's pools keep the kernels it creates until
                 * it is released: check the balance after that. */
                live_snapshot base = live_now();
                clpe_encoder *use = fresh ? test_encoder(&t, &cfg) : enc;
                bool fired = enqueue_step(&t, use, &paths[k], (fault_fn)fn, n);
                if (!fresh)
                    assert_balanced(&base, paths[k].name, (fault_fn)fn, n);
                /* The same encoder still works after the failure. */
                if (fired)
                    run_clean(&t, use, &paths[k], "after a failed call");
                if (fresh) {
                    clpe_encoder_release(use);
                    assert_balanced(&base, paths[k].name, (fault_fn)fn, n);
                }
                if (!fired)
                    break;
            }
        }
    }
    clpe_encoder_release(enc);
    live_snapshot after = live_now();
    for (int k = 0; k < FAULT_OBJ_COUNT; ++k)
        cr_assert_eq(after.n[k], outer.n[k], "encoder lifetime: %ld %s reference(s) off",
                     after.n[k] - outer.n[k], fault_obj_name((fault_obj)k));
    test_cl_close(&t);
    static const fault_fn required[] = {FAULT_clCreateKernel, FAULT_clSetKernelArg,
                                        FAULT_clEnqueueNDRangeKernel,
                                        FAULT_clEnqueueMarkerWithWaitList,
                                        FAULT_clGetMemObjectInfo, FAULT_clGetCommandQueueInfo};
    assert_covered(required, sizeof required / sizeof required[0], "enqueue");
    printf("fault enqueue walk: %ld steps, %ld faults injected\n", total_steps - steps_before,
           fault_injected() - start_injected);
}

/* The header promises that on any error nothing is written. A split call
 * (several launches) whose second launch fails has already enqueued the
 * first one; the library holds them behind a gate and terminates them. */
Test(fault, split_failure_writes_nothing, .init = setup)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    run_clean(&t, enc, &paths[1], "warm-up");
    path_state p = {.t = &t, .enc = enc};
    paths[1].prepare(&p);
    cl_event ev = EVENT_SENTINEL;
    fault_arm(FAULT_clEnqueueNDRangeKernel, 2, CL_OUT_OF_RESOURCES);
    clpe_status st = paths[1].call(&p, &ev);
    fault_disarm();
    cr_assert_eq(st, CL_OUT_OF_RESOURCES);
    cr_assert_eq(clFinish(t.queue), CL_SUCCESS);
    void *got = test_buffer_read(&t, p.out, p.out_bytes);
    cr_expect(memcmp(got, p.initial, p.out_bytes) == 0,
              "a failed split table wrote rows of its first launch");
    free(got);
    path_cleanup(&p);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}

/* A build failure delivers the device compiler's log, truncated to the
 * caller's buffer, with the full length reported. */
Test(fault, build_log_reaches_caller, .init = setup)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = clpe_config_default(D);
    char small[16];
    memset(small, 'x', sizeof small);
    clpe_build_log log = {small, sizeof small, 0};
    clpe_status st;
    fault_arm(FAULT_clBuildProgram, 1, CL_BUILD_PROGRAM_FAILURE);
    clpe_encoder *enc = clpe_encoder_create(t.context, t.device, &cfg, &log, &st);
    fault_disarm();
    cr_assert_null(enc);
    cr_assert_eq(st, CL_BUILD_PROGRAM_FAILURE);
    cr_assert_gt(log.length, sizeof small, "full log length not reported");
    cr_assert_eq(small[sizeof small - 1], '\0', "truncated log not terminated");
    cr_assert_eq(strlen(small), sizeof small - 1);

    char *full = malloc(log.length);
    cr_assert(full);
    clpe_build_log big = {full, log.length, 0};
    fault_arm(FAULT_clBuildProgram, 1, CL_BUILD_PROGRAM_FAILURE);
    enc = clpe_encoder_create(t.context, t.device, &cfg, &big, &st);
    fault_disarm();
    cr_assert_null(enc);
    cr_assert_eq(big.length, strlen(full) + 1);
    cr_assert(strstr(full, "clpe_fault_injected_build_error"), "log: %s", full);
    cr_assert(strncmp(full, small, sizeof small - 1) == 0);
    free(full);

    /* A NULL log is allowed, and a build after a failed one works. */
    fault_arm(FAULT_clBuildProgram, 1, CL_BUILD_PROGRAM_FAILURE);
    enc = clpe_encoder_create(t.context, t.device, &cfg, NULL, &st);
    fault_disarm();
    cr_assert_null(enc);
    cr_assert_eq(st, CL_BUILD_PROGRAM_FAILURE);
    enc = test_encoder(&t, &cfg);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}

/* The shim is active at all: a sanity check that libclpe's calls land in
 * it (they would silently bypass it if symbol interposition broke). */
Test(fault, shim_sees_library_calls)
{
    test_cl t;
    test_cl_open(&t);
    long before = fault_calls(FAULT_clBuildProgram);
    clpe_config cfg = clpe_config_default(D);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    cr_assert_eq(fault_calls(FAULT_clBuildProgram), before + 1,
                 "clpe's clBuildProgram did not go through the fault shim");
    clpe_encoder_release(enc);
    test_cl_close(&t);
}

/* ---- host allocations --------------------------------------------------------- */

/* The first allocation of each call below is the library's own (no OpenCL
 * runs before it), and failing it must give CLPE_ERROR_OUT_OF_HOST_MEMORY,
 * leave every out parameter and output alone, and leave the library usable. */
Test(fault, out_of_host_memory)
{
    if (!fault_alloc_available())
        cr_skip_test("this build's sanitizer owns malloc: no allocation faults");
    clpe_config cfg = clpe_config_default(D);
    const long failed_before = fault_alloc_failed();

    /* Creating a host encoder: its first allocation is the encoder itself. */
    clpe_status st = CLPE_SUCCESS;
    fault_arm_alloc(1);
    clpe_encoder *enc = clpe_encoder_create_host(&cfg, &st);
    fault_disarm_alloc();
    cr_expect_null(enc);
    cr_expect_eq(st, CLPE_ERROR_OUT_OF_HOST_MEMORY, "create_host: %d (%s)", st,
                 clpe_status_string(st));
    cr_expect_eq(fault_alloc_failed(), failed_before + 1, "the armed allocation never ran");

    /* The host emulation: its row buffer. The output keeps its poison. */
    enc = clpe_encoder_create_host(&cfg, &st);
    cr_assert_not_null(enc, "%s", clpe_status_string(st));
    float out[4 * D];
    memset(out, POISON, sizeof out);
    unsigned char poison[sizeof out];
    memset(poison, POISON, sizeof poison);
    fault_arm_alloc(1);
    st = clpe_host_table(enc, 0, 4, out, 0);
    fault_disarm_alloc();
    cr_expect_eq(st, CLPE_ERROR_OUT_OF_HOST_MEMORY, "host_table: %d (%s)", st,
                 clpe_status_string(st));
    cr_expect_eq(memcmp(out, poison, sizeof out), 0, "a failed host_table wrote its output");
    cr_expect_eq(clpe_host_table(enc, 0, 4, out, 0), CLPE_SUCCESS, "usable afterwards");
    clpe_encoder_release(enc);

    /* Device selection: the platform list, once OpenCL has started (the
     * first call loads the ICD loader's own tables). */
    cl_platform_id platform = NULL;
    cl_device_id device = NULL;
    cr_assert_eq(clpe_select_device(NULL, &platform, &device), CLPE_SUCCESS);
    cl_platform_id kept_platform = (cl_platform_id)(uintptr_t)0x5e1;
    cl_device_id kept_device = (cl_device_id)(uintptr_t)0x5e2;
    fault_arm_alloc(1);
    st = clpe_select_device(NULL, &kept_platform, &kept_device);
    fault_disarm_alloc();
    cr_expect_eq(st, CLPE_ERROR_OUT_OF_HOST_MEMORY, "select_device: %d (%s)", st,
                 clpe_status_string(st));
    cr_expect_eq(kept_platform, (cl_platform_id)(uintptr_t)0x5e1, "platform written");
    cr_expect_eq(kept_device, (cl_device_id)(uintptr_t)0x5e2, "device written");
    cr_expect_eq(fault_alloc_failed(), failed_before + 3);
}

/* Multimodal rotary: every OpenCL call of clpe_enqueue_rope with a position
 * per stream (split into
 * several launches by MAX_LAUNCH_ROWS) failing in turn; a failed call
 * returns the error, leaves the out event alone and q untouched, holds no
 * reference, and the object works afterwards, bit for bit. */
Test(fault, mrope_enqueue_walk, .init = setup, .timeout = 600)
{
    test_cl t;
    test_cl_open(&t);
    clpe_mrope_config cfg = {.rope = clpe_rope_config_default(16), .streams = 3,
                             .section = {2, 3, 3}};
    clpe_status st = CLPE_SUCCESS;
    clpe_rope *m = clpe_rope_create_mrope(t.context, t.device, &cfg, NULL, &st);
    cr_assert_not_null(m, "clpe_rope_create_mrope: %s", clpe_status_string(st));
    clpe_rope *host = clpe_rope_create_mrope_host(&cfg, NULL);
    enum { TOKENS = 200, HEADS = 2 };
    static float q0[TOKENS * HEADS * 16], want[TOKENS * HEADS * 16];
    static int64_t pos[3 * TOKENS];
    for (size_t k = 0; k < sizeof q0 / sizeof q0[0]; ++k)
        q0[k] = (float)(k % 97) / 17.0f - 2.5f;
    for (size_t k = 0; k < 3 * TOKENS; ++k)
        pos[k] = (int64_t)(k % TOKENS) * (1 + (int64_t)(k / TOKENS));
    memcpy(want, q0, sizeof q0);
    clpe_host_rope_tensor hq = {.data = want, .heads = HEADS};
    cr_assert_eq(clpe_host_rope(host, 1, TOKENS, &hq, NULL, CLPE_POSITIONS_STREAMS, 0, pos, 0),
                 CLPE_SUCCESS);
    cl_mem pbuf = test_buffer_from(&t, pos, sizeof pos);
    /* warm the kernel pool: later calls take their kernel from there */
    cl_mem warm = test_buffer_from(&t, q0, sizeof q0);
    clpe_rope_tensor wq = {.buffer = warm, .heads = HEADS};
    clpe_positions wp = {.source = CLPE_POSITIONS_STREAMS, .buffer = pbuf};
    cr_assert_eq(clpe_enqueue_rope(m, t.queue, 1, TOKENS, &wq, NULL, &wp, 0, 0, NULL, NULL),
                 CLPE_SUCCESS);
    cr_assert_eq(clFinish(t.queue), CL_SUCCESS);
    clReleaseMemObject(warm);
    static const fault_fn fns[] = {FAULT_clSetKernelArg, FAULT_clEnqueueNDRangeKernel,
                                   FAULT_clEnqueueMarkerWithWaitList, FAULT_clGetMemObjectInfo,
                                   FAULT_clGetCommandQueueInfo};
    long fired_total = 0;
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; ++f) {
        for (long n = 1; n <= MAX_N; ++n) {
            cl_mem qbuf = test_buffer_from(&t, q0, sizeof q0);
            clpe_rope_tensor q = {.buffer = qbuf, .heads = HEADS};
            clpe_positions p = {.source = CLPE_POSITIONS_STREAMS, .buffer = pbuf};
            live_snapshot base = live_now();
            cl_event ev = EVENT_SENTINEL;
            long before = fault_injected();
            fault_arm(fns[f], n, error_for(fns[f]));
            st = clpe_enqueue_rope(m, t.queue, 1, TOKENS, &q, NULL, &p, 0, 0, NULL, &ev);
            fault_disarm();
            bool fired = fault_injected() > before;
            cr_assert_eq(clFinish(t.queue), CL_SUCCESS);
            float *got = test_buffer_read(&t, qbuf, sizeof q0);
            if (fired) {
                ++fired_total;
                cr_assert_eq(st, error_for(fns[f]), "%s failing at call %ld: status %d",
                             fault_fn_name(fns[f]), n, st);
                cr_assert_eq(ev, EVENT_SENTINEL, "a failed call wrote the out event");
                cr_assert(memcmp(got, q0, sizeof q0) == 0, "%s failing at call %ld wrote q",
                          fault_fn_name(fns[f]), n);
                assert_balanced(&base, "mrope", fns[f], n);
            } else {
                cr_assert_eq(st, CLPE_SUCCESS, "mrope failed without a fault: %d", st);
                cr_assert_eq(clWaitForEvents(1, &ev), CL_SUCCESS);
                clReleaseEvent(ev);
                cr_assert(memcmp(got, want, sizeof q0) == 0, "mrope: not bit-exact");
            }
            free(got);
            clReleaseMemObject(qbuf);
            if (!fired)
                break;
        }
    }
    cr_assert_gt(fired_total, 4, "the walk reached too few calls");
    printf("fault mrope walk: %ld faults injected, none wrote q\n", fired_total);
    clReleaseMemObject(pbuf);
    clpe_rope_release(host);
    clpe_rope_release(m);
    test_cl_close(&t);
}
