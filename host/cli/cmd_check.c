/*
 * cmd_check.c - `clpe check`: the cross-vendor conformance run.
 *
 * The library promises that a conformant device writes exactly the bits its
 * host emulation computes. This command holds every device to that: for
 * each dtype the device supports, both frequency conventions, both layouts
 * and a few widths, it runs the table, fused add (in and out of place) and
 * gather paths at edge and random positions, reads everything back and
 * compares every element bit for bit with clpe_host_*, guard elements
 * between rows included. It also samples the device's values against an
 * independent 256-bit MPFR evaluation of sin(p * w_i), so a shared mistake
 * in kernel and emulation would still show up as an error above the bound.
 *
 * Test-only hook: with CLPE_CHECK_CORRUPT=1 in the environment, one bit of
 * the first device table read back is flipped before the comparison, so
 * the tests can see a failing run report its mismatch.
 */
#include "cli.h"

#include <stdint.h> /* before mpfr.h, for mpfr_set_sj */
#include <mpfr.h>

#include <math.h>
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#include <stdlib.h>
#include <string.h>

#define NDTYPES 4
#define POISON 0xA5 /* fill byte of every buffer before a kernel writes it */

/* What one device and dtype came to. */
typedef struct tally {
    int dtype;
    int skipped;
    char skip_reason[96];
    uint64_t elements;      /* elements compared (data, not guards) */
    uint64_t mismatches;    /* elements whose bits differ, guards included */
    uint64_t samples;       /* elements compared with MPFR */
    double max_err;
    double bound;           /* the bound at the largest |position| */
    int64_t worst_pos;
    uint64_t over_bound;    /* samples whose error exceeded their bound */
    char first_over[200];
    char first_mismatch[320];
    char error[320];        /* a call that failed outright */
    char paths[64];         /* which paths ran */
} tally;

typedef struct checker {
    const cli_device *dev;
    int quick;
    int corrupt_pending;
    uint64_t rng;
    mpfr_t w, angle, s, c, tmp;
} checker;

/* ---- small helpers -------------------------------------------------------------- */

static uint64_t rand_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A random position, with the ones that break careless code overweighted. */
static int64_t rand_position(uint64_t *rng)
{
    static const int64_t edges[] = {
        0, 1, -1, 2, (int64_t)1 << 24, ((int64_t)1 << 31) - 1, (int64_t)1 << 32,
        -((int64_t)1 << 32) - 1, ((int64_t)1 << 53) + 1, (int64_t)1 << 62, INT64_MAX,
        INT64_MIN, INT64_MIN + 1,
    };
    uint64_t r = rand_u64(rng);
    switch (r % 4) {
    case 0: return edges[(r >> 8) % (sizeof edges / sizeof edges[0])];
    case 1: return (int64_t)(rand_u64(rng) >> (r >> 8) % 64); /* every magnitude */
    case 2: return -(int64_t)(rand_u64(rng) >> (1 + (r >> 8) % 63));
    default: return (int64_t)rand_u64(rng);
    }
}

/* Fill count elements of dtype with finite values in about [-4, 4]. */
static void fill_random(int dtype, void *buf, size_t count, uint64_t *rng)
{
    for (size_t k = 0; k < count; ++k) {
        uint64_t r = rand_u64(rng);
        double v = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 8.0;
        switch (dtype) {
        case CLPE_DTYPE_F32: {
            float f = (float)v;
            memcpy((char *)buf + 4 * k, &f, 4);
            break;
        }
        case CLPE_DTYPE_F64:
            memcpy((char *)buf + 8 * k, &v, 8);
            break;
        case CLPE_DTYPE_BF16: {
            float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            uint16_t h = (uint16_t)(u >> 16); /* truncation: any bf16 will do */
            memcpy((char *)buf + 2 * k, &h, 2);
            break;
        }
        case CLPE_DTYPE_F16: {
            /* sign, exponent 10..17 (2^-5 .. 4), random mantissa */
            uint16_t h = (uint16_t)(((r >> 8) & 1u) << 15 | (10u + (r >> 9) % 8u) << 10 |
                                    (r >> 20 & 0x3FFu));
            memcpy((char *)buf + 2 * k, &h, 2);
            break;
        }
        }
    }
}

static void hex_elem(const unsigned char *p, size_t esize, char *out, size_t cap)
{
    uint64_t v = 0;
    memcpy(&v, p, esize); /* little-endian host assumed, as by .npy '<' */
    snprintf(out, cap, "0x%0*llx", (int)(2 * esize), (unsigned long long)v);
}

static void config_label(const clpe_config *cfg, char *out, size_t cap)
{
    snprintf(out, cap, "%s %s/%s d=%u", cli_dtype_name(cfg->dtype), cli_freq_name(cfg->freq),
             cli_layout_name(cfg->layout), (unsigned)cfg->d);
}

/* Compare count elements bit for bit; data_elements of them are real data
 * (the rest guards). Records the first difference. */
static void compare(tally *t, const clpe_config *cfg, const char *what,
                    const unsigned char *dev, const unsigned char *ref, size_t count,
                    size_t data_elements, size_t row_pitch, size_t offset_el)
{
    size_t esize = cli_dtype_size(cfg->dtype);
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
            config_label(cfg, lab, sizeof lab);
            size_t rel = k >= offset_el ? k - offset_el : 0;
            snprintf(t->first_mismatch, sizeof t->first_mismatch,
                     "%s %s: row %zu element %zu%s: device %s, host emulation %s", lab, what,
                     rel / row_pitch, rel % row_pitch,
                     k < offset_el || rel % row_pitch >= cfg->d ? " (outside the rows)" : "",
                     a, b);
        }
    }
}

static void fail_call(tally *t, const clpe_config *cfg, const char *what, clpe_status st)
{
    if (t->error[0])
        return;
    char lab[96];
    config_label(cfg, lab, sizeof lab);
    snprintf(t->error, sizeof t->error, "%s %s: %s (%d)", lab, what, clpe_status_string(st),
             (int)st);
}

/* ---- device buffers ----------------------------------------------------------- */

static cl_mem upload(const checker *ck, const void *host, size_t bytes, cl_int *err)
{
    return clCreateBuffer(ck->dev->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                          (void *)host, err);
}

static cl_int download(const checker *ck, cl_mem buf, void *host, size_t bytes)
{
    return clEnqueueReadBuffer(ck->dev->queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
}

/* ---- MPFR reference ------------------------------------------------------------- */

/* Largest acceptable |error| against the exact value at position p. For the
 * 16- and 32-bit types: the rounding of the output format (half an ulp of
 * values near 1) plus the library's float32 budget of 1e-7 (see the design
 * notes). For f64 the budget is the tuning word itself: F_i is rounded to
 * 2^-96 turn, so position p is off by up to |p| * 2^-97 turn, plus the
 * 2^-64 turn of the phase and a few double ulps of evaluation. */
static double error_bound(int dtype, int64_t p)
{
    switch (dtype) {
    case CLPE_DTYPE_F32: return 1e-7;
    case CLPE_DTYPE_F16: return ldexp(1.0, -12) + 1e-7;
    case CLPE_DTYPE_BF16: return ldexp(1.0, -9) + 1e-7;
    case CLPE_DTYPE_F64: {
        double mag = p < 0 ? -(double)p : (double)p;
        return 2.0 * M_PI * (mag * ldexp(1.0, -97) + ldexp(1.0, -64)) + 1e-15;
    }
    }
    return 0;
}

/* |device value - sin or cos(p * w_i)| for element k of a row at position p. */
static double ref_error(checker *ck, const clpe_config *cfg, int64_t p, uint32_t k, double got)
{
    uint32_t pairs = cfg->d / 2;
    uint32_t i;
    int is_cos;
    /* The zero column of an odd width and the all-zero padding row. */
    if (k >= 2 * pairs ||
        ((cfg->flags & CLPE_FLAG_PADDING_ROW) && p == cfg->padding_position))
        return fabs(got);
    if (cfg->layout == CLPE_LAYOUT_SPLIT) {
        is_cos = k >= pairs;
        i = is_cos ? k - pairs : k;
    } else {
        is_cos = (int)(k & 1u);
        i = k / 2;
    }
    /* w_i = base^(-2i/d) (paper) or base^(-i/max(d/2-1, 1)) (t2t) */
    long m = cfg->freq == CLPE_FREQ_PAPER ? (long)cfg->d : (long)(pairs > 1 ? pairs - 1 : 1);
    long num = cfg->freq == CLPE_FREQ_PAPER ? 2 * (long)i : (long)i;
    mpfr_set_si(ck->tmp, -num, MPFR_RNDN);
    mpfr_div_si(ck->tmp, ck->tmp, m, MPFR_RNDN);
    mpfr_set_d(ck->w, cfg->base, MPFR_RNDN);
    mpfr_pow(ck->w, ck->w, ck->tmp, MPFR_RNDN);
    mpfr_set_sj(ck->angle, (intmax_t)p, MPFR_RNDN);
    mpfr_mul(ck->angle, ck->angle, ck->w, MPFR_RNDN);
    mpfr_sin_cos(ck->s, ck->c, ck->angle, MPFR_RNDN);
    mpfr_set_d(ck->tmp, got, MPFR_RNDN);
    mpfr_sub(ck->tmp, ck->tmp, is_cos ? ck->c : ck->s, MPFR_RNDN);
    return fabs(mpfr_get_d(ck->tmp, MPFR_RNDN));
}

static void sample_errors(checker *ck, tally *t, const clpe_config *cfg,
                          const unsigned char *rows, int64_t start, size_t n, size_t row_pitch,
                          int samples)
{
    size_t esize = cli_dtype_size(cfg->dtype);
    for (int s = 0; s < samples; ++s) {
        uint64_t r = rand_u64(&ck->rng);
        size_t row = (size_t)(r % n);
        uint32_t k = (uint32_t)((r >> 32) % cfg->d);
        if (s < 2) /* the first and last rows always: the extreme positions */
            row = s ? n - 1 : 0;
        int64_t p = (int64_t)((uint64_t)start + row);
        double got = cli_elem_to_double(rows + (row * row_pitch + k) * esize, cfg->dtype);
        double e = ref_error(ck, cfg, p, k, got);
        double bound = error_bound(cfg->dtype, p);
        ++t->samples;
        if (!(e <= bound) && t->over_bound++ == 0) {
            char lab[96];
            config_label(cfg, lab, sizeof lab);
            snprintf(t->first_over, sizeof t->first_over,
                     "%s position %lld element %u: |error| %.3e > bound %.3e", lab,
                     (long long)p, (unsigned)k, e, bound);
        }
        if (!(e <= t->max_err)) { /* NaN counts as the worst */
            t->max_err = isnan(e) ? INFINITY : e;
            t->worst_pos = p;
        }
    }
}

/* ---- the paths ------------------------------------------------------------------ */

/* Table of n rows from start, with gap elements between rows and before the
 * first, all poisoned, so writes outside the rows show as mismatches. */
static void case_table(checker *ck, tally *t, clpe_encoder *enc, const clpe_config *cfg,
                       int64_t start, size_t n, size_t gap)
{
    size_t esize = cli_dtype_size(cfg->dtype);
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
    memset(dev, POISON, bytes);
    memset(ref, POISON, bytes);
    buf = upload(ck, dev, bytes, &err);
    if (!buf) {
        fail_call(t, cfg, "clCreateBuffer", err);
        goto done;
    }
    clpe_tensor out = {.buffer = buf, .offset = offset_el * esize, .row_pitch = pitch, .batch_pitch = 0};
    clpe_status st = clpe_enqueue_table(enc, ck->dev->queue, start, n, &out, 0, NULL, NULL);
    if (st == CLPE_SUCCESS)
        st = download(ck, buf, dev, bytes);
    if (st != CLPE_SUCCESS) {
        fail_call(t, cfg, "table", st);
        goto done;
    }
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
    sample_errors(ck, t, cfg, dev + offset_el * esize, start, n, pitch, ck->quick ? 6 : 16);
done:
    if (buf)
        clReleaseMemObject(buf);
    free(dev);
    free(ref);
}

/* Positions of a [batch, seq] problem for each source. */
static void make_positions(checker *ck, clpe_position_source src, size_t batch, size_t seq,
                           int64_t *pos, int64_t *start)
{
    *start = 0;
    if (src == CLPE_POSITIONS_IDS) {
        for (size_t k = 0; k < batch * seq; ++k)
            pos[k] = rand_position(&ck->rng);
    } else if (src == CLPE_POSITIONS_PER_SEQUENCE) {
        for (size_t b = 0; b < batch; ++b)
            pos[b] = rand_position(&ck->rng); /* start + s may wrap: both sides wrap */
    } else {
        int64_t p = rand_position(&ck->rng);
        *start = p > INT64_MAX - (int64_t)seq ? INT64_MAX - (int64_t)seq + 1 : p;
    }
}

/* Fused add in place, and out of place when the library has it. */
static void case_add(checker *ck, tally *t, clpe_encoder *enc, const clpe_config *cfg,
                     clpe_position_source src, size_t batch, size_t seq)
{
    size_t esize = cli_dtype_size(cfg->dtype);
    size_t count = batch * seq * cfg->d, bytes = count * esize;
    size_t npos = src == CLPE_POSITIONS_IDS ? batch * seq : batch;
    unsigned char *x = malloc(bytes), *dev = malloc(bytes), *ref = malloc(bytes);
    int64_t *pos = malloc(npos * sizeof *pos);
    cl_mem xbuf = NULL, obuf = NULL, pbuf = NULL;
    cl_int err = CL_SUCCESS;
    int64_t start = 0;
    if (!x || !dev || !ref || !pos) {
        snprintf(t->error, sizeof t->error, "out of host memory");
        goto done;
    }
    fill_random(cfg->dtype, x, count, &ck->rng);
    make_positions(ck, src, batch, seq, pos, &start);
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
    clpe_positions positions = {.source = src, .start = start, .buffer = pbuf, .offset = 0};
    clpe_tensor xt = {.buffer = xbuf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    static const char *src_name[] = {"start", "per-sequence", "ids"};
    char what[96];

    {
        memset(dev, POISON, bytes);
        obuf = upload(ck, dev, bytes, &err);
        if (!obuf) {
            fail_call(t, cfg, "clCreateBuffer", err);
            goto done;
        }
        clpe_tensor ot = {.buffer = obuf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
        st = clpe_enqueue_add_out(enc, ck->dev->queue, batch, seq, &xt, &ot, &positions, 0, NULL,
                                  NULL);
        if (st == CLPE_SUCCESS)
            st = download(ck, obuf, dev, bytes);
        if (st != CLPE_SUCCESS) {
            fail_call(t, cfg, "add_out", st);
            goto done;
        }
        snprintf(what, sizeof what, "add_out positions=%s", src_name[src]);
        compare(t, cfg, what, dev, ref, count, count, cfg->d, 0);
        /* The input must be left alone. */
        if ((st = download(ck, xbuf, dev, bytes)) != CLPE_SUCCESS) {
            fail_call(t, cfg, "read", st);
            goto done;
        }
        snprintf(what, sizeof what, "add_out input (must be unchanged)");
        compare(t, cfg, what, dev, x, count, 0, cfg->d, 0);
    }

    st = clpe_enqueue_add(enc, ck->dev->queue, batch, seq, &xt, &positions, 0, NULL, NULL);
    if (st == CLPE_SUCCESS)
        st = download(ck, xbuf, dev, bytes);
    if (st != CLPE_SUCCESS) {
        fail_call(t, cfg, "add", st);
        goto done;
    }
    snprintf(what, sizeof what, "add positions=%s", src_name[src]);
    compare(t, cfg, what, dev, ref, count, count, cfg->d, 0);
done:
    if (xbuf) clReleaseMemObject(xbuf);
    if (obuf) clReleaseMemObject(obuf);
    if (pbuf) clReleaseMemObject(pbuf);
    free(x);
    free(dev);
    free(ref);
    free(pos);
}

/* Fused gather: embedding rows, scale and encoding, with bad ids mixed in. */
static void case_gather(checker *ck, tally *t, clpe_encoder *enc, const clpe_config *cfg,
                        size_t batch, size_t seq)
{
    const size_t vocab = 37;
    size_t esize = cli_dtype_size(cfg->dtype);
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
    fill_random(cfg->dtype, emb, vocab * cfg->d, &ck->rng);
    uint32_t bad_expected = 0, first_bad = 0xFFFFFFFFu;
    for (size_t k = 0; k < batch * seq; ++k) {
        uint64_t r = rand_u64(&ck->rng);
        ids[k] = r % 8 == 0 ? (r >> 8 & 1 ? -1 - (int32_t)(r >> 9 & 3) : (int32_t)(vocab + (r >> 9 & 3)))
                            : (int32_t)((r >> 8) % vocab);
        if (ids[k] < 0 || (size_t)ids[k] >= vocab) {
            if (bad_expected++ == 0)
                first_bad = (uint32_t)k;
        }
        pos[k] = rand_position(&ck->rng);
    }
    size_t bad_host = 0;
    memset(ref, POISON, bytes);
    clpe_status st = clpe_host_gather(enc, batch, seq, ids, emb, vocab, 0, ref, 0,
                                      CLPE_POSITIONS_IDS, 0, pos, &bad_host);
    if (st != CLPE_SUCCESS) {
        fail_call(t, cfg, "clpe_host_gather", st);
        goto done;
    }
    memset(dev, POISON, bytes);
    uint32_t bad_init[2] = {12345u, 0u};
    ebuf = upload(ck, emb, ebytes, &err);
    if (ebuf) obuf = upload(ck, dev, bytes, &err);
    if (obuf) ibuf = upload(ck, ids, batch * seq * sizeof *ids, &err);
    if (ibuf) pbuf = upload(ck, pos, batch * seq * sizeof *pos, &err);
    if (pbuf) bbuf = upload(ck, bad_init, sizeof bad_init, &err);
    if (!bbuf) {
        fail_call(t, cfg, "clCreateBuffer", err);
        goto done;
    }
    clpe_token_ids idt = {.buffer = ibuf, .offset = 0};
    clpe_tensor et = {.buffer = ebuf, .offset = 0, .row_pitch = 0, .batch_pitch = 0}, ot = {.buffer = obuf};
    clpe_positions positions = {.source = CLPE_POSITIONS_IDS, .start = 0, .buffer = pbuf, .offset = 0};
    st = clpe_enqueue_gather(enc, ck->dev->queue, batch, seq, &idt, &et, cfg->dtype, vocab, &ot,
                             &positions, bbuf, 0, NULL, NULL);
    if (st == CLPE_SUCCESS)
        st = download(ck, obuf, dev, bytes);
    uint32_t bad_dev[2] = {0, 0};
    if (st == CLPE_SUCCESS)
        st = download(ck, bbuf, bad_dev, sizeof bad_dev);
    if (st != CLPE_SUCCESS) {
        fail_call(t, cfg, "gather", st);
        goto done;
    }
    compare(t, cfg, "gather", dev, ref, count, count, cfg->d, 0);
    if (bad_dev[0] != bad_expected || bad_dev[1] != first_bad || bad_host != bad_expected) {
        if (t->mismatches++ == 0) {
            char lab[96];
            config_label(cfg, lab, sizeof lab);
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
 * to state here, so the host side is computed directly. */
static void case_pad_positions(checker *ck, tally *t, clpe_encoder *enc, const clpe_config *cfg,
                               size_t batch, size_t seq)
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
    for (size_t b = 0; b < batch; ++b) {
        size_t left = (size_t)(rand_u64(&ck->rng) % (seq / 2 + 1)); /* left padding */
        int64_t k = 0;
        for (size_t s = 0; s < seq; ++s) {
            uint64_t r = rand_u64(&ck->rng);
            int32_t id = s < left || r % 7 == 0 ? pad_id : (int32_t)(r >> 8) % 1000;
            ids[b * seq + s] = id;
            ref[b * seq + s] = id == pad_id ? pad_pos : first + k++;
        }
    }
    memset(dev, POISON, n * sizeof *dev);
    ibuf = upload(ck, ids, n * sizeof *ids, &err);
    if (ibuf)
        pbuf = upload(ck, dev, n * sizeof *dev, &err);
    if (!pbuf) {
        fail_call(t, cfg, "clCreateBuffer", err);
        goto done;
    }
    clpe_token_ids idt = {.buffer = ibuf, .offset = 0};
    clpe_status st = clpe_enqueue_pad_positions(enc, ck->dev->queue, batch, seq, &idt, pad_id,
                                                first, pad_pos, pbuf, 0, 0, NULL, NULL);
    if (st == CLPE_SUCCESS)
        st = download(ck, pbuf, dev, n * sizeof *dev);
    if (st != CLPE_SUCCESS) {
        fail_call(t, cfg, "pad_positions", st);
        goto done;
    }
    t->elements += n;
    for (size_t k = 0; k < n; ++k) {
        if (dev[k] == ref[k])
            continue;
        if (t->mismatches++ == 0) {
            char lab[96];
            config_label(cfg, lab, sizeof lab);
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

/* ---- one encoder, one device ------------------------------------------------------ */

static void check_config(checker *ck, tally *t, clpe_encoder *enc, const clpe_config *cfg)
{
    const size_t n = ck->quick ? 9 : 33;
    /* Starts that straddle the places where careless arithmetic breaks. */
    const int64_t h = (int64_t)(n / 2);
    const int64_t starts[] = {
        0, -h, ((int64_t)1 << 24) - h, ((int64_t)1 << 31) - h, ((int64_t)1 << 32) - h,
        -((int64_t)1 << 32) - h, ((int64_t)1 << 53) - h, (int64_t)1 << 62,
        INT64_MAX - (int64_t)n + 1, INT64_MIN, INT64_MIN + ((int64_t)1 << 32) - h,
        (int64_t)0x0123456789ABCDEFll,
    };
    const size_t nstarts = sizeof starts / sizeof starts[0];
    for (size_t k = 0; k < nstarts; ++k) {
        if (ck->quick && k % 3 != 0 && k != 8 && k != 9)
            continue;
        case_table(ck, t, enc, cfg, starts[k], n, k % 2 ? 2 : 0);
    }
    for (int k = 0; k < (ck->quick ? 2 : 6); ++k) {
        int64_t s = rand_position(&ck->rng);
        if (s > INT64_MAX - (int64_t)n + 1)
            s = INT64_MAX - (int64_t)n + 1;
        case_table(ck, t, enc, cfg, s, n, (size_t)(k % 2));
    }
    /* One long table: several launches, the odometer running far. */
    size_t bulk = (ck->quick ? 64u : 512u) * 1024u / cfg->d;
    if (bulk < 2 * n)
        bulk = 2 * n;
    case_table(ck, t, enc, cfg, (int64_t)(rand_u64(&ck->rng) >> 2), bulk, 0);

    case_add(ck, t, enc, cfg, CLPE_POSITIONS_IDS, 3, ck->quick ? 5 : 17);
    case_add(ck, t, enc, cfg, CLPE_POSITIONS_PER_SEQUENCE, 2, ck->quick ? 5 : 13);
    case_add(ck, t, enc, cfg, CLPE_POSITIONS_START, 2, ck->quick ? 4 : 11);
    case_gather(ck, t, enc, cfg, 2, ck->quick ? 5 : 19);
    case_pad_positions(ck, t, enc, cfg, 3, ck->quick ? 8 : 29);
}

static int tally_failed(const tally *t)
{
    return !t->skipped && (t->mismatches || t->error[0] || t->over_bound);
}

/* Check one device for every dtype; fills t[NDTYPES]. */
static void check_device(checker *ck, tally *t)
{
    static const uint32_t widths_full[] = {2, 6, 10, 64, 128, 384, 1024, 4096};
    static const uint32_t widths_quick[] = {8, 96};
    const uint32_t *widths = ck->quick ? widths_quick : widths_full;
    const size_t nwidths = ck->quick ? 2 : sizeof widths_full / sizeof widths_full[0];
    clpe_encoder *proto = NULL; /* built once; the rest share its program */

    for (int dt = 0; dt < NDTYPES; ++dt) {
        tally *r = &t[dt];
        memset(r, 0, sizeof *r);
        r->dtype = dt;
        r->bound = error_bound(dt, INT64_MIN);
        snprintf(r->paths, sizeof r->paths, "table add add_out gather pad_positions");
        if (!cli_device_supports(ck->dev->device, dt)) {
            r->skipped = 1;
            snprintf(r->skip_reason, sizeof r->skip_reason, "device lacks %s",
                     dt == CLPE_DTYPE_F64 ? "cl_khr_fp64" : cli_dtype_name(dt));
            continue;
        }
        for (size_t wi = 0; wi < nwidths && !r->skipped && !r->error[0]; ++wi) {
            /* Both conventions and layouts, then the fairseq preset at the
             * odd width below: zero column and all-zero padding row. */
            for (int conv = 0; conv < 5 && !r->skipped && !r->error[0]; ++conv) {
                clpe_config cfg = clpe_config_default(widths[wi]);
                cfg.flags = 0;
                cfg.padding_position = 0;
                if (conv < 4) {
                    cfg.freq = (clpe_freq)(conv / 2);
                    cfg.layout = (clpe_layout)(conv % 2);
                } else {
                    clpe_status pst = clpe_config_preset("fairseq", widths[wi] + 1, &cfg, NULL);
                    if (pst != CLPE_SUCCESS) {
                        fail_call(r, &cfg, "clpe_config_preset fairseq", pst);
                        break;
                    }
                }
                cfg.dtype = (clpe_dtype)dt;
                cfg.scale = sqrt((double)widths[wi]); /* the usual embedding scale */
                clpe_status st = CLPE_SUCCESS;
                clpe_encoder *enc;
                if (proto) {
                    enc = clpe_encoder_create_like(proto, &cfg, &st);
                } else {
                    char log[4096];
                    clpe_build_log bl = {log, sizeof log, 0};
                    enc = clpe_encoder_create(ck->dev->context, ck->dev->device, &cfg, &bl, &st);
                }
                if (!enc && st == CLPE_ERROR_UNSUPPORTED_DTYPE) {
                    r->skipped = 1;
                    snprintf(r->skip_reason, sizeof r->skip_reason,
                             "not implemented by this library build");
                    break;
                }
                if (!enc) {
                    fail_call(r, &cfg, "encoder", st);
                    break;
                }
                check_config(ck, r, enc, &cfg);
                if (!proto)
                    proto = enc;
                else
                    clpe_encoder_release(enc);
            }
        }
    }
    clpe_encoder_release(proto);
}

/* ---- output --------------------------------------------------------------------- */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; ++s) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static const char *verdict(const tally *t)
{
    return t->skipped ? "skipped" : tally_failed(t) ? "FAIL" : "pass";
}

typedef struct device_result {
    unsigned index;
    char name[256];
    char platform[256];
    char open_error[160];
    tally t[NDTYPES];
} device_result;

static void write_json(FILE *f, const device_result *res, size_t n, int quick, int pass,
                       double seconds)
{
    fprintf(f, "{\n  \"clpe_version\": ");
    json_string(f, clpe_version_string());
    fprintf(f, ",\n  \"run\": \"%s\",\n  \"pass\": %s,\n  \"seconds\": %.3f,\n  \"devices\": [",
            quick ? "quick" : "full", pass ? "true" : "false", seconds);
    for (size_t i = 0; i < n; ++i) {
        const device_result *d = &res[i];
        fprintf(f, "%s\n    {\"index\": %u, \"name\": ", i ? "," : "", d->index);
        json_string(f, d->name);
        fprintf(f, ", \"platform\": ");
        json_string(f, d->platform);
        if (d->open_error[0]) {
            fprintf(f, ", \"error\": ");
            json_string(f, d->open_error);
            fprintf(f, ", \"results\": []}");
            continue;
        }
        fprintf(f, ", \"results\": [");
        for (int k = 0; k < NDTYPES; ++k) {
            const tally *t = &d->t[k];
            fprintf(f, "%s\n      {\"dtype\": \"%s\", \"verdict\": \"%s\"", k ? "," : "",
                    cli_dtype_name(t->dtype), verdict(t));
            if (t->skipped) {
                fprintf(f, ", \"reason\": ");
                json_string(f, t->skip_reason);
            } else {
                fprintf(f,
                        ", \"paths\": \"%s\", \"elements\": %llu, \"bit_mismatches\": %llu, "
                        "\"mpfr_samples\": %llu, \"max_abs_error\": %.6e, \"error_bound\": %.6e, "
                        "\"worst_position\": %lld",
                        t->paths, (unsigned long long)t->elements,
                        (unsigned long long)t->mismatches, (unsigned long long)t->samples,
                        t->max_err, t->bound, (long long)t->worst_pos);
                if (t->first_mismatch[0]) {
                    fprintf(f, ", \"first_mismatch\": ");
                    json_string(f, t->first_mismatch);
                }
                if (t->first_over[0]) {
                    fprintf(f, ", \"first_over_bound\": ");
                    json_string(f, t->first_over);
                }
                if (t->error[0]) {
                    fprintf(f, ", \"error\": ");
                    json_string(f, t->error);
                }
            }
            fputc('}', f);
        }
        fprintf(f, "\n    ]}");
    }
    fprintf(f, "\n  ]\n}\n");
}

int cli_cmd_check(const cli_args *args)
{
    const double t0 = cli_now();
    /* Which devices: one by the usual rule, or every index in turn. */
    size_t cap = 1;
    device_result *res = NULL;
    size_t n = 0;
    int rc = CLI_EXIT_OK;
    cli_outfile json;
    memset(&json, 0, sizeof json);

    /* A bad --json path fails before the long run. */
    if (args->json && (rc = cli_outfile_open(&json, args->json, "--json")) != CLI_EXIT_OK)
        return rc;

    checker ck;
    memset(&ck, 0, sizeof ck);
    ck.quick = args->quick;
    const char *corrupt = getenv("CLPE_CHECK_CORRUPT");
    ck.corrupt_pending = corrupt && *corrupt && strcmp(corrupt, "0") != 0;
    mpfr_inits2(256, ck.w, ck.angle, ck.s, ck.c, ck.tmp, (mpfr_ptr)0);

    int all_pass = 1;
    for (unsigned idx = 0;; ++idx) {
        cl_platform_id plat = NULL;
        cl_device_id devid = NULL;
        char sel[24];
        snprintf(sel, sizeof sel, "%u", idx);
        clpe_status st = clpe_select_device(args->all_devices ? sel : args->device, &plat, &devid);
        if (st != CLPE_SUCCESS) {
            if (args->all_devices && idx > 0)
                break; /* past the last device */
            cli_device tmp;
            rc = cli_device_open(args->all_devices ? NULL : args->device, &tmp);
            if (rc == CLI_EXIT_OK) { /* cannot happen: the same selection just failed */
                cli_device_close(&tmp);
                rc = CLI_EXIT_RUNTIME;
            }
            goto out;
        }
        if (n == 0 || n == cap) {
            cap = n ? 2 * cap : 4;
            device_result *grown = realloc(res, cap * sizeof *res);
            if (!grown) {
                cli_error("out of memory");
                rc = CLI_EXIT_RUNTIME;
                goto out;
            }
            res = grown;
        }
        device_result *d = &res[n++];
        memset(d, 0, sizeof *d);
        d->index = idx;
        cli_device dev;
        if (cli_device_open_id(plat, devid, &dev) != CLI_EXIT_OK) {
            snprintf(d->open_error, sizeof d->open_error, "cannot open the device");
            cli_device_string(devid, CL_DEVICE_NAME, d->name, sizeof d->name);
            all_pass = 0;
        } else {
            snprintf(d->name, sizeof d->name, "%s", dev.name);
            snprintf(d->platform, sizeof d->platform, "%s", dev.platform_name);
            if (!args->quiet)
                fprintf(stderr, "clpe: checking '%s' (%s run)...\n", dev.name,
                        args->quick ? "quick" : "full");
            ck.dev = &dev;
            ck.rng = 0x5EED0000u + idx; /* reproducible: a failure can be rerun */
            check_device(&ck, d->t);
            cli_device_close(&dev);
            for (int k = 0; k < NDTYPES; ++k)
                if (tally_failed(&d->t[k]))
                    all_pass = 0;
        }
        if (!args->all_devices)
            break;
    }
    const double seconds = cli_now() - t0;

    /* The table. */
    printf("%-3s %-34s %-5s %12s %10s %11s %10s  %s\n", "#", "device", "dtype", "elements",
           "mismatches", "max |error|", "bound", "verdict");
    for (size_t i = 0; i < n; ++i) {
        const device_result *d = &res[i];
        char name[35];
        snprintf(name, sizeof name, "%s", d->name);
        if (d->open_error[0]) {
            printf("%-3u %-34s %-5s %12s %10s %11s %10s  FAIL (%s)\n", d->index, name, "-", "-",
                   "-", "-", "-", d->open_error);
            continue;
        }
        for (int k = 0; k < NDTYPES; ++k) {
            const tally *t = &d->t[k];
            const char *nm = k == 0 ? name : "";
            char idxs[8] = "";
            if (k == 0)
                snprintf(idxs, sizeof idxs, "%u", d->index);
            if (t->skipped) {
                printf("%-3s %-34s %-5s %12s %10s %11s %10s  skipped (%s)\n", idxs, nm,
                       cli_dtype_name(t->dtype), "-", "-", "-", "-", t->skip_reason);
                continue;
            }
            printf("%-3s %-34s %-5s %12llu %10llu %11.3e %10.3e  %s\n", idxs, nm,
                   cli_dtype_name(t->dtype), (unsigned long long)t->elements,
                   (unsigned long long)t->mismatches, t->max_err, t->bound, verdict(t));
        }
    }
    /* Why anything failed, one line each. */
    for (size_t i = 0; i < n; ++i) {
        for (int k = 0; k < NDTYPES; ++k) {
            const tally *t = &res[i].t[k];
            if (res[i].open_error[0] || t->skipped)
                continue;
            if (t->error[0])
                printf("error on device %u: %s\n", res[i].index, t->error);
            if (t->first_mismatch[0])
                printf("mismatch on device %u: %s (%llu element%s)\n", res[i].index,
                       t->first_mismatch, (unsigned long long)t->mismatches,
                       t->mismatches == 1 ? " differs" : "s differ");
            if (t->over_bound)
                printf("error bound exceeded on device %u: %s (%llu sample%s)\n",
                       res[i].index, t->first_over, (unsigned long long)t->over_bound,
                       t->over_bound == 1 ? "" : "s");
        }
    }
    const char *paths = n && !res[0].open_error[0] ? res[0].t[0].paths : "table add";
    printf("%s: %zu device%s, paths %s, %.1f s\n",
           all_pass ? "PASS" : "FAIL", n, n == 1 ? "" : "s", paths, seconds);
    rc = all_pass ? CLI_EXIT_OK : CLI_EXIT_RUNTIME;

    if (args->json) {
        write_json(json.f, res, n, args->quick, all_pass, seconds);
        int jrc = cli_outfile_commit(&json, "--json");
        if (jrc != CLI_EXIT_OK)
            rc = jrc;
    }
out:
    cli_outfile_abort(&json);
    mpfr_clears(ck.w, ck.angle, ck.s, ck.c, ck.tmp, (mpfr_ptr)0);
    mpfr_free_cache();
    free(res);
    return rc;
}
