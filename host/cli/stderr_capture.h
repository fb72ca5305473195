/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stderr_capture.h - holding back what OpenCL drivers print to stderr
 * themselves. A driver's compiler may write its diagnostics straight to
 * the process's stderr ("13 errors generated.") besides the build log the
 * library hands back; the tool speaks in one line of its own, so while a
 * driver builds, stderr goes to a hidden temporary file instead.
 */
#ifndef CLPE_CLI_STDERR_CAPTURE_H
#define CLPE_CLI_STDERR_CAPTURE_H

#include <stddef.h>

/* From now on, what is written to file descriptor 2 goes to a hidden
 * temporary file. Returns 0 if held, -1 if stderr is left as it was (no
 * temporary file could be made). Not nested. */
int cli_stderr_hold(void);

/* Give stderr back. The first line of what was held (NUL-terminated, cut
 * to cap - 1 bytes; empty if nothing) goes to first_line, which may be NULL.
 * Safe to call when nothing is held. If the process exits while stderr is
 * held (a driver's fatal error calls exit), stderr is given back first and
 * that first line printed as the tool's one line. */
void cli_stderr_restore(char *first_line, size_t cap);

#endif
