/*
 * signals.h - the clpe tool's signal dispositions: a temporary output file
 * is removed when a terminating signal arrives, signals the parent ignored
 * stay ignored, and a file-size limit turns into a write error (EFBIG)
 * instead of a kill.
 */
#ifndef CLPE_CLI_SIGNALS_H
#define CLPE_CLI_SIGNALS_H

/* Call once at start-up, before any output file is opened. For each
 * terminating signal (HUP, INT, QUIT, PIPE, ALRM, TERM, USR1, USR2, and the
 * crashes ABRT, SEGV, BUS, FPE, ILL, TRAP, SYS) whose disposition is the
 * default (a sanitizer's crash handler is left in place), install a handler that removes the armed
 * temporary file and then dies of the same signal; a signal the parent set
 * to SIG_IGN (nohup, a shell's background job) is left ignored, and blocked
 * too, so that no handler a library installs later runs for it. An exit()
 * while a file is armed (a driver's fatal error) removes it too. SIGXFSZ is
 * ignored, so exceeding `ulimit -f` fails the write with EFBIG. */
void cli_signals_init(void);

/* The temporary file named `name` in the directory open as dir_fd is the
 * one to remove on a signal (one at a time; the tool writes one output
 * file at a time). name must stay valid until cli_signals_disarm. */
void cli_signals_arm(int dir_fd, const char *name);
void cli_signals_disarm(void);

#endif
