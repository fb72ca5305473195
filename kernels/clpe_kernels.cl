/*
 * clpe_kernels.cl - position encoding kernels (OpenCL C 1.2).
 *
 * Launch shape, shared by the table, add and gather kernels:
 *   dimension 0: a group of PE_W (1 or 8) consecutive pairs i0 .. i0+PE_W-1
 *                (padded up to the work-group size; extra work-items
 *                return at once);
 *   dimension 1: a block of `rows_per_item` consecutive rows s of one
 *                sequence, starting at row s0 of this launch;
 *   dimension 2: sequence b, counted from b0 of this launch.
 * One work-item owns PE_W pairs (2 * PE_W values) in several consecutive
 * rows. On CPUs PE_W is 8 and they are computed as one float8 (explicit
 * vectors: PoCL's work-item-loop vectoriser gives up on this code, and the
 * float8 path measured about 5x faster than one pair per work-item); on
 * GPUs, which run work-items in lanes already, PE_W is 1.
 * Between rows it advances the phase with one 96-bit add (the odometer)
 * instead of multiplying again: cheaper, and bit-identical because the
 * integer arithmetic is exact. Neighbouring work-items write neighbouring
 * groups of the same row, so stores are contiguous. A group that would run
 * past d/2 (d/2 not a multiple of PE_W) takes the scalar path, which also
 * serves float64.
 *
 * The host splits large problems into several launches (s0, b0), so every
 * index here is 64-bit.
 *
 * Every storage type computes in float32 (float64 for f64) and rounds once
 * to storage at the end; the host emulation (host/emulate.c) does the same.
 * Add and gather compute x * scale, rounded, then + PE, rounded: exactly the
 * separate multiply and add an unfused pipeline performs, so fusing changes
 * no bit (an fma would be a hair more accurate but would not match).
 * Contraction of a*b+c into fma is off: the host must see exactly the
 * operations written in clpe_phase.h.
 */
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#include "clpe_phase.h"

/* Pairs per work-item, set by the library per device (-DPE_W=1 or 8): 8
 * uses the float8 path, 1 the scalar one. */
#ifndef PE_W
#define PE_W 8
#endif

#define PE_CAT_(a, b) a##b
#define PE_CAT(a, b) PE_CAT_(a, b)

#define PE_POS_START 0
#define PE_POS_PER_SEQUENCE 1
#define PE_POS_IDS 2

/* What each kernel does with a row. */
#define PE_OP_TABLE 0
#define PE_OP_ADD 1
#define PE_OP_GATHER 2

/* Flags, as CLPE_FLAG_* in clpe.h. */
#define PE_FLAG_ODD_D_ZERO_COLUMN 1u
#define PE_FLAG_PADDING_ROW 2u

/* ---- storage types -------------------------------------------------------
 * Scalar and vector loads to the arithmetic type, stores with one rounding
 * (round to nearest even). k counts elements from p. */
#define LOAD_f32(p, k) ((p)[k])
#define STORE_f32(p, k, v) ((p)[k] = (v))
#define LOAD_f16(p, k) vload_half((k), (p))
#define STORE_f16(p, k, v) vstore_half_rte((v), (k), (p))
#define LOAD_bf16(p, k) pe_bf16_to_float((uint)(p)[k])
#define STORE_bf16(p, k, v) ((p)[k] = (ushort)pe_float_to_bf16(v))
#define LOAD_f64(p, k) ((p)[k])
#define STORE_f64(p, k, v) ((p)[k] = (v))

/* A (sin, cos) pair at slots k, k+1 (the interleaved layout): one 2-vector
 * access instead of two scalar ones. */
#define LOAD2_f32(p, k) vload2(0, (p) + (k))
#define STORE2_f32(p, k, v) vstore2((v), 0, (p) + (k))
#define LOAD2_f16(p, k) vload_half2(0, (p) + (k))
#define STORE2_f16(p, k, v) vstore_half2_rte((v), 0, (p) + (k))
#define LOAD2_bf16(p, k) as_float2(convert_uint2(vload2(0, (p) + (k))) << 16)
#define STORE2_bf16(p, k, v) vstore2((ushort2)((ushort)pe_float_to_bf16((v).x),                 \
                                               (ushort)pe_float_to_bf16((v).y)),                \
                                     0, (p) + (k))
#define LOAD2_f64(p, k) vload2(0, (p) + (k))
#define STORE2_f64(p, k, v) vstore2((v), 0, (p) + (k))

#define VLOAD8_f32(p, k) vload8(0, (p) + (k))
#define VSTORE8_f32(p, k, v) vstore8((v), 0, (p) + (k))
#define VLOAD16_f32(p, k) vload16(0, (p) + (k))
#define VSTORE16_f32(p, k, v) vstore16((v), 0, (p) + (k))
#define VLOAD8_f16(p, k) vload_half8(0, (p) + (k))
#define VSTORE8_f16(p, k, v) vstore_half8_rte((v), 0, (p) + (k))
#define VLOAD16_f16(p, k) vload_half16(0, (p) + (k))
#define VSTORE16_f16(p, k, v) vstore_half16_rte((v), 0, (p) + (k))
#define VLOAD8_bf16(p, k) as_float8(convert_uint8(vload8(0, (p) + (k))) << 16)
#define VSTORE8_bf16(p, k, v) vstore8(pe_bf16_8(v), 0, (p) + (k))
#define VLOAD16_bf16(p, k) as_float16(convert_uint16(vload16(0, (p) + (k))) << 16)
#define VSTORE16_bf16(p, k, v) vstore16(pe_bf16_16(v), 0, (p) + (k))

/* pe_float_to_bf16 on vectors (NaN stays NaN, quietened). */
inline ushort8 pe_bf16_8(float8 f)
{
    uint8 u = as_uint8(f);
    uint8 rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    return convert_ushort8(select(rounded, (u >> 16) | 0x40u, (u & 0x7FFFFFFFu) > 0x7F800000u));
}
inline ushort16 pe_bf16_16(float16 f)
{
    uint16 u = as_uint16(f);
    uint16 rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    return convert_ushort16(select(rounded, (u >> 16) | 0x40u, (u & 0x7FFFFFFFu) > 0x7F800000u));
}

/* (s0, c0, s1, c1, ...): the interleaved layout of eight pairs. */
inline float16 pe_zip8(float8 s, float8 c)
{
    return (float16)(s.s0, c.s0, s.s1, c.s1, s.s2, c.s2, s.s3, c.s3, s.s4, c.s4, s.s5, c.s5,
                     s.s6, c.s6, s.s7, c.s7);
}

/* pe_phase and pe_phase_low for eight tuning words at once, as the three
 * 32-bit words of the 96-bit accumulator (top first). */
inline void pe_phase8(ulong p, ulong8 f_hi, uint8 f_lo, uint8 *w2, uint8 *w1, uint8 *w0)
{
    ulong hi_part = (p >> 32) | (((long)p < 0) ? 0xFFFFFFFF00000000UL : 0UL);
    ulong lo_part = p & 0xFFFFFFFFUL;
    ulong8 flo = convert_ulong8(f_lo);
    ulong8 ph = p * f_hi + hi_part * flo + ((lo_part * flo) >> 32);
    *w2 = convert_uint8(ph >> 32);
    *w1 = convert_uint8(ph);
    *w0 = convert_uint8(p * flo);
}

/* The odometer's tick on 32-bit words: the 96-bit phase accumulator
 * (W2, W1, W0) += the tuning word (F2, F1, F0), carries included. A
 * comparison gives 1 (scalar) or all ones (vector) where true; `& 1u` after
 * the bit cast makes either a carry of 1. */
#define PE_TICK(U32, W2, W1, W0, F2, F1, F0, AS_U32)                                           \
    do {                                                                                       \
        U32 pe_n0 = (W0) + (F0);                                                               \
        U32 pe_t1 = (W1) + (F1);                                                               \
        U32 pe_c1 = AS_U32(pe_t1 < (W1)) & 1u;                                                 \
        U32 pe_n1 = pe_t1 + (AS_U32(pe_n0 < (W0)) & 1u);                                       \
        (W2) += (F2) + pe_c1 + (AS_U32(pe_n1 < pe_t1) & 1u);                                   \
        (W1) = pe_n1;                                                                          \
        (W0) = pe_n0;                                                                          \
    } while (0)

/* ---- the vector path: PE_W pairs of one row ------------------------------
 * VROW_<dtype>(...) for the 32- and 16-bit types; f64 has none. */
#define PE_VECTOR_ROW(NAME)                                                                    \
    {                                                                                          \
        float8 sv, cv;                                                                         \
        pe_sincos8(vw2, vw1, &sv, &cv);                                                        \
        if (zero_row) {                                                                        \
            sv = (float8)(0.0f);                                                               \
            cv = (float8)(0.0f);                                                               \
        }                                                                                      \
        if (op != PE_OP_TABLE) {                                                               \
            float8 xs = (float8)(0.0f), xc = (float8)(0.0f);                                   \
            if (xrow) {                                                                        \
                if (split) {                                                                   \
                    xs = VLOAD8_##NAME(xrow, i0);                                              \
                    xc = VLOAD8_##NAME(xrow, half_d + i0);                                     \
                } else {                                                                       \
                    float16 xv = VLOAD16_##NAME(xrow, 2 * i0);                                 \
                    xs = xv.even;                                                              \
                    xc = xv.odd;                                                               \
                }                                                                              \
            }                                                                                  \
            sv = xs * scale + sv;                                                              \
            cv = xc * scale + cv;                                                              \
        }                                                                                      \
        if (split) {                                                                           \
            VSTORE8_##NAME(orow, i0, sv);                                                      \
            VSTORE8_##NAME(orow, half_d + i0, cv);                                             \
        } else {                                                                               \
            VSTORE16_##NAME(orow, 2 * i0, pe_zip8(sv, cv));                                    \
        }                                                                                      \
    }
#define VROW_f32 PE_VECTOR_ROW(f32)
#define VROW_f16 PE_VECTOR_ROW(f16)
#define VROW_bf16 PE_VECTOR_ROW(bf16)
#define VROW_f64 {}
#define VEC_f32 1
#define VEC_f16 1
#define VEC_bf16 1
#define VEC_f64 0

/* ---- the scalar path: one pair of one row --------------------------------
 * Phase words (W2, W1): the top 64 bits of the accumulator. */
#define SINCOS_float(W2, W1, s, c) pe_sincos32((W2), (W1), (s), (c))
#define SINCOS_double(W2, W1, s, c) pe_sincos_f64(((ulong)(W2) << 32) | (W1), (s), (c))
#define PE_SCALAR_PAIR(NAME, R, I, W2, W1)                                                     \
    {                                                                                          \
        R sv, cv;                                                                              \
        SINCOS_##R((W2), (W1), &sv, &cv);                                                      \
        if (zero_row) {                                                                        \
            sv = 0;                                                                            \
            cv = 0;                                                                            \
        }                                                                                      \
        if (split) {                                                                           \
            if (op != PE_OP_TABLE) {                                                           \
                R xs = xrow ? (R)LOAD_##NAME(xrow, (I)) : (R)0;                                \
                R xc = xrow ? (R)LOAD_##NAME(xrow, half_d + (I)) : (R)0;                       \
                sv = xs * scale + sv;                                                          \
                cv = xc * scale + cv;                                                          \
            }                                                                                  \
            STORE_##NAME(orow, (I), sv);                                                       \
            STORE_##NAME(orow, half_d + (I), cv);                                              \
        } else {                                                                               \
            PE_CAT(R, 2) v = (PE_CAT(R, 2))(sv, cv);                                           \
            if (op != PE_OP_TABLE) {                                                           \
                PE_CAT(R, 2) xv = xrow ? LOAD2_##NAME(xrow, 2 * (I)) : (PE_CAT(R, 2))(0);      \
                v = xv * scale + v;                                                            \
            }                                                                                  \
            STORE2_##NAME(orow, 2 * (I), v);                                                   \
        }                                                                                      \
    }

/*
 * PE_DEFINE_KERNELS(name, T, R): the table, add and gather kernels for
 * storage type T (name f32, f16, bf16, f64) computing in R (float or double).
 * The row body is one function with `op` a compile-time constant at each
 * call, so each kernel is a specialised copy.
 */
#define PE_DEFINE_KERNELS(NAME, T, R)                                                          \
    inline void pe_rows_##NAME(                                                                \
        const int op, global const T *x, global T *out, global const int *ids, ulong ids_off,  \
        ulong vocab, global uint *bad_ids, ulong x_off, ulong x_row_pitch,                     \
        ulong x_batch_pitch, ulong out_off, ulong out_row_pitch, ulong out_batch_pitch,       \
        R scale, uint d, uint half_d, uint split, uint flags, long padding_position,           \
        ulong seq, ulong s0, ulong s_end, ulong b0, uint rows_per_item, uint pos_source,       \
        long start, global const long *positions, ulong positions_off,                         \
        global const ulong *tw_hi, global const uint *tw_lo)                                   \
    {                                                                                          \
        uint i0 = (uint)get_global_id(0) * PE_W;                                               \
        if (i0 >= half_d)                                                                      \
            return;                                                                            \
        ulong s_begin = s0 + (ulong)get_global_id(1) * rows_per_item;                          \
        if (s_begin >= s_end)                                                                  \
            return;                                                                            \
        ulong s_stop = min(s_begin + (ulong)rows_per_item, s_end);                             \
        ulong b = b0 + (ulong)get_global_id(2);                                                \
        uint i_end = min(i0 + PE_W, half_d);                                                   \
        int vector = VEC_##NAME && PE_W == 8 && i_end - i0 == PE_W;                                         \
        /* the odd-d zero column is written by the group holding the last pair */             \
        int zero_col = (flags & PE_FLAG_ODD_D_ZERO_COLUMN) && (d & 1u) && i_end == half_d;     \
                                                                                               \
        /* the odometer: tuning words and 96-bit accumulators as 32-bit words */              \
        ulong8 vf_hi = (ulong8)(0);                                                            \
        uint8 vf_lo = (uint8)(0), vf2 = (uint8)(0), vf1 = (uint8)(0);                          \
        uint8 vw2 = (uint8)(0), vw1 = (uint8)(0), vw0 = (uint8)(0);                            \
        if (vector) {                                                                          \
            vf_hi = vload8(0, tw_hi + i0);                                                     \
            vf_lo = vload8(0, tw_lo + i0);                                                     \
            vf2 = convert_uint8(vf_hi >> 32);                                                  \
            vf1 = convert_uint8(vf_hi);                                                        \
        }                                                                                      \
        int single = i_end - i0 == 1; /* one pair: a scalar odometer */                        \
        uint sf2 = 0, sf1 = 0, sf0 = 0, sw2 = 0, sw1 = 0, sw0 = 0;                             \
        if (single) {                                                                          \
            sf2 = (uint)(tw_hi[i0] >> 32);                                                     \
            sf1 = (uint)tw_hi[i0];                                                             \
            sf0 = tw_lo[i0];                                                                   \
        }                                                                                      \
        /* positions wrap modulo 2^64, so they are carried unsigned */                        \
        ulong p = 0;                                                                           \
        int fresh = 1; /* recompute the phase from p (else: odometer tick) */                  \
        for (ulong s = s_begin; s < s_stop; ++s) {                                             \
            if (pos_source == PE_POS_IDS) {                                                    \
                p = (ulong)positions[positions_off + b * seq + s];                             \
                fresh = 1;                                                                     \
            } else if (s == s_begin) {                                                         \
                p = (pos_source == PE_POS_START ? (ulong)start                                 \
                                                : (ulong)positions[positions_off + b]) +       \
                    s_begin;                                                                   \
            }                                                                                  \
            int zero_row = (flags & PE_FLAG_PADDING_ROW) && p == (ulong)padding_position;      \
            global T *orow = out + out_off + b * out_batch_pitch + s * out_row_pitch;          \
            global const T *xrow = 0;                                                          \
            if (op == PE_OP_ADD) {                                                             \
                xrow = x + x_off + b * x_batch_pitch + s * x_row_pitch;                        \
            } else if (op == PE_OP_GATHER) {                                                   \
                ulong flat = b * seq + s;                                                      \
                int id = ids[ids_off + flat];                                                  \
                if (id >= 0 && (ulong)id < vocab) {                                            \
                    xrow = x + x_off + (ulong)id * x_row_pitch;                                \
                } else if (i0 == 0 && bad_ids) {                                               \
                    atomic_inc(&bad_ids[0]);                                                   \
                    atomic_min(&bad_ids[1], (uint)min(flat, (ulong)0xFFFFFFFEu));               \
                }                                                                              \
            }                                                                                  \
            if (vector) {                                                                      \
                if (fresh)                                                                     \
                    pe_phase8(p, vf_hi, vf_lo, &vw2, &vw1, &vw0);                              \
                VROW_##NAME                                                                    \
                PE_TICK(uint8, vw2, vw1, vw0, vf2, vf1, vf_lo, as_uint8);                      \
            } else if (single) {                                                               \
                if (fresh) {                                                                   \
                    ulong ph = pe_phase((long)p, tw_hi[i0], sf0);                              \
                    sw2 = (uint)(ph >> 32);                                                    \
                    sw1 = (uint)ph;                                                            \
                    sw0 = pe_phase_low((long)p, sf0);                                          \
                }                                                                              \
                PE_SCALAR_PAIR(NAME, R, i0, sw2, sw1)                                          \
                PE_TICK(uint, sw2, sw1, sw0, sf2, sf1, sf0, as_uint);                          \
            } else {                                                                           \
                for (uint i = i0; i < i_end; ++i) {                                            \
                    ulong ph = pe_phase((long)p, tw_hi[i], tw_lo[i]);                          \
                    PE_SCALAR_PAIR(NAME, R, i, (uint)(ph >> 32), (uint)ph)                     \
                }                                                                              \
            }                                                                                  \
            if (zero_col) {                                                                    \
                R xz = (op != PE_OP_TABLE && xrow) ? (R)LOAD_##NAME(xrow, d - 1) : (R)0;       \
                STORE_##NAME(orow, d - 1, xz * scale + (R)0);                                  \
            }                                                                                  \
            ++p;                                                                               \
            /* Past INT64_MAX the position wraps to INT64_MIN, where the                   */  \
            /* sign-extended 96-bit product jumps: start the odometer again.               */  \
            fresh = p == 0x8000000000000000UL;                                                 \
        }                                                                                      \
    }                                                                                          \
                                                                                               \
    kernel void clpe_table_##NAME(global T *out, ulong out_off, ulong out_row_pitch, uint d,   \
                                  uint half_d, uint split, uint flags, long padding_position,  \
                                  ulong s0, ulong s_end, uint rows_per_item, long start,       \
                                  global const ulong *tw_hi, global const uint *tw_lo)         \
    {                                                                                          \
        pe_rows_##NAME(PE_OP_TABLE, 0, out, 0, 0, 0, 0, 0, 0, 0, out_off, out_row_pitch, 0,    \
                       (R)1, d, half_d, split, flags, padding_position, s_end, s0, s_end, 0,   \
                       rows_per_item, PE_POS_START, start, 0, 0, tw_hi, tw_lo);                \
    }                                                                                          \
                                                                                               \
    kernel void clpe_add_##NAME(                                                               \
        global const T *x, global T *out, ulong x_off, ulong x_row_pitch, ulong x_batch_pitch, \
        ulong out_off, ulong out_row_pitch, ulong out_batch_pitch, R scale, uint d,           \
        uint half_d, uint split, uint flags, long padding_position, ulong seq, ulong s0,       \
        ulong s_end, ulong b0, uint rows_per_item, uint pos_source, long start,                \
        global const long *positions, ulong positions_off, global const ulong *tw_hi,          \
        global const uint *tw_lo)                                                              \
    {                                                                                          \
        pe_rows_##NAME(PE_OP_ADD, x, out, 0, 0, 0, 0, x_off, x_row_pitch, x_batch_pitch,       \
                       out_off, out_row_pitch, out_batch_pitch, scale, d, half_d, split,       \
                       flags, padding_position, seq, s0, s_end, b0, rows_per_item, pos_source, \
                       start, positions, positions_off, tw_hi, tw_lo);                         \
    }                                                                                          \
                                                                                               \
    kernel void clpe_gather_##NAME(                                                            \
        global const T *emb, global T *out, ulong emb_off, ulong emb_row_pitch, ulong vocab,   \
        global const int *ids, ulong ids_off, global uint *bad_ids, ulong out_off,             \
        ulong out_row_pitch, ulong out_batch_pitch, R scale, uint d, uint half_d, uint split,  \
        uint flags, long padding_position, ulong seq, ulong s0, ulong s_end, ulong b0,         \
        uint rows_per_item, uint pos_source, long start, global const long *positions,         \
        ulong positions_off, global const ulong *tw_hi, global const uint *tw_lo)              \
    {                                                                                          \
        pe_rows_##NAME(PE_OP_GATHER, emb, out, ids, ids_off, vocab, bad_ids, emb_off,          \
                       emb_row_pitch, 0, out_off, out_row_pitch, out_batch_pitch, scale, d,    \
                       half_d, split, flags, padding_position, seq, s0, s_end, b0,             \
                       rows_per_item, pos_source, start, positions, positions_off, tw_hi,      \
                       tw_lo);                                                                 \
    }

PE_DEFINE_KERNELS(f32, float, float)
PE_DEFINE_KERNELS(f16, half, float)
PE_DEFINE_KERNELS(bf16, ushort, float)
#ifdef cl_khr_fp64
PE_DEFINE_KERNELS(f64, double, double)
#endif

/* Pad-aware positions: one work-item per sequence walks its row, counting
 * the tokens that are not padding (fairseq's make_positions). */
kernel void clpe_pad_positions(global const int *ids, ulong ids_off, global long *positions,
                               ulong positions_off, ulong seq, int pad_id, long first_position,
                               long pad_position)
{
    ulong b = (ulong)get_global_id(0);
    ulong next = (ulong)first_position;
    for (ulong s = 0; s < seq; ++s) {
        int id = ids[ids_off + b * seq + s];
        ulong value = (ulong)pad_position;
        if (id != pad_id)
            value = next++;
        positions[positions_off + b * seq + s] = (long)value;
    }
}
