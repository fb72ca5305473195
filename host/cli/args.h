/* SPDX-License-Identifier: Apache-2.0 */
/*
 * args.h - command-line parsing for the clpe tool.
 *
 * Pure functions: no OpenCL, no global state, no printing and never exit().
 * Every function reports through its return value and an error buffer, so
 * the tool, its tests and the fuzz targets can all call them directly.
 */
#ifndef CLPE_CLI_ARGS_H
#define CLPE_CLI_ARGS_H

#include "common/dtype.h" /* dtype_size: bytes per element */

#include <stddef.h>
#include <stdint.h>

/* What cli_parse concluded. */
typedef enum cli_parse_result {
    CLI_PARSE_OK = 0,      /* run args->command */
    CLI_PARSE_HELP = 1,    /* print help for args->command (CLI_CMD_NONE: general help) */
    CLI_PARSE_VERSION = 3, /* print the version */
    CLI_PARSE_USAGE = 2    /* bad command line; the error buffer says why */
} cli_parse_result;

typedef enum cli_command {
    CLI_CMD_NONE = 0,
    CLI_CMD_DEVICES,
    CLI_CMD_TABLE,
    CLI_CMD_ENCODE,
    CLI_CMD_CHECK,
    CLI_CMD_PLOT,
    CLI_CMD_ROPE_CACHE
} cli_command;

/* Unset enumerations (freq, layout, dtype, pairing, scaling) hold -1. */
#define CLI_UNSET (-1)

/* Most positions one --pos list may expand to. */
#define CLI_MAX_POSITIONS 1000000u
/* Largest --seq and --d accepted by plot (the picture has finite pixels). */
#define CLI_PLOT_MAX 4096u

typedef struct cli_args {
    cli_command command;
    int have_d;
    uint32_t d;
    int have_seq;
    uint64_t seq;
    int have_start;
    int64_t start;
    int have_base;
    double base;
    int freq;               /* clpe_freq or CLI_UNSET */
    int layout;             /* clpe_layout or CLI_UNSET */
    int dtype;              /* clpe_dtype or CLI_UNSET */
    const char *preset;     /* points into argv; NULL if not given */
    int digits;             /* table: decimals printed (default 4) */
    const char *device;     /* --device selector; NULL if not given */
    int all_devices;
    int quick;
    const char *json;       /* check, devices: --json FILE */
    const char *paths;      /* check: --paths LIST (names of check.h's CHECK_PATHS) */
    const char *devices;    /* encode: --devices all|SEL,SEL,... */
    int verbose;            /* devices: the tuning row of each device */
    const char *output;     /* -o FILE */
    uint64_t chunk_rows;    /* encode: rows per chunk; 0 = automatic */
    int measure_write;      /* encode: also time plain writes of the same bytes */
    int have_padding_idx;
    int64_t padding_idx;    /* --padding-idx: zero row here, first position + 1 */
    int quiet;
    int have_query;
    int64_t query;          /* plot: the position compared with every other */
    int64_t *positions;     /* table --pos, malloc'd; free with cli_args_free */
    size_t n_positions;
    /* rope-cache: the rotary configuration (clpe_rope_config's fields) */
    int have_head_dim;
    uint32_t head_dim;
    int have_rotary_dim;
    uint32_t rotary_dim;
    int pairing;            /* clpe_rope_pairing or CLI_UNSET */
    int scaling;            /* clpe_rope_scaling or CLI_UNSET */
    int have_factor;
    double factor;
    int have_original_max_position;
    double original_max_position;
    int have_low_freq_factor;
    double low_freq_factor;
    int have_high_freq_factor;
    double high_freq_factor;
    int have_beta_fast;
    double beta_fast;
    int have_beta_slow;
    double beta_slow;
    const char *cos_out;    /* --cos-out FILE */
    const char *sin_out;    /* --sin-out FILE */
    /* rope-cache: LongRoPE's factor lists, and multimodal positions */
    const char *short_factor_file; /* --short-factor-file FILE */
    const char *long_factor_file;  /* --long-factor-file FILE */
    uint32_t mrope_streams;        /* entries of --mrope-section; 0 if not given */
    uint32_t mrope_section[4];     /* pairs of each position stream */
    int vision;                    /* --vision: a frequency ladder per stream */
    const char *positions_file;    /* --positions FILE: int64 .npy [streams, tokens] */
    const char *hf_config;         /* --hf-config FILE: a model's config.json */
} cli_args;

/* Parse argv[1..argc). On CLI_PARSE_USAGE, err receives one line (no
 * "clpe: " prefix, no newline) naming the flag or value and why. *args must
 * be released with cli_args_free whatever the result. */
cli_parse_result cli_parse(int argc, char *const argv[], cli_args *args, char *err,
                           size_t errlen);
void cli_args_free(cli_args *args);

/* The spelling of a command on the command line ("table"), or "" for none. */
const char *cli_command_name(cli_command cmd);

/* Number parsers: 0 on success, CLI_NUM_SYNTAX if s is not a number of
 * that kind (empty, trailing junk, spaces, hexadecimal), CLI_NUM_RANGE if
 * it does not fit. Every number is decimal: leading zeros are ignored
 * ("010" is ten, "08" is eight), never octal; "0x10" and hexadecimal
 * floating point are refused. */
enum { CLI_NUM_OK = 0, CLI_NUM_SYNTAX = 1, CLI_NUM_RANGE = 2 };
int cli_parse_i64(const char *s, int64_t *out);
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_double(const char *s, double *out);

/* Parse a --pos list: comma-separated integers and ranges START:STOP or
 * START:STOP:STEP (STOP excluded, as in Python). On success *out is a
 * malloc'd array of *count positions (at least one). Returns 0 or writes a
 * reason to err and returns CLI_PARSE_USAGE. */
int cli_parse_positions(const char *s, int64_t **out, size_t *count, char *err,
                        size_t errlen);

/* Names of the enumerations, both ways. Parsers return CLI_UNSET for an
 * unknown name; the name functions return "?" for an unknown value. */
int cli_dtype_from_name(const char *s);
int cli_freq_from_name(const char *s);
int cli_layout_from_name(const char *s);
const char *cli_dtype_name(int dtype);
const char *cli_freq_name(int freq);
const char *cli_layout_name(int layout);
int cli_pairing_from_name(const char *s);
int cli_scaling_from_name(const char *s);
const char *cli_pairing_name(int pairing);
const char *cli_scaling_name(int scaling);

/* Rows start .. start + n - 1 must all be valid int64 positions (n >= 1). */
int cli_positions_fit(int64_t start, uint64_t n);

#endif
