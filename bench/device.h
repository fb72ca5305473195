/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device.h - the device clpe-bench runs on and the buffers every operation
 * shares: its description, the context and queues, the reference programs,
 * and the setup and teardown of the buffers.
 */
#ifndef CLPE_BENCH_DEVICE_H
#define CLPE_BENCH_DEVICE_H

#include "options.h"
#include "timing.h"

typedef struct device_desc {
    char platform[256], platform_version[256];
    char name[256], vendor[256], version[256], driver[256], c_version[256];
    cl_uint compute_units, clock_mhz;
    cl_ulong global_mem, max_alloc;
    cl_device_type type;
    int fp16, fp64;
} device_desc;

/* Fill *d from the device's and platform's info queries ("?" where one fails). */
void device_describe(cl_platform_id plat, cl_device_id dev, device_desc *d);

/* "gpu", "cpu", "accelerator" or "other". */
const char *device_type_name(cl_device_type t);

/* What every operation runs on. All buffers are sized for the widest dtype
 * asked for (never narrower than float32), so every dtype runs on the same
 * memory. */
typedef struct bench_env {
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;       /* profiling: device times */
    cl_command_queue host_queue;  /* no profiling: host cost of enqueue calls */
    cl_program streams;           /* streams.cl: the limits */
    cl_mem x;                     /* [batch, seq, d]: add in place, the streams */
    cl_mem y;                     /* [batch, seq, d]: add-out and gather outputs */
    cl_mem emb;                   /* [vocab, d] embedding: every byte BENCH_DATA_BYTE */
    cl_mem ids;                   /* int32 [batch, seq] token ids, random in [0, vocab) */
    cl_mem table;                 /* [seq, d]: the precomputed table of the baselines */
    cl_mem rope_cos, rope_sin;    /* [seq, head_dim] each: rope-table's cos/sin cache */
    cl_mem kv_slots;              /* int64 [batch * seq]: rope-kv's cache slots 0, 1, ... */
    cl_mem kv_copy;               /* kv-copy's destination: the bytes rope-kv reads */
    size_t vocab;
    size_t widest;                /* bytes per element the buffers are sized for */
} bench_env;

/* Create the context, queues, the streams program and the buffers for
 * options o on device. Returns 0, or -1 after printing one line (and the
 * build log where a build failed); *env is then safe to pass to
 * env_release. */
int env_create(bench_env *env, cl_device_id device, const device_desc *dd, const options *o);

/* Release everything env_create made. */
void env_release(bench_env *env);

/* Build a program from embedded source with options; prints the log on failure. */
cl_program env_build(const bench_env *env, const char *source, const char *build_options,
                     const char *what);

/* What every timed operation reads and the fill limit writes: buffers whose
 * every byte is 0x3C, a normal nonzero number in each dtype (float32 and
 * bfloat16 0.0115, float16 1.06, float64 1.5e-18). Not zeros: this CPU
 * machine streams zeros over zeros about 20 % faster than any other data
 * when its memory is busy (stream and fill alike; nonzero data, changed or
 * rewritten, all run at one rate), and clpe's outputs are never all zero,
 * so a limit timed on zeros would be one no user's data reaches
 * (bench/RESULTS.md, ninth round). */
#define BENCH_DATA_BYTE 0x3C

/* Fill bytes of buf with zeros and wait. */
cl_int env_zero(const bench_env *env, cl_mem buf, size_t bytes);

/* Fill bytes of buf with BENCH_DATA_BYTE and wait. */
cl_int env_fill_data(const bench_env *env, cl_mem buf, size_t bytes);

#endif /* CLPE_BENCH_DEVICE_H */
