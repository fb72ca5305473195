/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signals.c - end the process on every terminating signal, removing the
 * armed temporary files first (see signals.h).
 */
#define _GNU_SOURCE /* SIGPWR, SIGSTKFLT, SIGPOLL */
#include "signals.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A handler can reach only static storage; unlinkat is async-signal-safe
 * and needs no path longer than a temporary name. A slot is in use while
 * its descriptor is not -1; the name is written before the descriptor. */
static char armed_name[CLI_SIGNALS_MAX_ARMED][64];
static volatile sig_atomic_t armed_dir_fd[CLI_SIGNALS_MAX_ARMED] = {-1, -1, -1, -1,
                                                                    -1, -1, -1, -1};

/* Held by the main thread across steps a signal must not split; the signal
 * thread takes it before it removes anything and dies. */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;

/* Signals sent to the process from outside: taken by the signal thread. */
static sigset_t waited;

/* Signals raised by the thread that faults (or calls abort): a handler. */
static const int RAISED[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGPIPE, SIGABRT};

/* Every signal whose default action ends the process and which can come
 * from outside (kill, the terminal, a resource limit, a timer). */
static void fill_sent(sigset_t *set)
{
    static const int SENT[] = {
        SIGHUP, SIGINT, SIGQUIT, SIGALRM, SIGTERM, SIGUSR1, SIGUSR2, SIGABRT, SIGXCPU,
        SIGVTALRM, SIGPROF,
#ifdef SIGPOLL
        SIGPOLL,
#endif
#ifdef SIGPWR
        SIGPWR,
#endif
#ifdef SIGSTKFLT
        SIGSTKFLT,
#endif
    };
    sigemptyset(set);
    for (size_t k = 0; k < sizeof SENT / sizeof SENT[0]; ++k)
        sigaddset(set, SENT[k]);
#if defined(SIGRTMIN) && defined(SIGRTMAX)
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig)
        sigaddset(set, sig);
#endif
}

static void remove_armed(void)
{
    for (int k = 0; k < CLI_SIGNALS_MAX_ARMED; ++k) {
        int fd = armed_dir_fd[k];
        if (fd >= 0)
            unlinkat(fd, armed_name[k], 0);
    }
}

/* Die of sig, so the parent sees what happened. */
static void die_of(int sig)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    /* Still alive: another handler took the signal in between. */
    _exit(128 + sig);
}

static void on_raised_signal(int sig)
{
    remove_armed();
    die_of(sig);
}

static void *signal_thread(void *unused)
{
    (void)unused;
    for (;;) {
        int sig = 0;
        if (sigwait(&waited, &sig) != 0)
            continue;
        pthread_mutex_lock(&hold_lock);
        remove_armed();
        die_of(sig);
    }
    return NULL;
}

/* exit() from inside a driver (LLVM's fatal errors end that way) skips the
 * tool's own clean-up; the temporary files go all the same. */
static void remove_armed_at_exit(void)
{
    remove_armed();
}

/* Whether the parent left sig ignored (nohup, a background job). */
static int inherited_ignored(int sig)
{
    struct sigaction old;
    return sigaction(sig, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
           old.sa_handler == SIG_IGN;
}

void cli_signals_init(void)
{
    atexit(remove_armed_at_exit);
    sigset_t sent, blocked;
    fill_sent(&sent);
    sigemptyset(&waited);
    blocked = sent;
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sigismember(&sent, sig) != 1)
            continue;
        /* Ignored signals stay ignored: blocked, and waited for by no one.
         * Blocked rather than only ignored: an OpenCL compiler built on
         * LLVM installs its own handlers for HUP, INT, TERM... while it
         * builds a kernel, and one running then fails the build. */
        if (!inherited_ignored(sig))
            sigaddset(&waited, sig);
    }
    /* Blocked here, before any thread exists: every thread inherits it. */
    pthread_sigmask(SIG_BLOCK, &blocked, NULL);
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, signal_thread, NULL) != 0) {
        /* No thread: the signals go back to handlers. */
        sigset_t unblock = waited;
        pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_raised_signal;
        sigemptyset(&sa.sa_mask);
        for (int sig = 1; sig < NSIG; ++sig)
            if (sigismember(&unblock, sig) == 1)
                sigaction(sig, &sa, NULL);
    }
    pthread_attr_destroy(&attr);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_raised_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < sizeof RAISED / sizeof RAISED[0]; ++k) {
        struct sigaction old;
        if (sigaction(RAISED[k], NULL, &old) != 0)
            continue;
        /* A handler already there (a sanitizer's, for crashes) stays, and
         * an inherited SIG_IGN (of SIGPIPE) too. */
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue;
        sigaction(RAISED[k], &sa, NULL);
    }
    /* Without this a file-size limit kills the process mid-write and
     * leaves the temporary file; ignored, write() fails with EFBIG. */
    signal(SIGXFSZ, SIG_IGN);
}

void cli_signals_ignore_file_size(void)
{
    signal(SIGXFSZ, SIG_IGN);
}

int cli_signals_arm(int dir_fd, const char *name)
{
    size_t len = strlen(name);
    if (len >= sizeof armed_name[0] || dir_fd < 0)
        return -1;
    for (int k = 0; k < CLI_SIGNALS_MAX_ARMED; ++k) {
        if (armed_dir_fd[k] >= 0)
            continue;
        memcpy(armed_name[k], name, len + 1);
        armed_dir_fd[k] = dir_fd;
        return k;
    }
    return -1;
}

void cli_signals_disarm(int slot)
{
    if (slot >= 0 && slot < CLI_SIGNALS_MAX_ARMED)
        armed_dir_fd[slot] = -1;
}

void cli_signals_hold(void)
{
    pthread_mutex_lock(&hold_lock);
}

void cli_signals_release(void)
{
    pthread_mutex_unlock(&hold_lock);
}
