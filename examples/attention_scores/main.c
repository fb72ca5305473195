/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - attention scores of one head with rotary position embedding
 * fused into the scores kernel (attention_scores.cl), next to the two-pass
 * way: clpe_enqueue_rope on q and k, then the same scores kernel. Prints
 * whether the two agree bit for bit (they must), and exits 1 if not.
 *
 *   attention_scores [KERNEL.cl]     (default: the attention_scores.cl built with it)
 *
 * The device is clpe_select_device's choice (CLPE_DEVICE selects). The
 * rotary configuration is Llama 3.1's (head_dim 128, rope_theta 500000,
 * llama3 scaling with factor 8); 4 queries at positions 131068 .. 131071
 * against 256 keys just before them, from a projection output of 4 heads.
 */
#include <clpe.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ATTENTION_SCORES_CL
#define ATTENTION_SCORES_CL "attention_scores.cl"
#endif

enum { HEAD_DIM = 128, HEADS = 4, N_Q = 4, N_K = 256 };
static const int64_t LAST_POSITION = 131071;

static int fail(const char *what, cl_int code)
{
    fprintf(stderr, "attention_scores: %s failed: %d (%s)\n", what, code,
            clpe_status_string(code));
    return 1;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)len + 1)) != NULL && fread(text, 1, (size_t)len, f) == (size_t)len)
        text[len] = '\0';
    else {
        free(text);
        text = NULL;
    }
    fclose(f);
    return text;
}

/* The user's program: clpe_device.h's text, then the kernels. */
static cl_program build_scores_program(cl_context context, cl_device_id device,
                                       const char *kernel_source, const char *clpe_options,
                                       cl_int *err)
{
    const char *sources[2] = {clpe_device_source(), kernel_source};
    cl_program program = clCreateProgramWithSource(context, 2, sources, NULL, err);
    if (*err != CL_SUCCESS)
        return NULL;
    char options[256];
    snprintf(options, sizeof options, "-cl-std=CL1.2 %s", clpe_options);
    *err = clBuildProgram(program, 1, &device, options, NULL, NULL);
    if (*err != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        fprintf(stderr, "attention_scores: build log:\n%s\n", log);
        clReleaseProgram(program);
        return NULL;
    }
    return program;
}

int main(int argc, char **argv)
{
    const char *kernel_path = argc > 1 ? argv[1] : ATTENTION_SCORES_CL;
    char *kernel_source = read_file(kernel_path);
    if (!kernel_source) {
        fprintf(stderr, "attention_scores: cannot read %s\n", kernel_path);
        return 1;
    }
    cl_platform_id platform;
    cl_device_id device;
    clpe_status st = clpe_select_device(NULL, &platform, &device);
    if (st != CLPE_SUCCESS)
        return fail("clpe_select_device", st);
    cl_int err;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        return fail("clCreateContext", err);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
    if (err != CL_SUCCESS)
        return fail("clCreateCommandQueue", err);

    /* Llama 3.1's rotary */
    clpe_rope_config cfg = clpe_rope_config_default(HEAD_DIM);
    cfg.base = 500000.0;
    cfg.scaling = CLPE_ROPE_LLAMA3;
    cfg.factor = 8.0;
    cfg.low_freq_factor = 1.0;
    cfg.high_freq_factor = 4.0;
    cfg.original_max_position = 8192.0;
    clpe_rope *rope = clpe_rope_create(context, device, &cfg, NULL, &st);
    if (!rope)
        return fail("clpe_rope_create", st);
    cl_mem words;
    const char *clpe_options;
    st = clpe_rope_device_words(rope, &words, &clpe_options);
    if (st != CLPE_SUCCESS)
        return fail("clpe_rope_device_words", st);
    cl_program program = build_scores_program(context, device, kernel_source, clpe_options, &err);
    free(kernel_source);
    if (!program)
        return fail("building the scores program", err);

    /* q and k: head 0 of [tokens, HEADS * HEAD_DIM] projection outputs */
    const size_t pitch = HEADS * HEAD_DIM;
    size_t q_bytes = N_Q * pitch * sizeof(float), k_bytes = N_K * pitch * sizeof(float);
    float *q = malloc(q_bytes), *k = malloc(k_bytes);
    int64_t q_pos[N_Q], k_pos[N_K];
    float *fused = malloc(N_Q * N_K * sizeof(float)), *two_pass = malloc(N_Q * N_K * sizeof(float));
    if (!q || !k || !fused || !two_pass)
        return fail("malloc", CLPE_ERROR_OUT_OF_HOST_MEMORY);
    unsigned seed = 12345;
    for (size_t j = 0; j < N_Q * pitch; ++j)
        q[j] = (float)((seed = seed * 1103515245u + 12345u) >> 8) * 0x1p-23f - 1.0f;
    for (size_t j = 0; j < N_K * pitch; ++j)
        k[j] = (float)((seed = seed * 1103515245u + 12345u) >> 8) * 0x1p-23f - 1.0f;
    for (int t = 0; t < N_Q; ++t)
        q_pos[t] = LAST_POSITION - (N_Q - 1) + t;
    for (int s = 0; s < N_K; ++s)
        k_pos[s] = LAST_POSITION - (N_K - 1) + s;

    cl_mem q_buf = NULL, k_buf = NULL, q_pos_buf = NULL, k_pos_buf = NULL, scores_buf = NULL;
    cl_mem_flags copy = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
    q_buf = clCreateBuffer(context, copy, q_bytes, q, &err);
    if (err == CL_SUCCESS)
        k_buf = clCreateBuffer(context, copy, k_bytes, k, &err);
    if (err == CL_SUCCESS)
        q_pos_buf = clCreateBuffer(context, copy, sizeof q_pos, q_pos, &err);
    if (err == CL_SUCCESS)
        k_pos_buf = clCreateBuffer(context, copy, sizeof k_pos, k_pos, &err);
    if (err == CL_SUCCESS)
        scores_buf = clCreateBuffer(context, CL_MEM_WRITE_ONLY, N_Q * N_K * sizeof(float), NULL,
                                    &err);
    if (err != CL_SUCCESS)
        return fail("clCreateBuffer", err);

    cl_uint head_dim = HEAD_DIM, p32 = (cl_uint)pitch, n_q = N_Q, n_k = N_K;
    cl_float scale = 1.0f / sqrtf((float)HEAD_DIM);
    size_t global[2] = {N_K, N_Q};

    /* one pass: the scores kernel rotates q and k as it loads them */
    cl_kernel fused_kernel = clCreateKernel(program, "attention_scores_rope", &err);
    if (err != CL_SUCCESS)
        return fail("clCreateKernel", err);
    const void *fused_args[] = {&q_buf, &p32, &q_pos_buf, &k_buf, &p32, &k_pos_buf,
                                &words, &head_dim, &scale, &n_q, &n_k, &scores_buf};
    const size_t fused_sizes[] = {sizeof(cl_mem), 4, sizeof(cl_mem), sizeof(cl_mem), 4,
                                  sizeof(cl_mem), sizeof(cl_mem), 4, 4, 4, 4, sizeof(cl_mem)};
    for (cl_uint a = 0; a < 12 && err == CL_SUCCESS; ++a)
        err = clSetKernelArg(fused_kernel, a, fused_sizes[a], fused_args[a]);
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(queue, fused_kernel, 2, NULL, global, NULL, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(queue, scores_buf, CL_TRUE, 0, N_Q * N_K * sizeof(float), fused,
                                  0, NULL, NULL);
    if (err != CL_SUCCESS)
        return fail("the fused scores kernel", err);

    /* two passes: clpe rotates q and k in place, then the plain scores */
    clpe_rope_tensor qt = {.buffer = q_buf, .heads = 1, .row_pitch = pitch};
    clpe_rope_tensor kt = {.buffer = k_buf, .heads = 1, .row_pitch = pitch};
    clpe_positions qp = {.source = CLPE_POSITIONS_IDS, .buffer = q_pos_buf};
    clpe_positions kp = {.source = CLPE_POSITIONS_IDS, .buffer = k_pos_buf};
    st = clpe_enqueue_rope(rope, queue, 1, N_Q, &qt, NULL, &qp, 0, 0, NULL, NULL);
    if (st == CLPE_SUCCESS)
        st = clpe_enqueue_rope(rope, queue, 1, N_K, &kt, NULL, &kp, 0, 0, NULL, NULL);
    if (st != CLPE_SUCCESS)
        return fail("clpe_enqueue_rope", st);
    cl_kernel plain_kernel = clCreateKernel(program, "attention_scores", &err);
    if (err != CL_SUCCESS)
        return fail("clCreateKernel", err);
    const void *plain_args[] = {&q_buf, &p32, &k_buf, &p32, &words,
                                &head_dim, &scale, &n_q, &n_k, &scores_buf};
    const size_t plain_sizes[] = {sizeof(cl_mem), 4, sizeof(cl_mem), 4, sizeof(cl_mem),
                                  4, 4, 4, 4, sizeof(cl_mem)};
    for (cl_uint a = 0; a < 10 && err == CL_SUCCESS; ++a)
        err = clSetKernelArg(plain_kernel, a, plain_sizes[a], plain_args[a]);
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(queue, plain_kernel, 2, NULL, global, NULL, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(queue, scores_buf, CL_TRUE, 0, N_Q * N_K * sizeof(float),
                                  two_pass, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return fail("the scores kernel", err);

    size_t same = 0;
    for (size_t j = 0; j < (size_t)N_Q * N_K; ++j)
        same += memcmp(&fused[j], &two_pass[j], sizeof(float)) == 0;
    printf("attention_scores: %d queries x %d keys, head_dim %d, Llama 3.1 rotary, "
           "positions up to %lld\n",
           N_Q, N_K, HEAD_DIM, (long long)LAST_POSITION);
    printf("score[%d][%d] = %.9g (fused) and %.9g (rope, then scores)\n", N_Q - 1, N_K - 1,
           fused[N_Q * N_K - 1], two_pass[N_Q * N_K - 1]);
    printf("bit-identical: %zu of %d scores\n", same, N_Q * N_K);

    clReleaseKernel(plain_kernel);
    clReleaseKernel(fused_kernel);
    clReleaseMemObject(scores_buf);
    clReleaseMemObject(k_pos_buf);
    clReleaseMemObject(q_pos_buf);
    clReleaseMemObject(k_buf);
    clReleaseMemObject(q_buf);
    clReleaseMemObject(words);
    clReleaseProgram(program);
    clpe_rope_release(rope);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    free(q);
    free(k);
    free(fused);
    free(two_pass);
    return same == (size_t)N_Q * N_K ? 0 : 1;
}
