/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.c - the text report of clpe-bench (see report.h).
 */
#include "report.h"

#include <math.h>

void report_start(const device_desc *dd, const options *o, const char *date)
{
    printf("clpe-bench %s, %s\n", clpe_version_string(), date);
    printf("device: %s (%s, %s) on %s\n", dd->name, dd->vendor, device_type_name(dd->type),
           dd->platform);
    printf("        %s, driver %s, %u compute units, %u MHz, %.1f GiB\n", dd->version,
           dd->driver, dd->compute_units, dd->clock_mhz, (double)dd->global_mem / (1u << 30));
    printf("shape:  batch %zu x seq %zu x d %zu (small: seq %zu), vocab %zu; "
           "target %g ms x %d repeats%s\n\n",
           o->batch, o->seq, o->d, options_small_seq(o), o->vocab, o->target_ms, o->repeats,
           o->quick ? " (--quick: a smoke test, not a measurement)" : "");
}

void report_header(void)
{
    printf("%-19s %-5s %-5s %14s %11s %7s %8s %8s  %-22s %6s  %-22s %6s\n", "op", "dtype",
           "size", "batch*seq x d", "us/iter", "spread", "Gelem/s", "GB/s", "limit", "ratio",
           "baseline", "ratio");
}

/* "name/dtype ratio" columns for a comparison, blank when there is none. */
static void print_comparison(const results *res, int other, double ratio)
{
    if (other < 0) {
        printf("  %-22s %6s", "", "");
        return;
    }
    const row *l = &res->rows[other];
    char name[40];
    snprintf(name, sizeof name, "%s/%s", l->op->label, l->dtype);
    if (isnan(ratio))
        printf("  %-22s %6s", name, "-");
    else
        printf("  %-22s %6.3f", name, ratio);
}

void report_row(const results *res, const row *r)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zu", r->batch * r->seq, r->d);
    printf("%-19s %-5s %-5s %14s ", r->op->label, r->dtype, r->size, shape);
    if (r->state != ROW_OK) {
        printf("%s: %s\n", r->state == ROW_SKIPPED ? "skipped" : "FAILED", r->note);
        fflush(stdout);
        return;
    }
    printf("%11.1f %6.1f%% %8.3f %8.2f", r->r.median_s * 1e6, 100 * row_spread(r), row_gelem(r),
           r->bytes / r->r.median_s * 1e-9);
    if (r->limit >= 0 || r->baseline >= 0)
        print_comparison(res, r->limit, r->ratio);
    if (r->baseline >= 0)
        print_comparison(res, r->baseline, r->baseline_ratio);
    printf("%s%s\n", r->note[0] ? "  " : "", r->note);
    fflush(stdout);
}

void report_note(const char *text)
{
    if (text)
        printf("note: %s\n", text);
}

void report_costs_header(size_t rows, size_t d, size_t calls)
{
    printf("\nhost cost of one enqueue call (f32, %zu rows x %zu, %zu calls, wall clock):\n",
           rows, d, calls);
}

void report_cost(const cost_row *c)
{
    printf("  %-16s ", c->op->label);
    if (c->status != CL_SUCCESS)
        printf("%s: %s\n", c->skipped ? "skipped" : "FAILED", clpe_status_string(c->status));
    else
        printf("%8.2f us/call  (min %.2f, max %.2f)\n", c->median_s * 1e6, c->min_s * 1e6,
               c->max_s * 1e6);
    fflush(stdout);
}

void report_headlines(const headline *h, size_t n)
{
    if (n == 0)
        return;
    printf("\nheadline figures and their targets (set for PoCL on the 2-core CPU; the\n"
           "denominator is its family's fastest variant timed with the dtype):\n");
    for (size_t i = 0; i < n; i++) {
        int met = h[i].at_most ? h[i].value <= h[i].target : h[i].value >= h[i].target;
        printf("  %-30s %8.3f   target %s %.2f   %s\n", h[i].what, h[i].value,
               h[i].at_most ? "<=" : ">=", h[i].target, met ? "met" : "missed");
    }
}
