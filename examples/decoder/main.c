/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - clpe-decoder: greedy decoding of Hugging Face model directories
 * on an OpenCL device, one sequence or several at once through one paged KV
 * cache, their position steps done by clpe.
 *
 *   clpe-decoder MODEL_DIR --prompt 1,2,3 [--prompt 4,5 ...] [--batch FILE]
 *                [--steps N] [--start P] [--logits FILE.npy] [--device SEL]
 *                [--rope kv|two-pass|device] [--matmul invariant|clblast]
 *                [--kv-cache-dtype f32|f16|bf16|fp8_e4m3|fp8_e5m2] [--kv-scale K[,V]]
 *                [--block-size B] [--cache-blocks N] [--max-seqs S] [--stats]
 */
#include "scheduler.h"

#include "common/npy.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: clpe-decoder MODEL_DIR --prompt ID,ID,... [--prompt ...] [options]\n"
    "       clpe-decoder MODEL_DIR --batch FILE [options]\n"
    "\n"
    "Runs a Hugging Face model directory (config.json and model.safetensors, as\n"
    "save_pretrained writes them; Llama, Mistral, Qwen2, Qwen2-VL's language model, XGLM)\n"
    "in float32 on an OpenCL device: greedy decoding of one sequence or several at once,\n"
    "with continuous batching through one paged KV cache (the prefill of a sequence and\n"
    "the decode steps of others in the same forward call; a finished sequence's blocks\n"
    "go to the next). Each sequence's tokens and logits are those of running it alone,\n"
    "bit for bit. Prints the generated token ids, \"tokens: ID ID ...\" (several\n"
    "sequences: \"tokens N: ...\", N counted from 0 in the order given).\n"
    "\n"
    "  --prompt IDS      a prompt's token ids, comma-separated (no tokenizer here); repeat\n"
    "                    it for several sequences\n"
    "  --batch FILE      sequences, one a line: IDS [start=P] [steps=N] [mrope=FILE.npy]\n"
    "                    ('#' starts a comment); start and steps default to the options'\n"
    "  --steps N         tokens to generate per sequence (default 8; 0: prefill only)\n"
    "  --start P         position of each prompt's first token, any int64 (default 0);\n"
    "                    the same as Hugging Face's position_ids = P, P+1, ...\n"
    "  --mrope FILE      Qwen2-VL: int64 .npy [3, prompt tokens], the prompt's (temporal,\n"
    "                    height, width) positions; generated tokens continue from the\n"
    "                    largest plus one on all three. Without it every stream is\n"
    "                    start, start+1, ... (text only)\n"
    "  --logits FILE     write the logits of every position (prompt and generated, but\n"
    "                    the last) as float32 .npy, [prompt + steps - 1, vocab]; with\n"
    "                    several sequences FILE gets -N before its extension\n"
    "  --rope MODE       rotary into the cache: kv (default: clpe_enqueue_rope_kv, one call\n"
    "                    per layer), two-pass (clpe_enqueue_rope on q and k, then keys and\n"
    "                    values copied), device (clpe_device.h in the decoder's kernels:\n"
    "                    keys rotated into the cache, queries inside attention); the same\n"
    "                    bits every way. An FP8 cache: device writes keys and values with\n"
    "                    clpe_enqueue_rope_kv without q; two-pass is refused (its copy\n"
    "                    would need clpe's FP8 rounding, which only that call has)\n"
    "  --kv-cache-dtype T  the KV cache's elements: f32 (default), f16 or bf16 (rounded to\n"
    "                    nearest even as they are written; attention computes in float32),\n"
    "                    fp8_e4m3 or fp8_e5m2 (one byte: x / scale as clpe_enqueue_rope_kv\n"
    "                    writes it, read back with clpe_device.h's clpe_fp8_*_to_float;\n"
    "                    rotary models, --rope kv or device)\n"
    "  --kv-scale K[,V]  FP8 caches: the keys' and values' per-tensor scales, positive and\n"
    "                    finite in float32 (default 1,1; one number sets both)\n"
    "  --matmul MODE     invariant (default: the decoder's own kernel, the same bits for a\n"
    "                    token in any batch) or clblast (faster; bits depend on the batch)\n"
    "  --block-size B    cache slots per block (default 16)\n"
    "  --cache-blocks N  blocks in the cache (default: room for the --max-seqs longest\n"
    "                    sequences at once)\n"
    "  --max-seqs S      sequences running at once (default: all)\n"
    "  --device SEL      OpenCL device: an index, gpu, cpu, or part of a name\n"
    "                    (default: CLPE_DEVICE, else the first GPU, else the first device)\n"
    "  --stats           after a warm-up run: prefill and decode tokens/s, the share of\n"
    "                    device time in the position steps (OpenCL profiling), KV-cache\n"
    "                    and device memory\n";

typedef struct options {
    const char *model_dir;
    const char **prompts;
    size_t prompt_count;
    const char *batch_file;
    const char *mrope_file;
    long long steps;
    int64_t start;
    const char *logits_path;
    const char *device;
    rope_mode rope;
    matmul_mode matmul;
    clpe_dtype cache_dtype;
    const char *kv_scale; /* --kv-scale as given, NULL: none */
    float key_scale, value_scale;
    long long block_size, cache_blocks, max_seqs;
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

static int count_option(const char *name, const char *value, long long lo, long long hi,
                        long long *out)
{
    int64_t v;
    if (parse_int64(value, &v) != 0 || v < lo || v > hi) {
        fprintf(stderr, "clpe-decoder: %s takes a number in [%lld, %lld], not '%s'\n", name, lo,
                hi, value);
        return -1;
    }
    *out = v;
    return 0;
}

/* One scale of --kv-scale: a number whose float32 value is positive and
 * finite (clpe_kv_cache's key_scale and value_scale). */
static int parse_scale(const char *s, size_t len, float *out)
{
    char text[64];
    if (len == 0 || len >= sizeof text)
        return -1;
    memcpy(text, s, len);
    text[len] = '\0';
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    if (end == text || *end != '\0')
        return -1;
    const float f = (float)v;
    if (!(f > 0.0f) || isinf(f))
        return -1;
    *out = f;
    return 0;
}

/* --kv-scale K[,V] into the two scales (V defaults to K). */
static int parse_kv_scale(const char *text, float *key, float *value)
{
    const char *comma = strchr(text, ',');
    const size_t klen = comma ? (size_t)(comma - text) : strlen(text);
    if (parse_scale(text, klen, key) != 0 ||
        (comma ? parse_scale(comma + 1, strlen(comma + 1), value) : (*value = *key, 0)) != 0) {
        fprintf(stderr,
                "clpe-decoder: --kv-scale takes K or K,V, each a positive number finite in "
                "float32, not '%s'\n",
                text);
        return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->steps = 8;
    o->block_size = 16;
    o->prompts = calloc((size_t)argc, sizeof *o->prompts);
    if (!o->prompts) {
        fprintf(stderr, "clpe-decoder: out of memory\n");
        return -1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (strcmp(a, "--stats") == 0) {
            o->stats = 1;
        } else if (strcmp(a, "--prompt") == 0 && has_value) {
            o->prompts[o->prompt_count++] = argv[++i];
        } else if (strcmp(a, "--batch") == 0 && has_value) {
            o->batch_file = argv[++i];
        } else if (strcmp(a, "--mrope") == 0 && has_value) {
            o->mrope_file = argv[++i];
        } else if (strcmp(a, "--logits") == 0 && has_value) {
            o->logits_path = argv[++i];
        } else if (strcmp(a, "--rope") == 0 && has_value) {
            const char *mode = argv[++i];
            if (strcmp(mode, "kv") == 0) {
                o->rope = ROPE_KV;
            } else if (strcmp(mode, "two-pass") == 0) {
                o->rope = ROPE_TWO_PASS;
            } else if (strcmp(mode, "device") == 0) {
                o->rope = ROPE_DEVICE;
            } else {
                fprintf(stderr,
                        "clpe-decoder: --rope takes kv, two-pass or device, not '%s'\n", mode);
                return -1;
            }
        } else if (strcmp(a, "--matmul") == 0 && has_value) {
            const char *mode = argv[++i];
            if (strcmp(mode, "invariant") == 0) {
                o->matmul = MATMUL_INVARIANT;
            } else if (strcmp(mode, "clblast") == 0) {
                o->matmul = MATMUL_CLBLAST;
            } else {
                fprintf(stderr, "clpe-decoder: --matmul takes invariant or clblast, not '%s'\n",
                        mode);
                return -1;
            }
        } else if (strcmp(a, "--kv-cache-dtype") == 0 && has_value) {
            const char *t = argv[++i];
            if (strcmp(t, "f32") == 0) {
                o->cache_dtype = CLPE_DTYPE_F32;
            } else if (strcmp(t, "f16") == 0) {
                o->cache_dtype = CLPE_DTYPE_F16;
            } else if (strcmp(t, "bf16") == 0) {
                o->cache_dtype = CLPE_DTYPE_BF16;
            } else if (strcmp(t, "fp8_e4m3") == 0) {
                o->cache_dtype = CLPE_DTYPE_FP8_E4M3;
            } else if (strcmp(t, "fp8_e5m2") == 0) {
                o->cache_dtype = CLPE_DTYPE_FP8_E5M2;
            } else {
                fprintf(stderr,
                        "clpe-decoder: --kv-cache-dtype takes f32, f16, bf16, fp8_e4m3 or "
                        "fp8_e5m2, not '%s'\n",
                        t);
                return -1;
            }
        } else if (strcmp(a, "--kv-scale") == 0 && has_value) {
            o->kv_scale = argv[++i];
        } else if (strcmp(a, "--device") == 0 && has_value) {
            o->device = argv[++i];
        } else if (strcmp(a, "--steps") == 0 && has_value) {
            if (count_option("--steps", argv[++i], 0, 1 << 20, &o->steps))
                return -1;
        } else if (strcmp(a, "--block-size") == 0 && has_value) {
            if (count_option("--block-size", argv[++i], 1, 1 << 16, &o->block_size))
                return -1;
        } else if (strcmp(a, "--cache-blocks") == 0 && has_value) {
            if (count_option("--cache-blocks", argv[++i], 1, 1 << 24, &o->cache_blocks))
                return -1;
        } else if (strcmp(a, "--max-seqs") == 0 && has_value) {
            if (count_option("--max-seqs", argv[++i], 1, 1 << 16, &o->max_seqs))
                return -1;
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
    if (!o->model_dir || (!o->prompt_count && !o->batch_file)) {
        fputs(usage, stderr);
        return -1;
    }
    const int fp8 =
        o->cache_dtype == CLPE_DTYPE_FP8_E4M3 || o->cache_dtype == CLPE_DTYPE_FP8_E5M2;
    if (o->kv_scale && !fp8) {
        fprintf(stderr, "clpe-decoder: --kv-scale is for FP8 caches (--kv-cache-dtype fp8_e4m3 "
                        "or fp8_e5m2); other caches store the values unscaled\n");
        return -1;
    }
    o->key_scale = o->value_scale = fp8 ? 1.0f : 0.0f;
    if (o->kv_scale && parse_kv_scale(o->kv_scale, &o->key_scale, &o->value_scale) != 0)
        return -1;
    if (fp8 && o->rope == ROPE_TWO_PASS) {
        fprintf(stderr,
                "clpe-decoder: --rope two-pass copies keys and values into the cache with the "
                "decoder's own kernel, and an FP8 cache's rounding is clpe_enqueue_rope_kv's "
                "alone (clpe has no other FP8 store): use --rope kv or device with %s\n",
                o->cache_dtype == CLPE_DTYPE_FP8_E4M3 ? "fp8_e4m3" : "fp8_e5m2");
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

/* An int64 .npy [3, n] (Qwen2-VL's position_ids of one sequence). */
static int read_mrope(const char *path, size_t n, int64_t **out)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "clpe-decoder: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    unsigned char head[4096];
    size_t got = fread(head, 1, sizeof head, f);
    npy_info h;
    int rc = -1;
    int64_t *data = NULL;
    if (npy_parse_header(head, got, &h) != 0) {
        fprintf(stderr, "clpe-decoder: %s: not a .npy file\n", path);
    } else if (strcmp(h.descr, "<i8") != 0 || h.fortran_order || h.ndim != 2 ||
               h.shape[0] != 3 || h.shape[1] != n) {
        fprintf(stderr, "clpe-decoder: %s: positions must be int64 [3, %zu] in C order\n", path,
                n);
    } else if (!(data = malloc(3 * n * sizeof *data)) ||
               fseek(f, (long)h.data_offset, SEEK_SET) != 0 ||
               fread(data, sizeof *data, 3 * n, f) != 3 * n) {
        fprintf(stderr, "clpe-decoder: %s: %s\n", path, data ? "short file" : "out of memory");
    } else {
        rc = 0;
    }
    fclose(f);
    if (rc)
        free(data);
    else
        *out = data;
    return rc;
}

/* One line of --batch: IDS [start=P] [steps=N] [mrope=FILE]. */
static int parse_batch_line(char *line, const char *where, const options *o, size_t vocab,
                            sequence *s)
{
    char *save = NULL;
    char *ids = strtok_r(line, " \t", &save);
    if (parse_prompt(ids, vocab, &s->prompt, &s->n) != 0)
        return -1;
    s->start = o->start;
    s->steps = (size_t)o->steps;
    for (char *w; (w = strtok_r(NULL, " \t", &save));) {
        long long v;
        if (strncmp(w, "start=", 6) == 0) {
            if (parse_int64(w + 6, &s->start) != 0) {
                fprintf(stderr, "clpe-decoder: %s: start takes an int64, not '%s'\n", where,
                        w + 6);
                return -1;
            }
        } else if (strncmp(w, "steps=", 6) == 0) {
            if (count_option("steps", w + 6, 0, 1 << 20, &v) != 0)
                return -1;
            s->steps = (size_t)v;
        } else if (strncmp(w, "mrope=", 6) == 0) {
            if (read_mrope(w + 6, s->n, &s->mrope) != 0)
                return -1;
        } else {
            fprintf(stderr, "clpe-decoder: %s: '%s' is not start=, steps= or mrope=\n", where,
                    w);
            return -1;
        }
    }
    return 0;
}

/* The sequences of --prompt and --batch, in that order. */
static int read_sequences(const options *o, size_t vocab, sequence **out, size_t *count)
{
    size_t cap = o->prompt_count + 16, n = 0;
    sequence *seqs = calloc(cap, sizeof *seqs);
    if (!seqs)
        goto oom;
    for (size_t i = 0; i < o->prompt_count; i++) {
        sequence *s = &seqs[n++];
        if (parse_prompt(o->prompts[i], vocab, &s->prompt, &s->n) != 0)
            goto fail;
        s->start = o->start;
        s->steps = (size_t)o->steps;
        if (o->mrope_file && read_mrope(o->mrope_file, s->n, &s->mrope) != 0)
            goto fail;
    }
    if (o->batch_file) {
        FILE *f = fopen(o->batch_file, "r");
        if (!f) {
            fprintf(stderr, "clpe-decoder: cannot open %s: %s\n", o->batch_file,
                    strerror(errno));
            goto fail;
        }
        char *line = NULL;
        size_t line_cap = 0;
        int bad = 0;
        for (size_t number = 1; !bad && getline(&line, &line_cap, f) >= 0; number++) {
            char *hash = strchr(line, '#');
            if (hash)
                *hash = '\0';
            line[strcspn(line, "\r\n")] = '\0';
            if (strspn(line, " \t") == strlen(line))
                continue;
            if (n == cap) {
                sequence *bigger = realloc(seqs, 2 * cap * sizeof *seqs);
                if (!bigger) {
                    bad = 1;
                    fprintf(stderr, "clpe-decoder: out of memory\n");
                    break;
                }
                memset(bigger + cap, 0, cap * sizeof *seqs);
                seqs = bigger;
                cap *= 2;
            }
            char where[4200];
            snprintf(where, sizeof where, "%s:%zu", o->batch_file, number);
            bad = parse_batch_line(line + strspn(line, " \t"), where, o, vocab, &seqs[n++]);
        }
        free(line);
        fclose(f);
        if (bad)
            goto fail;
    }
    if (n == 0) {
        fprintf(stderr, "clpe-decoder: no sequence to run\n");
        goto fail;
    }
    *out = seqs;
    *count = n;
    return 0;
oom:
    fprintf(stderr, "clpe-decoder: out of memory\n");
fail:
    sequences_free(seqs, n);
    return -1;
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

/* FILE, or with several sequences FILE with -i before its extension. */
static void logits_name(const char *path, size_t i, size_t count, char *out, size_t cap)
{
    if (count == 1) {
        snprintf(out, cap, "%s", path);
        return;
    }
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash))
        dot = path + strlen(path);
    snprintf(out, cap, "%.*s-%zu%s", (int)(dot - path), path, i, dot);
}

static void print_stats(const decoder *d, const schedule_stats *t, size_t seqs)
{
    char name[300];
    decoder_device_name(d, name, sizeof name);
    const profile *p = &d->prof;
    const double mib = 1024.0 * 1024.0;
    printf("device: %s\n", name);
    printf("rotary: %s\n", position_rope_description(d));
    printf("matrix products: %s\n", d->matmul == MATMUL_CLBLAST
                                        ? "CLBlast"
                                        : "the decoder's batch-invariant kernel");
    printf("sequences: %zu; forward calls: %zu (%zu mixing prefill and decode), the largest "
           "with %zu sequences and %zu tokens\n",
           seqs, t->forwards, t->mixed_forwards, t->most_seqs, t->most_tokens);
    printf("prefill: %zu tokens in %.3f ms of forward calls with prefill, %.1f tokens/s\n",
           t->prefill_tokens, t->prefill_s * 1e3,
           t->prefill_s > 0 ? (double)t->prefill_tokens / t->prefill_s : 0.0);
    if (t->decode_tokens)
        printf("decode: %zu tokens (%zu in decode-only calls, %.3f ms, %.1f tokens/s)\n",
               t->decode_tokens, t->decode_only_tokens, t->decode_s * 1e3,
               t->decode_s > 0 ? (double)t->decode_only_tokens / t->decode_s : 0.0);
    printf("all: %zu tokens in %.3f ms, %.1f tokens/s\n", t->prefill_tokens + t->decode_tokens,
           (t->prefill_s + t->decode_s) * 1e3,
           (double)(t->prefill_tokens + t->decode_tokens) / (t->prefill_s + t->decode_s));
    double total_ns = p->ns[STEP_POSITION] + p->ns[STEP_MATMUL] + p->ns[STEP_OTHER];
    double wall_ns = (t->prefill_s + t->decode_s) * 1e9;
    size_t rotary_calls = t->forwards * d->cfg.layers;
    printf("position steps: %.3f ms in %zu commands (%zu forward calls x (1 gather + %zu layers "
           "x %zu)), %.2f%% of the profiled device time, %.2f%% of the wall time\n",
           p->ns[STEP_POSITION] * 1e-6, p->commands[STEP_POSITION], t->forwards, d->cfg.layers,
           rotary_calls ? (p->commands[STEP_POSITION] - t->forwards) / rotary_calls : 0,
           total_ns > 0 ? 100.0 * p->ns[STEP_POSITION] / total_ns : 0.0,
           100.0 * p->ns[STEP_POSITION] / wall_ns);
    printf("matrix products: %.3f ms in %zu commands; other kernels: %.3f ms in %zu "
           "commands\n",
           p->ns[STEP_MATMUL] * 1e-6, p->commands[STEP_MATMUL], p->ns[STEP_OTHER] * 1e-6,
           p->commands[STEP_OTHER]);
    const memory_use *m = &d->memory;
    printf("KV cache: blocks of %zu slots: %zu, %s, %.3f MiB; the most in use at once: %zu; "
           "handed out again after a sequence finished: %zu\n",
           d->block_size, d->num_blocks,
           d->cache_dtype == CLPE_DTYPE_F16         ? "float16"
           : d->cache_dtype == CLPE_DTYPE_BF16      ? "bfloat16"
           : d->cache_dtype == CLPE_DTYPE_FP8_E4M3 ? "fp8_e4m3"
           : d->cache_dtype == CLPE_DTYPE_FP8_E5M2 ? "fp8_e5m2"
                                                    : "float32",
           (double)m->cache / mib, t->most_blocks,
           t->blocks_reused);
    printf("device memory allocated: %.3f MiB = weights %.3f MiB + KV cache %.3f MiB + "
           "activations %.3f MiB\n",
           (double)(m->weights + m->cache + m->work) / mib, (double)m->weights / mib,
           (double)m->cache / mib, (double)m->work / mib);
    if (p->overflow)
        printf("note: some profiling events were lost (out of memory); step times are short\n");
}

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o) != 0) {
        free(o.prompts);
        return 2;
    }
    char err[4096];
    model_config cfg;
    if (model_config_read(o.model_dir, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "clpe-decoder: %s\n", err);
        free(o.prompts);
        return 1;
    }
    sequence *seqs = NULL;
    size_t count = 0;
    int rc = 2;
    decoder d;
    memset(&d, 0, sizeof d);
    if (read_sequences(&o, cfg.vocab, &seqs, &count) != 0)
        goto out;
    schedule_options so = {.block_size = (size_t)o.block_size,
                           .cache_blocks = (size_t)o.cache_blocks,
                           .max_seqs = (size_t)o.max_seqs,
                           .keep_logits = o.logits_path != NULL};
    decoder_options dopt;
    if (schedule_plan(&cfg, seqs, count, &so, &dopt, err, sizeof err) != 0) {
        fprintf(stderr, "clpe-decoder: %s\n", err);
        goto out;
    }
    dopt.device = o.device;
    dopt.profile = o.stats;
    dopt.rope_mode = o.rope;
    dopt.matmul = o.matmul;
    dopt.cache_dtype = o.cache_dtype;
    dopt.key_scale = o.key_scale;
    dopt.value_scale = o.value_scale;
    rc = 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", o.model_dir);
    st_file file;
    if (st_open(&file, path, err, sizeof err) != 0) {
        fprintf(stderr, "clpe-decoder: %s\n", err);
        goto out;
    }
    int created = decoder_create(&d, &cfg, &file, &dopt, err, sizeof err);
    st_close(&file);
    if (created != 0) {
        fprintf(stderr, "clpe-decoder: %s\n", err);
        goto out;
    }
    schedule_stats t;
    if (o.stats) {
        /* a warm-up, so the timed run has every kernel compiled */
        schedule_options warm = so;
        warm.keep_logits = 0;
        warm.steps_cap = 2;
        if (schedule_run(&d, seqs, count, &warm, &t, err, sizeof err) != 0) {
            fprintf(stderr, "clpe-decoder: %s\n", err);
            goto out;
        }
        profile_reset(&d.prof);
    }
    if (schedule_run(&d, seqs, count, &so, &t, err, sizeof err) != 0) {
        fprintf(stderr, "clpe-decoder: %s\n", err);
        goto out;
    }
    for (size_t i = 0; i < count; i++) {
        if (count == 1)
            printf("tokens:");
        else
            printf("tokens %zu:", i);
        for (size_t s = 0; s < seqs[i].steps; s++)
            printf(" %" PRId32, seqs[i].generated[s]);
        printf("\n");
    }
    for (size_t i = 0; o.logits_path && i < count; i++) {
        char name[4200];
        logits_name(o.logits_path, i, count, name, sizeof name);
        if (write_npy(name, seqs[i].logits, sequence_rows(&seqs[i]), cfg.vocab) != 0)
            goto out;
    }
    if (o.stats)
        print_stats(&d, &t, count);
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    decoder_release(&d);
    sequences_free(seqs, count);
    model_config_free(&cfg);
    free(o.prompts);
    return rc;
}
