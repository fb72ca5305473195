/*
 * cli.h - what the clpe tool's commands share: exit codes, messages, device
 * opening, encoder configuration and output files that appear only when
 * complete. Element sizes and values come from common/dtype.h.
 */
#ifndef CLPE_CLI_H
#define CLPE_CLI_H

#include "args.h"

#include <clpe.h>

#include <stdio.h>

/* Exit statuses: 0 success, 1 runtime failure (device, OpenCL, I/O, failed
 * check), 2 bad command line. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_RUNTIME = 1, CLI_EXIT_USAGE = 2 };

/* One line on stderr, prefixed "clpe: ". */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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

/* An output file that appears under its final name only when complete: it
 * is written under a temporary name in the same directory and renamed by
 * cli_outfile_commit. The temporary file is removed on abort, and on
 * SIGINT/SIGTERM/SIGHUP while it is open. */
typedef struct cli_outfile {
    FILE *f;
    char *final_path;
    char *tmp_path;
} cli_outfile;

/* flag names the option in messages ("-o"). Prints the reason and returns
 * CLI_EXIT_RUNTIME if the directory is not writable. */
int cli_outfile_open(cli_outfile *o, const char *path, const char *flag);
/* Flush, close and rename. Prints the reason and returns CLI_EXIT_RUNTIME
 * on failure (the temporary file is then removed). */
int cli_outfile_commit(cli_outfile *o, const char *flag);
/* Close and remove the temporary file. Safe on a zeroed or closed struct. */
void cli_outfile_abort(cli_outfile *o);

/* Seconds on a monotonic clock. */
double cli_now(void);

/* The commands. Each returns an exit status. */
int cli_cmd_devices(const cli_args *args);
int cli_cmd_table(const cli_args *args);
int cli_cmd_encode(const cli_args *args);
int cli_cmd_check(const cli_args *args);
int cli_cmd_plot(const cli_args *args);

#endif
