/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signals.h - the clpe tool's signal dispositions: every signal whose
 * default action ends the process still ends it, whatever handlers an
 * OpenCL driver installs later; named temporary output files are removed
 * first; signals the parent ignored stay ignored; and a file-size limit
 * turns into a write error (EFBIG) instead of a kill.
 *
 * Two mechanisms, by the kind of signal:
 *
 *   sent from outside   HUP, INT, QUIT, ALRM, TERM, USR1, USR2, ABRT (by
 *                       kill), XCPU, VTALRM, PROF, POLL, PWR and the
 *                       real-time signals are blocked in every thread from
 *                       start-up on, and one thread of the tool's own takes
 *                       them with sigwait. No handler runs for them, so
 *                       none that a driver installs (LLVM's, which swallows
 *                       USR1 and the first QUIT) can keep the process
 *                       alive; the thread removes the armed files and dies
 *                       of the same signal.
 *   raised by a fault   SEGV, BUS, FPE, ILL, TRAP, SYS, PIPE and abort()'s
 *                       ABRT cannot wait for a thread: a handler removes the
 *                       armed files and dies of the signal (a sanitizer's
 *                       handler, already there, is left in place). A driver
 *                       may replace it; the output files therefore have no
 *                       name at all while they are written where the file
 *                       system allows it (output_file.h), and nothing is
 *                       left whichever handler runs.
 */
#ifndef CLPE_CLI_SIGNALS_H
#define CLPE_CLI_SIGNALS_H

/* How many named temporary files may be armed at once. */
#define CLI_SIGNALS_MAX_ARMED 8

/* Call once at start-up, before any thread exists and any output file is
 * opened. A signal the parent set to SIG_IGN (nohup, a shell's background
 * job) stays ignored, and blocked too, so that no handler a library
 * installs later runs for it. An exit() while a file is armed (a driver's
 * fatal error) removes it too. SIGXFSZ is ignored, so exceeding
 * `ulimit -f` fails the write with EFBIG. */
void cli_signals_init(void);

/* SIGXFSZ ignored again. An OpenCL compiler built on LLVM (Intel's CPU
 * runtime's) installs a crash handler for it while it builds a kernel,
 * which prints a "PLEASE submit a bug report" banner when `ulimit -f` is
 * reached; call this after the last build, before writing. */
void cli_signals_ignore_file_size(void);

/* The temporary file named `name` in the directory open as dir_fd is to be
 * removed on a terminating signal. Returns the slot to disarm, or -1 if all
 * CLI_SIGNALS_MAX_ARMED are taken or the name is too long. */
int cli_signals_arm(int dir_fd, const char *name);
void cli_signals_disarm(int slot);

/* Between hold and release a signal sent from outside waits: the steps in
 * between (making a file and arming it, renaming files into place as a
 * set) complete, then the tool dies of it. Not nested. */
void cli_signals_hold(void);
void cli_signals_release(void);

#endif
