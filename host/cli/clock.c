/*
 * clock.c - the monotonic clock the tool's rates and progress use.
 */
#include "cli.h"

#include <time.h>

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
