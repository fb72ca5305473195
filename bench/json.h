/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.h - the JSON file of clpe-bench (schema "clpe-bench/2", documented in
 * bench/RESULTS.md): the device, the parameters, every line, the host costs,
 * the headline ratios and the notes of one run.
 */
#ifndef CLPE_BENCH_JSON_H
#define CLPE_BENCH_JSON_H

#include "device.h"
#include "headline.h"
#include "results.h"

#define BENCH_JSON_SCHEMA "clpe-bench/2"

/* Write the run to path. Returns 0, or -1 after printing one line. */
int json_write(const char *path, const options *o, const device_desc *dd, const char *date,
               const results *res, const headline *heads, size_t n_heads);

#endif /* CLPE_BENCH_JSON_H */
