/*
 * main.c - clpe-bench: how close clpe runs to the speed limit of a device.
 *
 * In one process, on one device and on the same buffers, it times the
 * reference streams of streams.cl (the limits) next to clpe's table, fused
 * add (in place and out of place) and fused gather, for every dtype the
 * device supports, at the full size and at 1/64 of it (fixed overheads show
 * there), and measures the host cost of one enqueue call. It prints a table
 * and, with --json, writes every figure and the device description.
 *
 * clpe-bench is a client of the public API only (include/clpe.h).
 */
#include "clpe.h"
#include "common/json.h"
#include "timing.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const char bench_streams_source[];

/* ---- dtypes --------------------------------------------------------------- */

typedef struct dtype_info {
    clpe_dtype dtype;
    const char *name;
    size_t size;          /* bytes per element */
    const char *stream;   /* suffix of the streams.cl kernels that move the same bytes */
} dtype_info;

static const dtype_info DTYPES[] = {
    {CLPE_DTYPE_F32, "f32", 4, "f32"},
    {CLPE_DTYPE_F16, "f16", 2, "u16"},
    {CLPE_DTYPE_BF16, "bf16", 2, "u16"},
    {CLPE_DTYPE_F64, "f64", 8, "u64"},
};
#define N_DTYPES (sizeof DTYPES / sizeof DTYPES[0])

/* ---- options -------------------------------------------------------------- */

typedef struct options {
    const char *device;   /* clpe_select_device selector; NULL: CLPE_DEVICE or the default */
    size_t batch, seq, d, vocab;
    unsigned dtype_mask;  /* bit i: DTYPES[i] */
    int quick;
    double target_ms;
    int repeats;
    size_t calls;         /* enqueue calls per repeat for the host cost */
    const char *json;
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clpe-bench [options]\n"
            "Times clpe's table, fused add (in place and out of place) and fused gather\n"
            "next to plain streaming kernels over the same buffers on one OpenCL device.\n"
            "\n"
            "  --device SEL     device: index, 'gpu', 'cpu' or part of a name (default:\n"
            "                   $CLPE_DEVICE, else the first GPU, else the first device)\n"
            "  --batch N        sequences per call (default 1)\n"
            "  --seq N          rows per sequence (default 32768; --quick 256)\n"
            "  --d N            model width (default 1024; --quick 128)\n"
            "  --vocab N        embedding rows for gather (default 8192; --quick 512)\n"
            "  --dtype LIST     comma-separated f32,f16,bf16,f64 or 'all' (default all)\n"
            "  --target-ms T    wall time of one timed repeat (default 100; --quick 5)\n"
            "  --repeats N      timed repeats; the median is reported (default 5; --quick 3)\n"
            "  --calls N        enqueue calls per repeat for the host cost (default 2000;\n"
            "                   --quick 100)\n"
            "  --quick          tiny sizes, a few seconds: a smoke test, not a measurement\n"
            "  --json FILE      also write every figure and the device description to FILE\n"
            "  --help           this text\n"
            "\n"
            "Exit status: 0 when every operation ran or was skipped as unsupported, 1 when\n"
            "one failed, 2 on bad usage.\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || v == 0 || v > (unsigned long long)SIZE_MAX)
        return 0;
    *out = (size_t)v;
    return 1;
}

static int parse_dtypes(const char *s, unsigned *mask)
{
    *mask = 0;
    if (strcmp(s, "all") == 0) {
        *mask = (1u << N_DTYPES) - 1;
        return 1;
    }
    char buf[128];
    if (strlen(s) >= sizeof buf)
        return 0;
    strcpy(buf, s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        size_t i = 0;
        while (i < N_DTYPES && strcmp(tok, DTYPES[i].name) != 0)
            i++;
        if (i == N_DTYPES)
            return 0;
        *mask |= 1u << i;
    }
    return *mask != 0;
}

/* Returns 0 to run, 1 to exit 0 (help), 2 on bad usage. */
static int parse_options(int argc, char **argv, options *o)
{
    int seq_set = 0, d_set = 0, vocab_set = 0, target_set = 0, repeats_set = 0, calls_set = 0;
    *o = (options){.batch = 1, .seq = 32768, .d = 1024, .vocab = 8192,
                   .dtype_mask = (1u << N_DTYPES) - 1, .target_ms = 100, .repeats = 5,
                   .calls = 2000};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t n;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(a, "--quick") == 0) {
            o->quick = 1;
            continue;
        } else if (!v) {
            fprintf(stderr, "clpe-bench: %s needs a value (or is unknown); see --help\n", a);
            return 2;
        } else if (strcmp(a, "--device") == 0) {
            o->device = v;
        } else if (strcmp(a, "--json") == 0) {
            o->json = v;
        } else if (strcmp(a, "--dtype") == 0) {
            if (!parse_dtypes(v, &o->dtype_mask)) {
                fprintf(stderr, "clpe-bench: --dtype takes f32,f16,bf16,f64 or all, not '%s'\n", v);
                return 2;
            }
        } else if (parse_size(v, &n)) {
            if (strcmp(a, "--batch") == 0)
                o->batch = n;
            else if (strcmp(a, "--seq") == 0)
                o->seq = n, seq_set = 1;
            else if (strcmp(a, "--d") == 0)
                o->d = n, d_set = 1;
            else if (strcmp(a, "--vocab") == 0)
                o->vocab = n, vocab_set = 1;
            else if (strcmp(a, "--target-ms") == 0)
                o->target_ms = (double)n, target_set = 1;
            else if (strcmp(a, "--repeats") == 0 && n <= 1000)
                o->repeats = (int)n, repeats_set = 1;
            else if (strcmp(a, "--calls") == 0)
                o->calls = n, calls_set = 1;
            else {
                fprintf(stderr, "clpe-bench: unknown option or value: %s %s; see --help\n", a, v);
                return 2;
            }
        } else {
            fprintf(stderr, "clpe-bench: %s takes a positive integer, not '%s'\n", a, v);
            return 2;
        }
        i++;
    }
    if (o->quick) {
        if (!seq_set)
            o->seq = 256;
        if (!d_set)
            o->d = 128;
        if (!vocab_set)
            o->vocab = 512;
        if (!target_set)
            o->target_ms = 5;
        if (!repeats_set)
            o->repeats = 3;
        if (!calls_set)
            o->calls = 100;
    }
    if (o->d > CLPE_MAX_D || o->vocab > INT32_MAX) {
        fprintf(stderr, "clpe-bench: --d at most %u, --vocab at most %d\n", CLPE_MAX_D, INT32_MAX);
        return 2;
    }
    return 0;
}

/* ---- the device ----------------------------------------------------------- */

typedef struct device_desc {
    char platform[256], platform_version[256];
    char name[256], vendor[256], version[256], driver[256], c_version[256];
    cl_uint compute_units, clock_mhz;
    cl_ulong global_mem, max_alloc;
    cl_device_type type;
    int fp16, fp64;
} device_desc;

static void info_string(cl_device_id dev, cl_platform_id plat, cl_uint param, char *out,
                        size_t cap)
{
    out[0] = '\0';
    cl_int err = plat ? clGetPlatformInfo(plat, param, cap, out, NULL)
                      : clGetDeviceInfo(dev, param, cap, out, NULL);
    if (err != CL_SUCCESS)
        snprintf(out, cap, "?");
    out[cap - 1] = '\0';
}

static int has_extension(cl_device_id dev, const char *ext)
{
    size_t len = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &len) != CL_SUCCESS || len == 0)
        return 0;
    char *s = malloc(len + 1);
    if (!s)
        return 0;
    int found = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, len, s, NULL) == CL_SUCCESS) {
        s[len] = '\0';
        size_t n = strlen(ext);
        for (char *p = strstr(s, ext); p && !found; p = strstr(p + 1, ext))
            found = (p == s || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0');
    }
    free(s);
    return found;
}

static void describe(cl_platform_id plat, cl_device_id dev, device_desc *d)
{
    memset(d, 0, sizeof *d);
    info_string(NULL, plat, CL_PLATFORM_NAME, d->platform, sizeof d->platform);
    info_string(NULL, plat, CL_PLATFORM_VERSION, d->platform_version, sizeof d->platform_version);
    info_string(dev, NULL, CL_DEVICE_NAME, d->name, sizeof d->name);
    info_string(dev, NULL, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
    info_string(dev, NULL, CL_DEVICE_VERSION, d->version, sizeof d->version);
    info_string(dev, NULL, CL_DRIVER_VERSION, d->driver, sizeof d->driver);
    info_string(dev, NULL, CL_DEVICE_OPENCL_C_VERSION, d->c_version, sizeof d->c_version);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->compute_units, &d->compute_units,
                    NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof d->clock_mhz, &d->clock_mhz, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof d->type, &d->type, NULL);
    d->fp16 = has_extension(dev, "cl_khr_fp16");
    d->fp64 = has_extension(dev, "cl_khr_fp64");
}

static const char *type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return "gpu";
    if (t & CL_DEVICE_TYPE_CPU)
        return "cpu";
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return "accelerator";
    return "other";
}

/* ---- what is measured ----------------------------------------------------- */

typedef enum op_kind {
    OP_STREAM, OP_FILL, OP_GATHER_STREAM,        /* limits (streams.cl) */
    OP_TABLE, OP_ADD, OP_ADD_OUT, OP_GATHER,     /* clpe */
    OP_RAW_LAUNCH                                /* host cost of a bare OpenCL launch */
} op_kind;

static const char *const OP_NAMES[] = {"stream", "fill", "gather-stream", "table",
                                       "add", "add-out", "gather", "opencl-launch"};
/* The limit each clpe operation is held against. */
static const op_kind OP_LIMIT[] = {OP_STREAM, OP_FILL, OP_GATHER_STREAM, OP_FILL,
                                   OP_STREAM, OP_STREAM, OP_GATHER_STREAM, OP_STREAM};

typedef struct bench_env {
    cl_context ctx;
    cl_command_queue queue;       /* profiling: device times */
    cl_command_queue host_queue;  /* no profiling: host cost of enqueue calls */
    cl_program streams;
    cl_mem x, y, emb, ids;
    size_t vocab;
} bench_env;

/* Everything one enqueue callback needs. */
typedef struct op_ctx {
    op_kind kind;
    const bench_env *env;
    const dtype_info *dt;
    clpe_encoder *enc;
    cl_kernel kernel;
    size_t batch, seq, d;
    size_t width;                 /* limits: elements per work-item, 1 or 4 */
    double a, b;                  /* stream scalars, for OP_RAW_LAUNCH */
} op_ctx;

static cl_int set_scalar(cl_kernel k, cl_uint index, const char *suffix, double v)
{
    if (strcmp(suffix, "f32") == 0) {
        cl_float f = (cl_float)v;
        return clSetKernelArg(k, index, sizeof f, &f);
    } else if (strcmp(suffix, "u16") == 0) {
        cl_ushort u = (cl_ushort)v;
        return clSetKernelArg(k, index, sizeof u, &u);
    }
    cl_ulong u = (cl_ulong)v;
    return clSetKernelArg(k, index, sizeof u, &u);
}

static cl_int op_enqueue(void *p, cl_command_queue q, cl_event *ev)
{
    const op_ctx *o = p;
    const bench_env *e = o->env;
    size_t rows = o->batch * o->seq;
    clpe_tensor tx = {.buffer = e->x, .offset = 0, .row_pitch = 0, .batch_pitch = 0}, ty = {.buffer = e->y}, temb = {.buffer = e->emb};
    switch (o->kind) {
    case OP_STREAM:
    case OP_FILL: {
        size_t g = rows * o->d / o->width;
        return clEnqueueNDRangeKernel(q, o->kernel, 1, NULL, &g, NULL, 0, NULL, ev);
    }
    case OP_GATHER_STREAM: {
        size_t g[2] = {o->d / o->width, rows};
        return clEnqueueNDRangeKernel(q, o->kernel, 2, NULL, g, NULL, 0, NULL, ev);
    }
    case OP_RAW_LAUNCH: {
        /* What any library launch must at least do: set its arguments, enqueue. */
        size_t g = rows * o->d;
        cl_int err = clSetKernelArg(o->kernel, 0, sizeof(cl_mem), &e->x);
        if (err == CL_SUCCESS)
            err = set_scalar(o->kernel, 1, o->dt->stream, o->a);
        if (err == CL_SUCCESS)
            err = set_scalar(o->kernel, 2, o->dt->stream, o->b);
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(q, o->kernel, 1, NULL, &g, NULL, 0, NULL, ev);
        return err;
    }
    case OP_TABLE:
        return clpe_enqueue_table(o->enc, q, 0, rows, &tx, 0, NULL, ev);
    case OP_ADD:
        return clpe_enqueue_add(o->enc, q, o->batch, o->seq, &tx, NULL, 0, NULL, ev);
    case OP_ADD_OUT:
        return clpe_enqueue_add_out(o->enc, q, o->batch, o->seq, &tx, &ty, NULL, 0, NULL, ev);
    case OP_GATHER: {
        clpe_token_ids ids = {.buffer = e->ids, .offset = 0};
        return clpe_enqueue_gather(o->enc, q, o->batch, o->seq, &ids, &temb, o->dt->dtype,
                                   e->vocab, &ty, NULL, NULL, 0, NULL, ev);
    }
    }
    return CL_INVALID_OPERATION;
}

/* Bytes an operation must move, counted from its definition, not from what
 * a kernel happens to touch. */
static double op_bytes(op_kind k, size_t rows, size_t d, size_t es)
{
    double elems = (double)rows * (double)d;
    switch (k) {
    case OP_FILL:
    case OP_TABLE:
        return elems * (double)es;
    case OP_GATHER_STREAM:
    case OP_GATHER:
        return (double)rows * 4.0 + 2.0 * elems * (double)es;
    default:
        return 2.0 * elems * (double)es;
    }
}

/* One line of the report. */
typedef struct row {
    op_kind kind;
    const char *dtype;       /* dtype name for clpe rows, stream suffix for limits */
    const char *size;        /* "full" or "1/64" */
    size_t batch, seq, d;
    size_t width;            /* limits: elements per work-item */
    double elements, bytes;
    bench_result r;
    int state;               /* 0 ok, 1 skipped, 2 failed */
    int limit;               /* index of the limit row, or -1 */
    double ratio;            /* Gelem/s over the limit's; NAN when none */
    char note[200];
} row;

typedef struct report {
    row *rows;
    size_t n, cap;
    char **notes;
    size_t n_notes;
    int failed;
} report;

static row *add_row(report *rep)
{
    if (rep->n == rep->cap) {
        size_t cap = rep->cap ? 2 * rep->cap : 64;
        row *r = realloc(rep->rows, cap * sizeof *r);
        if (!r) {
            fprintf(stderr, "clpe-bench: out of memory\n");
            exit(1);
        }
        rep->rows = r;
        rep->cap = cap;
    }
    row *r = &rep->rows[rep->n++];
    memset(r, 0, sizeof *r);
    r->limit = -1;
    r->ratio = NAN;
    return r;
}

static void add_note(report *rep, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    printf("note: %s\n", buf);
    char **n = realloc(rep->notes, (rep->n_notes + 1) * sizeof *n);
    char *s = malloc(strlen(buf) + 1);
    if (!n || !s) {
        fprintf(stderr, "clpe-bench: out of memory\n");
        exit(1);
    }
    strcpy(s, buf);
    rep->notes = n;
    rep->notes[rep->n_notes++] = s;
}

/* "stream", or "stream-x4" for the four-per-work-item variant. */
static const char *op_label(const row *r)
{
    static char buf[4][32];
    static int next;
    if (r->width <= 1)
        return OP_NAMES[r->kind];
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s-x%zu", OP_NAMES[r->kind], r->width);
    return b;
}

static double gelem(const row *r)
{
    return r->state == 0 && r->r.median_s > 0 ? r->elements / r->r.median_s * 1e-9 : NAN;
}

static void print_header(void)
{
    printf("%-16s %-5s %-5s %14s %11s %7s %8s %8s  %-20s %6s\n", "op", "dtype", "size",
           "batch*seq x d", "us/iter", "spread", "Gelem/s", "GB/s", "limit", "ratio");
}

static void print_row(const report *rep, const row *r)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zu", r->batch * r->seq, r->d);
    printf("%-16s %-5s %-5s %14s ", op_label(r), r->dtype, r->size, shape);
    if (r->state != 0) {
        printf("%s: %s\n", r->state == 1 ? "skipped" : "FAILED", r->note);
        return;
    }
    double spread = r->r.median_s > 0 ? (r->r.max_s - r->r.min_s) / r->r.median_s : 0;
    printf("%11.1f %6.1f%% %8.3f %8.2f", r->r.median_s * 1e6, 100 * spread, gelem(r),
           r->bytes / r->r.median_s * 1e-9);
    if (r->limit >= 0) {
        const row *l = &rep->rows[r->limit];
        char lname[32];
        snprintf(lname, sizeof lname, "%s/%s", op_label(l), l->dtype);
        if (isnan(r->ratio))
            printf("  %-20s %6s", lname, "-");
        else
            printf("  %-20s %6.3f", lname, r->ratio);
    }
    printf("%s%s\n", r->note[0] ? "  " : "", r->note);
    fflush(stdout);
}

/* The limit row for (kind, stream suffix, size): of the variants measured,
 * the fastest; -1 when none was measured. */
static int find_limit(const report *rep, op_kind kind, const char *suffix, const char *size)
{
    int best = -1;
    for (size_t i = 0; i < rep->n; i++) {
        const row *r = &rep->rows[i];
        if (r->kind != kind || strcmp(r->dtype, suffix) != 0 || strcmp(r->size, size) != 0)
            continue;
        if (best < 0 || (r->state == 0 && !(gelem(r) <= gelem(&rep->rows[best]))))
            best = (int)i;
    }
    return best;
}

/* ---- running -------------------------------------------------------------- */

typedef struct run_state {
    const options *opt;
    bench_env env;
    bench_plan plan;
    report rep;
} run_state;

/* Time one operation and append its row. */
static void measure(run_state *s, op_ctx *o, const char *dtype_label, const char *size,
                    const char *skip_note)
{
    row *r = add_row(&s->rep);
    size_t idx = (size_t)(r - s->rep.rows);
    r->kind = o->kind;
    r->dtype = dtype_label;
    r->size = size;
    r->batch = o->batch;
    r->seq = o->seq;
    r->d = o->d;
    r->width = o->width;
    r->elements = (double)(o->batch * o->seq) * (double)o->d;
    r->bytes = op_bytes(o->kind, o->batch * o->seq, o->d, o->dt->size);
    if (o->kind >= OP_TABLE) {
        r->limit = find_limit(&s->rep, OP_LIMIT[o->kind], o->dt->stream, size);
    }
    if (skip_note) {
        r->state = 1;
        snprintf(r->note, sizeof r->note, "%s", skip_note);
    } else {
        bench_time(s->env.queue, op_enqueue, o, &s->plan, &r->r);
        if (r->r.status == CLPE_ERROR_UNSUPPORTED_DTYPE) {
            r->state = 1;
            snprintf(r->note, sizeof r->note, "%s", clpe_status_string(r->r.status));
        } else if (r->r.status != CL_SUCCESS) {
            r->state = 2;
            s->rep.failed = 1;
            snprintf(r->note, sizeof r->note, "%s (%d)", clpe_status_string(r->r.status),
                     (int)r->r.status);
        } else if (!r->r.event_timed) {
            snprintf(r->note, sizeof r->note, "wall clock: no event profiling");
        }
    }
    r = &s->rep.rows[idx];
    if (r->state == 0 && r->limit >= 0 && s->rep.rows[r->limit].state == 0)
        r->ratio = gelem(r) / gelem(&s->rep.rows[r->limit]);
    print_row(&s->rep, r);
}

static cl_int zero_buffer(cl_command_queue q, cl_mem buf, size_t bytes)
{
    cl_uchar zero = 0;
    cl_int err = clEnqueueFillBuffer(q, buf, &zero, 1, 0, bytes, 0, NULL, NULL);
    return err == CL_SUCCESS ? clFinish(q) : err;
}

/* The three limits, each in both variants where the shape allows, for one
 * stream suffix at one size, unless measured already. */
static int measure_limits(run_state *s, const dtype_info *dt, size_t seq, const char *size)
{
    static const op_kind kinds[] = {OP_STREAM, OP_FILL, OP_GATHER_STREAM};
    static const char *const stems[] = {"stream", "fill", "gather"};
    if (find_limit(&s->rep, OP_STREAM, dt->stream, size) >= 0)
        return 0;
    size_t n = s->opt->batch * seq * s->opt->d;
    for (size_t v = 0; v < 6; v++) {
        size_t k = v % 3, width = v < 3 ? 1 : 4;
        if (width == 4 && (n % 4 || (kinds[k] == OP_GATHER_STREAM && s->opt->d % 4)))
            continue;
        char name[64];
        snprintf(name, sizeof name, "%s%s_%s", stems[k], width == 4 ? "4" : "", dt->stream);
        cl_uint d_arg = (cl_uint)(s->opt->d / width);
        cl_int err;
        cl_kernel kern = clCreateKernel(s->env.streams, name, &err);
        if (!kern) {
            fprintf(stderr, "clpe-bench: clCreateKernel(%s): %d\n", name, err);
            return -1;
        }
        cl_mem x = s->env.x;
        if (kinds[k] == OP_GATHER_STREAM) {
            cl_uint vocab = (cl_uint)s->env.vocab;
            err = clSetKernelArg(kern, 0, sizeof(cl_mem), &s->env.ids);
            err |= clSetKernelArg(kern, 1, sizeof(cl_mem), &s->env.emb);
            err |= clSetKernelArg(kern, 2, sizeof(cl_mem), &s->env.y);
            err |= clSetKernelArg(kern, 3, sizeof(cl_uint), &d_arg);
            err |= clSetKernelArg(kern, 4, sizeof(cl_uint), &vocab);
            err |= set_scalar(kern, 5, dt->stream, 1.0);
            err |= set_scalar(kern, 6, dt->stream, 0.0);
        } else {
            err = clSetKernelArg(kern, 0, sizeof(cl_mem), &x);
            err |= set_scalar(kern, 1, dt->stream, kinds[k] == OP_FILL ? 0.0 : 1.0);
            if (kinds[k] == OP_STREAM)
                err |= set_scalar(kern, 2, dt->stream, 0.0);
        }
        if (err != CL_SUCCESS) {
            fprintf(stderr, "clpe-bench: clSetKernelArg(%s) failed\n", name);
            clReleaseKernel(kern);
            return -1;
        }
        op_ctx o = {.kind = kinds[k], .env = &s->env, .dt = dt, .kernel = kern,
                    .batch = s->opt->batch, .seq = seq, .d = s->opt->d, .width = width};
        measure(s, &o, dt->stream, size, NULL);
        clReleaseKernel(kern);
    }
    return 0;
}

/* Every measurement for one dtype: limits, then clpe at both sizes. */
static int run_dtype(run_state *s, const dtype_info *dt, clpe_encoder *base,
                     cl_device_id device)
{
    const options *opt = s->opt;
    size_t small_seq = opt->seq / 64 ? opt->seq / 64 : 1;
    if (!clpe_device_supports_dtype(device, dt->dtype)) {
        add_note(&s->rep, "%s skipped: the device does not support it", dt->name);
        return 0;
    }
    /* Fresh zeros: bit patterns left by another dtype could be denormals
     * here, and denormals are slow on many CPUs. */
    size_t x_bytes = opt->batch * opt->seq * opt->d * dt->size;
    if (zero_buffer(s->env.queue, s->env.x, x_bytes) != CL_SUCCESS ||
        zero_buffer(s->env.queue, s->env.y, x_bytes) != CL_SUCCESS) {
        fprintf(stderr, "clpe-bench: clearing buffers failed\n");
        return -1;
    }

    clpe_encoder *enc = base;
    char skip[200] = "";
    if (dt->dtype != CLPE_DTYPE_F32) {
        clpe_config cfg = clpe_config_default((uint32_t)opt->d);
        cfg.dtype = dt->dtype;
        clpe_status st;
        enc = clpe_encoder_create_like(base, &cfg, &st);
        if (!enc)
            snprintf(skip, sizeof skip, "encoder: %s", clpe_status_string(st));
    }

    static const op_kind ops[] = {OP_TABLE, OP_ADD, OP_ADD_OUT, OP_GATHER};
    static const char *const sizes[] = {"full", "1/64"};
    for (int z = 0; z < 2; z++) {
        size_t seq = z == 0 ? opt->seq : small_seq;
        if (measure_limits(s, dt, seq, sizes[z]) != 0)
            return -1;
        for (size_t k = 0; k < 4; k++) {
            op_ctx o = {.kind = ops[k], .env = &s->env, .dt = dt, .enc = enc,
                        .batch = opt->batch, .seq = seq, .d = opt->d, .width = 1};
            measure(s, &o, dt->name, sizes[z], skip[0] ? skip : NULL);
        }
    }
    if (enc != base)
        clpe_encoder_release(enc);
    return 0;
}

/* ---- host cost of one enqueue call ----------------------------------------- */

typedef struct cost_row {
    op_kind kind;
    size_t rows, d, calls;
    cl_int status;
    double median_s, min_s, max_s;
    int skipped;
} cost_row;

static void measure_costs(run_state *s, clpe_encoder *enc, cl_kernel raw, cost_row *out,
                          size_t *n_out)
{
    /* Small enough that the device keeps up and the queue never blocks the
     * host, large enough to be a real launch: 4 rows. */
    static const op_kind kinds[] = {OP_RAW_LAUNCH, OP_TABLE, OP_ADD, OP_ADD_OUT, OP_GATHER};
    size_t seq = s->opt->seq < 4 ? s->opt->seq : 4;
    *n_out = 0;
    printf("\nhost cost of one enqueue call (f32, %zu rows x %zu, %zu calls, wall clock):\n", seq,
           s->opt->d, s->opt->calls);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        cost_row *c = &out[(*n_out)++];
        *c = (cost_row){.kind = kinds[k], .rows = seq, .d = s->opt->d, .calls = s->opt->calls};
        printf("  %-16s ", OP_NAMES[kinds[k]]);
        op_ctx o = {.kind = kinds[k], .env = &s->env, .dt = &DTYPES[0], .enc = enc,
                    .kernel = raw, .batch = 1, .seq = seq, .d = s->opt->d, .width = 1,
                    .a = 1.0, .b = 0.0};
        c->status = bench_enqueue_cost(s->env.host_queue, op_enqueue, &o, s->opt->calls,
                                       s->opt->repeats, &c->median_s, &c->min_s, &c->max_s);
        if (c->status != CL_SUCCESS) {
            c->skipped = c->status == CLPE_ERROR_UNSUPPORTED_DTYPE;
            if (!c->skipped)
                s->rep.failed = 1;
            printf("%s: %s\n", c->skipped ? "skipped" : "FAILED", clpe_status_string(c->status));
            continue;
        }
        printf("%8.2f us/call  (min %.2f, max %.2f)\n", c->median_s * 1e6, c->min_s * 1e6,
               c->max_s * 1e6);
    }
}

/* ---- headline ratios ---------------------------------------------------- */

/* The ratios issue 5 sets targets for (on PoCL on the 2-core CPU), taken
 * from the full-size lines of this run. */
typedef struct headline {
    const char *what;
    op_kind kind;
    const char *dtype;
    double target;           /* ratio >= target; enqueue cost: us <= target */
    double value;            /* NAN when not measured */
} headline;

static size_t headlines(const run_state *s, const cost_row *costs, size_t n_costs,
                        headline *out)
{
    static const headline want[] = {
        {"f32 add / stream", OP_ADD, "f32", 0.8, NAN},
        {"f32 table / fill", OP_TABLE, "f32", 0.8, NAN},
        {"f16 add / stream", OP_ADD, "f16", 0.6, NAN},
        {"bf16 add / stream", OP_ADD, "bf16", 0.6, NAN},
        {"f32 gather / gather-stream", OP_GATHER, "f32", 0.7, NAN},
        {"f16 gather / gather-stream", OP_GATHER, "f16", 0.7, NAN},
        {"bf16 gather / gather-stream", OP_GATHER, "bf16", 0.7, NAN},
        {"f64 gather / gather-stream", OP_GATHER, "f64", 0.7, NAN},
        {"f32 add enqueue cost, us", OP_ADD, NULL, 10.0, NAN},
    };
    size_t n = 0;
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        headline h = want[w];
        if (h.dtype) {
            for (size_t i = 0; i < s->rep.n; i++) {
                const row *r = &s->rep.rows[i];
                if (r->kind == h.kind && strcmp(r->dtype, h.dtype) == 0 &&
                    strcmp(r->size, "full") == 0)
                    h.value = r->ratio;
            }
        } else {
            for (size_t i = 0; i < n_costs; i++)
                if (costs[i].kind == h.kind && !costs[i].skipped && costs[i].status == 0)
                    h.value = costs[i].median_s * 1e6;
        }
        if (!isnan(h.value))
            out[n++] = h;
    }
    return n;
}

static void print_headlines(const headline *h, size_t n)
{
    if (n == 0)
        return;
    printf("\nheadline figures and the issue 5 targets (set for PoCL on the 2-core CPU):\n");
    for (size_t i = 0; i < n; i++) {
        int cost = h[i].dtype == NULL;
        int met = cost ? h[i].value <= h[i].target : h[i].value >= h[i].target;
        printf("  %-28s %8.3f   target %s %.2f   %s\n", h[i].what, h[i].value, cost ? "<=" : ">=",
               h[i].target, met ? "met" : "missed");
    }
}

/* ---- JSON ----------------------------------------------------------------- */

static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

static int write_json(const char *path, const run_state *s, const device_desc *dd,
                      const char *date, const cost_row *costs, size_t n_costs,
                      const headline *heads, size_t n_heads)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    const options *o = s->opt;
    fprintf(f, "{\n  \"schema\": \"clpe-bench/1\",\n  \"clpe_version\": ");
    json_string(f, clpe_version_string());
    fprintf(f, ",\n  \"date\": ");
    json_string(f, date);
    fprintf(f, ",\n  \"device\": {\n    \"platform\": ");
    json_string(f, dd->platform);
    fprintf(f, ",\n    \"platform_version\": ");
    json_string(f, dd->platform_version);
    fprintf(f, ",\n    \"name\": ");
    json_string(f, dd->name);
    fprintf(f, ",\n    \"vendor\": ");
    json_string(f, dd->vendor);
    fprintf(f, ",\n    \"type\": ");
    json_string(f, type_name(dd->type));
    fprintf(f, ",\n    \"version\": ");
    json_string(f, dd->version);
    fprintf(f, ",\n    \"driver_version\": ");
    json_string(f, dd->driver);
    fprintf(f, ",\n    \"opencl_c_version\": ");
    json_string(f, dd->c_version);
    fprintf(f,
            ",\n    \"compute_units\": %u,\n    \"max_clock_mhz\": %u,\n"
            "    \"global_mem_bytes\": %llu,\n    \"max_alloc_bytes\": %llu,\n"
            "    \"fp16\": %s,\n    \"fp64\": %s\n  },\n",
            dd->compute_units, dd->clock_mhz, (unsigned long long)dd->global_mem,
            (unsigned long long)dd->max_alloc, dd->fp16 ? "true" : "false",
            dd->fp64 ? "true" : "false");
    fprintf(f,
            "  \"params\": {\"batch\": %zu, \"seq\": %zu, \"d\": %zu, \"vocab\": %zu, "
            "\"small_seq\": %zu, \"quick\": %s, \"target_ms\": %g, \"repeats\": %d, "
            "\"calls\": %zu, \"dtypes\": [",
            o->batch, o->seq, o->d, o->vocab, o->seq / 64 ? o->seq / 64 : 1,
            o->quick ? "true" : "false", o->target_ms, o->repeats, o->calls);
    int first = 1;
    for (size_t i = 0; i < N_DTYPES; i++)
        if (o->dtype_mask & (1u << i)) {
            fprintf(f, "%s\"%s\"", first ? "" : ", ", DTYPES[i].name);
            first = 0;
        }
    fprintf(f, "]},\n  \"results\": [");
    for (size_t i = 0; i < s->rep.n; i++) {
        const row *r = &s->rep.rows[i];
        static const char *const states[] = {"ok", "skipped", "failed"};
        fprintf(f, "%s\n    {\"op\": \"%s\", \"kind\": \"%s\", \"dtype\": \"%s\", \"size\": \"%s\", "
                   "\"batch\": %zu, \"seq\": %zu, \"d\": %zu, ",
                i ? "," : "", op_label(r), r->kind >= OP_TABLE ? "clpe" : "limit", r->dtype,
                r->size, r->batch, r->seq, r->d);
        if (r->kind < OP_TABLE)
            fprintf(f, "\"per_work_item\": %zu, ", r->width);
        fprintf(f, "\"elements\": ");
        json_number(f, r->elements);
        fprintf(f, ", \"bytes\": ");
        json_number(f, r->bytes);
        fprintf(f, ", \"status\": \"%s\"", states[r->state]);
        if (r->state == 0) {
            fprintf(f, ", \"iterations\": %zu, \"repeats\": %d, \"timer\": \"%s\", \"seconds\": "
                       "{\"median\": ",
                    r->r.iters, r->r.repeats, r->r.event_timed ? "events" : "wall");
            json_number(f, r->r.median_s);
            fprintf(f, ", \"min\": ");
            json_number(f, r->r.min_s);
            fprintf(f, ", \"max\": ");
            json_number(f, r->r.max_s);
            fprintf(f, ", \"wall_median\": ");
            json_number(f, r->r.wall_median_s);
            fprintf(f, "}, \"spread\": ");
            json_number(f, (r->r.max_s - r->r.min_s) / r->r.median_s);
            fprintf(f, ", \"gelem_per_s\": ");
            json_number(f, gelem(r));
            fprintf(f, ", \"gb_per_s\": ");
            json_number(f, r->bytes / r->r.median_s * 1e-9);
        }
        if (r->limit >= 0) {
            const row *l = &s->rep.rows[r->limit];
            fprintf(f, ", \"limit\": {\"op\": \"%s\", \"dtype\": \"%s\"}, \"ratio\": ",
                    op_label(l), l->dtype);
            json_number(f, r->ratio);
        }
        if (r->note[0]) {
            fprintf(f, ", \"note\": ");
            json_string(f, r->note);
        }
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"enqueue_cost\": [");
    for (size_t i = 0; i < n_costs; i++) {
        const cost_row *c = &costs[i];
        fprintf(f, "%s\n    {\"op\": \"%s\", \"dtype\": \"f32\", \"rows\": %zu, \"d\": %zu, "
                   "\"calls\": %zu, \"status\": \"%s\"",
                i ? "," : "", OP_NAMES[c->kind], c->rows, c->d, c->calls,
                c->skipped ? "skipped" : (c->status ? "failed" : "ok"));
        if (!c->skipped && c->status == CL_SUCCESS) {
            fprintf(f, ", \"us_per_call\": {\"median\": ");
            json_number(f, c->median_s * 1e6);
            fprintf(f, ", \"min\": ");
            json_number(f, c->min_s * 1e6);
            fprintf(f, ", \"max\": ");
            json_number(f, c->max_s * 1e6);
            fputc('}', f);
        } else if (c->status) {
            fprintf(f, ", \"note\": ");
            json_string(f, clpe_status_string(c->status));
        }
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"headline\": [");
    for (size_t i = 0; i < n_heads; i++) {
        fprintf(f, "%s\n    {\"what\": ", i ? "," : "");
        json_string(f, heads[i].what);
        fprintf(f, ", \"value\": ");
        json_number(f, heads[i].value);
        fprintf(f, ", \"target\": ");
        json_number(f, heads[i].target);
        fprintf(f, ", \"target_is\": \"%s\"}", heads[i].dtype ? "min" : "max");
    }
    fprintf(f, "\n  ],\n  \"notes\": [");
    for (size_t i = 0; i < s->rep.n_notes; i++) {
        fputs(i ? ", " : "", f);
        json_string(f, s->rep.notes[i]);
    }
    fprintf(f, "]\n}\n");
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "clpe-bench: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

/* ---- main ----------------------------------------------------------------- */

static cl_mem make_buffer(cl_context ctx, size_t bytes, cl_ulong max_alloc, const char *what)
{
    if (bytes > max_alloc) {
        fprintf(stderr,
                "clpe-bench: the %s buffer needs %zu bytes, above the device's %llu-byte "
                "allocation limit; lower --seq, --batch, --d or --vocab\n",
                what, bytes, (unsigned long long)max_alloc);
        return NULL;
    }
    cl_int err;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!m)
        fprintf(stderr, "clpe-bench: clCreateBuffer(%s, %zu bytes): %d\n", what, bytes, err);
    return m;
}

int main(int argc, char **argv)
{
    options opt;
    int pr = parse_options(argc, argv, &opt);
    if (pr)
        return pr == 1 ? 0 : 2;

    run_state s;
    memset(&s, 0, sizeof s);
    s.opt = &opt;
    s.plan = (bench_plan){.target_s = opt.target_ms * 1e-3, .repeats = opt.repeats,
                          .max_iters = 100000};
    s.env.vocab = opt.vocab;
    int rc = 1;
    clpe_encoder *base = NULL;
    cl_kernel raw = NULL;
    cost_row costs[8];
    size_t n_costs = 0;

    cl_platform_id platform;
    cl_device_id device;
    clpe_status st = clpe_select_device(opt.device, &platform, &device);
    if (st != CLPE_SUCCESS) {
        fprintf(stderr, "clpe-bench: no device: %s\n", clpe_status_string(st));
        return 1;
    }
    device_desc dd;
    describe(platform, device, &dd);
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);

    printf("clpe-bench %s, %s\n", clpe_version_string(), date);
    printf("device: %s (%s, %s) on %s\n", dd.name, dd.vendor, type_name(dd.type), dd.platform);
    printf("        %s, driver %s, %u compute units, %u MHz, %.1f GiB\n", dd.version, dd.driver,
           dd.compute_units, dd.clock_mhz, (double)dd.global_mem / (1u << 30));
    printf("shape:  batch %zu x seq %zu x d %zu (small: seq %zu), vocab %zu; "
           "target %g ms x %d repeats%s\n\n",
           opt.batch, opt.seq, opt.d, opt.seq / 64 ? opt.seq / 64 : 1, opt.vocab, opt.target_ms,
           opt.repeats, opt.quick ? " (--quick: a smoke test, not a measurement)" : "");

    cl_int err;
    s.env.ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (!s.env.ctx) {
        fprintf(stderr, "clpe-bench: clCreateContext: %d\n", err);
        return 1;
    }
    s.env.queue = clCreateCommandQueue(s.env.ctx, device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (s.env.queue)
        s.env.host_queue = clCreateCommandQueue(s.env.ctx, device, 0, &err);
    if (!s.env.queue || !s.env.host_queue) {
        fprintf(stderr, "clpe-bench: clCreateCommandQueue: %d\n", err);
        goto done;
    }

    /* Reference kernels. */
    const char *src = bench_streams_source;
    s.env.streams = clCreateProgramWithSource(s.env.ctx, 1, &src, NULL, &err);
    if (s.env.streams)
        err = clBuildProgram(s.env.streams, 1, &device, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clpe-bench: building the reference kernels failed: %d\n", err);
        char log[8192] = "";
        if (s.env.streams)
            clGetProgramBuildInfo(s.env.streams, device, CL_PROGRAM_BUILD_LOG, sizeof log, log,
                                  NULL);
        log[sizeof log - 1] = '\0';
        fprintf(stderr, "%s\n", log);
        goto done;
    }

    /* One set of buffers, sized for the widest dtype asked for, and never
     * narrower than float32: the enqueue-cost runs use the f32 encoder. */
    size_t widest = 4;
    for (size_t i = 0; i < N_DTYPES; i++)
        if ((opt.dtype_mask & (1u << i)) && DTYPES[i].size > widest)
            widest = DTYPES[i].size;
    size_t rows = opt.batch * opt.seq;
    if (rows / opt.batch != opt.seq || rows > SIZE_MAX / opt.d / 8 ||
        opt.vocab > SIZE_MAX / opt.d / 8) {
        fprintf(stderr, "clpe-bench: sizes too large\n");
        goto done;
    }
    size_t x_bytes = rows * opt.d * widest, emb_bytes = opt.vocab * opt.d * widest;
    if (!(s.env.x = make_buffer(s.env.ctx, x_bytes, dd.max_alloc, "x")) ||
        !(s.env.y = make_buffer(s.env.ctx, x_bytes, dd.max_alloc, "out")) ||
        !(s.env.emb = make_buffer(s.env.ctx, emb_bytes, dd.max_alloc, "embedding")) ||
        !(s.env.ids = make_buffer(s.env.ctx, rows * sizeof(cl_int), dd.max_alloc, "ids")))
        goto done;
    printf("buffers: x and out %.1f MiB each, embedding %.1f MiB, ids %.1f MiB\n\n",
           (double)x_bytes / 1048576.0, (double)emb_bytes / 1048576.0,
           (double)(rows * 4) / 1048576.0);
    {
        /* Random token ids (a fixed LCG, so every run gathers the same rows):
         * the access pattern of real text, not a sequential copy. */
        cl_int *ids = malloc(rows * sizeof *ids);
        if (!ids) {
            fprintf(stderr, "clpe-bench: out of memory\n");
            goto done;
        }
        uint64_t state = 0x9E3779B97F4A7C15ull;
        for (size_t i = 0; i < rows; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            ids[i] = (cl_int)((state >> 33) % opt.vocab);
        }
        err = clEnqueueWriteBuffer(s.env.queue, s.env.ids, CL_TRUE, 0, rows * sizeof *ids, ids, 0,
                                   NULL, NULL);
        free(ids);
        if (err == CL_SUCCESS)
            err = zero_buffer(s.env.queue, s.env.emb, emb_bytes);
        if (err != CL_SUCCESS) {
            fprintf(stderr, "clpe-bench: initialising buffers: %d\n", err);
            goto done;
        }
    }

    /* The float32 encoder builds the program every other dtype shares. */
    {
        static char log_text[16384];
        clpe_build_log log = {log_text, sizeof log_text, 0};
        clpe_config cfg = clpe_config_default((uint32_t)opt.d);
        double t0 = bench_now();
        base = clpe_encoder_create(s.env.ctx, device, &cfg, &log, &st);
        if (!base) {
            fprintf(stderr, "clpe-bench: clpe_encoder_create: %s\n%s\n", clpe_status_string(st),
                    log.length ? log_text : "");
            goto done;
        }
        printf("clpe encoder (d %zu, f32) created in %.2f s\n\n", opt.d, bench_now() - t0);
    }

    print_header();
    for (size_t i = 0; i < N_DTYPES; i++)
        if ((opt.dtype_mask & (1u << i)) && run_dtype(&s, &DTYPES[i], base, device) != 0)
            goto done;

    raw = clCreateKernel(s.env.streams, "stream_f32", &err);
    if (!raw) {
        fprintf(stderr, "clpe-bench: clCreateKernel(stream_f32): %d\n", err);
        goto done;
    }
    measure_costs(&s, base, raw, costs, &n_costs);
    headline heads[16];
    size_t n_heads = headlines(&s, costs, n_costs, heads);
    print_headlines(heads, n_heads);

    if (opt.json && write_json(opt.json, &s, &dd, date, costs, n_costs, heads, n_heads) != 0)
        goto done;
    if (opt.json)
        printf("\nwrote %s\n", opt.json);
    rc = s.rep.failed ? 1 : 0;

done:
    if (raw)
        clReleaseKernel(raw);
    clpe_encoder_release(base);
    if (s.env.ids)
        clReleaseMemObject(s.env.ids);
    if (s.env.emb)
        clReleaseMemObject(s.env.emb);
    if (s.env.y)
        clReleaseMemObject(s.env.y);
    if (s.env.x)
        clReleaseMemObject(s.env.x);
    if (s.env.streams)
        clReleaseProgram(s.env.streams);
    if (s.env.host_queue)
        clReleaseCommandQueue(s.env.host_queue);
    if (s.env.queue)
        clReleaseCommandQueue(s.env.queue);
    if (s.env.ctx)
        clReleaseContext(s.env.ctx);
    for (size_t i = 0; i < s.rep.n_notes; i++)
        free(s.rep.notes[i]);
    free(s.rep.notes);
    free(s.rep.rows);
    return rc;
}
