/*
 * plain_write.c - whole writes and the plain write rate (see plain_write.h).
 */
#include "plain_write.h"

#include "cli.h"

#include <errno.h>
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

int cli_measure_plain_write(int fd, uint64_t bytes, const unsigned char *buf, size_t chunk,
                            double *rate, double *cpu_s)
{
    *rate = 0.0;
    *cpu_s = 0.0;
    for (int pass = 0; pass < 2; ++pass) {
        double t0 = cli_now(), cpu0 = cli_cpu_seconds();
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
