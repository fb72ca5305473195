/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decoder.c - weights, buffers and the forward pass of the decoder.
 *
 * One layer, for a batch of n tokens (x is the residual stream, [n, hidden]):
 *
 *   h = norm1(x)                         rms_norm (Llama) / layer_norm (XGLM)
 *   q, k, v = h Wq^T, h Wk^T, h Wv^T     linear (+ bias)
 *   rotate q, k; k, v -> their slots     position_rope_into_cache (clpe; with
 *                                        ROPE_DEVICE the keys here, the queries
 *                                        inside attention; XGLM: no rotary)
 *   attn = attention(q, paged cache)     attention
 *   x += attn Wo^T                       linear, add_into
 *   h = norm2(x)
 *   Llama: x += (act(h Wg^T) * h Wu^T) Wd^T
 *   XGLM:  x += act(h W1^T) W2^T
 *
 * then logits = final_norm(x) Wlm^T for the rows asked for. The input
 * stage, x = gather(ids) (+ the position encoding), is clpe's
 * (position_input_stage). The matrix products are the decoder's own
 * batch-invariant kernel (linear), or CLBlast's with MATMUL_CLBLAST.
 */
#include "decoder.h"

#include "position_steps.h"

#include "common/kernel_run.h"

#include <clblast_c.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char decoder_kernel_source[];

#define NORM_GROUP 64
/* Calls of at most this many rows take linear_rows, more the tiled linear
 * (the same bits either way) */
#define LINEAR_ROWS_MAX 4

static int cl_fail(char *err, size_t cap, const char *what, cl_int e)
{
    snprintf(err, cap, "%s failed: OpenCL error %d (%s)", what, (int)e, clpe_status_string(e));
    return -1;
}

/* ---- buffers ---------------------------------------------------------------- */

/* A buffer of bytes (a multiple of 4) holding init, or zeros: BLAS calls
 * with beta = 0 still read their output (0 * NaN is NaN), so no buffer may
 * start with whatever the allocation held. */
static cl_mem new_buffer(decoder *d, size_t *account, size_t bytes, const void *init, cl_int *e)
{
    const size_t size = bytes ? bytes : 4;
    cl_mem_flags flags = CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0);
    cl_mem m = clCreateBuffer(d->context, flags, size, (void *)init, e);
    if (m && !init) {
        const cl_uint zero = 0;
        *e = clEnqueueFillBuffer(d->queue, m, &zero, sizeof zero, 0, size, 0, NULL, NULL);
        if (*e != CL_SUCCESS) {
            clReleaseMemObject(m);
            m = NULL;
        }
    }
    if (m)
        *account += bytes;
    return m;
}

/* Upload the tensor called name, checking its shape against rows x cols
 * (cols 0: a vector of rows). A missing tensor is an error unless optional. */
static int upload(decoder *d, const st_file *f, const char *name, size_t rows, size_t cols,
                  int optional, cl_mem *out, char *err, size_t cap)
{
    *out = NULL;
    const st_tensor *t = st_find(f, name);
    if (!t) {
        if (optional)
            return 0;
        snprintf(err, cap, "model.safetensors: tensor '%s' is missing", name);
        return -1;
    }
    int ok = cols ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols
                  : t->ndim == 1 && t->shape[0] == rows;
    if (!ok) {
        char have[64] = "", want[64];
        for (int j = 0; j < t->ndim; j++)
            snprintf(have + strlen(have), sizeof have - strlen(have), "%s%llu", j ? ", " : "",
                     (unsigned long long)t->shape[j]);
        if (cols)
            snprintf(want, sizeof want, "%zu, %zu", rows, cols);
        else
            snprintf(want, sizeof want, "%zu", rows);
        snprintf(err, cap, "model.safetensors: tensor '%s' has shape [%s], expected [%s]", name,
                 have, want);
        return -1;
    }
    float *host = malloc(t->elements * sizeof *host);
    if (!host) {
        snprintf(err, cap, "out of memory reading '%s'", name);
        return -1;
    }
    st_to_f32(t, host);
    for (uint64_t i = 0; i < t->elements; i++)
        if (!isfinite(host[i])) {
            snprintf(err, cap,
                     "model.safetensors: tensor '%s' holds %s at element %llu (as float32)",
                     name, isnan(host[i]) ? "NaN" : "infinity", (unsigned long long)i);
            free(host);
            return -1;
        }
    cl_int e;
    *out = new_buffer(d, &d->memory.weights, t->elements * sizeof(float), host, &e);
    free(host);
    return *out ? 0 : cl_fail(err, cap, "clCreateBuffer (weights)", e);
}

static int upload_layer(decoder *d, const st_file *f, size_t i, char *err, size_t cap)
{
    const model_config *m = &d->cfg;
    layer_buffers *L = &d->layers[i];
    const size_t H = m->hidden, Q = m->heads * m->head_dim, KV = m->kv_heads * m->head_dim;
    char name[256];
#define W(field, suffix, rows, cols, optional)                                                  \
    (snprintf(name, sizeof name, "model.layers.%zu.%s", i, suffix),                            \
     upload(d, f, name, rows, cols, optional, &L->field, err, cap))
    int rc;
    if (m->arch == ARCH_LLAMA) {
        /* a bias is read when the config has it, and then required;
         * otherwise a bias tensor in the file is ignored, as Hugging Face
         * ignores it (its Linear has no bias to load it into) */
#define B(field, suffix, rows, on) ((on) ? W(field, suffix, rows, 0, 0) : 0)
        rc = W(norm1_w, "input_layernorm.weight", H, 0, 0) ||
             W(q_w, "self_attn.q_proj.weight", Q, H, 0) ||
             B(q_b, "self_attn.q_proj.bias", Q, m->qkv_bias) ||
             W(k_w, "self_attn.k_proj.weight", KV, H, 0) ||
             B(k_b, "self_attn.k_proj.bias", KV, m->qkv_bias) ||
             W(v_w, "self_attn.v_proj.weight", KV, H, 0) ||
             B(v_b, "self_attn.v_proj.bias", KV, m->qkv_bias) ||
             W(o_w, "self_attn.o_proj.weight", H, Q, 0) ||
             B(o_b, "self_attn.o_proj.bias", H, m->o_bias) ||
             W(norm2_w, "post_attention_layernorm.weight", H, 0, 0) ||
             W(gate_w, "mlp.gate_proj.weight", m->ffn, H, 0) ||
             B(gate_b, "mlp.gate_proj.bias", m->ffn, m->mlp_bias) ||
             W(up_w, "mlp.up_proj.weight", m->ffn, H, 0) ||
             B(up_b, "mlp.up_proj.bias", m->ffn, m->mlp_bias) ||
             W(down_w, "mlp.down_proj.weight", H, m->ffn, 0) ||
             B(down_b, "mlp.down_proj.bias", H, m->mlp_bias);
#undef B
    } else {
        rc = W(norm1_w, "self_attn_layer_norm.weight", H, 0, 0) ||
             W(norm1_b, "self_attn_layer_norm.bias", H, 0, 0) ||
             W(q_w, "self_attn.q_proj.weight", Q, H, 0) ||
             W(q_b, "self_attn.q_proj.bias", Q, 0, 0) ||
             W(k_w, "self_attn.k_proj.weight", KV, H, 0) ||
             W(k_b, "self_attn.k_proj.bias", KV, 0, 0) ||
             W(v_w, "self_attn.v_proj.weight", KV, H, 0) ||
             W(v_b, "self_attn.v_proj.bias", KV, 0, 0) ||
             W(o_w, "self_attn.out_proj.weight", H, Q, 0) ||
             W(o_b, "self_attn.out_proj.bias", H, 0, 0) ||
             W(norm2_w, "final_layer_norm.weight", H, 0, 0) ||
             W(norm2_b, "final_layer_norm.bias", H, 0, 0) ||
             W(up_w, "fc1.weight", m->ffn, H, 0) ||
             W(up_b, "fc1.bias", m->ffn, 0, 0) ||
             W(down_w, "fc2.weight", H, m->ffn, 0) ||
             W(down_b, "fc2.bias", H, 0, 0);
    }
#undef W
    if (rc)
        return -1;
    cl_int e;
    const size_t element = d->cache_dtype == CLPE_DTYPE_F32 ? sizeof(float)
                           : decoder_cache_fp8(d)            ? 1
                                                             : 2;
    const size_t cache_bytes = d->num_blocks * d->block_size * KV * element;
    L->k_cache = new_buffer(d, &d->memory.cache, cache_bytes, NULL, &e);
    if (!L->k_cache)
        return cl_fail(err, cap, "clCreateBuffer (key cache)", e);
    L->v_cache = new_buffer(d, &d->memory.cache, cache_bytes, NULL, &e);
    return L->v_cache ? 0 : cl_fail(err, cap, "clCreateBuffer (value cache)", e);
}

static int upload_weights(decoder *d, const st_file *f, char *err, size_t cap)
{
    const model_config *m = &d->cfg;
    if (m->tie_word_embeddings) {
        /* Tied: one matrix is both the input embedding and lm_head, as in
         * Hugging Face, whose tied parameter is loaded from both names of
         * the file, lm_head.weight last: that one, when the file holds it
         * (save_pretrained keeps the tensor under either name). */
        if (upload(d, f, "lm_head.weight", m->vocab, m->hidden, 1, &d->embed, err, cap) ||
            (!d->embed && upload(d, f, "model.embed_tokens.weight", m->vocab, m->hidden, 1,
                                 &d->embed, err, cap)))
            return -1;
        if (!d->embed) {
            snprintf(err, cap, "model.safetensors: neither model.embed_tokens.weight nor "
                               "lm_head.weight (tie_word_embeddings is true)");
            return -1;
        }
        d->lm_head = d->embed;
        clRetainMemObject(d->lm_head);
    } else {
        if (upload(d, f, "model.embed_tokens.weight", m->vocab, m->hidden, 1, &d->embed, err,
                   cap))
            return -1;
        if (!d->embed) {
            snprintf(err, cap, "model.safetensors: tensor 'model.embed_tokens.weight' is "
                               "missing");
            return -1;
        }
        if (upload(d, f, "lm_head.weight", m->vocab, m->hidden, 1, &d->lm_head, err, cap))
            return -1;
        if (!d->lm_head) {
            snprintf(err, cap, "model.safetensors: tensor 'lm_head.weight' is missing and "
                               "tie_word_embeddings is false");
            return -1;
        }
    }
    const char *norm = m->arch == ARCH_LLAMA ? "model.norm.weight" : "model.layer_norm.weight";
    if (upload(d, f, norm, m->hidden, 0, 0, &d->final_w, err, cap) ||
        (m->arch == ARCH_XGLM &&
         upload(d, f, "model.layer_norm.bias", m->hidden, 0, 0, &d->final_b, err, cap)))
        return -1;
    d->layers = calloc(m->layers, sizeof *d->layers);
    if (!d->layers) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < m->layers; i++)
        if (upload_layer(d, f, i, err, cap) != 0)
            return -1;
    return 0;
}

static int work_buffers(decoder *d, char *err, size_t cap)
{
    const model_config *m = &d->cfg;
    const size_t T = d->max_tokens, F = sizeof(float);
    struct {
        cl_mem *mem;
        size_t bytes;
    } list[] = {
        {&d->x, T * m->hidden * F},
        {&d->h, T * m->hidden * F},
        {&d->q, T * m->heads * m->head_dim * F},
        {&d->k, T * m->kv_heads * m->head_dim * F},
        {&d->v, T * m->kv_heads * m->head_dim * F},
        {&d->attn, T * m->heads * m->head_dim * F},
        {&d->o, T * m->hidden * F},
        {&d->f1, T * m->ffn * F},
        {&d->f2, T * m->ffn * F},
        {&d->logits, d->max_logit_rows * m->vocab * F},
        {&d->ids, T * sizeof(int32_t)},
        {&d->gather_positions, T * sizeof(int64_t)},
        {&d->bad_ids, 2 * sizeof(uint32_t)},
        {&d->positions, T * d->streams * sizeof(int64_t)},
        {&d->slots, T * sizeof(int64_t)},
        {&d->token_meta, T * 2 * sizeof(uint32_t)},
        {&d->tables, d->max_table_entries * sizeof(uint32_t)},
        {&d->logit_index, d->max_logit_rows * sizeof(uint32_t)},
    };
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) {
        cl_int e;
        *list[i].mem = new_buffer(d, &d->memory.work, list[i].bytes, NULL, &e);
        if (!*list[i].mem)
            return cl_fail(err, cap, "clCreateBuffer (activations)", e);
    }
    return 0;
}

/* ---- kernels ---------------------------------------------------------------- */

static int build_kernels(decoder *d, char *err, size_t cap)
{
    /* With ROPE_DEVICE or an FP8 cache, clpe's device functions come first
     * (clpe_device.h): the rotation of a pair, the reads of an FP8 byte. */
    const int device_rope = d->rope_words != NULL, fp8 = decoder_cache_fp8(d);
    const int with_header = device_rope || fp8;
    const char *sources[2] = {clpe_device_source(), decoder_kernel_source};
    cl_int e;
    d->program = clCreateProgramWithSource(d->context, with_header ? 2 : 1,
                                           sources + (with_header ? 0 : 1), NULL, &e);
    if (!d->program)
        return cl_fail(err, cap, "clCreateProgramWithSource", e);
    const int cache_code = d->cache_dtype == CLPE_DTYPE_F16        ? 1
                           : d->cache_dtype == CLPE_DTYPE_BF16     ? 2
                           : d->cache_dtype == CLPE_DTYPE_FP8_E4M3 ? 3
                           : d->cache_dtype == CLPE_DTYPE_FP8_E5M2 ? 4
                                                                   : 0;
    /* the scales as hexadecimal float literals: their exact float32 values */
    char options[1024];
    snprintf(options, sizeof options,
             "-D HEAD_DIM=%zu -D NORM_GROUP=%d -D CACHE_DTYPE=%d -D KEY_SCALE=%af "
             "-D VALUE_SCALE=%af%s %s",
             d->cfg.head_dim, NORM_GROUP, cache_code, (double)d->key_scale,
             (double)d->value_scale, device_rope ? " -D ROPE_ON_DEVICE=1" : "",
             device_rope ? d->rope_words_options : "");
    e = clBuildProgram(d->program, 1, &d->device, options, NULL, NULL);
    if (e != CL_SUCCESS) {
        size_t len = 0;
        clGetProgramBuildInfo(d->program, d->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
        char *log = malloc(len + 1);
        if (log && clGetProgramBuildInfo(d->program, d->device, CL_PROGRAM_BUILD_LOG, len, log,
                                         NULL) == CL_SUCCESS) {
            log[len] = '\0';
            snprintf(err, cap, "building the decoder kernels failed:\n%s", log);
        } else {
            cl_fail(err, cap, "clBuildProgram", e);
        }
        free(log);
        return -1;
    }
    struct {
        cl_kernel *kernel;
        const char *name;
    } list[] = {
        {&d->rms_norm, "rms_norm"},     {&d->layer_norm, "layer_norm"},
        {&d->add_bias, "add_bias"},     {&d->add_into, "add_into"},
        {&d->activation, "activation"}, {&d->gated_activation, "gated_activation"},
        {&d->attention, "attention"},   {&d->linear, "linear"},
        {&d->linear_rows, "linear_rows"},
        {&d->gather_rows, "gather_rows"}, {&d->scatter_rows, "scatter_rows"},
    };
    /* an FP8 cache is written by clpe alone: no scatter_rows then (the last) */
    const size_t kernels = sizeof list / sizeof list[0] - (fp8 ? 1 : 0);
    for (size_t i = 0; i < kernels; i++) {
        *list[i].kernel = clCreateKernel(d->program, list[i].name, &e);
        if (!*list[i].kernel)
            return cl_fail(err, cap, list[i].name, e);
    }
    if (device_rope) {
        d->attention_rotating_q = clCreateKernel(d->program, "attention_rotating_q", &e);
        if (!d->attention_rotating_q)
            return cl_fail(err, cap, "attention_rotating_q", e);
    }
    if (device_rope && !fp8) {
        d->rope_keys_into_cache = clCreateKernel(d->program, "rope_keys_into_cache", &e);
        if (!d->rope_keys_into_cache)
            return cl_fail(err, cap, "rope_keys_into_cache", e);
    }
    return 0;
}

/* ---- create / release ------------------------------------------------------- */

int decoder_create(decoder *d, const model_config *cfg, const st_file *f,
                   const decoder_options *opt, char *err, size_t cap)
{
    memset(d, 0, sizeof *d);
    d->cfg = *cfg;
    d->max_tokens = opt->max_tokens;
    d->max_logit_rows = opt->max_logit_rows;
    d->max_table_entries = opt->max_table_entries;
    d->num_blocks = opt->num_blocks;
    d->block_size = opt->block_size;
    d->cache_dtype = opt->cache_dtype;
    d->key_scale = opt->key_scale;
    d->value_scale = opt->value_scale;
    d->streams = cfg->mrope_streams ? cfg->mrope_streams : 1;
    d->matmul = opt->matmul;
    d->prof.enabled = opt->profile;
    d->rope_mode = cfg->arch == ARCH_LLAMA ? opt->rope_mode : ROPE_KV;
    if (d->max_tokens == 0 || d->max_tokens > UINT32_MAX || d->num_blocks == 0 ||
        d->block_size == 0 || d->num_blocks > UINT32_MAX / d->block_size ||
        d->max_table_entries == 0 || d->max_logit_rows == 0 ||
        d->max_logit_rows > d->max_tokens) {
        snprintf(err, cap, "nothing to run (no tokens, or a cache over 2^32 slots)");
        return -1;
    }
    if (decoder_cache_fp8(d)) {
        /* clpe_enqueue_rope_kv is the one FP8 store: rotary models only, and
         * not two-pass, whose copy is the decoder's own kernel */
        if (cfg->arch != ARCH_LLAMA || d->rope_mode == ROPE_TWO_PASS) {
            snprintf(err, cap, "an FP8 KV cache is written by clpe_enqueue_rope_kv, clpe's only "
                               "FP8 store: %s",
                     cfg->arch != ARCH_LLAMA
                         ? "this model has no rotary (its keys and values would be copied "
                           "by the decoder's own kernel); use f32, f16 or bf16"
                         : "--rope two-pass copies with the decoder's own kernel; use --rope "
                           "kv or device");
            return -1;
        }
        if (!(d->key_scale > 0.0f) || isinf(d->key_scale) || !(d->value_scale > 0.0f) ||
            isinf(d->value_scale)) {
            snprintf(err, cap, "an FP8 cache's scales must be positive and finite, got %g, %g",
                     (double)d->key_scale, (double)d->value_scale);
            return -1;
        }
    }
    cl_platform_id platform;
    clpe_status s = clpe_select_device(opt->device, &platform, &d->device);
    if (s != CLPE_SUCCESS) {
        snprintf(err, cap, "no OpenCL device%s%s: %s", opt->device ? " matches " : "",
                 opt->device ? opt->device : "", clpe_status_string(s));
        return -1;
    }
    cl_int e;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    d->context = clCreateContext(props, 1, &d->device, NULL, NULL, &e);
    if (!d->context)
        return cl_fail(err, cap, "clCreateContext", e);
    d->queue = clCreateCommandQueue(d->context, d->device,
                                    opt->profile ? CL_QUEUE_PROFILING_ENABLE : 0, &e);
    if (!d->queue) {
        cl_fail(err, cap, "clCreateCommandQueue", e);
        goto fail;
    }
    if (work_buffers(d, err, cap) != 0 || position_steps_create(d, err, cap) != 0 ||
        build_kernels(d, err, cap) != 0 || upload_weights(d, f, err, cap) != 0)
        goto fail;
    return 0;
fail:
    decoder_release(d);
    return -1;
}

static void release_mem(cl_mem *m)
{
    if (*m)
        clReleaseMemObject(*m);
    *m = NULL;
}

void decoder_release(decoder *d)
{
    if (d->queue)
        clFinish(d->queue);
    profile_release(&d->prof);
    position_steps_release(d);
    if (d->layers) {
        for (size_t i = 0; i < d->cfg.layers; i++) {
            layer_buffers *L = &d->layers[i];
            cl_mem *all[] = {&L->norm1_w, &L->norm1_b, &L->q_w,     &L->q_b,    &L->k_w,
                             &L->k_b,     &L->v_w,     &L->v_b,     &L->o_w,    &L->o_b,
                             &L->norm2_w, &L->norm2_b, &L->gate_w,  &L->gate_b, &L->up_w,
                             &L->up_b,    &L->down_w,  &L->down_b,  &L->k_cache, &L->v_cache};
            for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
                release_mem(all[j]);
        }
        free(d->layers);
    }
    cl_mem *all[] = {&d->embed,      &d->final_w,    &d->final_b, &d->lm_head, &d->x,
                     &d->h,          &d->q,          &d->k,       &d->v,       &d->attn,
                     &d->o,          &d->f1,         &d->f2,      &d->logits,  &d->ids,
                     &d->gather_positions, &d->bad_ids, &d->positions, &d->slots,
                     &d->token_meta, &d->tables,     &d->logit_index};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        release_mem(all[j]);
    cl_kernel kernels[] = {d->rms_norm,         d->layer_norm,
                           d->add_bias,         d->add_into,
                           d->activation,       d->gated_activation,
                           d->attention,        d->attention_rotating_q,
                           d->rope_keys_into_cache, d->linear,
                           d->linear_rows,
                           d->gather_rows,      d->scatter_rows};
    for (size_t j = 0; j < sizeof kernels / sizeof kernels[0]; j++)
        if (kernels[j])
            clReleaseKernel(kernels[j]);
    if (d->program)
        clReleaseProgram(d->program);
    if (d->queue)
        clReleaseCommandQueue(d->queue);
    if (d->context)
        clReleaseContext(d->context);
    memset(d, 0, sizeof *d);
}

void decoder_device_name(const decoder *d, char *out, size_t cap)
{
    char platform_name[128] = "", device_name[128] = "";
    cl_platform_id platform;
    if (clGetDeviceInfo(d->device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL) ==
        CL_SUCCESS)
        clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof platform_name, platform_name, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_NAME, sizeof device_name, device_name, NULL);
    platform_name[sizeof platform_name - 1] = device_name[sizeof device_name - 1] = '\0';
    snprintf(out, cap, "%s / %s", platform_name, device_name);
}

/* ---- forward pass ----------------------------------------------------------- */

/* y[rows, out] = x[rows, in] W^T (W is [out, in], a Hugging Face Linear),
 * at element offsets; then + bias when there is one. */
static int linear(decoder *d, cl_mem x, size_t x_off, cl_mem w, cl_mem bias, cl_mem y,
                  size_t y_off, size_t rows, size_t in, size_t out, char *err, size_t cap)
{
    if (d->matmul == MATMUL_INVARIANT && rows <= LINEAR_ROWS_MAX) {
        cl_kernel k = d->linear_rows;
        cl_ulong xo = x_off, yo = y_off;
        cl_uint i = (cl_uint)in, o = (cl_uint)out;
        cl_int has_bias = bias != NULL;
        cl_mem b = bias ? bias : w;
        const kernel_arg args[] = {KERNEL_ARG(x), KERNEL_ARG(xo),       KERNEL_ARG(w),
                                   KERNEL_ARG(b), KERNEL_ARG(has_bias), KERNEL_ARG(y),
                                   KERNEL_ARG(yo), KERNEL_ARG(i),       KERNEL_ARG(o)};
        cl_int e = kernel_set_args(k, 9, args);
        size_t global[2] = {out, rows};
        if (e == CL_SUCCESS)
            e = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, NULL, 0, NULL,
                                       profile_event(&d->prof, STEP_MATMUL));
        return e == CL_SUCCESS ? 0 : cl_fail(err, cap, "linear_rows", e);
    }
    if (d->matmul == MATMUL_INVARIANT) {
        cl_kernel k = d->linear;
        cl_ulong xo = x_off, yo = y_off;
        cl_uint r = (cl_uint)rows, i = (cl_uint)in, o = (cl_uint)out;
        cl_int has_bias = bias != NULL;
        cl_mem b = bias ? bias : w;
        const kernel_arg args[] = {KERNEL_ARG(x), KERNEL_ARG(xo),       KERNEL_ARG(w),
                                   KERNEL_ARG(b), KERNEL_ARG(has_bias), KERNEL_ARG(y),
                                   KERNEL_ARG(yo), KERNEL_ARG(r),       KERNEL_ARG(i),
                                   KERNEL_ARG(o)};
        cl_int e = kernel_set_args(k, 10, args);
        const size_t tile = 16;
        size_t local[2] = {tile, tile};
        size_t global[2] = {(out + tile - 1) / tile * tile, (rows + tile - 1) / tile * tile};
        if (e == CL_SUCCESS)
            e = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, local, 0, NULL,
                                       profile_event(&d->prof, STEP_MATMUL));
        return e == CL_SUCCESS ? 0 : cl_fail(err, cap, "linear", e);
    }
    /* One row (a decode step) is a matrix-vector product: GEMV streams W
     * once, where GEMM would pad the single row to a whole tile. */
    CLBlastStatusCode s =
        rows == 1 ? CLBlastSgemv(CLBlastLayoutRowMajor, CLBlastTransposeNo, out, in, 1.0f, w, 0,
                                 in, x, x_off, 1, 0.0f, y, y_off, 1, &d->queue,
                                 profile_event(&d->prof, STEP_MATMUL))
                  : CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeYes,
                                 rows, out, in, 1.0f, x, x_off, in, w, 0, in, 0.0f, y, y_off, out,
                                 &d->queue, profile_event(&d->prof, STEP_MATMUL));
    if (s != CLBlastSuccess) {
        snprintf(err, cap, "CLBlast %s (%zu x %zu x %zu) failed: status %d",
                 rows == 1 ? "Sgemv" : "Sgemm", rows, out, in, (int)s);
        return -1;
    }
    if (!bias)
        return 0;
    cl_uint width = (cl_uint)out;
    size_t offset = y_off, global = rows * out;
    const kernel_arg args[] = {KERNEL_ARG(y), KERNEL_ARG(bias), KERNEL_ARG(width)};
    cl_int e = kernel_set_args(d->add_bias, 3, args);
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(d->queue, d->add_bias, 1, &offset, &global, NULL, 0, NULL,
                                   profile_event(&d->prof, STEP_OTHER));
    return e == CL_SUCCESS ? 0 : cl_fail(err, cap, "add_bias", e);
}

static int norm(decoder *d, cl_mem x, cl_mem w, cl_mem b, cl_mem out, size_t rows, char *err,
                size_t cap)
{
    cl_uint width = (cl_uint)d->cfg.hidden;
    float eps = (float)d->cfg.norm_eps;
    cl_kernel k = d->cfg.arch == ARCH_LLAMA ? d->rms_norm : d->layer_norm;
    kernel_arg args[6];
    size_t nargs = 0;
    args[nargs++] = KERNEL_ARG(x);
    args[nargs++] = KERNEL_ARG(w);
    if (d->cfg.arch == ARCH_XGLM) /* LayerNorm's bias */
        args[nargs++] = KERNEL_ARG(b);
    args[nargs++] = KERNEL_ARG(out);
    args[nargs++] = KERNEL_ARG(width);
    args[nargs++] = KERNEL_ARG(eps);
    cl_int e = kernel_set_args(k, nargs, args);
    size_t local = NORM_GROUP, global = rows * NORM_GROUP;
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, &local, 0, NULL,
                                   profile_event(&d->prof, STEP_OTHER));
    return e == CL_SUCCESS ? 0 : cl_fail(err, cap, "norm", e);
}

static int elementwise(decoder *d, cl_kernel k, cl_mem a, cl_mem b, int act, size_t count,
                       const char *what, char *err, size_t cap)
{
    kernel_arg args[3];
    size_t nargs = 0;
    args[nargs++] = KERNEL_ARG(a);
    if (b)
        args[nargs++] = KERNEL_ARG(b);
    if (act >= 0)
        args[nargs++] = KERNEL_ARG(act);
    cl_int e = kernel_set_args(k, nargs, args);
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &count, NULL, 0, NULL,
                                   profile_event(&d->prof, STEP_OTHER));
    return e == CL_SUCCESS ? 0 : cl_fail(err, cap, what, e);
}

static int attention(decoder *d, size_t layer, size_t n, char *err, size_t cap)
{
    const model_config *m = &d->cfg;
    cl_kernel k = d->rope_mode == ROPE_DEVICE ? d->attention_rotating_q : d->attention;
    cl_uint block_size = (cl_uint)d->block_size, heads = (cl_uint)m->heads,
            kv_heads = (cl_uint)m->kv_heads;
    float scale = (float)(1.0 / sqrt((double)m->head_dim));
    cl_uint window = (cl_uint)m->sliding_window;
    kernel_arg args[13] = {KERNEL_ARG(d->q),         KERNEL_ARG(d->layers[layer].k_cache),
                           KERNEL_ARG(d->layers[layer].v_cache),
                           KERNEL_ARG(d->attn),      KERNEL_ARG(d->tables),
                           KERNEL_ARG(d->token_meta), KERNEL_ARG(block_size),
                           KERNEL_ARG(heads),        KERNEL_ARG(kv_heads),
                           KERNEL_ARG(scale),        KERNEL_ARG(window)};
    size_t nargs = 11;
    if (d->rope_mode == ROPE_DEVICE) /* the rotary words and positions */
        nargs += position_attention_args(d, args + nargs);
    cl_int e = kernel_set_args(k, nargs, args);
    size_t global = n * m->heads;
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, NULL, 0, NULL,
                                   profile_event(&d->prof, STEP_OTHER));
    return e == CL_SUCCESS ? 0 : cl_fail(err, cap, "attention", e);
}

static int layer_forward(decoder *d, size_t i, size_t n, char *err, size_t cap)
{
    const model_config *m = &d->cfg;
    const layer_buffers *L = &d->layers[i];
    const size_t H = m->hidden, Q = m->heads * m->head_dim, KV = m->kv_heads * m->head_dim;
    if (norm(d, d->x, L->norm1_w, L->norm1_b, d->h, n, err, cap) ||
        linear(d, d->h, 0, L->q_w, L->q_b, d->q, 0, n, H, Q, err, cap) ||
        linear(d, d->h, 0, L->k_w, L->k_b, d->k, 0, n, H, KV, err, cap) ||
        linear(d, d->h, 0, L->v_w, L->v_b, d->v, 0, n, H, KV, err, cap) ||
        position_rope_into_cache(d, i, n, err, cap) ||
        attention(d, i, n, err, cap) ||
        linear(d, d->attn, 0, L->o_w, L->o_b, d->o, 0, n, Q, H, err, cap) ||
        elementwise(d, d->add_into, d->x, d->o, -1, n * H, "add_into", err, cap) ||
        norm(d, d->x, L->norm2_w, L->norm2_b, d->h, n, err, cap))
        return -1;
    if (m->arch == ARCH_LLAMA) {
        if (linear(d, d->h, 0, L->gate_w, L->gate_b, d->f1, 0, n, H, m->ffn, err, cap) ||
            linear(d, d->h, 0, L->up_w, L->up_b, d->f2, 0, n, H, m->ffn, err, cap) ||
            elementwise(d, d->gated_activation, d->f1, d->f2, (int)m->act, n * m->ffn,
                        "gated_activation", err, cap))
            return -1;
    } else if (linear(d, d->h, 0, L->up_w, L->up_b, d->f1, 0, n, H, m->ffn, err, cap) ||
               elementwise(d, d->activation, d->f1, NULL, (int)m->act, n * m->ffn, "activation",
                           err, cap)) {
        return -1;
    }
    return linear(d, d->f1, 0, L->down_w, L->down_b, d->o, 0, n, m->ffn, H, err, cap) ||
                   elementwise(d, d->add_into, d->x, d->o, -1, n * H, "add_into", err, cap)
               ? -1
               : 0;
}

static cl_int write(decoder *d, cl_mem to, const void *from, size_t bytes)
{
    return clEnqueueWriteBuffer(d->queue, to, CL_FALSE, 0, bytes, from, 0, NULL, NULL);
}

int decoder_forward(decoder *d, const forward_batch *b, float *logits_out, char *err,
                    size_t cap)
{
    const model_config *m = &d->cfg;
    const size_t n = b->n;
    if (n == 0 || n > d->max_tokens || b->logit_rows == 0 || b->logit_rows > n ||
        b->logit_rows > d->max_logit_rows || b->table_entries == 0 ||
        b->table_entries > d->max_table_entries) {
        snprintf(err, cap, "decoder_forward: a batch of %zu tokens does not fit", n);
        return -1;
    }
    /* every token's view of the cache: rows 0 .. row through its table */
    uint32_t *meta = malloc(n * 2 * sizeof *meta);
    int64_t *gather = m->arch == ARCH_XGLM ? malloc(n * sizeof *gather) : NULL;
    if (!meta || (m->arch == ARCH_XGLM && !gather)) {
        free(meta);
        free(gather);
        snprintf(err, cap, "out of memory");
        return -1;
    }
    for (size_t t = 0; t < n; t++) {
        const size_t blocks = b->row[t] / d->block_size + 1;
        if (b->table_offset[t] > b->table_entries ||
            blocks > b->table_entries - b->table_offset[t]) {
            free(meta);
            free(gather);
            snprintf(err, cap, "decoder_forward: token %zu's row %u is past its block table", t,
                     b->row[t]);
            return -1;
        }
        meta[2 * t] = b->table_offset[t];
        meta[2 * t + 1] = b->row[t];
        if (gather)
            gather[t] = b->positions[t] + d->first_position;
    }
    cl_int e = write(d, d->ids, b->ids, n * sizeof *b->ids);
    e |= write(d, d->positions, b->positions, n * d->streams * sizeof *b->positions);
    e |= write(d, d->slots, b->slots, n * sizeof *b->slots);
    e |= write(d, d->token_meta, meta, n * 2 * sizeof *meta);
    e |= write(d, d->tables, b->tables, b->table_entries * sizeof *b->tables);
    e |= write(d, d->logit_index, b->logit_tokens, b->logit_rows * sizeof *b->logit_tokens);
    if (gather)
        e |= write(d, d->gather_positions, gather, n * sizeof *gather);
    /* the host arrays must outlive the non-blocking writes */
    if (e == CL_SUCCESS)
        e = clFinish(d->queue);
    free(meta);
    free(gather);
    if (e != CL_SUCCESS)
        return cl_fail(err, cap, "clEnqueueWriteBuffer (the batch)", e);
    if (position_input_stage(d, n, err, cap) != 0)
        return -1;
    d->batch = b;
    for (size_t i = 0; i < m->layers; i++)
        if (layer_forward(d, i, n, err, cap) != 0) {
            d->batch = NULL;
            return -1;
        }
    d->batch = NULL;
    /* the rows asked for, gathered into o, then the final norm and lm_head */
    cl_uint width = (cl_uint)m->hidden;
    size_t global = b->logit_rows * m->hidden;
    const kernel_arg gather_args[] = {KERNEL_ARG(d->x), KERNEL_ARG(d->o),
                                      KERNEL_ARG(d->logit_index), KERNEL_ARG(width)};
    e = kernel_set_args(d->gather_rows, 4, gather_args);
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(d->queue, d->gather_rows, 1, NULL, &global, NULL, 0, NULL,
                                   profile_event(&d->prof, STEP_OTHER));
    if (e != CL_SUCCESS)
        return cl_fail(err, cap, "gather_rows", e);
    if (norm(d, d->o, d->final_w, d->final_b, d->h, b->logit_rows, err, cap) ||
        linear(d, d->h, 0, d->lm_head, NULL, d->logits, 0, b->logit_rows, m->hidden, m->vocab,
               err, cap))
        return -1;
    uint32_t bad[2];
    e = clEnqueueReadBuffer(d->queue, d->bad_ids, CL_FALSE, 0, sizeof bad, bad, 0, NULL, NULL);
    if (e == CL_SUCCESS)
        e = clEnqueueReadBuffer(d->queue, d->logits, CL_TRUE, 0,
                                b->logit_rows * m->vocab * sizeof(float), logits_out, 0, NULL,
                                NULL);
    if (e != CL_SUCCESS)
        return cl_fail(err, cap, "reading the logits", e);
    profile_collect(&d->prof);
    if (bad[0] != 0) {
        snprintf(err, cap, "token id at index %u is outside the vocabulary [0, %zu)", bad[1],
                 m->vocab);
        return -1;
    }
    return 0;
}

int decoder_check_slots(decoder *d, char *err, size_t cap)
{
    if (d->cfg.arch != ARCH_LLAMA || d->rope_mode != ROPE_KV)
        return 0;
    uint64_t refused = 0;
    clpe_status s = clpe_rope_kv_refused_calls(d->rope, d->queue, &refused);
    for (size_t i = 0; s == CLPE_SUCCESS && i < sizeof d->varying / sizeof *d->varying; i++) {
        uint64_t more = 0;
        if (d->varying[i])
            s = clpe_rope_kv_refused_calls(d->varying[i], d->queue, &more);
        refused += more;
    }
    if (s != CLPE_SUCCESS || refused != 0) {
        snprintf(err, cap, "clpe_enqueue_rope_kv refused %llu calls (a slot out of range or "
                           "repeated): %s",
                 (unsigned long long)refused, clpe_status_string(s));
        return -1;
    }
    return 0;
}
