/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe.h - exact sinusoidal position encoding on any OpenCL device.
 *
 * clpe writes the sinusoidal position encoding of Vaswani et al. (2017) into
 * device buffers, or adds it to activations already there, with one kernel on
 * the caller's command queue. Every output is computed from a fixed-point
 * phase (an integer "odometer"), so it is exact at every 64-bit position and
 * bit-identical on every conformant OpenCL device; the host can predict every
 * output bit (see clpe_host_table()).
 *
 * The encoding, for position p, model width d and pair index i in [0, d/2):
 *
 *     angle(p, i) = p * w_i
 *     CLPE_FREQ_PAPER:         w_i = base^(-2i/d)
 *     CLPE_FREQ_TENSOR2TENSOR: w_i = base^(-i / max(d/2 - 1, 1))
 *     CLPE_LAYOUT_INTERLEAVED: slot 2i = sin(angle), slot 2i+1 = cos(angle)
 *     CLPE_LAYOUT_SPLIT:       slot i  = sin(angle), slot d/2+i = cos(angle)
 *
 * Conventions of this header:
 *  - Every function returns a clpe_status (or takes a clpe_status* out
 *    parameter, which may be NULL). CLPE_SUCCESS is 0; OpenCL failures are
 *    returned as the raw cl_int the OpenCL call gave (a negative number in
 *    OpenCL's own ranges), clpe's own errors are in [-2999, -2000].
 *  - On any error nothing is enqueued, nothing is written and no out
 *    parameter other than the status is changed.
 *  - Enqueue functions never block and never print. They take the caller's
 *    queue, a wait list and an optional out event exactly like
 *    clEnqueueNDRangeKernel. Their work may be split into several kernel
 *    launches; the out event then completes when all of them have. Such a
 *    call holds its commands behind a user event of its own until the last
 *    one is enqueued, so if a later enqueue fails the earlier commands are
 *    terminated and the call still writes nothing.
 *  - Environment (read when an encoder is created): CLPE_PAIRS_PER_ITEM (1:
 *    one pair per work-item, or 64: the vector shape, where the f16 and
 *    bf16 table, add and gather take 512 and their rotary kernels 128),
 *    CLPE_ROWS_PER_ITEM (1..4096), CLPE_WORK_GROUP_SIZE (1..1024)
 *    and CLPE_TILE_WALK (1, the default: in the vector shape, float32 calls
 *    whose sequences share their positions compute each block of rows once
 *    into a tile and stream every sequence against it; 0: they walk as the
 *    other calls do) override the launch shape chosen for the device;
 *    CLPE_MAX_LAUNCH_ROWS
 *    (1..2^31) and CLPE_MAX_LAUNCH_BATCH (1..65535) cap one launch, forcing
 *    the splitting that large problems get (a test knob). Values are plain
 *    decimal numbers; one out of range or malformed is ignored.
 *    clpe_encoder_get_launch_info tells the values in effect, and
 *    clpe_get_device_tuning the device's row of the tuning table.
 *    CLPE_KERNEL_DIR (development) builds the kernels from that folder's
 *    clpe_kernels.cl instead of the copy inside the library.
 *    CLPE_DEVICE is read by clpe_select_device.
 *  - Sizes and pitches are counted in elements of the encoder's dtype, byte
 *    offsets in bytes.
 *  - Thread safety: one encoder may be used from any number of threads at
 *    once (each enqueue takes its own cl_kernel from a pool). Releasing an
 *    encoder while other threads still use it is the caller's bug.
 *  - The library never prints: build logs and errors go back to the caller.
 */
#ifndef CLPE_H
#define CLPE_H

#include <stddef.h>
#include <stdint.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* CLPE_API marks the exported functions. On Windows a DLL exports them while
 * it is built (the build defines CLPE_BUILDING_SHARED) and its users import
 * them; a user of the static library defines CLPE_STATIC. Elsewhere only the
 * symbols marked here are visible outside the shared library. */
#if defined(_WIN32)
#if defined(CLPE_BUILDING_SHARED)
#define CLPE_API __declspec(dllexport)
#elif defined(CLPE_STATIC)
#define CLPE_API
#else
#define CLPE_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define CLPE_API __attribute__((visibility("default")))
#else
#define CLPE_API
#endif

/* ---- Version ------------------------------------------------------------ */

/* The one place the version is written: CMake reads these three lines, and
 * the number and string below are derived from them. */
#define CLPE_VERSION_MAJOR 1
#define CLPE_VERSION_MINOR 2
#define CLPE_VERSION_PATCH 0
#define CLPE_VERSION_NUMBER \
    (CLPE_VERSION_MAJOR * 10000 + CLPE_VERSION_MINOR * 100 + CLPE_VERSION_PATCH)
#define CLPE_STRINGIFY_(x) #x
#define CLPE_STRINGIFY(x) CLPE_STRINGIFY_(x)
#define CLPE_VERSION_STRING                                                  \
    CLPE_STRINGIFY(CLPE_VERSION_MAJOR) "." CLPE_STRINGIFY(CLPE_VERSION_MINOR) "." \
    CLPE_STRINGIFY(CLPE_VERSION_PATCH)

/* The version of the library actually linked: CLPE_VERSION_NUMBER of its build. */
CLPE_API unsigned clpe_version(void);
/* Same, as "MAJOR.MINOR.PATCH". Static storage; never free it. */
CLPE_API const char *clpe_version_string(void);

/* ---- Status ------------------------------------------------------------- */

/* A clpe_status is CLPE_SUCCESS, one of the CLPE_ERROR_* values below, or a
 * raw OpenCL error code (CL_OUT_OF_RESOURCES, CL_BUILD_PROGRAM_FAILURE, ...)
 * passed through unchanged. These values never change once published. */
typedef int32_t clpe_status;

enum {
    CLPE_SUCCESS = 0,
    CLPE_ERROR_NULL_ENCODER = -2001,        /* encoder argument is NULL */
    CLPE_ERROR_NULL_QUEUE = -2002,          /* command queue is NULL */
    CLPE_ERROR_NULL_BUFFER = -2003,         /* a required cl_mem is NULL */
    CLPE_ERROR_NULL_POINTER = -2004,        /* a required pointer (config, output) is NULL */
    CLPE_ERROR_INVALID_D = -2005,           /* d is 0, odd, or above CLPE_MAX_D */
    CLPE_ERROR_INVALID_BASE = -2006,        /* base <= 1, NaN or infinite */
    CLPE_ERROR_INVALID_SCALE = -2007,       /* scale NaN or infinite; an FP8 KV cache's scale
                                               also 0 or negative */
    CLPE_ERROR_INVALID_CONFIG = -2008,      /* unknown freq, layout or dtype value */
    CLPE_ERROR_UNSUPPORTED_DTYPE = -2009,   /* dtype not implemented, or not on this device */
    CLPE_ERROR_INVALID_PITCH = -2010,       /* row pitch < d, or sequences overlap */
    CLPE_ERROR_BUFFER_TOO_SMALL = -2011,    /* data buffer ends before the last element touched */
    CLPE_ERROR_POSITION_OVERFLOW = -2012,   /* a position would leave int64 */
    CLPE_ERROR_CONTEXT_MISMATCH = -2013,    /* queue, buffer or event belongs to another context */
    CLPE_ERROR_DEVICE_MISMATCH = -2014,     /* queue belongs to another device */
    CLPE_ERROR_DEVICE_UNSUPPORTED = -2015,  /* device lacks 64-bit integers or a full profile */
    CLPE_ERROR_INVALID_WAIT_LIST = -2016,   /* wait list NULL with a count, a count with no list,
                                               or an entry that is not an event */
    CLPE_ERROR_MISALIGNED_OFFSET = -2017,   /* byte offset not a multiple of the element size */
    CLPE_ERROR_INVALID_POSITIONS = -2018,   /* unknown position source, or its buffer missing */
    CLPE_ERROR_INDEX_BUFFER_TOO_SMALL = -2019, /* position/starts buffer ends too early */
    CLPE_ERROR_HOST_ONLY = -2020,           /* enqueue on an encoder made by clpe_encoder_create_host */
    CLPE_ERROR_OUT_OF_HOST_MEMORY = -2021,  /* malloc failed */
    CLPE_ERROR_NO_DEVICE = -2022,           /* no OpenCL device, or none matches the selector */
    CLPE_ERROR_TOO_LARGE = -2023,           /* a size whose byte count overflows size_t */
    CLPE_ERROR_DTYPE_MISMATCH = -2024,      /* embedding table dtype differs from the encoder's */
    CLPE_ERROR_ALIASING = -2025,            /* an output shares memory with another argument */
    CLPE_ERROR_UNKNOWN_PRESET = -2026,      /* clpe_config_preset: no preset by that name */
    CLPE_ERROR_INVALID_IDS = -2027,         /* token-id buffer missing, misaligned or too small */
    CLPE_ERROR_RESERVED_FIELD = -2028,      /* a reserved field of a struct is not zero */
    CLPE_ERROR_INVALID_ROPE = -2029,        /* rotary: head_dim, rotary_dim, pairing or heads */
    CLPE_ERROR_INVALID_SCALING = -2030,     /* rotary: unknown scaling or a parameter out of range */
    CLPE_ERROR_BUFFER_ACCESS = -2031,       /* a buffer's CL_MEM_READ_ONLY / CL_MEM_WRITE_ONLY
                                               forbids what the call does with it */
    CLPE_ERROR_INVALID_SLOTS = -2032,       /* KV cache: a slot out of range, or two tokens on one slot */

    /* One past the last error code (counting down). Not a status: it moves
     * whenever a code is added, so never store it; tests loop from
     * CLPE_ERROR_NULL_ENCODER down to it. */
    CLPE_ERROR_END_UNSTABLE = -2033
};

/* A short English description of any clpe_status, OpenCL codes included.
 * Static storage; never free it. Unknown values give "unknown status". */
CLPE_API const char *clpe_status_string(clpe_status status);

/* Non-zero when status is a raw OpenCL error code rather than clpe's own. */
CLPE_API int clpe_status_is_opencl(clpe_status status);

/* ---- Structs that callers fill: how they grow ----------------------------
 *
 * clpe_config, clpe_tensor, clpe_positions and clpe_token_ids end with
 * reserved fields that must be zero (else CLPE_ERROR_RESERVED_FIELD). A later
 * version may give them a meaning, where zero always means what this version
 * does, so code and binaries written against this header keep their meaning.
 * Fill these structs with designated initialisers, which zero every field not
 * named:
 *     clpe_tensor x = {.buffer = buf, .row_pitch = 1024};
 * or start from clpe_config_default() / clpe_config_preset().
 */

/* ---- Configuration ------------------------------------------------------ */

/* Largest supported model width. */
#define CLPE_MAX_D (1u << 24)

typedef enum clpe_freq {
    CLPE_FREQ_PAPER = 0,          /* w_i = base^(-2i/d): Vaswani et al. */
    CLPE_FREQ_TENSOR2TENSOR = 1   /* w_i = base^(-i/max(d/2-1,1)): tensor2tensor, fairseq */
} clpe_freq;

typedef enum clpe_layout {
    CLPE_LAYOUT_INTERLEAVED = 0,  /* sin at 2i, cos at 2i+1 (the paper's formula) */
    CLPE_LAYOUT_SPLIT = 1,        /* sin at i, cos at d/2+i (tensor2tensor, fairseq, HF) */
    CLPE_LAYOUT_SPLIT_COS_FIRST = 2 /* cos at i, sin at d/2+i (HF Musicgen: cat([cos, sin])) */
} clpe_layout;

typedef enum clpe_dtype {
    CLPE_DTYPE_F32 = 0,           /* IEEE binary32 */
    CLPE_DTYPE_F16 = 1,           /* IEEE binary16, round to nearest even; needs no cl_khr_fp16 */
    CLPE_DTYPE_BF16 = 2,          /* bfloat16 (top half of a float32), round to nearest even */
    CLPE_DTYPE_F64 = 3,           /* IEEE binary64; needs cl_khr_fp64 on the device */
    /* 8-bit KV cache types only (clpe_kv_cache.dtype), OCP FP8 as vLLM's
     * kv_cache_dtype fp8_e4m3 / fp8_e5m2 stores it: x / scale in float32,
     * round to nearest even, saturated to the largest finite value (an
     * infinity too), NaN kept (sign | 0x7F for E4M3, sign | 0x7E for E5M2) */
    CLPE_DTYPE_FP8_E4M3 = 4,      /* e4m3fn: no infinities, largest 448 */
    CLPE_DTYPE_FP8_E5M2 = 5       /* e5m2: largest finite 57344 */
} clpe_dtype;

/* What an encoder computes. Start from clpe_config_default() and change
 * fields; every field is checked by clpe_encoder_create(). */
typedef struct clpe_config {
    uint32_t d;          /* model width: even, 2 <= d <= CLPE_MAX_D */
    double base;         /* frequency base: finite, > 1; 10000 in the paper */
    clpe_freq freq;      /* frequency convention */
    clpe_layout layout;  /* where sin and cos go within a row */
    clpe_dtype dtype;    /* element type of every buffer the encoder touches */
    double scale;        /* fused add multiplies x by this before adding PE: finite;
                            1 by default, sqrt(d) is common */
    uint32_t flags;      /* CLPE_FLAG_* below; 0 by default */
    int64_t padding_position; /* with CLPE_FLAG_PADDING_ROW: rows at this position get PE = 0 */
    uint64_t reserved[4]; /* zero (see "Structs that callers fill") */
} clpe_config;

/* Allow odd d: the d/2 pairs fill the first d-1 slots and the last slot is 0
 * (fairseq and tensor2tensor pad odd widths this way). */
#define CLPE_FLAG_ODD_D_ZERO_COLUMN 1u
/* Rows whose position equals padding_position get an all-zero encoding
 * (fairseq zeroes its table row padding_idx). */
#define CLPE_FLAG_PADDING_ROW 2u
/* Allow odd d as Hugging Face Marian and XLM compute it: (d+1)/2 pairs whose
 * frequencies use d itself (paper: w_i = base^(-2i/d)), and the last pair
 * keeps only its sine. SPLIT: sines in slots [0, (d+1)/2), cosines after;
 * INTERLEAVED: sines at even slots, cosines at odd slots. */
#define CLPE_FLAG_ODD_D_HALF_PAIR 4u

/* d as given, base 10000, paper frequencies, interleaved, float32, scale 1. */
CLPE_API clpe_config clpe_config_default(uint32_t d);

/* The configuration that reproduces a framework's sinusoidal table, for
 * width d. *first_position (may be NULL) receives the position of a
 * sequence's first token in that framework. Names (case-insensitive):
 *   "vaswani"        paper frequencies, interleaved, first position 0
 *   "tensor2tensor"  tensor2tensor frequencies, split, first position 0
 *                    (tensor2tensor layers/common_attention.py get_timing_signal_1d)
 *   "fairseq"        tensor2tensor frequencies, split, first position
 *                    padding_idx + 1 = 2, position 1 (padding_idx) all zeros,
 *                    odd d padded with a zero column
 *                    (fairseq/modules/sinusoidal_positional_embedding.py, utils.make_positions)
 *   "marian"         paper frequencies, split halves, first position 0, odd d
 *                    with one more sine (CLPE_FLAG_ODD_D_HALF_PAIR)
 *                    (transformers models/marian/modeling_marian.py)
 *   "opennmt-tf"     tensor2tensor frequencies, split, first position 1
 *                    (opennmt/layers/position.py SinusoidalPositionEncoder)
 *   "xlm"            paper frequencies, interleaved, first position 0, odd d
 *                    with one more sine (transformers models/xlm
 *                    create_sinusoidal_embeddings)
 *   "musicgen"       tensor2tensor frequencies, cosines first
 *                    (CLPE_LAYOUT_SPLIT_COS_FIRST), first position 0, odd d
 *                    padded with a zero column (transformers
 *                    models/musicgen MusicgenSinusoidalPositionalEmbedding)
 * Returns CLPE_ERROR_UNKNOWN_PRESET for any other name. */
CLPE_API clpe_status clpe_config_preset(const char *name, uint32_t d, clpe_config *cfg,
                                        int64_t *first_position);

/* CLPE_SUCCESS when cfg could make an encoder on some device, else the status
 * clpe_encoder_create would return for it (device checks aside). */
CLPE_API clpe_status clpe_config_check(const clpe_config *cfg);

/* ---- Encoder ------------------------------------------------------------ */

typedef struct clpe_encoder clpe_encoder;

/* Where clpe_encoder_create copies the device compiler's log (optional).
 * The log is NUL-terminated and truncated to capacity; length receives the
 * full size in bytes including the terminating NUL (0 when no build ran). */
typedef struct clpe_build_log {
    char *buffer;
    size_t capacity;
    size_t length;
} clpe_build_log;

/* Create an encoder for cfg on (context, device): computes the tuning words
 * on the host (MPFR), uploads them, and builds the kernels for the device.
 * The encoder retains context and device. Returns NULL on failure with the
 * reason in *status; a failed build returns CL_BUILD_PROGRAM_FAILURE and the
 * compiler's log in *log. Blocking; call it once, not per batch. */
CLPE_API clpe_encoder *clpe_encoder_create(cl_context context, cl_device_id device,
                                           const clpe_config *cfg, clpe_build_log *log,
                                           clpe_status *status);

/* Create an encoder for another configuration on the same context and device
 * as `like`, sharing its built program: no compilation, so this is cheap. */
CLPE_API clpe_encoder *clpe_encoder_create_like(const clpe_encoder *like,
                                                const clpe_config *cfg, clpe_status *status);

/* Create a host-only encoder: no OpenCL at all. It serves the clpe_host_*
 * functions; its enqueue functions return CLPE_ERROR_HOST_ONLY. */
CLPE_API clpe_encoder *clpe_encoder_create_host(const clpe_config *cfg, clpe_status *status);

/* Release the encoder and everything it holds. NULL is a no-op. Work already
 * enqueued stays valid: OpenCL keeps the kernels and buffers it uses alive
 * until it completes. */
CLPE_API void clpe_encoder_release(clpe_encoder *enc);

/* The configuration the encoder was made with. */
CLPE_API clpe_status clpe_encoder_get_config(const clpe_encoder *enc, clpe_config *cfg);

/* How the encoder's kernels are launched on its device: the device's row of
 * the library's tuning table (clpe_get_device_tuning), with the
 * environment's tuning knobs applied
 * (CLPE_PAIRS_PER_ITEM, CLPE_ROWS_PER_ITEM, CLPE_WORK_GROUP_SIZE,
 * CLPE_TILE_WALK, CLPE_MAX_LAUNCH_ROWS, CLPE_MAX_LAUNCH_BATCH; see the
 * conventions at the
 * top). Filled by the library; reserved comes back zero. */
typedef struct clpe_launch_info {
    uint32_t pairs_per_item;  /* pairs one work-item of the encoder's row kernels (table,
                                 add, gather) computes: 1, or 64 (512 for f16 and
                                 bf16); with 64, float32 calls whose sequences share
                                 their positions walk 512 pairs per work-item, in tiles */
    uint32_t rows_per_item;   /* rows one work-item walks with the odometer; outside the
                                 tile walk, a work-item serving every sequence of a call
                                 (positions from a start) walks rows_per_item / (2 x
                                 batch) of them, at least 1; f16 and bf16 with 512
                                 pairs 8 times that, or more where the launch has the
                                 rows: up to 64 while it keeps 8 work-items per compute
                                 unit. Rotary on a vector shape (pairs_per_item 64)
                                 walks rows_per_item whatever the batch, or fewer
                                 (never below rows_per_item / (2 x batch)) where a
                                 launch would keep less than 8 work-items per
                                 compute unit */
    size_t work_group_size;   /* largest work-group along the pairs */
    size_t max_launch_rows;   /* rows one launch covers at most */
    size_t max_launch_batch;  /* sequences one launch covers at most */
    uint32_t tile_walk;       /* 1 when float32 calls whose sequences share their positions
                                 walk tiles (the vector shape, CLPE_TILE_WALK), else 0 */
    uint32_t reserved32;
    uint64_t reserved[3];
} clpe_launch_info;

/* CLPE_ERROR_HOST_ONLY for a host-only encoder. */
CLPE_API clpe_status clpe_encoder_get_launch_info(const clpe_encoder *enc,
                                                  clpe_launch_info *info);

/* ---- Where data lives --------------------------------------------------- */

/* A [batch, seq, d] region of a device buffer. */
typedef struct clpe_tensor {
    cl_mem buffer;        /* required */
    size_t offset;        /* bytes from the buffer's start to element [0][0][0];
                             a multiple of the element size */
    size_t row_pitch;     /* elements from [b][s][0] to [b][s+1][0]; 0 means d; >= d */
    size_t batch_pitch;   /* elements from [b][0][0] to [b+1][0][0]; 0 means
                             seq * row_pitch; sequences may not overlap */
    uint64_t reserved[2]; /* zero */
} clpe_tensor;

typedef enum clpe_position_source {
    CLPE_POSITIONS_START = 0,         /* pos(b, s) = start + s */
    CLPE_POSITIONS_PER_SEQUENCE = 1,  /* pos(b, s) = buffer[b] + s; int64 [batch] */
    CLPE_POSITIONS_IDS = 2,           /* pos(b, s) = buffer[b * seq + s]; int64 [batch, seq],
                                         the layout of a torch position_ids tensor */
    /* Rotary only: one position per stream of a multimodal rotary object
     * (clpe_rope_create_mrope; a plain one has one stream). Every other call
     * refuses them with CLPE_ERROR_INVALID_POSITIONS. */
    CLPE_POSITIONS_STREAMS = 3,       /* stream j of (b, s) = buffer[(j * batch + b) * seq + s];
                                         int64 [streams, batch, seq], Qwen2-VL's position_ids */
    CLPE_POSITIONS_STREAMS_TOKEN_FIRST = 4 /* stream j of (b, s) = buffer[(b * seq + s) * streams
                                         + j]; int64 [batch, seq, streams], the vision tower's
                                         [patches, 2] (row, column) */
} clpe_position_source;

/* Which position each row gets. Positions read from device buffers wrap
 * modulo 2^64 (start + s computed on the device is not checked). */
typedef struct clpe_positions {
    clpe_position_source source;
    int64_t start;   /* CLPE_POSITIONS_START only */
    cl_mem buffer;   /* the other two sources: int64 values on the encoder's context */
    size_t offset;   /* bytes into buffer; a multiple of 8 */
    uint64_t reserved[2]; /* zero */
} clpe_positions;

/* ---- Enqueue ------------------------------------------------------------ */

/* Table: out[r][:] = PE(start + r) for r in [0, n). Only the d elements of
 * each row are written; padding between rows is left alone. n == 0 enqueues
 * nothing (a marker if event is non-NULL). start + n - 1 must fit in int64.
 * out->batch_pitch is ignored. */
CLPE_API clpe_status clpe_enqueue_table(clpe_encoder *enc, cl_command_queue queue,
                                        int64_t start, size_t n, const clpe_tensor *out,
                                        cl_uint num_events_in_wait_list,
                                        const cl_event *event_wait_list, cl_event *event);

/* Fused add, in place, over a [batch, seq, d] tensor:
 *     x[b][s][i] = x[b][s][i] * scale + PE(pos(b, s))[i]
 * with scale from the encoder's config. Arithmetic: the product is rounded,
 * then the sum is rounded (two operations, not an fma), in float32 (float64
 * for f64), then rounded once to the storage type: bit for bit what the
 * unfused steps "x *= scale; x += table" give in that arithmetic.
 * positions NULL means CLPE_POSITIONS_START at 0. batch == 0 or seq == 0
 * enqueues nothing (a marker if event is non-NULL). */
CLPE_API clpe_status clpe_enqueue_add(clpe_encoder *enc, cl_command_queue queue,
                                      size_t batch, size_t seq, const clpe_tensor *x,
                                      const clpe_positions *positions,
                                      cl_uint num_events_in_wait_list,
                                      const cl_event *event_wait_list, cl_event *event);

/* Fused add, out of place: out = x * scale + PE over [batch, seq, d], with
 * the rounding of clpe_enqueue_add.
 * x and out may be the same elements of the same buffer (the same offset
 * and pitches: the in-place add) or elements that do not meet; any other
 * sharing is CLPE_ERROR_ALIASING (see "Buffers shared between arguments"). */
CLPE_API clpe_status clpe_enqueue_add_out(clpe_encoder *enc, cl_command_queue queue,
                                          size_t batch, size_t seq, const clpe_tensor *x,
                                          const clpe_tensor *out,
                                          const clpe_positions *positions,
                                          cl_uint num_events_in_wait_list,
                                          const cl_event *event_wait_list, cl_event *event);

/* Token ids for clpe_enqueue_gather: int32 [batch, seq], row-major,
 * `offset` bytes into `buffer` (a multiple of 4). */
typedef struct clpe_token_ids {
    cl_mem buffer;
    size_t offset;
    uint64_t reserved[2]; /* zero */
} clpe_token_ids;

/* Fused input stage: embedding gather, scale and position encoding at once,
 *     out[b][s][:] = embedding[ids[b][s]][:] * scale + PE(pos(b, s))
 * with the rounding of clpe_enqueue_add.
 * embedding is a [vocab, d] table of embedding_dtype (which must equal the
 * encoder's dtype) with row_pitch; its batch_pitch is ignored. An id outside
 * [0, vocab) never reads the table: its row is written as PE alone (the
 * embedding counts as zero). If bad_ids is non-NULL it must hold two
 * uint32 values that this call resets and fills on the device:
 * [0] = number of bad ids, [1] = smallest flat index b * seq + s of a bad id
 * (0xFFFFFFFF when there is none). */
CLPE_API clpe_status clpe_enqueue_gather(clpe_encoder *enc, cl_command_queue queue,
                                         size_t batch, size_t seq, const clpe_token_ids *ids,
                                         const clpe_tensor *embedding, clpe_dtype embedding_dtype,
                                         size_t vocab, const clpe_tensor *out,
                                         const clpe_positions *positions, cl_mem bad_ids,
                                         cl_uint num_events_in_wait_list,
                                         const cl_event *event_wait_list, cl_event *event);

/* Pad-aware positions: fairseq's utils.make_positions (and Hugging Face
 * M2M100's create_position_ids_from_input_ids), whatever the padding's place
 * (left, right or in the middle): each non-pad token counts up from
 * first_position, each pad token gets pad_position:
 *     positions[b][s] = pad_position                    if ids[b][s] == pad_id
 *                       first_position + k              for the k-th (from 0)
 *                                                       non-pad token of row b
 * written as int64 [batch, seq] to positions_out (offset in bytes, a multiple
 * of 8), ready to be the CLPE_POSITIONS_IDS source of add and gather.
 * fairseq: pad_id = padding_idx, first_position = padding_idx + 1,
 * pad_position = padding_idx. first_position + seq - 1 must fit in int64
 * (else CLPE_ERROR_POSITION_OVERFLOW); ids and positions_out must not share
 * a byte (else CLPE_ERROR_ALIASING). */
CLPE_API clpe_status clpe_enqueue_pad_positions(clpe_encoder *enc, cl_command_queue queue,
                                                size_t batch, size_t seq,
                                                const clpe_token_ids *ids, int32_t pad_id,
                                                int64_t first_position, int64_t pad_position,
                                                cl_mem positions_out, size_t positions_offset,
                                                cl_uint num_events_in_wait_list,
                                                const cl_event *event_wait_list,
                                                cl_event *event);

/* ---- Host emulation ----------------------------------------------------- */

/* One exception to "the exact bits", for add and gather only: where an input
 * element is a NaN, the output is a NaN, but its sign and payload are the
 * device's (OpenCL leaves them open: GPUs return one canonical NaN, and
 * PoCL's scalar and vector half conversions differ). */

/* The exact bits a conformant device writes for clpe_enqueue_table, computed
 * on the host CPU. out holds n rows of row_pitch elements (0 means d) of the
 * encoder's dtype; only the d elements of each row are written. */
CLPE_API clpe_status clpe_host_table(const clpe_encoder *enc, int64_t start, size_t n,
                                     void *out, size_t row_pitch);

/* The exact bits of clpe_enqueue_add, on host memory. positions are host
 * values here: for CLPE_POSITIONS_PER_SEQUENCE and CLPE_POSITIONS_IDS pass
 * them in host_positions (int64, batch or batch*seq of them). */
CLPE_API clpe_status clpe_host_add(const clpe_encoder *enc, size_t batch, size_t seq,
                                   void *x, size_t row_pitch, size_t batch_pitch,
                                   clpe_position_source source, int64_t start,
                                   const int64_t *host_positions);

/* The exact bits of clpe_enqueue_gather on host memory: out gets batch*seq
 * rows from embedding (vocab rows of emb_row_pitch elements) and host ids.
 * Returns the number of bad ids through *bad_count (may be NULL). */
CLPE_API clpe_status clpe_host_gather(const clpe_encoder *enc, size_t batch, size_t seq,
                                      const int32_t *ids, const void *embedding, size_t vocab,
                                      size_t emb_row_pitch, void *out, size_t out_row_pitch,
                                      clpe_position_source source, int64_t start,
                                      const int64_t *host_positions, size_t *bad_count);

/* Does the device support dtype (f64 needs cl_khr_fp64)? */
CLPE_API int clpe_device_supports_dtype(cl_device_id device, clpe_dtype dtype);

/* ---- Rotary position embedding (RoPE) ------------------------------------
 *
 * Rotary embedding (Su et al. 2021) rotates each pair (a, b) of a query or
 * key head by the angle theta = p * w_i of its token's position p:
 *     a' = a cos(theta) - b sin(theta),   b' = a sin(theta) + b cos(theta)
 * with cos and sin multiplied by an amplitude factor m (1 unless a scaling
 * sets it). clpe takes theta from the same exact fixed-point phase as the
 * sinusoidal encoding: exact at every int64 position (float32: |error| <=
 * 2^-22 * m * hypot(a, b)), bit-identical on every conformant device, and
 * predictable by clpe_host_rope().
 *
 * Arithmetic: cos and sin in float32 (float64 for f64), each multiplied by
 * m (rounded); a' = fma(a, c, -(b * s)), b' = fma(a, s, b * c); rounded
 * once to the storage type.
 */

typedef enum clpe_rope_pairing {
    CLPE_ROPE_HALF_SPLIT = 0,   /* pair (i, i + rotary_dim/2): GPT-NeoX, Hugging Face rotate_half */
    CLPE_ROPE_INTERLEAVED = 1   /* pair (2i, 2i+1): GPT-J, Meta's original Llama code */
} clpe_rope_pairing;

/* How the per-pair frequencies w_i and the amplitude m are computed, each as
 * Hugging Face transformers' rope_init_fns define it (modeling_rope_utils.py;
 * the README names the version followed). Every frequency is computed in
 * MPFR on the host, so the phase stays exact. With partial rotary the
 * frequencies use rotary_dim, as Hugging Face does. */
typedef enum clpe_rope_scaling {
    CLPE_ROPE_DEFAULT = 0,      /* w_i = base^(-2i/rotary_dim), m = 1 */
    CLPE_ROPE_LINEAR = 1,       /* position interpolation: w_i / factor */
    CLPE_ROPE_DYNAMIC = 2,      /* dynamic NTK: base grows with seq_len beyond
                                   original_max_position (the length of the
                                   whole call, max(position) + 1, given explicitly) */
    CLPE_ROPE_YARN = 3,         /* YaRN: ramp between beta_fast and beta_slow,
                                   amplitude from mscale / mscale_all_dim or
                                   attention_factor */
    CLPE_ROPE_LLAMA3 = 4,       /* Llama 3.1: low/high frequency factors */
    CLPE_ROPE_LONGROPE = 5,     /* LongRoPE: per-pair factors, short or long
                                   chosen by seq_len against original_max_position */
    CLPE_ROPE_FREQUENCIES = 6   /* the caller's frequencies w_i (frequencies[]), m = attention_factor or 1 */
} clpe_rope_scaling;

/* The frequencies clpe computes exactly: every w_i in [0, CLPE_ROPE_MAX_FREQUENCY)
 * radians per position, whatever the scaling that gives it. Each is computed
 * from the exact values of the given doubles at 256 bits, then rounded once to
 * its tuning word, so the angle p * w_i is exact at every int64 position
 * (to 2^-97 turn per unit of |p| for the 32- and 16-bit types, 2^-129 for
 * f64). A configuration whose frequencies leave that range (a LONGROPE
 * factor below 2^-32, a FREQUENCIES value of 2^32 or more, anything infinite)
 * is refused with CLPE_ERROR_INVALID_SCALING; frequencies above 2pi are
 * aliases of ones below it anyway. Very small frequencies are exact too:
 * their tuning words round to the nearest step. */
#define CLPE_ROPE_MAX_FREQUENCY 4294967296.0 /* 2^32 */

/* What a rotary object computes. Start from clpe_rope_config_default(). */
typedef struct clpe_rope_config {
    uint32_t head_dim;           /* elements per head: 2 .. CLPE_MAX_D */
    uint32_t rotary_dim;         /* leading elements of each head that rotate: even,
                                    <= head_dim; 0 means head_dim (partial rotary) */
    double base;                 /* rope_theta: finite, > 1 (10000; Llama 3: 500000) */
    clpe_rope_pairing pairing;
    clpe_dtype dtype;            /* storage of q and k (f64 needs cl_khr_fp64) */
    clpe_rope_scaling scaling;
    double factor;               /* LINEAR, DYNAMIC, YARN, LLAMA3: the scaling factor (>= 1);
                                    LONGROPE: Hugging Face's factor (Phi-3: max_position_embeddings /
                                    original_max_position_embeddings), only for the amplitude:
                                    >= 1, or 0 when attention_factor is set */
    double original_max_position; /* >= 1. DYNAMIC: max_position_embeddings; YARN: rope_scaling's
                                     original_max_position_embeddings, else max_position_embeddings;
                                     LLAMA3: rope_scaling's original_max_position_embeddings;
                                     LONGROPE: original_max_position_embeddings, else
                                     max_position_embeddings */
    double low_freq_factor;      /* LLAMA3: > 0 */
    double high_freq_factor;     /* LLAMA3: > low_freq_factor */
    double beta_fast;            /* YARN: 0 means 32; >= beta_slow */
    double beta_slow;            /* YARN: 0 means 1 */
    double mscale;               /* YARN: 0 means unset */
    double mscale_all_dim;       /* YARN: 0 means unset */
    int32_t no_truncate;         /* YARN: non-zero = truncate False */
    double attention_factor;     /* YARN, LONGROPE, FREQUENCIES: m; 0 means as Hugging Face computes it
                                    (m must be finite as a float unless dtype is f64) */
    uint64_t seq_len;            /* DYNAMIC and LONGROPE: the call's length, max(position) + 1 */
    const double *short_factor;  /* LONGROPE: rotary_dim/2 factors (read by LONGROPE only) */
    const double *long_factor;   /* LONGROPE: rotary_dim/2 factors (read by LONGROPE only) */
    const double *frequencies;   /* FREQUENCIES: rotary_dim/2 values w_i (copied at creation;
                                    read by FREQUENCIES only) */
    uint64_t reserved[4];        /* zero */
} clpe_rope_config;

/* head_dim as given, rotary_dim = head_dim, base 10000, half-split,
 * float32, no scaling. */
CLPE_API clpe_rope_config clpe_rope_config_default(uint32_t head_dim);

/* CLPE_SUCCESS when cfg could make a rotary object, else the status
 * clpe_rope_create would return for it (device checks aside), with the
 * reason in detail: the field, the rule it breaks and the value given, as
 * "llama3: original_max_position must be a finite number >= 1, got 0"
 * (a scaling's fields are named after its scaling). detail may be NULL;
 * otherwise it receives a NUL-terminated English text truncated to capacity
 * bytes, empty on success. Every CLPE_ERROR_INVALID_SCALING, _INVALID_ROPE
 * and _INVALID_BASE of a rotary configuration has such a reason. Runs the
 * host half of the creation (the MPFR frequencies) and keeps nothing. */
CLPE_API clpe_status clpe_rope_config_check(const clpe_rope_config *cfg, char *detail,
                                            size_t capacity);

typedef struct clpe_rope clpe_rope;

/* Create a rotary object on (context, device), or sharing the built program
 * of an encoder (no compilation), or for the host emulation only. The
 * frequencies are computed and uploaded here. */
CLPE_API clpe_rope *clpe_rope_create(cl_context context, cl_device_id device,
                                     const clpe_rope_config *cfg, clpe_build_log *log,
                                     clpe_status *status);
CLPE_API clpe_rope *clpe_rope_create_like(const clpe_encoder *like, const clpe_rope_config *cfg,
                                          clpe_status *status);
CLPE_API clpe_rope *clpe_rope_create_host(const clpe_rope_config *cfg, clpe_status *status);
/* NULL is a no-op. Work already enqueued stays valid. */
CLPE_API void clpe_rope_release(clpe_rope *rope);

/* The per-pair frequencies w_i (rotary_dim/2 of them, rounded to double)
 * and the amplitude m the object uses: for checking a configuration
 * against a framework's own inv_freq and attention_scaling. */
CLPE_API clpe_status clpe_rope_get_frequencies(const clpe_rope *rope, double *frequencies,
                                               size_t count, double *amplitude);

/* Queries or keys of [batch, seq, heads, head_dim] (or any order of batch,
 * seq and heads), through pitches in elements; 0 takes the packed default
 * [batch, seq, heads, head_dim]:
 *   [batch, seq, heads, d]:  head_pitch d, row_pitch heads*d, batch_pitch seq*heads*d
 *   [batch, heads, seq, d]:  head_pitch seq*d, row_pitch d, batch_pitch heads*seq*d
 *   [tokens, heads * d]:     batch 1, seq = tokens, defaults */
typedef struct clpe_rope_tensor {
    cl_mem buffer;        /* required */
    size_t offset;        /* bytes to element [0][0][0][0]; a multiple of the element size */
    size_t heads;         /* heads of this tensor (queries and keys may differ: GQA) */
    size_t head_pitch;    /* elements from head h to h+1 of a token; 0 means head_dim */
    size_t row_pitch;     /* elements from token s to s+1; 0 means heads * head_pitch */
    size_t batch_pitch;   /* elements from sequence b to b+1; 0 means seq * row_pitch */
    uint64_t reserved[2]; /* zero */
} clpe_rope_tensor;

/* Rotate with the angle -theta instead (the backward pass; undoing a rotation). */
#define CLPE_ROPE_INVERSE 1u

/* Rotate queries q and keys k (k may be NULL) in place, one kernel: each
 * token's angles are computed once and applied to every head of both.
 * positions as for clpe_enqueue_add (NULL: start 0); a negative start, or
 * negative position ids, rotate backwards (re-rotating cached keys by
 * -delta is one call whose error does not grow with delta). q and k must
 * not share an element, but may interleave in one buffer: the q and k heads
 * of a fused QKV projection output, [tokens, (hq + 2 hk) * head_dim], are
 * q = {offset 0, hq heads} and k = {offset hq * head_dim elements, hk heads},
 * both with row_pitch (hq + 2 hk) * head_dim (see "Buffers shared between
 * arguments"). flags: 0 or CLPE_ROPE_INVERSE. */
CLPE_API clpe_status clpe_enqueue_rope(clpe_rope *rope, cl_command_queue queue, size_t batch,
                                       size_t seq, const clpe_rope_tensor *q,
                                       const clpe_rope_tensor *k, const clpe_positions *positions,
                                       uint32_t flags, cl_uint num_events_in_wait_list,
                                       const cl_event *event_wait_list, cl_event *event);

/* The cos/sin cache frameworks consume, for positions start .. start+n-1:
 * cos and sin each [n, rotary_dim] in the rope's dtype (rows through
 * row_pitch; batch_pitch ignored), already multiplied by the amplitude.
 * HALF_SPLIT repeats the halves (cos[s][j] = cos[s][j + rotary_dim/2], as
 * Hugging Face's cat((freqs, freqs))); INTERLEAVED repeats each value twice
 * (slots 2i and 2i+1). */
CLPE_API clpe_status clpe_enqueue_rope_cache(clpe_rope *rope, cl_command_queue queue,
                                             int64_t start, size_t n, const clpe_tensor *cos,
                                             const clpe_tensor *sin,
                                             cl_uint num_events_in_wait_list,
                                             const cl_event *event_wait_list, cl_event *event);

/* The exact bits of clpe_enqueue_rope on host memory (q and k of the
 * rope's dtype; k may be NULL). Pitches as in clpe_rope_tensor. */
typedef struct clpe_host_rope_tensor {
    void *data;
    size_t heads, head_pitch, row_pitch, batch_pitch;
    uint64_t reserved[2]; /* zero */
} clpe_host_rope_tensor;

CLPE_API clpe_status clpe_host_rope(const clpe_rope *rope, size_t batch, size_t seq,
                                    const clpe_host_rope_tensor *q,
                                    const clpe_host_rope_tensor *k,
                                    clpe_position_source source, int64_t start,
                                    const int64_t *host_positions, uint32_t flags);

/* The exact bits of clpe_enqueue_rope_cache: n rows of row_pitch elements
 * (0 means rotary_dim) into cos and sin. */
CLPE_API clpe_status clpe_host_rope_cache(const clpe_rope *rope, int64_t start, size_t n,
                                          void *cos, void *sin, size_t row_pitch);

/* ---- Buffers shared between arguments ---------------------------------
 *
 * Every call, on the device and in the host emulation alike, refuses with
 * CLPE_ERROR_ALIASING an argument it writes that shares a byte with any
 * other argument (inputs may share freely). Within one cl_mem, or host
 * memory, the bytes compared are the elements each layout touches, not the
 * ranges around them: q and k heads interleaved per token in one fused QKV
 * buffer, or cos and sin in the two halves of each row of one buffer, do
 * not meet and are accepted; a layout that meets itself (rows, heads or
 * sequences overlapping) is CLPE_ERROR_INVALID_PITCH. A sub-buffer is
 * compared through its parent (CL_MEM_ASSOCIATED_MEMOBJECT, CL_MEM_OFFSET)
 * and a CL_MEM_USE_HOST_PTR buffer through its host memory: two different
 * cl_mem whose storage overlaps (a buffer and its sub-buffer, overlapping
 * sub-buffers) collide whenever one is written, whatever their elements,
 * since OpenCL leaves that undefined; sub-buffers that do not overlap are
 * independent. A buffer written must not be CL_MEM_READ_ONLY, nor one read
 * CL_MEM_WRITE_ONLY (else CLPE_ERROR_BUFFER_ACCESS). */

/* ---- Exact sin/cos inside your own kernels (clpe_device.h) -------------- */

/* clpe_device.h, installed beside this header, is OpenCL C: functions that
 * give, inside a kernel of your own, the same float bits as clpe's kernels
 * (sin and cos of pair i at an int64 position; for rotary, cos and sin
 * times the amplitude and the rotation of a pair). They read an object's
 * tuning words from a buffer that the calls below make; docs/
 * device_functions.md of the clpe sources shows a whole program.
 *
 * *words receives a new read-only buffer in the object's context, which the
 * caller owns (clReleaseMemObject; it stays valid after the object is
 * released): an array of cl_ulong, layout 1, stable within clpe 1.x:
 *   [0]        1, the layout
 *   [1]        n, the pairs (an encoder's d/2, or (d+1)/2 with
 *              CLPE_FLAG_ODD_D_HALF_PAIR and an odd d; rotary_dim/2)
 *   [2]        flags: 1 WIDE (float64: 128-bit words), 2 NARROW (an encoder
 *              of f16 or bf16, whose values come from the 16-bit variant
 *              of the sine and cosine), 4 INTERLEAVED (rotary pairs at
 *              elements 2i, 2i+1 of a head; otherwise i, i + n), 8 ROTARY
 *   [3]        the amplitude m: float bits in the low 32 bits, or double
 *              bits when WIDE; 1 for an encoder
 *   [4 + 2i]   pair i's tuning word, round(2^96 w_i / 2pi) (2^128 when
 *   [5 + 2i]   WIDE): its top 64 bits, then the rest (32 bits, or 64)
 * *build_options (may be NULL) receives a static string to add to the
 * build options of a program that uses clpe_device.h: it lets the header
 * check that it reads the layout this library writes.
 * A multimodal rotary object (clpe_rope_create_mrope) writes its pairs'
 * words in pair order, each from its stream's ladder: rotate pair i by the
 * position of the stream clpe_rope_get_streams names for it.
 * Nothing is created on failure; CLPE_ERROR_HOST_ONLY for an object made
 * for the host emulation only. */
CLPE_API clpe_status clpe_encoder_device_words(const clpe_encoder *enc, cl_mem *words,
                                               const char **build_options);
CLPE_API clpe_status clpe_rope_device_words(const clpe_rope *rope, cl_mem *words,
                                            const char **build_options);

/* The text of clpe_device.h, self-contained, as a NUL-terminated string:
 * put it before your own source (clCreateProgramWithSource takes several
 * strings) instead of an #include and an include path. Never free it. */
CLPE_API const char *clpe_device_source(void);
/* ---- Rotary into a KV cache ----------------------------------------------
 *
 * After the QKV projection an engine rotates queries and keys and writes
 * keys and values into its KV cache. clpe_enqueue_rope_kv does it in one
 * kernel: it reads each token's q, k and v once, writes q rotated (in place,
 * or to q_out) and writes k rotated and v as it is into the cache slot the
 * caller gives the token. Every bit equals clpe_enqueue_rope of q and k
 * followed by a copy of k and v into the cache, converted to the cache's
 * dtype (round to nearest even; an FP8 cache stores x / scale, computed in
 * float32 from the value rotation stores, saturated: what vLLM's
 * reshape_and_cache writes into an fp8 cache). clpe_device.h reads an FP8
 * entry back (clpe_fp8_e4m3_to_float, clpe_fp8_e5m2_to_float).
 *
 * The cache: a key and a value tensor of [num_blocks, block_size, heads,
 * head_dim] through pitches; slot s is entry s % block_size of block
 * s / block_size:
 *   contiguous [batch, max_seq, heads, head_dim]: num_blocks = batch,
 *     block_size = max_seq, slot = b * max_seq + position
 *   paged [num_blocks, block_size, heads, head_dim] (the layout vLLM's
 *     reshape_and_cache writes): slot = block * block_size + offset, with
 *     block taken from the sequence's block table
 *   heads outside the slots [num_blocks, heads, block_size, head_dim]:
 *     head_pitch = block_size * head_dim, slot_pitch = head_dim
 */
typedef struct clpe_kv_cache {
    cl_mem key;           /* required */
    cl_mem value;         /* required; key's buffer is allowed where the two regions
                             do not overlap */
    size_t key_offset;    /* bytes to slot 0 of the key cache; a multiple of the element size */
    size_t value_offset;  /* likewise for the value cache */
    clpe_dtype dtype;     /* the rope's dtype, or F16 or BF16 under an F32 rope, or
                             FP8_E4M3 or FP8_E5M2 under an F32, F16 or BF16 rope
                             (else CLPE_ERROR_DTYPE_MISMATCH) */
    size_t num_blocks;    /* blocks (contiguous: sequences) */
    size_t block_size;    /* slots per block (contiguous: max_seq) */
    size_t heads;         /* key/value heads: k's and v's heads */
    size_t head_pitch;    /* elements from head h to h+1 of a slot; 0 means head_dim */
    size_t slot_pitch;    /* elements from a slot to the next in its block;
                             0 means heads * head_pitch */
    size_t block_pitch;   /* elements from block to block; 0 means block_size * slot_pitch.
                             No two entries of the cache may share an element */
    float key_scale;      /* FP8 caches: the key cache stores k / key_scale; positive
                             and finite (else CLPE_ERROR_INVALID_SCALE). Other caches:
                             0 or 1, no scaling */
    float value_scale;    /* likewise for the values */
    uint64_t reserved[3]; /* zero */
} clpe_kv_cache;

/* Where each token goes: int64 [tokens] on the device, the cache slot of
 * token t or -1 (a padding token: its k and v are not written; its q is
 * rotated as every other). Every slot must be -1 or in [0, num_blocks *
 * block_size), and no slot may appear twice in one call. The device checks
 * that before anything is written: a call with a bad slot writes nothing,
 * neither q nor the cache (its event still completes normally: the slots
 * are data on the device, and an enqueue call never waits for them).
 * A refused call is visible two ways:
 *  - in report, when given: two uint32 the call writes, [0] the number of
 *    tokens refused (a slot out of range, or one an earlier token of the
 *    call has), [1] the first of them (0xFFFFFFFF when none);
 *  - always, report or not, in the object's count of refused calls,
 *    clpe_rope_kv_refused_calls.
 * The check takes time linear in tokens at any size: the rotation itself
 * checks the slots of a call of a few tokens (one command, as
 * clpe_enqueue_rope is), a small call sorts its (slot, token) pairs in one
 * work-group's local memory, a larger one claims each slot in a hash table
 * of 2 * tokens entries or more that the object keeps (grown by the call
 * that needs it). Because the object keeps
 * that table and the report of calls without one, its KV calls run one
 * after another on the device: each waits for the end of the object's
 * previous call, on whatever queue (in one in-order queue that costs
 * nothing; calls on several queues at once need one object per queue to
 * overlap). */
typedef struct clpe_kv_slots {
    cl_mem buffer;        /* required: int64 slots */
    size_t offset;        /* bytes; a multiple of 8 */
    cl_mem report;        /* NULL, or a buffer of at least 8 bytes (written at offset 0) */
    uint64_t reserved[2]; /* zero */
} clpe_kv_slots;

/* Rotate and cache `tokens` tokens. q, q_out, k and v are [tokens, heads,
 * head_dim] through head_pitch and row_pitch (clpe_rope_tensor with batch 1;
 * batch_pitch ignored), of the rope's dtype. A fused QKV projection output
 * [tokens, (hq + 2 hk) * head_dim] is three such views of one buffer:
 *   q: offset 0,                    heads hq, row_pitch (hq + 2 hk) * head_dim
 *   k: offset hq * head_dim,        heads hk, the same row_pitch
 *   v: offset (hq + hk) * head_dim, heads hk, the same row_pitch
 * (offsets in bytes: times the element size).
 * q may be NULL (then q_out too): keys and values only. q_out NULL rotates
 * q in place; otherwise q_out gets q rotated (its elements past rotary_dim
 * copied) and q is only read. k and v need cache->heads heads (GQA: q may
 * have more). Positions as for clpe_enqueue_rope with batch 1 and seq =
 * tokens, for any rotary object: a multimodal one (clpe_rope_create_mrope)
 * takes a position per stream. flags: 0 or CLPE_ROPE_INVERSE.
 * Aliasing (CLPE_ERROR_ALIASING): the caches may not overlap each other or
 * any other region of the call; q_out may not overlap q, k or v; q written
 * in place may share a buffer with k and v only token-interleaved (the
 * fused layout: the same row_pitch, each token's q, k and v apart); the
 * positions, slots and report buffers are none of the others. */
CLPE_API clpe_status clpe_enqueue_rope_kv(clpe_rope *rope, cl_command_queue queue, size_t tokens,
                                          const clpe_rope_tensor *q, const clpe_rope_tensor *q_out,
                                          const clpe_rope_tensor *k, const clpe_rope_tensor *v,
                                          const clpe_kv_cache *cache, const clpe_kv_slots *slots,
                                          const clpe_positions *positions, uint32_t flags,
                                          cl_uint num_events_in_wait_list,
                                          const cl_event *event_wait_list, cl_event *event);

/* The calls of clpe_enqueue_rope_kv on rope that the slot check refused
 * (wrote nothing), with a report buffer or without, since the object was
 * made or since the last clpe_rope_kv_refused_calls; the count then starts
 * again from 0. Blocks: waits on queue (of the object's context and
 * device) for the object's KV calls enqueued before it, then reads the
 * count. 0 for an object that has made no KV call. */
CLPE_API clpe_status clpe_rope_kv_refused_calls(clpe_rope *rope, cl_command_queue queue,
                                                uint64_t *calls);

/* The host cache of clpe_host_rope_kv: clpe_kv_cache on host memory. */
typedef struct clpe_host_kv_cache {
    void *key;
    void *value;
    clpe_dtype dtype;
    size_t num_blocks, block_size, heads, head_pitch, slot_pitch, block_pitch;
    float key_scale, value_scale; /* as clpe_kv_cache's */
    uint64_t reserved[3]; /* zero */
} clpe_host_kv_cache;

/* The exact bits of clpe_enqueue_rope_kv on host memory (tensors as for
 * clpe_host_rope with batch 1; batch_pitch ignored). A bad slot (out of
 * range, or repeated) returns CLPE_ERROR_INVALID_SLOTS and writes nothing. */
CLPE_API clpe_status clpe_host_rope_kv(const clpe_rope *rope, size_t tokens,
                                       const clpe_host_rope_tensor *q,
                                       const clpe_host_rope_tensor *q_out,
                                       const clpe_host_rope_tensor *k,
                                       const clpe_host_rope_tensor *v,
                                       const clpe_host_kv_cache *cache, const int64_t *slots,
                                       clpe_position_source source, int64_t start,
                                       const int64_t *host_positions, uint32_t flags);

/* ---- Multimodal rotary (M-RoPE) and vision rotary --------------------------
 *
 * Multimodal models give each token several positions, one per stream, and
 * share the rotary pairs among the streams. Qwen2-VL and Qwen2.5-VL
 * (transformers' modeling_qwen2_vl.py) rotate the language model's queries
 * and keys by three positions per token, temporal, height and width
 * (position_ids [3, batch, seq]; a text token has the same value in all
 * three), and mrope_section splits the pairs: pairs [0, s0) turn with the
 * temporal position, [s0, s0 + s1) with the height, the rest with the width
 * (apply_multimodal_rotary_pos_emb; its `mrope_section * 2` is the same split
 * applied to both halves of rotate_half, so with CLPE_ROPE_HALF_SPLIT pair i
 * is (i, i + rotary_dim/2) and turns by its stream's position times w_i).
 * The frequencies w_i and the amplitude are those of the rope config, with
 * any of its scalings (Qwen2VLRotaryEmbedding takes them from the same
 * rope_init_fns): CLPE_MROPE_ONE_LADDER.
 *
 * The vision tower rotates each patch by its (row, column) position
 * (rot_pos_emb's [patches, 2] positions): the first half of the pairs by the
 * row, the second by the column, and each half has a frequency ladder of its
 * own, w_j = base^(-2j / (2 * section)) for its j-th pair
 * (VisionRotaryEmbedding(head_dim / 2) indexed by both positions, then
 * apply_rotary_pos_emb_vision): CLPE_MROPE_LADDER_PER_STREAM, as
 * clpe_mrope_config_vision() sets it up.
 *
 * The arithmetic of each pair is clpe_enqueue_rope's, with the exact phase
 * of its own stream's position: float32 within 2^-22 * m * hypot(a, b) of
 * the exact rotation at every int64 position, bit-identical on every
 * conformant device and predictable by clpe_host_rope().
 */

/* Most position streams one object takes. */
#define CLPE_MROPE_MAX_STREAMS 4

typedef enum clpe_mrope_ladder {
    CLPE_MROPE_ONE_LADDER = 0,       /* w_i of the rope config over all rotary_dim/2 pairs
                                        (Qwen2-VL's language model); every scaling applies */
    CLPE_MROPE_LADDER_PER_STREAM = 1 /* each stream's pairs a ladder of their own: w_j of the
                                        rope config computed as if rotary_dim were 2 * section
                                        (Qwen2-VL's vision tower); scaling DEFAULT or LINEAR */
} clpe_mrope_ladder;

/* What a multimodal rotary object computes. */
typedef struct clpe_mrope_config {
    clpe_rope_config rope;      /* head_dim, rotary_dim, base, pairing, dtype, scaling as for
                                   clpe_rope_create (Qwen2-VL: half-split, base 1e6) */
    uint32_t streams;           /* position streams, 1 .. CLPE_MROPE_MAX_STREAMS
                                   (Qwen2-VL: 3 for text, 2 for vision) */
    uint32_t section[CLPE_MROPE_MAX_STREAMS]; /* pairs of each stream, in order; they sum to
                                   rotary_dim / 2 (Qwen2-VL 7B: mrope_section {16, 24, 24});
                                   entries from `streams` on are zero */
    clpe_mrope_ladder ladder;
    uint64_t reserved[4];       /* zero */
} clpe_mrope_config;

/* clpe_rope_config_check for a multimodal configuration: its rope part,
 * then its streams, sections and ladder ("section must sum to rotary_dim / 2
 * = 64, got 60"), as clpe_rope_create_mrope checks them. */
CLPE_API clpe_status clpe_mrope_config_check(const clpe_mrope_config *cfg, char *detail,
                                             size_t capacity);

/* Qwen2-VL's vision tower for head_dim (a multiple of 4; 80 in Qwen2-VL):
 * two streams (row, column) of head_dim / 4 pairs each, one ladder per
 * stream, base 10000, half-split, float32. */
CLPE_API clpe_mrope_config clpe_mrope_config_vision(uint32_t head_dim);

/* Create a multimodal rotary object: a clpe_rope whose pairs turn with the
 * positions of their streams, on (context, device), sharing the built
 * program of an encoder, or for the host emulation only. The rope part is
 * checked as clpe_rope_create checks it; invalid streams or sections give
 * CLPE_ERROR_INVALID_ROPE, an unknown ladder CLPE_ERROR_INVALID_CONFIG, a
 * scaling the ladder does not take CLPE_ERROR_INVALID_SCALING. Release it
 * with clpe_rope_release. Every rotary call takes it: rotation in place
 * (clpe_enqueue_rope), the cos/sin cache (clpe_enqueue_rope_cache_at),
 * rotation into a KV cache, their host emulations and the device words.
 * Given the positions of CLPE_POSITIONS_STREAMS or _STREAMS_TOKEN_FIRST,
 * each pair turns with its stream's position; given one position per token
 * (a start, per-sequence starts, ids), every stream has it (Qwen2-VL's rule
 * for text: t = h = w). */
CLPE_API clpe_rope *clpe_rope_create_mrope(cl_context context, cl_device_id device,
                                           const clpe_mrope_config *cfg, clpe_build_log *log,
                                           clpe_status *status);
CLPE_API clpe_rope *clpe_rope_create_mrope_like(const clpe_encoder *like,
                                                const clpe_mrope_config *cfg,
                                                clpe_status *status);
CLPE_API clpe_rope *clpe_rope_create_mrope_host(const clpe_mrope_config *cfg,
                                                clpe_status *status);

/* The stream each of the first `count` pairs turns with (count <=
 * rotary_dim / 2; 0 for every pair of a plain rotary object) and, if
 * streams is non-NULL, the object's number of streams (1 for a plain one).
 * The frequencies come from clpe_rope_get_frequencies. */
CLPE_API clpe_status clpe_rope_get_streams(const clpe_rope *rope, uint32_t *stream_of_pair,
                                           size_t count, uint32_t *streams);

/* The cos/sin cache of n tokens at any positions (batch 1, seq n of
 * positions; NULL: start 0): cos and sin each [n, rotary_dim] laid out as
 * clpe_enqueue_rope_cache lays them, each pair's value from its stream's
 * position: for a multimodal object, the cos and sin that
 * apply_multimodal_rotary_pos_emb (or apply_rotary_pos_emb_vision)
 * multiplies by, after its section select. */
CLPE_API clpe_status clpe_enqueue_rope_cache_at(clpe_rope *rope, cl_command_queue queue,
                                                size_t n, const clpe_positions *positions,
                                                const clpe_tensor *cos, const clpe_tensor *sin,
                                                cl_uint num_events_in_wait_list,
                                                const cl_event *event_wait_list,
                                                cl_event *event);

/* The exact bits of clpe_enqueue_rope_cache_at: n rows of row_pitch
 * elements (0 means rotary_dim) into cos and sin; positions as for
 * clpe_host_rope with batch 1 and seq n. */
CLPE_API clpe_status clpe_host_rope_cache_at(const clpe_rope *rope, size_t n,
                                             clpe_position_source source, int64_t start,
                                             const int64_t *host_positions, void *cos, void *sin,
                                             size_t row_pitch);

/* ---- Device selection --------------------------------------------------- */

/* Pick a device by selector, the same rule every clpe tool uses:
 *   NULL or ""        the environment variable CLPE_DEVICE, if set and non-empty;
 *                     otherwise the first GPU, else the first device;
 *   "3"               the device with that index, counting every device of
 *                     every platform in enumeration order from 0;
 *   "gpu" / "cpu"     the first device of that type;
 *   any other text    the first device whose platform name, device name or
 *                     vendor contains it, ignoring case.
 * Returns CLPE_ERROR_NO_DEVICE when nothing matches. */
CLPE_API clpe_status clpe_select_device(const char *selector, cl_platform_id *platform,
                                        cl_device_id *device);

/* ---- Introspection for language bindings ------------------------------- */

/* The library's own account of its ABI, so that a binding written by hand
 * (Python ctypes, for one) can check its struct layouts and constant values
 * against the build it loaded instead of corrupting memory silently. */
typedef enum clpe_abi_kind {
    CLPE_ABI_TYPE = 0,     /* a public type: size = sizeof(type) */
    CLPE_ABI_FIELD = 1,    /* "struct.field": offset and size of the field */
    CLPE_ABI_CONSTANT = 2  /* an enumerator or #define: value */
} clpe_abi_kind;

/* One line of the table. Built from fixed-width members so that a binding
 * can read it before it trusts anything else; the table's first entries
 * describe clpe_abi_entry itself. */
typedef struct clpe_abi_entry {
    const char *name;  /* "clpe_config", "clpe_config.d", "CLPE_FLAG_PADDING_ROW" */
    int64_t value;     /* CLPE_ABI_CONSTANT: the value; else 0 */
    uint64_t offset;   /* CLPE_ABI_FIELD: byte offset in its struct; else 0 */
    uint64_t size;     /* CLPE_ABI_TYPE and CLPE_ABI_FIELD: size in bytes; else 0 */
    int32_t kind;      /* a clpe_abi_kind */
    uint32_t reserved; /* zero */
} clpe_abi_entry;

/* Every public type, every field of every public struct (as declared in
 * this header, reserved fields included) and every constant, in a static
 * table; *count receives the number of entries. Never free it. */
CLPE_API const clpe_abi_entry *clpe_abi_entries(size_t *count);

/* ---- Device tuning -------------------------------------------------------- */

/* The device-dependent choices the library makes for one device: a row of
 * its tuning table (keyed by device type, vendor, and whether the device
 * asks for float vectors; a default row serves any other device), with
 * the environment's tuning knobs applied (CLPE_PAIRS_PER_ITEM,
 * CLPE_ROWS_PER_ITEM, CLPE_WORK_GROUP_SIZE, CLPE_TILE_WALK). None of them
 * changes an output bit. Filled by the library; reserved comes back zero. */
typedef struct clpe_device_tuning {
    char row[32];                    /* the table row's name, e.g. "cpu-amd", "gpu" */
    uint32_t pairs_per_item;         /* pairs per work-item of the 32- and 64-bit
                                        kernels: 1 (one pair, the GPU shape) or 64
                                        (the vector shape) */
    uint32_t pairs_per_item_rows16;  /* the same for f16 and bf16 table, add and
                                        gather: 1 or 512 */
    uint32_t pairs_per_item_rope16;  /* the same for f16 and bf16 rotary: 2 (two
                                        adjacent pairs, so loads and stores move
                                        32-bit words, in the GPU shape) or 128 */
    uint32_t rows_per_item;          /* rows one work-item walks with the odometer */
    uint32_t work_group_size;        /* work-group size asked for along the pairs
                                        (the kernel's limit may lower it) */
    uint32_t tile_walk;              /* 1: float32 calls whose sequences share their
                                        positions may walk tiles (vector shape) */
    uint32_t tile_pairs;             /* pairs a work-item of the tile walk spans */
    uint32_t ahead_steps;            /* steps of a walk asked for ahead (prefetch) by
                                        a work-item serving 4 sequences or more:
                                        32- and 64-bit storage */
    uint32_t ahead_steps16;          /* the same for the 16-bit row kernels */
    uint32_t prefetch_for_write;     /* 1: lines to be written are asked for for
                                        writing (x86 vector shape only) */
    uint32_t bf16_halves;            /* 1: bfloat16 results rounded on their 16-bit
                                        halves, 32 at a time (x86 vector shape
                                        with AVX-512BW only) */
    uint32_t reserved32;
    uint64_t reserved[3];
} clpe_device_tuning;

/* The tuning in effect for device (what an encoder or rotary object
 * created for it now would use). CLPE_ERROR_NULL_POINTER for a NULL
 * argument; an OpenCL error if the device cannot be queried. */
CLPE_API clpe_status clpe_get_device_tuning(cl_device_id device, clpe_device_tuning *tuning);

#ifdef __cplusplus
}
#endif
#endif /* CLPE_H */
