/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_factors.c - LongRoPE's per-pair factor lists for `clpe rope-cache`,
 * read from text files: rotary_dim / 2 numbers separated by white space or
 * commas, optionally inside one pair of brackets, so the short_factor or
 * long_factor array of a Hugging Face config.json can be pasted as it is.
 */
#include "cli.h"
#include "rope_cache.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Largest factor file read: 32 bytes for each of CLPE_MAX_D / 2 numbers. */
#define FACTOR_FILE_MAX ((size_t)CLPE_MAX_D * 16)

/* The whole file as a NUL-terminated string, or NULL after printing why. */
static char *slurp(const char *path, const char *flag)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("%s: cannot open '%s': %s", flag, path, strerror(errno));
        return NULL;
    }
    size_t cap = 0, len = 0;
    char *text = NULL;
    int failed = 0;
    for (;;) {
        if (len + 1 >= cap) {
            size_t want = cap ? cap * 2 : 4096;
            if (want > FACTOR_FILE_MAX) {
                cli_error("%s: '%s' is larger than %zu bytes", flag, path, FACTOR_FILE_MAX);
                failed = 1;
                break;
            }
            char *grown = realloc(text, want);
            if (!grown) {
                cli_error("%s: out of memory reading '%s'", flag, path);
                failed = 1;
                break;
            }
            text = grown;
            cap = want;
        }
        size_t got = fread(text + len, 1, cap - 1 - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (!failed && ferror(f)) {
        cli_error("%s: cannot read '%s': %s", flag, path, strerror(errno ? errno : EIO));
        failed = 1;
    }
    fclose(f);
    if (failed) {
        free(text);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

/* Parse exactly count positive finite numbers from text into out. */
static int parse_factors(char *text, size_t count, double *out, const char *flag,
                         const char *path)
{
    char *p = text;
    while (isspace((unsigned char)*p))
        ++p;
    int bracket = *p == '[';
    if (bracket)
        ++p;
    size_t n = 0;
    for (;;) {
        while (isspace((unsigned char)*p) || *p == ',')
            ++p;
        if (!*p || (bracket && *p == ']'))
            break;
        char *end = p;
        while (*end && !isspace((unsigned char)*end) && *end != ',' && *end != ']')
            ++end;
        char saved = *end;
        *end = '\0';
        double v = 0;
        if (cli_parse_double(p, &v) != CLI_NUM_OK || !(v > 0)) {
            cli_error("%s: '%s' holds '%.32s', not a positive number (entry %zu)", flag, path,
                      p, n + 1);
            return CLI_EXIT_USAGE;
        }
        *end = saved;
        if (n < count)
            out[n] = v;
        ++n;
        p = end;
    }
    if (bracket) {
        if (*p != ']') {
            cli_error("%s: '%s' opens a list with '[' but never closes it", flag, path);
            return CLI_EXIT_USAGE;
        }
        ++p;
        while (isspace((unsigned char)*p))
            ++p;
    }
    if (*p) {
        cli_error("%s: '%s' has text after its list of factors", flag, path);
        return CLI_EXIT_USAGE;
    }
    if (n != count) {
        cli_error("%s: '%s' holds %zu factors; the rotary width needs %zu (one per pair)", flag,
                  path, n, count);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static int read_one(const char *path, const char *flag, size_t count, double **out)
{
    char *text = slurp(path, flag);
    if (!text)
        return CLI_EXIT_USAGE;
    double *values = malloc(count * sizeof *values);
    int rc = values ? parse_factors(text, count, values, flag, path) : CLI_EXIT_RUNTIME;
    if (!values)
        cli_error("%s: out of memory", flag);
    free(text);
    if (rc != CLI_EXIT_OK) {
        free(values);
        return rc;
    }
    *out = values;
    return CLI_EXIT_OK;
}

int cli_rope_factors_read(const cli_args *a, cli_rope_factors *f)
{
    memset(f, 0, sizeof *f);
    if (!a->short_factor_file && !a->long_factor_file)
        return CLI_EXIT_OK;
    const size_t count = (a->have_rotary_dim ? a->rotary_dim : a->head_dim) / 2;
    int rc = read_one(a->short_factor_file, "--short-factor-file", count, &f->short_factor);
    if (rc == CLI_EXIT_OK)
        rc = read_one(a->long_factor_file, "--long-factor-file", count, &f->long_factor);
    if (rc != CLI_EXIT_OK)
        cli_rope_factors_free(f);
    return rc;
}

void cli_rope_factors_free(cli_rope_factors *f)
{
    free(f->short_factor);
    free(f->long_factor);
    f->short_factor = f->long_factor = NULL;
}
