/* SPDX-License-Identifier: Apache-2.0 */
/*
 * output_file.c - open, finish and abandon the clpe tool's output files by
 * what sits at the path (see output_file.h for the rules).
 */
#define _GNU_SOURCE /* O_TMPFILE, AT_SYMLINK_FOLLOW, renameat2 */
#include "output_file.h"

#include "cli.h"
#include "signals.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <sys/vfs.h>
#endif

/* renameat2's flag (linux/fs.h), for C libraries that do not declare it. */
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* As many links as the kernel itself follows (Linux MAXSYMLINKS). */
#define MAX_LINKS 40
#define TMP_PREFIX ".clpe-"
#define TMP_RANDOM 6

static void reset(cli_outfile *o)
{
    /* All zero is the empty state, so a memset struct is safe to abort
     * (armed_slot 0 counts only while tmp_name is set). */
    memset(o, 0, sizeof *o);
    o->armed_slot = -1;
}

static char *copy_string(const char *s, size_t len)
{
    char *c = malloc(len + 1);
    if (c) {
        memcpy(c, s, len);
        c[len] = '\0';
    }
    return c;
}

static int refuse(cli_outfile *o, const char *flag, const char *path, const char *why)
{
    cli_error("cannot write %s '%s': %s", flag, path, why);
    cli_outfile_abort(o);
    return CLI_EXIT_RUNTIME;
}

/* The descriptor N a path names among the tool's own (/dev/stdout,
 * /dev/fd/N, /proc/self/fd/N), else -1. The text is all that is known of
 * such a path: following it as a link would reach "pipe:[...]" or a file
 * the shell opened, neither of which may be replaced. */
static int own_descriptor(const char *path)
{
    static const char *const prefixes[] = {"/dev/fd/", "/proc/self/fd/",
                                           "/proc/thread-self/fd/"};
    if (strcmp(path, "/dev/stdout") == 0)
        return STDOUT_FILENO;
    if (strcmp(path, "/dev/stderr") == 0)
        return STDERR_FILENO;
    for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; ++k) {
        size_t n = strlen(prefixes[k]);
        if (strncmp(path, prefixes[k], n) != 0)
            continue;
        const char *p = path + n;
        long fd = 0;
        if (!*p)
            return -1;
        for (; *p; ++p) {
            if (!isdigit((unsigned char)*p) || fd > INT_MAX / 10)
                return -1;
            fd = fd * 10 + (*p - '0');
        }
        return fd <= INT_MAX ? (int)fd : -1;
    }
    return -1;
}

/* Is path a link of /proc (whose "targets" are descriptions of open files,
 * not paths to follow)? */
static int in_proc(const char *path)
{
    if (strncmp(path, "/proc/", 6) == 0)
        return 1;
#ifdef __linux__
    /* The same directory reached another way ("//proc", a bind mount). */
    const char *slash = strrchr(path, '/');
    char *dir = slash ? copy_string(path, slash == path ? 1 : (size_t)(slash - path))
                      : copy_string(".", 1);
    struct statfs fs;
    int proc = dir && statfs(dir, &fs) == 0 && fs.f_type == 0x9fa0; /* PROC_SUPER_MAGIC */
    free(dir);
    return proc;
#else
    return 0;
#endif
}

/* The path a symbolic link at `path` points to, relative links resolved
 * against the link's own directory. NULL with errno set on failure. */
static char *follow_link(const char *path, off_t size_hint)
{
    size_t cap = size_hint > 0 ? (size_t)size_hint + 1 : PATH_MAX;
    char *target = malloc(cap);
    if (!target)
        return NULL;
    ssize_t n = readlink(path, target, cap);
    if (n < 0 || (size_t)n >= cap) {
        int e = n < 0 ? errno : ENAMETOOLONG; /* the link changed under us */
        free(target);
        errno = e;
        return NULL;
    }
    target[n] = '\0';
    const char *slash = strrchr(path, '/');
    if (target[0] == '/' || !slash)
        return target;
    size_t dir_len = (size_t)(slash - path) + 1;
    char *joined = malloc(dir_len + (size_t)n + 1);
    if (joined) {
        memcpy(joined, path, dir_len);
        memcpy(joined + dir_len, target, (size_t)n + 1);
    }
    free(target);
    if (!joined)
        errno = ENOMEM;
    return joined;
}

/* Six characters for a temporary name: only uniqueness matters (O_EXCL
 * retries a collision), not secrecy. */
static void random_suffix(char *out)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static uint64_t state;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    state += 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (int k = 0; k < TMP_RANDOM; ++k, z /= 62)
        out[k] = alphabet[z % 62];
    out[TMP_RANDOM] = '\0';
}

static int permission_error(int err)
{
    return err == EACCES || err == EPERM || err == EROFS;
}

/* Whether an O_TMPFILE file can be given a name later: by linking its
 * /proc/self/fd entry, which needs no privilege. */
static int can_link_unnamed(void)
{
    static int known = -1;
    if (known < 0)
        known = access("/proc/self/fd", X_OK) == 0;
    return known;
}

/* Create and arm a file named .clpe-XXXXXX in the directory. Returns its
 * descriptor, or -1 with *err set. */
static int create_named(cli_outfile *o, int *err)
{
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; ++tries) {
        memcpy(o->tmp_name, TMP_PREFIX, sizeof TMP_PREFIX - 1);
        random_suffix(o->tmp_name + sizeof TMP_PREFIX - 1);
        fd = openat(o->dir_fd, o->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        *err = fd < 0 ? errno : 0;
        if (fd < 0 && *err != EEXIST)
            break;
    }
    if (fd >= 0)
        o->armed_slot = cli_signals_arm(o->dir_fd, o->tmp_name);
    else
        o->tmp_name[0] = '\0';
    return fd;
}

/* No new file could be made in the directory: say so, and why, since the
 * file at the path itself may well be writable. */
static int refuse_directory(cli_outfile *o, const char *flag, int err)
{
    const char *path = o->shown_path;
    const char *slash = strrchr(path, '/');
    char *dir = slash ? copy_string(path, slash == path ? 1 : (size_t)(slash - path))
                      : copy_string(".", 1);
    const char *shown = dir ? dir : "";
    size_t cap = strlen(shown) + 320;
    char *why = malloc(cap);
    int rc;
    if (!why) {
        rc = refuse(o, flag, path, strerror(err));
    } else {
        if (permission_error(err))
            snprintf(why, cap,
                     "cannot create a file in the directory '%s' (%s): clpe writes the new "
                     "file beside the old one and renames it over the path, which needs "
                     "write permission on the directory",
                     shown, strerror(err));
        else
            snprintf(why, cap, "cannot create a file in the directory '%s': %s", shown,
                     strerror(err));
        rc = refuse(o, flag, path, why);
    }
    free(why);
    free(dir);
    return rc;
}

/* A file renamed into place at `path` when complete; existing is the
 * regular file there now, or NULL. */
static int open_renamed(cli_outfile *o, const char *path, const struct stat *existing,
                        const char *flag)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (!*name)
        return refuse(o, flag, o->shown_path, "not a file name");
    char *dir = slash ? copy_string(path, slash == path ? 1 : (size_t)(slash - path))
                      : copy_string(".", 1);
    o->final_name = copy_string(name, strlen(name));
    if (!dir || !o->final_name) {
        free(dir);
        return refuse(o, flag, o->shown_path, "out of memory");
    }
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (dir_fd < 0)
        return refuse(o, flag, o->shown_path, strerror(errno));
    o->dir_fd = dir_fd;
    o->dir_open = 1;
    if (existing) {
        o->keep_mode = 1;
        o->mode = (unsigned)(existing->st_mode & 07777);
        o->uid = (unsigned)existing->st_uid;
        o->gid = (unsigned)existing->st_gid;
    } else {
        /* What a plain fopen would create: 0666 less the umask. */
        mode_t mask = umask(0);
        umask(mask);
        o->mode = 0666u & ~(unsigned)mask;
    }

    /* A file with no name, where the file system makes one and the file
     * can be named later through /proc/self/fd: nothing to remove if the
     * tool dies before it is complete. */
    int fd = -1, err = 0;
#ifdef O_TMPFILE
    if (can_link_unnamed()) {
        fd = openat(o->dir_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
        err = fd < 0 ? errno : 0;
        o->unnamed = fd >= 0;
    }
#endif
    if (fd < 0 && (err == 0 || !permission_error(err))) {
        /* A signal between creating the file and arming its removal would
         * leave it behind: hold signals across both. */
        sigset_t all, before;
        sigfillset(&all);
        cli_signals_hold();
        sigprocmask(SIG_BLOCK, &all, &before);
        fd = create_named(o, &err);
        sigprocmask(SIG_SETMASK, &before, NULL);
        cli_signals_release();
    }
    if (fd < 0)
        return refuse_directory(o, flag, err);
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        err = errno;
        close(fd);
        return refuse(o, flag, o->shown_path, strerror(err));
    }
    return CLI_EXIT_OK;
}

/* A node written in place: a FIFO, a character device, a /proc link. */
static int open_streamed(cli_outfile *o, const char *path, const char *flag)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return refuse(o, flag, o->shown_path, strerror(errno));
    o->streamed = 1;
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int err = errno;
        close(fd);
        return refuse(o, flag, o->shown_path, strerror(err));
    }
    return CLI_EXIT_OK;
}

/* One of the tool's own descriptors. stdout and stderr are used through
 * their streams, so the file gets its bytes in the order the tool prints. */
static int open_descriptor(cli_outfile *o, int fd, const char *flag)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return refuse(o, flag, o->shown_path, strerror(errno));
    if ((fl & O_ACCMODE) == O_RDONLY)
        return refuse(o, flag, o->shown_path, "the descriptor is open for reading only");
    o->streamed = 1;
    if (fd == STDOUT_FILENO || fd == STDERR_FILENO) {
        o->f = fd == STDOUT_FILENO ? stdout : stderr;
        o->borrowed = 1;
        return CLI_EXIT_OK;
    }
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (dup_fd < 0)
        return refuse(o, flag, o->shown_path, strerror(errno));
    o->f = fdopen(dup_fd, "wb");
    if (!o->f) {
        int err = errno;
        close(dup_fd);
        return refuse(o, flag, o->shown_path, strerror(err));
    }
    return CLI_EXIT_OK;
}

/* A regular file may be replaced only if the user could write it in place. */
static int check_writable(cli_outfile *o, const char *path, const struct stat *st,
                          const char *flag)
{
    if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) != 0)
        return refuse(o, flag, o->shown_path, strerror(errno));
    if ((st->st_mode & 0222) == 0) {
        char why[96];
        snprintf(why, sizeof why, "it is read-only (mode %04o); make it writable or remove it",
                 (unsigned)(st->st_mode & 07777));
        return refuse(o, flag, o->shown_path, why);
    }
    return CLI_EXIT_OK;
}

int cli_outfile_open(cli_outfile *o, const char *path, const char *flag)
{
    reset(o);
    size_t len = strlen(path);
    if (len == 0 || path[len - 1] == '/') {
        cli_error("cannot write %s '%s': not a file name", flag, path);
        return CLI_EXIT_RUNTIME;
    }
    o->shown_path = copy_string(path, len);
    char *cur = copy_string(path, len);
    if (!o->shown_path || !cur) {
        free(cur);
        return refuse(o, flag, path, "out of memory");
    }
    int rc = CLI_EXIT_RUNTIME;
    for (int links = 0;;) {
        int fd = own_descriptor(cur);
        if (fd >= 0) {
            rc = open_descriptor(o, fd, flag);
            break;
        }
        struct stat st;
        if (lstat(cur, &st) != 0) {
            if (errno == ENOENT)
                rc = open_renamed(o, cur, NULL, flag);
            else
                rc = refuse(o, flag, path, strerror(errno));
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            if (in_proc(cur)) {
                rc = open_streamed(o, cur, flag);
                break;
            }
            if (++links > MAX_LINKS) {
                rc = refuse(o, flag, path, strerror(ELOOP));
                break;
            }
            char *next = follow_link(cur, st.st_size);
            if (!next) {
                rc = refuse(o, flag, path, strerror(errno));
                break;
            }
            free(cur);
            cur = next;
            continue;
        }
        if (S_ISREG(st.st_mode)) {
            rc = check_writable(o, cur, &st, flag);
            if (rc == CLI_EXIT_OK)
                rc = open_renamed(o, cur, &st, flag);
        } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
            rc = open_streamed(o, cur, flag);
        } else if (S_ISDIR(st.st_mode)) {
            rc = refuse(o, flag, path, "it is a directory");
        } else if (S_ISBLK(st.st_mode)) {
            rc = refuse(o, flag, path, "it is a block device (clpe writes files, not disks)");
        } else {
            rc = refuse(o, flag, path, "it is a socket or another node clpe cannot write");
        }
        break;
    }
    free(cur);
    return rc;
}

void cli_outfile_write_error(const cli_outfile *o, const char *flag, int err)
{
    const char *path = o->shown_path ? o->shown_path : "";
    if (err == EFBIG)
        cli_error("cannot write %s '%s': file too large (the file size limit, ulimit -f, "
                  "was reached)", flag, path);
    else
        cli_error("cannot write %s '%s': %s", flag, path, err ? strerror(err) : "write error");
}

/* Flush o and give a renamed file its mode and owner. Returns 0 or an
 * errno value. */
static int finish_writing(cli_outfile *o)
{
    int err = 0;
    if (!o->f)
        return EBADF;
    if (fflush(o->f) != 0)
        err = errno ? errno : EIO;
    else if (ferror(o->f))
        err = EIO;
    if (!err && !o->streamed) {
        int fd = fileno(o->f);
        /* chown first: it clears set-id bits the mode may then restore. */
        if (o->keep_mode && (o->uid != (unsigned)geteuid() || o->gid != (unsigned)getegid()))
            (void)!fchown(fd, (uid_t)o->uid, (gid_t)o->gid); /* kept where allowed */
        if (fchmod(fd, (mode_t)o->mode) != 0)
            err = errno;
    }
    return err;
}

/* Give an unnamed file a temporary name (armed), with signals held. Returns
 * 0 or an errno value. */
static int name_unnamed(cli_outfile *o)
{
    char proc[48];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(o->f));
    int err = EEXIST;
    for (int tries = 0; tries < 100 && err == EEXIST; ++tries) {
        memcpy(o->tmp_name, TMP_PREFIX, sizeof TMP_PREFIX - 1);
        random_suffix(o->tmp_name + sizeof TMP_PREFIX - 1);
        err = linkat(AT_FDCWD, proc, o->dir_fd, o->tmp_name, AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
    }
    if (err) {
        o->tmp_name[0] = '\0';
        return err;
    }
    o->unnamed = 0;
    o->armed_slot = cli_signals_arm(o->dir_fd, o->tmp_name);
    return 0;
}

/* Close o's stream. Returns 0 or an errno value. */
static int close_stream(cli_outfile *o)
{
    int err = 0;
    if (o->borrowed)
        o->f = NULL;
    else if (o->f) {
        if (fclose(o->f) != 0)
            err = errno ? errno : EIO;
        o->f = NULL;
    }
    return err;
}

static int exchange_names(int dir_fd, const char *a, const char *b)
{
#if defined(__linux__) && defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, dir_fd, a, dir_fd, b, RENAME_EXCHANGE);
#else
    (void)dir_fd;
    (void)a;
    (void)b;
    errno = ENOSYS;
    return -1;
#endif
}

/* How a path was replaced, for undoing it. */
enum { PUT_NOTHING, PUT_EXCHANGED, PUT_NEW, PUT_OVER };

/* Rename o's temporary file over its path. The old file, if any, is kept
 * under the temporary name where the file system can exchange two names.
 * Returns 0 or an errno value; *how says what was done. */
static int put_in_place(cli_outfile *o, int *how)
{
    *how = PUT_NOTHING;
    if (exchange_names(o->dir_fd, o->tmp_name, o->final_name) == 0) {
        *how = PUT_EXCHANGED; /* tmp_name now holds the old file */
        return 0;
    }
    int existed = errno != ENOENT;
    if (renameat(o->dir_fd, o->tmp_name, o->dir_fd, o->final_name) != 0)
        return errno;
    *how = existed ? PUT_OVER : PUT_NEW;
    o->tmp_name[0] = '\0'; /* renamed: nothing left under that name */
    cli_signals_disarm(o->armed_slot);
    o->armed_slot = -1;
    return 0;
}

/* Undo put_in_place: the old file back at the path, or the new one gone. */
static void take_back(cli_outfile *o, int how)
{
    if (how == PUT_EXCHANGED)
        (void)exchange_names(o->dir_fd, o->tmp_name, o->final_name);
    else if (how == PUT_NEW)
        (void)unlinkat(o->dir_fd, o->final_name, 0);
    /* PUT_OVER: the old file is gone; the new one stays. */
}

int cli_outfile_commit_all(cli_outfile *const *outs, const char *const *flags, size_t n)
{
    int err = 0;
    size_t failed = 0;
    int how[CLI_SIGNALS_MAX_ARMED]; /* per output: what put_in_place did */
    if (n > CLI_SIGNALS_MAX_ARMED) {
        cli_error("cannot write %zu files as one set (at most %d)", n, CLI_SIGNALS_MAX_ARMED);
        for (size_t i = 0; i < n; ++i)
            cli_outfile_abort(outs[i]);
        return CLI_EXIT_RUNTIME;
    }
    /* Everything that can fail for want of room or a write error, first. */
    for (size_t i = 0; i < n && !err; ++i) {
        failed = i;
        how[i] = PUT_NOTHING;
        err = finish_writing(outs[i]);
        if (!err && outs[i]->streamed)
            err = close_stream(outs[i]);
    }
    if (!err) {
        /* A signal now waits until every path is replaced, or none. */
        cli_signals_hold();
        for (size_t i = 0; i < n && !err; ++i) {
            cli_outfile *o = outs[i];
            failed = i;
            if (o->streamed)
                continue;
            if (o->unnamed)
                err = name_unnamed(o);
            int close_err = close_stream(o);
            if (!err)
                err = close_err;
        }
        for (size_t i = 0; i < n && !err; ++i) {
            failed = i;
            if (!outs[i]->streamed)
                err = put_in_place(outs[i], &how[i]);
        }
        if (err)
            for (size_t i = n; i-- > 0;)
                take_back(outs[i], how[i]);
        cli_signals_release();
    }
    if (err)
        cli_outfile_write_error(outs[failed], flags[failed], err);
    /* Removes the temporaries: the old files kept by an exchange, too. */
    for (size_t i = 0; i < n; ++i)
        cli_outfile_abort(outs[i]);
    return err ? CLI_EXIT_RUNTIME : CLI_EXIT_OK;
}

int cli_outfile_commit(cli_outfile *o, const char *flag)
{
    return cli_outfile_commit_all(&o, &flag, 1);
}

void cli_outfile_abort(cli_outfile *o)
{
    if (o->f && !o->borrowed)
        fclose(o->f);
    if (o->dir_open) {
        if (o->tmp_name[0])
            unlinkat(o->dir_fd, o->tmp_name, 0);
        cli_signals_disarm(o->armed_slot);
        close(o->dir_fd);
    }
    free(o->shown_path);
    free(o->final_name);
    reset(o);
}

int cli_output_is_streamed(const char *path)
{
    if (own_descriptor(path) >= 0)
        return 1;
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && in_proc(path))
        return 1;
    return stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode));
}

int cli_output_check_name(const char *path, const char *flag, const char *ext)
{
    size_t len = strlen(path), ext_len = strlen(ext);
    if ((len >= ext_len && strcasecmp(path + len - ext_len, ext) == 0) ||
        cli_output_is_streamed(path))
        return CLI_EXIT_OK;
    cli_error("%s must name a %s file, got '%s'", flag, ext, path);
    return CLI_EXIT_USAGE;
}

int cli_outfile_free_bytes(const cli_outfile *o, uint64_t *bytes)
{
    struct statvfs vfs;
    if (!o->dir_open || fstatvfs(o->dir_fd, &vfs) != 0)
        return -1;
    uint64_t blocks = (uint64_t)vfs.f_bavail, size = (uint64_t)vfs.f_frsize;
    *bytes = size && blocks > UINT64_MAX / size ? UINT64_MAX : blocks * size;
    return 0;
}
