/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hf_config.h - a model's config.json as a rotary configuration
 * (`clpe rope-cache --hf-config`), mapped as the Python package maps it.
 */
#ifndef CLPE_CLI_HF_CONFIG_H
#define CLPE_CLI_HF_CONFIG_H

#include <clpe.h>

typedef struct cli_hf_rope {
    clpe_rope_config cfg;        /* LongRoPE's factor lists point into the two below */
    double *short_factor;
    double *long_factor;
    uint32_t streams;            /* entries of rope_scaling.mrope_section; 0 without */
    uint32_t section[CLPE_MROPE_MAX_STREAMS];
} cli_hf_rope;

/* Read and map config.json at path. Returns an exit status, after printing
 * why (naming the field) on failure; free with cli_hf_rope_free. */
int cli_hf_config_read(const char *path, cli_hf_rope *out);
void cli_hf_rope_free(cli_hf_rope *r);

#endif
