/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timing.h - the timing module of clpe-bench: warm-up, an iteration count
 * calibrated to a target time, OpenCL event timing on a profiling queue, and
 * the median and spread of repeated runs (the clpeak recipe).
 *
 * An operation is a callback that enqueues one iteration on a queue. The
 * module never prints; it hands back numbers and the first failing status.
 */
#ifndef CLPE_BENCH_TIMING_H
#define CLPE_BENCH_TIMING_H

#include <stddef.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

/* Enqueue one iteration of the operation on queue. When event is non-NULL
 * the call must return an event that completes with this iteration. Returns
 * 0 or a failing status (a cl_int or a clpe_status: both are int32). */
typedef cl_int (*bench_enqueue_fn)(void *ctx, cl_command_queue queue, cl_event *event);

typedef struct bench_plan {
    double target_s;    /* wall time one repeat should take */
    int repeats;        /* timed repeats after calibration */
    size_t max_iters;   /* upper bound on iterations per repeat */
} bench_plan;

typedef struct bench_result {
    cl_int status;      /* 0, or the first failing status (nothing else is valid then) */
    size_t iters;       /* iterations per repeat */
    int repeats;
    int event_timed;    /* 1: times below come from event profiling; 0: wall clock */
    double median_s;    /* seconds per iteration: median over repeats */
    double min_s;
    double max_s;
    double wall_median_s; /* wall clock per iteration, clFinish included */
} bench_result;

/* Seconds on a monotonic clock. */
double bench_now(void);

/* Median of v[0..n) (sorts v). n == 0 gives 0. */
double bench_median(double *v, int n);

/* Time fn on a queue made with CL_QUEUE_PROFILING_ENABLE (a queue without
 * it falls back to the wall clock): one warm-up iteration, calibration, then
 * plan->repeats repeats of `iters` back-to-back iterations. The device time of
 * a repeat runs from the first iteration's start to the last one's end, so
 * gaps between launches count, as they do for a user. */
void bench_time(cl_command_queue queue, bench_enqueue_fn fn, void *ctx, const bench_plan *plan,
                bench_result *out);

/* bench_time in parts, so that several operations can take turns repeat by
 * repeat and share whatever else the machine is doing:
 *   bench_calibrate  warm-up, then the iteration count one repeat needs
 *   bench_repeat     one repeat of iters back-to-back iterations: seconds
 *                    per iteration by events (*device_s < 0 when the queue
 *                    cannot profile) and by the wall clock
 *   bench_summarize  median, min and max over the repeats (events when every
 *                    repeat has them, else the wall clock) into *out
 * The first two return 0 or the first failing status. */
cl_int bench_calibrate(cl_command_queue queue, bench_enqueue_fn fn, void *ctx,
                       const bench_plan *plan, size_t *iters);
cl_int bench_repeat(cl_command_queue queue, bench_enqueue_fn fn, void *ctx, size_t iters,
                    double *device_s, double *wall_s);
void bench_summarize(const double *device_s, const double *wall_s, int repeats, size_t iters,
                     bench_result *out);

/* Host cost of one enqueue call: `calls` calls with no events, the wall
 * clock around the calls only (the device work is finished afterwards,
 * untimed), `repeats` times. Seconds per call into *median, *min, *max.
 * Returns 0 or the first failing status. */
cl_int bench_enqueue_cost(cl_command_queue queue, bench_enqueue_fn fn, void *ctx, size_t calls,
                          int repeats, double *median, double *min, double *max);

#endif /* CLPE_BENCH_TIMING_H */
