/* SPDX-License-Identifier: Apache-2.0 */
/*
 * header_kernels.h - kernels written with clpe_device.h, as an engine
 * writes its own: one table row writer (clpe_sincos) and one in-place
 * rotation (clpe_rope_cos_sin, clpe_rotate) per storage type, each storing
 * its values the way clpe stores them. `clpe check` and the tests compile
 * them after the header and compare them with the library's kernels.
 */
#ifndef CLPE_COMMON_HEADER_KERNELS_H
#define CLPE_COMMON_HEADER_KERNELS_H

/* The source, to follow clpe_device.h (its text, or an #include of it):
 *   rotate_T(global T *x, global const long *pos, global const ulong *w,
 *            uint head_dim, uint inverse)
 *       work-item t rotates row t of head_dim values in place by position
 *       pos[t] (backwards when inverse is not 0);
 *   table_T(global T *out, global const ulong *w, long start)
 *       work-item r writes row r: (sin, cos) of position start + r, pair
 *       by pair.
 * T is header_kernel_type(dtype); double only where cl_khr_fp64 is. */
extern const char HEADER_KERNELS[];

/* The kernels' storage type for a clpe_dtype: "float", "half", "ushort"
 * (bfloat16 bits) or "double". */
const char *header_kernel_type(int dtype);

#endif
