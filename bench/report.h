/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.h - the text report of clpe-bench on stdout: the run's header,
 * one line per measurement as it completes, notes, host costs, headlines.
 */
#ifndef CLPE_BENCH_REPORT_H
#define CLPE_BENCH_REPORT_H

#include "device.h"
#include "headline.h"
#include "results.h"

void report_start(const device_desc *dd, const options *o, const char *date);
void report_header(void);
void report_row(const results *res, const row *r);
void report_note(const char *text);
void report_costs_header(size_t rows, size_t d, size_t calls);
void report_cost(const cost_row *c);
void report_headlines(const headline *h, size_t n);

#endif /* CLPE_BENCH_REPORT_H */
