/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - clpe-decoder: greedy decoding of a Hugging Face Llama or XGLM
 * model directory on an OpenCL device, its position steps done by clpe.
 *
 *   clpe-decoder MODEL_DIR --prompt 1,2,3 [--steps N] [--start P]
 *                [--logits FILE.npy] [--device SEL] [--rope enqueue|device] [--stats]
 */
#include "decoder.h"
#include "common/npy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: clpe-decoder MODEL_DIR --prompt ID,ID,... [options]\n"
    "\n"
    "Runs a Hugging Face LlamaForCausalLM or XGLMForCausalLM directory (config.json and\n"
    "model.safetensors, as save_pretrained writes them) in float32 on an OpenCL device:\n"
    "prefill of the prompt, then greedy decoding with a KV cache. Prints the generated\n"
    "token ids as one line, \"tokens: ID ID ...\".\n"
    "\n"
    "  --prompt IDS      the prompt's token ids, comma-separated (no tokenizer here)\n"
    "  --steps N         tokens to generate (default 8; 0: prefill only)\n"
    "  --start P         position of the first prompt token, any int64 (default 0);\n"
    "                    the same as Hugging Face's position_ids = P, P+1, ...\n"
    "  --logits FILE     write the logits of every position (prompt and generated,\n"
    "                    but the last) as float32 .npy, [prompt + steps - 1, vocab]\n"
    "  --rope MODE       Llama's rotary: enqueue (default: clpe_enqueue_rope on q and k,\n"
    "                    then a copy into the KV cache) or device (clpe_device.h in the\n"
    "                    decoder's kernels: keys rotated into the cache in one pass,\n"
    "                    queries inside attention); the same bits either way\n"
    "  --device SEL      OpenCL device: an index, gpu, cpu, or part of a name\n"
    "                    (default: CLPE_DEVICE, else the first GPU, else the first device)\n"
    "  --stats           after a warm-up run: tokens/s for prefill and decode, the time\n"
    "                    in the position steps (OpenCL profiling), device memory\n";

typedef struct options {
    const char *model_dir;
    const char *prompt;
    long long steps;
    int64_t start;
    const char *logits_path;
    const char *device;
    rope_mode rope;
    int stats;
} options;

static int parse_int64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0')
        return -1;
    *out = (int64_t)v;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->steps = 8;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        int64_t v;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (strcmp(a, "--stats") == 0) {
            o->stats = 1;
        } else if (strcmp(a, "--prompt") == 0 && has_value) {
            o->prompt = argv[++i];
        } else if (strcmp(a, "--logits") == 0 && has_value) {
            o->logits_path = argv[++i];
        } else if (strcmp(a, "--rope") == 0 && has_value) {
            const char *mode = argv[++i];
            if (strcmp(mode, "enqueue") == 0) {
                o->rope = ROPE_ENQUEUE;
            } else if (strcmp(mode, "device") == 0) {
                o->rope = ROPE_DEVICE;
            } else {
                fprintf(stderr, "clpe-decoder: --rope takes enqueue or device, not '%s'\n", mode);
                return -1;
            }
        } else if (strcmp(a, "--device") == 0 && has_value) {
            o->device = argv[++i];
        } else if (strcmp(a, "--steps") == 0 && has_value) {
            if (parse_int64(argv[++i], &v) != 0 || v < 0 || v > (1 << 20)) {
                fprintf(stderr, "clpe-decoder: --steps takes a number in [0, 2^20], not '%s'\n",
                        argv[i]);
                return -1;
            }
            o->steps = v;
        } else if (strcmp(a, "--start") == 0 && has_value) {
            if (parse_int64(argv[++i], &o->start) != 0) {
                fprintf(stderr, "clpe-decoder: --start takes an int64, not '%s'\n", argv[i]);
                return -1;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "clpe-decoder: unknown option or missing value: %s\n%s", a, usage);
            return -1;
        } else if (!o->model_dir) {
            o->model_dir = a;
        } else {
            fprintf(stderr, "clpe-decoder: one model directory only (got '%s' too)\n", a);
            return -1;
        }
    }
    if (!o->model_dir || !o->prompt) {
        fputs(usage, stderr);
        return -1;
    }
    return 0;
}

/* "1,2,3" into ids, each in [0, vocab). */
static int parse_prompt(const char *text, size_t vocab, int32_t **ids, size_t *n)
{
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ',';
    int32_t *out = malloc(cap * sizeof *out);
    if (!out) {
        fprintf(stderr, "clpe-decoder: out of memory\n");
        return -1;
    }
    size_t count = 0;
    const char *p = text;
    for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno != 0 || v < 0 || (unsigned long long)v >= vocab ||
            (*end != ',' && *end != '\0')) {
            fprintf(stderr, "clpe-decoder: --prompt: '%s' holds something other than token ids "
                            "in [0, %zu) separated by commas\n", text, vocab);
            free(out);
            return -1;
        }
        out[count++] = (int32_t)v;
        if (*end == '\0')
            break;
        p = end + 1;
    }
    *ids = out;
    *n = count;
    return 0;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int32_t argmax(const float *row, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (row[i] > row[best])
            best = i;
    return (int32_t)best;
}

static int write_npy(const char *path, const float *data, size_t rows, size_t cols)
{
    FILE *f = fopen(path, "wb");
    if (!f || npy_write_header(f, "<f4", rows, cols) != 0 ||
        fwrite(data, sizeof *data, rows * cols, f) != rows * cols) {
        fprintf(stderr, "clpe-decoder: cannot write %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "clpe-decoder: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

typedef struct timing {
    double prefill_s, decode_s;
    size_t prefill_tokens, decode_tokens;
} timing;

/* Prefill and greedy decoding: generated[0 .. steps), logits of every row
 * into all_logits when non-NULL ([n + steps - 1, vocab]). */
static int generate(decoder *d, const int32_t *prompt, size_t n, size_t steps, float *all_logits,
                    float *scratch, int32_t *generated, timing *t, char *err, size_t cap)
{
    const size_t V = d->cfg.vocab;
    double t0 = now_seconds();
    float *prefill_out = all_logits ? all_logits : scratch;
    size_t prefill_rows = all_logits ? n : 1;
    if (decoder_forward(d, prompt, n, 0, prefill_rows, prefill_out, err, cap) != 0)
        return -1;
    double t1 = now_seconds();
    t->prefill_s = t1 - t0;
    t->prefill_tokens = n;
    if (steps == 0)
        return 0;
    int32_t token = argmax(prefill_out + (prefill_rows - 1) * V, V);
    generated[0] = token;
    for (size_t s = 1; s < steps; s++) {
        float *row = all_logits ? all_logits + (n + s - 1) * V : scratch;
        if (decoder_forward(d, &token, 1, n + s - 1, 1, row, err, cap) != 0)
            return -1;
        token = argmax(row, V);
        generated[s] = token;
    }
    t->decode_s = now_seconds() - t1;
    t->decode_tokens = steps - 1;
    return 0;
}

static void print_stats(const decoder *d, const timing *t)
{
    char name[300];
    decoder_device_name(d, name, sizeof name);
    const profile *p = &d->prof;
    const double mib = 1024.0 * 1024.0;
    printf("device: %s\n", name);
    if (d->cfg.arch == ARCH_LLAMA)
        printf("rotary: %s\n", d->rope_mode == ROPE_DEVICE
                                   ? "clpe_device.h (keys rotated into the cache; queries "
                                     "inside attention, counted there)"
                                   : "clpe_enqueue_rope on q and k, keys copied into the cache");
    printf("prefill: %zu tokens in %.3f ms, %.1f tokens/s\n", t->prefill_tokens,
           t->prefill_s * 1e3, (double)t->prefill_tokens / t->prefill_s);
    if (t->decode_tokens)
        printf("decode: %zu tokens in %.3f ms, %.1f tokens/s\n", t->decode_tokens,
               t->decode_s * 1e3, (double)t->decode_tokens / t->decode_s);
    double total_ns = p->ns[STEP_POSITION] + p->ns[STEP_MATMUL] + p->ns[STEP_OTHER];
    double wall_ns = (t->prefill_s + t->decode_s) * 1e9;
    printf("position steps: %.3f ms in %zu commands, %.2f%% of the profiled device time, "
           "%.2f%% of the wall time\n",
           p->ns[STEP_POSITION] * 1e-6, p->commands[STEP_POSITION],
           total_ns > 0 ? 100.0 * p->ns[STEP_POSITION] / total_ns : 0.0,
           100.0 * p->ns[STEP_POSITION] / wall_ns);
    printf("matrix products (CLBlast): %.3f ms in %zu commands; other kernels: %.3f ms in %zu "
           "commands\n",
           p->ns[STEP_MATMUL] * 1e-6, p->commands[STEP_MATMUL], p->ns[STEP_OTHER] * 1e-6,
           p->commands[STEP_OTHER]);
    const memory_use *m = &d->memory;
    printf("device memory allocated: %.3f MiB = weights %.3f MiB + KV cache %.3f MiB "
           "(%zu rows) + activations %.3f MiB; %.2f x weights + cache\n",
           (double)(m->weights + m->cache + m->work) / mib, (double)m->weights / mib,
           (double)m->cache / mib, d->cache_rows, (double)m->work / mib,
           (double)(m->weights + m->cache + m->work) / (double)(m->weights + m->cache));
    if (p->overflow)
        printf("note: some profiling events were lost (out of memory); step times are short\n");
}

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o) != 0)
        return 2;
    char err[4096];
    model_config cfg;
    if (model_config_read(o.model_dir, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "clpe-decoder: %s\n", err);
        return 1;
    }
    int32_t *prompt;
    size_t n;
    if (parse_prompt(o.prompt, cfg.vocab, &prompt, &n) != 0)
        return 2;
    const size_t steps = (size_t)o.steps;
    const size_t rows = n + (steps ? steps - 1 : 0);
    /* every position, plus XGLM's offset of 2, must stay in int64 */
    int64_t last;
    if (__builtin_add_overflow(o.start, (int64_t)rows - 1 + (cfg.arch == ARCH_XGLM ? 2 : 0),
                               &last)) {
        fprintf(stderr, "clpe-decoder: --start %" PRId64 " with %zu positions leaves int64\n",
                o.start, rows);
        free(prompt);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", o.model_dir);
    st_file file;
    if (st_open(&file, path, err, sizeof err) != 0) {
        fprintf(stderr, "clpe-decoder: %s\n", err);
        free(prompt);
        return 1;
    }
    decoder d;
    decoder_options dopt = {.device = o.device, .max_tokens = n, .cache_rows = rows,
                            .max_logit_rows = o.logits_path ? n : 1,
                            .start = o.start, .profile = o.stats, .rope_mode = o.rope};
    int rc = decoder_create(&d, &cfg, &file, &dopt, err, sizeof err);
    st_close(&file);
    if (rc != 0) {
        fprintf(stderr, "clpe-decoder: %s\n", err);
        free(prompt);
        return 1;
    }
    float *all_logits = o.logits_path ? malloc(rows * cfg.vocab * sizeof(float)) : NULL;
    float *scratch = malloc(cfg.vocab * sizeof(float));
    int32_t *generated = malloc((steps ? steps : 1) * sizeof(int32_t));
    timing t = {0};
    rc = 1;
    if ((o.logits_path && !all_logits) || !scratch || !generated) {
        fprintf(stderr, "clpe-decoder: out of memory\n");
        goto done;
    }
    if (o.stats) {
        /* a warm-up, so the timed run has every kernel compiled (CLBlast
         * builds its kernels at first use) */
        timing warm;
        if (generate(&d, prompt, n, steps < 2 ? steps : 2, NULL, scratch, generated, &warm, err,
                     sizeof err) != 0) {
            fprintf(stderr, "clpe-decoder: %s\n", err);
            goto done;
        }
        profile_reset(&d.prof);
    }
    if (generate(&d, prompt, n, steps, all_logits, scratch, generated, &t, err, sizeof err) != 0) {
        fprintf(stderr, "clpe-decoder: %s\n", err);
        goto done;
    }
    printf("tokens:");
    for (size_t s = 0; s < steps; s++)
        printf(" %" PRId32, generated[s]);
    printf("\n");
    if (o.logits_path && write_npy(o.logits_path, all_logits, rows, cfg.vocab) != 0)
        goto done;
    if (o.stats)
        print_stats(&d, &t);
    rc = fflush(stdout) == 0 ? 0 : 1;
done:
    decoder_release(&d);
    free(all_logits);
    free(scratch);
    free(generated);
    free(prompt);
    return rc;
}
