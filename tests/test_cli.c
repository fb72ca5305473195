/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli.c - the clpe command-line tool, driven as a user drives it: the
 * built binary run with fork/exec, its exit status, stdout, stderr and the
 * files it leaves behind checked.
 *
 * What it pins down: the seed texts' numbers print correctly; `encode`
 * writes .npy files whose header this file parses itself and whose data
 * equal the library's host emulation bit for bit, for every dtype, across
 * chunk boundaries and near the ends of the position range; `check` passes
 * on the test device and fails, naming the mismatch, when its test-only
 * corruption hook flips one bit; every bad input gets exit status 2 (usage)
 * or 1 (runtime), one "clpe: " line naming the flag, and no file at all.
 */
/* mknod (device nodes in a temporary directory) is an XSI function. */
#define _XOPEN_SOURCE 700

#include "support.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLPE_CLI_PATH
#error "CLPE_CLI_PATH must name the built clpe binary (tests/CMakeLists.txt defines it)"
#endif

/* ---- running the tool ----------------------------------------------------------- */

/* The program the tests run: the built tool, or a copy of it where another
 * user must be able to reach it (output_file_the_user_cannot_write_is_refused). */
static const char *cli_program = CLPE_CLI_PATH;

typedef struct run_result {
    int status;   /* exit status, or 128 + signal */
    char *out;    /* stdout, NUL-terminated */
    size_t out_len; /* bytes of stdout (it may hold NULs: a .npy sent there) */
    char *err;    /* stderr, NUL-terminated */
} run_result;

/* Run in the child just before exec: set a resource limit, a signal
 * disposition, a umask. */
typedef void (*child_setup)(void);

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

/* Run clpe with argv (NULL-terminated, without the program name) and extra
 * environment settings "K=V" (NULL-terminated list, may be NULL). The
 * test-only hooks are cleared unless env sets them. */
static run_result run_full(const char *const *env, const char *const *args, child_setup setup)
{
    char outp[] = "/tmp/clpe-test-out-XXXXXX", errp[] = "/tmp/clpe-test-err-XXXXXX";
    int ofd = mkstemp(outp), efd = mkstemp(errp);
    cr_assert(ofd >= 0 && efd >= 0);
    const char *argv[64];
    int n = 0;
    argv[n++] = cli_program;
    for (; args[n - 1] && n < 63; ++n)
        argv[n] = args[n - 1];
    argv[n] = NULL;

    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(ofd, STDOUT_FILENO);
        dup2(efd, STDERR_FILENO);
        unsetenv("CLPE_CHECK_CORRUPT");
        unsetenv("CLPE_CLI_HIDE_DTYPES");
        for (int i = 0; env && env[i]; ++i) {
            char kv[256];
            snprintf(kv, sizeof kv, "%s", env[i]);
            char *eq = strchr(kv, '=');
            if (eq) {
                *eq = '\0';
                setenv(kv, eq + 1, 1);
            }
        }
        if (setup)
            setup();
        execv(cli_program, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    close(ofd);
    close(efd);
    run_result r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = slurp(outp, &r.out_len);
    r.err = slurp(errp, NULL);
    unlink(outp);
    unlink(errp);
    return r;
}

static run_result run_env(const char *const *env, const char *const *args)
{
    return run_full(env, args, NULL);
}

#define RUN(...) run_env(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define RUN_ENV(env, ...) run_env((const char *const[]){env, NULL}, (const char *const[]){__VA_ARGS__, NULL})

static void run_free(run_result *r)
{
    free(r->out);
    free(r->err);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A fresh empty directory for output files; removed (with its files) by rm_dir. */
static void make_dir(char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/clpe-test-dir-XXXXXX");
    cr_assert(mkdtemp(buf), "mkdtemp failed");
}

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            ++n;
    closedir(d);
    return n;
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* stderr is exactly one line starting "clpe: " and containing `needle`. */
static void assert_one_error_line(const run_result *r, const char *needle)
{
    cr_assert(strncmp(r->err, "clpe: ", 6) == 0, "stderr does not start with 'clpe: ': [%s]",
              r->err);
    size_t len = strlen(r->err);
    cr_assert(len > 0 && r->err[len - 1] == '\n' && strchr(r->err, '\n') == r->err + len - 1,
              "stderr is not exactly one line: [%s]", r->err);
    cr_assert(strstr(r->err, needle), "stderr [%s] does not mention [%s]", r->err, needle);
}

/* ---- .npy parsing (independent of the tool's own writer) ----------------------------- */

typedef struct npy_file {
    char descr[8];
    uint64_t rows, cols;
    const unsigned char *data;
    size_t data_len;
    char *whole;
} npy_file;

/* Parse a version 1.0, C-order, 2-D .npy header as NumPy writes it. */
static npy_file npy_load(const char *path)
{
    npy_file f;
    memset(&f, 0, sizeof f);
    size_t len = 0;
    f.whole = slurp(path, &len);
    const unsigned char *b = (const unsigned char *)f.whole;
    cr_assert(len >= 10 && memcmp(b, "\x93NUMPY", 6) == 0, "bad magic");
    cr_assert(b[6] == 1 && b[7] == 0, "not version 1.0");
    size_t hl = (size_t)b[8] | (size_t)b[9] << 8;
    cr_assert((10 + hl) % 64 == 0, "data not 64-byte aligned");
    cr_assert(10 + hl <= len);
    cr_assert_eq(b[10 + hl - 1], '\n', "header does not end with a newline");
    char header[512];
    cr_assert(hl < sizeof header);
    memcpy(header, b + 10, hl);
    header[hl] = '\0';
    const char *p = strstr(header, "'descr': '");
    cr_assert(p, "no descr in [%s]", header);
    p += strlen("'descr': '");
    size_t dl = strcspn(p, "'");
    cr_assert(dl < sizeof f.descr);
    memcpy(f.descr, p, dl);
    f.descr[dl] = '\0';
    cr_assert(strstr(header, "'fortran_order': False"), "not C order: [%s]", header);
    p = strstr(header, "'shape': (");
    cr_assert(p, "no shape in [%s]", header);
    unsigned long long r = 0, c = 0;
    cr_assert_eq(sscanf(p, "'shape': (%llu, %llu)", &r, &c), 2, "bad shape in [%s]", header);
    f.rows = r;
    f.cols = c;
    f.data = b + 10 + hl;
    f.data_len = len - 10 - hl;
    return f;
}

/* Run encode and compare the file with clpe_host_table bit for bit. */
static void encode_and_compare(const clpe_config *cfg, const char *preset, int64_t start,
                               const char *start_arg, size_t seq, size_t chunk_rows,
                               const char *dtype_name, const char *descr)
{
    char dir[64], path[128], seq_s[32], d_s[32], chunk_s[32];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pe.npy", dir);
    snprintf(seq_s, sizeof seq_s, "%zu", seq);
    snprintf(d_s, sizeof d_s, "%u", (unsigned)cfg->d);
    snprintf(chunk_s, sizeof chunk_s, "%zu", chunk_rows);
    const char *args[24];
    int n = 0;
    args[n++] = "encode";
    args[n++] = "--seq"; args[n++] = seq_s;
    args[n++] = "--d"; args[n++] = d_s;
    args[n++] = "--dtype"; args[n++] = dtype_name;
    args[n++] = "--chunk-rows"; args[n++] = chunk_s;
    args[n++] = "-o"; args[n++] = path;
    if (start_arg) {
        args[n++] = "--start";
        args[n++] = start_arg;
    }
    if (preset) {
        args[n++] = "--preset";
        args[n++] = preset;
    } else {
        args[n++] = "--freq"; args[n++] = cfg->freq == CLPE_FREQ_PAPER ? "paper" : "t2t";
        args[n++] = "--layout";
        args[n++] = cfg->layout == CLPE_LAYOUT_SPLIT ? "split" : "interleaved";
    }
    args[n] = NULL;
    run_result r = run_env(NULL, args);
    cr_assert_eq(r.status, 0, "encode failed (%d): %s", r.status, r.err);
    cr_assert(strstr(r.err, "elem/s"), "no throughput on stderr: [%s]", r.err);
    cr_assert(strstr(r.err, "device"), "no device on stderr: [%s]", r.err);
    cr_assert(strstr(r.err, "\r") == NULL, "progress bar drawn although stderr is no TTY");

    npy_file f = npy_load(path);
    cr_assert_str_eq(f.descr, descr);
    cr_assert_eq(f.rows, seq);
    cr_assert_eq(f.cols, cfg->d);
    size_t esize = strcmp(descr, "<f8") == 0 ? 8 : strcmp(descr, "<f4") == 0 ? 4 : 2;
    cr_assert_eq(f.data_len, seq * cfg->d * esize, "file size: %zu data bytes", f.data_len);

    clpe_status st = CLPE_SUCCESS;
    clpe_encoder *host = clpe_encoder_create_host(cfg, &st);
    cr_assert(host, "host encoder: %s", clpe_status_string(st));
    unsigned char *ref = malloc(f.data_len);
    cr_assert(ref);
    cr_assert_eq(clpe_host_table(host, start, seq, ref, 0), CLPE_SUCCESS);
    if (memcmp(ref, f.data, f.data_len) != 0) {
        for (size_t k = 0; k < f.data_len; ++k)
            cr_assert_eq(f.data[k], ref[k], "byte %zu (row %zu) differs from the host emulation",
                         k, k / esize / cfg->d);
    }
    free(ref);
    clpe_encoder_release(host);
    free(f.whole);
    run_free(&r);
    rm_dir(dir);
}

/* ---- the seeds ------------------------------------------------------------------ */

Test(cli, seed_table, .timeout = 60)
{
    run_result r = RUN("table", "--d", "8", "--pos", "5,6,305", "--digits", "3");
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* The seed's numbers, rounded correctly: the seed text prints 0.092 for
     * position 305, i = 2 (sin), but sin(3.05) = 0.091465 (see test_golden). */
    const char *expect =
        "pos    sin0    cos0    sin1    cos1    sin2    cos2    sin3    cos3\n"
        "  5  -0.959   0.284   0.479   0.878   0.050   0.999   0.005   1.000\n"
        "  6  -0.279   0.960   0.565   0.825   0.060   0.998   0.006   1.000\n"
        "305  -0.262  -0.965  -0.793   0.609   0.091  -0.996   0.300   0.954\n";
    cr_assert_str_eq(r.out, expect);
    cr_assert_str_eq(r.err, "");
    /* And within one unit of the last digit of every number the seed prints. */
    static const double seed[3][8] = {
        {-0.959, 0.284, 0.479, 0.878, 0.050, 0.999, 0.005, 1.000},
        {-0.279, 0.960, 0.565, 0.825, 0.060, 0.998, 0.006, 1.000},
        {-0.262, -0.965, -0.793, 0.609, 0.092, -0.996, 0.300, 0.954},
    };
    const char *line = strchr(r.out, '\n') + 1;
    for (int row = 0; row < 3; ++row) {
        char *end;
        strtol(line, &end, 10);
        for (int k = 0; k < 8; ++k) {
            double v = strtod(end, &end);
            cr_assert(fabs(v - seed[row][k]) <= 1e-3 + 1e-9, "row %d col %d: %g vs seed %g", row,
                      k, v, seed[row][k]);
        }
        line = strchr(line, '\n') + 1;
    }
    run_free(&r);
}

Test(cli, worked_example, .timeout = 60)
{
    run_result r = RUN("table", "--d", "4", "--pos", "2");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "pos     sin0     cos0     sin1     cos1\n"
                            "  2   0.9093  -0.4161   0.0200   0.9998\n");
    run_free(&r);
}

Test(cli, table_ranges_layouts_and_presets, .timeout = 60)
{
    run_result r = RUN("table", "--d", "4", "--pos", "0:3,-1", "--layout", "split", "--digits", "2");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "pos    sin0    sin1    cos0    cos1\n"
                            "  0    0.00    0.00    1.00    1.00\n"
                            "  1    0.84    0.01    0.54    1.00\n"
                            "  2    0.91    0.02   -0.42    1.00\n"
                            " -1   -0.84   -0.01    0.54    1.00\n");
    run_free(&r);
    /* fairseq: odd width padded with a zero column, position 1 all zeros. */
    r = RUN("table", "--d", "5", "--pos", "1,2", "--preset", "fairseq", "--digits", "2");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out, "pos    sin0    sin1    cos0    cos1     pad\n"
                            "  1    0.00    0.00    0.00    0.00    0.00\n"
                            "  2    0.91    0.00   -0.42    1.00    0.00\n");
    run_free(&r);
}

/* ---- help, version, devices ------------------------------------------------------- */

Test(cli, help_and_version, .timeout = 60)
{
    run_result r = RUN("--help");
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "usage: clpe COMMAND"));
    for (const char *c = "devices\0table\0encode\0check\0plot\0rope-cache\0"; *c;
         c += strlen(c) + 1)
        cr_assert(strstr(r.out, c), "--help does not mention %s", c);
    run_free(&r);

    const char *cmds[] = {"devices", "table", "encode", "check", "plot", "rope-cache"};
    for (int i = 0; i < 6; ++i) {
        r = RUN(cmds[i], "--help");
        cr_assert_eq(r.status, 0, "%s --help", cmds[i]);
        char want[64];
        snprintf(want, sizeof want, "usage: clpe %s", cmds[i]);
        cr_assert(strstr(r.out, want), "%s --help: [%s]", cmds[i], r.out);
        run_free(&r);
    }
    r = RUN("encode", "--help");
    cr_assert(strstr(r.out, "<u2") && strstr(r.out, "--chunk-rows"));
    run_free(&r);
    r = RUN("rope-cache", "--help");
    cr_assert(strstr(r.out, "--pairing half|interleaved") && strstr(r.out, "--cos-out") &&
                  strstr(r.out, "--original-max-position"),
              "[%s]", r.out);
    run_free(&r);

    r = RUN("--version");
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, CLPE_VERSION_STRING), "[%s]", r.out);
    run_free(&r);
}

Test(cli, devices_lists_the_default, .timeout = 60)
{
    run_result r = RUN("devices");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "fp64"));
    cr_assert(strstr(r.out, "\n* "), "no default device marked: [%s]", r.out);
    run_free(&r);
}

/* ---- encode ------------------------------------------------------------------------ */

Test(cli, encode_f32_matches_host_emulation_across_chunks, .timeout = 120)
{
    clpe_config cfg = clpe_config_default(64);
    /* 1000 rows in chunks of 96: 11 chunks, the last one short; negative start. */
    encode_and_compare(&cfg, NULL, -500, "-500", 1000, 96, "f32", "<f4");
    cfg.freq = CLPE_FREQ_TENSOR2TENSOR;
    cfg.layout = CLPE_LAYOUT_SPLIT;
    /* The last rows of the position range. */
    encode_and_compare(&cfg, NULL, INT64_MAX - 299, "9223372036854775508", 300, 64, "f32", "<f4");
}

Test(cli, encode_every_dtype, .timeout = 120)
{
    static const struct {
        clpe_dtype dtype;
        const char *name, *descr;
    } types[] = {
        {CLPE_DTYPE_F32, "f32", "<f4"},
        {CLPE_DTYPE_F16, "f16", "<f2"},
        {CLPE_DTYPE_BF16, "bf16", "<u2"},
        {CLPE_DTYPE_F64, "f64", "<f8"},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) {
        clpe_config cfg = clpe_config_default(40);
        cfg.dtype = types[i].dtype;
        cfg.freq = i % 2 ? CLPE_FREQ_TENSOR2TENSOR : CLPE_FREQ_PAPER;
        cfg.layout = i / 2 ? CLPE_LAYOUT_SPLIT : CLPE_LAYOUT_INTERLEAVED;
        /* Around -2^32, several chunks. */
        encode_and_compare(&cfg, NULL, -4294967396ll, "-4294967396", 333, 50, types[i].name,
                           types[i].descr);
    }
}

Test(cli, encode_preset_starts_at_its_first_position, .timeout = 60)
{
    clpe_config cfg;
    int64_t first = -1;
    cr_assert_eq(clpe_config_preset("fairseq", 9, &cfg, &first), CLPE_SUCCESS);
    cr_assert_eq(first, 2);
    encode_and_compare(&cfg, "fairseq", first, NULL, 50, 7, "f32", "<f4");
}

static int wait_until_written(pid_t pid, unsigned long long bytes);

Test(cli, encode_interrupted_leaves_no_file, .timeout = 60)
{
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/big.npy", dir);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, STDERR_FILENO);
        unsetenv("CLPE_CHECK_CORRUPT");
        execl(CLPE_CLI_PATH, CLPE_CLI_PATH, "encode", "--seq", "4000000", "--d", "64",
              "--chunk-rows", "256", "-o", path, (char *)NULL);
        _exit(127);
    }
    /* Interrupt once the output is being written (it may have no name). */
    wait_until_written(pid, 2u << 20);
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st)) {
        /* Finished (or refused for want of disk space) before the signal. */
        int leftover = dir_entries(dir) - (WEXITSTATUS(st) == 0);
        rm_dir(dir);
        cr_assert_eq(leftover, 0, "temporary file left behind");
        cr_skip_test("encode exited (%d) before it could be interrupted", WEXITSTATUS(st));
    }
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %d", st);
    cr_assert_eq(dir_entries(dir), 0, "files left behind after SIGTERM");
    rm_dir(dir);
}

/* ---- check ------------------------------------------------------------------------ */

Test(cli, check_quick_passes, .timeout = 120)
{
    char dir[64], json[128];
    make_dir(dir, sizeof dir);
    snprintf(json, sizeof json, "%s/check.json", dir);
    run_result r = RUN("check", "--all-devices", "--quick", "--json", json);
    cr_assert_eq(r.status, 0, "check failed:\n%s\n%s", r.out, r.err);
    cr_assert(strstr(r.out, "PASS"), "[%s]", r.out);
    cr_assert(strstr(r.out, "f32") && strstr(r.out, "pass"));
    cr_assert(!strstr(r.out, "FAIL"), "[%s]", r.out);
    char *j = slurp(json, NULL);
    cr_assert(strstr(j, "\"pass\": true"), "[%s]", j);
    cr_assert(strstr(j, "\"bit_mismatches\": 0"), "[%s]", j);
    free(j);
    run_free(&r);
    rm_dir(dir);
}

Test(cli, check_reports_a_corrupted_element, .timeout = 120)
{
    char dir[64], json[128];
    make_dir(dir, sizeof dir);
    snprintf(json, sizeof json, "%s/check.json", dir);
    run_result r = RUN_ENV("CLPE_CHECK_CORRUPT=1", "check", "--all-devices", "--quick", "--json",
                           json);
    cr_assert_eq(r.status, 1, "corrupted check exited %d:\n%s", r.status, r.out);
    cr_assert(strstr(r.out, "FAIL"), "[%s]", r.out);
    cr_assert(strstr(r.out, "mismatch on device 0:"), "[%s]", r.out);
    cr_assert(strstr(r.out, "(1 element differs)"), "exactly one element should differ: [%s]",
              r.out);
    /* The JSON is written for a failed run too: that is when it is wanted. */
    char *j = slurp(json, NULL);
    cr_assert(strstr(j, "\"pass\": false") && strstr(j, "\"first_mismatch\""), "[%s]", j);
    free(j);
    run_free(&r);
    rm_dir(dir);
}

Test(cli, check_quick_covers_the_rotary_paths, .timeout = 120)
{
    char dir[64], json[128];
    make_dir(dir, sizeof dir);
    snprintf(json, sizeof json, "%s/check.json", dir);
    run_result r = RUN("check", "--quick", "--json", json);
    cr_assert_eq(r.status, 0, "check failed:\n%s\n%s", r.out, r.err);
    cr_assert(strstr(r.out, "paths table add add_out gather pad_positions rope rope_cache "
                            "mrope mrope_cache vision vision_cache rope_kv rope_kv_paged "
                            "device_functions,"),
              "[%s]", r.out);
    /* every dtype the device runs has its rope line, with no mismatch */
    static const char *const lines[] = {"rope on device 0 f32 : ", "rope on device 0 f16 : ",
                                        "rope on device 0 bf16: ", "rope on device 0 f64 : "};
    for (size_t k = 0; k < sizeof lines / sizeof lines[0]; ++k) {
        const char *line = strstr(r.out, lines[k]);
        cr_assert(line, "no line [%s] in [%s]", lines[k], r.out);
        unsigned long long elements = 0, mismatches = 99;
        cr_assert_eq(sscanf(line + strlen(lines[k]), "%llu elements, %llu mismatches", &elements,
                            &mismatches),
                     2, "[%s]", line);
        cr_assert(elements > 0 && mismatches == 0, "[%s]", line);
    }
    /* float32 rotations were sampled against the exact rotation, within the bound */
    const char *f32 = strstr(r.out, "rope on device 0 f32 : ");
    const char *err = strstr(f32, "max |error| ");
    cr_assert(err && err < strchr(f32, '\n'), "no f32 rotation error in [%s]", f32);
    double ratio = -1;
    unsigned long long samples = 0;
    cr_assert_eq(sscanf(err, "max |error| %lf x 2^-22 hypot(a, b) over %llu", &ratio, &samples),
                 2, "[%s]", err);
    cr_assert(ratio >= 0 && ratio <= 1 && samples > 0, "[%s]", err);
    char *j = slurp(json, NULL);
    cr_assert(strstr(j, "rope rope_cache"), "[%s]", j);
    cr_assert(strstr(j, "\"rope_bit_mismatches\": 0") && !strstr(j, "\"rope_elements\": 0,"),
              "[%s]", j);
    free(j);
    run_free(&r);
    rm_dir(dir);
}

Test(cli, check_reports_a_corrupted_rotation, .timeout = 120)
{
    char dir[64], json[128];
    make_dir(dir, sizeof dir);
    snprintf(json, sizeof json, "%s/check.json", dir);
    run_result r = RUN_ENV("CLPE_CHECK_CORRUPT=rope", "check", "--quick", "--json", json);
    cr_assert_eq(r.status, 1, "corrupted check exited %d:\n%s", r.status, r.out);
    cr_assert(strstr(r.out, "FAIL"), "[%s]", r.out);
    const char *m = strstr(r.out, "mismatch on device 0: f32 rope half/default");
    cr_assert(m && strstr(m, "rope q") && strstr(m, "(1 element differs)"), "[%s]", r.out);
    cr_assert(strstr(r.out, "rope on device 0 f32 : ") &&
                  strstr(strstr(r.out, "rope on device 0 f32 : "), "1 mismatches"),
              "[%s]", r.out);
    char *j = slurp(json, NULL);
    cr_assert(strstr(j, "\"pass\": false") && strstr(j, "\"rope_bit_mismatches\": 1"), "[%s]",
              j);
    free(j);
    run_free(&r);
    rm_dir(dir);
}

/* ---- encode --devices ------------------------------------------------------------ */

/* One device named twice is two contexts, two encoders, two ranges: the
 * file's bytes equal one device's encode, and the split is printed. */
Test(cli, encode_on_several_devices_equals_one_device, .timeout = 120)
{
    char dir[64], one[128], two[128];
    make_dir(dir, sizeof dir);
    snprintf(one, sizeof one, "%s/one.npy", dir);
    snprintf(two, sizeof two, "%s/two.npy", dir);
    /* odd row count, start near 2^40, a chunk that does not divide the ranges */
    static const char *const common[] = {"--seq", "40013", "--d", "96", "--start",
                                         "1099511627000", "--dtype", "bf16"};
    run_result r = RUN("encode", common[0], common[1], common[2], common[3], common[4], common[5],
                       common[6], common[7], "-o", one);
    cr_assert_eq(r.status, 0, "%s", r.err);
    run_free(&r);
    r = RUN("encode", common[0], common[1], common[2], common[3], common[4], common[5],
            common[6], common[7], "--chunk-rows", "777", "--devices", "0,0", "-o", two);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "on 2 devices"), "[%s]", r.err);
    /* two split lines whose row counts sum to the whole */
    unsigned long long sum = 0;
    int lines = 0;
    for (const char *at = strstr(r.err, "split: device"); at; at = strstr(at + 1, "split: device")) {
        const char *open = strstr(at, "rows ");
        unsigned long long a = 0, b = 0, n = 0;
        cr_assert(open && sscanf(open, "rows %llu..%llu (%llu,", &a, &b, &n) == 3, "[%s]", at);
        sum += n;
        ++lines;
    }
    cr_assert_eq(lines, 2, "[%s]", r.err);
    cr_assert_eq(sum, 40013ull, "[%s]", r.err);
    run_free(&r);
    size_t la = 0, lb = 0;
    char *a = slurp(one, &la), *b = slurp(two, &lb);
    cr_assert_eq(la, lb);
    cr_assert(memcmp(a, b, la) == 0, "the files differ");
    free(a);
    free(b);
    rm_dir(dir);
}

Test(cli, encode_devices_refuses_what_it_cannot_do, .timeout = 60)
{
    run_result r = RUN("encode", "--seq", "4", "--d", "4", "--devices", "0", "--device", "0",
                       "-o", "x.npy");
    cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "--devices cannot be combined with --device");
    run_free(&r);
    r = RUN("encode", "--seq", "4", "--d", "4", "--devices", "0,no-such-device-5e1", "-o",
            "x.npy");
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "no-such-device-5e1");
    run_free(&r);
    r = RUN("encode", "--seq", "4", "--d", "4", "--devices", "0,0", "-o", "/dev/null");
    cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "--devices needs -o to name a file");
    run_free(&r);
}

#ifdef CLPE_FAULT_SHIM_PATH
/* A device whose kernel launch fails mid-run (the 9th, after the probes
 * and warm-ups): one line, exit 1, and no file, neither the output nor a
 * temporary one. */
Test(cli, encode_devices_failing_midway_leaves_no_file, .timeout = 120)
{
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/x.npy", dir);
    run_result r = run_env((const char *const[]){"LD_PRELOAD=" CLPE_FAULT_SHIM_PATH,
                                                 "CLPE_FAULT_FUNC=clEnqueueNDRangeKernel",
                                                 "CLPE_FAULT_N=40", NULL},
                           (const char *const[]){"encode", "--seq", "20000", "--d", "64",
                                                 "--chunk-rows", "100", "--devices", "0,0",
                                                 "-o", path, NULL});
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "': table: ");
    cr_assert(strstr(r.err, "clpe: device '"), "the line names no device: [%s]", r.err);
    cr_assert_eq(dir_entries(dir), 0, "a file was left behind: [%s]", r.err);
    run_free(&r);
    rm_dir(dir);
}
#endif

/* Every path of the check ran, compared elements and found no mismatch,
 * for every dtype the device runs, and the JSON names each one. */
Test(cli, check_json_names_every_path_with_its_elements, .timeout = 120)
{
    static const char *const paths[] = {"table",        "add",          "add_out",
                                        "gather",       "pad_positions", "rope",
                                        "rope_cache",   "mrope",        "mrope_cache",
                                        "vision",       "vision_cache", "rope_kv",
                                        "rope_kv_paged", "device_functions"};
    char dir[64], json[128];
    make_dir(dir, sizeof dir);
    snprintf(json, sizeof json, "%s/check.json", dir);
    run_result r = RUN("check", "--quick", "--json", json);
    cr_assert_eq(r.status, 0, "check failed:\n%s\n%s", r.out, r.err);
    char *j = slurp(json, NULL);
    for (size_t k = 0; k < sizeof paths / sizeof paths[0]; ++k) {
        char key[64];
        snprintf(key, sizeof key, "\"%s\": {\"elements\": ", paths[k]);
        size_t found = 0;
        for (const char *at = strstr(j, key); at; at = strstr(at + 1, key)) {
            unsigned long long elements = 0, mismatches = 99;
            cr_assert_eq(sscanf(at + strlen(key), "%llu, \"bit_mismatches\": %llu", &elements,
                                &mismatches),
                         2, "[%.80s]", at);
            cr_assert(elements > 0 && mismatches == 0, "%s: [%.80s]", paths[k], at);
            ++found;
        }
        /* one entry per dtype the device ran */
        size_t ran = 0;
        for (const char *at = strstr(j, "\"per_path\""); at; at = strstr(at + 1, "\"per_path\""))
            ++ran;
        cr_assert(ran > 0 && found == ran, "%s: %zu of %zu dtypes: [%s]", paths[k], found, ran, j);
        char line[64];
        snprintf(line, sizeof line, "path %-16s device 0:", paths[k]);
        cr_assert(strstr(r.out, line), "no line [%s] in [%s]", line, r.out);
    }
    free(j);
    run_free(&r);
    rm_dir(dir);
}

/* --paths runs only the paths named; an unknown name is a usage error. */
Test(cli, check_paths_selects_some, .timeout = 120)
{
    char dir[64], json[128];
    make_dir(dir, sizeof dir);
    snprintf(json, sizeof json, "%s/check.json", dir);
    run_result r = RUN("check", "--quick", "--paths", "rope_kv_paged,device_functions", "--json",
                       json);
    cr_assert_eq(r.status, 0, "check failed:\n%s\n%s", r.out, r.err);
    cr_assert(strstr(r.out, "paths rope_kv_paged device_functions,"), "[%s]", r.out);
    char *j = slurp(json, NULL);
    cr_assert(strstr(j, "\"rope_kv_paged\": {\"elements\": ") &&
                  strstr(j, "\"device_functions\": {\"elements\": "),
              "[%s]", j);
    cr_assert(!strstr(j, "\"table\": {") && !strstr(j, "\"rope_kv\": {"), "[%s]", j);
    free(j);
    run_free(&r);
    /* a dtype the device lacks is listed as not offered, never passed */
    r = RUN_ENV("CLPE_CLI_HIDE_DTYPES=f64", "check", "--quick", "--paths", "device_functions",
                "--json", json);
    cr_assert_eq(r.status, 0, "check failed:\n%s\n%s", r.out, r.err);
    j = slurp(json, NULL);
    cr_assert(strstr(j, "{\"dtype\": \"f64\", \"verdict\": \"skipped\", \"offered\": false"),
              "[%s]", j);
    free(j);
    run_free(&r);
    r = RUN("check", "--quick", "--paths", "rope_kv,no_such_path");
    cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "unknown path 'no_such_path'");
    run_free(&r);
    rm_dir(dir);
}

/* One bit of one key cache element flipped after the device wrote it
 * (the test hook CLPE_CHECK_CORRUPT=kv): the check fails, names the key
 * cache and counts exactly that element under its path. */
Test(cli, check_reports_a_corrupted_kv_cache, .timeout = 120)
{
    char dir[64], json[128];
    make_dir(dir, sizeof dir);
    snprintf(json, sizeof json, "%s/check.json", dir);
    run_result r = RUN_ENV("CLPE_CHECK_CORRUPT=kv", "check", "--quick", "--paths",
                           "rope_kv,rope_kv_paged", "--json", json);
    cr_assert_eq(r.status, 1, "corrupted check exited %d:\n%s", r.status, r.out);
    cr_assert(strstr(r.out, "FAIL"), "[%s]", r.out);
    const char *m = strstr(r.out, "mismatch on device 0: f32 rope half/default");
    cr_assert(m && strstr(m, "kv contiguous") && strstr(m, "key cache") &&
                  strstr(m, "(1 element differs)"),
              "[%s]", r.out);
    cr_assert(strstr(r.out, "path rope_kv          device 0:  f32 1/"), "[%s]", r.out);
    char *j = slurp(json, NULL);
    cr_assert(strstr(j, "\"pass\": false") &&
                  strstr(j, "\"rope_kv\": {\"elements\": ") &&
                  strstr(strstr(j, "\"rope_kv\": {\"elements\": "), "\"bit_mismatches\": 1"),
              "[%s]", j);
    free(j);
    run_free(&r);
    rm_dir(dir);
}

/* ---- rope-cache ------------------------------------------------------------------- */

/* Run rope-cache with extra flags and compare both files with
 * clpe_host_rope_cache of cfg bit for bit. */
static void rope_cache_and_compare(const clpe_rope_config *cfg, int64_t start, size_t seq,
                                   const char *descr, const char *const *flags)
{
    char dir[64], cos_path[128], sin_path[128], seq_s[32], start_s[32], hd_s[32];
    make_dir(dir, sizeof dir);
    snprintf(cos_path, sizeof cos_path, "%s/cos.npy", dir);
    snprintf(sin_path, sizeof sin_path, "%s/sin.npy", dir);
    snprintf(seq_s, sizeof seq_s, "%zu", seq);
    snprintf(start_s, sizeof start_s, "%lld", (long long)start);
    snprintf(hd_s, sizeof hd_s, "%u", (unsigned)cfg->head_dim);
    const char *args[40];
    int n = 0;
    args[n++] = "rope-cache";
    args[n++] = "--seq"; args[n++] = seq_s;
    args[n++] = "--start"; args[n++] = start_s;
    args[n++] = "--head-dim"; args[n++] = hd_s;
    args[n++] = "--cos-out"; args[n++] = cos_path;
    args[n++] = "--sin-out"; args[n++] = sin_path;
    for (int k = 0; flags[k]; ++k)
        args[n++] = flags[k];
    args[n] = NULL;
    run_result r = run_env(NULL, args);
    cr_assert_eq(r.status, 0, "rope-cache failed (%d): %s", r.status, r.err);
    cr_assert(strstr(r.err, "wrote ") && strstr(r.err, "device"), "no summary: [%s]", r.err);
    cr_assert_eq(dir_entries(dir), 2, "temporary files left behind");

    const uint32_t rotary = cfg->rotary_dim ? cfg->rotary_dim : cfg->head_dim;
    const size_t esize = strcmp(descr, "<f8") == 0 ? 8 : strcmp(descr, "<f4") == 0 ? 4 : 2;
    const size_t bytes = seq * rotary * esize;
    clpe_status st = CLPE_SUCCESS;
    clpe_rope *host = clpe_rope_create_host(cfg, &st);
    cr_assert(host, "host rope: %s", clpe_status_string(st));
    unsigned char *want_cos = malloc(bytes), *want_sin = malloc(bytes);
    cr_assert(want_cos && want_sin);
    cr_assert_eq(clpe_host_rope_cache(host, start, seq, want_cos, want_sin, 0), CLPE_SUCCESS);
    const char *paths[2] = {cos_path, sin_path};
    const unsigned char *want[2] = {want_cos, want_sin};
    for (int k = 0; k < 2; ++k) {
        npy_file f = npy_load(paths[k]);
        cr_assert_str_eq(f.descr, descr, "%s", paths[k]);
        cr_assert_eq(f.rows, seq);
        cr_assert_eq(f.cols, rotary);
        cr_assert_eq(f.data_len, bytes, "%s: %zu data bytes", paths[k], f.data_len);
        if (memcmp(f.data, want[k], bytes) != 0) {
            for (size_t b = 0; b < bytes; ++b)
                cr_assert_eq(f.data[b], want[k][b], "%s: byte %zu (row %zu) differs from the "
                             "host emulation", paths[k], b, b / esize / rotary);
        }
        free(f.whole);
    }
    free(want_cos);
    free(want_sin);
    clpe_rope_release(host);
    run_free(&r);
    rm_dir(dir);
}

Test(cli, rope_cache_equals_the_host_emulation, .timeout = 120)
{
    /* f32, default: 5000 rows of 256 bytes cross the tool's 1 MiB chunks */
    clpe_rope_config a = clpe_rope_config_default(64);
    rope_cache_and_compare(&a, -100, 5000, "<f4", (const char *const[]){NULL});

    /* bf16, interleaved, partial, Llama 3 scaling, up to the last int64 position */
    clpe_rope_config b = clpe_rope_config_default(128);
    b.rotary_dim = 96;
    b.pairing = CLPE_ROPE_INTERLEAVED;
    b.dtype = CLPE_DTYPE_BF16;
    b.base = 500000;
    b.scaling = CLPE_ROPE_LLAMA3;
    b.factor = 8;
    b.original_max_position = 8192;
    b.low_freq_factor = 1;
    b.high_freq_factor = 4;
    rope_cache_and_compare(&b, INT64_MAX - 16, 17, "<u2",
                           (const char *const[]){"--rotary-dim", "96", "--pairing", "interleaved",
                                                 "--dtype", "bf16", "--base", "500000",
                                                 "--scaling", "llama3", "--factor", "8",
                                                 "--original-max-position", "8192",
                                                 "--low-freq-factor", "1",
                                                 "--high-freq-factor", "4", NULL});

    /* f16, linear */
    clpe_rope_config c = clpe_rope_config_default(32);
    c.dtype = CLPE_DTYPE_F16;
    c.scaling = CLPE_ROPE_LINEAR;
    c.factor = 4;
    rope_cache_and_compare(&c, 1000, 33, "<f2",
                           (const char *const[]){"--dtype", "f16", "--scaling", "linear",
                                                 "--factor", "4", NULL});

    /* f64, YaRN with its ramp given */
    clpe_rope_config d = clpe_rope_config_default(64);
    d.dtype = CLPE_DTYPE_F64;
    d.scaling = CLPE_ROPE_YARN;
    d.factor = 4;
    d.original_max_position = 4096;
    d.beta_fast = 16;
    d.beta_slow = 2;
    rope_cache_and_compare(&d, INT64_MIN, 9, "<f8",
                           (const char *const[]){"--dtype", "f64", "--scaling", "yarn",
                                                 "--factor", "4", "--original-max-position",
                                                 "4096", "--beta-fast", "16", "--beta-slow", "2",
                                                 NULL});

    /* f32, dynamic NTK: the length is the last position + 1, as Hugging
     * Face's max(position_ids) + 1 (here 70000 + 50) */
    clpe_rope_config e = clpe_rope_config_default(64);
    e.scaling = CLPE_ROPE_DYNAMIC;
    e.factor = 2;
    e.original_max_position = 2048;
    e.seq_len = 70050;
    rope_cache_and_compare(&e, 70000, 50, "<f4",
                           (const char *const[]){"--scaling", "dynamic", "--factor", "2",
                                                 "--original-max-position", "2048", NULL});
}

/* ---- plot ------------------------------------------------------------------------- */

Test(cli, plot_writes_a_png, .timeout = 60)
{
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pe.png", dir);
    run_result r = RUN("plot", "--seq", "48", "--d", "32", "--start", "1000", "-o", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    size_t len = 0;
    char *png = slurp(path, &len);
    const unsigned char *b = (const unsigned char *)png;
    cr_assert(len > 33 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0, "not a PNG");
    cr_assert(memcmp(b + 12, "IHDR", 4) == 0);
    uint32_t w = (uint32_t)b[16] << 24 | (uint32_t)b[17] << 16 | (uint32_t)b[18] << 8 | b[19];
    uint32_t h = (uint32_t)b[20] << 24 | (uint32_t)b[21] << 16 | (uint32_t)b[22] << 8 | b[23];
    cr_assert(w >= 400 && h >= 400, "%ux%u", w, h);
    free(png);
    cr_assert_eq(dir_entries(dir), 1, "temporary files left behind");
    run_free(&r);
    rm_dir(dir);
}

/* ---- bad input -------------------------------------------------------------------- */

typedef struct bad_case {
    int status;          /* expected exit status */
    const char *needle;  /* the one stderr line must contain this */
    const char *env;     /* "K=V" or NULL */
    const char *args[24];
} bad_case;

#define OUT "@OUT@" /* replaced by a path in a fresh directory */
#define OUT2 "@OUT2@" /* a second one (rope-cache's sin file) */
#define ROPE_ARGS "rope-cache", "--seq", "4", "--head-dim", "8"
#define ROPE_OUTS "--cos-out", OUT, "--sin-out", OUT2

static const bad_case BAD[] = {
    {2, "no command", NULL, {NULL}},
    {2, "unknown command 'frobnicate'", NULL, {"frobnicate"}},
    {2, "unknown option '--frob'", NULL, {"--frob"}},
    {2, "--bogus", NULL, {"table", "--d", "8", "--pos", "1", "--bogus"}},
    {2, "does not take --seq", NULL, {"table", "--d", "8", "--pos", "1", "--seq", "3"}},
    {2, "--d expects a value", NULL, {"table", "--pos", "1", "--d"}},
    {2, "--d expects a positive even integer, got 'abc'", NULL, {"table", "--d", "abc", "--pos", "1"}},
    {2, "--d must be at most 16777216", NULL, {"table", "--d", "99999999999999999999999", "--pos", "1"}},
    {2, "--d must be positive, got 0", NULL, {"table", "--d", "0", "--pos", "1"}},
    {2, "--d must be even, got 7", NULL, {"table", "--d", "7", "--pos", "1"}},
    {2, "--d must be at most 16777216, got 33554432", NULL, {"table", "--d", "33554432", "--pos", "1"}},
    {2, "--d is required", NULL, {"table", "--pos", "1"}},
    {2, "--pos is required", NULL, {"table", "--d", "8"}},
    {2, "--pos expects integers", NULL, {"table", "--d", "8", "--pos", "1,,2"}},
    {2, "--pos expects an integer, got 'x'", NULL, {"table", "--d", "8", "--pos", "1,x"}},
    {2, "--pos is out of range", NULL, {"table", "--d", "8", "--pos", "9223372036854775808"}},
    {2, "--pos range '5:1' is empty", NULL, {"table", "--d", "8", "--pos", "5:1"}},
    {2, "--digits", NULL, {"table", "--d", "8", "--pos", "1", "--digits", "99"}},
    {2, "--base must be a finite number above 1, got 1", NULL, {"table", "--d", "8", "--pos", "1", "--base", "1"}},
    {2, "--base expects a number, got 'nan'", NULL, {"table", "--d", "8", "--pos", "1", "--base", "nan"}},
    {2, "--base must be a finite number above 1, got 1e999", NULL, {"table", "--d", "8", "--pos", "1", "--base", "1e999"}},
    {2, "--freq must be paper or t2t, got 'fast'", NULL, {"table", "--d", "8", "--pos", "1", "--freq", "fast"}},
    {2, "--layout must be interleaved, split or cos-first", NULL, {"table", "--d", "8", "--pos", "1", "--layout", "x"}},
    {2, "--preset must be vaswani", NULL, {"table", "--d", "8", "--pos", "1", "--preset", "nosuch"}},
    {2, "--freq cannot be combined with --preset", NULL, {"table", "--d", "8", "--pos", "1", "--preset", "fairseq", "--freq", "paper"}},
    {2, "--dtype must be f32, f16, bf16 or f64, got 'f8'", NULL, {"encode", "--seq", "4", "--d", "8", "--dtype", "f8", "-o", OUT}},
    {2, "--seq must be positive, got 0", NULL, {"encode", "--seq", "0", "--d", "8", "-o", OUT}},
    {2, "--seq must be between", NULL, {"encode", "--seq", "99999999999999999999", "--d", "8", "-o", OUT}},
    {2, "--seq expects a non-negative integer, got '12abc'", NULL, {"encode", "--seq", "12abc", "--d", "8", "-o", OUT}},
    {2, "--seq must be between", NULL, {"encode", "--seq", "-5", "--d", "8", "-o", OUT}},
    {2, "is too large (overflows 64 bits)", NULL, {"encode", "--seq", "4611686018427387904", "--d", "1024", "-o", OUT}},
    {2, "--start 9223372036854775807 plus --seq 10", NULL, {"encode", "--seq", "10", "--d", "8", "--start", "9223372036854775807", "-o", OUT}},
    {2, "--start is out of range", NULL, {"encode", "--seq", "10", "--d", "8", "--start", "-9223372036854775809", "-o", OUT}},
    {2, "-o FILE is required", NULL, {"encode", "--seq", "10", "--d", "8"}},
    {2, "-o must name a .npy file", NULL, {"encode", "--seq", "10", "--d", "8", "-o", "pe.txt"}},
    {2, "--d given more than once", NULL, {"encode", "--seq", "10", "--d", "8", "--d", "8", "-o", OUT}},
    {2, "--seq expects a value", NULL, {"encode", "--d", "8", "-o", OUT, "--seq"}},
    {2, "--device and --all-devices cannot be combined", NULL, {"check", "--device", "0", "--all-devices"}},
    {2, "plot: --seq must be at most 4096", NULL, {"plot", "--seq", "5000", "--d", "8", "-o", OUT}},
    {2, "--query 99 is outside", NULL, {"plot", "--seq", "10", "--d", "8", "--query", "99", "-o", OUT}},
    {1, "cannot write -o '/nonexistent-clpe-dir/x.npy'", NULL, {"encode", "--seq", "10", "--d", "8", "-o", "/nonexistent-clpe-dir/x.npy"}},
    {1, "cannot write -o", NULL, {"plot", "--seq", "10", "--d", "8", "-o", "/nonexistent-clpe-dir/x.png"}},
    {1, "--device 'no-such-device-xyz' matches no OpenCL device", NULL, {"encode", "--seq", "10", "--d", "8", "--device", "no-such-device-xyz", "-o", OUT}},
    {1, "--device '99' matches no OpenCL device", NULL, {"check", "--device", "99"}},
    {1, "CLPE_DEVICE='no-such-device-xyz' matches no OpenCL device", "CLPE_DEVICE=no-such-device-xyz", {"table", "--d", "8", "--pos", "1"}},
    {1, "does not support --dtype f64", "CLPE_CLI_HIDE_DTYPES=f64", {"encode", "--seq", "10", "--d", "8", "--dtype", "f64", "-o", OUT}},
    {1, "does not support --dtype bf16", "CLPE_CLI_HIDE_DTYPES=bf16", {"table", "--d", "8", "--pos", "1", "--dtype", "bf16"}},
    {2, "rope-cache: --head-dim is required", NULL, {"rope-cache", "--seq", "4", ROPE_OUTS}},
    {2, "rope-cache: --seq is required", NULL, {"rope-cache", "--head-dim", "8", ROPE_OUTS}},
    {2, "rope-cache: --cos-out FILE is required", NULL, {ROPE_ARGS, "--sin-out", OUT2}},
    {2, "rope-cache: --sin-out FILE is required", NULL, {ROPE_ARGS, "--cos-out", OUT}},
    {2, "rope-cache does not take --d", NULL, {ROPE_ARGS, "--d", "8", ROPE_OUTS}},
    {2, "--head-dim must be at least 2, got 1", NULL, {"rope-cache", "--seq", "4", "--head-dim", "1", ROPE_OUTS}},
    {2, "--head-dim expects a non-negative integer, got 'x8'", NULL, {"rope-cache", "--seq", "4", "--head-dim", "x8", ROPE_OUTS}},
    {2, "--rotary-dim 12 is larger than --head-dim 8", NULL, {ROPE_ARGS, "--rotary-dim", "12", ROPE_OUTS}},
    {2, "--rotary-dim must be even (it rotates pairs), got 5", NULL, {ROPE_ARGS, "--rotary-dim", "5", ROPE_OUTS}},
    {2, "--head-dim without --rotary-dim must be even", NULL, {"rope-cache", "--seq", "4", "--head-dim", "7", ROPE_OUTS}},
    {2, "--pairing must be half or interleaved, got 'split'", NULL, {ROPE_ARGS, "--pairing", "split", ROPE_OUTS}},
    {2, "--scaling must be default, linear, dynamic, yarn, llama3 or longrope, got 'ntk'", NULL, {ROPE_ARGS, "--scaling", "ntk", ROPE_OUTS}},
    {2, "--scaling linear needs --factor", NULL, {ROPE_ARGS, "--scaling", "linear", ROPE_OUTS}},
    {2, "--scaling llama3 needs --original-max-position", NULL, {ROPE_ARGS, "--scaling", "llama3", "--factor", "8", ROPE_OUTS}},
    {2, "--factor does not apply to --scaling default", NULL, {ROPE_ARGS, "--factor", "2", ROPE_OUTS}},
    {2, "--beta-fast does not apply to --scaling linear", NULL, {ROPE_ARGS, "--scaling", "linear", "--factor", "2", "--beta-fast", "4", ROPE_OUTS}},
    {2, "--factor must be at least 1, got 0.5", NULL, {ROPE_ARGS, "--scaling", "linear", "--factor", "0.5", ROPE_OUTS}},
    {2, "--factor expects a number, got 'two'", NULL, {ROPE_ARGS, "--scaling", "linear", "--factor", "two", ROPE_OUTS}},
    {2, "--beta-fast (1) must be at least --beta-slow (2)", NULL, {ROPE_ARGS, "--scaling", "yarn", "--factor", "4", "--original-max-position", "64", "--beta-fast", "1", "--beta-slow", "2", ROPE_OUTS}},
    {2, "--base must be a finite number above 1, got 0.5", NULL, {ROPE_ARGS, "--base", "0.5", ROPE_OUTS}},
    {2, "--start 9223372036854775807 plus --seq 4", NULL, {ROPE_ARGS, "--start", "9223372036854775807", ROPE_OUTS}},
    {2, "--cos-out and --sin-out name the same file", NULL, {ROPE_ARGS, "--cos-out", OUT, "--sin-out", OUT}},
    {2, "--sin-out must name a .npy file, got 'sin.txt'", NULL, {ROPE_ARGS, "--cos-out", OUT, "--sin-out", "sin.txt"}},
    /* a 2-wide dynamic rotation divides by zero in Hugging Face's formula: the library refuses it */
    {2, "rope-cache: rotary: unknown scaling or a scaling parameter out of range", NULL, {"rope-cache", "--seq", "4", "--head-dim", "2", "--scaling", "dynamic", "--factor", "2", "--original-max-position", "8", ROPE_OUTS}},
    /* the sin path is tried before the cos file is written: no cos file either */
    {1, "cannot write --sin-out '/nonexistent-clpe-dir/s.npy'", NULL, {ROPE_ARGS, "--cos-out", OUT, "--sin-out", "/nonexistent-clpe-dir/s.npy"}},
    {1, "does not support --dtype f64", "CLPE_CLI_HIDE_DTYPES=f64", {ROPE_ARGS, "--dtype", "f64", ROPE_OUTS}},
};

Test(cli, every_bad_input_fails_cleanly, .timeout = 120)
{
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; ++i) {
        const bad_case *c = &BAD[i];
        char dir[64], out[160], out2[160];
        make_dir(dir, sizeof dir);
        snprintf(out2, sizeof out2, "%s/sin.npy", dir);
        const char *args[24];
        int k = 0;
        for (; c->args[k]; ++k) {
            if (strcmp(c->args[k], OUT) == 0) {
                int is_plot = strcmp(c->args[0], "plot") == 0;
                snprintf(out, sizeof out, "%s/out.%s", dir, is_plot ? "png" : "npy");
                args[k] = out;
            } else if (strcmp(c->args[k], OUT2) == 0) {
                args[k] = out2;
            } else {
                args[k] = c->args[k];
            }
        }
        args[k] = NULL;
        const char *env[2] = {c->env, NULL};
        run_result r = run_env(c->env ? env : NULL, args);
        cr_expect_eq(r.status, c->status, "case %zu (%s ...): exit %d, want %d; stderr [%s]", i,
                     c->args[0] ? c->args[0] : "", r.status, c->status, r.err);
        assert_one_error_line(&r, c->needle);
        cr_expect_str_eq(r.out, "", "case %zu wrote to stdout", i);
        cr_expect_eq(dir_entries(dir), 0, "case %zu left a file behind", i);
        run_free(&r);
        rm_dir(dir);
    }
}

Test(cli, output_path_that_is_a_directory, .timeout = 60)
{
    char dir[64], sub[128];
    make_dir(dir, sizeof dir);
    snprintf(sub, sizeof sub, "%s/already.npy", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    run_result r = RUN("encode", "--seq", "4", "--d", "8", "-o", sub);
    cr_assert_eq(r.status, 1);
    assert_one_error_line(&r, "is a directory");
    cr_assert_eq(dir_entries(dir), 1);
    run_free(&r);
    rmdir(sub);
    rm_dir(dir);
}

Test(cli, unwritable_directory, .timeout = 60)
{
    if (geteuid() == 0)
        cr_skip_test("root can write into a read-only directory");
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    cr_assert_eq(chmod(dir, 0555), 0);
    snprintf(path, sizeof path, "%s/x.npy", dir);
    run_result r = RUN("encode", "--seq", "4", "--d", "8", "-o", path);
    cr_assert_eq(r.status, 1);
    assert_one_error_line(&r, "cannot write -o");
    chmod(dir, 0755);
    cr_assert_eq(dir_entries(dir), 0);
    run_free(&r);
    rm_dir(dir);
}

/* ---- output files by node type ------------------------------------------------------
 * A new path or a regular file is written under a temporary name and renamed
 * (keeping an existing file's mode); a link is followed; FIFOs, character
 * devices and the tool's own descriptors are written in place; read-only
 * files, block devices and directories are refused. Every node is made in a
 * fresh temporary directory. */

/* The bytes of `clpe encode --seq 4 --d 4` (f32, positions 0..3). */
static char *reference_npy(size_t *len)
{
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ref.npy", dir);
    run_result r = RUN("encode", "--seq", "4", "--d", "4", "-q", "-o", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    run_free(&r);
    char *bytes = slurp(path, len);
    rm_dir(dir);
    cr_assert(*len == 128 + 4 * 4 * 4, "reference .npy is %zu bytes", *len);
    return bytes;
}

static void assert_file_is(const char *path, const char *want, size_t want_len)
{
    size_t len = 0;
    char *got = slurp(path, &len);
    cr_assert(len == want_len && memcmp(got, want, len) == 0, "%s: %zu bytes, not the %zu expected",
              path, len, want_len);
    free(got);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
    return st.st_mode;
}

static void write_text(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    cr_assert_eq(chmod(path, mode), 0);
}

Test(cli, output_symlink_is_followed_and_kept, .timeout = 60)
{
    size_t ref_len;
    char *ref = reference_npy(&ref_len);
    char dir[64], target[128], link[128], sub[128], dangling[128], created[160];
    make_dir(dir, sizeof dir);
    snprintf(target, sizeof target, "%s/t.txt", dir);
    snprintf(link, sizeof link, "%s/l.npy", dir);
    write_text(target, "old", 0640);
    cr_assert_eq(symlink("t.txt", link), 0); /* relative: resolved against the link's directory */
    run_result r = RUN("encode", "--seq", "4", "--d", "4", "-q", "-o", link);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(S_ISLNK(mode_of(link)), "the link was replaced");
    char back[64] = "";
    cr_assert_eq(readlink(link, back, sizeof back - 1), 5);
    cr_assert_str_eq(back, "t.txt");
    assert_file_is(target, ref, ref_len);
    cr_assert_eq(mode_of(target) & 07777, 0640, "target mode %o", mode_of(target) & 07777);
    cr_assert_eq(dir_entries(dir), 2, "temporary file left behind");
    run_free(&r);

    /* A dangling link: its target is created, in the target's directory. */
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(dangling, sizeof dangling, "%s/d.npy", dir);
    snprintf(created, sizeof created, "%s/new.npy", sub);
    cr_assert_eq(mkdir(sub, 0755), 0);
    cr_assert_eq(symlink("sub/new.npy", dangling), 0);
    r = RUN("encode", "--seq", "4", "--d", "4", "-q", "-o", dangling);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(S_ISLNK(mode_of(dangling)));
    assert_file_is(created, ref, ref_len);
    cr_assert_eq(dir_entries(sub), 1);
    run_free(&r);
    unlink(created);
    rmdir(sub);
    free(ref);
    rm_dir(dir);
}

static void umask_022(void) { umask(022); }

Test(cli, output_regular_file_keeps_its_mode, .timeout = 60)
{
    char dir[64], path[128], fresh[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/x.npy", dir);
    snprintf(fresh, sizeof fresh, "%s/fresh.npy", dir);
    write_text(path, "old contents", 0600);
    run_result r = run_full(NULL, (const char *const[]){"encode", "--seq", "4", "--d", "4", "-q",
                                                         "-o", path, NULL}, umask_022);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(S_ISREG(mode_of(path)));
    cr_assert_eq(mode_of(path) & 07777, 0600, "mode became %o", mode_of(path) & 07777);
    npy_file f = npy_load(path);
    cr_assert_eq(f.rows, 4);
    free(f.whole);
    run_free(&r);
    /* A new file: what fopen would create, 0666 less the umask. */
    r = run_full(NULL, (const char *const[]){"encode", "--seq", "4", "--d", "4", "-q", "-o", fresh,
                                             NULL}, umask_022);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(mode_of(fresh) & 07777, 0644, "new file mode %o", mode_of(fresh) & 07777);
    cr_assert_eq(dir_entries(dir), 2);
    run_free(&r);
    rm_dir(dir);
}

Test(cli, output_read_only_file_is_refused, .timeout = 60)
{
    /* Refused for everyone, root included: a file without any write bit is
     * write-protected on purpose (see README, Guarantees). */
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ro.npy", dir);
    write_text(path, "keep me", 0444);
    run_result r = RUN("encode", "--seq", "4", "--d", "4", "-o", path);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "read-only");
    assert_file_is(path, "keep me", 7);
    cr_assert_eq(mode_of(path) & 07777, 0444);
    cr_assert_eq(dir_entries(dir), 1, "temporary file left behind");
    run_free(&r);
    rm_dir(dir);
}

Test(cli, output_fifo_is_streamed_in_place, .timeout = 60)
{
    size_t ref_len;
    char *ref = reference_npy(&ref_len);
    char dir[64], fifo[128], got[128];
    make_dir(dir, sizeof dir);
    snprintf(fifo, sizeof fifo, "%s/p.npy", dir);
    snprintf(got, sizeof got, "%s/got.bin", dir);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    pid_t reader = fork();
    cr_assert(reader >= 0);
    if (reader == 0) {
        int in = open(fifo, O_RDONLY);
        int out = open(got, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        char buf[4096];
        ssize_t n;
        while (in >= 0 && (n = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)n) != n)
                _exit(1);
        _exit(0);
    }
    run_result r = RUN("encode", "--seq", "4", "--d", "4", "-q", "-o", fifo);
    /* Before the fix the FIFO was replaced and the reader would wait forever. */
    int st = 0;
    for (int i = 0; i < 500 && waitpid(reader, &st, WNOHANG) == 0; ++i)
        sleep_ms(10);
    if (waitpid(reader, &st, WNOHANG) == 0) {
        kill(reader, SIGKILL);
        waitpid(reader, &st, 0);
        cr_assert_fail("the reader of the FIFO got no end of file");
    }
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(S_ISFIFO(mode_of(fifo)), "the FIFO was replaced");
    assert_file_is(got, ref, ref_len);
    cr_assert_eq(dir_entries(dir), 2);
    run_free(&r);
    free(ref);
    rm_dir(dir);
}

/* A character device node in dir, like the system's (1,3) null or (1,7)
 * full; 0 if this system lets no one make or open one (a container's
 * device rules; then the test skips). */
static int make_char_device(const char *path, unsigned minor)
{
    if (mknod(path, S_IFCHR | 0666, makedev(1, minor)) != 0)
        return 0;
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

Test(cli, output_char_device_is_streamed_in_place, .timeout = 60)
{
    char dir[64], null_dev[128], full_dev[128];
    make_dir(dir, sizeof dir);
    snprintf(null_dev, sizeof null_dev, "%s/null.npy", dir);
    snprintf(full_dev, sizeof full_dev, "%s/full.png", dir);
    if (!make_char_device(null_dev, 3) || !make_char_device(full_dev, 7)) {
        int e = errno;
        rm_dir(dir);
        cr_skip_test("cannot make a character device in a temporary directory: %s", strerror(e));
    }
    run_result r = RUN("encode", "--seq", "64", "--d", "16", "-q", "-o", null_dev);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(S_ISCHR(mode_of(null_dev)), "the device node was replaced");
    run_free(&r);
    /* A device that is always full: the write fails, in one line of clpe's,
     * with nothing of libpng's own. */
    r = RUN("plot", "--seq", "64", "--d", "16", "-o", full_dev);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "No space left on device");
    cr_assert(!strstr(r.err, "libpng"), "[%s]", r.err);
    cr_assert(S_ISCHR(mode_of(full_dev)), "the device node was replaced");
    cr_assert_eq(dir_entries(dir), 2);
    run_free(&r);
    rm_dir(dir);
}

Test(cli, output_block_device_and_directory_are_refused, .timeout = 60)
{
    char dir[64], blk[128];
    make_dir(dir, sizeof dir);
    snprintf(blk, sizeof blk, "%s/disk.npy", dir);
    if (mknod(blk, S_IFBLK | 0600, makedev(7, 0)) != 0) {
        int e = errno;
        rm_dir(dir);
        cr_skip_test("cannot make a block device in a temporary directory: %s", strerror(e));
    }
    run_result r = RUN("encode", "--seq", "4", "--d", "4", "-o", blk);
    cr_assert_eq(r.status, 1);
    assert_one_error_line(&r, "block device");
    cr_assert(S_ISBLK(mode_of(blk)), "the block device node was replaced");
    cr_assert_eq(dir_entries(dir), 1);
    run_free(&r);
    rm_dir(dir);
}

Test(cli, output_link_to_own_descriptor_writes_stdout, .timeout = 60)
{
    /* /dev/stdout is such a link; one made here stands for it, so the test
     * never aims at the system's /dev. */
    size_t ref_len;
    char *ref = reference_npy(&ref_len);
    static const char *const targets[] = {"/dev/fd/1", "/proc/self/fd/1"};
    for (int k = 0; k < 2; ++k) {
        char dir[64], link[128];
        make_dir(dir, sizeof dir);
        snprintf(link, sizeof link, "%s/stdout.npy", dir);
        cr_assert_eq(symlink(targets[k], link), 0);
        run_result r = RUN("encode", "--seq", "4", "--d", "4", "-q", "-o", link);
        cr_assert_eq(r.status, 0, "%s: %s", targets[k], r.err);
        cr_assert(r.out_len == ref_len && memcmp(r.out, ref, ref_len) == 0,
                  "%s: stdout has %zu bytes, not the .npy", targets[k], r.out_len);
        cr_assert(S_ISLNK(mode_of(link)), "%s: the link was replaced", targets[k]);
        cr_assert_eq(dir_entries(dir), 1);
        run_free(&r);
        rm_dir(dir);
    }
    free(ref);
}

Test(cli, long_file_names_fit_their_temporary_name, .timeout = 60)
{
    char dir[64], path[512], name[300];
    make_dir(dir, sizeof dir);
    /* 255 bytes: the longest name a Linux file system takes. */
    memset(name, 'n', 251);
    memcpy(name + 251, ".npy", 5);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    run_result r = RUN("encode", "--seq", "4", "--d", "4", "-q", "-o", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    npy_file f = npy_load(path);
    cr_assert_eq(f.rows, 4);
    free(f.whole);
    run_free(&r);
    unlink(path);
    /* 256 bytes: too long, one line, nothing left. */
    memset(name, 'n', 252);
    memcpy(name + 252, ".npy", 5);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    r = RUN("encode", "--seq", "4", "--d", "4", "-o", path);
    cr_assert_eq(r.status, 1);
    assert_one_error_line(&r, "File name too long");
    cr_assert_eq(dir_entries(dir), 0);
    run_free(&r);
    rm_dir(dir);
}

/* ---- signals and limits ----------------------------------------------------------- */

static void ignore_sighup(void) { signal(SIGHUP, SIG_IGN); }

Test(cli, inherited_ignored_signal_stays_ignored, .timeout = 120)
{
    /* nohup clpe encode ... &; kill -HUP: the encode must finish. */
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pe.npy", dir);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, STDERR_FILENO);
        ignore_sighup();
        execl(CLPE_CLI_PATH, CLPE_CLI_PATH, "encode", "--seq", "200000", "--d", "64",
              "--chunk-rows", "256", "-o", path, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 2000 && dir_entries(dir) == 0; ++i)
        sleep_ms(1);
    for (int k = 0; k < 5; ++k) {
        kill(pid, SIGHUP);
        sleep_ms(5);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "encode did not finish (status %d)", st);
    npy_file f = npy_load(path);
    cr_assert_eq(f.rows, 200000);
    cr_assert_eq(f.data_len, (size_t)200000 * 64 * 4);
    free(f.whole);
    cr_assert_eq(dir_entries(dir), 1);
    rm_dir(dir);
}

/* `ulimit -f 8192` in an ordinary shell, where SIGXFSZ has its default
 * action (kill), whatever the test runner inherited. */
static void limit_file_size_8mib(void)
{
    struct rlimit rl = {8u << 20, 8u << 20};
    setrlimit(RLIMIT_FSIZE, &rl);
    signal(SIGXFSZ, SIG_DFL);
}

Test(cli, file_size_limit_is_a_clean_error, .timeout = 120)
{
    /* ulimit -f: no SIGXFSZ death, one line, no temporary file. The limit
     * leaves room for the OpenCL compiler's own files. */
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/big.npy", dir);
    run_result r = run_full(NULL, (const char *const[]){"encode", "--seq", "100000", "--d", "64",
                                                         "-o", path, NULL}, limit_file_size_8mib);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "file too large");
    cr_assert_eq(dir_entries(dir), 0, "temporary file left behind");
    run_free(&r);
    rm_dir(dir);
}

Test(cli, free_space_check_does_not_wrap, .timeout = 60)
{
    /* (2^61 - 1) rows of 8 bytes plus the header pass 2^64: the sum used to
     * wrap and pass the check, then fill the disk. The file-size limit only
     * keeps a broken build from doing that here. */
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/w.npy", dir);
    run_result r = run_full(NULL, (const char *const[]){"encode", "--seq", "2305843009213693951",
                                                         "--d", "2", "-o", path, NULL},
                            limit_file_size_8mib);
    cr_assert(r.status == 1 || r.status == 2, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "would pass 2^64 bytes");
    cr_assert_eq(dir_entries(dir), 0);
    run_free(&r);
    /* Without the wrap: more than any disk, refused before writing. */
    r = run_full(NULL, (const char *const[]){"encode", "--seq", "1099511627776", "--d", "1024",
                                             "-o", path, NULL}, limit_file_size_8mib);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "free");
    cr_assert_eq(dir_entries(dir), 0);
    run_free(&r);
    rm_dir(dir);
}

/* ---- numbers and messages --------------------------------------------------------- */

Test(cli, numbers_are_decimal, .timeout = 60)
{
    run_result a = RUN("table", "--d", "4", "--pos", "010,08,-07:-5");
    run_result b = RUN("table", "--d", "4", "--pos", "10,8,-7,-6");
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_str_eq(a.out, b.out);
    run_free(&a);
    run_free(&b);
    a = RUN("table", "--d", "08", "--pos", "1", "--base", "010000");
    b = RUN("table", "--d", "8", "--pos", "1");
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_str_eq(a.out, b.out);
    run_free(&a);
    run_free(&b);

    /* --seq 010 --start 0100: ten rows from position 100. */
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pe.npy", dir);
    a = RUN("encode", "--seq", "010", "--d", "4", "--start", "0100", "-q", "-o", path);
    cr_assert_eq(a.status, 0, "%s", a.err);
    npy_file f = npy_load(path);
    cr_assert_eq(f.rows, 10);
    clpe_config cfg = clpe_config_default(4);
    clpe_status st = CLPE_SUCCESS;
    clpe_encoder *host = clpe_encoder_create_host(&cfg, &st);
    cr_assert(host);
    float ref[40];
    cr_assert_eq(clpe_host_table(host, 100, 10, ref, 0), CLPE_SUCCESS);
    cr_assert_eq(f.data_len, sizeof ref);
    cr_assert(memcmp(f.data, ref, sizeof ref) == 0, "rows are not positions 100..109");
    clpe_encoder_release(host);
    free(f.whole);
    run_free(&a);
    rm_dir(dir);

    /* Hexadecimal is refused, not read. */
    a = RUN("table", "--d", "4", "--pos", "0x10");
    cr_assert_eq(a.status, 2);
    assert_one_error_line(&a, "--pos expects an integer, got '0x10'");
    run_free(&a);
    a = RUN("table", "--d", "4", "--pos", "1", "--base", "0x1p4");
    cr_assert_eq(a.status, 2);
    assert_one_error_line(&a, "--base expects a number");
    run_free(&a);
}

Test(cli, echoed_values_stay_on_one_line, .timeout = 60)
{
    static const struct {
        int status;
        const char *needle;
        const char *args[12];
    } cases[] = {
        {2, "got 'a\\nb'", {"encode", "--seq", "4", "--d", "4", "-o", "a\nb"}},
        {2, "unknown command 'a\\nb'", {"a\nb"}},
        {2, "--d expects a positive even integer, got '4\\t\\x1b'", {"table", "--d", "4\t\x1b",
                                                                     "--pos", "1"}},
        {1, "--device 'x\\ny'", {"table", "--d", "4", "--pos", "1", "--device", "x\ny"}},
        {2, "got 'x\\ny'", {"table", "--d", "4", "--pos", "1", "--preset", "x\ny"}},
        {2, "got '\\x1b[31m'", {"table", "--d", "4", "--pos", "1", "--preset", "\x1b[31m"}},
        {1, "/no-such-clpe-dir/a\\r\\nb.npy", {"encode", "--seq", "4", "--d", "4", "-o",
                                               "/no-such-clpe-dir/a\r\nb.npy"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        run_result r = run_env(NULL, cases[i].args);
        cr_expect_eq(r.status, cases[i].status, "case %zu: exit %d [%s]", i, r.status, r.err);
        assert_one_error_line(&r, cases[i].needle);
        run_free(&r);
    }
}

/* ---- conventions ------------------------------------------------------------------ */

/* The encoder's rows for positions first .. first + n - 1, from the host
 * emulation, as f32. */
static void host_rows(const clpe_config *cfg, int64_t first, size_t n, float *out)
{
    clpe_status st = CLPE_SUCCESS;
    clpe_encoder *host = clpe_encoder_create_host(cfg, &st);
    cr_assert(host, "host encoder: %s", clpe_status_string(st));
    cr_assert_eq(clpe_host_table(host, first, n, out, 0), CLPE_SUCCESS);
    clpe_encoder_release(host);
}

static void encode_rows(const char *const *args, float *out, size_t n_floats)
{
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pe.npy", dir);
    const char *argv[24];
    int k = 0;
    for (; args[k]; ++k)
        argv[k] = args[k];
    argv[k++] = "-q";
    argv[k++] = "-o";
    argv[k++] = path;
    argv[k] = NULL;
    run_result r = run_env(NULL, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    npy_file f = npy_load(path);
    cr_assert_eq(f.data_len, n_floats * sizeof(float));
    memcpy(out, f.data, f.data_len);
    free(f.whole);
    run_free(&r);
    rm_dir(dir);
}

Test(cli, padding_idx_zeroes_its_row_and_starts_after_it, .timeout = 60)
{
    clpe_config cfg;
    int64_t first = 0;
    cr_assert_eq(clpe_config_preset("fairseq", 6, &cfg, &first), CLPE_SUCCESS);
    cfg.padding_position = 5;
    float got[8 * 6], want[8 * 6];
    /* fairseq, padding_idx 5: rows start at 6, position 5 is never listed. */
    encode_rows((const char *const[]){"encode", "--seq", "8", "--d", "6", "--preset", "fairseq",
                                      "--padding-idx", "5", NULL}, got, 48);
    host_rows(&cfg, 6, 8, want);
    cr_assert(memcmp(got, want, sizeof got) == 0, "fairseq --padding-idx 5 differs");
    /* With --start, position 5 inside the rows: all zeros. */
    encode_rows((const char *const[]){"encode", "--seq", "8", "--d", "6", "--preset", "fairseq",
                                      "--padding-idx", "5", "--start", "3", NULL}, got, 48);
    host_rows(&cfg, 3, 8, want);
    cr_assert(memcmp(got, want, sizeof got) == 0, "fairseq --padding-idx 5 --start 3 differs");
    for (int k = 0; k < 6; ++k)
        cr_assert_eq(got[2 * 6 + k], 0.0f, "row of position 5 is not zero");
    cr_assert_neq(got[1 * 6 + 3], 0.0f); /* cos of position 4 */

    /* Without a preset: the same two settings on the defaults. */
    clpe_config plain = clpe_config_default(6);
    plain.flags = CLPE_FLAG_PADDING_ROW;
    plain.padding_position = 0;
    encode_rows((const char *const[]){"encode", "--seq", "8", "--d", "6", "--padding-idx", "0",
                                      "--start", "0", NULL}, got, 48);
    host_rows(&plain, 0, 8, want);
    cr_assert(memcmp(got, want, sizeof got) == 0, "--padding-idx 0 differs");
    for (int k = 0; k < 6; ++k)
        cr_assert_eq(got[k], 0.0f, "row of position 0 is not zero");

    run_result r = RUN("table", "--d", "4", "--pos", "1", "--padding-idx", "9223372036854775807");
    cr_assert_eq(r.status, 2);
    assert_one_error_line(&r, "--padding-idx must be below 2^63-1");
    run_free(&r);
    r = RUN("table", "--d", "4", "--pos", "1", "--padding-idx", "one");
    cr_assert_eq(r.status, 2);
    assert_one_error_line(&r, "--padding-idx expects an integer");
    run_free(&r);
}

/* Skip, naming why, when the linked library does not know a convention yet. */
static void require_library_convention(const clpe_config *cfg, const char *what)
{
    if (clpe_config_check(cfg) != CLPE_SUCCESS)
        cr_skip_test("the library does not accept %s yet", what);
}

Test(cli, cos_first_layout_is_passed_to_the_library, .timeout = 60)
{
    clpe_config cfg = clpe_config_default(8);
    cfg.layout = CLPE_LAYOUT_SPLIT_COS_FIRST;
    require_library_convention(&cfg, "--layout cos-first");
    float got[5 * 8], want[5 * 8];
    encode_rows((const char *const[]){"encode", "--seq", "5", "--d", "8", "--layout", "cos-first",
                                      "--start", "7", NULL}, got, 40);
    host_rows(&cfg, 7, 5, want);
    cr_assert(memcmp(got, want, sizeof got) == 0, "--layout cos-first differs");
    run_result r = RUN("table", "--d", "4", "--pos", "0", "--layout", "cos-first");
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* the header names the slots in order: cosines first */
    const char *c0 = strstr(r.out, "cos0"), *c1 = strstr(r.out, "cos1");
    const char *s0 = strstr(r.out, "sin0"), *s1 = strstr(r.out, "sin1");
    cr_assert(c0 && c1 && s0 && s1 && c0 < c1 && c1 < s0 && s0 < s1, "[%s]", r.out);
    run_free(&r);
}

Test(cli, new_presets_are_passed_to_the_library, .timeout = 60)
{
    static const char *const names[] = {"xlm", "musicgen"};
    for (int k = 0; k < 2; ++k) {
        clpe_config cfg;
        int64_t first = 0;
        if (clpe_config_preset(names[k], 8, &cfg, &first) != CLPE_SUCCESS)
            cr_skip_test("the library does not know --preset %s yet", names[k]);
        float got[4 * 8], want[4 * 8];
        encode_rows((const char *const[]){"encode", "--seq", "4", "--d", "8", "--preset",
                                          names[k], NULL}, got, 32);
        host_rows(&cfg, first, 4, want);
        cr_assert(memcmp(got, want, sizeof got) == 0, "--preset %s differs", names[k]);
    }
}

/* ---- encode's rate against the plain write rate ----------------------------------- */

Test(cli, measure_write_reports_both_rates_and_leaves_the_right_file, .timeout = 120)
{
    char dir[64], path[128], fifo[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pe.npy", dir);
    /* 9 chunks through the pipeline's 4 buffers, the last one short. */
    run_result r = RUN("encode", "--seq", "1000", "--d", "64", "--chunk-rows", "112",
                       "--start", "-37", "--measure-write", "-q", "-o", path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "plain write of the same bytes to the same file system"), "[%s]",
              r.err);
    cr_assert(strstr(r.err, "ratio ") && strstr(r.err, "CPU time"), "[%s]", r.err);
    /* and the same writes after reserving the bytes, as the encode writes */
    cr_assert(strstr(r.err, "the same writes after reserving the bytes") &&
                  strstr(r.err, "the writer reserved the file in"),
              "[%s]", r.err);
    /* The timing passes are emptied again: the file holds the encoding only. */
    npy_file f = npy_load(path);
    cr_assert_eq(f.rows, 1000);
    clpe_config cfg = clpe_config_default(64);
    float *ref = malloc(1000 * 64 * sizeof *ref);
    cr_assert(ref);
    host_rows(&cfg, -37, 1000, ref);
    /* the bytes were reserved with the size kept: the file ends where its data ends */
    cr_assert_eq(f.data_len, 1000 * 64 * sizeof *ref);
    cr_assert(memcmp(f.data, ref, f.data_len) == 0, "data differ from the host emulation");
    free(ref);
    free(f.whole);
    cr_assert_eq(dir_entries(dir), 1, "temporary file left behind");
    run_free(&r);

    /* Nothing to time on a FIFO: a usage error, found before the FIFO is
     * opened; its reader (open without waiting) sees no byte. */
    snprintf(fifo, sizeof fifo, "%s/p.npy", dir);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    int in = open(fifo, O_RDONLY | O_NONBLOCK);
    cr_assert(in >= 0);
    r = RUN("encode", "--seq", "4", "--d", "4", "--measure-write", "-o", fifo);
    cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "--measure-write needs -o to name a file");
    char c;
    cr_assert(read(in, &c, 1) <= 0, "the FIFO's reader got bytes");
    close(in);
    cr_assert(S_ISFIFO(mode_of(fifo)), "the FIFO was replaced");
    run_free(&r);
    rm_dir(dir);
}

/* Run as an ordinary user (nobody), where the test itself runs as root. The
 * working directory may be one nobody cannot enter. */
static void become_nobody(void)
{
    if (chdir("/") != 0 || setgid(65534) != 0 || setuid(65534) != 0)
        _exit(126);
    /* Under the sanitizers, their suppression files lie in the source tree,
     * which nobody may not be able to read: a sanitizer refuses to start
     * then. Drop those entries (and, without its suppressions, leak
     * detection: the runs as root check leaks). */
    static const char *const names[] = {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS",
                                        "TSAN_OPTIONS"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
        const char *value = getenv(names[k]);
        if (!value || !strstr(value, "suppressions="))
            continue;
        char in[2048], out[2048] = "";
        snprintf(in, sizeof in, "%s", value);
        int dropped = 0;
        for (char *save = NULL, *opt = strtok_r(in, ":", &save); opt;
             opt = strtok_r(NULL, ":", &save)) {
            if (strncmp(opt, "suppressions=", 13) == 0 && access(opt + 13, R_OK) != 0) {
                dropped = 1;
                continue;
            }
            size_t used = strlen(out);
            snprintf(out + used, sizeof out - used, "%s%s", used ? ":" : "", opt);
        }
        if (dropped && k < 2) {
            size_t used = strlen(out);
            snprintf(out + used, sizeof out - used, "%sdetect_leaks=0", used ? ":" : "");
        }
        setenv(names[k], out, 1);
    }
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(in >= 0 && out >= 0, "copy %s to %s: %s", from, to, strerror(errno));
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        cr_assert_eq(write(out, buf, (size_t)n), n);
    cr_assert_eq(n, 0);
    close(in);
    close(out);
    cr_assert_eq(chmod(to, mode), 0);
}

/* 1 if user nobody may read path (every folder on the way searchable). */
static int nobody_can_read(const char *path)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(setgid(65534) == 0 && setuid(65534) == 0 && access(path, R_OK) == 0 ? 0 : 1);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Skips the test when an OpenCL runtime the tests load lies where nobody
 * cannot read it: a .icd file names its library by path, and a runtime
 * installed in the user's home (Intel's, from scripts/setup.sh) is out of
 * nobody's reach, so the tool would fail for want of a device, not for the
 * reason the test is about. The same tool's runs as root cover it. */
static void skip_unless_nobody_reaches_runtimes(void)
{
    char library[512];
    const char *icds = getenv("OCL_ICD_VENDORS");
    DIR *d = icds ? opendir(icds) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".icd") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", icds, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f || !fgets(library, sizeof library, f))
            library[0] = '\0';
        if (f)
            fclose(f);
        library[strcspn(library, "\r\n")] = '\0';
        if (library[0] == '/' && !nobody_can_read(library)) {
            closedir(d);
            cr_skip_test("the OpenCL runtime %s lies where user nobody cannot read it "
                         "(a home folder); the tool's runs as root cover it",
                         library);
        }
    }
    if (d)
        closedir(d);
    /* the Khronos loader's list of runtimes, colon-separated */
    const char *names = getenv("OCL_ICD_FILENAMES");
    snprintf(library, sizeof library, "%s", names ? names : "");
    for (char *save = NULL, *one = strtok_r(library, ":", &save); one;
         one = strtok_r(NULL, ":", &save))
        if (one[0] == '/' && !nobody_can_read(one))
            cr_skip_test("the OpenCL runtime %s lies where user nobody cannot read it "
                         "(a home folder); the tool's runs as root cover it",
                         one);
}

/* Copies into DIR/run what another user needs to run the tool: the tool,
 * libclpe (where it is shared) and the OpenCL vendor files the tests use,
 * since the build tree may lie in a directory only its owner can enter (a
 * home of mode 0700). Points cli_program at the copy; writes the
 * environment the copy needs into env (NULL-terminated, at most 3 entries). */
static void stage_tool_for_others(const char *dir, char storage[3][320], const char *env[4])
{
    char run[160], vendors[192];
    snprintf(run, sizeof run, "%s/run", dir);
    cr_assert_eq(mkdir(run, 0755), 0);
    cr_assert_eq(chmod(run, 0755), 0);
    static char program[192];
    snprintf(program, sizeof program, "%s/clpe", run);
    copy_file(CLPE_CLI_PATH, program, 0755);
    int n = 0;
#ifdef CLPE_LIBRARY_FILE
    char library[320];
    snprintf(library, sizeof library, "%s/%s", run, CLPE_LIBRARY_SONAME);
    copy_file(CLPE_LIBRARY_FILE, library, 0755);
    snprintf(storage[n], sizeof storage[n], "LD_LIBRARY_PATH=%s", run);
    env[n] = storage[n];
    ++n;
#endif
    const char *icds = getenv("OCL_ICD_VENDORS");
    DIR *d = icds ? opendir(icds) : NULL;
    if (d) {
        snprintf(vendors, sizeof vendors, "%s/vendors", run);
        cr_assert_eq(mkdir(vendors, 0755), 0);
        cr_assert_eq(chmod(vendors, 0755), 0);
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t len = strlen(e->d_name);
            if (len < 5 || strcmp(e->d_name + len - 4, ".icd") != 0)
                continue;
            char from[512], to[512];
            snprintf(from, sizeof from, "%s/%s", icds, e->d_name);
            snprintf(to, sizeof to, "%s/%s", vendors, e->d_name);
            copy_file(from, to, 0644);
        }
        closedir(d);
        snprintf(storage[n], sizeof storage[n], "OCL_ICD_VENDORS=%s", vendors);
        env[n] = storage[n];
        ++n;
    }
    env[n] = NULL;
    cli_program = program;
}

Test(cli, output_file_the_user_cannot_write_is_refused, .timeout = 60)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to run the tool as another user");
    skip_unless_nobody_reaches_runtimes();
    /* A directory anyone may write into, holding root's 0644 file: nobody
     * could make a temporary file there and rename it over root's file, but
     * may not, because nobody cannot write that file. */
    char dir[64], path[128], cache[128], env[160];
    make_dir(dir, sizeof dir);
    cr_assert_eq(chmod(dir, 0777), 0); /* no sticky bit: renaming over is allowed */
    snprintf(path, sizeof path, "%s/root.npy", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    cr_assert_eq(mkdir(cache, 0777), 0);
    cr_assert_eq(chmod(cache, 0777), 0);
    write_text(path, "root's", 0644);
    snprintf(env, sizeof env, "POCL_CACHE_DIR=%s", cache);
    char storage[3][320];
    const char *staged[4];
    stage_tool_for_others(dir, storage, staged);
    const char *envs[5] = {env};
    for (int i = 0; staged[i]; ++i)
        envs[i + 1] = staged[i];
    run_result r = run_full(envs,
                            (const char *const[]){"encode", "--seq", "4", "--d", "4", "-o", path,
                                                  NULL},
                            become_nobody);
    cli_program = CLPE_CLI_PATH;
    cr_assert_neq(r.status, 126, "cannot become nobody");
    cr_assert_neq(r.status, 127, "nobody cannot run the tool: %s", r.err);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "Permission denied");
    assert_file_is(path, "root's", 6);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_uid, 0, "the file changed owner");
    cr_assert_eq(dir_entries(dir), 3, "temporary file left behind");
    run_free(&r);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s/run'", cache, dir);
    cr_assert_eq(system(cmd), 0);
    rm_dir(dir);
}

/* The file's bytes are reserved before they are written (cli_reserve): a
 * file system that refuses for want of room fails the encode with one line
 * and leaves nothing at the path, and one that cannot reserve at all gets
 * the file written as it comes. */
Test(cli, refused_reservation_is_a_clean_error, .timeout = 60)
{
#ifndef CLPE_RESERVE_SHIM_PATH
    cr_skip_test("built without the reservation shim");
#else
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pe.npy", dir);
    run_result r = run_env((const char *const[]){"LD_PRELOAD=" CLPE_RESERVE_SHIM_PATH,
                                                 "CLPE_FAULT_FALLOCATE_ERRNO=28", NULL},
                           (const char *const[]){"encode", "--seq", "1000", "--d", "64", "-o",
                                                 path, NULL});
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "No space left on device");
    cr_assert_eq(dir_entries(dir), 0, "a file was left behind");
    run_free(&r);

    r = run_env((const char *const[]){"LD_PRELOAD=" CLPE_RESERVE_SHIM_PATH,
                                      "CLPE_FAULT_FALLOCATE_ERRNO=95", NULL},
                (const char *const[]){"encode", "--seq", "1000", "--d", "64", "--start", "5",
                                      "-q", "-o", path, NULL});
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    cr_assert_str_eq(r.err, "");
    npy_file f = npy_load(path);
    clpe_config cfg = clpe_config_default(64);
    float *ref = malloc(1000 * 64 * sizeof *ref);
    cr_assert(ref);
    host_rows(&cfg, 5, 1000, ref);
    cr_assert_eq(f.data_len, 1000 * 64 * sizeof *ref);
    cr_assert(memcmp(f.data, ref, f.data_len) == 0, "data differ from the host emulation");
    free(ref);
    free(f.whole);
    run_free(&r);
    rm_dir(dir);
#endif
}

Test(cli, failed_kernel_build_is_one_line, .timeout = 60)
{
#ifndef CLPE_FAULT_SHIM_PATH
    cr_skip_test("built without the fault-injection shim");
#else
    /* The shim really builds broken source, so the compiler prints its own
     * diagnostics to stderr as well as into the build log. */
    run_result r = run_env((const char *const[]){"LD_PRELOAD=" CLPE_FAULT_SHIM_PATH,
                                                 "CLPE_FAULT_FUNC=clBuildProgram",
                                                 "CLPE_FAULT_ERR=-11", NULL},
                           (const char *const[]){"table", "--d", "4", "--pos", "1", NULL});
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "cannot create an encoder");
    cr_assert(strstr(r.err, "clpe_fault_injected_build_error"),
              "the build log's error is not in the line: [%s]", r.err);
    cr_assert_str_eq(r.out, "");
    run_free(&r);
#endif
}

/* ---- output pairs, one file named two ways, every terminating signal ------------------ */

/* Bytes the process has passed to write() so far (/proc/PID/io wchar), or
 * 0 if unknown. */
static unsigned long long bytes_written_by(pid_t pid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
    FILE *f = fopen(path, "r");
    unsigned long long n = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "wchar: %llu", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

/* Wait (up to 60 s) until the process has written more than `bytes`, or has
 * ended. 1 if it is still running then. */
static int wait_until_written(pid_t pid, unsigned long long bytes)
{
    for (int i = 0; i < 60000; ++i) {
        if (bytes_written_by(pid) > bytes)
            return 1;
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            cr_log_warn("the tool ended (status %d) before writing %llu bytes", st, bytes);
            return 0;
        }
        sleep_ms(1);
    }
    return 1;
}

/* The status of pid within `ms` milliseconds; -1 (after SIGKILL) if it is
 * still running then: a signal that did not end it. */
static int status_within(pid_t pid, long ms)
{
    int st = 0;
    for (long i = 0; i < ms; ++i) {
        pid_t done = waitpid(pid, &st, WNOHANG);
        if (done == pid)
            return st;
        sleep_ms(1);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

/* The child's signals as a plain shell would leave them: every disposition
 * default, nothing blocked, no core files. */
static void default_signals(void)
{
    for (int sig = 1; sig <= SIGRTMAX; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
}

/* Start clpe with args (NULL-terminated, without the program name), stderr
 * to /dev/null, after default_signals() and then setup (may be NULL). */
static pid_t start_tool(const char *const *args, child_setup setup)
{
    const char *argv[32];
    int n = 0;
    argv[n++] = CLPE_CLI_PATH;
    for (; args[n - 1] && n < 31; ++n)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, STDERR_FILENO);
        dup2(devnull, STDOUT_FILENO);
        unsetenv("CLPE_CHECK_CORRUPT");
        default_signals();
        if (setup)
            setup();
        execv(CLPE_CLI_PATH, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* A file system without unnamed files (fault/fs_shim.c refuses O_TMPFILE):
 * the tool writes named temporary files instead. */
static void without_unnamed_files(void)
{
    setenv("LD_PRELOAD", CLPE_FS_SHIM_PATH, 1);
    setenv("CLPE_FAULT_NO_TMPFILE", "1", 1);
}

/* Every signal whose default action ends a process, sent from outside once
 * the OpenCL compiler has built and run the kernels (its handlers are in
 * place by then; LLVM's swallow USR1 and the first QUIT and ABRT): the tool
 * dies of that very signal, leaving no file, whether it writes an unnamed
 * file or a named temporary one. */
Test(cli, every_terminating_signal_terminates_and_leaves_no_file, .timeout = 600)
{
    const int signals[] = {SIGHUP,  SIGINT,  SIGQUIT,   SIGABRT, SIGALRM, SIGTERM,
                           SIGUSR1, SIGUSR2, SIGXCPU,   SIGVTALRM, SIGPROF, SIGRTMIN,
                           SIGRTMAX, SIGPIPE};
    for (size_t k = 0; k < 2 * sizeof signals / sizeof signals[0]; ++k) {
        const int sig = signals[k % (sizeof signals / sizeof signals[0])];
        const int named = k >= sizeof signals / sizeof signals[0];
        char dir[64], path[128];
        make_dir(dir, sizeof dir);
        snprintf(path, sizeof path, "%s/big.npy", dir);
        pid_t pid = start_tool((const char *const[]){"encode", "--seq", "4000000", "--d", "64",
                                                     "--chunk-rows", "256", "-q", "-o", path,
                                                     NULL},
                               named ? without_unnamed_files : NULL);
        /* 2 MB written: the kernels have been built and have run. */
        if (!wait_until_written(pid, 2u << 20)) {
            rm_dir(dir);
            cr_assert_fail("signal %d: encode ended before it could be interrupted", sig);
        }
        /* The file being written has a name only where unnamed files are refused. */
        cr_expect_eq(dir_entries(dir), named, "signal %d: %d files while writing", sig,
                     dir_entries(dir));
        kill(pid, sig);
        int st = status_within(pid, 20000);
        const char *kind = named ? "named temporary" : "unnamed file";
        cr_expect(st != -1, "signal %d (%s), %s: did not end the tool", sig, strsignal(sig),
                  kind);
        cr_expect(st == -1 || (WIFSIGNALED(st) && WTERMSIG(st) == sig),
                  "signal %d (%s), %s: status %d, not death by that signal", sig, strsignal(sig),
                  kind, st);
        cr_expect_eq(dir_entries(dir), 0, "signal %d (%s), %s: a file was left behind", sig,
                     strsignal(sig), kind);
        rm_dir(dir);
    }
}

/* `ulimit -v 4000000` makes this run's device buffer fail inside PoCL, which
 * asserts (abort() in the driver, with LLVM's handlers installed): however
 * the tool ends, no file is left. */
static void limit_address_space_4gb(void)
{
    struct rlimit rl = {4000000ull * 1024, 4000000ull * 1024};
    setrlimit(RLIMIT_AS, &rl);
}

Test(cli, abort_inside_the_driver_leaves_no_file, .timeout = 120)
{
    char dir[64], path[128];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/x.npy", dir);
    pid_t pid = start_tool((const char *const[]){"encode", "--seq", "100", "--d", "16777216",
                                                 "--chunk-rows", "100", "-o", path, NULL},
                           limit_address_space_4gb);
    int st = status_within(pid, 100000);
    cr_assert_neq(st, -1, "the tool did not end");
    cr_log_info("status %d", st);
    cr_assert_eq(dir_entries(dir), 0, "a file was left behind (status %d)", st);
    rm_dir(dir);
}

/* rope-cache of [seq, 128] f32: each file is 512 * seq bytes plus a
 * 128-byte header. */
#define PAIR_SEQ "200000"
#define PAIR_FILE_BYTES (200000ull * 512 + 128)

static void write_old_pair(const char *cos, const char *sin)
{
    write_text(cos, "old cos", 0644);
    write_text(sin, "old sin", 0644);
}

/* Both files old, or both complete new ones: never one of each. Returns 1
 * for new, 0 for old. */
static int assert_pair_consistent(const char *cos, const char *sin)
{
    size_t cos_len = 0, sin_len = 0;
    char *c = slurp(cos, &cos_len);
    char *s = slurp(sin, &sin_len);
    int cos_old = cos_len == 7 && memcmp(c, "old cos", 7) == 0;
    int sin_old = sin_len == 7 && memcmp(s, "old sin", 7) == 0;
    free(c);
    free(s);
    cr_assert_eq(cos_old, sin_old, "cos is %s but sin is %s", cos_old ? "old" : "new",
                 sin_old ? "old" : "new");
    if (!cos_old) {
        cr_assert_eq(cos_len, PAIR_FILE_BYTES, "cos is %zu bytes", cos_len);
        cr_assert_eq(sin_len, PAIR_FILE_BYTES, "sin is %zu bytes", sin_len);
    }
    return !cos_old;
}

Test(cli, rope_cache_interrupted_keeps_both_old_files, .timeout = 120)
{
    for (int named = 0; named < 2; ++named) {
        char dir[64], cos[128], sin[128];
        make_dir(dir, sizeof dir);
        snprintf(cos, sizeof cos, "%s/cos.npy", dir);
        snprintf(sin, sizeof sin, "%s/sin.npy", dir);
        write_old_pair(cos, sin);
        pid_t pid = start_tool((const char *const[]){"rope-cache", "--seq", PAIR_SEQ,
                                                     "--head-dim", "128", "--cos-out", cos,
                                                     "--sin-out", sin, "-q", NULL},
                               named ? without_unnamed_files : NULL);
        /* Past the whole cos array and into the sin one. */
        int running = wait_until_written(pid, PAIR_FILE_BYTES + (1u << 20));
        if (running)
            cr_expect_eq(dir_entries(dir), 2 + 2 * named, "%d files while writing",
                         dir_entries(dir));
        kill(pid, SIGTERM);
        int st = status_within(pid, 20000);
        cr_assert_neq(st, -1, "SIGTERM did not end rope-cache");
        int fresh = assert_pair_consistent(cos, sin);
        if (running && WIFSIGNALED(st))
            cr_assert_eq(fresh, 0, "killed, yet the files are new");
        cr_assert_eq(dir_entries(dir), 2, "a temporary file was left behind (named %d)", named);
        rm_dir(dir);
    }
}

Test(cli, rope_cache_write_failure_on_the_second_file_writes_neither, .timeout = 120)
{
    char dir[64], cos[128], sin[128], after[64], preload[256];
    make_dir(dir, sizeof dir);
    snprintf(cos, sizeof cos, "%s/cos.npy", dir);
    snprintf(sin, sizeof sin, "%s/sin.npy", dir);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", CLPE_FS_SHIM_PATH);
    /* The disk fills a megabyte into the sin array. */
    snprintf(after, sizeof after, "CLPE_FAULT_FWRITE_AFTER=%llu", PAIR_FILE_BYTES + (1u << 20));
    const char *const args[] = {"rope-cache", "--seq", PAIR_SEQ, "--head-dim", "128",
                                "--cos-out", cos, "--sin-out", sin, NULL};
    run_result r = run_full((const char *const[]){preload, after, NULL}, args, NULL);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "cannot write --sin-out");
    assert_one_error_line(&r, "No space left on device");
    cr_assert_eq(dir_entries(dir), 0, "a file was left behind");
    run_free(&r);
    /* Over existing files: both stay as they were. */
    write_old_pair(cos, sin);
    r = run_full((const char *const[]){preload, after, NULL}, args, NULL);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    cr_assert_eq(assert_pair_consistent(cos, sin), 0);
    cr_assert_eq(dir_entries(dir), 2);
    run_free(&r);
    rm_dir(dir);
}

Test(cli, rope_cache_checks_room_for_both_files_first, .timeout = 120)
{
    char dir[64], cos[128], sin[128], room[64], preload[256];
    make_dir(dir, sizeof dir);
    snprintf(cos, sizeof cos, "%s/cos.npy", dir);
    snprintf(sin, sizeof sin, "%s/sin.npy", dir);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", CLPE_FS_SHIM_PATH);
    /* Room for one file and a half. */
    snprintf(room, sizeof room, "CLPE_FAULT_FREE_BYTES=%llu", PAIR_FILE_BYTES * 3 / 2);
    run_result r = run_full((const char *const[]){preload, room, NULL},
                            (const char *const[]){"rope-cache", "--seq", PAIR_SEQ, "--head-dim",
                                                  "128", "--cos-out", cos, "--sin-out", sin,
                                                  NULL},
                            NULL);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "together they need 204.80 MB, only 153.60 MB free");
    cr_assert_eq(dir_entries(dir), 0, "a file was left behind");
    run_free(&r);
    rm_dir(dir);
}

/* The same on a real full file system: a 4 MB tmpfs (where this test may
 * mount one: root, in a private directory), with room for one file of the
 * pair but not both. */
Test(cli, rope_cache_on_a_small_tmpfs_writes_both_or_neither, .timeout = 120)
{
    char dir[64], cos[128], sin[128];
    make_dir(dir, sizeof dir);
    if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m") != 0) {
        int err = errno;
        rm_dir(dir);
        cr_skip_test("cannot mount a tmpfs here: %s", strerror(err));
    }
    snprintf(cos, sizeof cos, "%s/c.npy", dir);
    snprintf(sin, sizeof sin, "%s/s.npy", dir);
    /* [9000, 64] f32: 2304128 bytes each, 4.6 MB for the two. */
    run_result r = RUN("rope-cache", "--seq", "9000", "--head-dim", "64", "--cos-out", cos,
                       "--sin-out", sin);
    int entries = dir_entries(dir);
    umount2(dir, MNT_DETACH);
    rm_dir(dir);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "together they need 4.61 MB, only 4.19 MB free");
    cr_assert_eq(entries, 0, "%d files left on the full file system", entries);
    run_free(&r);
}

Test(cli, free_space_message_tells_the_numbers_apart, .timeout = 60)
{
    /* --seq 1024 --d 1024 f32: 4194432 bytes; 4190000 free. Both are
     * "4.19 MB": the message must show two different numbers. */
    char dir[64], path[128], preload[256];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pe.npy", dir);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", CLPE_FS_SHIM_PATH);
    run_result r = run_full((const char *const[]){preload, "CLPE_FAULT_FREE_BYTES=4190000", NULL},
                            (const char *const[]){"encode", "--seq", "1024", "--d", "1024", "-o",
                                                  path, NULL},
                            NULL);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "needs 4194432 bytes, only 4190000 bytes free");
    cr_assert_eq(dir_entries(dir), 0);
    run_free(&r);
    rm_dir(dir);
}

Test(cli, one_file_named_two_ways_is_refused, .timeout = 60)
{
    char dir[64], plain[128], dotted[128], sym[128], hard[160], cwd[4096];
    make_dir(dir, sizeof dir);
    cr_assert(getcwd(cwd, sizeof cwd));
    snprintf(plain, sizeof plain, "%s/x.npy", dir);
    snprintf(dotted, sizeof dotted, "%s/./x.npy", dir);
    snprintf(sym, sizeof sym, "%s/link.npy", dir);
    snprintf(hard, sizeof hard, "%s/hard.npy", dir);
    cr_assert_eq(symlink("x.npy", sym), 0);
    /* The same name two ways (the file does not exist yet), then a link to it. */
    const char *const seconds[] = {dotted, sym};
    for (size_t k = 0; k < 2; ++k) {
        run_result r = RUN("rope-cache", "--seq", "4", "--head-dim", "8", "--cos-out", plain,
                           "--sin-out", seconds[k]);
        cr_assert_eq(r.status, 2, "case %zu: exit %d: %s", k, r.status, r.err);
        assert_one_error_line(&r, "are the same file");
        cr_assert_eq(dir_entries(dir), 1, "case %zu wrote a file", k);
        run_free(&r);
    }
    /* An existing file, by a relative path and a second hard link. */
    write_text(plain, "old", 0644);
    cr_assert_eq(link(plain, hard), 0);
    cr_assert_eq(chdir(dir), 0);
    run_result r = RUN("rope-cache", "--seq", "4", "--head-dim", "8", "--cos-out", "x.npy",
                       "--sin-out", hard);
    cr_assert_eq(chdir(cwd), 0);
    cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "--cos-out 'x.npy' and --sin-out");
    assert_file_is(plain, "old", 3);
    run_free(&r);
    rm_dir(dir);
}

/* clpe's stdout is a pipe here, read by this process while it runs. */
static char *run_to_pipe(const char *const *args, int *status, size_t *len)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    const char *argv[32];
    int n = 0;
    argv[n++] = CLPE_CLI_PATH;
    for (; args[n - 1] && n < 31; ++n)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[1]);
        execv(CLPE_CLI_PATH, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 1 << 16, used = 0;
    char *buf = malloc(cap);
    ssize_t got;
    while ((got = read(fds[0], buf + used, cap - used)) > 0) {
        used += (size_t)got;
        if (used == cap)
            cr_assert(buf = realloc(buf, cap *= 2));
    }
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    *len = used;
    return buf;
}

Test(cli, encode_to_stdout_through_a_pipe, .timeout = 60)
{
    size_t ref_len;
    char *ref = reference_npy(&ref_len);
    const char *const targets[] = {"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"};
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; ++k) {
        int status = 0;
        size_t len = 0;
        char *got = run_to_pipe((const char *const[]){"encode", "--seq", "4", "--d", "4", "-q",
                                                      "-o", targets[k], NULL},
                                &status, &len);
        cr_assert_eq(status, 0, "-o %s: exit %d", targets[k], status);
        cr_assert(len == ref_len && memcmp(got, ref, len) == 0,
                  "-o %s: %zu bytes through the pipe, not the %zu of the file", targets[k], len,
                  ref_len);
        free(got);
    }
    free(ref);
}

Test(cli, streamed_outputs_take_any_name, .timeout = 60)
{
    size_t ref_len;
    char *ref = reference_npy(&ref_len);
    char dir[64], fifo[128];
    make_dir(dir, sizeof dir);
    snprintf(fifo, sizeof fifo, "%s/stream", dir);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    /* Open for reading first (without waiting): the tool's open then succeeds. */
    int in = open(fifo, O_RDONLY | O_NONBLOCK);
    cr_assert(in >= 0);
    run_result r = RUN("encode", "--seq", "4", "--d", "4", "-q", "-o", fifo);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char buf[4096];
    ssize_t n = read(in, buf, sizeof buf);
    close(in);
    cr_assert(n == (ssize_t)ref_len && memcmp(buf, ref, ref_len) == 0, "read %zd bytes", n);
    run_free(&r);
    /* A file still needs the .npy name. */
    char plain[128];
    snprintf(plain, sizeof plain, "%s/plain", dir);
    r = RUN("encode", "--seq", "4", "--d", "4", "-o", plain);
    cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "-o must name a .npy file, got");
    cr_assert_eq(dir_entries(dir), 1);
    run_free(&r);
    free(ref);
    rm_dir(dir);
}

Test(cli, writable_file_in_a_read_only_directory_says_why, .timeout = 60)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to run the tool as another user");
    skip_unless_nobody_reaches_runtimes();
    /* nobody may write root's 0666 file, but not create files beside it. */
    char dir[64], path[128], cache[128], env[160];
    make_dir(dir, sizeof dir);
    cr_assert_eq(chmod(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/shared.npy", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    cr_assert_eq(mkdir(cache, 0777), 0);
    cr_assert_eq(chmod(cache, 0777), 0);
    write_text(path, "root's", 0666);
    snprintf(env, sizeof env, "POCL_CACHE_DIR=%s", cache);
    char storage[3][320];
    const char *staged[4];
    stage_tool_for_others(dir, storage, staged);
    const char *envs[5] = {env};
    for (int i = 0; staged[i]; ++i)
        envs[i + 1] = staged[i];
    run_result r = run_full(envs,
                            (const char *const[]){"encode", "--seq", "4", "--d", "4", "-o", path,
                                                  NULL},
                            become_nobody);
    cli_program = CLPE_CLI_PATH;
    cr_assert_neq(r.status, 126, "cannot become nobody");
    cr_assert_neq(r.status, 127, "nobody cannot run the tool: %s", r.err);
    cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
    assert_one_error_line(&r, "cannot create a file in the directory");
    assert_one_error_line(&r, "needs write permission on the directory");
    assert_file_is(path, "root's", 6);
    cr_assert_eq(dir_entries(dir), 3, "a file was left behind");
    run_free(&r);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s/run'", cache, dir);
    cr_assert_eq(system(cmd), 0);
    rm_dir(dir);
}
