/* SPDX-License-Identifier: Apache-2.0 */
/*
 * output_file.h - where the clpe tool's output files go, by what sits at
 * the path:
 *
 *   nothing, or a regular file   written as a new file in the same
 *                                directory and renamed over the path only
 *                                when complete. The new file has no name
 *                                while it is written (O_TMPFILE, where the
 *                                file system has it), so an interrupted or
 *                                crashed run leaves nothing whatever kills
 *                                it; elsewhere it is named .clpe-XXXXXX
 *                                (any name that fits fits it too) and
 *                                removed on a terminating signal. An
 *                                existing file keeps its mode (and owner,
 *                                where allowed)
 *   a symbolic link              followed (up to 40 links); its target is
 *                                written as above and the link stays
 *   a FIFO, a terminal or any    written directly, in order, with no
 *   other character device       temporary file and no rename
 *   /dev/stdout, /dev/stderr,    the tool's own file descriptor N is
 *   /dev/fd/N, /proc/self/fd/N   written, as a shell redirection would be
 *   another path under /proc/    written directly
 *
 * Refused with one line, leaving the path untouched: a directory, a block
 * device, a socket, a regular file that the user cannot open for writing
 * or that has no write permission bit at all (mode 0444 is refused even
 * for root, like a write-protected file), and a directory where no new
 * file can be made (the message says it is the directory).
 *
 * Several outputs of one command are finished together by
 * cli_outfile_commit_all: every one written and closed first, then all
 * renamed into place while signals wait, so the set is replaced whole or
 * not at all.
 */
#ifndef CLPE_CLI_OUTPUT_FILE_H
#define CLPE_CLI_OUTPUT_FILE_H

#include <stdint.h>
#include <stdio.h>

typedef struct cli_outfile {
    FILE *f;            /* write here; NULL once committed or aborted */
    char *shown_path;   /* the path as given, for messages */
    int streamed;       /* 1: written in place (FIFO, device, fd); no rename */
    int unnamed;        /* renamed files: 1 while the file has no name (O_TMPFILE) */
    int armed_slot;     /* renamed files: the signals.h slot of tmp_name, or -1 */
    int borrowed;       /* 1: f is the tool's stdout or stderr: flushed, never closed */
    int dir_open;       /* 1: dir_fd is open (renamed files) */
    int dir_fd;         /* renamed files: the directory receiving the file */
    char *final_name;   /* renamed files: the name in dir_fd the rename targets */
    int keep_mode;      /* renamed files: 1 if mode (and owner) copy an existing file */
    unsigned mode;      /* renamed files: the permission bits the file ends with */
    unsigned uid, gid;  /* with keep_mode: the existing file's owner */
    char tmp_name[16];  /* renamed files: ".clpe-XXXXXX" in dir_fd */
} cli_outfile;

/* All zero (memset) is the empty state: abort and commit accept it. */

/* Open the output for path. flag names the option in messages ("-o").
 * Prints one line and returns CLI_EXIT_RUNTIME if the path is refused or
 * cannot be opened (see above); nothing at the path is changed then. */
int cli_outfile_open(cli_outfile *o, const char *path, const char *flag);

/* Finish: flush and close, then rename a temporary file into place with its
 * mode. Prints one line and returns CLI_EXIT_RUNTIME on failure (the
 * temporary file is then removed; a write error of a file-size limit is
 * reported as "file too large"). */
int cli_outfile_commit(cli_outfile *o, const char *flag);

/* Finish n outputs as one: flush, close and give each its mode, then rename
 * them all into place with signals held (signals.h). If anything fails
 * before the renames, no path changes; if a rename fails, the paths already
 * renamed get their old files back (or lose the new one, if there was
 * none), where the file system can exchange two names. Streamed outputs
 * are only flushed. flags[i] names outs[i] in messages. Prints one line and
 * returns CLI_EXIT_RUNTIME on failure, every output aborted. */
int cli_outfile_commit_all(cli_outfile *const *outs, const char *const *flags, size_t n);

/* Whether path names what is written in place (a FIFO, a character
 * device, the tool's own descriptor, a path under /proc), links followed;
 * 0 for a regular file, a new path or anything that cannot be looked at. */
int cli_output_is_streamed(const char *path);

/* A file the tool would make at path must have a name ending in ext
 * (".npy", any case); a streamed output takes any name. Prints "FLAG must
 * name a EXT file, got 'PATH'" and returns CLI_EXIT_USAGE otherwise. */
int cli_output_check_name(const char *path, const char *flag, const char *ext);

/* Close and remove the temporary file. Safe on a zeroed, committed or
 * aborted struct. */
void cli_outfile_abort(cli_outfile *o);

/* Free bytes of the file system a renamed file goes to, for a check before
 * a long write. Returns 0 and sets *bytes (saturating at UINT64_MAX), or -1
 * if unknown or streamed (no file grows there). */
int cli_outfile_free_bytes(const cli_outfile *o, uint64_t *bytes);

/* Print "cannot write FLAG 'PATH': REASON" for errno value err, spelling
 * EFBIG as the file-size limit it is. */
void cli_outfile_write_error(const cli_outfile *o, const char *flag, int err);

#endif
