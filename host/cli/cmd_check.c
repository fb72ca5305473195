/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_check.c - `clpe check`: the cross-vendor conformance run.
 *
 * The library promises that a conformant device writes exactly the bits its
 * host emulation computes. This command holds every device to that: for
 * each dtype the device supports, both frequency conventions, every layout
 * and a few widths, it runs the table, fused add (in and out of place),
 * gather and pad-aware position paths at edge and random positions, and
 * the rotary paths (check_rope.c), reads
 * everything back and compares every element bit for bit with clpe_host_*,
 * guard elements between rows included (check_paths.c). It also samples the
 * device's values against the independent MPFR reference
 * (check_reference.c), so a shared mistake in kernel and emulation would
 * still show up as an error above the bound. This file drives the run:
 * devices, dtypes, configurations; check_cases.c says what runs, and
 * check_report_*.c what is printed and written.
 *
 * Test-only hook: with CLPE_CHECK_CORRUPT=1 in the environment, one bit of
 * the first device table read back is flipped before the comparison, so
 * the tests can see a failing run report its mismatch; CLPE_CHECK_CORRUPT=rope
 * flips one of the first rotated queries instead.
 */
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every path for one encoder. */
static void check_config(check_checker *ck, check_tally *t, clpe_encoder *enc,
                         const clpe_config *cfg)
{
    ref_encoding ref;
    ref_init(&ref, cfg);
    ck->ref = &ref;
    check_table_case tables[CHECK_MAX_TABLE_CASES];
    size_t ntables = check_table_cases(ck->quick, cfg->d, &ck->rng, tables);
    for (size_t k = 0; k < ntables; ++k)
        check_table(ck, t, enc, cfg, tables[k].start, tables[k].n, tables[k].gap);
    check_add(ck, t, enc, cfg, CLPE_POSITIONS_IDS, 3, ck->quick ? 5 : 17);
    check_add(ck, t, enc, cfg, CLPE_POSITIONS_PER_SEQUENCE, 2, ck->quick ? 5 : 13);
    check_add(ck, t, enc, cfg, CLPE_POSITIONS_START, 2, ck->quick ? 4 : 11);
    check_gather(ck, t, enc, cfg, 2, ck->quick ? 5 : 19);
    check_pad_positions(ck, t, enc, cfg, 3, ck->quick ? 8 : 29);
    ck->ref = NULL;
    ref_clear(&ref);
}

/* An encoder for cfg, sharing the program of *proto once there is one.
 * NULL with the status in *st on failure. */
static clpe_encoder *encoder_for(const check_checker *ck, clpe_encoder *proto,
                                 const clpe_config *cfg, clpe_status *st)
{
    if (proto)
        return clpe_encoder_create_like(proto, cfg, st);
    char log[4096];
    clpe_build_log bl = {log, sizeof log, 0};
    return clpe_encoder_create(ck->dev->context, ck->dev->device, cfg, &bl, st);
}

/* Check one device for every dtype; fills t[CHECK_NDTYPES]. */
static void check_device(check_checker *ck, check_tally *t)
{
    const uint32_t *widths;
    const size_t nwidths = check_widths(ck->quick, &widths);
    clpe_encoder *proto = NULL; /* built once; the rest share its program */

    for (int dt = 0; dt < CHECK_NDTYPES; ++dt) {
        check_tally *r = &t[dt];
        memset(r, 0, sizeof *r);
        r->dtype = dt;
        r->bound = check_error_bound(dt, INT64_MIN);
        snprintf(r->paths, sizeof r->paths,
                 "table add add_out gather pad_positions rope rope_cache");
        if (!cli_device_supports(ck->dev->device, dt)) {
            r->skipped = 1;
            snprintf(r->skip_reason, sizeof r->skip_reason, "device lacks %s",
                     dt == CLPE_DTYPE_F64 ? "cl_khr_fp64" : cli_dtype_name(dt));
            continue;
        }
        for (size_t wi = 0; wi < nwidths && !r->skipped && !r->error[0]; ++wi) {
            clpe_config cfg;
            check_need need;
            for (int conv = 0; (need = check_convention(conv, widths[wi], &cfg)) != CHECK_DONE &&
                               !r->skipped && !r->error[0];
                 ++conv) {
                cfg.dtype = (clpe_dtype)dt;
                cfg.scale = sqrt((double)widths[wi]); /* the usual embedding scale */
                if (need == CHECK_IF_OFFERED && clpe_config_check(&cfg) != CLPE_SUCCESS) {
                    ++r->not_offered; /* a layout or flag this library build does not have */
                    continue;
                }
                clpe_status st = CLPE_SUCCESS;
                clpe_encoder *enc = encoder_for(ck, proto, &cfg, &st);
                if (!enc && st == CLPE_ERROR_UNSUPPORTED_DTYPE) {
                    r->skipped = 1;
                    snprintf(r->skip_reason, sizeof r->skip_reason,
                             "not implemented by this library build");
                    break;
                }
                if (!enc) {
                    char lab[96];
                    check_config_label(&cfg, lab, sizeof lab);
                    snprintf(r->error, sizeof r->error, "%s encoder: %s (%d)", lab,
                             clpe_status_string(st), (int)st);
                    break;
                }
                check_config(ck, r, enc, &cfg);
                ++r->configurations;
                if (!proto)
                    proto = enc;
                else
                    clpe_encoder_release(enc);
            }
        }
        if (!r->skipped && !r->error[0])
            check_rope(ck, r, proto, dt);
    }
    clpe_encoder_release(proto);
}

int cli_cmd_check(const cli_args *args)
{
    const double t0 = cli_now();
    /* Which devices: one by the usual rule, or every index in turn. */
    size_t cap = 1;
    check_device_result *res = NULL;
    size_t n = 0;
    int rc = CLI_EXIT_OK;
    cli_outfile json;
    memset(&json, 0, sizeof json);

    /* A bad --json path fails before the long run. */
    if (args->json && (rc = cli_outfile_open(&json, args->json, "--json")) != CLI_EXIT_OK)
        return rc;

    check_checker ck;
    memset(&ck, 0, sizeof ck);
    ck.quick = args->quick;
    const char *corrupt = getenv("CLPE_CHECK_CORRUPT");
    /* "rope" flips a bit of the first rotation instead of the first table */
    ck.corrupt_rope_pending = corrupt && strcmp(corrupt, "rope") == 0;
    ck.corrupt_pending = corrupt && *corrupt && strcmp(corrupt, "0") != 0 &&
                         !ck.corrupt_rope_pending;

    int all_pass = 1;
    for (unsigned idx = 0;; ++idx) {
        cl_platform_id plat = NULL;
        cl_device_id devid = NULL;
        char sel[24];
        snprintf(sel, sizeof sel, "%u", idx);
        clpe_status st = clpe_select_device(args->all_devices ? sel : args->device, &plat, &devid);
        if (st != CLPE_SUCCESS) {
            if (args->all_devices && idx > 0)
                break; /* past the last device */
            cli_device tmp;
            rc = cli_device_open(args->all_devices ? NULL : args->device, &tmp);
            if (rc == CLI_EXIT_OK) { /* cannot happen: the same selection just failed */
                cli_device_close(&tmp);
                rc = CLI_EXIT_RUNTIME;
            }
            goto out;
        }
        if (n == 0 || n == cap) {
            cap = n ? 2 * cap : 4;
            check_device_result *grown = realloc(res, cap * sizeof *res);
            if (!grown) {
                cli_error("out of memory");
                rc = CLI_EXIT_RUNTIME;
                goto out;
            }
            res = grown;
        }
        check_device_result *d = &res[n++];
        memset(d, 0, sizeof *d);
        d->index = idx;
        cli_device dev;
        if (cli_device_open_id(plat, devid, &dev) != CLI_EXIT_OK) {
            snprintf(d->open_error, sizeof d->open_error, "cannot open the device");
            cli_device_string(devid, CL_DEVICE_NAME, d->name, sizeof d->name);
            all_pass = 0;
        } else {
            snprintf(d->name, sizeof d->name, "%s", dev.name);
            snprintf(d->platform, sizeof d->platform, "%s", dev.platform_name);
            if (!args->quiet)
                fprintf(stderr, "clpe: checking '%s' (%s run)...\n", dev.name,
                        args->quick ? "quick" : "full");
            ck.dev = &dev;
            ck.rng = 0x5EED0000u + idx; /* reproducible: a failure can be rerun */
            check_device(&ck, d->t);
            cli_device_close(&dev);
            for (int k = 0; k < CHECK_NDTYPES; ++k)
                if (check_tally_failed(&d->t[k]))
                    all_pass = 0;
        }
        if (!args->all_devices)
            break;
    }
    const double seconds = cli_now() - t0;
    check_report_text(res, n, all_pass, seconds);
    rc = all_pass ? CLI_EXIT_OK : CLI_EXIT_RUNTIME;
    if (args->json) {
        check_report_json(json.f, res, n, args->quick, all_pass, seconds);
        int jrc = cli_outfile_commit(&json, "--json");
        if (jrc != CLI_EXIT_OK)
            rc = jrc;
    }
out:
    cli_outfile_abort(&json);
    mpfr_free_cache();
    free(res);
    return rc;
}
