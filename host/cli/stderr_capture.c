/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stderr_capture.c - stderr held in a hidden file while a driver builds
 * (see stderr_capture.h).
 */
#include "stderr_capture.h"

#include "cli.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int saved_fd = -1;   /* the real stderr while held */
static FILE *held;          /* where stderr goes while held */

/* A driver that gives up calls exit() mid-build: the user must still see
 * why, as one line. */
static void restore_at_exit(void)
{
    if (saved_fd < 0)
        return;
    char line[240];
    cli_stderr_restore(line, sizeof line);
    cli_error("the OpenCL driver ended the process while building kernels%s%s",
              line[0] ? ": " : "", line);
}

int cli_stderr_hold(void)
{
    static int registered;
    if (saved_fd >= 0)
        return -1;
    if (!registered) {
        atexit(restore_at_exit);
        registered = 1;
    }
    held = tmpfile();
    if (!held)
        return -1;
    fflush(stderr);
    saved_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (saved_fd < 0 || dup2(fileno(held), STDERR_FILENO) < 0) {
        if (saved_fd >= 0)
            close(saved_fd);
        saved_fd = -1;
        fclose(held);
        held = NULL;
        return -1;
    }
    return 0;
}

void cli_stderr_restore(char *first_line, size_t cap)
{
    if (first_line && cap)
        first_line[0] = '\0';
    if (saved_fd < 0)
        return;
    fflush(stderr);
    dup2(saved_fd, STDERR_FILENO);
    close(saved_fd);
    saved_fd = -1;
    if (first_line && cap > 1 && fseek(held, 0, SEEK_SET) == 0) {
        /* The first line that says something. */
        while (fgets(first_line, (int)cap, held)) {
            first_line[strcspn(first_line, "\r\n")] = '\0';
            if (first_line[strspn(first_line, " \t")])
                break;
            first_line[0] = '\0';
        }
    }
    fclose(held);
    held = NULL;
}
