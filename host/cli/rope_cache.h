/*
 * rope_cache.h - what the parts of `clpe rope-cache` share: the rotary
 * configuration the flags describe, LongRoPE's factor lists read from their
 * files, and the multimodal path (positions from a file).
 */
#ifndef CLPE_CLI_ROPE_CACHE_H
#define CLPE_CLI_ROPE_CACHE_H

#include "args.h"

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

/* `clpe rope-cache --positions FILE`: the multimodal cos/sin cache of every
 * token of the file (cmd_rope_cache_mrope.c). */
int cli_rope_cache_multimodal(const cli_args *a, const cli_rope_factors *f);

#endif
