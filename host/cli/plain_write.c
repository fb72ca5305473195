/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plain_write.c - whole writes and the plain write rate (see plain_write.h).
 */
#define _GNU_SOURCE /* fallocate */
#include "plain_write.h"

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int cli_write_all(int fd, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int cli_reserve(int fd, uint64_t offset, uint64_t bytes)
{
#if defined(__linux__) && defined(FALLOC_FL_KEEP_SIZE)
    if (bytes == 0 || offset > (uint64_t)INT64_MAX || bytes > (uint64_t)INT64_MAX - offset)
        return 0;
    int r;
    do
        r = fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)bytes);
    while (r != 0 && errno == EINTR);
    if (r == 0)
        return 0;
    switch (errno) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case EIO:
        return errno;
    default: /* EOPNOTSUPP, ENOSYS, ...: written as it comes */
        return 0;
    }
#else
    (void)fd;
    (void)offset;
    (void)bytes;
    return 0;
#endif
}

int cli_measure_plain_write(int fd, uint64_t bytes, const unsigned char *buf, size_t chunk,
                            int reserve, double *rate, double *cpu_s)
{
    *rate = 0.0;
    *cpu_s = 0.0;
    for (int pass = 0; pass < 2; ++pass) {
        double t0 = cli_now(), cpu0 = cli_cpu_seconds();
        if (reserve) {
            int e = cli_reserve(fd, 0, bytes);
            if (e)
                return e;
        }
        for (uint64_t done = 0; done < bytes;) {
            size_t n = bytes - done < chunk ? (size_t)(bytes - done) : chunk;
            int e = cli_write_all(fd, buf, n);
            if (e)
                return e;
            done += n;
        }
        double elapsed = cli_now() - t0, cpu = cli_cpu_seconds() - cpu0;
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
            return errno;
        if (elapsed > 0 && (double)bytes / elapsed > *rate) {
            *rate = (double)bytes / elapsed;
            *cpu_s = cpu;
        }
    }
    return 0;
}
