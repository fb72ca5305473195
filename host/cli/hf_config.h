/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hf_config.h - `clpe rope-cache --hf-config config.json`: the model's
 * config.json as a rotary configuration (the mapping is common/hf_config.c,
 * shared with examples/decoder).
 */
#ifndef CLPE_CLI_HF_CONFIG_H
#define CLPE_CLI_HF_CONFIG_H

#include "common/hf_config.h"

typedef hf_rope cli_hf_rope;

/* Read and map config.json at path. Returns an exit status, after printing
 * why (naming the field) on failure; free with cli_hf_rope_free. */
int cli_hf_config_read(const char *path, cli_hf_rope *out);
void cli_hf_rope_free(cli_hf_rope *r);

#endif
