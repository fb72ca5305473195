/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope_kv_clear.h - clears every macro a storage type's block of
 * clpe_rope_kv.cl sets, so nothing carries over to the next type. No
 * include guard: included once per type.
 */
#undef PE_NAME
#undef PE_T
#undef PE_R
#undef PE_TWL
#undef PE_SINCOS_AT
#undef PE_KV_BITS
#undef PE_KV_SELF
#undef PE_W
#undef PE_KV_PAIR_GROUPS
