/*
 * clpe_kernels.cl - position encoding kernels (OpenCL C 1.2).
 *
 * Launch shape, shared by every kernel here:
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
 * Contraction of a*b+c into fma is turned off: the host emulation must see
 * exactly the operations written in clpe_phase.h.
 */
#pragma OPENCL FP_CONTRACT OFF

#include "clpe_phase.h"

#define PE_POS_START 0
#define PE_POS_PER_SEQUENCE 1
#define PE_POS_IDS 2

/* Store one (sin, cos) pair of a row at its layout's slots. */
inline void pe_store_pair(global float *row, uint i, uint half_d, uint split, float s, float c)
{
    if (split) {
        row[i] = s;
        row[half_d + i] = c;
    } else {
        vstore2((float2)(s, c), i, row);
    }
}

/* out = fma(x, scale, pe) for one pair; x and out may be the same row. */
inline void pe_add_pair(global const float *xrow, global float *orow, uint i, uint half_d,
                        uint split, float scale, float s, float c)
{
    if (split) {
        float xs = xrow[i];
        float xc = xrow[half_d + i];
        orow[i] = fma(xs, scale, s);
        orow[half_d + i] = fma(xc, scale, c);
    } else {
        float2 xv = vload2(i, xrow);
        vstore2((float2)(fma(xv.x, scale, s), fma(xv.y, scale, c)), i, orow);
    }
}

/* The body shared by table and add. has_x is a compile-time constant at
 * each call, so the compiler keeps two specialised copies. */
inline void pe_rows_f32(const int has_x, global const float *x, global float *out,
                        ulong x_off, ulong x_row_pitch, ulong x_batch_pitch,
                        ulong out_off, ulong out_row_pitch, ulong out_batch_pitch,
                        float scale, uint half_d, uint split,
                        ulong seq, ulong s0, ulong s_end, ulong b0, uint rows_per_item,
                        uint pos_source, long start, global const long *positions,
                        ulong positions_off, global const ulong *tw_hi,
                        global const uint *tw_lo)
{
    uint i = (uint)get_global_id(0);
    if (i >= half_d)
        return;
    ulong s_begin = s0 + (ulong)get_global_id(1) * rows_per_item;
    if (s_begin >= s_end)
        return;
    ulong s_stop = min(s_begin + (ulong)rows_per_item, s_end);
    ulong b = b0 + (ulong)get_global_id(2);

    ulong f_hi = tw_hi[i];
    uint f_lo = tw_lo[i];

    long p0;
    if (pos_source == PE_POS_START)
        p0 = start + (long)s_begin;
    else if (pos_source == PE_POS_PER_SEQUENCE)
        p0 = positions[positions_off + b] + (long)s_begin;
    else
        p0 = positions[positions_off + b * seq + s_begin];

    /* odometer state: the 96-bit value p * F, top 64 bits in ph, low 32 in pl */
    ulong ph = pe_phase(p0, f_hi, f_lo);
    uint pl = pe_phase_low(p0, f_lo);

    for (ulong s = s_begin; s < s_stop; ++s) {
        if (pos_source == PE_POS_IDS && s != s_begin) {
            long p = positions[positions_off + b * seq + s];
            ph = pe_phase(p, f_hi, f_lo);
        }
        float sv, cv;
        pe_sincos(ph, &sv, &cv);
        global float *orow = out + out_off + b * out_batch_pitch + s * out_row_pitch;
        if (has_x) {
            global const float *xrow = x + x_off + b * x_batch_pitch + s * x_row_pitch;
            pe_add_pair(xrow, orow, i, half_d, split, scale, sv, cv);
        } else {
            pe_store_pair(orow, i, half_d, split, sv, cv);
        }
        /* tick: (ph, pl) += (f_hi, f_lo) with carry */
        uint nl = pl + f_lo;
        ph += f_hi + (ulong)(nl < pl);
        pl = nl;
    }
}

kernel void clpe_table_f32(global float *out, ulong out_off, ulong out_row_pitch,
                           uint half_d, uint split, ulong s0, ulong s_end,
                           uint rows_per_item, long start, global const ulong *tw_hi,
                           global const uint *tw_lo)
{
    pe_rows_f32(0, 0, out, 0, 0, 0, out_off, out_row_pitch, 0, 1.0f, half_d, split,
                s_end, s0, s_end, 0, rows_per_item, PE_POS_START, start, 0, 0, tw_hi, tw_lo);
}

kernel void clpe_add_f32(global const float *x, global float *out, ulong x_off,
                         ulong x_row_pitch, ulong x_batch_pitch, ulong out_off,
                         ulong out_row_pitch, ulong out_batch_pitch, float scale,
                         uint half_d, uint split, ulong seq, ulong s0, ulong s_end, ulong b0,
                         uint rows_per_item, uint pos_source, long start,
                         global const long *positions, ulong positions_off,
                         global const ulong *tw_hi, global const uint *tw_lo)
{
    pe_rows_f32(1, x, out, x_off, x_row_pitch, x_batch_pitch, out_off, out_row_pitch,
                out_batch_pitch, scale, half_d, split, seq, s0, s_end, b0, rows_per_item,
                pos_source, start, positions, positions_off, tw_hi, tw_lo);
}
