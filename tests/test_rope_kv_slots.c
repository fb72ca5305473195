/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rope_kv_slots.c - the slot check of clpe_enqueue_rope_kv on each of
 * its paths (CLPE_KV_SLOT_CHECK: 1 the one-work-group sort, 2 the hash
 * table, 3 inside the rotation, 0 chosen by size), small and past what
 * local memory holds: a
 * repeated slot and a slot out of range at the first, a middle and the
 * last token are refused with the report saying which, nothing is
 * written, and the refusal is counted whether or not the call has a
 * report buffer; good slots give the host emulation's bits.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static test_cl cl;
static void setup(void) { test_cl_open(&cl); }
static void teardown(void) { test_cl_close(&cl); }
TestSuite(rope_kv_slots, .init = setup, .fini = teardown);

enum { HD = 16, HQ = 2, HK = 1, ROW = (HQ + 2 * HK) * HD };

/* One fused f32 QKV buffer of `tokens` tokens and a contiguous cache of
 * tokens + 16 slots, taken in a shuffled order. */
typedef struct slots_world {
    size_t tokens, capacity;
    float *qkv, *cache;
    int64_t *slots;
    cl_mem qkv_buf, key_buf, value_buf, slots_buf, report_buf;
    clpe_rope_tensor q, k, v;
    clpe_kv_cache kc;
    clpe_kv_slots ks;
} slots_world;

static void world_make(slots_world *w, size_t tokens)
{
    uint64_t rng = 5 + tokens;
    memset(w, 0, sizeof *w);
    w->tokens = tokens;
    w->capacity = tokens + 16;
    w->qkv = malloc(tokens * ROW * sizeof *w->qkv);
    w->cache = malloc(w->capacity * HK * HD * sizeof *w->cache);
    for (size_t j = 0; j < tokens * ROW; ++j)
        w->qkv[j] = (float)(test_rand_u64(&rng) >> 40) * 0x1p-23f - 1.0f;
    for (size_t j = 0; j < w->capacity * HK * HD; ++j)
        w->cache[j] = -7.0f;
    int64_t *order = malloc(w->capacity * sizeof *order);
    for (size_t s = 0; s < w->capacity; ++s)
        order[s] = (int64_t)s;
    for (size_t s = w->capacity - 1; s > 0; --s) {
        size_t r = test_rand_u64(&rng) % (s + 1);
        int64_t t = order[s];
        order[s] = order[r];
        order[r] = t;
    }
    w->slots = malloc(tokens * sizeof *w->slots);
    for (size_t t = 0; t < tokens; ++t)
        w->slots[t] = t % 7 == 4 ? -1 : order[t];
    free(order);
    size_t cache_bytes = w->capacity * HK * HD * sizeof *w->cache;
    w->qkv_buf = test_buffer_from(&cl, w->qkv, tokens * ROW * sizeof *w->qkv);
    w->key_buf = test_buffer_from(&cl, w->cache, cache_bytes);
    w->value_buf = test_buffer_from(&cl, w->cache, cache_bytes);
    w->slots_buf = test_buffer_from(&cl, w->slots, tokens * sizeof *w->slots);
    w->report_buf = test_buffer_poisoned(&cl, 8, 0xAB);
    w->q = (clpe_rope_tensor){.buffer = w->qkv_buf, .heads = HQ, .row_pitch = ROW};
    w->k = (clpe_rope_tensor){.buffer = w->qkv_buf, .offset = HQ * HD * 4, .heads = HK,
                              .row_pitch = ROW};
    w->v = (clpe_rope_tensor){.buffer = w->qkv_buf, .offset = (HQ + HK) * HD * 4, .heads = HK,
                              .row_pitch = ROW};
    w->kc = (clpe_kv_cache){.key = w->key_buf, .value = w->value_buf, .dtype = CLPE_DTYPE_F32,
                            .num_blocks = 1, .block_size = w->capacity, .heads = HK};
    w->ks = (clpe_kv_slots){.buffer = w->slots_buf, .report = w->report_buf};
}

static void world_free(slots_world *w)
{
    clReleaseMemObject(w->qkv_buf);
    clReleaseMemObject(w->key_buf);
    clReleaseMemObject(w->value_buf);
    clReleaseMemObject(w->slots_buf);
    clReleaseMemObject(w->report_buf);
    free(w->qkv);
    free(w->cache);
    free(w->slots);
}

static clpe_rope *make_rope(unsigned path)
{
    char value[8];
    snprintf(value, sizeof value, "%u", path);
    setenv("CLPE_KV_SLOT_CHECK", value, 1);
    clpe_rope_config cfg = clpe_rope_config_default(HD);
    clpe_status st = CLPE_SUCCESS;
    clpe_rope *rope = clpe_rope_create(cl.context, cl.device, &cfg, NULL, &st);
    cr_assert_not_null(rope, "clpe_rope_create: %d", st);
    return rope;
}

static void enqueue(slots_world *w, clpe_rope *rope)
{
    cr_assert_eq(clEnqueueWriteBuffer(cl.queue, w->slots_buf, CL_TRUE, 0,
                                      w->tokens * sizeof *w->slots, w->slots, 0, NULL, NULL),
                 CL_SUCCESS);
    clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = 9};
    cl_event done = NULL;
    clpe_status st = clpe_enqueue_rope_kv(rope, cl.queue, w->tokens, &w->q, NULL, &w->k, &w->v,
                                          &w->kc, &w->ks, &pos, 0, 0, NULL, &done);
    cr_assert_eq(st, CLPE_SUCCESS, "the slots are checked on the device: %d", st);
    test_event_finish(done);
}

static void expect_unwritten(const slots_world *w, const char *what)
{
    size_t cache_bytes = w->capacity * HK * HD * sizeof *w->cache;
    void *qkv = test_buffer_read(&cl, w->qkv_buf, w->tokens * ROW * sizeof *w->qkv);
    void *key = test_buffer_read(&cl, w->key_buf, cache_bytes);
    void *value = test_buffer_read(&cl, w->value_buf, cache_bytes);
    cr_assert(memcmp(qkv, w->qkv, w->tokens * ROW * sizeof *w->qkv) == 0 &&
                  memcmp(key, w->cache, cache_bytes) == 0 &&
                  memcmp(value, w->cache, cache_bytes) == 0,
              "%s: a refused call wrote", what);
    free(qkv);
    free(key);
    free(value);
}

/* Token `bad` gets token `of`'s slot (or `value` when of is -1): refused,
 * reported as `bad`, with the report buffer and without, each counted. */
static void expect_refused(slots_world *w, clpe_rope *rope, size_t bad, long of, int64_t value)
{
    char what[96];
    snprintf(what, sizeof what, "tokens %zu, token %zu %s %ld", w->tokens, bad,
             of >= 0 ? "repeats token" : "has slot", of >= 0 ? of : (long)value);
    int64_t saved = w->slots[bad];
    w->slots[bad] = of >= 0 ? w->slots[of] : value;
    if (of >= 0 && w->slots[bad] < 0)
        w->slots[bad] = w->slots[of] = (int64_t)w->capacity - 1; /* padding repeats nothing */
    enqueue(w, rope);
    uint32_t report[2];
    cr_assert_eq(clEnqueueReadBuffer(cl.queue, w->report_buf, CL_TRUE, 0, 8, report, 0, NULL,
                                     NULL),
                 CL_SUCCESS);
    cr_assert_eq(report[0], 1, "%s: tokens refused %u", what, report[0]);
    cr_assert_eq(report[1], bad, "%s: first refused %u", what, report[1]);
    expect_unwritten(w, what);
    cl_mem report_buf = w->ks.report;
    w->ks.report = NULL;
    enqueue(w, rope);
    w->ks.report = report_buf;
    expect_unwritten(w, what);
    uint64_t refused = 0;
    cr_assert_eq(clpe_rope_kv_refused_calls(rope, cl.queue, &refused), CLPE_SUCCESS);
    cr_assert_eq(refused, 2, "%s: refused calls counted %llu, want 2", what,
                 (unsigned long long)refused);
    w->slots[bad] = saved;
    if (of >= 0)
        cr_assert_eq(clEnqueueWriteBuffer(cl.queue, w->slots_buf, CL_TRUE, 0,
                                          w->tokens * sizeof *w->slots, w->slots, 0, NULL, NULL),
                     CL_SUCCESS);
}

/* Good slots: the host emulation's bits, nothing refused. */
static void expect_accepted(slots_world *w, clpe_rope *rope)
{
    /* a world of its own, restored after: the refused cases need the inputs unchanged */
    int64_t *slots = malloc(w->tokens * sizeof *slots);
    memcpy(slots, w->slots, w->tokens * sizeof *slots);
    enqueue(w, rope);
    uint32_t report[2];
    cr_assert_eq(clEnqueueReadBuffer(cl.queue, w->report_buf, CL_TRUE, 0, 8, report, 0, NULL,
                                     NULL),
                 CL_SUCCESS);
    cr_assert(report[0] == 0 && report[1] == 0xFFFFFFFFu, "tokens %zu: report %u %u", w->tokens,
              report[0], report[1]);
    clpe_rope_config cfg = clpe_rope_config_default(HD);
    clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
    size_t qkv_bytes = w->tokens * ROW * 4, cache_bytes = w->capacity * HK * HD * 4;
    float *qkv = malloc(qkv_bytes), *key = malloc(cache_bytes), *value = malloc(cache_bytes);
    memcpy(qkv, w->qkv, qkv_bytes);
    memcpy(key, w->cache, cache_bytes);
    memcpy(value, w->cache, cache_bytes);
    clpe_host_rope_tensor hq = {.data = qkv, .heads = HQ, .row_pitch = ROW},
                          hk = {.data = qkv + HQ * HD, .heads = HK, .row_pitch = ROW},
                          hv = {.data = qkv + (HQ + HK) * HD, .heads = HK, .row_pitch = ROW};
    clpe_host_kv_cache hc = {.key = key, .value = value, .dtype = CLPE_DTYPE_F32,
                             .num_blocks = 1, .block_size = w->capacity, .heads = HK};
    cr_assert_eq(clpe_host_rope_kv(host, w->tokens, &hq, NULL, &hk, &hv, &hc, slots,
                                   CLPE_POSITIONS_START, 9, NULL, 0),
                 CLPE_SUCCESS);
    void *dq = test_buffer_read(&cl, w->qkv_buf, qkv_bytes);
    void *dk = test_buffer_read(&cl, w->key_buf, cache_bytes);
    void *dv = test_buffer_read(&cl, w->value_buf, cache_bytes);
    cr_assert(memcmp(dq, qkv, qkv_bytes) == 0, "tokens %zu: q", w->tokens);
    cr_assert(memcmp(dk, key, cache_bytes) == 0, "tokens %zu: key cache", w->tokens);
    cr_assert(memcmp(dv, value, cache_bytes) == 0, "tokens %zu: value cache", w->tokens);
    uint64_t refused = 1;
    cr_assert_eq(clpe_rope_kv_refused_calls(rope, cl.queue, &refused), CLPE_SUCCESS);
    cr_assert_eq(refused, 0, "tokens %zu: %llu refused calls", w->tokens,
                 (unsigned long long)refused);
    free(dq);
    free(dk);
    free(dv);
    free(qkv);
    free(key);
    free(value);
    free(slots);
    clpe_rope_release(host);
}

static void check_path(unsigned path, size_t tokens)
{
    clpe_rope *rope = make_rope(path);
    slots_world w;
    world_make(&w, tokens);
    size_t mid = tokens / 2, last = tokens - 1;
    /* repeated slots: the later token of the two is the one refused */
    expect_refused(&w, rope, last, 0, 0);   /* the first token's slot, again at the last */
    expect_refused(&w, rope, mid, 0, 0);    /* the first token's slot at a middle one */
    expect_refused(&w, rope, last, (long)mid, 0);
    expect_refused(&w, rope, 1, 0, 0);      /* the first two tokens */
    /* out of range */
    expect_refused(&w, rope, 0, -1, (int64_t)w.capacity);
    expect_refused(&w, rope, mid, -1, -2);
    expect_refused(&w, rope, last, -1, INT64_MAX);
    expect_accepted(&w, rope);
    world_free(&w);
    clpe_rope_release(rope);
}

Test(rope_kv_slots, sort_path) /* one work-group's local memory */
{
    check_path(1, 12);
    check_path(1, 1000);
}

Test(rope_kv_slots, hash_path)
{
    check_path(2, 12);
    check_path(2, 1000);
    check_path(2, 70000); /* past what the sort's local memory holds on PoCL */
}

Test(rope_kv_slots, inline_path) /* every work-item of the rotation */
{
    check_path(3, 12);
    check_path(3, 200);
}

/* 12 tokens in the rotation, 100 by the sort, 70,000 by the hash table;
 * launches of 3 tokens, each checking the whole call */
Test(rope_kv_slots, path_chosen_by_size)
{
    check_path(0, 12);
    check_path(0, 100);
    check_path(0, 70000);
    setenv("CLPE_MAX_LAUNCH_ROWS", "3", 1);
    check_path(0, 12);
}

/* A refused call without a report buffer is counted; the count restarts
 * after it is read; an object with no KV call counts 0. */
Test(rope_kv_slots, refused_calls_without_a_report_are_counted)
{
    clpe_rope *rope = make_rope(0);
    uint64_t refused = 9;
    cr_assert_eq(clpe_rope_kv_refused_calls(rope, cl.queue, &refused), CLPE_SUCCESS);
    cr_assert_eq(refused, 0);
    slots_world w;
    world_make(&w, 40);
    w.ks.report = NULL;
    w.slots[7] = -3;
    enqueue(&w, rope);
    enqueue(&w, rope);
    w.slots[7] = -1;
    enqueue(&w, rope);
    cr_assert_eq(clpe_rope_kv_refused_calls(rope, cl.queue, &refused), CLPE_SUCCESS);
    cr_assert_eq(refused, 2, "refused calls %llu", (unsigned long long)refused);
    cr_assert_eq(clpe_rope_kv_refused_calls(rope, cl.queue, &refused), CLPE_SUCCESS);
    cr_assert_eq(refused, 0, "after reading: %llu", (unsigned long long)refused);
    cr_assert_eq(clpe_rope_kv_refused_calls(NULL, cl.queue, &refused), CLPE_ERROR_NULL_ENCODER);
    cr_assert_eq(clpe_rope_kv_refused_calls(rope, cl.queue, NULL), CLPE_ERROR_NULL_POINTER);
    world_free(&w);
    clpe_rope_release(rope);
}

/* Two queues, one object: the second call waits for the first, so the
 * slot table and the report serve both. */
Test(rope_kv_slots, calls_on_two_queues_share_the_object_in_turn)
{
    clpe_rope *rope = make_rope(2);
    cl_int err = CL_SUCCESS;
    cl_command_queue other = clCreateCommandQueue(cl.context, cl.device, 0, &err);
    cr_assert_eq(err, CL_SUCCESS);
    slots_world a, b;
    world_make(&a, 3000);
    world_make(&b, 2000);
    a.slots[2999] = a.slots[0]; /* refused */
    cr_assert_eq(clEnqueueWriteBuffer(cl.queue, a.slots_buf, CL_TRUE, 0, 3000 * 8, a.slots, 0,
                                      NULL, NULL),
                 CL_SUCCESS);
    clpe_positions pos = {.source = CLPE_POSITIONS_START, .start = 9};
    cl_event ea = NULL, eb = NULL;
    cr_assert_eq(clpe_enqueue_rope_kv(rope, cl.queue, a.tokens, &a.q, NULL, &a.k, &a.v, &a.kc,
                                      &a.ks, &pos, 0, 0, NULL, &ea),
                 CLPE_SUCCESS);
    cr_assert_eq(clpe_enqueue_rope_kv(rope, other, b.tokens, &b.q, NULL, &b.k, &b.v, &b.kc, &b.ks,
                                      &pos, 0, 0, NULL, &eb),
                 CLPE_SUCCESS);
    test_event_finish(eb);
    test_event_finish(ea);
    uint32_t ra[2], rb[2];
    cr_assert_eq(clEnqueueReadBuffer(cl.queue, a.report_buf, CL_TRUE, 0, 8, ra, 0, NULL, NULL),
                 CL_SUCCESS);
    cr_assert_eq(clEnqueueReadBuffer(cl.queue, b.report_buf, CL_TRUE, 0, 8, rb, 0, NULL, NULL),
                 CL_SUCCESS);
    cr_assert(ra[0] == 1 && ra[1] == 2999, "first call: %u %u", ra[0], ra[1]);
    cr_assert(rb[0] == 0 && rb[1] == 0xFFFFFFFFu, "second call: %u %u", rb[0], rb[1]);
    expect_unwritten(&a, "the refused call");
    clReleaseCommandQueue(other);
    world_free(&a);
    world_free(&b);
    clpe_rope_release(rope);
}

/* A million tokens, keys and values only (head_dim 2), the last token on
 * the first one's slot: refused in linear time. A check that compared
 * every pair of tokens (5 * 10^11 compares) would never end within the
 * timeout; this one takes well under a second on PoCL. */
Test(rope_kv_slots, a_million_tokens_are_checked_in_linear_time, .timeout = 120)
{
    const size_t tokens = 1000000, capacity = tokens + 8;
    setenv("CLPE_KV_SLOT_CHECK", "0", 1);
    clpe_rope_config cfg = clpe_rope_config_default(2);
    clpe_rope *rope = clpe_rope_create(cl.context, cl.device, &cfg, NULL, NULL);
    cr_assert_not_null(rope);
    int64_t *slots = malloc(tokens * sizeof *slots);
    for (size_t t = 0; t < tokens; ++t)
        slots[t] = (int64_t)((t * 7919) % capacity); /* 7919 is prime to capacity */
    slots[tokens - 1] = slots[0];
    float zero = 0.0f;
    cl_int err = CL_SUCCESS;
    cl_mem kv = clCreateBuffer(cl.context, CL_MEM_READ_WRITE, 2 * tokens * 2 * 4, NULL, &err);
    cl_mem cache = clCreateBuffer(cl.context, CL_MEM_READ_WRITE, 2 * capacity * 2 * 4, NULL, &err);
    cr_assert_eq(clEnqueueFillBuffer(cl.queue, kv, &zero, 4, 0, 2 * tokens * 2 * 4, 0, NULL, NULL),
                 CL_SUCCESS);
    cl_mem slots_buf = test_buffer_from(&cl, slots, tokens * sizeof *slots);
    cl_mem report = test_buffer_poisoned(&cl, 8, 0xAB);
    clpe_rope_tensor k = {.buffer = kv, .heads = 1, .row_pitch = 4},
                     v = {.buffer = kv, .offset = 8, .heads = 1, .row_pitch = 4};
    clpe_kv_cache kc = {.key = cache, .value = cache, .value_offset = 8, .dtype = CLPE_DTYPE_F32,
                        .num_blocks = 1, .block_size = capacity, .heads = 1, .slot_pitch = 4};
    clpe_kv_slots ks = {.buffer = slots_buf, .report = report};
    cr_assert_eq(clpe_enqueue_rope_kv(rope, cl.queue, tokens, NULL, NULL, &k, &v, &kc, &ks, NULL,
                                      0, 0, NULL, NULL),
                 CLPE_SUCCESS);
    uint32_t r[2];
    cr_assert_eq(clEnqueueReadBuffer(cl.queue, report, CL_TRUE, 0, 8, r, 0, NULL, NULL),
                 CL_SUCCESS);
    cr_assert(r[0] == 1 && r[1] == tokens - 1, "report %u %u", r[0], r[1]);
    clReleaseMemObject(kv);
    clReleaseMemObject(cache);
    clReleaseMemObject(slots_buf);
    clReleaseMemObject(report);
    free(slots);
    clpe_rope_release(rope);
}
