/* SPDX-License-Identifier: Apache-2.0 */
/*
 * file_identity.h - whether two paths name the same file.
 *
 * Strings do not tell: "x.npy", "./x.npy", "/dir/x.npy", a symbolic link
 * to it and a second hard link all name one file. A path is resolved to
 * the device and inode of the file it reaches (links followed, as opening
 * it would), or, for a file still to be made, to the device and inode of
 * the directory that will hold it plus the name it gets there. Used by
 * every command that takes two outputs, or an input and an output, to
 * refuse a pair that is one file before anything is written.
 */
#ifndef CLPE_CLI_FILE_IDENTITY_H
#define CLPE_CLI_FILE_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

typedef struct cli_file_id {
    int known;       /* 0: the path could not be looked at (left to the open) */
    int exists;      /* 1: dev/ino are the file's; 0: the directory's, plus name */
    uint64_t dev, ino;
    char name[256];  /* exists == 0: the name the file will get */
} cli_file_id;

/* What path names (see above). Never fails: a path that cannot be looked
 * at gets known = 0, and is the same as nothing. */
void cli_file_id_of(const char *path, cli_file_id *id);

/* 1 if a and b are known and name the same file. */
int cli_file_id_same(const cli_file_id *a, const cli_file_id *b);

/* Refuse any two of the n paths that name the same file: prints "FLAG_I
 * 'PATH_I' and FLAG_J 'PATH_J' are the same file" and returns
 * CLI_EXIT_USAGE; else CLI_EXIT_OK. Inputs and outputs alike: an input read
 * while it is being replaced is as wrong as two outputs in one file. */
int cli_paths_distinct(const char *const *paths, const char *const *flags, size_t n);

#endif
