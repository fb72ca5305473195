/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reserve_shim.c - a file system that refuses to reserve, for test_cli.
 *
 * Preloaded (LD_PRELOAD) into the clpe tool, it makes every fallocate call
 * fail with the errno number in CLPE_FAULT_FALLOCATE_ERRNO (ENOSPC if unset),
 * as a full file system (ENOSPC) or one that cannot reserve (EOPNOTSUPP)
 * would; every other call is the system's own. It shows that `clpe encode`
 * reports a refused reservation as a write error, leaving no file, and writes
 * the file as it comes where reserving is not supported.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#define SHIM_API __attribute__((visibility("default")))

static int refusal(void)
{
    const char *text = getenv("CLPE_FAULT_FALLOCATE_ERRNO");
    int err = text ? atoi(text) : 0;
    return err > 0 ? err : ENOSPC;
}

SHIM_API int fallocate(int fd, int mode, off_t offset, off_t len)
{
    (void)fd;
    (void)mode;
    (void)offset;
    (void)len;
    errno = refusal();
    return -1;
}

SHIM_API int fallocate64(int fd, int mode, off_t offset, off_t len)
{
    return fallocate(fd, mode, offset, len);
}
