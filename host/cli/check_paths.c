/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_paths.c - each path of `clpe check` on the device: table, fused add
 * (in place and out of place), gather and pad-aware positions. Every buffer
 * is poisoned first, read back whole and compared bit for bit with the
 * host emulation (clpe_host_*), guard elements included, so a write outside
 * the region shows as a mismatch too.
 */
#include "check.h"

#include <stdlib.h>
#include <string.h>

void check_config_label(const clpe_config *cfg, char *out, size_t cap)
{
    snprintf(out, cap, "%s %s/%s d=%u", cli_dtype_name(cfg->dtype), cli_freq_name(cfg->freq),
             cli_layout_name(cfg->layout), (unsigned)cfg->d);
}

static void hex_elem(const unsigned char *p, size_t esize, char *out, size_t cap)
{
    uint64_t v = 0;
    memcpy(&v, p, esize); /* little-endian host assumed, as by .npy '<' */
    snprintf(out, cap, "0x%0*llx", (int)(2 * esize), (unsigned long long)v);
}

/* Compare count elements bit for bit; data_elements of them are real data
 * (the rest guards). Records the first difference. */
static void compare(check_tally *t, const clpe_config *cfg, const char *what,
                    const unsigned char *dev, const unsigned char *ref, size_t count,
                    size_t data_elements, size_t row_pitch, size_t offset_el)
{
    size_t esize = dtype_size(cfg->dtype);
    t->elements += data_elements;
    if (memcmp(dev, ref, count * esize) == 0)
        return;
    for (size_t k = 0; k < count; ++k) {
        if (memcmp(dev + k * esize, ref + k * esize, esize) == 0)
            continue;
        if (t->mismatches++ == 0) {
            char a[24], b[24], lab[96];
            hex_elem(dev + k * esize, esize, a, sizeof a);
            hex_elem(ref + k * esize, esize, b, sizeof b);
            check_config_label(cfg, lab, sizeof lab);
            size_t rel = k >= offset_el ? k - offset_el : 0;
            snprintf(t->first_mismatch, sizeof t->first_mismatch,
                     "%s %s: row %zu element %zu%s: device %s, host emulation %s", lab, what,
                     rel / row_pitch, rel % row_pitch,
                     k < offset_el || rel % row_pitch >= cfg->d ? " (outside the rows)" : "",
                     a, b);
        }
    }
}

/* The first call that failed outright, for the report. */
static void fail_call(check_tally *t, const clpe_config *cfg, const char *what, clpe_status st)
{
    if (t->error[0])
        return;
    char lab[96];
    check_config_label(cfg, lab, sizeof lab);
    snprintf(t->error, sizeof t->error, "%s %s: %s (%d)", lab, what, clpe_status_string(st),
             (int)st);
}

static cl_mem upload(const check_checker *ck, const void *host, size_t bytes, cl_int *err)
{
    return clCreateBuffer(ck->dev->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                          (void *)host, err);
}

static cl_int download(const check_checker *ck, cl_mem buf, void *host, size_t bytes)
{
    return clEnqueueReadBuffer(ck->dev->queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
}

/* After a call that returned st: read buf back into host (blocking), or
 * record why not. True when host holds what the device wrote. */
static int read_back(const check_checker *ck, check_tally *t, const clpe_config *cfg,
                     const char *call, clpe_status st, cl_mem buf, void *host, size_t bytes)
{
    if (st == CLPE_SUCCESS)
        st = download(ck, buf, host, bytes);
    if (st != CLPE_SUCCESS) {
        fail_call(t, cfg, call, st);
        return 0;
    }
    return 1;
}

/* Table of n rows from start, with gap elements between rows and before the
 * first, all poisoned, so writes outside the rows show as mismatches. */
void check_table(check_checker *ck, check_tally *t, clpe_encoder *enc, const clpe_config *cfg,
                 int64_t start, size_t n, size_t gap)
{
    size_t esize = dtype_size(cfg->dtype);
    size_t pitch = cfg->d + gap, offset_el = gap ? 3 : 0;
    size_t count = offset_el + n * pitch;
    size_t bytes = count * esize;
    unsigned char *dev = malloc(bytes), *ref = malloc(bytes);
    cl_mem buf = NULL;
    cl_int err = CL_SUCCESS;
    if (!dev || !ref) {
        snprintf(t->error, sizeof t->error, "out of host memory");
        goto done;
    }
    memset(dev, CHECK_POISON, bytes);
    memset(ref, CHECK_POISON, bytes);
    buf = upload(ck, dev, bytes, &err);
    if (!buf) {
        fail_call(t, cfg, "clCreateBuffer", err);
        goto done;
    }
    clpe_tensor out = {.buffer = buf, .offset = offset_el * esize, .row_pitch = pitch};
    clpe_status st = clpe_enqueue_table(enc, ck->dev->queue, start, n, &out, 0, NULL, NULL);
    if (!read_back(ck, t, cfg, "table", st, buf, dev, bytes))
        goto done;
    st = clpe_host_table(enc, start, n, ref + offset_el * esize, pitch);
    if (st != CLPE_SUCCESS) {
        fail_call(t, cfg, "clpe_host_table", st);
        goto done;
    }
    if (ck->corrupt_pending) {
        ck->corrupt_pending = 0;
        dev[offset_el * esize] ^= 1; /* the lowest bit of the first element */
    }
    char what[96];
    snprintf(what, sizeof what, "table start=%lld", (long long)start);
    compare(t, cfg, what, dev, ref, count, n * cfg->d, pitch, offset_el);
    check_sample_errors(ck, t, cfg, dev + offset_el * esize, start, n, pitch,
                        ck->quick ? 6 : 16);
done:
    if (buf)
        clReleaseMemObject(buf);
    free(dev);
    free(ref);
}

/* Fused add out of place (the input must stay as it was), then in place. */
void check_add(check_checker *ck, check_tally *t, clpe_encoder *enc, const clpe_config *cfg,
               clpe_position_source src, size_t batch, size_t seq)
{
    static const char *const src_name[] = {"start", "per-sequence", "ids"};
    size_t esize = dtype_size(cfg->dtype);
    size_t count = batch * seq * cfg->d, bytes = count * esize;
    size_t npos = src == CLPE_POSITIONS_IDS ? batch * seq : batch;
    unsigned char *x = malloc(bytes), *dev = malloc(bytes), *ref = malloc(bytes);
    int64_t *pos = malloc(npos * sizeof *pos);
    cl_mem xbuf = NULL, obuf = NULL, pbuf = NULL;
    cl_int err = CL_SUCCESS;
    int64_t start = 0;
    char what[96];
    if (!x || !dev || !ref || !pos) {
        snprintf(t->error, sizeof t->error, "out of host memory");
        goto done;
    }
    check_fill_random(cfg->dtype, x, count, &ck->rng);
    check_make_positions(&ck->rng, src, batch, seq, pos, &start);
    memcpy(ref, x, bytes);
    clpe_status st = clpe_host_add(enc, batch, seq, ref, 0, 0, src, start,
                                   src == CLPE_POSITIONS_START ? NULL : pos);
    if (st != CLPE_SUCCESS) {
        fail_call(t, cfg, "clpe_host_add", st);
        goto done;
    }
    xbuf = upload(ck, x, bytes, &err);
    if (xbuf && src != CLPE_POSITIONS_START)
        pbuf = upload(ck, pos, npos * sizeof *pos, &err);
    if (!xbuf || (src != CLPE_POSITIONS_START && !pbuf)) {
        fail_call(t, cfg, "clCreateBuffer", err);
        goto done;
    }
    clpe_positions positions = {.source = src, .start = start, .buffer = pbuf};
    clpe_tensor xt = {.buffer = xbuf};

    if (check_selected(ck, CHECK_PATH_ADD_OUT)) {
        const check_mark mark = check_mark_now(t);
        memset(dev, CHECK_POISON, bytes);
        obuf = upload(ck, dev, bytes, &err);
        if (!obuf) {
            fail_call(t, cfg, "clCreateBuffer", err);
            goto done;
        }
        clpe_tensor ot = {.buffer = obuf};
        st = clpe_enqueue_add_out(enc, ck->dev->queue, batch, seq, &xt, &ot, &positions, 0,
                                  NULL, NULL);
        if (!read_back(ck, t, cfg, "add_out", st, obuf, dev, bytes))
            goto done;
        snprintf(what, sizeof what, "add_out positions=%s", src_name[src]);
        compare(t, cfg, what, dev, ref, count, count, cfg->d, 0);
        if (!read_back(ck, t, cfg, "read", CLPE_SUCCESS, xbuf, dev, bytes))
            goto done;
        compare(t, cfg, "add_out input (must be unchanged)", dev, x, count, 0, cfg->d, 0);
        check_credit(t, CHECK_PATH_ADD_OUT, mark);
    }

    if (check_selected(ck, CHECK_PATH_ADD)) {
        const check_mark mark = check_mark_now(t);
        st = clpe_enqueue_add(enc, ck->dev->queue, batch, seq, &xt, &positions, 0, NULL, NULL);
        if (!read_back(ck, t, cfg, "add", st, xbuf, dev, bytes))
            goto done;
        snprintf(what, sizeof what, "add positions=%s", src_name[src]);
        compare(t, cfg, what, dev, ref, count, count, cfg->d, 0);
        check_credit(t, CHECK_PATH_ADD, mark);
    }
done:
    if (xbuf) clReleaseMemObject(xbuf);
    if (obuf) clReleaseMemObject(obuf);
    if (pbuf) clReleaseMemObject(pbuf);
    free(x);
    free(dev);
    free(ref);
    free(pos);
}

/* Fused gather: embedding rows, scale and encoding, with bad ids mixed in
 * and counted on the device. */
void check_gather(check_checker *ck, check_tally *t, clpe_encoder *enc, const clpe_config *cfg,
                  size_t batch, size_t seq)
{
    const size_t vocab = 37;
    size_t esize = dtype_size(cfg->dtype);
    size_t count = batch * seq * cfg->d, bytes = count * esize;
    size_t ebytes = vocab * cfg->d * esize;
    unsigned char *emb = malloc(ebytes), *dev = malloc(bytes), *ref = malloc(bytes);
    int32_t *ids = malloc(batch * seq * sizeof *ids);
    int64_t *pos = malloc(batch * seq * sizeof *pos);
    cl_mem ebuf = NULL, obuf = NULL, ibuf = NULL, pbuf = NULL, bbuf = NULL;
    cl_int err = CL_SUCCESS;
    if (!emb || !dev || !ref || !ids || !pos) {
        snprintf(t->error, sizeof t->error, "out of host memory");
        goto done;
    }
    check_fill_random(cfg->dtype, emb, vocab * cfg->d, &ck->rng);
    uint32_t bad_expected, first_bad;
    check_make_ids(&ck->rng, ids, batch * seq, vocab, &bad_expected, &first_bad);
    int64_t unused_start;
    check_make_positions(&ck->rng, CLPE_POSITIONS_IDS, batch, seq, pos, &unused_start);
    size_t bad_host = 0;
    memset(ref, CHECK_POISON, bytes);
    clpe_status st = clpe_host_gather(enc, batch, seq, ids, emb, vocab, 0, ref, 0,
                                      CLPE_POSITIONS_IDS, 0, pos, &bad_host);
    if (st != CLPE_SUCCESS) {
        fail_call(t, cfg, "clpe_host_gather", st);
        goto done;
    }
    memset(dev, CHECK_POISON, bytes);
    uint32_t bad_init[2] = {12345u, 0u}; /* the call must reset them */
    ebuf = upload(ck, emb, ebytes, &err);
    if (ebuf) obuf = upload(ck, dev, bytes, &err);
    if (obuf) ibuf = upload(ck, ids, batch * seq * sizeof *ids, &err);
    if (ibuf) pbuf = upload(ck, pos, batch * seq * sizeof *pos, &err);
    if (pbuf) bbuf = upload(ck, bad_init, sizeof bad_init, &err);
    if (!bbuf) {
        fail_call(t, cfg, "clCreateBuffer", err);
        goto done;
    }
    clpe_token_ids idt = {.buffer = ibuf};
    clpe_tensor et = {.buffer = ebuf}, ot = {.buffer = obuf};
    clpe_positions positions = {.source = CLPE_POSITIONS_IDS, .buffer = pbuf};
    st = clpe_enqueue_gather(enc, ck->dev->queue, batch, seq, &idt, &et, cfg->dtype, vocab, &ot,
                             &positions, bbuf, 0, NULL, NULL);
    uint32_t bad_dev[2] = {0, 0};
    if (!read_back(ck, t, cfg, "gather", st, obuf, dev, bytes) ||
        !read_back(ck, t, cfg, "gather", CLPE_SUCCESS, bbuf, bad_dev, sizeof bad_dev))
        goto done;
    compare(t, cfg, "gather", dev, ref, count, count, cfg->d, 0);
    if (bad_dev[0] != bad_expected || bad_dev[1] != first_bad || bad_host != bad_expected) {
        if (t->mismatches++ == 0) {
            char lab[96];
            check_config_label(cfg, lab, sizeof lab);
            snprintf(t->first_mismatch, sizeof t->first_mismatch,
                     "%s gather bad ids: device counted %u (first at %u), host %zu, expected %u "
                     "(first at %u)",
                     lab, bad_dev[0], bad_dev[1], bad_host, bad_expected, first_bad);
        }
    }
done:
    if (ebuf) clReleaseMemObject(ebuf);
    if (obuf) clReleaseMemObject(obuf);
    if (ibuf) clReleaseMemObject(ibuf);
    if (pbuf) clReleaseMemObject(pbuf);
    if (bbuf) clReleaseMemObject(bbuf);
    free(emb);
    free(dev);
    free(ref);
    free(ids);
    free(pos);
}

/* Pad-aware positions (fairseq make_positions): the rule is simple enough
 * to state in check_make_padded_ids, so the expected values come from
 * there, not from the library. */
void check_pad_positions(check_checker *ck, check_tally *t, clpe_encoder *enc,
                         const clpe_config *cfg, size_t batch, size_t seq)
{
    const int32_t pad_id = 1;
    const int64_t first = 2, pad_pos = 1;
    size_t n = batch * seq;
    int32_t *ids = malloc(n * sizeof *ids);
    int64_t *dev = malloc(n * sizeof *dev), *ref = malloc(n * sizeof *ref);
    cl_mem ibuf = NULL, pbuf = NULL;
    cl_int err = CL_SUCCESS;
    if (!ids || !dev || !ref) {
        snprintf(t->error, sizeof t->error, "out of host memory");
        goto done;
    }
    check_make_padded_ids(&ck->rng, batch, seq, pad_id, first, pad_pos, ids, ref);
    memset(dev, CHECK_POISON, n * sizeof *dev);
    ibuf = upload(ck, ids, n * sizeof *ids, &err);
    if (ibuf)
        pbuf = upload(ck, dev, n * sizeof *dev, &err);
    if (!pbuf) {
        fail_call(t, cfg, "clCreateBuffer", err);
        goto done;
    }
    clpe_token_ids idt = {.buffer = ibuf};
    clpe_status st = clpe_enqueue_pad_positions(enc, ck->dev->queue, batch, seq, &idt, pad_id,
                                                first, pad_pos, pbuf, 0, 0, NULL, NULL);
    if (!read_back(ck, t, cfg, "pad_positions", st, pbuf, dev, n * sizeof *dev))
        goto done;
    t->elements += n;
    for (size_t k = 0; k < n; ++k) {
        if (dev[k] == ref[k])
            continue;
        if (t->mismatches++ == 0) {
            char lab[96];
            check_config_label(cfg, lab, sizeof lab);
            snprintf(t->first_mismatch, sizeof t->first_mismatch,
                     "%s pad_positions: row %zu token %zu: device %lld, expected %lld", lab,
                     k / seq, k % seq, (long long)dev[k], (long long)ref[k]);
        }
    }
done:
    if (ibuf) clReleaseMemObject(ibuf);
    if (pbuf) clReleaseMemObject(pbuf);
    free(ids);
    free(dev);
    free(ref);
}
