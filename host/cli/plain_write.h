/*
 * plain_write.h - writing bytes to a descriptor, and timing how fast a file
 * system takes plain writes (the yardstick `clpe encode --measure-write`
 * sets its own rate against).
 */
#ifndef CLPE_CLI_PLAIN_WRITE_H
#define CLPE_CLI_PLAIN_WRITE_H

#include <stddef.h>
#include <stdint.h>

/* Write all len bytes of buf to fd, retrying short writes and EINTR.
 * Returns 0, or the errno of the write that failed. */
int cli_write_all(int fd, const void *buf, size_t len);

/* Write `bytes` bytes from buf (chunk bytes per write; buf holds chunk
 * bytes) to the regular file open as fd, empty it again, and repeat once;
 * *rate gets the better pass in bytes per second, *cpu_s the CPU seconds
 * that pass took. The first pass may pay
 * for memory the system has never touched (a virtual machine's first use
 * of its RAM runs at a third of the speed), which a write right after it
 * would not. Returns 0, or the errno of a failed write or truncate; fd is
 * left empty at offset 0 either way it succeeds. */
int cli_measure_plain_write(int fd, uint64_t bytes, const unsigned char *buf, size_t chunk,
                            double *rate, double *cpu_s);

#endif
