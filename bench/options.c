/* SPDX-License-Identifier: Apache-2.0 */
/*
 * options.c - the command line of clpe-bench (see options.h).
 */
#include "options.h"
#include "ops.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const dtype_info BENCH_DTYPES[] = {
    {CLPE_DTYPE_F32, "f32", 4, "f32", "-DBENCH_F32"},
    {CLPE_DTYPE_F16, "f16", 2, "u16", "-DBENCH_F16"},
    {CLPE_DTYPE_BF16, "bf16", 2, "u16", "-DBENCH_BF16"},
    {CLPE_DTYPE_F64, "f64", 8, "u64", "-DBENCH_F64"},
};
const size_t BENCH_N_DTYPES = sizeof BENCH_DTYPES / sizeof BENCH_DTYPES[0];

size_t options_small_seq(const options *o)
{
    return o->seq / 64 ? o->seq / 64 : 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clpe-bench [options]\n"
            "Times clpe's table, fused add (in place and out of place), fused gather and\n"
            "rotary embedding next to plain streaming kernels and to what a user would\n"
            "write instead (a precomputed table: table-add, gather-table-add; a cos/sin\n"
            "cache: rope-table), over the same buffers on one OpenCL device.\n"
            "\n"
            "  --device SEL     device: index, 'gpu', 'cpu' or part of a name (default:\n"
            "                   $CLPE_DEVICE, else the first GPU, else the first device)\n"
            "  --batch N        sequences per call (default 1); the baselines' table has\n"
            "                   seq rows shared by the batch\n"
            "  --seq N          rows per sequence (default 32768; --quick 256)\n"
            "  --d N            model width (default 1024; --quick 128)\n"
            "  --vocab N        embedding rows for gather (default 8192; --quick 512)\n"
            "  --head-dim N     rotary head size (default 128; --quick 32): queries are\n"
            "                   [batch, seq, d / N, N] over x\n"
            "  --kv-heads N     rotary key heads (default a quarter of the query heads,\n"
            "                   at least 1; at most the query heads)\n"
            "  --dtype LIST     comma-separated f32,f16,bf16,f64 or 'all' (default all)\n"
            "  --ops LIST       comma-separated operations to run, by family (stream, fill,\n"
            "                   gather-stream, table-add, gather-table-add, table, add,\n"
            "                   add-out, gather, rope-stream, rope-table, rope, kv-copy,\n"
            "                   rope-copy, rope-kv: both variants) or label (stream-x4);\n"
            "                   default all. Ratios need both sides in the list.\n"
            "  --no-small       skip the 1/64 lines (halves the run time)\n"
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

/* Whether name is one of the comma-separated items of list. */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(list, name); p; p = strstr(p + 1, name))
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

int options_wants_op(const options *o, const char *family, const char *label)
{
    return !o->ops || listed(o->ops, family) || listed(o->ops, label);
}

/* Every item of an --ops list names a family or a label of the table. */
static int valid_ops(const char *list)
{
    char buf[256];
    if (!*list || strlen(list) >= sizeof buf)
        return 0;
    strcpy(buf, list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        size_t i = 0;
        while (i < BENCH_N_OPS && strcmp(tok, BENCH_OPS[i].family) != 0 &&
               strcmp(tok, BENCH_OPS[i].label) != 0)
            i++;
        if (i == BENCH_N_OPS)
            return 0;
    }
    return 1;
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
        *mask = (1u << BENCH_N_DTYPES) - 1;
        return 1;
    }
    char buf[128];
    if (strlen(s) >= sizeof buf)
        return 0;
    strcpy(buf, s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        size_t i = 0;
        while (i < BENCH_N_DTYPES && strcmp(tok, BENCH_DTYPES[i].name) != 0)
            i++;
        if (i == BENCH_N_DTYPES)
            return 0;
        *mask |= 1u << i;
    }
    return *mask != 0;
}

int options_parse(int argc, char **argv, options *o)
{
    int seq_set = 0, d_set = 0, head_dim_set = 0, vocab_set = 0, target_set = 0, repeats_set = 0, calls_set = 0;
    *o = (options){.batch = 1, .seq = 32768, .d = 1024, .vocab = 8192,
                   .dtype_mask = (1u << BENCH_N_DTYPES) - 1, .target_ms = 100, .repeats = 5,
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
        } else if (strcmp(a, "--no-small") == 0) {
            o->no_small = 1;
            continue;
        } else if (!v) {
            fprintf(stderr, "clpe-bench: %s needs a value (or is unknown); see --help\n", a);
            return 2;
        } else if (strcmp(a, "--device") == 0) {
            o->device = v;
        } else if (strcmp(a, "--json") == 0) {
            o->json = v;
        } else if (strcmp(a, "--ops") == 0) {
            if (!valid_ops(v)) {
                fprintf(stderr, "clpe-bench: --ops takes operation names (see --help), not '%s'\n",
                        v);
                return 2;
            }
            o->ops = v;
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
            else if (strcmp(a, "--head-dim") == 0)
                o->head_dim = n, head_dim_set = 1;
            else if (strcmp(a, "--kv-heads") == 0)
                o->kv_heads = n;
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
        if (!head_dim_set)
            o->head_dim = 32;
    }
    if (!o->head_dim)
        o->head_dim = 128;
    if (o->head_dim % 2 || o->d % o->head_dim || o->head_dim > UINT32_MAX) {
        fprintf(stderr, "clpe-bench: --head-dim must be even and divide --d (%zu), not %zu\n",
                o->d, o->head_dim);
        return 2;
    }
    o->heads = o->d / o->head_dim;
    if (!o->kv_heads)
        o->kv_heads = o->heads >= 4 ? o->heads / 4 : 1;
    if (o->kv_heads > o->heads) {
        fprintf(stderr, "clpe-bench: --kv-heads at most the query heads (%zu), not %zu\n",
                o->heads, o->kv_heads);
        return 2;
    }
    if (o->d > CLPE_MAX_D || o->vocab > INT32_MAX) {
        fprintf(stderr, "clpe-bench: --d at most %u, --vocab at most %d\n", CLPE_MAX_D, INT32_MAX);
        return 2;
    }
    /* Sizes must be countable in bytes for the widest dtype, with the batch. */
    if (o->seq > SIZE_MAX / o->batch || o->batch * o->seq > SIZE_MAX / o->d / 8 ||
        o->vocab > SIZE_MAX / o->d / 8) {
        fprintf(stderr, "clpe-bench: --batch x --seq x --d (or --vocab x --d) too large\n");
        return 2;
    }
    return 0;
}
