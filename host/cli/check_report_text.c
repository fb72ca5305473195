/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_report_text.c - what `clpe check` prints: one table row per device
 * and dtype, one line per kind of failure, and the verdict.
 */
#include "check.h"

static void print_table(const check_device_result *res, size_t n)
{
    printf("%-3s %-34s %-5s %12s %10s %11s %10s  %s\n", "#", "device", "dtype", "elements",
           "mismatches", "max |error|", "bound", "verdict");
    for (size_t i = 0; i < n; ++i) {
        const check_device_result *d = &res[i];
        char name[35];
        snprintf(name, sizeof name, "%s", d->name);
        if (d->open_error[0]) {
            printf("%-3u %-34s %-5s %12s %10s %11s %10s  FAIL (%s)\n", d->index, name, "-", "-",
                   "-", "-", "-", d->open_error);
            continue;
        }
        for (int k = 0; k < CHECK_NDTYPES; ++k) {
            const check_tally *t = &d->t[k];
            const char *nm = k == 0 ? name : "";
            char idxs[8] = "";
            if (k == 0)
                snprintf(idxs, sizeof idxs, "%u", d->index);
            if (t->skipped) {
                printf("%-3s %-34s %-5s %12s %10s %11s %10s  skipped (%s)\n", idxs, nm,
                       cli_dtype_name(t->dtype), "-", "-", "-", "-", t->skip_reason);
                continue;
            }
            printf("%-3s %-34s %-5s %12llu %10llu %11.3e %10.3e  %s\n", idxs, nm,
                   cli_dtype_name(t->dtype), (unsigned long long)t->elements,
                   (unsigned long long)t->mismatches, t->max_err, t->bound, check_verdict(t));
        }
    }
}

/* The rotary paths of each dtype: their share of the counts above, and
 * the float32 error against the exact rotation in units of its bound. */
static void print_rope(const check_device_result *res, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        if (res[i].open_error[0])
            continue;
        for (int k = 0; k < CHECK_NDTYPES; ++k) {
            const check_tally *t = &res[i].t[k];
            if (t->skipped || !t->rope_elements)
                continue;
            printf("rope on device %u %-4s: %llu elements, %llu mismatches", res[i].index,
                   cli_dtype_name(t->dtype), (unsigned long long)t->rope_elements,
                   (unsigned long long)t->rope_mismatches);
            if (t->rope_samples)
                printf(", max |error| %.3f x 2^-22 hypot(a, b) over %llu exact rotations",
                       t->rope_max_ratio, (unsigned long long)t->rope_samples);
            putchar('\n');
        }
    }
}

/* One line per device and path: elements compared and mismatches per
 * dtype ("-" where the dtype did not run). */
static void print_paths(const check_device_result *res, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        if (res[i].open_error[0])
            continue;
        for (int p = 0; p < CHECK_NPATHS; ++p) {
            int selected = 0;
            for (int k = 0; k < CHECK_NDTYPES; ++k)
                selected |= res[i].t[k].path_selected[p];
            if (!selected)
                continue;
            printf("path %-16s device %u:", check_path_names[p], res[i].index);
            for (int k = 0; k < CHECK_NDTYPES; ++k) {
                const check_tally *t = &res[i].t[k];
                if (t->skipped)
                    printf("  %s -", cli_dtype_name(t->dtype));
                else
                    printf("  %s %llu/%llu", cli_dtype_name(t->dtype),
                           (unsigned long long)t->path[p].mismatches,
                           (unsigned long long)t->path[p].elements);
            }
            putchar('\n');
        }
    }
}

/* Why anything failed, one line each. */
static void print_failures(const check_device_result *res, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        for (int k = 0; k < CHECK_NDTYPES; ++k) {
            const check_tally *t = &res[i].t[k];
            if (res[i].open_error[0] || t->skipped)
                continue;
            if (t->error[0])
                printf("error on device %u: %s\n", res[i].index, t->error);
            if (t->first_mismatch[0])
                printf("mismatch on device %u: %s (%llu element%s)\n", res[i].index,
                       t->first_mismatch, (unsigned long long)t->mismatches,
                       t->mismatches == 1 ? " differs" : "s differ");
            if (t->over_bound)
                printf("error bound exceeded on device %u: %s (%llu sample%s)\n",
                       res[i].index, t->first_over, (unsigned long long)t->over_bound,
                       t->over_bound == 1 ? "" : "s");
        }
    }
}

void check_report_text(const check_device_result *res, size_t n, int all_pass, double seconds)
{
    print_table(res, n);
    print_rope(res, n);
    print_paths(res, n);
    print_failures(res, n);
    const char *paths = n && !res[0].open_error[0] ? res[0].t[0].paths : "table add";
    printf("%s: %zu device%s, paths %s, %.1f s\n", all_pass ? "PASS" : "FAIL", n,
           n == 1 ? "" : "s", paths, seconds);
}
