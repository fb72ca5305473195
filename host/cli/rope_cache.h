/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_cache.h - what the parts of `clpe rope-cache` share: the rotary
 * configuration the flags describe, LongRoPE's factor lists read from their
 * files, and positions with a position per stream read from a file.
 */
#ifndef CLPE_CLI_ROPE_CACHE_H
#define CLPE_CLI_ROPE_CACHE_H

#include "args.h"
#include "output_file.h"

#include <clpe.h>

/* The clpe_rope_config the flags describe, for rows from position start
 * (cmd_rope_cache.c); its factor lists are left NULL. */
clpe_rope_config cli_rope_config_from_args(const cli_args *a, int64_t start);

/* LongRoPE's short and long factor lists (rotary_dim / 2 each), or NULL
 * when the scaling takes none. */
typedef struct cli_rope_factors {
    double *short_factor;
    double *long_factor;
} cli_rope_factors;

/* Read --short-factor-file and --long-factor-file, if given: each holds
 * rotary_dim / 2 numbers separated by white space or commas, optionally
 * inside one pair of brackets (a JSON array, as in a config.json). Returns
 * an exit status, after printing why on failure. */
int cli_rope_factors_read(const cli_args *a, cli_rope_factors *f);
void cli_rope_factors_free(cli_rope_factors *f);

/* The flags of the two outputs, cos then sin. */
extern const char *const CLI_ROPE_OUTPUT_FLAGS[2];

/* Open --cos-out and --sin-out as a pair (outs[0], outs[1]): both opened,
 * and room for two .npy files of [rows, cols] dtype checked, before any
 * device work. Write cos into outs[0] and sin into outs[1], then finish
 * both with cli_outfile_commit_all (both files or neither). Returns an exit
 * status, after printing why and aborting both on failure. */
int cli_rope_outputs_open(const cli_args *a, uint64_t rows, uint32_t cols, int dtype,
                          cli_outfile *const outs[2]);

/* The positions of --positions FILE (rope_cache_positions.c): int64
 * [streams, tokens] read, checked against the sections and --seq, and held
 * token-first, [tokens, streams]. Returns an exit status, after printing
 * why on failure; free token_first. */
typedef struct cli_rope_positions {
    int64_t *token_first;
    uint64_t tokens;
} cli_rope_positions;
int cli_rope_positions_read(const cli_args *a, cli_rope_positions *out);

/* The multimodal configuration the flags describe for those positions
 * (dynamic NTK and LongRoPE take their largest plus one). */
clpe_mrope_config cli_mrope_config_from_args(const cli_args *a, const cli_rope_factors *fac,
                                             const cli_rope_positions *pos);

#endif
