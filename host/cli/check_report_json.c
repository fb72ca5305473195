/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_report_json.c - the --json report of `clpe check`: every device,
 * every dtype, its counts, its worst error and the first failure of each
 * kind.
 */
#include "check.h"

#include "common/json.h"

static void write_tally(FILE *f, const check_tally *t)
{
    fprintf(f, "{\"dtype\": \"%s\", \"verdict\": \"%s\"", cli_dtype_name(t->dtype),
            check_verdict(t));
    if (t->skipped) {
        /* not offered (by the device, or by this library build: the reason
         * says which), so not passed either */
        fprintf(f, ", \"offered\": false, \"reason\": ");
        json_string(f, t->skip_reason);
        fputc('}', f);
        return;
    }
    fprintf(f,
            ", \"paths\": \"%s\", \"elements\": %llu, \"bit_mismatches\": %llu, "
            "\"mpfr_samples\": %llu, \"max_abs_error\": %.6e, \"error_bound\": %.6e, "
            "\"worst_position\": %lld, \"configurations\": %u, \"configurations_not_offered\": %u",
            t->paths, (unsigned long long)t->elements, (unsigned long long)t->mismatches,
            (unsigned long long)t->samples, t->max_err, t->bound, (long long)t->worst_pos,
            (unsigned)t->configurations, (unsigned)t->not_offered);
    fprintf(f,
            ", \"rope_elements\": %llu, \"rope_bit_mismatches\": %llu, "
            "\"rope_exact_samples\": %llu, \"rope_max_error_over_bound\": %.6f",
            (unsigned long long)t->rope_elements, (unsigned long long)t->rope_mismatches,
            (unsigned long long)t->rope_samples, t->rope_max_ratio);
    /* every path selected, with what it compared: a path that ran no case
     * shows 0 elements, never a silent pass */
    fprintf(f, ", \"per_path\": {");
    int first = 1;
    for (int p = 0; p < CHECK_NPATHS; ++p) {
        if (!t->path_selected[p])
            continue;
        fprintf(f, "%s\"%s\": {\"elements\": %llu, \"bit_mismatches\": %llu, \"cases\": %u}",
                first ? "" : ", ", check_path_names[p], (unsigned long long)t->path[p].elements,
                (unsigned long long)t->path[p].mismatches, (unsigned)t->path[p].cases);
        first = 0;
    }
    fputc('}', f);
    if (t->first_mismatch[0]) {
        fprintf(f, ", \"first_mismatch\": ");
        json_string(f, t->first_mismatch);
    }
    if (t->first_over[0]) {
        fprintf(f, ", \"first_over_bound\": ");
        json_string(f, t->first_over);
    }
    if (t->error[0]) {
        fprintf(f, ", \"error\": ");
        json_string(f, t->error);
    }
    fputc('}', f);
}

void check_report_json(FILE *f, const check_device_result *res, size_t n, int quick, int pass,
                       double seconds)
{
    fprintf(f, "{\n  \"clpe_version\": ");
    json_string(f, clpe_version_string());
    fprintf(f, ",\n  \"run\": \"%s\",\n  \"pass\": %s,\n  \"seconds\": %.3f,\n  \"devices\": [",
            quick ? "quick" : "full", pass ? "true" : "false", seconds);
    for (size_t i = 0; i < n; ++i) {
        const check_device_result *d = &res[i];
        fprintf(f, "%s\n    {\"index\": %u, \"name\": ", i ? "," : "", d->index);
        json_string(f, d->name);
        fprintf(f, ", \"platform\": ");
        json_string(f, d->platform);
        if (d->open_error[0]) {
            fprintf(f, ", \"error\": ");
            json_string(f, d->open_error);
            fprintf(f, ", \"results\": []}");
            continue;
        }
        fprintf(f, ", \"results\": [");
        for (int k = 0; k < CHECK_NDTYPES; ++k) {
            fprintf(f, "%s\n      ", k ? "," : "");
            write_tally(f, &d->t[k]);
        }
        fprintf(f, "\n    ]}");
    }
    fprintf(f, "\n  ]\n}\n");
}
