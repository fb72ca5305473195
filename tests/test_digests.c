/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_digests.c - every output bit pinned: SHA-256 of the output bytes of
 * 30 configurations, on the device in both launch shapes and through the
 * host emulation.
 *
 * The other tests bound the error (against MPFR) and compare the device
 * with the host emulation; both would pass a change that moves bits while
 * staying within the bound, or that moves the device and the emulation
 * together (they share kernels/clpe_phase.h). These digests are the
 * contract that a refactoring keeps every bit: they were taken from the
 * emulation of clpe 1.0.0, whose outputs the MPFR tests had checked.
 *
 * The cases cover every dtype; interleaved, split and cos-first layouts; the
 * presets with odd d, zero columns and padding rows; positions near -2^63,
 * 0, 2^53 and 2^63 - 1 and spread over all of int64; the three position
 * sources; table, add, gather, rotary and the rotary cache; every rotary
 * scaling, both pairings, partial rotary, GQA and the inverse rotation.
 *
 * A change that is meant to move bits updates the table below from what
 * the failing test prints (CLPE_DIGESTS_PRINT=1 prints every digest).
 */
#include "sha256.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum op_kind { OP_TABLE, OP_ADD, OP_GATHER, OP_ROPE, OP_ROPE_CACHE } op_kind;

/* How the positions of a case are made (sources PER_SEQUENCE and IDS). */
typedef enum position_kind {
    POS_NEAR,       /* center + a pseudo-random offset in [0, spread) */
    POS_ANY,        /* pseudo-random over all of int64 */
    POS_FAIRSEQ_PAD /* 2, 3, 4, ... with every fifth token padding (position 1) */
} position_kind;

typedef enum rope_kind {
    ROPE_NONE,
    ROPE_DEFAULT_GQA,
    ROPE_LINEAR,
    ROPE_DYNAMIC_PARTIAL,
    ROPE_YARN,
    ROPE_LLAMA3,
    ROPE_LONGROPE,
    ROPE_FREQUENCIES,
    ROPE_INVERSE_PARTIAL,
    ROPE_CACHE_DEFAULT,
    ROPE_CACHE_LLAMA3
} rope_kind;

typedef struct digest_case {
    const char *name;
    op_kind op;
    /* encoder: a preset by name, else d / freq / layout */
    const char *preset;
    uint32_t d;
    clpe_freq freq;
    clpe_layout layout;
    clpe_dtype dtype;
    double scale;
    rope_kind rope;
    size_t batch, seq;  /* table and rotary cache: seq rows */
    size_t pitch_extra; /* elements of padding after each row (left alone) */
    clpe_position_source source;
    int64_t start;
    position_kind positions;
    int64_t center;
    uint64_t spread;
    const char *digest;
} digest_case;

#define I64_MIN INT64_MIN
#define I64_MAX INT64_MAX
#define P53 ((int64_t)1 << 53)

static digest_case cases[] = {
    /* table */
    {.name = "table f32 paper interleaved d64 from 0",
     .op = OP_TABLE,
     .d = 64,
     .freq = CLPE_FREQ_PAPER,
     .layout = CLPE_LAYOUT_INTERLEAVED,
     .dtype = CLPE_DTYPE_F32,
     .seq = 48,
     .start = 0,
     .digest = "59d5999c1683f99bb3bddfa0c0c525e764ef122c7cc81ef294352473c72fa8ba"},
    {.name = "table f16 t2t split d128 near 2^53",
     .op = OP_TABLE,
     .d = 128,
     .freq = CLPE_FREQ_TENSOR2TENSOR,
     .layout = CLPE_LAYOUT_SPLIT,
     .dtype = CLPE_DTYPE_F16,
     .seq = 48,
     .start = P53 - 24,
     .pitch_extra = 3,
     .digest = "adcfd6820842feb5362fe80a51556f93bf0dd1d7ef66546958703cbfdf99cae7"},
    {.name = "table bf16 cos-first d96 from -2^63",
     .op = OP_TABLE,
     .d = 96,
     .freq = CLPE_FREQ_TENSOR2TENSOR,
     .layout = CLPE_LAYOUT_SPLIT_COS_FIRST,
     .dtype = CLPE_DTYPE_BF16,
     .seq = 48,
     .start = I64_MIN,
     .digest = "139f6fe936c74f9306a03aae50bb14a0aea1575e1f1a95d76484d3c18f813d5a"},
    {.name = "table f64 paper interleaved d64 to 2^63-1",
     .op = OP_TABLE,
     .d = 64,
     .freq = CLPE_FREQ_PAPER,
     .layout = CLPE_LAYOUT_INTERLEAVED,
     .dtype = CLPE_DTYPE_F64,
     .seq = 48,
     .start = I64_MAX - 47,
     .digest = "050cea0f5b3f781cd65b22ca6414dc077b90419d66438ed565469927ea5c4aa2"},
    {.name = "table f32 marian d65 (half pair)",
     .op = OP_TABLE,
     .preset = "marian",
     .d = 65,
     .dtype = CLPE_DTYPE_F32,
     .seq = 40,
     .start = -1000,
     .digest = "a55a439b4dd6bfe672203909ea6184a1a421019c8f78362d41dcca8212e109b4"},
    {.name = "table f32 fairseq d63 (zero column, padding row)",
     .op = OP_TABLE,
     .preset = "fairseq",
     .d = 63,
     .dtype = CLPE_DTYPE_F32,
     .seq = 40,
     .start = 0,
     .pitch_extra = 1,
     .digest = "51c3fb4c5045f098a5c335642630d3dc77e522aa375716be79cb53645b00bf92"},
    {.name = "table f16 xlm d31 from -2^63+1",
     .op = OP_TABLE,
     .preset = "xlm",
     .d = 31,
     .dtype = CLPE_DTYPE_F16,
     .seq = 40,
     .start = I64_MIN + 1,
     .digest = "19eb87af63dc9508a096a034448756364eba69a543e9aba3357a381503b3d52d"},
    /* add */
    {.name = "add f32 split d256 start near 2^53 scale 16",
     .op = OP_ADD,
     .d = 256,
     .freq = CLPE_FREQ_TENSOR2TENSOR,
     .layout = CLPE_LAYOUT_SPLIT,
     .dtype = CLPE_DTYPE_F32,
     .scale = 16.0,
     .batch = 3,
     .seq = 20,
     .source = CLPE_POSITIONS_START,
     .start = P53 - 10,
     .digest = "88d0cec1b5405fbbf5f045829e56efa2ae49d134bfe7935589f665303e9c1e89"},
    {.name = "add f16 interleaved d64 per-sequence near 2^63-1",
     .op = OP_ADD,
     .d = 64,
     .freq = CLPE_FREQ_PAPER,
     .layout = CLPE_LAYOUT_INTERLEAVED,
     .dtype = CLPE_DTYPE_F16,
     .batch = 2,
     .seq = 33,
     .source = CLPE_POSITIONS_PER_SEQUENCE,
     .positions = POS_NEAR,
     .center = I64_MAX - 1000,
     .spread = 900,
     .pitch_extra = 2,
     .digest = "354fc31d46696142aec42a3c468a97d2bf9e5f37c5569f524e468da067adc669"},
    {.name = "add bf16 musicgen d33 ids anywhere",
     .op = OP_ADD,
     .preset = "musicgen",
     .d = 33,
     .dtype = CLPE_DTYPE_BF16,
     .batch = 2,
     .seq = 16,
     .source = CLPE_POSITIONS_IDS,
     .positions = POS_ANY,
     .digest = "3c7863cfb5e9808022a97f05475698828ba8680712cb357d9a25483afcd45e00"},
    {.name = "add f64 xlm d31 ids near -2^63",
     .op = OP_ADD,
     .preset = "xlm",
     .d = 31,
     .dtype = CLPE_DTYPE_F64,
     .batch = 2,
     .seq = 12,
     .source = CLPE_POSITIONS_IDS,
     .positions = POS_NEAR,
     .center = I64_MIN,
     .spread = 5000,
     .digest = "c9dd1866ab090a8333b814c6d74ee3e2822cabc2366a283af007920a36feb199"},
    {.name = "add f32 fairseq d64 pad-aware ids",
     .op = OP_ADD,
     .preset = "fairseq",
     .d = 64,
     .dtype = CLPE_DTYPE_F32,
     .scale = 8.0,
     .batch = 2,
     .seq = 16,
     .source = CLPE_POSITIONS_IDS,
     .positions = POS_FAIRSEQ_PAD,
     .digest = "12f4ece71de611a8c5d9564d9b559efc8e7327881ac46ba36e00b75528fe8a27"},
    {.name = "add f32 cos-first d48 ids near 0",
     .op = OP_ADD,
     .d = 48,
     .freq = CLPE_FREQ_PAPER,
     .layout = CLPE_LAYOUT_SPLIT_COS_FIRST,
     .dtype = CLPE_DTYPE_F32,
     .batch = 2,
     .seq = 24,
     .source = CLPE_POSITIONS_IDS,
     .positions = POS_NEAR,
     .center = -500,
     .spread = 1000,
     .digest = "7db4119e08cfc330aa2f51fc0764f647b5961723c536ca0884b505bac8661c17"},
    /* gather */
    {.name = "gather f32 paper interleaved d128 start 0",
     .op = OP_GATHER,
     .d = 128,
     .freq = CLPE_FREQ_PAPER,
     .layout = CLPE_LAYOUT_INTERLEAVED,
     .dtype = CLPE_DTYPE_F32,
     .scale = 11.3125,
     .batch = 2,
     .seq = 24,
     .source = CLPE_POSITIONS_START,
     .start = 0,
     .digest = "9cebd2ebe60d5a7217f290ed1bd14e985294666a52bd4b101a18f567b403f2b2"},
    {.name = "gather f16 fairseq d64 pad-aware ids",
     .op = OP_GATHER,
     .preset = "fairseq",
     .d = 64,
     .dtype = CLPE_DTYPE_F16,
     .scale = 8.0,
     .batch = 2,
     .seq = 20,
     .source = CLPE_POSITIONS_IDS,
     .positions = POS_FAIRSEQ_PAD,
     .digest = "4de8de028fa3b03e77265d92a174116374b9b6e6f05486208e8098b040bf402d"},
    {.name = "gather bf16 t2t split d96 per-sequence near 2^53",
     .op = OP_GATHER,
     .d = 96,
     .freq = CLPE_FREQ_TENSOR2TENSOR,
     .layout = CLPE_LAYOUT_SPLIT,
     .dtype = CLPE_DTYPE_BF16,
     .batch = 3,
     .seq = 10,
     .source = CLPE_POSITIONS_PER_SEQUENCE,
     .positions = POS_NEAR,
     .center = P53,
     .spread = 100,
     .digest = "b082e5a08accdedc2daa7ebc97f06ce5ba6b274fe45f8591d759f83f4d1756a2"},
    {.name = "gather f64 paper split d32 start near 2^63-1",
     .op = OP_GATHER,
     .d = 32,
     .freq = CLPE_FREQ_PAPER,
     .layout = CLPE_LAYOUT_SPLIT,
     .dtype = CLPE_DTYPE_F64,
     .batch = 2,
     .seq = 12,
     .source = CLPE_POSITIONS_START,
     .start = I64_MAX - 11,
     .digest = "ed80777e20a6f41c77d043269a5700ef2f49a1c618d268081ae1d4d5fe0b4b03"},
    /* rotary */
    {.name = "rope f32 default half-split GQA start 0",
     .op = OP_ROPE,
     .rope = ROPE_DEFAULT_GQA,
     .dtype = CLPE_DTYPE_F32,
     .batch = 2,
     .seq = 17,
     .source = CLPE_POSITIONS_START,
     .start = 0,
     .digest = "b199469a2e035b2dad9781a97d8d10ac6060123575cdfa32af0708ade0497573"},
    {.name = "rope f16 linear interleaved ids anywhere",
     .op = OP_ROPE,
     .rope = ROPE_LINEAR,
     .dtype = CLPE_DTYPE_F16,
     .batch = 2,
     .seq = 9,
     .source = CLPE_POSITIONS_IDS,
     .positions = POS_ANY,
     .digest = "3802fb100bec83a0206a301b661ea2c4142bef36882150e4d27b13d02bfc06c8"},
    {.name = "rope bf16 dynamic half-split partial per-sequence",
     .op = OP_ROPE,
     .rope = ROPE_DYNAMIC_PARTIAL,
     .dtype = CLPE_DTYPE_BF16,
     .batch = 2,
     .seq = 11,
     .source = CLPE_POSITIONS_PER_SEQUENCE,
     .positions = POS_NEAR,
     .center = 90000,
     .spread = 1000,
     .digest = "376a4d61cce1bd9da66ff5cde5621ccef0548575ebc7c0baca0951bf98d9f075"},
    {.name = "rope f32 yarn interleaved start 2^53",
     .op = OP_ROPE,
     .rope = ROPE_YARN,
     .dtype = CLPE_DTYPE_F32,
     .batch = 1,
     .seq = 13,
     .source = CLPE_POSITIONS_START,
     .start = P53,
     .digest = "dccdd7cafe5454379879a9f5688f5bc41652f70d016e065e8aabcea8e1ce3539"},
    {.name = "rope f32 llama3 half-split ids near 2^63-1",
     .op = OP_ROPE,
     .rope = ROPE_LLAMA3,
     .dtype = CLPE_DTYPE_F32,
     .batch = 2,
     .seq = 7,
     .source = CLPE_POSITIONS_IDS,
     .positions = POS_NEAR,
     .center = I64_MAX - 100000,
     .spread = 99000,
     .digest = "f0c245f3b9c5c358097777edffeca6d7dfaeacbc04ac73217d57f82da0c99711"},
    {.name = "rope f32 longrope half-split start near 2^20",
     .op = OP_ROPE,
     .rope = ROPE_LONGROPE,
     .dtype = CLPE_DTYPE_F32,
     .batch = 1,
     .seq = 15,
     .source = CLPE_POSITIONS_START,
     .start = (1 << 20) + 3,
     .digest = "c764f1eb673bf510721c1dc8550b7ae724bf281de108e0ea59a46c58db04d512"},
    {.name = "rope f64 frequencies interleaved start -2^63",
     .op = OP_ROPE,
     .rope = ROPE_FREQUENCIES,
     .dtype = CLPE_DTYPE_F64,
     .batch = 1,
     .seq = 10,
     .source = CLPE_POSITIONS_START,
     .start = I64_MIN,
     .digest = "3c43d089d57427ae5f28d135989a281ea3720f59dc03113372639df43ce47f7a"},
    {.name = "rope bf16 yarn interleaved ids anywhere",
     .op = OP_ROPE,
     .rope = ROPE_YARN,
     .dtype = CLPE_DTYPE_BF16,
     .batch = 1,
     .seq = 12,
     .source = CLPE_POSITIONS_IDS,
     .positions = POS_ANY,
     .digest = "2a41ff1be3334a44b7ac09f928f109318765344a72ab93dcf7a43600cf1d4a5d"},
    {.name = "rope f32 inverse interleaved partial start -7",
     .op = OP_ROPE,
     .rope = ROPE_INVERSE_PARTIAL,
     .dtype = CLPE_DTYPE_F32,
     .batch = 2,
     .seq = 6,
     .source = CLPE_POSITIONS_START,
     .start = -7,
     .digest = "b710c63717cae12f496c3b313a49bb1e1c5654e5994bcea7e01379d546ac3cee"},
    {.name = "rope f16 default half-split GQA per-sequence near -2^63",
     .op = OP_ROPE,
     .rope = ROPE_DEFAULT_GQA,
     .dtype = CLPE_DTYPE_F16,
     .batch = 2,
     .seq = 8,
     .source = CLPE_POSITIONS_PER_SEQUENCE,
     .positions = POS_NEAR,
     .center = I64_MIN,
     .spread = 50,
     .digest = "04df28688d63d3a4bbbe3fea9c4aaa63df439fad723975ab4cad627299abaef4"},
    /* rotary cache */
    {.name = "rope cache f32 default half-split near 2^53",
     .op = OP_ROPE_CACHE,
     .rope = ROPE_CACHE_DEFAULT,
     .dtype = CLPE_DTYPE_F32,
     .seq = 32,
     .start = P53 - 16,
     .pitch_extra = 5,
     .digest = "4069a36e4d32bcc2f001cf2524da5c87e399733b70eb13e088729a8b767ae518"},
    {.name = "rope cache bf16 llama3 interleaved from -100",
     .op = OP_ROPE_CACHE,
     .rope = ROPE_CACHE_LLAMA3,
     .dtype = CLPE_DTYPE_BF16,
     .seq = 32,
     .start = -100,
     .digest = "befd28422af6f293fc21741213830e704dd3a7255d30d395f99242c7feeabde9"},
    {.name = "rope cache f64 default half-split to 2^63-1",
     .op = OP_ROPE_CACHE,
     .rope = ROPE_CACHE_DEFAULT,
     .dtype = CLPE_DTYPE_F64,
     .seq = 16,
     .start = I64_MAX - 15,
     .digest = "9be2eb5a756fde39602b308f182cd357e921ff0648bda9368089f73e0a7ea088"},
};

/* ---- configurations --------------------------------------------------------
 */

static size_t dtype_size(clpe_dtype t)
{
    return t == CLPE_DTYPE_F64 ? 8 : t == CLPE_DTYPE_F32 ? 4 : 2;
}

static clpe_config encoder_config(const digest_case *c)
{
    clpe_config cfg;
    if (c->preset) {
        clpe_status st = clpe_config_preset(c->preset, c->d, &cfg, NULL);
        cr_assert_eq(st, CLPE_SUCCESS, "preset %s: %s", c->preset, clpe_status_string(st));
    } else {
        cfg = test_config(c->d, 10000.0, c->freq, c->layout);
    }
    cfg.dtype = c->dtype;
    if (c->scale != 0.0)
        cfg.scale = c->scale;
    return cfg;
}

static const double longrope_short[16] = {1.0, 1.05, 1.1, 1.2, 1.3, 1.5, 1.7, 2.0,
                                          2.3, 2.7,  3.1, 3.6, 4.2, 4.9, 5.7, 6.6};
static const double longrope_long[16] = {1.0, 1.2,  1.5,  2.0,  2.7,  3.5,  4.5,  6.0,
                                         8.0, 10.5, 14.0, 18.0, 23.0, 29.0, 36.0, 45.0};
static const double given_frequencies[8] = {1.0,    0.5,    0.125,  3.0e-2,
                                            1.0e-3, 7.5e-5, 2.0e-7, 1.0e-9};

static clpe_rope_config rope_config(const digest_case *c)
{
    clpe_rope_config cfg;
    switch (c->rope) {
    case ROPE_DEFAULT_GQA:
    case ROPE_CACHE_DEFAULT:
        cfg = clpe_rope_config_default(64);
        break;
    case ROPE_LINEAR:
        cfg = clpe_rope_config_default(64);
        cfg.pairing = CLPE_ROPE_INTERLEAVED;
        cfg.scaling = CLPE_ROPE_LINEAR;
        cfg.factor = 4.0;
        break;
    case ROPE_DYNAMIC_PARTIAL:
        cfg = clpe_rope_config_default(64);
        cfg.rotary_dim = 32;
        cfg.scaling = CLPE_ROPE_DYNAMIC;
        cfg.factor = 2.0;
        cfg.original_max_position = 2048;
        cfg.seq_len = 100000;
        break;
    case ROPE_YARN:
        cfg = clpe_rope_config_default(64);
        cfg.pairing = CLPE_ROPE_INTERLEAVED;
        cfg.scaling = CLPE_ROPE_YARN;
        cfg.factor = 4.0;
        cfg.original_max_position = 4096;
        break;
    case ROPE_LLAMA3:
    case ROPE_CACHE_LLAMA3:
        cfg = clpe_rope_config_default(128);
        cfg.base = 500000.0;
        cfg.scaling = CLPE_ROPE_LLAMA3;
        cfg.factor = 8.0;
        cfg.original_max_position = 8192;
        cfg.low_freq_factor = 1.0;
        cfg.high_freq_factor = 4.0;
        if (c->rope == ROPE_CACHE_LLAMA3)
            cfg.pairing = CLPE_ROPE_INTERLEAVED;
        break;
    case ROPE_LONGROPE:
        cfg = clpe_rope_config_default(32);
        cfg.scaling = CLPE_ROPE_LONGROPE;
        cfg.factor = 32.0;
        cfg.original_max_position = 4096;
        cfg.seq_len = (1 << 20) + 100;
        cfg.short_factor = longrope_short;
        cfg.long_factor = longrope_long;
        break;
    case ROPE_FREQUENCIES:
        cfg = clpe_rope_config_default(16);
        cfg.pairing = CLPE_ROPE_INTERLEAVED;
        cfg.scaling = CLPE_ROPE_FREQUENCIES;
        cfg.frequencies = given_frequencies;
        break;
    case ROPE_INVERSE_PARTIAL:
        cfg = clpe_rope_config_default(64);
        cfg.rotary_dim = 48;
        cfg.pairing = CLPE_ROPE_INTERLEAVED;
        break;
    default:
        cr_assert_fail("case %s has no rotary configuration", c->name);
    }
    cfg.dtype = c->dtype;
    return cfg;
}

static size_t rope_q_heads(const digest_case *c)
{
    return c->rope == ROPE_DEFAULT_GQA ? 4 : 2;
}
static size_t rope_k_heads(const digest_case *c)
{
    return c->rope == ROPE_DEFAULT_GQA ? 2 : 1;
}
static uint32_t rope_flags(const digest_case *c)
{
    return c->rope == ROPE_INVERSE_PARTIAL ? CLPE_ROPE_INVERSE : 0;
}

/* ---- inputs ----------------------------------------------------------------
 */

/* Finite values of magnitude in [2^-3, 2^2): random sign and mantissa, an
 * exponent from four, written as bit patterns so no conversion is involved
 * (NaN payloads are the device's to choose; see support.h). */
static void fill_finite(void *data, size_t count, clpe_dtype t, uint64_t *rng)
{
    for (size_t k = 0; k < count; ++k) {
        uint64_t r = test_rand_u64(rng);
        uint64_t sign = r & 1, exponent_step = (r >> 1) & 3, mantissa = r >> 3;
        switch (t) {
        case CLPE_DTYPE_FP8_E4M3: /* cache types only: no activations */
        case CLPE_DTYPE_FP8_E5M2: break;
        case CLPE_DTYPE_F64: {
            uint64_t bits =
                sign << 63 | (1020 + exponent_step) << 52 | (mantissa & ((UINT64_C(1) << 52) - 1));
            memcpy((char *)data + 8 * k, &bits, 8);
            break;
        }
        case CLPE_DTYPE_F32: {
            uint32_t bits =
                (uint32_t)(sign << 31 | (124 + exponent_step) << 23 | (mantissa & 0x7FFFFF));
            memcpy((char *)data + 4 * k, &bits, 4);
            break;
        }
        case CLPE_DTYPE_F16: {
            uint16_t bits =
                (uint16_t)(sign << 15 | (12 + exponent_step) << 10 | (mantissa & 0x3FF));
            memcpy((char *)data + 2 * k, &bits, 2);
            break;
        }
        case CLPE_DTYPE_BF16: {
            uint16_t bits = (uint16_t)(sign << 15 | (124 + exponent_step) << 7 | (mantissa & 0x7F));
            memcpy((char *)data + 2 * k, &bits, 2);
            break;
        }
        }
    }
}

/* The int64 positions a case reads from a buffer: batch of them for
 * PER_SEQUENCE, batch * seq for IDS. */
static int64_t *make_positions(const digest_case *c, size_t *count, uint64_t *rng)
{
    *count = c->source == CLPE_POSITIONS_IDS ? c->batch * c->seq : c->batch;
    int64_t *pos = calloc(*count, sizeof *pos);
    cr_assert_not_null(pos);
    for (size_t k = 0; k < *count; ++k) {
        uint64_t r = test_rand_u64(rng);
        switch (c->positions) {
        case POS_NEAR:
            pos[k] = (int64_t)((uint64_t)c->center + r % c->spread);
            break;
        case POS_ANY:
            pos[k] = (int64_t)r;
            break;
        case POS_FAIRSEQ_PAD:
            pos[k] = (k % 5 == 4) ? 1 : (int64_t)(2 + k % c->seq);
            break;
        }
    }
    return pos;
}

/* ---- one case, computed three ways ------------------------------------------
 */

typedef enum run_mode { RUN_HOST, RUN_DEVICE } run_mode;

/* What a case reads and writes, made once so that the host and the device
 * see the same inputs. */
typedef struct case_data {
    size_t elem, row_pitch, out_bytes;
    void *input; /* add: x; gather: embedding; rotary: q then k */
    size_t input_bytes;
    int32_t *ids; /* gather */
    size_t vocab;
    int64_t *positions; /* PER_SEQUENCE and IDS */
    size_t position_count;
    size_t q_bytes; /* rotary: q is the first q_bytes of input */
} case_data;

static void case_data_make(const digest_case *c, case_data *cd)
{
    memset(cd, 0, sizeof *cd);
    uint64_t rng = 0x5eed0000u + (uint64_t)(c - cases);
    cd->elem = dtype_size(c->dtype);
    switch (c->op) {
    case OP_TABLE:
        cd->row_pitch = c->d + c->pitch_extra;
        cd->out_bytes = c->seq * cd->row_pitch * cd->elem;
        break;
    case OP_ADD:
        cd->row_pitch = c->d + c->pitch_extra;
        cd->input_bytes = cd->out_bytes = c->batch * c->seq * cd->row_pitch * cd->elem;
        break;
    case OP_GATHER:
        cd->row_pitch = c->d;
        cd->vocab = 37;
        cd->input_bytes = cd->vocab * c->d * cd->elem;
        cd->out_bytes = c->batch * c->seq * c->d * cd->elem;
        cd->ids = calloc(c->batch * c->seq, sizeof *cd->ids);
        cr_assert_not_null(cd->ids);
        /* ids in [-3, vocab + 3): a few of them bad, whose rows are PE alone */
        for (size_t k = 0; k < c->batch * c->seq; ++k)
            cd->ids[k] = (int32_t)(test_rand_u64(&rng) % (cd->vocab + 6)) - 3;
        break;
    case OP_ROPE: {
        clpe_rope_config rc = rope_config(c);
        size_t token = rc.head_dim * cd->elem;
        cd->q_bytes = c->batch * c->seq * rope_q_heads(c) * token;
        cd->input_bytes = cd->out_bytes = cd->q_bytes + c->batch * c->seq * rope_k_heads(c) * token;
        break;
    }
    case OP_ROPE_CACHE: {
        clpe_rope_config rc = rope_config(c);
        cd->row_pitch = (rc.rotary_dim ? rc.rotary_dim : rc.head_dim) + c->pitch_extra;
        cd->q_bytes = c->seq * cd->row_pitch * cd->elem; /* cos, then sin */
        cd->out_bytes = 2 * cd->q_bytes;
        break;
    }
    }
    if (cd->input_bytes) {
        cd->input = malloc(cd->input_bytes);
        cr_assert_not_null(cd->input);
        fill_finite(cd->input, cd->input_bytes / cd->elem, c->dtype, &rng);
    }
    if (c->op != OP_TABLE && c->op != OP_ROPE_CACHE && c->source != CLPE_POSITIONS_START)
        cd->positions = make_positions(c, &cd->position_count, &rng);
}

static void case_data_free(case_data *cd)
{
    free(cd->input);
    free(cd->ids);
    free(cd->positions);
}

/* Output bytes start as this pattern: bytes a call must leave alone (row
 * padding) are part of the digest too. */
#define POISON 0xA5

static unsigned char *run_host(const digest_case *c, const case_data *cd)
{
    unsigned char *out = malloc(cd->out_bytes);
    cr_assert_not_null(out);
    memset(out, POISON, cd->out_bytes);
    clpe_status st = CLPE_SUCCESS;
    if (c->op == OP_ROPE || c->op == OP_ROPE_CACHE) {
        clpe_rope_config rc = rope_config(c);
        clpe_rope *rope = clpe_rope_create_host(&rc, &st);
        cr_assert_not_null(rope, "%s: clpe_rope_create_host: %s", c->name, clpe_status_string(st));
        if (c->op == OP_ROPE) {
            memcpy(out, cd->input, cd->input_bytes);
            clpe_host_rope_tensor q = {.data = out, .heads = rope_q_heads(c)};
            clpe_host_rope_tensor k = {.data = out + cd->q_bytes, .heads = rope_k_heads(c)};
            st = clpe_host_rope(rope, c->batch, c->seq, &q, &k, c->source, c->start, cd->positions,
                                rope_flags(c));
        } else {
            st =
                clpe_host_rope_cache(rope, c->start, c->seq, out, out + cd->q_bytes, cd->row_pitch);
        }
        clpe_rope_release(rope);
    } else {
        clpe_config cfg = encoder_config(c);
        clpe_encoder *enc = clpe_encoder_create_host(&cfg, &st);
        cr_assert_not_null(enc, "%s: clpe_encoder_create_host: %s", c->name,
                           clpe_status_string(st));
        if (c->op == OP_TABLE) {
            st = clpe_host_table(enc, c->start, c->seq, out, cd->row_pitch);
        } else if (c->op == OP_ADD) {
            memcpy(out, cd->input, cd->input_bytes);
            st = clpe_host_add(enc, c->batch, c->seq, out, cd->row_pitch, 0, c->source, c->start,
                               cd->positions);
        } else {
            size_t bad = 0;
            st = clpe_host_gather(enc, c->batch, c->seq, cd->ids, cd->input, cd->vocab, 0, out, 0,
                                  c->source, c->start, cd->positions, &bad);
            size_t expected_bad = 0;
            for (size_t k = 0; k < c->batch * c->seq; ++k)
                expected_bad += cd->ids[k] < 0 || (size_t)cd->ids[k] >= cd->vocab;
            cr_expect_eq(bad, expected_bad, "%s: host gather counted %zu bad ids, not %zu", c->name,
                         bad, expected_bad);
        }
        clpe_encoder_release(enc);
    }
    cr_assert_eq(st, CLPE_SUCCESS, "%s (host): %s", c->name, clpe_status_string(st));
    return out;
}

static unsigned char *run_device(const digest_case *c, const case_data *cd, const test_cl *t)
{
    cl_mem out_buf = test_buffer_poisoned(t, cd->out_bytes, POISON);
    if (c->op == OP_ADD || c->op == OP_ROPE) {
        cl_int err = clEnqueueWriteBuffer(t->queue, out_buf, CL_TRUE, 0, cd->input_bytes, cd->input,
                                          0, NULL, NULL);
        cr_assert_eq(err, CL_SUCCESS);
    }
    cl_mem pos_buf = NULL;
    clpe_positions positions = {.source = c->source, .start = c->start};
    if (cd->positions) {
        pos_buf = test_buffer_from(t, cd->positions, cd->position_count * sizeof(int64_t));
        positions.buffer = pos_buf;
    }
    clpe_status st = CLPE_SUCCESS;
    if (c->op == OP_ROPE || c->op == OP_ROPE_CACHE) {
        clpe_rope_config rc = rope_config(c);
        clpe_build_log log = {0};
        clpe_rope *rope = clpe_rope_create(t->context, t->device, &rc, &log, &st);
        cr_assert_not_null(rope, "%s: clpe_rope_create: %s", c->name, clpe_status_string(st));
        if (c->op == OP_ROPE) {
            clpe_rope_tensor q = {.buffer = out_buf, .heads = rope_q_heads(c)};
            clpe_rope_tensor k = {
                .buffer = out_buf, .offset = cd->q_bytes, .heads = rope_k_heads(c)};
            st = clpe_enqueue_rope(rope, t->queue, c->batch, c->seq, &q, &k, &positions,
                                   rope_flags(c), 0, NULL, NULL);
        } else {
            /* cos and sin in buffers of their own, copied into place after */
            cl_mem sin_buf = test_buffer_poisoned(t, cd->q_bytes, POISON);
            clpe_tensor cos = {.buffer = out_buf, .row_pitch = cd->row_pitch};
            clpe_tensor sin = {.buffer = sin_buf, .row_pitch = cd->row_pitch};
            st = clpe_enqueue_rope_cache(rope, t->queue, c->start, c->seq, &cos, &sin, 0, NULL,
                                         NULL);
            if (st == CLPE_SUCCESS)
                cr_assert_eq(clEnqueueCopyBuffer(t->queue, sin_buf, out_buf, 0, cd->q_bytes,
                                                 cd->q_bytes, 0, NULL, NULL),
                             CL_SUCCESS);
            cr_assert_eq(clFinish(t->queue), CL_SUCCESS);
            clReleaseMemObject(sin_buf);
        }
        clpe_rope_release(rope);
    } else {
        clpe_config cfg = encoder_config(c);
        clpe_encoder *enc = test_encoder(t, &cfg);
        clpe_tensor out = {.buffer = out_buf, .row_pitch = cd->row_pitch};
        if (c->op == OP_TABLE) {
            st = clpe_enqueue_table(enc, t->queue, c->start, c->seq, &out, 0, NULL, NULL);
        } else if (c->op == OP_ADD) {
            st = clpe_enqueue_add(enc, t->queue, c->batch, c->seq, &out, &positions, 0, NULL, NULL);
        } else {
            cl_mem ids_buf = test_buffer_from(t, cd->ids, c->batch * c->seq * sizeof(int32_t));
            cl_mem emb_buf = test_buffer_from(t, cd->input, cd->input_bytes);
            clpe_token_ids ids = {.buffer = ids_buf};
            clpe_tensor emb = {.buffer = emb_buf};
            st = clpe_enqueue_gather(enc, t->queue, c->batch, c->seq, &ids, &emb, c->dtype,
                                     cd->vocab, &out, &positions, NULL, 0, NULL, NULL);
            cr_assert_eq(clFinish(t->queue), CL_SUCCESS);
            clReleaseMemObject(ids_buf);
            clReleaseMemObject(emb_buf);
        }
        clpe_encoder_release(enc);
    }
    cr_assert_eq(st, CLPE_SUCCESS, "%s (device): %s", c->name, clpe_status_string(st));
    unsigned char *bytes = test_buffer_read(t, out_buf, cd->out_bytes);
    clReleaseMemObject(out_buf);
    if (pos_buf)
        clReleaseMemObject(pos_buf);
    return bytes;
}

/* Pairs per work-item of the device's own launch shape for this case's
 * dtype (the test then sets CLPE_PAIRS_PER_ITEM itself). */
static cl_uint native_pairs_per_item(const test_cl *t, clpe_dtype dtype)
{
    unsetenv("CLPE_PAIRS_PER_ITEM");
    clpe_config cfg = clpe_config_default(8);
    cfg.dtype = dtype;
    clpe_encoder *enc = test_encoder(t, &cfg);
    clpe_launch_info info;
    cr_assert_eq(clpe_encoder_get_launch_info(enc, &info), CLPE_SUCCESS);
    clpe_encoder_release(enc);
    return info.pairs_per_item;
}

static void expect_digest(const digest_case *c, const unsigned char *bytes, size_t size,
                          const char *how)
{
    char hex[65];
    sha256_hex(bytes, size, hex);
    if (getenv("CLPE_DIGESTS_PRINT"))
        fprintf(stderr, "digest %-10s %s  %s\n", how, hex, c->name);
    cr_expect_str_eq(hex, c->digest, "%s, %s: output digest %s, pinned %s", c->name, how, hex,
                     c->digest);
}

static void check_case(const digest_case *c)
{
    case_data cd;
    case_data_make(c, &cd);

    unsigned char *host = run_host(c, &cd);
    expect_digest(c, host, cd.out_bytes, "host");

    test_cl t;
    test_cl_open(&t);
    if (!clpe_device_supports_dtype(t.device, c->dtype)) {
        cr_log_warn("%s: the device lacks this dtype; checked on the host only", c->name);
    } else {
        /* The device's own shape, then one pair per work-item (the GPU
         * shape) where that differs. */
        cl_uint native = native_pairs_per_item(&t, c->dtype);
        for (int one_pair = 0; one_pair <= (native != 1); ++one_pair) {
            if (one_pair)
                setenv("CLPE_PAIRS_PER_ITEM", "1", 1);
            else
                unsetenv("CLPE_PAIRS_PER_ITEM");
            char how[32];
            snprintf(how, sizeof how, "device-%u", one_pair ? 1u : native);
            unsigned char *dev = run_device(c, &cd, &t);
            expect_digest(c, dev, cd.out_bytes, how);
            free(dev);
        }
    }
    test_cl_close(&t);
    free(host);
    case_data_free(&cd);
}

/* One test per case, named by its index in cases[]. */
#define DIGEST_TEST(i)                                                                             \
    Test(digests, case_##i)                                                                        \
    {                                                                                              \
        cr_assert_lt(i, sizeof cases / sizeof cases[0]);                                           \
        check_case(&cases[i]);                                                                     \
    }
DIGEST_TEST(0)
DIGEST_TEST(1)
DIGEST_TEST(2) DIGEST_TEST(3) DIGEST_TEST(4) DIGEST_TEST(5) DIGEST_TEST(6) DIGEST_TEST(7)
    DIGEST_TEST(8) DIGEST_TEST(9) DIGEST_TEST(10) DIGEST_TEST(11) DIGEST_TEST(12) DIGEST_TEST(13)
        DIGEST_TEST(14) DIGEST_TEST(15) DIGEST_TEST(16) DIGEST_TEST(17) DIGEST_TEST(18)
            DIGEST_TEST(19) DIGEST_TEST(20) DIGEST_TEST(21) DIGEST_TEST(22) DIGEST_TEST(23)
                DIGEST_TEST(24) DIGEST_TEST(25) DIGEST_TEST(26) DIGEST_TEST(27) DIGEST_TEST(28)
                    DIGEST_TEST(29)

    /* Every case above has its test. */
    Test(digests, every_case_has_a_test)
{
    cr_expect_eq(sizeof cases / sizeof cases[0], 30, "add a DIGEST_TEST line per new case");
}

/* The hash itself, against FIPS 180-4's examples. */
Test(digests, sha256_known_answers)
{
    char hex[65];
    sha256_hex("", 0, hex);
    cr_expect_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hex("abc", 3, hex);
    cr_expect_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(two_blocks, strlen(two_blocks), hex);
    cr_expect_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
