/* SPDX-License-Identifier: Apache-2.0 */
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

/* Reserve `bytes` bytes of the regular file fd from `offset` for the
 * writes to come, keeping its size (Linux's fallocate, FALLOC_FL_KEEP_SIZE).
 * A file system hands out its pages faster in one call than one write at a
 * time, so a large output is reserved first and then written.
 * It also finds a full file system before any byte is written. Returns 0
 * when reserved, or when the file system (or system) cannot reserve ahead
 * (the writes then take their pages as they go); else the errno of a
 * reservation refused for want of room, quota or file size (ENOSPC,
 * EDQUOT, EFBIG) or failed by the device (EIO). */
int cli_reserve(int fd, uint64_t offset, uint64_t bytes);

/* Write `bytes` bytes from buf (chunk bytes per write; buf holds chunk
 * bytes) to the regular file open as fd, empty it again, and repeat once;
 * *rate gets the better pass in bytes per second, *cpu_s the CPU seconds
 * that pass took. With `reserve`, each pass first reserves the bytes
 * (cli_reserve, timed with the writes), as `clpe encode` does. The first
 * pass may pay
 * for memory the system has never touched (a virtual machine's first use
 * of its RAM runs at a third of the speed), which a write right after it
 * would not. Returns 0, or the errno of a failed write or truncate; fd is
 * left empty at offset 0 either way it succeeds. */
int cli_measure_plain_write(int fd, uint64_t bytes, const unsigned char *buf, size_t chunk,
                            int reserve, double *rate, double *cpu_s);

#endif
