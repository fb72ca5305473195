/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h - what the clpe tool's commands share: exit codes, messages
 * (messages.c), device opening (device.c), encoder configuration
 * (encoder_setup.c), the clock (clock.c) and output files (output_file.h).
 * Element sizes and values come from common/dtype.h.
 */
#ifndef CLPE_CLI_H
#define CLPE_CLI_H

#include "args.h"
#include "file_identity.h"
#include "output_file.h"

#include <clpe.h>

#include <stdio.h>

/* Exit statuses: 0 success, 1 runtime failure (device, OpenCL, I/O, failed
 * check), 2 bad command line. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_RUNTIME = 1, CLI_EXIT_USAGE = 2 };

/* One line on stderr, prefixed "clpe: " (messages.c). Control characters
 * in the formatted text (from echoed paths, names, library strings) are
 * written as C escapes, so a message is always exactly one line. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same for a line that reports rather than fails (a summary). */
void cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Two byte counts for one message, in decimal units ("4.19 MB"), or as
 * exact byte counts where they would round to the same text, so that
 * "needs A, only B free" never shows two equal numbers. a_out and b_out
 * hold cap bytes each. */
void cli_format_bytes_apart(uint64_t a, uint64_t b, char *a_out, char *b_out, size_t cap);

/* Print a library failure as one line: "clpe: WHAT: <status string>". */
void cli_status_error(const char *what, clpe_status status);

/* A device with its own context and in-order queue. */
typedef struct cli_device {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    char name[256];
    char platform_name[256];
} cli_device;

/* Select with clpe_select_device(selector) and open a context and queue.
 * Prints the reason and returns CLI_EXIT_RUNTIME on failure. */
int cli_device_open(const char *selector, cli_device *dev);
/* Open an already selected device. */
int cli_device_open_id(cl_platform_id platform, cl_device_id device, cli_device *dev);
void cli_device_close(cli_device *dev);

/* A string device property into buf (empty on failure). */
void cli_device_string(cl_device_id dev, cl_device_info what, char *buf, size_t cap);
/* Does the device run dtype? Asks the library, and honours the test-only
 * environment variable CLPE_CLI_HIDE_DTYPES (comma-separated dtype names
 * the tool then treats as unsupported, so that path can be tested on a
 * device that supports everything). */
int cli_device_supports(cl_device_id dev, int dtype);

/* The configuration args describe: a preset or the defaults, then --base,
 * --freq, --layout, --dtype on top. *first_position gets --start if given,
 * else the preset's first position, else 0. Prints the reason and returns
 * CLI_EXIT_USAGE for a bad combination. */
int cli_config_from_args(const cli_args *args, clpe_config *cfg, int64_t *first_position);

/* Create an encoder, printing the failure (and any build log) on error. */
clpe_encoder *cli_encoder_create(const cli_device *dev, const clpe_config *cfg);


/* Seconds on a monotonic clock. */
double cli_now(void);
/* CPU seconds (user + system) of every thread of the process so far. */
double cli_cpu_seconds(void);
/* CPU seconds the calling thread has run. */
double cli_thread_cpu_seconds(void);

/* The commands. Each returns an exit status. */
int cli_cmd_devices(const cli_args *args);
int cli_cmd_table(const cli_args *args);
int cli_cmd_encode(const cli_args *args);
int cli_cmd_check(const cli_args *args);
int cli_cmd_plot(const cli_args *args);
int cli_cmd_rope_cache(const cli_args *args);

#endif
