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
 * flips one of the first rotated queries instead, and CLPE_CHECK_CORRUPT=kv
 * one element of the first key cache read back.
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
        CHECK_RUN(ck, t, CHECK_PATH_TABLE,
                  check_table(ck, t, enc, cfg, tables[k].start, tables[k].n, tables[k].gap));
    /* add and add_out: check_add credits each itself */
    check_add(ck, t, enc, cfg, CLPE_POSITIONS_IDS, 3, ck->quick ? 5 : 17);
    check_add(ck, t, enc, cfg, CLPE_POSITIONS_PER_SEQUENCE, 2, ck->quick ? 5 : 13);
    check_add(ck, t, enc, cfg, CLPE_POSITIONS_START, 2, ck->quick ? 4 : 11);
    CHECK_RUN(ck, t, CHECK_PATH_GATHER, check_gather(ck, t, enc, cfg, 2, ck->quick ? 5 : 19));
    CHECK_RUN(ck, t, CHECK_PATH_PAD_POSITIONS,
              check_pad_positions(ck, t, enc, cfg, 3, ck->quick ? 8 : 29));
    ck->ref = NULL;
    ref_clear(&ref);
}

const char *const check_path_names[CHECK_NPATHS] = {
#define CHECK_PATH_NAME(id, name) name,
    CHECK_PATHS(CHECK_PATH_NAME)
#undef CHECK_PATH_NAME
};

#define PATH_BIT(id) (1u << CHECK_PATH_##id)
/* The paths that run per encoder configuration (check_config). */
#define ENCODER_PATHS                                                                          \
    (PATH_BIT(TABLE) | PATH_BIT(ADD) | PATH_BIT(ADD_OUT) | PATH_BIT(GATHER) |                  \
     PATH_BIT(PAD_POSITIONS))

/* The operations checked once per dtype after the encoder's paths, each
 * with objects sharing the first encoder's program; an operation runs when
 * one of its paths is selected. */
static const struct {
    uint32_t paths;
    void (*run)(check_checker *ck, check_tally *t, clpe_encoder *like, int dtype);
} OPERATIONS[] = {
    {PATH_BIT(ROPE) | PATH_BIT(ROPE_CACHE) | PATH_BIT(MROPE) | PATH_BIT(MROPE_CACHE) |
         PATH_BIT(VISION) | PATH_BIT(VISION_CACHE),
     check_rope},
    {PATH_BIT(ROPE_KV) | PATH_BIT(ROPE_KV_PAGED), check_rope_kv},
    {PATH_BIT(DEVICE_FUNCTIONS), check_device_functions},
};

/* --paths: a comma-separated list of path names into a mask; 0 (after a
 * message) for an unknown name. */
static uint32_t parse_paths(const char *list)
{
    uint32_t mask = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int k = 0; k < CHECK_NPATHS; ++k)
            if (strlen(check_path_names[k]) == len && strncmp(p, check_path_names[k], len) == 0)
                found = k;
        if (found < 0) {
            char known[256] = "";
            for (int k = 0; k < CHECK_NPATHS; ++k) {
                size_t used = strlen(known);
                snprintf(known + used, sizeof known - used, "%s%s", k ? ", " : "",
                         check_path_names[k]);
            }
            cli_error("--paths: unknown path '%.*s' (paths: %s)", (int)len, p, known);
            return 0;
        }
        mask |= 1u << found;
        p += len;
        if (*p == ',')
            ++p;
    }
    if (!mask)
        cli_error("--paths: no path named in '%s'", list);
    return mask;
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
        for (int p = 0; p < CHECK_NPATHS; ++p) {
            size_t used = strlen(r->paths);
            r->path_selected[p] = (unsigned char)check_selected(ck, (check_path)p);
            if (r->path_selected[p])
                snprintf(r->paths + used, sizeof r->paths - used, "%s%s", used ? " " : "",
                         check_path_names[p]);
        }
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
                if (ck->paths & ENCODER_PATHS) {
                    check_config(ck, r, enc, &cfg);
                    ++r->configurations;
                }
                if (!proto)
                    proto = enc;
                else
                    clpe_encoder_release(enc);
                if (!(ck->paths & ENCODER_PATHS))
                    break; /* one encoder: the program the other operations share */
            }
            if (!(ck->paths & ENCODER_PATHS))
                break;
        }
        for (size_t k = 0; k < sizeof OPERATIONS / sizeof OPERATIONS[0]; ++k)
            if ((ck->paths & OPERATIONS[k].paths) && !r->skipped && !r->error[0])
                OPERATIONS[k].run(ck, r, proto, dt);
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

    check_checker ck;
    memset(&ck, 0, sizeof ck);
    ck.paths = (1u << CHECK_NPATHS) - 1;
    if (args->paths && !(ck.paths = parse_paths(args->paths)))
        return CLI_EXIT_USAGE;

    /* A bad --json path fails before the long run. */
    if (args->json && (rc = cli_outfile_open(&json, args->json, "--json")) != CLI_EXIT_OK)
        return rc;

    ck.quick = args->quick;
    const char *corrupt = getenv("CLPE_CHECK_CORRUPT");
    /* "rope" flips a bit of the first rotation instead of the first table */
    ck.corrupt_rope_pending = corrupt && strcmp(corrupt, "rope") == 0;
    ck.corrupt_kv_pending = corrupt && strcmp(corrupt, "kv") == 0;
    ck.corrupt_pending = corrupt && *corrupt && strcmp(corrupt, "0") != 0 &&
                         !ck.corrupt_rope_pending && !ck.corrupt_kv_pending;


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
