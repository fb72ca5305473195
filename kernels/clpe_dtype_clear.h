/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_dtype_clear.h - clears every macro a storage type's block of
 * clpe_kernels.cl sets, after its kernels are compiled, so that nothing
 * leaks into the next type's kernels.
 */
#undef PE_NAME
#undef PE_T
#undef PE_R
#undef PE_WIDE
#undef PE_NARROW
#undef PE_ROW_PAIRS
#undef PE_ROPE_PAIRS
#undef PE_GL
#undef PE_GODO
#undef PE_ZIP_ONCE
#undef PE_TILE_PAIRS
#undef PE_STEP_GROUPS
#undef PE_AHEAD_STEPS
#undef PE_TICK_IN_STEPS
