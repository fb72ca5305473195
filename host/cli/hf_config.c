/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hf_config.c - `clpe rope-cache --hf-config`: common/hf_config.c's mapping,
 * its refusals printed as the tool prints errors.
 */
#include "cli.h"
#include "hf_config.h"

#include <stdio.h>

int cli_hf_config_read(const char *path, cli_hf_rope *out)
{
    char name[4200], err[4096 + 4400];
    snprintf(name, sizeof name, "--hf-config %s", path);
    if (hf_rope_read_file(path, name, out, err, sizeof err) != 0) {
        cli_error("%s", err);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

void cli_hf_rope_free(cli_hf_rope *r)
{
    hf_rope_free(r);
}
