/*
 * clpe_kernels.cl - position encoding kernels (OpenCL C 1.2).
 *
 * Launch shape, shared by the table, add and gather kernels:
 *   dimension 0: pair index i (padded up to the work-group size; extra
 *                work-items return at once);
 *   dimension 1: a block of `rows_per_item` consecutive rows s of one
 *                sequence, starting at row s0 of this launch;
 *   dimension 2: sequence b, counted from b0 of this launch.
 * One work-item therefore owns one pair (two output values) in several
 * consecutive rows. Between rows it advances the phase with one 96-bit add
 * (the odometer) instead of multiplying again: cheaper, and bit-identical
 * because the integer arithmetic is exact. Consecutive work-items write
 * neighbouring pairs of the same row, so stores are contiguous.
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

/* Storage types: load to the arithmetic type, store with one rounding. */
#define LOAD_f32(p, k) ((p)[k])
#define STORE_f32(p, k, v) ((p)[k] = (v))
#define LOAD_f16(p, k) vload_half((k), (p))
#define STORE_f16(p, k, v) vstore_half_rte((v), (k), (p))
#define LOAD_bf16(p, k) pe_bf16_to_float((uint)(p)[k])
#define STORE_bf16(p, k, v) ((p)[k] = (ushort)pe_float_to_bf16(v))
#define LOAD_f64(p, k) ((p)[k])
#define STORE_f64(p, k, v) ((p)[k] = (v))

#define SINCOS_float(ph, s, c) pe_sincos((ph), (s), (c))
#define SINCOS_double(ph, s, c) pe_sincos_f64((ph), (s), (c))

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
        uint i = (uint)get_global_id(0);                                                       \
        if (i >= half_d)                                                                       \
            return;                                                                            \
        ulong s_begin = s0 + (ulong)get_global_id(1) * rows_per_item;                          \
        if (s_begin >= s_end)                                                                  \
            return;                                                                            \
        ulong s_stop = min(s_begin + (ulong)rows_per_item, s_end);                             \
        ulong b = b0 + (ulong)get_global_id(2);                                                \
        ulong f_hi = tw_hi[i];                                                                 \
        uint f_lo = tw_lo[i];                                                                  \
        /* the odd-d zero column is written by the last pair's work-item */                   \
        int zero_col = (flags & PE_FLAG_ODD_D_ZERO_COLUMN) && (d & 1u) && i == half_d - 1;     \
        uint slot_s = split ? i : 2 * i;                                                       \
        uint slot_c = split ? half_d + i : 2 * i + 1;                                          \
                                                                                               \
        /* positions wrap modulo 2^64, so they are carried unsigned */                        \
        ulong p;                                                                               \
        if (pos_source == PE_POS_START)                                                        \
            p = (ulong)start + s_begin;                                                        \
        else if (pos_source == PE_POS_PER_SEQUENCE)                                            \
            p = (ulong)positions[positions_off + b] + s_begin;                                 \
        else                                                                                   \
            p = (ulong)positions[positions_off + b * seq + s_begin];                           \
        /* odometer state: the 96-bit p * F, top 64 bits in ph, low 32 in pl */               \
        ulong ph = pe_phase((long)p, f_hi, f_lo);                                              \
        uint pl = pe_phase_low((long)p, f_lo);                                                 \
                                                                                               \
        for (ulong s = s_begin; s < s_stop; ++s) {                                             \
            if (pos_source == PE_POS_IDS && s != s_begin) {                                    \
                p = (ulong)positions[positions_off + b * seq + s];                             \
                ph = pe_phase((long)p, f_hi, f_lo);                                            \
            }                                                                                  \
            R sv, cv;                                                                          \
            SINCOS_##R(ph, &sv, &cv);                                                          \
            if ((flags & PE_FLAG_PADDING_ROW) && p == (ulong)padding_position) {               \
                sv = 0;                                                                        \
                cv = 0;                                                                        \
            }                                                                                  \
            global T *orow = out + out_off + b * out_batch_pitch + s * out_row_pitch;          \
            if (op == PE_OP_TABLE) {                                                           \
                STORE_##NAME(orow, slot_s, sv);                                                \
                STORE_##NAME(orow, slot_c, cv);                                                \
                if (zero_col)                                                                  \
                    STORE_##NAME(orow, d - 1, (R)0);                                           \
            } else {                                                                           \
                global const T *xrow = 0;                                                      \
                if (op == PE_OP_ADD) {                                                         \
                    xrow = x + x_off + b * x_batch_pitch + s * x_row_pitch;                    \
                } else {                                                                       \
                    ulong flat = b * seq + s;                                                  \
                    int id = ids[ids_off + flat];                                              \
                    if (id >= 0 && (ulong)id < vocab) {                                        \
                        xrow = x + x_off + (ulong)id * x_row_pitch;                            \
                    } else if (i == 0) {                                                       \
                        atomic_inc(&bad_ids[0]);                                               \
                        atomic_min(&bad_ids[1], (uint)min(flat, (ulong)0xFFFFFFFEu));           \
                    }                                                                          \
                }                                                                              \
                R xs = xrow ? (R)LOAD_##NAME(xrow, slot_s) : (R)0;                             \
                R xc = xrow ? (R)LOAD_##NAME(xrow, slot_c) : (R)0;                             \
                STORE_##NAME(orow, slot_s, xs * scale + sv);                                \
                STORE_##NAME(orow, slot_c, xc * scale + cv);                                \
                if (zero_col) {                                                                \
                    R xz = xrow ? (R)LOAD_##NAME(xrow, d - 1) : (R)0;                          \
                    STORE_##NAME(orow, d - 1, xz * scale + (R)0);                           \
                }                                                                              \
            }                                                                                  \
            /* tick: (ph, pl) += (f_hi, f_lo) with carry */                                   \
            uint nl = pl + f_lo;                                                               \
            ph += f_hi + (ulong)(nl < pl);                                                     \
            pl = nl;                                                                           \
            ++p;                                                                               \
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
