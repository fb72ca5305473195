/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope_kv_clear.h - clears every macro a cache type's block of
 * clpe_rope_kv.cl sets, so nothing carries over to the next cache type.
 * No include guard: included once per cache type.
 */
#undef PE_KV_NAME
#undef PE_KV_T
#undef PE_KV_SAME
#undef PE_KV_PUT
#undef PE_KV_PUT16
#undef PE_KV_FP8
#undef PE_KV_ROUND
#undef PE_KV_ROUND16
