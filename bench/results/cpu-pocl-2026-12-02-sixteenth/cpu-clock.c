/* cpu-clock.c - the core clock of this CPU, measured: a chain of dependent
 * vpaddd (one cycle each) timed by the wall clock, alone and with two
 * independent 512-bit FMAs beside every four adds (the heavy vector work the
 * kernels do; a core may clock lower under it). Run one copy per core to see
 * the clock with both cores busy. Used for the sixteenth round of
 * bench/RESULTS.md; not part of the build.
 *   gcc -O1 -mavx512f -o cpu-clock cpu-clock.c && (./cpu-clock & ./cpu-clock; wait)
 */
#include <stdio.h>
#include <time.h>

#define ITERATIONS 200000000L

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
    /* zeros: FMAs on denormals or NaNs would take microcode assists */
    __asm__ volatile("vpxord %%zmm0,%%zmm0,%%zmm0\n vpxord %%zmm1,%%zmm1,%%zmm1\n"
                     "vpxord %%zmm2,%%zmm2,%%zmm2\n vpxord %%zmm3,%%zmm3,%%zmm3\n"
                     "vpxord %%zmm5,%%zmm5,%%zmm5\n vpxord %%zmm6,%%zmm6,%%zmm6" ::
                         : "xmm0", "xmm1", "xmm2", "xmm3", "xmm5", "xmm6");
    double t0 = seconds();
    for (long i = 0; i < ITERATIONS; i++)
        __asm__ volatile("vpaddd %%zmm1,%%zmm0,%%zmm0\n vpaddd %%zmm1,%%zmm0,%%zmm0\n"
                         "vpaddd %%zmm1,%%zmm0,%%zmm0\n vpaddd %%zmm1,%%zmm0,%%zmm0" ::
                             : "xmm0");
    double alone = 4.0 * ITERATIONS / (seconds() - t0);
    t0 = seconds();
    for (long i = 0; i < ITERATIONS; i++)
        __asm__ volatile("vpaddd %%zmm1,%%zmm0,%%zmm0\n vfmadd231ps %%zmm5,%%zmm6,%%zmm2\n"
                         "vpaddd %%zmm1,%%zmm0,%%zmm0\n vfmadd231ps %%zmm5,%%zmm6,%%zmm3\n"
                         "vpaddd %%zmm1,%%zmm0,%%zmm0\n vpaddd %%zmm1,%%zmm0,%%zmm0" ::
                             : "xmm0", "xmm2", "xmm3");
    double beside = 4.0 * ITERATIONS / (seconds() - t0);
    printf("clock: %.2f GHz (adds alone), %.2f GHz (beside 512-bit FMAs; a lower bound)\n",
           alone / 1e9, beside / 1e9);
    return 0;
}
