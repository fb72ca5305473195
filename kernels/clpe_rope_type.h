/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_rope_type.h - the names a rotary body of one storage type uses,
 * from the macros clpe_kernels.cl sets for that type: PE_FN (a name with
 * the type's suffix), the tuning words' low part PE_TWL, the one-pair
 * odometer PE_ODO and direct phase PE_SINCOS_AT of its width, and the
 * vector group's type PE_GV and storage functions PE_GFN. A body includes
 * it first and clpe_rope_type_clear.h when done. No include guard: once
 * per type.
 */
#define PE_FN(base) PE_CAT(base, PE_CAT(_, PE_NAME))
#if PE_WIDE
#define PE_TWL ulong
#define PE_ODO pe_odo128
#define PE_SINCOS_AT pe_sincos_at128
#else
#define PE_TWL uint
#define PE_ODO pe_odo96
#define PE_SINCOS_AT pe_sincos_at
#endif
#define PE_ODO_FN(name) PE_CAT(PE_ODO, PE_CAT(_, name))
#define PE_GODO_FN(name) PE_CAT(PE_GODO, PE_CAT(_, name))
/* a group's vector type, and the storage function of that width */
#define PE_GV PE_CAT(PE_R, PE_GL)
#define PE_GFN(base) PE_CAT(PE_CAT(base, PE_GL), PE_CAT(_, PE_NAME))
