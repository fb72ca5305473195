/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli_rope_cache_files.c - `clpe rope-cache` with its inputs in files:
 * LongRoPE's factor lists (--short-factor-file, --long-factor-file) and
 * multimodal positions (--positions with --mrope-section or --vision). The
 * built binary runs as a user runs it; both .npy files it writes must equal
 * the library's host emulation bit for bit (clpe_host_rope_cache with the
 * same factors, clpe_host_rope_cache_at of the same positions), across the
 * tool's chunks; every bad input gets exit status 2, one "clpe: " line
 * naming the flag, and no file.
 */
#include "support.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLPE_CLI_PATH
#error "CLPE_CLI_PATH must name the built clpe binary (tests/CMakeLists.txt defines it)"
#endif

typedef struct run_result {
    int status;
    char *err;
} run_result;

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

/* Run clpe with args (NULL-terminated, without the program name); stdout
 * is dropped, stderr kept. */
static run_result run(const char *const *args)
{
    char errp[] = "/tmp/clpe-test-err-XXXXXX";
    int efd = mkstemp(errp);
    cr_assert(efd >= 0);
    const char *argv[64];
    int n = 0;
    argv[n++] = CLPE_CLI_PATH;
    for (; args[n - 1] && n < 63; ++n)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        dup2(efd, STDERR_FILENO);
        execv(CLPE_CLI_PATH, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    close(efd);
    run_result r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), slurp(errp, NULL)};
    unlink(errp);
    return r;
}

static void make_dir(char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/clpe-test-dir-XXXXXX");
    cr_assert(mkdtemp(buf), "mkdtemp");
}

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char path[512];
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

/* A .npy file of int64 values [rows, cols] (descr as given, to test refusals). */
static void write_npy(const char *path, const char *descr, size_t rows, size_t cols,
                      const int64_t *values)
{
    char header[128];
    int n = snprintf(header, sizeof header,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }", descr,
                     rows, cols);
    size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    size_t hl = (size_t)n + pad + 1;
    magic[8] = (unsigned char)(hl & 0xFF);
    magic[9] = (unsigned char)(hl >> 8);
    fwrite(magic, 1, 10, f);
    fwrite(header, 1, (size_t)n, f);
    for (size_t k = 0; k < pad; ++k)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(values, sizeof *values, rows * cols, f);
    fclose(f);
}

/* The data of a .npy file the tool wrote: its shape checked, the bytes
 * after the header returned (free *whole). */
static const unsigned char *npy_data(const char *path, size_t rows, size_t cols,
                                     const char *descr, size_t *len, char **whole)
{
    size_t n = 0;
    *whole = slurp(path, &n);
    const unsigned char *b = (const unsigned char *)*whole;
    cr_assert(n >= 10 && memcmp(b, "\x93NUMPY", 6) == 0, "%s: bad magic", path);
    size_t hl = (size_t)b[8] | (size_t)b[9] << 8;
    char want[128];
    snprintf(want, sizeof want, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }",
             descr, rows, cols);
    cr_assert(strncmp((const char *)b + 10, want, strlen(want)) == 0, "%s: header [%.*s]", path,
              (int)hl, b + 10);
    *len = n - 10 - hl;
    return b + 10 + hl;
}

/* Run rope-cache with args and compare cos.npy and sin.npy in dir with
 * want_cos and want_sin ([rows, cols] of esize bytes). */
static void run_and_compare(const char *dir, const char *const *args, size_t rows, size_t cols,
                            const char *descr, const void *want_cos, const void *want_sin)
{
    run_result r = run(args);
    cr_assert_eq(r.status, 0, "rope-cache failed (%d): %s", r.status, r.err);
    cr_assert(strstr(r.err, "wrote "), "no summary: [%s]", r.err);
    const size_t esize = strcmp(descr, "<f4") == 0 ? 4 : strcmp(descr, "<f8") == 0 ? 8 : 2;
    const char *names[2] = {"cos.npy", "sin.npy"};
    const void *want[2] = {want_cos, want_sin};
    for (int k = 0; k < 2; ++k) {
        char path[256], *whole;
        size_t len;
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        const unsigned char *data = npy_data(path, rows, cols, descr, &len, &whole);
        cr_assert_eq(len, rows * cols * esize, "%s: %zu data bytes", path, len);
        cr_assert_eq(memcmp(data, want[k], len), 0, "%s differs from the host emulation", path);
        free(whole);
    }
    free(r.err);
}

Test(cli_files, multimodal_positions_equal_the_host_emulation, .timeout = 120)
{
    char dir[64], pos_path[128], cos_path[128], sin_path[128];
    make_dir(dir, sizeof dir);
    snprintf(pos_path, sizeof pos_path, "%s/positions.npy", dir);
    snprintf(cos_path, sizeof cos_path, "%s/cos.npy", dir);
    snprintf(sin_path, sizeof sin_path, "%s/sin.npy", dir);
    /* Qwen2-VL's text streams: 5000 tokens of 64 floats cross the tool's 1 MiB
     * chunks; an image's positions jump, so the streams differ */
    const size_t tokens = 5000;
    int64_t *pos = malloc(3 * tokens * sizeof *pos);
    uint64_t rng = 3;
    for (size_t t = 0; t < tokens; ++t)
        for (size_t j = 0; j < 3; ++j)
            pos[j * tokens + t] =
                (int64_t)(t + (t > 100 && t < 4000 ? test_rand_u64(&rng) % 64 : 0));
    write_npy(pos_path, "<i8", 3, tokens, pos);
    clpe_mrope_config cfg = {.rope = clpe_rope_config_default(64), .streams = 3,
                             .section = {8, 12, 12}};
    cfg.rope.base = 1000000;
    clpe_rope *host = clpe_rope_create_mrope_host(&cfg, NULL);
    cr_assert_not_null(host);
    float *want_cos = malloc(tokens * 64 * 4), *want_sin = malloc(tokens * 64 * 4);
    cr_assert_eq(clpe_host_rope_cache_at(host, tokens, CLPE_POSITIONS_STREAMS, 0, pos, want_cos,
                                         want_sin, 0),
                 CLPE_SUCCESS);
    run_and_compare(dir,
                    (const char *const[]){"rope-cache", "--head-dim", "64", "--base", "1000000",
                                          "--mrope-section", "8,12,12", "--positions", pos_path,
                                          "--cos-out", cos_path, "--sin-out", sin_path, NULL},
                    tokens, 64, "<f4", want_cos, want_sin);
    clpe_rope_release(host);
    free(want_cos);
    free(want_sin);
    free(pos);

    /* the vision tower: positions [2, patches] (rows, columns), bf16 */
    const size_t patches = 12;
    int64_t vpos[2 * 12];
    for (size_t t = 0; t < patches; ++t) {
        vpos[t] = (int64_t)(t / 4);
        vpos[patches + t] = (int64_t)(t % 4);
    }
    write_npy(pos_path, "<i8", 2, patches, vpos);
    clpe_mrope_config vcfg = clpe_mrope_config_vision(80);
    vcfg.rope.dtype = CLPE_DTYPE_BF16;
    host = clpe_rope_create_mrope_host(&vcfg, NULL);
    cr_assert_not_null(host);
    uint16_t vcos[12 * 80], vsin[12 * 80];
    cr_assert_eq(clpe_host_rope_cache_at(host, patches, CLPE_POSITIONS_STREAMS, 0, vpos, vcos,
                                         vsin, 0),
                 CLPE_SUCCESS);
    run_and_compare(dir,
                    (const char *const[]){"rope-cache", "--head-dim", "80", "--vision",
                                          "--dtype", "bf16", "--positions", pos_path,
                                          "--cos-out", cos_path, "--sin-out", sin_path, NULL},
                    patches, 80, "<u2", vcos, vsin);
    clpe_rope_release(host);
    rm_dir(dir);
}

Test(cli_files, longrope_factors_from_files_equal_the_host_emulation, .timeout = 120)
{
    char dir[64], short_path[128], long_path[128], cos_path[128], sin_path[128];
    make_dir(dir, sizeof dir);
    snprintf(short_path, sizeof short_path, "%s/short.json", dir);
    snprintf(long_path, sizeof long_path, "%s/long.txt", dir);
    snprintf(cos_path, sizeof cos_path, "%s/cos.npy", dir);
    snprintf(sin_path, sizeof sin_path, "%s/sin.npy", dir);
    double short_f[12], long_f[12];
    char short_text[512] = "[", long_text[512] = "";
    for (int i = 0; i < 12; ++i) {
        short_f[i] = 1.0 + 0.0625 * i;
        long_f[i] = 1.0 + 1.5 * i;
        char item[32];
        snprintf(item, sizeof item, "%s%.17g", i ? ", " : "", short_f[i]);
        strcat(short_text, item);
        snprintf(item, sizeof item, "%.17g%s", long_f[i], i % 4 == 3 ? "\n" : " ");
        strcat(long_text, item);
    }
    strcat(short_text, "]\n");
    write_text(short_path, short_text); /* a JSON array, as config.json has it */
    write_text(long_path, long_text);   /* plain numbers over several lines */
    /* below and past original_max_position 4096: the short and the long list */
    const int64_t starts[2] = {100, 4000};
    for (int k = 0; k < 2; ++k) {
        const size_t seq = 200;
        clpe_rope_config cfg = clpe_rope_config_default(24);
        cfg.scaling = CLPE_ROPE_LONGROPE;
        cfg.factor = 32;
        cfg.original_max_position = 4096;
        cfg.short_factor = short_f;
        cfg.long_factor = long_f;
        cfg.seq_len = (uint64_t)starts[k] + seq;
        clpe_rope *host = clpe_rope_create_host(&cfg, NULL);
        cr_assert_not_null(host);
        float want_cos[200 * 24], want_sin[200 * 24];
        cr_assert_eq(clpe_host_rope_cache(host, starts[k], seq, want_cos, want_sin, 0),
                     CLPE_SUCCESS);
        char start_s[32];
        snprintf(start_s, sizeof start_s, "%lld", (long long)starts[k]);
        run_and_compare(dir,
                        (const char *const[]){"rope-cache", "--head-dim", "24", "--seq", "200",
                                              "--start", start_s, "--scaling", "longrope",
                                              "--factor", "32", "--original-max-position",
                                              "4096", "--short-factor-file", short_path,
                                              "--long-factor-file", long_path, "--cos-out",
                                              cos_path, "--sin-out", sin_path, NULL},
                        seq, 24, "<f4", want_cos, want_sin);
        clpe_rope_release(host);
    }
    rm_dir(dir);
}

typedef struct bad_case {
    const char *flag;       /* what the one error line must mention */
    const char *args[24];
} bad_case;

Test(cli_files, bad_files_and_flags_fail_cleanly, .timeout = 120)
{
    char dir[64];
    make_dir(dir, sizeof dir);
    char out[64][160];
    int k = 0;
#define PATH(name) (snprintf(out[k], sizeof out[k], "%s/%s", dir, name), out[k++])
    const char *cos = PATH("cos.npy"), *sin = PATH("sin.npy");
    const char *good8 = PATH("good8.txt"), *seven = PATH("seven.txt"), *word = PATH("word.txt");
    const char *open_bracket = PATH("open.txt"), *trailing = PATH("trailing.txt");
    const char *pos3 = PATH("pos3.npy"), *pos_f8 = PATH("posf8.npy"), *missing = PATH("none");
    write_text(good8, "1 1 1 1 1 1 1 1\n");
    write_text(seven, "1 1 1 1 1 1 1\n");
    write_text(word, "1 1 1 one 1 1 1 1\n");
    write_text(open_bracket, "[1, 1, 1, 1, 1, 1, 1, 1\n");
    write_text(trailing, "[1, 1, 1, 1, 1, 1, 1, 1] 2\n");
    const char *factors_npy = PATH("factors.npy");
    write_text(factors_npy, "1 1 1 1 1 1 1 1\n");
    int64_t p[3 * 4] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
    write_npy(pos3, "<i8", 3, 4, p);
    write_npy(pos_f8, "<f8", 3, 4, p);
#define LONGROPE "rope-cache", "--head-dim", "16", "--seq", "4", "--scaling", "longrope", \
                 "--factor", "32", "--original-max-position", "4096", "--cos-out", cos,  \
                 "--sin-out", sin
#define MROPE "rope-cache", "--head-dim", "16", "--cos-out", cos, "--sin-out", sin
    const bad_case cases[] = {
        {"--long-factor-file", {LONGROPE, "--short-factor-file", good8, NULL}},
        {"--short-factor-file", {LONGROPE, "--short-factor-file", seven, "--long-factor-file",
                                 good8, NULL}},
        {"--long-factor-file", {LONGROPE, "--short-factor-file", good8, "--long-factor-file",
                                word, NULL}},
        {"--short-factor-file", {LONGROPE, "--short-factor-file", open_bracket,
                                 "--long-factor-file", good8, NULL}},
        {"--short-factor-file", {LONGROPE, "--short-factor-file", trailing,
                                 "--long-factor-file", good8, NULL}},
        {"--short-factor-file", {LONGROPE, "--short-factor-file", missing,
                                 "--long-factor-file", good8, NULL}},
        {"--short-factor-file", {"rope-cache", "--head-dim", "16", "--seq", "4",
                                 "--short-factor-file", good8, "--long-factor-file", good8,
                                 "--cos-out", cos, "--sin-out", sin, NULL}},
        {"--positions", {MROPE, "--mrope-section", "2,3,3", NULL}},
        {"--mrope-section", {MROPE, "--seq", "4", "--mrope-section", "2,3,2", "--positions",
                             pos3, NULL}},
        {"--mrope-section", {MROPE, "--mrope-section", "2,3,x", "--positions", pos3, NULL}},
        {"--mrope-section", {MROPE, "--mrope-section", "1,1,1,1,4", "--positions", pos3, NULL}},
        {"--positions", {MROPE, "--positions", pos3, NULL}},
        {"--positions", {MROPE, "--mrope-section", "4,4", "--positions", pos3, NULL}},
        {"--positions", {MROPE, "--mrope-section", "2,3,3", "--positions", pos_f8, NULL}},
        {"--positions", {MROPE, "--mrope-section", "2,3,3", "--positions", missing, NULL}},
        {"--start", {MROPE, "--mrope-section", "2,3,3", "--positions", pos3, "--start", "5",
                     NULL}},
        {"--seq", {MROPE, "--mrope-section", "2,3,3", "--positions", pos3, "--seq", "5", NULL}},
        {"--vision", {"rope-cache", "--head-dim", "18", "--vision", "--positions", pos3,
                      "--cos-out", cos, "--sin-out", sin, NULL}},
        /* an input that is also an output: the file would be replaced while read */
        {"are the same file", {"rope-cache", "--head-dim", "16", "--mrope-section", "2,3,3",
                               "--positions", pos3, "--cos-out", cos, "--sin-out", pos3, NULL}},
        {"are the same file", {"rope-cache", "--head-dim", "16", "--seq", "4", "--scaling",
                               "longrope", "--factor", "32", "--original-max-position", "4096",
                               "--short-factor-file", good8, "--long-factor-file", factors_npy,
                               "--cos-out", factors_npy, "--sin-out", sin, NULL}},
    };
    int before = dir_entries(dir);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        run_result r = run(cases[c].args);
        cr_expect_eq(r.status, 2, "case %zu: exit %d, want 2: %s", c, r.status, r.err);
        const char *newline = strchr(r.err, '\n');
        cr_expect(strncmp(r.err, "clpe: ", 6) == 0 && newline == r.err + strlen(r.err) - 1,
                  "case %zu: not one 'clpe: ' line: [%s]", c, r.err);
        cr_expect(strstr(r.err, cases[c].flag), "case %zu: [%s] does not name %s", c, r.err,
                  cases[c].flag);
        cr_expect_eq(dir_entries(dir), before, "case %zu left a file behind", c);
        free(r.err);
    }
    rm_dir(dir);
}
