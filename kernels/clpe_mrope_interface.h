/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_mrope_interface.h - what the host library and the multimodal rotary
 * kernels (clpe_mrope.cl) agree on: their argument lists, written once as
 * X(NAME, KIND, name) with the kinds of clpe_interface.h. Included by the
 * kernels (OpenCL C) and by the library (host C).
 *
 * Pair i of a head is (a, b) at elements (i * stride, i * stride + partner),
 * as for clpe_rope_*. It turns with stream (i >= end0) + (i >= end1) +
 * (i >= end2): the section ends, n_pairs for the streams that are not there.
 * Token t = b * seq + s has its position of stream j at element
 * positions_base + j * stream_pitch + (t - t0) * token_pitch, t0 the
 * launch's first token.
 */
#ifndef CLPE_MROPE_INTERFACE_H
#define CLPE_MROPE_INTERFACE_H

#define PE_MROPE_KERNEL_ARGS(X, SEP)                                                     \
    X(Q, OUT, q) SEP()                                                                   \
    X(K, OUT, k) SEP()                          /* NULL: queries only */                 \
    X(POSITIONS, POS, positions) SEP()                                                   \
    X(TW_HI, TWH, tw_hi) SEP()                                                           \
    X(TW_LO, TWL, tw_lo) SEP()                                                           \
    X(Q_BASE, U64, q_base) SEP()                /* elements to this launch's first token */ \
    X(K_BASE, U64, k_base) SEP()                                                         \
    X(POSITIONS_BASE, U64, positions_base) SEP()                                         \
    X(STREAM_PITCH, U64, stream_pitch) SEP()                                             \
    X(TOKEN_PITCH, U64, token_pitch) SEP()                                               \
    X(SEQ, U64, seq) SEP()                      /* tokens per sequence of the call */    \
    X(AMPLITUDE, SCALE, amplitude) SEP()                                                 \
    X(Q_HEADS, U32, q_heads) SEP()                                                       \
    X(Q_HEAD_PITCH, U32, q_head_pitch) SEP()                                             \
    X(Q_ROW_PITCH, U32, q_row_pitch) SEP()                                               \
    X(Q_BATCH_PITCH, U32, q_batch_pitch) SEP()                                           \
    X(K_HEADS, U32, k_heads) SEP()                                                       \
    X(K_HEAD_PITCH, U32, k_head_pitch) SEP()                                             \
    X(K_ROW_PITCH, U32, k_row_pitch) SEP()                                               \
    X(K_BATCH_PITCH, U32, k_batch_pitch) SEP()                                           \
    X(N_PAIRS, U32, n_pairs) SEP()                                                       \
    X(PARTNER, U32, partner) SEP()                                                       \
    X(STRIDE, U32, stride) SEP()                                                         \
    X(INVERSE, U32, inverse) SEP()              /* 1: rotate by -theta */                \
    X(END0, U32, end0) SEP()                                                             \
    X(END1, U32, end1) SEP()                                                             \
    X(END2, U32, end2) SEP()                                                             \
    X(ROWS, U32, rows) SEP()                    /* tokens per sequence in this launch */ \
    X(BATCH, U32, batch) SEP()                  /* sequences of this launch */           \
    X(ROWS_PER_ITEM, U32, rows_per_item)

#define PE_MROPE_ENUM_ENTRY(NAME, KIND, name) PE_MROPE_ARG_##NAME
enum pe_mrope_kernel_arg {
    PE_MROPE_KERNEL_ARGS(PE_MROPE_ENUM_ENTRY, PE_COMMA),
    PE_MROPE_ARG_COUNT
};

/* clpe_mrope_cache_*: rows of cos and sin for tokens t0 .. t0 + rows - 1. */
#define PE_MROPE_CACHE_ARGS(X, SEP)                                                      \
    X(COS, OUT, cos_out) SEP()                                                           \
    X(SIN, OUT, sin_out) SEP()                                                           \
    X(POSITIONS, POS, positions) SEP()                                                   \
    X(TW_HI, TWH, tw_hi) SEP()                                                           \
    X(TW_LO, TWL, tw_lo) SEP()                                                           \
    X(COS_BASE, U64, cos_base) SEP()                                                     \
    X(SIN_BASE, U64, sin_base) SEP()                                                     \
    X(POSITIONS_BASE, U64, positions_base) SEP()                                         \
    X(STREAM_PITCH, U64, stream_pitch) SEP()                                             \
    X(TOKEN_PITCH, U64, token_pitch) SEP()                                               \
    X(AMPLITUDE, SCALE, amplitude) SEP()                                                 \
    X(COS_ROW_PITCH, U32, cos_row_pitch) SEP()                                           \
    X(SIN_ROW_PITCH, U32, sin_row_pitch) SEP()                                           \
    X(N_PAIRS, U32, n_pairs) SEP()                                                       \
    X(PARTNER, U32, partner) SEP()                                                       \
    X(STRIDE, U32, stride) SEP()                                                         \
    X(END0, U32, end0) SEP()                                                             \
    X(END1, U32, end1) SEP()                                                             \
    X(END2, U32, end2) SEP()                                                             \
    X(ROWS, U32, rows) SEP()                                                             \
    X(ROWS_PER_ITEM, U32, rows_per_item)

#define PE_MROPE_CACHE_ENUM_ENTRY(NAME, KIND, name) PE_MROPE_CACHE_ARG_##NAME
enum pe_mrope_cache_arg {
    PE_MROPE_CACHE_ARGS(PE_MROPE_CACHE_ENUM_ENTRY, PE_COMMA),
    PE_MROPE_CACHE_ARG_COUNT
};

#endif /* CLPE_MROPE_INTERFACE_H */
