/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_cli_args.c - libFuzzer target for the CLI's argument parser
 * (host/cli/args.c).
 *
 * The input is split at NUL bytes into argv[1..]; cli_parse must return one
 * of its results, leave a NUL-terminated error line inside the buffer, and
 * give everything back through cli_args_free (LSan checks). The number and
 * --pos parsers get the whole input as one string as well, and an integer
 * they accept must be the decimal value of its digits (leading zeros are not
 * octal, no 0x), checked against a digit-by-digit reading here.
 */
#include "args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, msg)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz_cli_args: %s\n", msg);                                       \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The decimal value of [+-]digits, as an unsigned magnitude; 0 if s is not
 * of that form or the magnitude passes 2^64 - 1. */
static int decimal_reading(const char *s, int *negative, uint64_t *magnitude)
{
    *negative = *s == '-';
    if (*s == '-' || *s == '+')
        ++s;
    if (!*s)
        return 0;
    uint64_t v = 0;
    for (; *s; ++s) {
        if (*s < '0' || *s > '9')
            return 0;
        unsigned digit = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return 0;
        v = v * 10 + digit;
    }
    *magnitude = v;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    /* one exact-size copy, so reading past the end is caught by ASan */
    char *text = malloc(size + 1);
    CHECK(text, "malloc");
    memcpy(text, data, size);
    text[size] = '\0';

    char *argv[66];
    int argc = 0;
    argv[argc++] = "clpe";
    for (size_t k = 0; k <= size && argc < 65;) {
        argv[argc++] = text + k;
        k += strlen(text + k) + 1;
    }
    argv[argc] = NULL;

    /* a small error buffer, with a canary right after it */
    char err[48 + 1];
    err[48] = 'Z';
    cli_args args;
    memset(&args, 0, sizeof args);
    cli_parse_result res = cli_parse(argc, argv, &args, err, 48);
    CHECK(res == CLI_PARSE_OK || res == CLI_PARSE_HELP || res == CLI_PARSE_VERSION ||
              res == CLI_PARSE_USAGE,
          "unknown result");
    CHECK(err[48] == 'Z', "error text overran its buffer");
    if (res == CLI_PARSE_USAGE)
        CHECK(memchr(err, '\0', 48) != NULL, "error text not terminated");
    if (res == CLI_PARSE_OK)
        CHECK(args.n_positions == 0 || args.positions, "positions count without positions");
    if (res == CLI_PARSE_OK && args.command == CLI_CMD_ROPE_CACHE) {
        /* what cmd_rope_cache.c relies on without checking again; with
         * --hf-config the widths come from the config and are checked when it
         * is read, so only the flags' own widths are checked here */
        CHECK(((args.have_seq && args.seq >= 1) || args.positions_file) && args.cos_out &&
                  args.sin_out && strcmp(args.cos_out, args.sin_out) != 0,
              "rope-cache accepted without its required flags");
        if (!args.hf_config) {
            const uint32_t rotary = args.have_rotary_dim ? args.rotary_dim : args.head_dim;
            CHECK(args.have_head_dim, "rope-cache accepted without --head-dim or --hf-config");
            CHECK(rotary >= 2 && rotary % 2 == 0 && rotary <= args.head_dim,
                  "rope-cache accepted a bad rotary width");
        } else {
            CHECK(!args.have_head_dim && !args.have_rotary_dim,
                  "rope-cache took a width from both the flags and --hf-config");
        }
        CHECK(!args.have_start || cli_positions_fit(args.start, args.seq),
              "rope-cache accepted rows past the end of int64");
    }
    cli_args_free(&args);

    int64_t i;
    uint64_t u;
    double dbl;
    int negative = 0;
    uint64_t magnitude = 0;
    const int is_decimal = decimal_reading(text, &negative, &magnitude);
    int rc = cli_parse_i64(text, &i);
    CHECK(rc == CLI_NUM_OK || rc == CLI_NUM_SYNTAX || rc == CLI_NUM_RANGE, "i64");
    if (rc == CLI_NUM_OK)
        CHECK(is_decimal && (negative ? (uint64_t)0 - (uint64_t)i : (uint64_t)i) == magnitude,
              "i64 accepted something other than its decimal value");
    rc = cli_parse_u64(text, &u);
    CHECK(rc == CLI_NUM_OK || rc == CLI_NUM_SYNTAX || rc == CLI_NUM_RANGE, "u64");
    if (rc == CLI_NUM_OK)
        CHECK(is_decimal && !negative && u == magnitude,
              "u64 accepted something other than its decimal value");
    rc = cli_parse_double(text, &dbl);
    CHECK(rc == CLI_NUM_OK || rc == CLI_NUM_SYNTAX || rc == CLI_NUM_RANGE, "double");

    int64_t *pos = NULL;
    size_t count = 0;
    char perr[64];
    if (cli_parse_positions(text, &pos, &count, perr, sizeof perr) == 0) {
        CHECK(pos && count >= 1 && count <= CLI_MAX_POSITIONS, "positions");
        free(pos);
    }
    (void)cli_dtype_from_name(text);
    (void)cli_freq_from_name(text);
    (void)cli_layout_from_name(text);
    (void)cli_pairing_from_name(text);
    (void)cli_scaling_from_name(text);
    free(text);
    return 0;
}
