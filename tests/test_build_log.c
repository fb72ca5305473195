/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_build_log.c - a compiler diagnostic in a kernel names the file and
 * line it comes from, so the build log clpe hands back is useful: a copy of
 * kernels/ with one deliberately broken line in the row body, built through
 * the CLPE_KERNEL_DIR development switch, must fail with a log naming
 * clpe_rows.cl and that line.
 */
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static test_cl cl;
static void setup(void) { test_cl_open(&cl); }
static void teardown(void) { test_cl_close(&cl); }
TestSuite(build_log, .init = setup, .fini = teardown);

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* Copy every file of the kernel folder into dir; in clpe_rows.cl put
 * `broken` in place of the first line that starts with `needle`. Returns
 * that line's number. */
static int copy_kernels(const char *dir, const char *needle, const char *broken)
{
    int line_no = 0;
    DIR *folder = opendir(CLPE_KERNEL_SOURCE_DIR);
    cr_assert_not_null(folder, "cannot list %s", CLPE_KERNEL_SOURCE_DIR);
    for (struct dirent *e; (e = readdir(folder)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char src[1024], dst[1024];
        snprintf(src, sizeof src, "%s/%s", CLPE_KERNEL_SOURCE_DIR, e->d_name);
        snprintf(dst, sizeof dst, "%s/%s", dir, e->d_name);
        char *text = read_text(src);
        if (strcmp(e->d_name, "clpe_rows.cl") == 0) {
            char *at = strstr(text, needle);
            cr_assert_not_null(at, "no line '%s' in clpe_rows.cl", needle);
            line_no = 1;
            for (char *c = text; c < at; ++c)
                line_no += *c == '\n';
            char *end = strchr(at, '\n');
            size_t head = (size_t)(at - text);
            char *out = malloc(strlen(text) + strlen(broken) + 1);
            memcpy(out, text, head);
            strcpy(out + head, broken);
            strcat(out, end);
            write_text(dst, out);
            free(out);
        } else {
            write_text(dst, text);
        }
        free(text);
    }
    closedir(folder);
    return line_no;
}

/* Remove dir and the files in it. */
static void remove_dir(const char *dir)
{
    DIR *folder = opendir(dir);
    if (folder) {
        for (struct dirent *e; (e = readdir(folder)) != NULL;) {
            if (e->d_name[0] == '.')
                continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(folder);
    }
    rmdir(dir);
}

Test(build_log, a_broken_kernel_line_is_named_in_the_log, .timeout = 120)
{
    char dir[] = "/tmp/clpe-build-log-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    int line = copy_kernels(dir, "    uint kc = g->cos_off + i * g->stride;",
                            "    uint kc = g->cos_off + i * g->stride + this_name_does_not_exist;");
    setenv("CLPE_KERNEL_DIR", dir, 1);
    char text[1 << 16];
    clpe_build_log log = {.buffer = text, .capacity = sizeof text};
    clpe_status st = CLPE_SUCCESS;
    clpe_config cfg = clpe_config_default(16);
    clpe_encoder *enc = clpe_encoder_create(cl.context, cl.device, &cfg, &log, &st);
    unsetenv("CLPE_KERNEL_DIR");
    cr_assert_null(enc);
    cr_assert_eq(st, CL_BUILD_PROGRAM_FAILURE, "status %d", st);
    char want[64];
    snprintf(want, sizeof want, "clpe_rows.cl:%d:", line);
    cr_assert_not_null(strstr(text, want), "the log does not name %s:\n%s", want, text);
    cr_assert_not_null(strstr(text, "this_name_does_not_exist"), "%s", text);

    /* the unbroken copy builds: the switch itself works */
    copy_kernels(dir, "    uint kc = g->cos_off + i * g->stride;", "    uint kc = g->cos_off + i * g->stride;");
    setenv("CLPE_KERNEL_DIR", dir, 1);
    enc = clpe_encoder_create(cl.context, cl.device, &cfg, &log, &st);
    unsetenv("CLPE_KERNEL_DIR");
    cr_assert_not_null(enc, "status %d\n%s", st, text);
    clpe_encoder_release(enc);
    remove_dir(dir);
}

Test(build_log, a_missing_kernel_folder_is_named_in_the_log)
{
    setenv("CLPE_KERNEL_DIR", "/nonexistent-clpe-kernels", 1);
    char text[4096];
    clpe_build_log log = {.buffer = text, .capacity = sizeof text};
    clpe_status st = CLPE_SUCCESS;
    clpe_config cfg = clpe_config_default(16);
    clpe_encoder *enc = clpe_encoder_create(cl.context, cl.device, &cfg, &log, &st);
    unsetenv("CLPE_KERNEL_DIR");
    cr_assert_null(enc);
    cr_assert_eq(st, CL_BUILD_PROGRAM_FAILURE);
    cr_assert_not_null(strstr(text, "CLPE_KERNEL_DIR"), "%s", text);
}
