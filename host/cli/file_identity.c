/* SPDX-License-Identifier: Apache-2.0 */
/*
 * file_identity.c - device and inode of what a path names (see
 * file_identity.h).
 */
#include "file_identity.h"

#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* As many links as the kernel itself follows (Linux MAXSYMLINKS). */
#define MAX_LINKS 40

/* The path a dangling chain of symbolic links ends at: the file that
 * opening `path` for writing would create. NULL if it cannot be followed. */
static char *end_of_links(const char *path)
{
    char *cur = strdup(path);
    for (int links = 0; cur && links <= MAX_LINKS; ++links) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            return cur;
        char target[PATH_MAX];
        ssize_t n = readlink(cur, target, sizeof target - 1);
        if (n < 0)
            break;
        target[n] = '\0';
        const char *slash = strrchr(cur, '/');
        char *next;
        if (target[0] == '/' || !slash) {
            next = strdup(target);
        } else {
            size_t dir_len = (size_t)(slash - cur) + 1;
            next = malloc(dir_len + (size_t)n + 1);
            if (next) {
                memcpy(next, cur, dir_len);
                memcpy(next + dir_len, target, (size_t)n + 1);
            }
        }
        free(cur);
        cur = next;
    }
    free(cur);
    return NULL;
}

void cli_file_id_of(const char *path, cli_file_id *id)
{
    memset(id, 0, sizeof *id);
    struct stat st;
    if (stat(path, &st) == 0) {
        id->known = id->exists = 1;
        id->dev = (uint64_t)st.st_dev;
        id->ino = (uint64_t)st.st_ino;
        return;
    }
    if (errno != ENOENT)
        return;
    char *end = end_of_links(path);
    if (!end)
        return;
    const char *slash = strrchr(end, '/');
    const char *name = slash ? slash + 1 : end;
    size_t name_len = strlen(name);
    char *dir = slash ? strndup(end, slash == end ? 1 : (size_t)(slash - end)) : strdup(".");
    if (dir && name_len < sizeof id->name && stat(dir, &st) == 0) {
        id->known = 1;
        id->dev = (uint64_t)st.st_dev;
        id->ino = (uint64_t)st.st_ino;
        memcpy(id->name, name, name_len + 1);
    }
    free(dir);
    free(end);
}

int cli_file_id_same(const cli_file_id *a, const cli_file_id *b)
{
    return a->known && b->known && a->exists == b->exists && a->dev == b->dev &&
           a->ino == b->ino && (a->exists || strcmp(a->name, b->name) == 0);
}

int cli_paths_distinct(const char *const *paths, const char *const *flags, size_t n)
{
    cli_file_id *ids = calloc(n ? n : 1, sizeof *ids);
    if (!ids) {
        cli_error("out of memory");
        return CLI_EXIT_RUNTIME;
    }
    for (size_t i = 0; i < n; ++i)
        cli_file_id_of(paths[i], &ids[i]);
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; ++i)
        for (size_t j = i + 1; j < n && rc == CLI_EXIT_OK; ++j)
            if (cli_file_id_same(&ids[i], &ids[j])) {
                cli_error("%s '%s' and %s '%s' are the same file", flags[i], paths[i],
                          flags[j], paths[j]);
                rc = CLI_EXIT_USAGE;
            }
    free(ids);
    return rc;
}
