/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_presets.c - each framework preset reproduces that framework's table,
 * and pad-aware positions equal fairseq's make_positions.
 *
 * The reference tables are float64 transcriptions of each framework's own
 * code (named per function), not of clpe's formulas: a preset that picks the
 * wrong frequencies, layout, first position, odd-width or padding rule fails.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static test_cl cl;
static void setup(void) { test_cl_open(&cl); }
static void teardown(void) { test_cl_close(&cl); }
TestSuite(presets, .init = setup, .fini = teardown, .timeout = 120);

/* Each writes the framework's table row for position `pos` into row[0..d). */
typedef void (*reference_row)(int64_t pos, int d, double *row);

/* Vaswani et al. 2017, 3.5: PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos. */
static void vaswani(int64_t pos, int d, double *row)
{
    for (int i = 0; i < d / 2; ++i) {
        double a = (double)pos / pow(10000.0, 2.0 * i / d);
        row[2 * i] = sin(a);
        row[2 * i + 1] = cos(a);
    }
}

/* tensor2tensor get_timing_signal_1d(length, channels, min_timescale=1,
 * max_timescale=1e4): num_timescales = channels // 2; log_timescale_increment
 * = log(max/min) / max(num_timescales - 1, 1); inv_timescales = min *
 * exp(arange(num_timescales) * -increment); signal = concat([sin, cos], 1);
 * pad(signal, [[0, 0], [0, channels % 2]]). */
static void tensor2tensor(int64_t pos, int d, double *row)
{
    int n = d / 2;
    double inc = log(10000.0) / (n - 1 > 1 ? n - 1 : 1);
    for (int i = 0; i < n; ++i) {
        double a = (double)pos * exp(i * -inc);
        row[i] = sin(a);
        row[n + i] = cos(a);
    }
    if (d % 2)
        row[d - 1] = 0;
}

/* fairseq SinusoidalPositionalEmbedding.get_embedding(num, dim, padding_idx=1):
 * half_dim = dim // 2; emb = log(10000) / (half_dim - 1); emb = exp(arange(
 * half_dim) * -emb); cat([sin, cos], 1); odd dim: cat zero column;
 * emb[padding_idx, :] = 0. */
static void fairseq(int64_t pos, int d, double *row)
{
    int half = d / 2;
    double e = log(10000.0) / (half - 1);
    for (int i = 0; i < half; ++i) {
        double a = (double)pos * exp(i * -e);
        row[i] = sin(a);
        row[half + i] = cos(a);
    }
    if (d % 2)
        row[d - 1] = 0;
    if (pos == 1)
        for (int k = 0; k < d; ++k)
            row[k] = 0;
}

/* transformers MarianSinusoidalPositionalEmbedding._init_weight:
 * position_enc[pos][j] = pos / 10000^(2 (j // 2) / dim);
 * sentinel = dim // 2 if dim % 2 == 0 else (dim // 2) + 1;
 * out[:, :sentinel] = sin(position_enc[:, 0::2]);
 * out[:, sentinel:] = cos(position_enc[:, 1::2]). */
static void marian(int64_t pos, int d, double *row)
{
    int sentinel = d % 2 == 0 ? d / 2 : d / 2 + 1;
    for (int j = 0; j < d; ++j) {
        double a = (double)pos / pow(10000.0, 2.0 * (j / 2) / d);
        if (j % 2 == 0)
            row[j / 2] = sin(a);
        else
            row[sentinel + j / 2] = cos(a);
    }
}

/* transformers models/xlm create_sinusoidal_embeddings(n_pos, dim, out):
 * position_enc = [[pos / 10000^(2 * (j // 2) / dim) for j in range(dim)]];
 * out[:, 0::2] = sin(position_enc[:, 0::2]);
 * out[:, 1::2] = cos(position_enc[:, 1::2]). */
static void xlm(int64_t pos, int d, double *row)
{
    for (int j = 0; j < d; ++j) {
        double a = (double)pos / pow(10000.0, 2.0 * (j / 2) / d);
        row[j] = j % 2 == 0 ? sin(a) : cos(a);
    }
}

/* transformers MusicgenSinusoidalPositionalEmbedding.get_embedding:
 * half_dim = embedding_dim // 2; emb = log(10000) / (half_dim - 1);
 * emb = exp(arange(half_dim) * -emb); emb = arange(num)[:, None] * emb[None];
 * emb = cat([cos(emb), sin(emb)], dim=1); odd dim: cat a zero column. */
static void musicgen(int64_t pos, int d, double *row)
{
    int half = d / 2;
    double e = log(10000.0) / (half - 1);
    for (int i = 0; i < half; ++i) {
        double a = (double)pos * exp(i * -e);
        row[i] = cos(a);
        row[half + i] = sin(a);
    }
    if (d % 2)
        row[d - 1] = 0;
}

/* OpenNMT-tf SinusoidalPositionEncoder.encode(positions, depth):
 * log_timescale_increment = log(10000) / (depth / 2 - 1); inv_timescales =
 * exp(range(depth / 2) * -increment); concat([sin, cos], axis=1). */
static void opennmt_tf(int64_t pos, int d, double *row)
{
    double inc = log(10000.0) / (d / 2 - 1);
    for (int i = 0; i < d / 2; ++i) {
        double a = (double)pos * exp(i * -inc);
        row[i] = sin(a);
        row[d / 2 + i] = cos(a);
    }
}

typedef struct preset_case {
    const char *name;
    reference_row reference;
    int64_t first_position; /* the framework's position of a sequence's first token */
    int d;
} preset_case;

/* float32 output within 1e-7 of the transcription; float64 output within
 * float64 rounding of it (positions are small, so libm is good to ~1e-13). */
static void check_preset(const preset_case *pc, clpe_dtype dtype)
{
    clpe_config cfg;
    int64_t first = -99;
    cr_assert_eq(clpe_config_preset(pc->name, (uint32_t)pc->d, &cfg, &first), CLPE_SUCCESS,
                 "preset %s", pc->name);
    cfg.dtype = dtype;
    bool f64 = dtype == CLPE_DTYPE_F64;
    size_t es = f64 ? 8 : 4;
    double tolerance = f64 ? 1e-12 : 1e-7;
    cr_expect_eq(first, pc->first_position, "%s: first position %lld", pc->name, (long long)first);
    clpe_encoder *enc = test_encoder(&cl, &cfg);
    size_t n = 600, d = (size_t)pc->d;
    cl_mem buf = test_buffer_poisoned(&cl, n * d * es, 0xFF);
    clpe_tensor out = {.buffer = buf};
    cr_assert_eq(clpe_enqueue_table(enc, cl.queue, 0, n, &out, 0, NULL, NULL), CLPE_SUCCESS);
    void *got_bytes = test_buffer_read(&cl, buf, n * d * es);
    double *want = malloc(d * sizeof *want);
    double max_err = 0;
    for (size_t p = 0; p < n; ++p) {
        pc->reference((int64_t)p, pc->d, want);
        for (size_t k = 0; k < d; ++k) {
            double value = f64 ? ((double *)got_bytes)[p * d + k] : ((float *)got_bytes)[p * d + k];
            double err = fabs(value - want[k]);
            if (err > max_err)
                max_err = err;
            cr_assert_leq(err, tolerance, "%s d=%d %s: position %zu slot %zu: got %.17g want %.17g",
                          pc->name, pc->d, f64 ? "f64" : "f32", p, k, value, want[k]);
        }
    }
    free(want);
    free(got_bytes);
    clReleaseMemObject(buf);
    clpe_encoder_release(enc);
}

Test(presets, each_matches_its_framework)
{
    const preset_case cases[] = {
        {"vaswani", vaswani, 0, 512},          {"vaswani", vaswani, 0, 6},
        {"tensor2tensor", tensor2tensor, 0, 512}, {"tensor2tensor", tensor2tensor, 0, 33},
        {"fairseq", fairseq, 2, 512},          {"fairseq", fairseq, 2, 31},
        {"marian", marian, 0, 512},            {"marian", marian, 0, 10},
        {"opennmt-tf", opennmt_tf, 1, 512},    {"opennmt-tf", opennmt_tf, 1, 8},
        {"marian", marian, 0, 11},             {"marian", marian, 0, 1},
        {"xlm", xlm, 0, 512},                  {"xlm", xlm, 0, 9},
        {"musicgen", musicgen, 0, 512},        {"musicgen", musicgen, 0, 13},
    };
    bool has_f64 = clpe_device_supports_dtype(cl.device, CLPE_DTYPE_F64);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        check_preset(&cases[k], CLPE_DTYPE_F32);
        if (has_f64)
            check_preset(&cases[k], CLPE_DTYPE_F64);
    }
}

Test(presets, unknown_name_and_names_ignore_case)
{
    clpe_config cfg = clpe_config_default(8);
    clpe_config before = cfg;
    cr_expect_eq(clpe_config_preset("pytorch", 8, &cfg, NULL), CLPE_ERROR_UNKNOWN_PRESET);
    cr_expect_eq(memcmp(&cfg, &before, sizeof cfg), 0, "config changed on error");
    cr_expect_eq(clpe_config_preset("FairSeq", 8, &cfg, NULL), CLPE_SUCCESS);
    cr_expect_eq(cfg.freq, CLPE_FREQ_TENSOR2TENSOR);
    cr_expect_eq(clpe_config_preset(NULL, 8, &cfg, NULL), CLPE_ERROR_NULL_POINTER);
}

/* fairseq utils.make_positions(tensor, padding_idx):
 *   mask = tensor.ne(padding_idx).int()
 *   return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx */
static void make_positions(const int32_t *ids, size_t batch, size_t seq, int32_t padding_idx,
                           int64_t *out)
{
    for (size_t b = 0; b < batch; ++b) {
        int64_t cumsum = 0;
        for (size_t s = 0; s < seq; ++s) {
            int64_t mask = ids[b * seq + s] != padding_idx;
            cumsum += mask;
            out[b * seq + s] = cumsum * mask + padding_idx;
        }
    }
}

Test(presets, pad_positions_equal_fairseq_make_positions)
{
    clpe_config cfg;
    int64_t first;
    cr_assert_eq(clpe_config_preset("fairseq", 16, &cfg, &first), CLPE_SUCCESS);
    clpe_encoder *enc = test_encoder(&cl, &cfg);
    const int32_t pad = 1;
    size_t batch = 9, seq = 41;
    int32_t *ids = malloc(batch * seq * sizeof *ids);
    uint64_t rng = 42;
    for (size_t b = 0; b < batch; ++b) {
        /* left padding on even rows, right padding on odd rows, a few inside */
        size_t npad = test_rand_u64(&rng) % (seq / 2);
        for (size_t s = 0; s < seq; ++s) {
            bool is_pad = b % 2 == 0 ? s < npad : s >= seq - npad;
            if (test_rand_u64(&rng) % 23 == 0)
                is_pad = true;
            ids[b * seq + s] = is_pad ? pad : (int32_t)(2 + test_rand_u64(&rng) % 30000);
        }
    }
    int64_t *want = malloc(batch * seq * sizeof *want);
    make_positions(ids, batch, seq, pad, want);

    cl_mem ibuf = test_buffer_from(&cl, ids, batch * seq * sizeof *ids);
    cl_mem pbuf = test_buffer_poisoned(&cl, batch * seq * 8, 0x77);
    clpe_token_ids tid = {.buffer = ibuf, .offset = 0};
    cr_assert_eq(clpe_enqueue_pad_positions(enc, cl.queue, batch, seq, &tid, pad, first, pad, pbuf,
                                            0, 0, NULL, NULL),
                 CLPE_SUCCESS);
    int64_t *got = test_buffer_read(&cl, pbuf, batch * seq * 8);
    for (size_t k = 0; k < batch * seq; ++k)
        cr_assert_eq(got[k], want[k], "row %zu col %zu: got %lld want %lld", k / seq, k % seq,
                     (long long)got[k], (long long)want[k]);

    /* as the position source of an add: pad rows get PE = 0 (the zero row) */
    size_t d = 16;
    float *x = calloc(batch * seq * d, sizeof *x);
    cl_mem xbuf = test_buffer_from(&cl, x, batch * seq * d * 4);
    clpe_tensor tx = {.buffer = xbuf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    clpe_positions pos = {.source = CLPE_POSITIONS_IDS, .start = 0, .buffer = pbuf, .offset = 0};
    cr_assert_eq(clpe_enqueue_add(enc, cl.queue, batch, seq, &tx, &pos, 0, NULL, NULL),
                 CLPE_SUCCESS);
    float *dev = test_buffer_read(&cl, xbuf, batch * seq * d * 4);
    cr_assert_eq(clpe_host_add(enc, batch, seq, x, 0, 0, CLPE_POSITIONS_IDS, 0, want),
                 CLPE_SUCCESS);
    cr_assert_eq(memcmp(dev, x, batch * seq * d * 4), 0, "add with pad-aware positions");
    for (size_t k = 0; k < batch * seq; ++k)
        if (ids[k] == pad)
            for (size_t j = 0; j < d; ++j)
                cr_assert_eq(dev[k * d + j], 0.0f, "pad token row %zu not zero", k);
    free(dev);
    free(x);
    clReleaseMemObject(xbuf);
    free(got);
    free(want);
    free(ids);
    clReleaseMemObject(pbuf);
    clReleaseMemObject(ibuf);
    clpe_encoder_release(enc);
}
