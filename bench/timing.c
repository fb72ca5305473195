/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timing.c - warm-up, calibration and event timing for clpe-bench (see timing.h).
 */
#include "timing.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    if (n <= 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Device seconds from the start of `first` to the end of `last`; negative
 * when the queue cannot profile. */
static double event_span(cl_event first, cl_event last)
{
    cl_ulong t0 = 0, t1 = 0;
    if (clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) !=
            CL_SUCCESS ||
        clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) !=
            CL_SUCCESS ||
        t1 < t0)
        return -1.0;
    return 1e-9 * (double)(t1 - t0);
}

/* One batch of n back-to-back iterations. Only the first and the last carry
 * events: an event per call would add host work the user does not pay. */
static cl_int run_batch(cl_command_queue queue, bench_enqueue_fn fn, void *ctx, size_t n,
                        double *device_s, double *wall_s)
{
    cl_event first = NULL, last = NULL;
    cl_int err = clFinish(queue);
    if (err != CL_SUCCESS)
        return err;
    double t0 = bench_now();
    for (size_t i = 0; i < n && err == CL_SUCCESS; i++) {
        cl_event *ev = NULL;
        if (i == 0)
            ev = &first;
        else if (i == n - 1)
            ev = &last;
        err = fn(ctx, queue, ev);
    }
    cl_int fin = clFinish(queue);
    double t1 = bench_now();
    if (err == CL_SUCCESS)
        err = fin;
    if (err == CL_SUCCESS) {
        *wall_s = t1 - t0;
        *device_s = event_span(first, last ? last : first);
    }
    if (first)
        clReleaseEvent(first);
    if (last)
        clReleaseEvent(last);
    return err;
}

cl_int bench_calibrate(cl_command_queue queue, bench_enqueue_fn fn, void *ctx,
                       const bench_plan *plan, size_t *iters)
{
    double dev, wall;
    /* Warm-up: the first launch of a kernel may compile it (PoCL compiles per
     * work-group size) and first-touch the buffer's pages. */
    cl_int err = run_batch(queue, fn, ctx, 1, &dev, &wall);
    if (err != CL_SUCCESS)
        return err;
    /* Grow the batch until it lasts a tenth of the target, so the
     * per-iteration estimate is not just launch latency. */
    size_t n = 1;
    for (;;) {
        err = run_batch(queue, fn, ctx, n, &dev, &wall);
        if (err != CL_SUCCESS)
            return err;
        if (wall >= 0.1 * plan->target_s || n >= plan->max_iters)
            break;
        size_t grow = wall > 0 ? (size_t)ceil(0.12 * plan->target_s / wall) : 16;
        n *= grow < 2 ? 2 : (grow > 16 ? 16 : grow);
        if (n > plan->max_iters)
            n = plan->max_iters;
    }
    double per_iter = wall / (double)n;
    size_t it = per_iter > 0 ? (size_t)llround(plan->target_s / per_iter) : plan->max_iters;
    *iters = it < 1 ? 1 : (it > plan->max_iters ? plan->max_iters : it);
    return CL_SUCCESS;
}

cl_int bench_repeat(cl_command_queue queue, bench_enqueue_fn fn, void *ctx, size_t iters,
                    double *device_s, double *wall_s)
{
    double dev = -1.0, wall = 0.0;
    cl_int err = run_batch(queue, fn, ctx, iters, &dev, &wall);
    if (err == CL_SUCCESS) {
        *device_s = dev > 0 ? dev / (double)iters : -1.0;
        *wall_s = wall / (double)iters;
    }
    return err;
}

void bench_summarize(const double *device_s, const double *wall_s, int repeats, size_t iters,
                     bench_result *out)
{
    *out = (bench_result){0};
    double *dev = malloc(sizeof(double) * (size_t)repeats);
    double *wall = malloc(sizeof(double) * (size_t)repeats);
    if (repeats < 1 || !dev || !wall) {
        free(dev);
        free(wall);
        out->status = repeats < 1 ? CL_INVALID_VALUE : CL_OUT_OF_HOST_MEMORY;
        return;
    }
    int events_ok = 1;
    for (int r = 0; r < repeats; r++) {
        dev[r] = device_s[r];
        wall[r] = wall_s[r];
        if (dev[r] <= 0)
            events_ok = 0;
    }
    double *use = events_ok ? dev : wall;
    out->iters = iters;
    out->repeats = repeats;
    out->event_timed = events_ok;
    out->min_s = out->max_s = use[0];
    for (int r = 1; r < repeats; r++) {
        out->min_s = fmin(out->min_s, use[r]);
        out->max_s = fmax(out->max_s, use[r]);
    }
    out->median_s = bench_median(use, repeats);
    out->wall_median_s = bench_median(wall, repeats);
    free(dev);
    free(wall);
}

void bench_time(cl_command_queue queue, bench_enqueue_fn fn, void *ctx, const bench_plan *plan,
                bench_result *out)
{
    *out = (bench_result){0};
    int reps = plan->repeats < 1 ? 1 : plan->repeats;
    double *dev_s = malloc(sizeof(double) * (size_t)reps);
    double *wall_s = malloc(sizeof(double) * (size_t)reps);
    size_t iters = 0;
    cl_int err = dev_s && wall_s ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    if (err == CL_SUCCESS)
        err = bench_calibrate(queue, fn, ctx, plan, &iters);
    for (int r = 0; r < reps && err == CL_SUCCESS; r++)
        err = bench_repeat(queue, fn, ctx, iters, &dev_s[r], &wall_s[r]);
    if (err == CL_SUCCESS)
        bench_summarize(dev_s, wall_s, reps, iters, out);
    else
        out->status = err;
    free(dev_s);
    free(wall_s);
}

cl_int bench_enqueue_cost(cl_command_queue queue, bench_enqueue_fn fn, void *ctx, size_t calls,
                          int repeats, double *median, double *min, double *max)
{
    if (calls < 1)
        calls = 1;
    if (repeats < 1)
        repeats = 1;
    double *per = malloc(sizeof(double) * (size_t)repeats);
    if (!per)
        return CL_OUT_OF_HOST_MEMORY;
    /* Warm-up: kernel creation, first compile and argument setup happen once. */
    cl_int err = fn(ctx, queue, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(queue);
    for (int r = 0; r < repeats && err == CL_SUCCESS; r++) {
        double t0 = bench_now();
        for (size_t i = 0; i < calls && err == CL_SUCCESS; i++)
            err = fn(ctx, queue, NULL);
        double t1 = bench_now();
        cl_int fin = clFinish(queue);
        if (err == CL_SUCCESS)
            err = fin;
        per[r] = (t1 - t0) / (double)calls;
    }
    if (err == CL_SUCCESS) {
        *min = *max = per[0];
        for (int r = 1; r < repeats; r++) {
            *min = fmin(*min, per[r]);
            *max = fmax(*max, per[r]);
        }
        *median = bench_median(per, repeats);
    }
    free(per);
    return err;
}
