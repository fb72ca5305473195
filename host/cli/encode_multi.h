/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encode_multi.h - `clpe encode --devices LIST`: the rows of one encode
 * split among several devices in proportion to their measured speed,
 * written into one file whose bytes equal a single device's encode.
 */
#ifndef CLPE_CLI_ENCODE_MULTI_H
#define CLPE_CLI_ENCODE_MULTI_H

#include "cli.h"

#include <stdint.h>

/* The encode of cmd_encode.c (its arguments checked, its .npy header
 * made) on the devices args->devices names: "all", or selectors separated
 * by commas (the same device may be named twice). Prints the split and
 * the times; returns a CLI_EXIT_* status. */
int cli_encode_multi(const cli_args *args, const clpe_config *cfg, int64_t start, uint64_t seq,
                     const char *header, size_t header_len, uint64_t file_bytes);

#endif
