/*
 * signals.c - remove the temporary output file on a terminating signal,
 * keeping inherited SIG_IGN dispositions (see signals.h).
 */
#include "signals.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A handler can reach only static storage; unlinkat is async-signal-safe
 * and needs no path longer than a temporary name. */
static char armed_name[64];
static volatile sig_atomic_t armed_dir_fd = -1;

/* Every signal whose default action ends the process, the crashes too: a
 * driver that aborts (LLVM on a full disk) or faults must not leave the
 * temporary file behind either. */
static const int TERMINATING[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGPIPE, SIGALRM, SIGTERM,
                                  SIGUSR1, SIGUSR2, SIGABRT, SIGSEGV, SIGBUS,  SIGFPE,
                                  SIGILL,  SIGTRAP, SIGSYS};

static void on_terminating_signal(int sig)
{
    int fd = armed_dir_fd;
    if (fd >= 0)
        unlinkat(fd, armed_name, 0);
    /* Die of the same signal, so the parent sees what happened. */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* exit() from inside a driver (LLVM's fatal errors end that way) skips the
 * tool's own clean-up; the temporary file goes all the same. */
static void remove_armed_at_exit(void)
{
    int fd = armed_dir_fd;
    if (fd >= 0)
        unlinkat(fd, armed_name, 0);
}

void cli_signals_init(void)
{
    atexit(remove_armed_at_exit);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_terminating_signal;
    sigemptyset(&sa.sa_mask);
    sigset_t inherited_ignored;
    sigemptyset(&inherited_ignored);
    for (size_t k = 0; k < sizeof TERMINATING / sizeof TERMINATING[0]; ++k) {
        struct sigaction old;
        if (sigaction(TERMINATING[k], NULL, &old) != 0)
            continue;
        /* nohup and background jobs ignore some signals on purpose. */
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) {
            sigaddset(&inherited_ignored, TERMINATING[k]);
            continue;
        }
        /* A handler already there (a sanitizer's, for crashes) stays. */
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue;
        sigaction(TERMINATING[k], &sa, NULL);
    }
    /* Ignored is not enough: an OpenCL compiler built on LLVM installs its
     * own handlers for HUP, INT, TERM... while it builds a kernel, and one
     * arriving then deletes the compiler's files and fails the build.
     * Blocked in every thread (threads inherit the mask), such a signal
     * reaches no handler at all, whoever installs one. */
    sigprocmask(SIG_BLOCK, &inherited_ignored, NULL);
    /* Without this a file-size limit kills the process mid-write and
     * leaves the temporary file; ignored, write() fails with EFBIG. */
    signal(SIGXFSZ, SIG_IGN);
}

void cli_signals_arm(int dir_fd, const char *name)
{
    size_t len = strlen(name);
    if (len >= sizeof armed_name)
        return;
    armed_dir_fd = -1;
    memcpy(armed_name, name, len + 1);
    armed_dir_fd = dir_fd;
}

void cli_signals_disarm(void)
{
    armed_dir_fd = -1;
}
