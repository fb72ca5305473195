/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rope_layouts.c - the rotary calls on the device and in the host
 * emulation accept exactly the same calls: thousands of generated layouts,
 * random and adversarial (head-major views, one head with a huge pitch,
 * offsets near SIZE_MAX, views that overlap, sub-buffers, zero tokens,
 * positions inside a tensor, every position source, repeated and bad
 * slots), through every rotary entry point (rotation, the cos/sin cache,
 * rotation into a KV cache), for a plain and a multimodal object. For each, the device
 * call's status must equal the host's, and where accepted every byte of
 * the memory involved must be equal.
 *
 * What only the device can see is left to it: the size of a buffer (the
 * host cannot know how large an array is, so a layout past the end of the
 * device buffer is not given to the host, where it would be an overrun)
 * and the element alignment of a byte offset (a host tensor is a typed
 * pointer). Everything else is compared.
 */
#include "support.h"

#include <criterion/criterion.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static test_cl cl;
static void setup(void) { test_cl_open(&cl); }
static void teardown(void) { test_cl_close(&cl); }
TestSuite(rope_layouts, .init = setup, .fini = teardown, .timeout = 600);

enum {
    HEAD_DIM = 8,
    ARENA = 4096,   /* floats of the memory every layout lives in */
    POS_COUNT = 96, /* int64 positions after the floats */
    CASES = 10000   /* per test, for each of the two objects below */
};

/* A layout of one tensor: element offset into the arena, or a byte offset
 * that is adversarial (misaligned, near SIZE_MAX); heads and pitches. */
typedef struct layout {
    size_t offset_bytes, heads, head_pitch, row_pitch, batch_pitch;
    bool in_sub_buffer; /* given through a sub-buffer of the arena starting at sub_origin */
} layout;

/* Pitches worth trying for a dimension: defaults, packed, overlapping,
 * head-major, huge. */
static size_t pick_pitch(uint64_t *rng, size_t packed, size_t seq_major)
{
    switch (test_rand_u64(rng) % 10) {
    case 0:
    case 1:
    case 2:
        return 0;
    case 3:
        return packed;
    case 4:
        return packed + 1 + test_rand_u64(rng) % 5;
    case 5:
        return seq_major;
    case 6:
        return packed ? packed - 1 : 1; /* overlaps its neighbour */
    case 7:
        return (size_t)1 << 33;         /* past the kernels' 32-bit steps */
    case 8:
        return SIZE_MAX / 2;
    default:
        return 1 + test_rand_u64(rng) % 40;
    }
}

static size_t pick_offset(uint64_t *rng)
{
    switch (test_rand_u64(rng) % 12) {
    case 0:
        return SIZE_MAX - 3 - 4 * (test_rand_u64(rng) % 4); /* wraps when sizes are added */
    case 1:
        return 2;                                            /* not a multiple of a float */
    case 2:
        return (size_t)(ARENA - 8) * sizeof(float);          /* near the end */
    default:
        return (size_t)(test_rand_u64(rng) % 512) * sizeof(float);
    }
}

static layout pick_layout(uint64_t *rng, size_t batch, size_t seq)
{
    layout l;
    l.offset_bytes = pick_offset(rng);
    l.heads = test_rand_u64(rng) % 9 == 0 ? 0 : 1 + test_rand_u64(rng) % 3;
    size_t hd = HEAD_DIM;
    bool head_major = test_rand_u64(rng) % 4 == 0;
    if (head_major) { /* [batch, heads, seq, d] viewed as [batch, seq, heads, d] */
        l.head_pitch = seq * hd;
        l.row_pitch = hd;
        l.batch_pitch = l.heads * seq * hd;
    } else {
        l.head_pitch = pick_pitch(rng, hd, seq * hd);
        l.row_pitch = pick_pitch(rng, l.heads * hd, hd);
        l.batch_pitch = pick_pitch(rng, seq * l.heads * hd, hd);
    }
    if (test_rand_u64(rng) % 16 == 0 && l.heads == 1)
        l.head_pitch = (size_t)1 << 33; /* one head: the pitch is never stepped */
    (void)batch;
    l.in_sub_buffer = test_rand_u64(rng) % 6 == 0;
    return l;
}

/* The position sources, with a start near the int64 limits at times. */
static void pick_positions(uint64_t *rng, clpe_position_source *source, int64_t *start,
                           size_t *offset_bytes)
{
    *source = (clpe_position_source)(test_rand_u64(rng) % 6); /* 5: not a source */
    switch (test_rand_u64(rng) % 5) {
    case 0:
        *start = INT64_MAX - (int64_t)(test_rand_u64(rng) % 4);
        break;
    case 1:
        *start = INT64_MIN + (int64_t)(test_rand_u64(rng) % 4);
        break;
    default:
        *start = (int64_t)(test_rand_u64(rng) % 1000) - 500;
    }
    /* positions after the floats, or (at times) inside them: an alias */
    *offset_bytes = test_rand_u64(rng) % 8 == 0 ? (size_t)(test_rand_u64(rng) % 64) * 8
                                                : ARENA * sizeof(float) +
                                                      (size_t)(test_rand_u64(rng) % 8) * 8;
    if (test_rand_u64(rng) % 20 == 0)
        *offset_bytes += 4; /* misaligned */
}

/* The arena: ARENA floats, then POS_COUNT positions. */
typedef struct arena {
    unsigned char bytes[ARENA * sizeof(float) + POS_COUNT * sizeof(int64_t)];
} arena;

static void fill_arena(arena *a, uint64_t *rng)
{
    float *f = (float *)a->bytes;
    for (size_t k = 0; k < ARENA; ++k)
        f[k] = (float)((int64_t)(test_rand_u64(rng) % 2001) - 1000) / 256.0f;
    /* Tensors may reach into the positions, so each half of a position is
     * a normal float near 1 (NaN payloads and subnormals are the device's
     * own business): positions near 4.6e18, exact like any other. */
    int64_t *p = (int64_t *)(a->bytes + ARENA * sizeof(float));
    for (size_t k = 0; k < POS_COUNT; ++k)
        p[k] = (int64_t)(((0x3F800000u + test_rand_u64(rng) % 4096) << 32) |
                         (0x3F800000u + test_rand_u64(rng) % 4096));
}

/* Whether the host may be given the layout: the device's buffer check
 * would find it inside the arena, and the offset is a typed pointer's. */
static bool host_can_take(clpe_status device, size_t offset_bytes)
{
    if (device == CLPE_ERROR_BUFFER_TOO_SMALL || device == CLPE_ERROR_INDEX_BUFFER_TOO_SMALL ||
        device == CLPE_ERROR_MISALIGNED_OFFSET)
        return false;
    return offset_bytes < sizeof(arena);
}

typedef struct tally {
    size_t cases, accepted, compared, refused[64];
} tally;

static void count(tally *t, clpe_status st, bool compared)
{
    t->cases++;
    if (st == CLPE_SUCCESS)
        t->accepted++;
    if (compared)
        t->compared++;
}

/* One rotation: q (and maybe k) of the arena rotated on the device and on
 * the host; statuses and, when accepted, the whole arena compared. */
static void rotate_case(clpe_rope *dev, const clpe_rope *host, uint64_t *rng, tally *t,
                        size_t n)
{
    size_t batch = test_rand_u64(rng) % 4, seq = test_rand_u64(rng) % 6;
    if (test_rand_u64(rng) % 10 == 0)
        batch = seq = 0;
    layout lq = pick_layout(rng, batch, seq), lk = pick_layout(rng, batch, seq);
    bool with_k = test_rand_u64(rng) % 3 != 0;
    /* every argument in the sub-buffer, or every one in the buffer; at
     * times q in one and k in the other: storage that overlaps through two
     * cl_mem, which OpenCL leaves undefined, so the device refuses it and
     * the host (pointers only) has nothing to compare */
    bool mixed = with_k && lq.in_sub_buffer != lk.in_sub_buffer;
    bool all_sub = lq.in_sub_buffer && (!with_k || lk.in_sub_buffer);
    clpe_position_source source;
    int64_t start;
    size_t pos_offset;
    pick_positions(rng, &source, &start, &pos_offset);
    uint32_t flags = test_rand_u64(rng) % 12 == 0 ? 2u : (uint32_t)(test_rand_u64(rng) % 2);

    arena *a = malloc(sizeof *a), *h = malloc(sizeof *h);
    fill_arena(a, rng);
    memcpy(h, a, sizeof *a);
    cl_mem buf = test_buffer_from(&cl, a->bytes, sizeof a->bytes);
    /* a sub-buffer over the first half: views through it start there */
    cl_buffer_region half = {.origin = 0, .size = sizeof a->bytes / 2};
    cl_int err;
    cl_mem sub = clCreateSubBuffer(buf, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &half,
                                   &err);
    cr_assert_eq(err, CL_SUCCESS);
    clpe_rope_tensor tq = {.buffer = lq.in_sub_buffer ? sub : buf, .offset = lq.offset_bytes,
                           .heads = lq.heads, .head_pitch = lq.head_pitch,
                           .row_pitch = lq.row_pitch, .batch_pitch = lq.batch_pitch};
    clpe_rope_tensor tk = {.buffer = lk.in_sub_buffer ? sub : buf, .offset = lk.offset_bytes,
                           .heads = lk.heads, .head_pitch = lk.head_pitch,
                           .row_pitch = lk.row_pitch, .batch_pitch = lk.batch_pitch};
    clpe_positions pos = {.source = source, .start = start,
                          .buffer = source == CLPE_POSITIONS_START ? NULL : all_sub ? sub : buf,
                          .offset = pos_offset};
    clpe_status ds = clpe_enqueue_rope(dev, cl.queue, batch, seq, &tq, with_k ? &tk : NULL, &pos,
                                       flags, 0, NULL, NULL);
    cr_assert_eq(clFinish(cl.queue), CL_SUCCESS);
    char what[512];
    snprintf(what, sizeof what,
             "layout %zu: batch %zu seq %zu q {off %zu heads %zu pitches %zu %zu %zu sub %d} k %d "
             "{off %zu heads %zu pitches %zu %zu %zu sub %d} source %d start %lld pos offset %zu "
             "flags %u",
             n, batch, seq, lq.offset_bytes, lq.heads, lq.head_pitch, lq.row_pitch,
             lq.batch_pitch, lq.in_sub_buffer, with_k, lk.offset_bytes, lk.heads, lk.head_pitch,
             lk.row_pitch, lk.batch_pitch, lk.in_sub_buffer, source, (long long)start,
             pos_offset, flags);
    if (mixed)
        cr_assert_neq(ds, CLPE_SUCCESS, "%s: q and k through overlapping cl_mem", what);
    bool compare = !mixed && host_can_take(ds, lq.offset_bytes) &&
                   (!with_k || host_can_take(ds, lk.offset_bytes)) &&
                   (source == CLPE_POSITIONS_START || host_can_take(ds, pos_offset));
    if (compare) {
        clpe_host_rope_tensor hq = {.data = h->bytes + lq.offset_bytes, .heads = lq.heads,
                                    .head_pitch = lq.head_pitch, .row_pitch = lq.row_pitch,
                                    .batch_pitch = lq.batch_pitch};
        clpe_host_rope_tensor hk = {.data = h->bytes + lk.offset_bytes, .heads = lk.heads,
                                    .head_pitch = lk.head_pitch, .row_pitch = lk.row_pitch,
                                    .batch_pitch = lk.batch_pitch};
        const int64_t *hp = source == CLPE_POSITIONS_START
                                ? NULL
                                : (const int64_t *)(h->bytes + pos_offset);
        clpe_status hs = clpe_host_rope(host, batch, seq, &hq, with_k ? &hk : NULL, source, start,
                                        hp, flags);
        cr_assert_eq(ds, hs, "%s: device %d (%s), host %d (%s)", what, ds,
                     clpe_status_string(ds), hs, clpe_status_string(hs));
    }
    unsigned char *got = test_buffer_read(&cl, buf, sizeof a->bytes);
    if (ds != CLPE_SUCCESS)
        cr_assert_eq(memcmp(got, a->bytes, sizeof a->bytes), 0,
                     "%s: a refused call (%d) wrote", what, ds);
    else if (compare)
        cr_assert_eq(memcmp(got, h->bytes, sizeof a->bytes), 0, "%s: device and host bits differ",
                     what);
    count(t, ds, compare);
    free(got);
    clReleaseMemObject(sub);
    clReleaseMemObject(buf);
    free(a);
    free(h);
}

/* One cos/sin cache: rows of rotary_dim at any position source. */
static void cache_case(clpe_rope *dev, const clpe_rope *host, uint64_t *rng, tally *t, size_t n)
{
    size_t rows = test_rand_u64(rng) % 7;
    size_t cos_off = pick_offset(rng), sin_off = pick_offset(rng);
    size_t cos_pitch = pick_pitch(rng, HEAD_DIM, 2 * HEAD_DIM);
    size_t sin_pitch = test_rand_u64(rng) % 3 == 0 ? pick_pitch(rng, HEAD_DIM, 2 * HEAD_DIM)
                                                   : cos_pitch;
    clpe_position_source source;
    int64_t start;
    size_t pos_offset;
    pick_positions(rng, &source, &start, &pos_offset);

    arena *a = malloc(sizeof *a), *h = malloc(sizeof *h);
    fill_arena(a, rng);
    memcpy(h, a, sizeof *a);
    cl_mem buf = test_buffer_from(&cl, a->bytes, sizeof a->bytes);
    clpe_tensor ct = {.buffer = buf, .offset = cos_off, .row_pitch = cos_pitch};
    clpe_tensor st = {.buffer = buf, .offset = sin_off, .row_pitch = sin_pitch};
    clpe_positions pos = {.source = source, .start = start,
                          .buffer = source == CLPE_POSITIONS_START ? NULL : buf,
                          .offset = pos_offset};
    clpe_status ds = clpe_enqueue_rope_cache_at(dev, cl.queue, rows, &pos, &ct, &st, 0, NULL,
                                                NULL);
    cr_assert_eq(clFinish(cl.queue), CL_SUCCESS);
    /* the host emulation takes one row pitch for both */
    bool compare = cos_pitch == sin_pitch && host_can_take(ds, cos_off) &&
                   host_can_take(ds, sin_off) &&
                   (source == CLPE_POSITIONS_START || host_can_take(ds, pos_offset));
    if (compare) {
        const int64_t *hp = source == CLPE_POSITIONS_START
                                ? NULL
                                : (const int64_t *)(h->bytes + pos_offset);
        clpe_status hs = clpe_host_rope_cache_at(host, rows, source, start, hp,
                                                 h->bytes + cos_off, h->bytes + sin_off,
                                                 cos_pitch);
        cr_assert_eq(ds, hs,
                     "cache %zu: device %d (%s), host %d (%s): rows %zu cos {off %zu pitch %zu} "
                     "sin {off %zu} source %d start %lld pos offset %zu",
                     n, ds, clpe_status_string(ds), hs, clpe_status_string(hs), rows, cos_off,
                     cos_pitch, sin_off, source, (long long)start, pos_offset);
    }
    unsigned char *got = test_buffer_read(&cl, buf, sizeof a->bytes);
    if (ds != CLPE_SUCCESS)
        cr_assert_eq(memcmp(got, a->bytes, sizeof a->bytes), 0, "cache %zu: a refused call wrote",
                     n);
    else if (compare)
        cr_assert_eq(memcmp(got, h->bytes, sizeof a->bytes), 0,
                     "cache %zu: device and host bits differ", n);
    count(t, ds, compare);
    free(got);
    clReleaseMemObject(buf);
    free(a);
    free(h);
}

/* One rotation into a KV cache: q (in place or into q_out), k and v from
 * the arena, the key and value caches after it, slots and positions after
 * those. A bad slot is found on the device after the call is accepted: the
 * host says CLPE_ERROR_INVALID_SLOTS where the device writes nothing and
 * reports the token, and both are checked. */
static void kv_case(clpe_rope *dev, const clpe_rope *host, uint64_t *rng, tally *t, size_t n)
{
    size_t tokens = test_rand_u64(rng) % 6;
    layout lq = pick_layout(rng, 1, tokens), lk = pick_layout(rng, 1, tokens),
           lv = pick_layout(rng, 1, tokens);
    lq.in_sub_buffer = lk.in_sub_buffer = lv.in_sub_buffer = false;
    if (test_rand_u64(rng) % 4 != 0)
        lv = lk; /* v laid out as k, most of the time (the cache's heads) */
    if (test_rand_u64(rng) % 2)
        lv.offset_bytes = lk.offset_bytes + 1024 * sizeof(float);
    bool with_q = test_rand_u64(rng) % 4 != 0, q_out = with_q && test_rand_u64(rng) % 3 == 0;
    layout lo = pick_layout(rng, 1, tokens);
    lo.heads = lq.heads;
    /* the caches: [blocks, block_size, heads, d] after the tensors' floats */
    size_t cache_heads = test_rand_u64(rng) % 5 == 0 ? 1 + test_rand_u64(rng) % 3 : lk.heads;
    size_t blocks = 1 + test_rand_u64(rng) % 3, block_size = 1 + test_rand_u64(rng) % 4;
    size_t head_pitch = test_rand_u64(rng) % 4 == 0 ? pick_pitch(rng, HEAD_DIM, 0) : 0;
    size_t cache_floats = blocks * block_size * (cache_heads ? cache_heads : 1) * 2 * HEAD_DIM;
    size_t key_offset = (ARENA - 2 * cache_floats - 16) * sizeof(float);
    size_t value_offset = key_offset + cache_floats * sizeof(float);
    if (test_rand_u64(rng) % 10 == 0)
        key_offset = pick_offset(rng); /* anywhere: overlapping the tensors, near SIZE_MAX */
    clpe_position_source source;
    int64_t start;
    size_t pos_offset;
    pick_positions(rng, &source, &start, &pos_offset);
    uint32_t flags = test_rand_u64(rng) % 12 == 0 ? 2u : (uint32_t)(test_rand_u64(rng) % 2);
    /* slots: distinct ones mostly; at times -1, one repeated or out of range */
    int64_t slots[8];
    size_t capacity = blocks * block_size;
    for (size_t j = 0; j < tokens; ++j) {
        uint64_t r = test_rand_u64(rng) % 20;
        slots[j] = r == 0 ? -1 : r == 1 ? (int64_t)capacity : r == 2 && j ? slots[0] : (int64_t)j;
        if (slots[j] >= 0 && (size_t)slots[j] >= capacity && r != 1)
            slots[j] = -1;
    }

    arena *a = malloc(sizeof *a), *h = malloc(sizeof *h);
    fill_arena(a, rng);
    memcpy(h, a, sizeof *a);
    cl_mem buf = test_buffer_from(&cl, a->bytes, sizeof a->bytes);
    cl_mem slot_buf = test_buffer_from(&cl, slots, sizeof slots);
    uint32_t report_init[2] = {7, 7};
    cl_mem report = test_buffer_from(&cl, report_init, sizeof report_init);
    clpe_rope_tensor tq = {.buffer = buf, .offset = lq.offset_bytes, .heads = lq.heads,
                           .head_pitch = lq.head_pitch, .row_pitch = lq.row_pitch};
    clpe_rope_tensor to = {.buffer = buf, .offset = lo.offset_bytes, .heads = lo.heads,
                           .head_pitch = lo.head_pitch, .row_pitch = lo.row_pitch};
    clpe_rope_tensor tk = {.buffer = buf, .offset = lk.offset_bytes, .heads = lk.heads,
                           .head_pitch = lk.head_pitch, .row_pitch = lk.row_pitch};
    clpe_rope_tensor tv = {.buffer = buf, .offset = lv.offset_bytes, .heads = lv.heads,
                           .head_pitch = lv.head_pitch, .row_pitch = lv.row_pitch};
    clpe_kv_cache kc = {.key = buf, .value = buf, .key_offset = key_offset,
                        .value_offset = value_offset, .dtype = CLPE_DTYPE_F32,
                        .num_blocks = blocks, .block_size = block_size, .heads = cache_heads,
                        .head_pitch = head_pitch};
    clpe_kv_slots ks = {.buffer = slot_buf, .report = report};
    clpe_positions pos = {.source = source, .start = start,
                          .buffer = source == CLPE_POSITIONS_START ? NULL : buf,
                          .offset = pos_offset};
    clpe_status ds = clpe_enqueue_rope_kv(dev, cl.queue, tokens, with_q ? &tq : NULL,
                                          q_out ? &to : NULL, &tk, &tv, &kc, &ks, &pos, flags,
                                          0, NULL, NULL);
    cr_assert_eq(clFinish(cl.queue), CL_SUCCESS);
    uint32_t rep[2];
    cr_assert_eq(clEnqueueReadBuffer(cl.queue, report, CL_TRUE, 0, sizeof rep, rep, 0, NULL,
                                     NULL),
                 CL_SUCCESS);
    char what[512];
    snprintf(what, sizeof what,
             "kv %zu: tokens %zu q %d {off %zu heads %zu pitches %zu %zu} q_out %d k {off %zu "
             "heads %zu pitches %zu %zu} v {off %zu heads %zu} cache {heads %zu blocks %zu x %zu "
             "head pitch %zu key offset %zu} source %d pos offset %zu flags %u",
             n, tokens, with_q, lq.offset_bytes, lq.heads, lq.head_pitch, lq.row_pitch, q_out,
             lk.offset_bytes, lk.heads, lk.head_pitch, lk.row_pitch, lv.offset_bytes, lv.heads,
             cache_heads, blocks, block_size, head_pitch, key_offset, source, pos_offset, flags);
    bool compare = host_can_take(ds, lq.offset_bytes) && host_can_take(ds, lk.offset_bytes) &&
                   host_can_take(ds, lv.offset_bytes) && host_can_take(ds, lo.offset_bytes) &&
                   host_can_take(ds, key_offset) && host_can_take(ds, value_offset) &&
                   (source == CLPE_POSITIONS_START || host_can_take(ds, pos_offset));
    bool refused_on_device = ds == CLPE_SUCCESS && tokens && rep[0] != 0;
    if (compare) {
        clpe_host_rope_tensor hq = {.data = h->bytes + lq.offset_bytes, .heads = lq.heads,
                                    .head_pitch = lq.head_pitch, .row_pitch = lq.row_pitch};
        clpe_host_rope_tensor ho = {.data = h->bytes + lo.offset_bytes, .heads = lo.heads,
                                    .head_pitch = lo.head_pitch, .row_pitch = lo.row_pitch};
        clpe_host_rope_tensor hk = {.data = h->bytes + lk.offset_bytes, .heads = lk.heads,
                                    .head_pitch = lk.head_pitch, .row_pitch = lk.row_pitch};
        clpe_host_rope_tensor hv = {.data = h->bytes + lv.offset_bytes, .heads = lv.heads,
                                    .head_pitch = lv.head_pitch, .row_pitch = lv.row_pitch};
        clpe_host_kv_cache hc = {.key = h->bytes + key_offset, .value = h->bytes + value_offset,
                                 .dtype = CLPE_DTYPE_F32, .num_blocks = blocks,
                                 .block_size = block_size, .heads = cache_heads,
                                 .head_pitch = head_pitch};
        const int64_t *hp = source == CLPE_POSITIONS_START
                                ? NULL
                                : (const int64_t *)(h->bytes + pos_offset);
        clpe_status hs = clpe_host_rope_kv(host, tokens, with_q ? &hq : NULL,
                                           q_out ? &ho : NULL, &hk, &hv, &hc, slots, source,
                                           start, hp, flags);
        if (refused_on_device)
            cr_assert_eq(hs, CLPE_ERROR_INVALID_SLOTS, "%s: the device refused slot %u, host %d",
                         what, rep[1], hs);
        else
            cr_assert_eq(ds, hs, "%s: device %d (%s), host %d (%s)", what, ds,
                         clpe_status_string(ds), hs, clpe_status_string(hs));
    }
    unsigned char *got = test_buffer_read(&cl, buf, sizeof a->bytes);
    if (ds != CLPE_SUCCESS || refused_on_device)
        cr_assert_eq(memcmp(got, a->bytes, sizeof a->bytes), 0, "%s: a refused call wrote",
                     what);
    else if (compare)
        cr_assert_eq(memcmp(got, h->bytes, sizeof a->bytes), 0,
                     "%s: device and host bits differ", what);
    count(t, refused_on_device ? CLPE_ERROR_INVALID_SLOTS : ds, compare);
    free(got);
    clReleaseMemObject(report);
    clReleaseMemObject(slot_buf);
    clReleaseMemObject(buf);
    free(a);
    free(h);
}

static void run(const clpe_mrope_config *sections, uint64_t seed)
{
    clpe_status st = CLPE_SUCCESS;
    clpe_rope *dev, *host;
    if (sections) {
        dev = clpe_rope_create_mrope(cl.context, cl.device, sections, NULL, &st);
        host = clpe_rope_create_mrope_host(sections, NULL);
    } else {
        clpe_rope_config cfg = clpe_rope_config_default(HEAD_DIM);
        dev = clpe_rope_create(cl.context, cl.device, &cfg, NULL, &st);
        host = clpe_rope_create_host(&cfg, NULL);
    }
    cr_assert_not_null(dev, "create: %s", clpe_status_string(st));
    cr_assert_not_null(host);
    uint64_t rng = seed;
    tally rot = {0}, cache = {0}, kv = {0};
    for (size_t n = 0; n < CASES; ++n) {
        if (n % 4 == 3)
            cache_case(dev, host, &rng, &cache, n);
        else if (n % 4 == 1)
            kv_case(dev, host, &rng, &kv, n);
        else
            rotate_case(dev, host, &rng, &rot, n);
    }
    /* the generator must reach both sides of every rule */
    cr_assert_gt(rot.accepted, rot.cases / 10, "too few rotations accepted: %zu", rot.accepted);
    cr_assert_gt(rot.cases - rot.accepted, rot.cases / 3, "too few rotations refused");
    cr_assert_gt(rot.compared, rot.cases / 2, "too few rotations compared with the host");
    cr_assert_gt(cache.accepted, cache.cases / 10, "too few caches accepted: %zu",
                 cache.accepted);
    cr_assert_gt(cache.compared, cache.cases / 5, "too few caches compared with the host");
    cr_assert_gt(kv.accepted, kv.cases / 50, "too few KV calls accepted: %zu", kv.accepted);
    cr_assert_gt(kv.compared, kv.cases / 5, "too few KV calls compared with the host");
    printf("%s: %zu KV calls (%zu accepted, %zu compared)\n", sections ? "multimodal" : "plain",
           kv.cases, kv.accepted, kv.compared);
    printf("%s: %zu rotations (%zu accepted, %zu compared), %zu caches (%zu accepted, %zu "
           "compared)\n",
           sections ? "multimodal" : "plain", rot.cases, rot.accepted, rot.compared, cache.cases,
           cache.accepted, cache.compared);
    clpe_rope_release(host);
    clpe_rope_release(dev);
}

Test(rope_layouts, plain_rotary_host_and_device_accept_the_same_calls) { run(NULL, 1); }

Test(rope_layouts, multimodal_rotary_host_and_device_accept_the_same_calls)
{
    clpe_mrope_config m = {.rope = clpe_rope_config_default(HEAD_DIM), .streams = 3,
                           .section = {1, 1, 2}};
    run(&m, 2);
}
