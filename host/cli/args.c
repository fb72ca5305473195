/* SPDX-License-Identifier: Apache-2.0 */
/*
 * args.c - command-line parsing for the clpe tool (see args.h).
 *
 * One table lists every flag and the commands that accept it, so an
 * unknown flag, a flag given to the wrong command, a missing value and a
 * repeated flag are all caught in one place with one kind of message.
 * Values are checked here as far as they can be without a device; what only
 * the library or the device can decide is left to the commands.
 */
#include "args.h"

#include <clpe.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- numbers ------------------------------------------------------------------ */

/* strto* accept leading spaces and an empty string in odd ways; insist on a
 * plain token. */
static int plain_token(const char *s)
{
    return s && *s && !isspace((unsigned char)*s);
}

int cli_parse_i64(const char *s, int64_t *out)
{
    if (!plain_token(s))
        return CLI_NUM_SYNTAX;
    const char *digits = s + (*s == '-' || *s == '+');
    if (!isdigit((unsigned char)*digits))
        return CLI_NUM_SYNTAX;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10); /* base 10: "010" is ten, not octal eight */
    if (*end)
        return CLI_NUM_SYNTAX;
    if (errno == ERANGE || v < INT64_MIN || v > INT64_MAX)
        return CLI_NUM_RANGE;
    *out = (int64_t)v;
    return CLI_NUM_OK;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
    if (!plain_token(s))
        return CLI_NUM_SYNTAX;
    const char *digits = s + (*s == '+');
    if (*s == '-') {
        /* "-5" is a number, just out of range for a count. */
        return isdigit((unsigned char)s[1]) ? CLI_NUM_RANGE : CLI_NUM_SYNTAX;
    }
    if (!isdigit((unsigned char)*digits))
        return CLI_NUM_SYNTAX;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end)
        return CLI_NUM_SYNTAX;
    if (errno == ERANGE || v > UINT64_MAX)
        return CLI_NUM_RANGE;
    *out = (uint64_t)v;
    return CLI_NUM_OK;
}

int cli_parse_double(const char *s, double *out)
{
    if (!plain_token(s))
        return CLI_NUM_SYNTAX;
    /* strtod also reads hexadecimal ("0x1p4"); numbers here are decimal. */
    if (strpbrk(s, "xX"))
        return CLI_NUM_SYNTAX;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end)
        return CLI_NUM_SYNTAX;
    if (isnan(v))
        return CLI_NUM_SYNTAX;
    if (isinf(v) || (errno == ERANGE && fabs(v) > 1.0))
        return CLI_NUM_RANGE;
    *out = v;
    return CLI_NUM_OK;
}

int cli_positions_fit(int64_t start, uint64_t n)
{
    if (n == 0)
        return 1;
    return (uint64_t)(n - 1) <= (uint64_t)INT64_MAX - (uint64_t)start;
}

/* ---- names -------------------------------------------------------------------- */

static const struct name_value {
    const char *name;
    int value;
} DTYPE_NAMES[] = {
    {"f32", CLPE_DTYPE_F32},     {"float32", CLPE_DTYPE_F32}, {"f16", CLPE_DTYPE_F16},
    {"float16", CLPE_DTYPE_F16}, {"bf16", CLPE_DTYPE_BF16},   {"bfloat16", CLPE_DTYPE_BF16},
    {"f64", CLPE_DTYPE_F64},     {"float64", CLPE_DTYPE_F64},
}, FREQ_NAMES[] = {
    {"paper", CLPE_FREQ_PAPER}, {"t2t", CLPE_FREQ_TENSOR2TENSOR},
    {"tensor2tensor", CLPE_FREQ_TENSOR2TENSOR},
}, LAYOUT_NAMES[] = {
    {"interleaved", CLPE_LAYOUT_INTERLEAVED}, {"split", CLPE_LAYOUT_SPLIT},
    {"cos-first", CLPE_LAYOUT_SPLIT_COS_FIRST},
}, PAIRING_NAMES[] = {
    {"half", CLPE_ROPE_HALF_SPLIT}, {"interleaved", CLPE_ROPE_INTERLEAVED},
}, SCALING_NAMES[] = {
    {"default", CLPE_ROPE_DEFAULT}, {"linear", CLPE_ROPE_LINEAR},
    {"dynamic", CLPE_ROPE_DYNAMIC}, {"yarn", CLPE_ROPE_YARN},
    {"llama3", CLPE_ROPE_LLAMA3}, {"longrope", CLPE_ROPE_LONGROPE},
};

static int lookup(const struct name_value *table, size_t n, const char *s)
{
    for (size_t i = 0; s && i < n; ++i)
        if (strcasecmp(table[i].name, s) == 0)
            return table[i].value;
    return CLI_UNSET;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

int cli_dtype_from_name(const char *s) { return lookup(DTYPE_NAMES, COUNT(DTYPE_NAMES), s); }
int cli_freq_from_name(const char *s) { return lookup(FREQ_NAMES, COUNT(FREQ_NAMES), s); }
int cli_layout_from_name(const char *s) { return lookup(LAYOUT_NAMES, COUNT(LAYOUT_NAMES), s); }
int cli_pairing_from_name(const char *s) { return lookup(PAIRING_NAMES, COUNT(PAIRING_NAMES), s); }
int cli_scaling_from_name(const char *s) { return lookup(SCALING_NAMES, COUNT(SCALING_NAMES), s); }

/* The first spelling a table gives for value, or "?". */
static const char *name_of(const struct name_value *table, size_t n, int value)
{
    for (size_t i = 0; i < n; ++i)
        if (table[i].value == value)
            return table[i].name;
    return "?";
}

const char *cli_pairing_name(int pairing)
{
    return name_of(PAIRING_NAMES, COUNT(PAIRING_NAMES), pairing);
}

const char *cli_scaling_name(int scaling)
{
    return name_of(SCALING_NAMES, COUNT(SCALING_NAMES), scaling);
}

const char *cli_dtype_name(int dtype)
{
    switch (dtype) {
    case CLPE_DTYPE_F32: return "f32";
    case CLPE_DTYPE_F16: return "f16";
    case CLPE_DTYPE_BF16: return "bf16";
    case CLPE_DTYPE_F64: return "f64";
    case CLPE_DTYPE_FP8_E4M3: return "fp8_e4m3";
    case CLPE_DTYPE_FP8_E5M2: return "fp8_e5m2";
    }
    return "?";
}

const char *cli_freq_name(int freq)
{
    return freq == CLPE_FREQ_PAPER ? "paper" : freq == CLPE_FREQ_TENSOR2TENSOR ? "t2t" : "?";
}

const char *cli_layout_name(int layout)
{
    switch (layout) {
    case CLPE_LAYOUT_INTERLEAVED: return "interleaved";
    case CLPE_LAYOUT_SPLIT: return "split";
    case CLPE_LAYOUT_SPLIT_COS_FIRST: return "cos-first";
    }
    return "?";
}

const char *cli_command_name(cli_command cmd)
{
    switch (cmd) {
    case CLI_CMD_DEVICES: return "devices";
    case CLI_CMD_TABLE: return "table";
    case CLI_CMD_ENCODE: return "encode";
    case CLI_CMD_CHECK: return "check";
    case CLI_CMD_PLOT: return "plot";
    case CLI_CMD_ROPE_CACHE: return "rope-cache";
    case CLI_CMD_NONE: break;
    }
    return "";
}

/* ---- errors ------------------------------------------------------------------- */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* A value quoted in a message, cut short, with control characters written
 * as C escapes (\n, \x1b) as every clpe message writes them: one line stays
 * one line. */
static void quote(char *dst, size_t cap, const char *s)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)s;
    for (; p && *p && n < 40; ++p) {
        char esc[8];
        size_t len = 1;
        if (*p >= 0x20 && *p != 0x7f)
            esc[0] = (char)*p;
        else if (*p == '\n')
            len = (size_t)snprintf(esc, sizeof esc, "\\n");
        else if (*p == '\t')
            len = (size_t)snprintf(esc, sizeof esc, "\\t");
        else if (*p == '\r')
            len = (size_t)snprintf(esc, sizeof esc, "\\r");
        else
            len = (size_t)snprintf(esc, sizeof esc, "\\x%02x", *p);
        if (n + len + 4 > cap) /* room for "..." and the NUL */
            break;
        memcpy(dst + n, esc, len);
        n += len;
    }
    if (p && *p && n + 4 <= cap) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = '\0';
}

/* ---- positions ---------------------------------------------------------------- */

static int number_err(int rc, const char *what, const char *tok, char *err, size_t errlen)
{
    char q[64];
    quote(q, sizeof q, tok);
    if (rc == CLI_NUM_RANGE)
        set_err(err, errlen, "%s is out of range: '%s'", what, q);
    else
        set_err(err, errlen, "%s expects an integer, got '%s'", what, q);
    return CLI_PARSE_USAGE;
}

/* One comma-separated item: a position or a range. Appends to *list. */
static int parse_pos_item(const char *item, int64_t **list, size_t *count, size_t *cap,
                          char *err, size_t errlen)
{
    char buf[3][72];
    int parts = 0;
    const char *p = item;
    for (;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (parts == 3 || len >= sizeof buf[0])
            return number_err(CLI_NUM_SYNTAX, "--pos", item, err, errlen);
        memcpy(buf[parts], p, len);
        buf[parts][len] = '\0';
        ++parts;
        if (!colon)
            break;
        p = colon + 1;
    }
    int64_t v[3] = {0, 0, 1};
    for (int k = 0; k < parts; ++k) {
        int rc = cli_parse_i64(buf[k], &v[k]);
        if (rc)
            return number_err(rc, "--pos", buf[k][0] ? buf[k] : item, err, errlen);
    }
    uint64_t n;
    if (parts == 1) {
        n = 1;
        v[1] = v[0];
    } else {
        if (v[2] == 0) {
            set_err(err, errlen, "--pos range step must not be 0, got '%s'", item);
            return CLI_PARSE_USAGE;
        }
        /* Count the elements of range(start, stop, step) without overflow. */
        uint64_t span, step;
        if (v[2] > 0) {
            span = v[1] > v[0] ? (uint64_t)v[1] - (uint64_t)v[0] : 0;
            step = (uint64_t)v[2];
        } else {
            span = v[0] > v[1] ? (uint64_t)v[0] - (uint64_t)v[1] : 0;
            step = (uint64_t)0 - (uint64_t)v[2];
        }
        n = span / step + (span % step != 0);
        if (n == 0) {
            set_err(err, errlen, "--pos range '%s' is empty", item);
            return CLI_PARSE_USAGE;
        }
    }
    if (n > CLI_MAX_POSITIONS - *count) {
        set_err(err, errlen, "--pos lists more than %u positions", CLI_MAX_POSITIONS);
        return CLI_PARSE_USAGE;
    }
    if (*count + n > *cap) {
        size_t want = *cap ? *cap : 16;
        while (want < *count + n)
            want *= 2;
        int64_t *grown = realloc(*list, want * sizeof **list);
        if (!grown) {
            set_err(err, errlen, "out of memory for --pos");
            return CLI_PARSE_USAGE;
        }
        *list = grown;
        *cap = want;
    }
    uint64_t x = (uint64_t)v[0];
    for (uint64_t k = 0; k < n; ++k, x += (uint64_t)v[2])
        (*list)[(*count)++] = (int64_t)x; /* stays inside [start, stop): no wrap */
    return 0;
}

int cli_parse_positions(const char *s, int64_t **out, size_t *count, char *err, size_t errlen)
{
    int64_t *list = NULL;
    size_t n = 0, cap = 0;
    if (!s || !*s) {
        set_err(err, errlen, "--pos expects a list of positions, got ''");
        return CLI_PARSE_USAGE;
    }
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[256];
        if (len == 0 || len >= sizeof item) {
            char q[64];
            quote(q, sizeof q, s);
            set_err(err, errlen, "--pos expects integers separated by commas, got '%s'", q);
            free(list);
            return CLI_PARSE_USAGE;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (parse_pos_item(item, &list, &n, &cap, err, errlen)) {
            free(list);
            return CLI_PARSE_USAGE;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    *out = list;
    *count = n;
    return 0;
}

/* ---- flags -------------------------------------------------------------------- */

enum flag_id {
    F_HELP, F_D, F_POS, F_SEQ, F_START, F_BASE, F_FREQ, F_LAYOUT, F_DTYPE, F_PRESET,
    F_DIGITS, F_DEVICE, F_ALL_DEVICES, F_QUICK, F_JSON, F_OUTPUT, F_CHUNK_ROWS, F_QUIET,
    F_QUERY, F_MEASURE_WRITE, F_PADDING_IDX, F_HEAD_DIM, F_ROTARY_DIM, F_PAIRING, F_SCALING,
    F_FACTOR, F_ORIGINAL_MAX_POSITION, F_LOW_FREQ_FACTOR, F_HIGH_FREQ_FACTOR, F_BETA_FAST,
    F_BETA_SLOW, F_COS_OUT, F_SIN_OUT, F_SHORT_FACTOR_FILE, F_LONG_FACTOR_FILE,
    F_MROPE_SECTION, F_VISION, F_POSITIONS, F_HF_CONFIG, F_VERBOSE, F_PATHS, F_DEVICES, F_COUNT
};

#define C_DEV (1u << CLI_CMD_DEVICES)
#define C_TAB (1u << CLI_CMD_TABLE)
#define C_ENC (1u << CLI_CMD_ENCODE)
#define C_CHK (1u << CLI_CMD_CHECK)
#define C_PLT (1u << CLI_CMD_PLOT)
#define C_ROP (1u << CLI_CMD_ROPE_CACHE)
#define C_ALL (C_DEV | C_TAB | C_ENC | C_CHK | C_PLT | C_ROP)
#define C_CFG (C_TAB | C_ENC | C_PLT)

static const struct flag_spec {
    const char *name;
    const char *alias;
    enum flag_id id;
    unsigned commands;
    int takes_value;
} FLAGS[] = {
    {"--help", "-h", F_HELP, C_ALL, 0},
    {"--d", NULL, F_D, C_CFG, 1},
    {"--pos", NULL, F_POS, C_TAB, 1},
    {"--seq", NULL, F_SEQ, C_ENC | C_PLT | C_ROP, 1},
    {"--start", NULL, F_START, C_ENC | C_PLT | C_ROP, 1},
    {"--base", NULL, F_BASE, C_CFG | C_ROP, 1},
    {"--freq", NULL, F_FREQ, C_CFG, 1},
    {"--layout", NULL, F_LAYOUT, C_CFG, 1},
    {"--dtype", NULL, F_DTYPE, C_CFG | C_ROP, 1},
    {"--preset", NULL, F_PRESET, C_CFG, 1},
    {"--digits", NULL, F_DIGITS, C_TAB, 1},
    {"--device", NULL, F_DEVICE, C_TAB | C_ENC | C_CHK | C_PLT | C_ROP, 1},
    {"--all-devices", NULL, F_ALL_DEVICES, C_CHK, 0},
    {"--quick", NULL, F_QUICK, C_CHK, 0},
    {"--json", NULL, F_JSON, C_CHK | C_DEV, 1},
    {"--paths", NULL, F_PATHS, C_CHK, 1},
    {"--devices", NULL, F_DEVICES, C_ENC, 1},
    {"--verbose", "-v", F_VERBOSE, C_DEV, 0},
    {"--output", "-o", F_OUTPUT, C_ENC | C_PLT, 1},
    {"--chunk-rows", NULL, F_CHUNK_ROWS, C_ENC, 1},
    {"--quiet", "-q", F_QUIET, C_ENC | C_CHK | C_ROP, 0},
    {"--query", NULL, F_QUERY, C_PLT, 1},
    {"--measure-write", NULL, F_MEASURE_WRITE, C_ENC, 0},
    {"--padding-idx", NULL, F_PADDING_IDX, C_CFG, 1},
    {"--head-dim", NULL, F_HEAD_DIM, C_ROP, 1},
    {"--rotary-dim", NULL, F_ROTARY_DIM, C_ROP, 1},
    {"--pairing", NULL, F_PAIRING, C_ROP, 1},
    {"--scaling", NULL, F_SCALING, C_ROP, 1},
    {"--factor", NULL, F_FACTOR, C_ROP, 1},
    {"--original-max-position", NULL, F_ORIGINAL_MAX_POSITION, C_ROP, 1},
    {"--low-freq-factor", NULL, F_LOW_FREQ_FACTOR, C_ROP, 1},
    {"--high-freq-factor", NULL, F_HIGH_FREQ_FACTOR, C_ROP, 1},
    {"--beta-fast", NULL, F_BETA_FAST, C_ROP, 1},
    {"--beta-slow", NULL, F_BETA_SLOW, C_ROP, 1},
    {"--cos-out", NULL, F_COS_OUT, C_ROP, 1},
    {"--sin-out", NULL, F_SIN_OUT, C_ROP, 1},
    {"--short-factor-file", NULL, F_SHORT_FACTOR_FILE, C_ROP, 1},
    {"--long-factor-file", NULL, F_LONG_FACTOR_FILE, C_ROP, 1},
    {"--mrope-section", NULL, F_MROPE_SECTION, C_ROP, 1},
    {"--vision", NULL, F_VISION, C_ROP, 0},
    {"--positions", NULL, F_POSITIONS, C_ROP, 1},
    {"--hf-config", NULL, F_HF_CONFIG, C_ROP, 1},
};

static const struct flag_spec *find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < COUNT(FLAGS); ++i) {
        if (strlen(FLAGS[i].name) == len && strncmp(FLAGS[i].name, name, len) == 0)
            return &FLAGS[i];
        if (FLAGS[i].alias && strlen(FLAGS[i].alias) == len &&
            strncmp(FLAGS[i].alias, name, len) == 0)
            return &FLAGS[i];
    }
    return NULL;
}

static cli_command command_from_name(const char *s)
{
    for (int c = CLI_CMD_DEVICES; c <= CLI_CMD_ROPE_CACHE; ++c)
        if (strcmp(s, cli_command_name((cli_command)c)) == 0)
            return (cli_command)c;
    return CLI_CMD_NONE;
}

/* Parse an unsigned count flag into *out, within [lo, hi]. */
static int flag_u64(const char *flag, const char *val, uint64_t lo, uint64_t hi, uint64_t *out,
                    char *err, size_t errlen)
{
    char q[64];
    quote(q, sizeof q, val);
    uint64_t v = 0;
    int rc = cli_parse_u64(val, &v);
    if (rc == CLI_NUM_SYNTAX) {
        set_err(err, errlen, "%s expects a non-negative integer, got '%s'", flag, q);
        return CLI_PARSE_USAGE;
    }
    if (rc == CLI_NUM_RANGE || v < lo || v > hi) {
        if (lo > 0 && rc == CLI_NUM_OK && v < lo)
            set_err(err, errlen, "%s must be at least %llu, got %s", flag,
                    (unsigned long long)lo, q);
        else
            set_err(err, errlen, "%s must be between %llu and %llu, got %s", flag,
                    (unsigned long long)lo, (unsigned long long)hi, q);
        return CLI_PARSE_USAGE;
    }
    *out = v;
    return 0;
}

static int flag_i64(const char *flag, const char *val, int64_t *out, char *err, size_t errlen)
{
    char q[64];
    quote(q, sizeof q, val);
    int rc = cli_parse_i64(val, out);
    if (rc == CLI_NUM_SYNTAX)
        set_err(err, errlen, "%s expects an integer, got '%s'", flag, q);
    else if (rc == CLI_NUM_RANGE)
        set_err(err, errlen, "%s is out of range (a 64-bit signed integer), got %s", flag, q);
    return rc ? CLI_PARSE_USAGE : 0;
}

/* A positive finite number (a scaling parameter) into *out. */
static int flag_positive(const char *flag, const char *val, double *out, int *have, char *err,
                         size_t errlen)
{
    char q[64];
    quote(q, sizeof q, val);
    int rc = cli_parse_double(val, out);
    if (rc == CLI_NUM_SYNTAX) {
        set_err(err, errlen, "%s expects a number, got '%s'", flag, q);
        return CLI_PARSE_USAGE;
    }
    if (rc == CLI_NUM_RANGE || !(*out > 0.0)) {
        set_err(err, errlen, "%s must be a finite number above 0, got %s", flag, q);
        return CLI_PARSE_USAGE;
    }
    *have = 1;
    return 0;
}

/* --mrope-section: 1 to 4 comma-separated pair counts, as Qwen2-VL's
 * mrope_section ("16,24,24"). */
static int flag_mrope_section(const char *val, cli_args *a, char *err, size_t errlen)
{
    char q[64];
    quote(q, sizeof q, val);
    uint32_t n = 0;
    const char *p = val;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char piece[32];
        uint64_t v = 0;
        if (n == 4 || len == 0 || len >= sizeof piece) {
            set_err(err, errlen, "--mrope-section expects 1 to 4 comma-separated pair counts "
                                 "(16,24,24), got '%s'", q);
            return CLI_PARSE_USAGE;
        }
        memcpy(piece, p, len);
        piece[len] = '\0';
        if (cli_parse_u64(piece, &v) != CLI_NUM_OK || v > CLPE_MAX_D / 2) {
            set_err(err, errlen, "--mrope-section expects pair counts of 0 .. %u, got '%s'",
                    CLPE_MAX_D / 2, q);
            return CLI_PARSE_USAGE;
        }
        a->mrope_section[n++] = (uint32_t)v;
        if (!comma)
            break;
        p = comma + 1;
    }
    a->mrope_streams = n;
    return 0;
}

/* A head width: 2 .. CLPE_MAX_D. */
static int flag_width(const char *flag, const char *val, uint32_t *out, int *have, char *err,
                      size_t errlen)
{
    uint64_t u = 0;
    if (flag_u64(flag, val, 2, CLPE_MAX_D, &u, err, errlen))
        return CLI_PARSE_USAGE;
    *out = (uint32_t)u;
    *have = 1;
    return 0;
}

static int apply_flag(cli_args *a, const struct flag_spec *f, const char *val, char *err,
                      size_t errlen)
{
    char q[64];
    quote(q, sizeof q, val);
    uint64_t u = 0;
    switch (f->id) {
    case F_D: {
        /* Odd widths are an error here, except with a preset that pads them
         * (fairseq); the library decides that case. */
        if (cli_parse_u64(val, &u) == CLI_NUM_SYNTAX) {
            set_err(err, errlen, "--d expects a positive even integer, got '%s'", q);
            return CLI_PARSE_USAGE;
        }
        if (cli_parse_u64(val, &u) == CLI_NUM_RANGE || u > CLPE_MAX_D) {
            set_err(err, errlen, "--d must be at most %u, got %s", (unsigned)CLPE_MAX_D, q);
            return CLI_PARSE_USAGE;
        }
        if (u == 0) {
            set_err(err, errlen, "--d must be positive, got %s", q);
            return CLI_PARSE_USAGE;
        }
        a->d = (uint32_t)u;
        a->have_d = 1;
        return 0;
    }
    case F_POS:
        return cli_parse_positions(val, &a->positions, &a->n_positions, err, errlen);
    case F_SEQ:
        if (cli_parse_u64(val, &u) == CLI_NUM_OK && u == 0) {
            set_err(err, errlen, "--seq must be positive, got %s", q);
            return CLI_PARSE_USAGE;
        }
        a->have_seq = 1;
        return flag_u64("--seq", val, 1, UINT64_MAX, &a->seq, err, errlen);
    case F_START:
        a->have_start = 1;
        return flag_i64("--start", val, &a->start, err, errlen);
    case F_QUERY:
        a->have_query = 1;
        return flag_i64("--query", val, &a->query, err, errlen);
    case F_PADDING_IDX:
        if (flag_i64("--padding-idx", val, &a->padding_idx, err, errlen))
            return CLI_PARSE_USAGE;
        if (a->padding_idx == INT64_MAX) {
            /* The first position, padding_idx + 1, must exist. */
            set_err(err, errlen, "--padding-idx must be below 2^63-1, got %s", q);
            return CLI_PARSE_USAGE;
        }
        a->have_padding_idx = 1;
        return 0;
    case F_BASE: {
        int rc = cli_parse_double(val, &a->base);
        if (rc == CLI_NUM_SYNTAX) {
            set_err(err, errlen, "--base expects a number, got '%s'", q);
            return CLI_PARSE_USAGE;
        }
        if (rc == CLI_NUM_RANGE || !(a->base > 1.0)) {
            set_err(err, errlen, "--base must be a finite number above 1, got %s", q);
            return CLI_PARSE_USAGE;
        }
        a->have_base = 1;
        return 0;
    }
    case F_FREQ:
        a->freq = cli_freq_from_name(val);
        if (a->freq == CLI_UNSET) {
            set_err(err, errlen, "--freq must be paper or t2t, got '%s'", q);
            return CLI_PARSE_USAGE;
        }
        return 0;
    case F_LAYOUT:
        a->layout = cli_layout_from_name(val);
        if (a->layout == CLI_UNSET) {
            set_err(err, errlen, "--layout must be interleaved, split or cos-first, got '%s'", q);
            return CLI_PARSE_USAGE;
        }
        return 0;
    case F_DTYPE:
        a->dtype = cli_dtype_from_name(val);
        if (a->dtype == CLI_UNSET) {
            set_err(err, errlen, "--dtype must be f32, f16, bf16 or f64, got '%s'", q);
            return CLI_PARSE_USAGE;
        }
        return 0;
    case F_PRESET:
        if (!*val) {
            set_err(err, errlen, "--preset expects a name, got ''");
            return CLI_PARSE_USAGE;
        }
        a->preset = val;
        return 0;
    case F_DIGITS:
        if (flag_u64("--digits", val, 0, 17, &u, err, errlen))
            return CLI_PARSE_USAGE;
        a->digits = (int)u;
        return 0;
    case F_DEVICE:
        if (!*val) {
            set_err(err, errlen, "--device expects a selector (index, gpu, cpu or a name), got ''");
            return CLI_PARSE_USAGE;
        }
        a->device = val;
        return 0;
    case F_DEVICES:
        if (!*val) {
            set_err(err, errlen, "--devices expects 'all' or a comma-separated list of devices, got ''");
            return CLI_PARSE_USAGE;
        }
        a->devices = val;
        return 0;
    case F_PATHS:
        if (!*val) {
            set_err(err, errlen, "--paths expects a comma-separated list of paths, got ''");
            return CLI_PARSE_USAGE;
        }
        a->paths = val;
        return 0;
    case F_JSON:
    case F_OUTPUT:
    case F_COS_OUT:
    case F_SIN_OUT:
        if (!*val) {
            set_err(err, errlen, "%s expects a file name, got ''", f->name);
            return CLI_PARSE_USAGE;
        }
        if (f->id == F_JSON)
            a->json = val;
        else if (f->id == F_OUTPUT)
            a->output = val;
        else if (f->id == F_COS_OUT)
            a->cos_out = val;
        else
            a->sin_out = val;
        return 0;
    case F_HEAD_DIM:
        return flag_width("--head-dim", val, &a->head_dim, &a->have_head_dim, err, errlen);
    case F_ROTARY_DIM:
        return flag_width("--rotary-dim", val, &a->rotary_dim, &a->have_rotary_dim, err, errlen);
    case F_PAIRING:
        a->pairing = cli_pairing_from_name(val);
        if (a->pairing == CLI_UNSET) {
            set_err(err, errlen, "--pairing must be half or interleaved, got '%s'", q);
            return CLI_PARSE_USAGE;
        }
        return 0;
    case F_SCALING:
        a->scaling = cli_scaling_from_name(val);
        if (a->scaling == CLI_UNSET) {
            set_err(err, errlen,
                    "--scaling must be default, linear, dynamic, yarn, llama3 or longrope, "
                    "got '%s'", q);
            return CLI_PARSE_USAGE;
        }
        return 0;
    case F_FACTOR:
        if (flag_positive("--factor", val, &a->factor, &a->have_factor, err, errlen))
            return CLI_PARSE_USAGE;
        if (!(a->factor >= 1.0)) {
            set_err(err, errlen, "--factor must be at least 1, got %s", q);
            return CLI_PARSE_USAGE;
        }
        return 0;
    case F_ORIGINAL_MAX_POSITION:
        if (flag_positive("--original-max-position", val, &a->original_max_position,
                          &a->have_original_max_position, err, errlen))
            return CLI_PARSE_USAGE;
        if (!(a->original_max_position >= 1.0)) {
            set_err(err, errlen, "--original-max-position must be at least 1, got %s", q);
            return CLI_PARSE_USAGE;
        }
        return 0;
    case F_LOW_FREQ_FACTOR:
        return flag_positive("--low-freq-factor", val, &a->low_freq_factor,
                             &a->have_low_freq_factor, err, errlen);
    case F_HIGH_FREQ_FACTOR:
        return flag_positive("--high-freq-factor", val, &a->high_freq_factor,
                             &a->have_high_freq_factor, err, errlen);
    case F_BETA_FAST:
        return flag_positive("--beta-fast", val, &a->beta_fast, &a->have_beta_fast, err, errlen);
    case F_BETA_SLOW:
        return flag_positive("--beta-slow", val, &a->beta_slow, &a->have_beta_slow, err, errlen);
    case F_SHORT_FACTOR_FILE:
    case F_LONG_FACTOR_FILE:
    case F_POSITIONS:
    case F_HF_CONFIG:
        if (!*val) {
            set_err(err, errlen, "%s expects a file name, got ''", f->name);
            return CLI_PARSE_USAGE;
        }
        if (f->id == F_SHORT_FACTOR_FILE)
            a->short_factor_file = val;
        else if (f->id == F_LONG_FACTOR_FILE)
            a->long_factor_file = val;
        else if (f->id == F_HF_CONFIG)
            a->hf_config = val;
        else
            a->positions_file = val;
        return 0;
    case F_MROPE_SECTION:
        return flag_mrope_section(val, a, err, errlen);
    case F_VISION: a->vision = 1; return 0;
    case F_CHUNK_ROWS:
        return flag_u64("--chunk-rows", val, 1, UINT64_MAX, &a->chunk_rows, err, errlen);
    case F_ALL_DEVICES: a->all_devices = 1; return 0;
    case F_QUICK: a->quick = 1; return 0;
    case F_QUIET: a->quiet = 1; return 0;
    case F_VERBOSE: a->verbose = 1; return 0;
    case F_MEASURE_WRITE: a->measure_write = 1; return 0;
    case F_HELP:
    case F_COUNT: break;
    }
    return 0;
}

/* rope-cache: LongRoPE's factor files, and the multimodal positions
 * (--positions with --mrope-section or --vision). */
static int rope_factor_files_and_positions(const cli_args *a, int scaling, uint32_t rotary,
                                           char *err, size_t errlen)
{
    const int files = (a->short_factor_file != NULL) + (a->long_factor_file != NULL);
    if (files && scaling != CLPE_ROPE_LONGROPE) {
        set_err(err, errlen, "--short-factor-file and --long-factor-file apply to --scaling "
                             "longrope only");
        return CLI_PARSE_USAGE;
    }
    if (scaling == CLPE_ROPE_LONGROPE && files != 2) {
        set_err(err, errlen, "--scaling longrope needs --short-factor-file and "
                             "--long-factor-file");
        return CLI_PARSE_USAGE;
    }
    const int multimodal = a->mrope_streams || a->vision;
    if (multimodal && !a->positions_file) {
        set_err(err, errlen, "--%s needs --positions FILE (int64 .npy [streams, tokens])",
                a->mrope_streams ? "mrope-section" : "vision");
        return CLI_PARSE_USAGE;
    }
    if (a->positions_file && !multimodal) {
        set_err(err, errlen, "--positions needs --mrope-section (or --vision)");
        return CLI_PARSE_USAGE;
    }
    if (a->positions_file && a->have_start) {
        set_err(err, errlen, "--start does not apply with --positions (the file holds every "
                             "position)");
        return CLI_PARSE_USAGE;
    }
    if (a->mrope_streams) {
        uint64_t sum = 0;
        for (uint32_t j = 0; j < a->mrope_streams; ++j)
            sum += a->mrope_section[j];
        if (sum != rotary / 2) {
            set_err(err, errlen, "--mrope-section gives %llu pairs; the rotary width %u has %u",
                    (unsigned long long)sum, (unsigned)rotary, (unsigned)(rotary / 2));
            return CLI_PARSE_USAGE;
        }
    } else if (a->vision && rotary % 4) {
        set_err(err, errlen, "--vision splits the pairs in two halves: the rotary width must be "
                             "a multiple of 4, got %u", (unsigned)rotary);
        return CLI_PARSE_USAGE;
    }
    return 0;
}

/* rope-cache --hf-config: the model's config.json gives the whole rotary
 * configuration (read when the command runs), so no flag may give a part
 * of it; --dtype, the positions and the outputs are the caller's. */
static int rope_hf_combination(const cli_args *a, char *err, size_t errlen)
{
    const struct {
        int given;
        const char *flag;
    } config_flags[] = {
        {a->have_head_dim, "--head-dim"},
        {a->have_rotary_dim, "--rotary-dim"},
        {a->have_base, "--base"},
        {a->pairing != CLI_UNSET, "--pairing"},
        {a->scaling != CLI_UNSET, "--scaling"},
        {a->have_factor, "--factor"},
        {a->have_original_max_position, "--original-max-position"},
        {a->have_low_freq_factor, "--low-freq-factor"},
        {a->have_high_freq_factor, "--high-freq-factor"},
        {a->have_beta_fast, "--beta-fast"},
        {a->have_beta_slow, "--beta-slow"},
        {a->short_factor_file != NULL, "--short-factor-file"},
        {a->long_factor_file != NULL, "--long-factor-file"},
        {a->mrope_streams != 0, "--mrope-section"},
        {a->vision, "--vision"},
    };
    for (size_t i = 0; i < COUNT(config_flags); ++i)
        if (config_flags[i].given) {
            set_err(err, errlen, "%s cannot be combined with --hf-config (the config gives it)",
                    config_flags[i].flag);
            return CLI_PARSE_USAGE;
        }
    if (strcmp(a->cos_out, a->sin_out) == 0) {
        set_err(err, errlen, "--cos-out and --sin-out name the same file");
        return CLI_PARSE_USAGE;
    }
    return 0;
}

/* rope-cache: what is required, which scaling takes which parameter, and
 * the sizes. The library checks the numbers once more when it builds the
 * frequencies (clpe_rope_create_host), before any file is opened. */
static int rope_combination(cli_args *a, char *err, size_t errlen)
{
    static const struct {
        const char *flag;
        size_t have_offset;
        unsigned scalings; /* bit per clpe_rope_scaling that takes the flag */
        unsigned required; /* bit per clpe_rope_scaling that needs it */
    } PARAMS[] = {
        {"--factor", offsetof(cli_args, have_factor),
         1u << CLPE_ROPE_LINEAR | 1u << CLPE_ROPE_DYNAMIC | 1u << CLPE_ROPE_YARN |
             1u << CLPE_ROPE_LLAMA3 | 1u << CLPE_ROPE_LONGROPE,
         1u << CLPE_ROPE_LINEAR | 1u << CLPE_ROPE_DYNAMIC | 1u << CLPE_ROPE_YARN |
             1u << CLPE_ROPE_LLAMA3 | 1u << CLPE_ROPE_LONGROPE},
        {"--original-max-position", offsetof(cli_args, have_original_max_position),
         1u << CLPE_ROPE_DYNAMIC | 1u << CLPE_ROPE_YARN | 1u << CLPE_ROPE_LLAMA3 |
             1u << CLPE_ROPE_LONGROPE,
         1u << CLPE_ROPE_DYNAMIC | 1u << CLPE_ROPE_YARN | 1u << CLPE_ROPE_LLAMA3 |
             1u << CLPE_ROPE_LONGROPE},
        {"--low-freq-factor", offsetof(cli_args, have_low_freq_factor),
         1u << CLPE_ROPE_LLAMA3, 1u << CLPE_ROPE_LLAMA3},
        {"--high-freq-factor", offsetof(cli_args, have_high_freq_factor),
         1u << CLPE_ROPE_LLAMA3, 1u << CLPE_ROPE_LLAMA3},
        {"--beta-fast", offsetof(cli_args, have_beta_fast), 1u << CLPE_ROPE_YARN, 0},
        {"--beta-slow", offsetof(cli_args, have_beta_slow), 1u << CLPE_ROPE_YARN, 0},
    };
    const char *cmd = cli_command_name(a->command);
    if (!a->have_seq && !a->positions_file) {
        set_err(err, errlen, "%s: --seq is required (or --positions FILE)", cmd);
        return CLI_PARSE_USAGE;
    }
    if (!a->cos_out) { set_err(err, errlen, "%s: --cos-out FILE is required", cmd); return CLI_PARSE_USAGE; }
    if (!a->sin_out) { set_err(err, errlen, "%s: --sin-out FILE is required", cmd); return CLI_PARSE_USAGE; }
    if (a->hf_config)
        return rope_hf_combination(a, err, errlen);
    if (!a->have_head_dim) { set_err(err, errlen, "%s: --head-dim is required", cmd); return CLI_PARSE_USAGE; }
    const uint32_t rotary = a->have_rotary_dim ? a->rotary_dim : a->head_dim;
    if (a->have_rotary_dim && a->rotary_dim > a->head_dim) {
        set_err(err, errlen, "--rotary-dim %u is larger than --head-dim %u",
                (unsigned)a->rotary_dim, (unsigned)a->head_dim);
        return CLI_PARSE_USAGE;
    }
    if (rotary & 1u) {
        set_err(err, errlen, "%s must be even (it rotates pairs), got %u",
                a->have_rotary_dim ? "--rotary-dim" : "--head-dim without --rotary-dim",
                (unsigned)rotary);
        return CLI_PARSE_USAGE;
    }
    const int scaling = a->scaling == CLI_UNSET ? CLPE_ROPE_DEFAULT : a->scaling;
    for (size_t i = 0; i < COUNT(PARAMS); ++i) {
        const int have = *(const int *)((const char *)a + PARAMS[i].have_offset);
        if (have && !(PARAMS[i].scalings & 1u << scaling)) {
            set_err(err, errlen, "%s does not apply to --scaling %s", PARAMS[i].flag,
                    cli_scaling_name(scaling));
            return CLI_PARSE_USAGE;
        }
        if (!have && (PARAMS[i].required & 1u << scaling)) {
            set_err(err, errlen, "--scaling %s needs %s", cli_scaling_name(scaling),
                    PARAMS[i].flag);
            return CLI_PARSE_USAGE;
        }
    }
    if (rope_factor_files_and_positions(a, scaling, rotary, err, errlen))
        return CLI_PARSE_USAGE;
    if (scaling == CLPE_ROPE_LLAMA3 && !(a->high_freq_factor > a->low_freq_factor)) {
        set_err(err, errlen, "--high-freq-factor must be above --low-freq-factor");
        return CLI_PARSE_USAGE;
    }
    if (scaling == CLPE_ROPE_YARN && (a->have_beta_fast || a->have_beta_slow)) {
        const double fast = a->have_beta_fast ? a->beta_fast : 32.0;
        const double slow = a->have_beta_slow ? a->beta_slow : 1.0;
        if (!(fast >= slow)) {
            set_err(err, errlen, "--beta-fast (%g) must be at least --beta-slow (%g)", fast,
                    slow);
            return CLI_PARSE_USAGE;
        }
    }
    size_t esize = dtype_size(a->dtype == CLI_UNSET ? CLPE_DTYPE_F32 : a->dtype);
    if (a->seq > UINT64_MAX / rotary / esize) {
        set_err(err, errlen, "--seq %llu times the rotary width %u is too large (overflows 64 bits)",
                (unsigned long long)a->seq, (unsigned)rotary);
        return CLI_PARSE_USAGE;
    }
    if (strcmp(a->cos_out, a->sin_out) == 0) {
        set_err(err, errlen, "--cos-out and --sin-out name the same file");
        return CLI_PARSE_USAGE;
    }
    return 0;
}

/* Cross-flag rules, once every flag is known. */
static int check_combination(cli_args *a, const unsigned char *seen, char *err, size_t errlen)
{
    const char *cmd = cli_command_name(a->command);
    switch (a->command) {
    case CLI_CMD_TABLE:
        if (!a->have_d) { set_err(err, errlen, "%s: --d is required", cmd); return CLI_PARSE_USAGE; }
        if (!seen[F_POS]) { set_err(err, errlen, "%s: --pos is required", cmd); return CLI_PARSE_USAGE; }
        break;
    case CLI_CMD_ENCODE:
    case CLI_CMD_PLOT:
        if (!a->have_seq) { set_err(err, errlen, "%s: --seq is required", cmd); return CLI_PARSE_USAGE; }
        if (!a->have_d) { set_err(err, errlen, "%s: --d is required", cmd); return CLI_PARSE_USAGE; }
        if (!a->output) { set_err(err, errlen, "%s: -o FILE is required", cmd); return CLI_PARSE_USAGE; }
        if (a->devices && (a->device || a->measure_write)) {
            set_err(err, errlen, "--devices cannot be combined with %s",
                    a->device ? "--device" : "--measure-write");
            return CLI_PARSE_USAGE;
        }
        break;
    case CLI_CMD_CHECK:
        if (a->device && a->all_devices) {
            set_err(err, errlen, "--device and --all-devices cannot be combined");
            return CLI_PARSE_USAGE;
        }
        break;
    case CLI_CMD_ROPE_CACHE:
        if (rope_combination(a, err, errlen))
            return CLI_PARSE_USAGE;
        break;
    case CLI_CMD_DEVICES:
    case CLI_CMD_NONE:
        break;
    }
    if (a->preset && (a->freq != CLI_UNSET || a->layout != CLI_UNSET)) {
        set_err(err, errlen, "--%s cannot be combined with --preset (the preset fixes it)",
                a->freq != CLI_UNSET ? "freq" : "layout");
        return CLI_PARSE_USAGE;
    }
    if (a->have_d && (a->d & 1u) && !a->preset) {
        set_err(err, errlen, "--d must be even, got %u", (unsigned)a->d);
        return CLI_PARSE_USAGE;
    }
    if (a->have_seq && a->have_d) {
        /* The whole [seq, d] array in bytes must be countable. */
        size_t esize = dtype_size(a->dtype == CLI_UNSET ? CLPE_DTYPE_F32 : a->dtype);
        if (a->seq > UINT64_MAX / a->d / esize) {
            set_err(err, errlen, "--seq %llu times --d %u is too large (overflows 64 bits)",
                    (unsigned long long)a->seq, (unsigned)a->d);
            return CLI_PARSE_USAGE;
        }
        if (a->command == CLI_CMD_PLOT && (a->seq > CLI_PLOT_MAX || a->d > CLI_PLOT_MAX)) {
            set_err(err, errlen, "plot: --%s must be at most %u for a picture, got %llu",
                    a->seq > CLI_PLOT_MAX ? "seq" : "d", CLI_PLOT_MAX,
                    a->seq > CLI_PLOT_MAX ? (unsigned long long)a->seq
                                          : (unsigned long long)a->d);
            return CLI_PARSE_USAGE;
        }
    }
    if (a->have_seq && a->have_start && !cli_positions_fit(a->start, a->seq)) {
        set_err(err, errlen, "--start %lld plus --seq %llu passes the largest position 2^63-1",
                (long long)a->start, (unsigned long long)a->seq);
        return CLI_PARSE_USAGE;
    }
    return 0;
}

cli_parse_result cli_parse(int argc, char *const argv[], cli_args *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->freq = a->layout = a->dtype = a->pairing = a->scaling = CLI_UNSET;
    a->digits = 4;
    if (err && errlen)
        err[0] = '\0';
    if (argc < 2 || !argv || !argv[1]) {
        set_err(err, errlen, "no command given (try 'clpe --help')");
        return CLI_PARSE_USAGE;
    }

    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0)
        return CLI_PARSE_HELP;
    if (strcmp(first, "--version") == 0 || strcmp(first, "-V") == 0)
        return CLI_PARSE_VERSION;
    if (strcmp(first, "help") == 0) {
        if (argc > 2 && argv[2]) {
            a->command = command_from_name(argv[2]);
            if (a->command == CLI_CMD_NONE) {
                char q[64];
                quote(q, sizeof q, argv[2]);
                set_err(err, errlen, "unknown command '%s' (try 'clpe --help')", q);
                return CLI_PARSE_USAGE;
            }
        }
        return CLI_PARSE_HELP;
    }
    a->command = command_from_name(first);
    if (a->command == CLI_CMD_NONE) {
        char q[64];
        quote(q, sizeof q, first);
        if (first[0] == '-')
            set_err(err, errlen, "unknown option '%s' before a command (try 'clpe --help')", q);
        else
            set_err(err, errlen, "unknown command '%s' (try 'clpe --help')", q);
        return CLI_PARSE_USAGE;
    }

    unsigned char seen[F_COUNT] = {0};
    const unsigned mask = 1u << a->command;
    for (int i = 2; i < argc && argv[i]; ++i) {
        const char *arg = argv[i];
        char q[64];
        quote(q, sizeof q, arg);
        if (arg[0] != '-' || arg[1] == '\0') {
            set_err(err, errlen, "%s: unexpected argument '%s'", cli_command_name(a->command), q);
            return CLI_PARSE_USAGE;
        }
        /* --flag=value or --flag value */
        const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        const struct flag_spec *f = find_flag(arg, name_len);
        if (!f || !(f->commands & mask)) {
            char name[64];
            quote(name, sizeof name, arg);
            if (eq && name_len < sizeof name)
                name[name_len] = '\0';
            if (f)
                set_err(err, errlen, "%s does not take %s (try 'clpe %s --help')",
                        cli_command_name(a->command), name, cli_command_name(a->command));
            else
                set_err(err, errlen, "%s: unknown flag %s (try 'clpe %s --help')",
                        cli_command_name(a->command), name, cli_command_name(a->command));
            return CLI_PARSE_USAGE;
        }
        if (f->id == F_HELP)
            return CLI_PARSE_HELP;
        if (seen[f->id]) {
            set_err(err, errlen, "%s given more than once", f->name);
            return CLI_PARSE_USAGE;
        }
        seen[f->id] = 1;
        const char *val = NULL;
        if (f->takes_value) {
            if (eq) {
                val = eq + 1;
            } else if (i + 1 < argc && argv[i + 1]) {
                val = argv[++i];
            } else {
                set_err(err, errlen, "%s expects a value", f->name);
                return CLI_PARSE_USAGE;
            }
        } else if (eq) {
            set_err(err, errlen, "%s does not take a value", f->name);
            return CLI_PARSE_USAGE;
        }
        if (apply_flag(a, f, val, err, errlen))
            return CLI_PARSE_USAGE;
    }
    if (check_combination(a, seen, err, errlen))
        return CLI_PARSE_USAGE;
    return CLI_PARSE_OK;
}

void cli_args_free(cli_args *a)
{
    if (!a)
        return;
    free(a->positions);
    a->positions = NULL;
    a->n_positions = 0;
}
