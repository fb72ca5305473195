/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_interface.h - what the host library and the kernels must agree on,
 * written once: the argument list of the row kernels, the position sources,
 * the flags and the operations. Included by the kernels (OpenCL C) and by
 * the library (host C), so nothing here is repeated by hand on either side.
 */
#ifndef CLPE_INTERFACE_H
#define CLPE_INTERFACE_H

/* Position sources, as clpe_position_source in clpe.h. */
#define PE_POS_START 0
#define PE_POS_PER_SEQUENCE 1
#define PE_POS_IDS 2
/* rotary only: a position per stream, [streams, batch, seq] or [batch, seq,
 * streams] (the host passes the pitches) */
#define PE_POS_STREAMS 3
#define PE_POS_STREAMS_TOKEN_FIRST 4

/* Flags, as CLPE_FLAG_* in clpe.h (the host checks they are equal). */
#define PE_FLAG_ODD_D_ZERO_COLUMN 1u
#define PE_FLAG_PADDING_ROW 2u
#define PE_FLAG_ODD_D_HALF_PAIR 4u
/* Set by the library only, never a CLPE_FLAG_*: the launch walks tiles
 * (clpe_rows.cl, pe_tile_walk), each work-item spanning PE_TILE_PAIRS_F32
 * pairs (32 float16 groups; float32 only). */
#define PE_FLAG_TILE_WALK 0x100u
#ifndef PE_TILE_PAIRS_F32
#define PE_TILE_PAIRS_F32 512
#endif

/* What a row kernel does with each row. */
#define PE_OP_TABLE 0  /* out = PE */
#define PE_OP_ADD 1    /* out = in * scale + PE          (in: x) */
#define PE_OP_GATHER 2 /* out = in[id] * scale + PE      (in: the embedding table) */

/*
 * The arguments of every row kernel (clpe_table_*, clpe_add_*,
 * clpe_gather_*), in order: X(NAME, KIND, name). The host sets argument
 * PE_ARG_<NAME>; the kernels declare their parameters from the same list,
 * so the two cannot drift apart. Kinds:
 *   OUT, IN     the storage type's buffers (written; read)
 *   IDS, BAD    int32 token ids; the uint[2] bad-id report (may be NULL)
 *   POS         int64 positions (may be NULL)
 *   TWH, TWL    tuning words: top 64 bits; the rest (uint for 96-bit words,
 *               ulong for the 128-bit words of float64)
 *   SCALE       float, or double for float64
 *   U32, U64, I64  uint, ulong, long
 * Element counts that vary per launch are 32-bit: the host splits a call
 * into launches whose every index fits (the *_BASE offsets carry the rest).
 */
#define PE_ROW_KERNEL_ARGS(X, SEP)                                                       \
    X(OUT, OUT, out) SEP()                      /* output tensor */                      \
    X(IN, IN, in) SEP()                         /* x, or the embedding table */          \
    X(IDS, IDS, ids) SEP()                      /* gather: token ids */                  \
    X(BAD_IDS, BAD, bad_ids) SEP()              /* gather: bad-id report or NULL */      \
    X(POSITIONS, POS, positions) SEP()          /* per-sequence starts or ids */         \
    X(TW_HI, TWH, tw_hi) SEP()                                                           \
    X(TW_LO, TWL, tw_lo) SEP()                                                           \
    X(OUT_BASE, U64, out_base) SEP()            /* elements to this launch's [0][0][0] */ \
    X(IN_BASE, U64, in_base) SEP()                                                       \
    X(IDS_BASE, U64, ids_base) SEP()            /* elements to this launch's first id */  \
    X(POSITIONS_BASE, U64, positions_base) SEP()                                         \
    X(FLAT_BASE, U64, flat_base) SEP()          /* b * seq + s of this launch's [0][0] */ \
    X(START, I64, start) SEP()                  /* START: position of launch row 0;     \
                                                   PER_SEQUENCE: the launch's first row */ \
    X(PADDING_POSITION, I64, padding_position) SEP()                                     \
    X(SCALE, SCALE, scale) SEP()                                                         \
    X(OUT_ROW_PITCH, U32, out_row_pitch) SEP()                                           \
    X(OUT_BATCH_PITCH, U32, out_batch_pitch) SEP()                                       \
    X(IN_ROW_PITCH, U32, in_row_pitch) SEP()                                             \
    X(IN_BATCH_PITCH, U32, in_batch_pitch) SEP()                                         \
    X(D, U32, d) SEP()                          /* slots per row */                      \
    X(N_PAIRS, U32, n_pairs) SEP()              /* (sin, cos) pairs computed */          \
    X(N_COS, U32, n_cos) SEP()                  /* pairs whose cosine is stored */       \
    X(SIN_OFF, U32, sin_off) SEP()              /* slot of pair 0's sine */              \
    X(COS_OFF, U32, cos_off) SEP()              /* slot of pair 0's cosine */            \
    X(STRIDE, U32, stride) SEP()                /* slots between pairs: 2 or 1 */        \
    X(FLAGS, U32, flags) SEP()                                                           \
    X(VOCAB, U32, vocab) SEP()                  /* gather: rows of the table */          \
    X(SEQ, U32, seq) SEP()                      /* ids and positions per sequence */     \
    X(ROWS, U32, rows) SEP()                    /* rows of this launch */                \
    X(BATCH, U32, batch) SEP()                  /* sequences of this launch */           \
    X(ROWS_PER_ITEM, U32, rows_per_item) SEP()                                           \
    X(POS_SOURCE, U32, pos_source)

#define PE_ARG_ENUM_ENTRY(NAME, KIND, name) PE_ARG_##NAME
#define PE_COMMA() ,
enum pe_row_kernel_arg { PE_ROW_KERNEL_ARGS(PE_ARG_ENUM_ENTRY, PE_COMMA), PE_ROW_ARG_COUNT };

/* Where a rotary launch's positions come from, the same in every rotary
 * kernel: the source (CLPE_POSITIONS_*), and for position streams the
 * elements between streams and between tokens, and the pairs at which
 * each stream ends: pair i turns with stream (i >= end0) + (i >= end1) +
 * (i >= end2). */
#define PE_POSITION_SOURCE_ARGS(X, SEP)                                                  \
    X(POS_SOURCE, U32, pos_source) SEP()                                                 \
    X(STREAM_PITCH, U64, stream_pitch) SEP()                                             \
    X(TOKEN_PITCH, U32, token_pitch) SEP()                                               \
    X(END0, U32, end0) SEP()                                                             \
    X(END1, U32, end1) SEP()                                                             \
    X(END2, U32, end2)

/*
 * The arguments of the rotary kernels clpe_rope_*: queries q and keys k
 * (k may be NULL) rotated in place, every head of a token by the same
 * angles. Pair i of a head is (a, b) at elements (i * stride, i * stride +
 * partner) from the head's start: stride 1, partner rotary_dim/2 for the
 * half-split pairing; stride 2, partner 1 for the interleaved one.
 */
#define PE_ROPE_KERNEL_ARGS(X, SEP)                                                      \
    X(Q, OUT, q) SEP()                                                                   \
    X(K, OUT, k) SEP()                          /* NULL: queries only */                 \
    X(POSITIONS, POS, positions) SEP()                                                   \
    X(TW_HI, TWH, tw_hi) SEP()                                                           \
    X(TW_LO, TWL, tw_lo) SEP()                                                           \
    X(Q_BASE, U64, q_base) SEP()                /* elements to this launch's first token */ \
    X(K_BASE, U64, k_base) SEP()                                                         \
    X(POSITIONS_BASE, U64, positions_base) SEP()                                         \
    X(START, I64, start) SEP()                  /* as for the row kernels */             \
    X(AMPLITUDE, SCALE, amplitude) SEP()        /* cos and sin are multiplied by it */   \
    X(Q_HEADS, U32, q_heads) SEP()                                                       \
    X(Q_HEAD_PITCH, U32, q_head_pitch) SEP()                                             \
    X(Q_ROW_PITCH, U32, q_row_pitch) SEP()                                               \
    X(Q_BATCH_PITCH, U32, q_batch_pitch) SEP()                                           \
    X(K_HEADS, U32, k_heads) SEP()                                                       \
    X(K_HEAD_PITCH, U32, k_head_pitch) SEP()                                             \
    X(K_ROW_PITCH, U32, k_row_pitch) SEP()                                               \
    X(K_BATCH_PITCH, U32, k_batch_pitch) SEP()                                           \
    X(N_PAIRS, U32, n_pairs) SEP()              /* rotary_dim / 2 */                     \
    X(PARTNER, U32, partner) SEP()                                                       \
    X(STRIDE, U32, stride) SEP()                                                         \
    X(PAIR_WORDS, U32, pair_words) SEP()        /* 1: pairs adjacent and aligned */      \
    X(INVERSE, U32, inverse) SEP()              /* 1: rotate by -theta */                \
    X(SEQ, U32, seq) SEP()                                                               \
    X(ROWS, U32, rows) SEP()                                                             \
    X(BATCH, U32, batch) SEP()                                                           \
    X(ROWS_PER_ITEM, U32, rows_per_item) SEP()                                           \
    PE_POSITION_SOURCE_ARGS(X, SEP)

#define PE_ROPE_ENUM_ENTRY(NAME, KIND, name) PE_ROPE_ARG_##NAME
enum pe_rope_kernel_arg { PE_ROPE_KERNEL_ARGS(PE_ROPE_ENUM_ENTRY, PE_COMMA), PE_ROPE_ARG_COUNT };

/* The arguments of clpe_rope_cache_*: the cos and sin tables [rows,
 * rotary_dim] of positions start .. start + rows - 1, or of the positions
 * of rows tokens (a source as for clpe_rope_*, one sequence); pair i's value goes to
 * elements i * stride and i * stride + partner of a row. */
#define PE_ROPE_CACHE_ARGS(X, SEP)                                                       \
    X(COS, OUT, cos_out) SEP()                                                           \
    X(SIN, OUT, sin_out) SEP()                                                           \
    X(POSITIONS, POS, positions) SEP()          /* NULL: positions from start */         \
    X(TW_HI, TWH, tw_hi) SEP()                                                           \
    X(TW_LO, TWL, tw_lo) SEP()                                                           \
    X(COS_BASE, U64, cos_base) SEP()                                                     \
    X(SIN_BASE, U64, sin_base) SEP()                                                     \
    X(POSITIONS_BASE, U64, positions_base) SEP()                                         \
    X(START, I64, start) SEP()                                                           \
    X(AMPLITUDE, SCALE, amplitude) SEP()                                                 \
    X(COS_ROW_PITCH, U32, cos_row_pitch) SEP()                                           \
    X(SIN_ROW_PITCH, U32, sin_row_pitch) SEP()                                           \
    X(N_PAIRS, U32, n_pairs) SEP()                                                       \
    X(PARTNER, U32, partner) SEP()                                                       \
    X(STRIDE, U32, stride) SEP()                                                         \
    X(ROWS, U32, rows) SEP()                                                             \
    X(ROWS_PER_ITEM, U32, rows_per_item) SEP()                                           \
    PE_POSITION_SOURCE_ARGS(X, SEP)

#define PE_ROPE_CACHE_ENUM_ENTRY(NAME, KIND, name) PE_ROPE_CACHE_ARG_##NAME
enum pe_rope_cache_arg { PE_ROPE_CACHE_ARGS(PE_ROPE_CACHE_ENUM_ENTRY, PE_COMMA), PE_ROPE_CACHE_ARG_COUNT };

/* clpe_pad_positions(ids, ids_base, positions, positions_base, seq, pad_id,
 * first_position, pad_position): one work-item per sequence. */
#define PE_PAD_POSITIONS_ARGS(X, SEP)                                                    \
    X(IDS, IDS, ids) SEP()                                                               \
    X(IDS_BASE, U64, ids_base) SEP()                                                     \
    X(POSITIONS_OUT, POS_OUT, positions) SEP()                                           \
    X(POSITIONS_BASE, U64, positions_base) SEP()                                         \
    X(SEQ, U64, seq) SEP()                                                               \
    X(PAD_ID, I32, pad_id) SEP()                                                         \
    X(FIRST_POSITION, I64, first_position) SEP()                                         \
    X(PAD_POSITION, I64, pad_position)

#define PE_PAD_ENUM_ENTRY(NAME, KIND, name) PE_PAD_ARG_##NAME
enum pe_pad_kernel_arg { PE_PAD_POSITIONS_ARGS(PE_PAD_ENUM_ENTRY, PE_COMMA), PE_PAD_ARG_COUNT };

#endif /* CLPE_INTERFACE_H */
