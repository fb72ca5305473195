/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encoder_setup.c - from command-line flags to a checked configuration and
 * an encoder on the device, each failure one line naming the flag.
 */
#include "cli.h"
#include "stderr_capture.h"

#include <string.h>

int cli_config_from_args(const cli_args *a, clpe_config *cfg, int64_t *first_position)
{
    int64_t first = 0;
    if (a->preset) {
        clpe_status st = clpe_config_preset(a->preset, a->d, cfg, &first);
        if (st == CLPE_ERROR_UNKNOWN_PRESET) {
            cli_error("--preset must be vaswani, tensor2tensor, fairseq, marian, opennmt-tf, "
                      "xlm or musicgen, got '%s'", a->preset);
            return CLI_EXIT_USAGE;
        }
        if (st == CLPE_ERROR_INVALID_D) {
            cli_error("--d %u is not valid for --preset %s", (unsigned)a->d, a->preset);
            return CLI_EXIT_USAGE;
        }
        if (st != CLPE_SUCCESS) {
            cli_status_error("--preset", st);
            return CLI_EXIT_USAGE;
        }
    } else {
        *cfg = clpe_config_default(a->d);
        /* Fields the default may leave unset: start from a known state. */
        cfg->flags = 0;
        cfg->padding_position = 0;
    }
    if (a->have_padding_idx) {
        /* fairseq's padding_idx: its row is all zeros and positions start
         * right after it. The same two settings with any preset or none. */
        cfg->flags |= CLPE_FLAG_PADDING_ROW;
        cfg->padding_position = a->padding_idx;
        first = a->padding_idx + 1; /* the parser keeps padding_idx below INT64_MAX */
    }
    if (a->have_base)
        cfg->base = a->base;
    if (a->freq != CLI_UNSET)
        cfg->freq = (clpe_freq)a->freq;
    if (a->layout != CLI_UNSET)
        cfg->layout = (clpe_layout)a->layout;
    if (a->dtype != CLI_UNSET)
        cfg->dtype = (clpe_dtype)a->dtype;
    *first_position = a->have_start ? a->start : first;

    clpe_status st = clpe_config_check(cfg);
    switch (st) {
    case CLPE_SUCCESS:
        return CLI_EXIT_OK;
    case CLPE_ERROR_INVALID_D:
        if ((cfg->d & 1u) && a->preset)
            cli_error("--d %u is odd, which --preset %s does not allow", (unsigned)cfg->d,
                      a->preset);
        else if (cfg->d & 1u)
            cli_error("--d must be even, got %u", (unsigned)cfg->d);
        else
            cli_error("--d must be between 2 and %u, got %u", (unsigned)CLPE_MAX_D,
                      (unsigned)cfg->d);
        return CLI_EXIT_USAGE;
    case CLPE_ERROR_INVALID_BASE:
        cli_error("--base must be a finite number above 1, got %g", cfg->base);
        return CLI_EXIT_USAGE;
    case CLPE_ERROR_UNSUPPORTED_DTYPE:
        cli_error("--dtype %s is not supported by this build of the clpe library",
                  cli_dtype_name(cfg->dtype));
        return CLI_EXIT_RUNTIME;
    default:
        cli_status_error("invalid configuration", st);
        return CLI_EXIT_USAGE;
    }
}

/* The line of a build log worth one message: the first that mentions an
 * error, else the first that is not empty. The whole log has many lines;
 * the tool speaks one. */
static int line_mentions_error(const char *line, size_t len)
{
    for (size_t k = 0; k + 5 <= len; ++k)
        if (memcmp(line + k, "error", 5) == 0)
            return 1;
    return 0;
}

static void first_diagnostic(const char *log, char *out, size_t cap)
{
    const char *first = NULL, *error = NULL;
    size_t first_len = 0, error_len = 0;
    for (const char *p = log; *p && !error;) {
        size_t len = strcspn(p, "\n");
        if (strspn(p, " \t\r") < len) {
            if (!first) {
                first = p;
                first_len = len;
            }
            if (line_mentions_error(p, len)) {
                error = p;
                error_len = len;
            }
        }
        p += len + (p[len] == '\n');
    }
    const char *pick = error ? error : first;
    size_t len = error ? error_len : first_len;
    if (cap == 0)
        return;
    if (len >= cap)
        len = cap - 1;
    if (pick)
        memcpy(out, pick, len);
    out[pick ? len : 0] = '\0';
}

clpe_encoder *cli_encoder_create(const cli_device *dev, const clpe_config *cfg)
{
    char log[8192];
    clpe_build_log bl = {log, sizeof log, 0};
    clpe_status st = CLPE_SUCCESS;
    log[0] = '\0';
    /* The driver's compiler may print to stderr itself; what it says is in
     * the build log too, and the tool speaks one line. */
    char printed[240];
    const int held = cli_stderr_hold() == 0;
    clpe_encoder *enc = clpe_encoder_create(dev->context, dev->device, cfg, &bl, &st);
    cli_stderr_restore(printed, sizeof printed);
    if (enc)
        return enc;
    if (st == CLPE_ERROR_UNSUPPORTED_DTYPE) {
        cli_error("device '%s' does not support --dtype %s", dev->name,
                  cli_dtype_name(cfg->dtype));
    } else if (st == CLPE_ERROR_DEVICE_UNSUPPORTED) {
        cli_error("device '%s' cannot run clpe: %s", dev->name, clpe_status_string(st));
    } else {
        char line[240];
        first_diagnostic(bl.length > 1 ? log : "", line, sizeof line);
        const char *what = line[0] ? "; build log: " : held && printed[0] ? "; driver: " : "";
        cli_error("cannot create an encoder on '%s': %s (%d)%s%s", dev->name,
                  clpe_status_string(st), (int)st, what, line[0] ? line : printed);
    }
    return NULL;
}
