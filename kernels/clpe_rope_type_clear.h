/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope_type_clear.h - clears what clpe_rope_type.h sets. No include
 * guard: once per type.
 */
#undef PE_FN
#undef PE_TWL
#undef PE_ODO
#undef PE_SINCOS_AT
#undef PE_ODO_FN
#undef PE_GODO_FN
#undef PE_GV
#undef PE_GFN
