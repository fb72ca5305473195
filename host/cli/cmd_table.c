/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_table.c - `clpe table`: print the encoding of a list of positions,
 * computed on the device (one table launch per run of consecutive
 * positions), one row per position.
 */
#include "checked_size.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* Column heading of element k of a row. */
static void column_name(const clpe_config *cfg, uint32_t k, char *out, size_t cap)
{
    const int half_pair = (cfg->flags & CLPE_FLAG_ODD_D_HALF_PAIR) && (cfg->d & 1u);
    /* Sines per row; a half pair (odd d, Marian/XLM) has one more sine than
     * cosines, a zero column (odd d, fairseq) pads after the pairs. */
    const uint32_t sines = half_pair ? (cfg->d + 1) / 2 : cfg->d / 2;
    const uint32_t cosines = cfg->d / 2;
    if (k >= sines + cosines) {
        snprintf(out, cap, "pad");
        return;
    }
    int is_cos;
    uint32_t i;
    switch (cfg->layout) {
    case CLPE_LAYOUT_SPLIT:
        is_cos = k >= sines;
        i = is_cos ? k - sines : k;
        break;
    case CLPE_LAYOUT_SPLIT_COS_FIRST:
        is_cos = k < cosines;
        i = is_cos ? k : k - cosines;
        break;
    case CLPE_LAYOUT_INTERLEAVED:
    default:
        is_cos = (int)(k & 1u);
        i = k / 2;
        break;
    }
    snprintf(out, cap, "%s%u", is_cos ? "cos" : "sin", (unsigned)i);
}

int cli_cmd_table(const cli_args *args)
{
    clpe_config cfg;
    int64_t first = 0;
    int rc = cli_config_from_args(args, &cfg, &first);
    if (rc)
        return rc;

    cli_device dev;
    if ((rc = cli_device_open(args->device, &dev)))
        return rc;
    if (!cli_device_supports(dev.device, cfg.dtype)) {
        cli_error("device '%s' does not support --dtype %s", dev.name, cli_dtype_name(cfg.dtype));
        cli_device_close(&dev);
        return CLI_EXIT_RUNTIME;
    }
    clpe_encoder *enc = cli_encoder_create(&dev, &cfg);
    if (!enc) {
        cli_device_close(&dev);
        return CLI_EXIT_RUNTIME;
    }

    const size_t n = args->n_positions;
    const int64_t *pos = args->positions;
    const size_t esize = dtype_size(cfg.dtype);
    const size_t row_bytes = (size_t)cfg.d * esize; /* <= 2^24 * 8 */
    unsigned char *host = NULL;
    cl_mem buf = NULL;
    size_t bytes = 0;
    rc = CLI_EXIT_RUNTIME;
    if (cli_mul_size(n, row_bytes, &bytes)) {
        cli_error("--pos lists too many positions for --d %u", (unsigned)cfg.d);
        goto done;
    }
    host = malloc(bytes);
    if (!host) {
        cli_error("out of memory for %zu rows of --d %u", n, (unsigned)cfg.d);
        goto done;
    }
    cl_int err = CL_SUCCESS;
    buf = clCreateBuffer(dev.context, CL_MEM_WRITE_ONLY, bytes, NULL, &err);
    if (!buf) {
        cli_status_error("cannot allocate the device buffer", err);
        goto done;
    }
    /* One launch per run of consecutive positions. */
    for (size_t r = 0; r < n;) {
        size_t len = 1;
        while (r + len < n && pos[r + len - 1] != INT64_MAX && pos[r + len] == pos[r + len - 1] + 1)
            ++len;
        clpe_tensor out = {.buffer = buf, .offset = r * row_bytes, .row_pitch = 0, .batch_pitch = 0};
        clpe_status st = clpe_enqueue_table(enc, dev.queue, pos[r], len, &out, 0, NULL, NULL);
        if (st != CLPE_SUCCESS) {
            cli_status_error("table", st);
            goto done;
        }
        r += len;
    }
    err = clEnqueueReadBuffer(dev.queue, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        cli_status_error("cannot read the table back", err);
        goto done;
    }

    int pos_width = 3;
    for (size_t r = 0; r < n; ++r) {
        char tmp[32];
        int w = snprintf(tmp, sizeof tmp, "%lld", (long long)pos[r]);
        if (w > pos_width)
            pos_width = w;
    }
    int width = args->digits + 3;
    if (width < 6)
        width = 6;
    printf("%-*s", pos_width, "pos");
    for (uint32_t k = 0; k < cfg.d; ++k) {
        char name[24];
        column_name(&cfg, k, name, sizeof name);
        printf("  %*s", width, name);
    }
    putchar('\n');
    for (size_t r = 0; r < n; ++r) {
        printf("%*lld", pos_width, (long long)pos[r]);
        const unsigned char *row = host + r * row_bytes;
        for (uint32_t k = 0; k < cfg.d; ++k)
            printf("  %*.*f", width, args->digits, dtype_to_double(row + k * esize, cfg.dtype));
        putchar('\n');
    }
    rc = CLI_EXIT_OK;
done:
    if (buf)
        clReleaseMemObject(buf);
    free(host);
    clpe_encoder_release(enc);
    cli_device_close(&dev);
    return rc;
}
