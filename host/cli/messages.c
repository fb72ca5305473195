/* SPDX-License-Identifier: Apache-2.0 */
/*
 * messages.c - the clpe tool's lines on stderr. Every message is one line:
 * whatever a value echoed into it holds (a newline in a file name, a
 * terminal escape in a device name), control characters are written as C
 * escapes (\n, \t, \x1b), so a message can never span lines or drive the
 * terminal.
 */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void put_escaped(const char *s, FILE *f)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
        unsigned char c = *p;
        if (c >= 0x20 && c != 0x7f) {
            fputc(c, f); /* UTF-8 bytes pass, so names stay readable */
        } else if (c == '\n') {
            fputs("\\n", f);
        } else if (c == '\r') {
            fputs("\\r", f);
        } else if (c == '\t') {
            fputs("\\t", f);
        } else {
            fprintf(f, "\\x%02x", c);
        }
    }
}

static void message_line(const char *fmt, va_list ap)
{
    char small[512];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    char *text = small;
    if (n >= (int)sizeof small) {
        /* A long path: format again into a buffer that fits. */
        char *big = malloc((size_t)n + 1);
        if (big) {
            vsnprintf(big, (size_t)n + 1, fmt, again);
            text = big;
        }
    }
    va_end(again);
    fputs("clpe: ", stderr);
    put_escaped(n < 0 ? "(message could not be formatted)" : text, stderr);
    fputc('\n', stderr);
    if (text != small)
        free(text);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message_line(fmt, ap);
    va_end(ap);
}

void cli_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message_line(fmt, ap);
    va_end(ap);
}

void cli_status_error(const char *what, clpe_status status)
{
    cli_error("%s: %s (%d)", what, clpe_status_string(status), (int)status);
}

/* bytes in decimal units with two decimals ("4.19 MB"), or "512 B". */
static void format_bytes(uint64_t bytes, char *out, size_t cap)
{
    static const char *const unit[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
    double b = (double)bytes;
    int u = 0;
    while (b >= 1000.0 && u < 6) {
        b /= 1000.0;
        ++u;
    }
    snprintf(out, cap, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
}

void cli_format_bytes_apart(uint64_t a, uint64_t b, char *a_out, char *b_out, size_t cap)
{
    format_bytes(a, a_out, cap);
    format_bytes(b, b_out, cap);
    if (a != b && strcmp(a_out, b_out) == 0) {
        /* Rounded alike: the exact counts tell them apart. */
        snprintf(a_out, cap, "%llu bytes", (unsigned long long)a);
        snprintf(b_out, cap, "%llu bytes", (unsigned long long)b);
    }
}
