/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fs_shim.c - a file system that runs out of room, for test_cli.
 *
 * Preloaded (LD_PRELOAD) into the clpe tool, it makes
 *  - fwrite fail with ENOSPC, writing nothing, once more than
 *    CLPE_FAULT_FWRITE_AFTER bytes have gone through fwrite in all: a disk
 *    that fills while a command writes its second file;
 *  - fstatvfs report CLPE_FAULT_FREE_BYTES bytes free (in 1-byte blocks):
 *    a file system with exactly that much room;
 *  - openat refuse O_TMPFILE with EOPNOTSUPP when CLPE_FAULT_NO_TMPFILE is
 *    set: a file system without unnamed files, where the tool falls back
 *    to named temporary files.
 * Unset, each is the system's own call. It shows that `clpe rope-cache`
 * writes its two files as a pair, and that the tool's free-space messages
 * tell the numbers apart.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#define SHIM_API __attribute__((visibility("default")))

static unsigned long long setting(const char *name, int *set)
{
    const char *text = getenv(name);
    *set = text && *text;
    return *set ? strtoull(text, NULL, 10) : 0;
}

static unsigned long long written;

SHIM_API size_t fwrite(const void *ptr, size_t size, size_t n, FILE *f)
{
    static size_t (*real)(const void *, size_t, size_t, FILE *);
    if (!real)
        real = (size_t(*)(const void *, size_t, size_t, FILE *))dlsym(RTLD_NEXT, "fwrite");
    int set = 0;
    unsigned long long after = setting("CLPE_FAULT_FWRITE_AFTER", &set);
    if (set && f != stdout && f != stderr) {
        unsigned long long bytes = (unsigned long long)size * n;
        if (written + bytes > after) {
            errno = ENOSPC;
            return 0;
        }
        written += bytes;
    }
    return real(ptr, size, n, f);
}

SHIM_API int fstatvfs(int fd, struct statvfs *buf)
{
    static int (*real)(int, struct statvfs *);
    if (!real)
        real = (int (*)(int, struct statvfs *))dlsym(RTLD_NEXT, "fstatvfs");
    int rc = real(fd, buf);
    int set = 0;
    unsigned long long free_bytes = setting("CLPE_FAULT_FREE_BYTES", &set);
    if (rc == 0 && set) {
        buf->f_frsize = 1;
        buf->f_bsize = 1;
        buf->f_bavail = (fsblkcnt_t)free_bytes;
        buf->f_bfree = (fsblkcnt_t)free_bytes;
    }
    return rc;
}

SHIM_API int fstatvfs64(int fd, struct statvfs64 *buf)
{
    /* One layout on 64-bit systems, the only ones the shim runs on. */
    return fstatvfs(fd, (struct statvfs *)buf);
}

static int openat_with(const char *symbol, int dir_fd, const char *path, int flags, mode_t mode)
{
#ifdef O_TMPFILE
    const char *no_tmpfile = getenv("CLPE_FAULT_NO_TMPFILE");
    if (no_tmpfile && *no_tmpfile && (flags & O_TMPFILE) == O_TMPFILE) {
        errno = EOPNOTSUPP;
        return -1;
    }
#endif
    int (*real)(int, const char *, int, ...) =
        (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, symbol);
    return real(dir_fd, path, flags, mode);
}

SHIM_API int openat(int dir_fd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
    va_end(ap);
    return openat_with("openat", dir_fd, path, flags, mode);
}

SHIM_API int openat64(int dir_fd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
    va_end(ap);
    return openat_with("openat64", dir_fd, path, flags, mode);
}
