/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clpe_phases.cl - the phases one work-item keeps for its pairs, for one
 * storage type: included by clpe_kernels.cl once per type, before the row
 * and rotary kernels, which both walk their rows with them. Sized for the
 * row kernels' pairs per work-item (PE_ROW_PAIRS, the larger count for the
 * 16-bit types); rotary uses as many groups as its own count gives.
 */
#define PE_W PE_ROW_PAIRS
#define PE_FN(base) PE_CAT(base, PE_CAT(_, PE_NAME))
#if PE_WIDE
#define PE_TWL ulong
#define PE_ODO pe_odo128
#else
#define PE_TWL uint
#define PE_ODO pe_odo96
#endif
#define PE_ODO_FN(name) PE_CAT(PE_ODO, PE_CAT(_, name))
#define PE_GODO_FN(name) PE_CAT(PE_GODO, PE_CAT(_, name))

/* The phases of this work-item's pairs: full groups of PE_GL from i0 with an
 * odometer each (the vector path), then the rest one pair at a time: with
 * its own odometer when the work-item has one pair only (the GPU shape),
 * else computed from p (a tail). */
typedef struct PE_FN(pe_phases) {
    PE_ODO one;
#if PE_GROUPS
    PE_GODO group[PE_GROUPS];
#endif
    uint groups;
    bool single;
} PE_FN(pe_phases);

/* The tuning words of pairs i0 .. i_end-1; groups end at vector_end. */
PE_INLINE void PE_FN(pe_phases_load)(PE_FN(pe_phases) *ph, global const ulong *tw_hi,
                                     global const PE_TWL *tw_lo, uint i0, uint i_end,
                                     uint vector_end)
{
    ph->single = PE_W == 1 || i_end - i0 == 1; /* always, in the one-pair shape */
    ph->groups = 0;
#if PE_GROUPS
    if (!ph->single && vector_end > i0)
        ph->groups = (vector_end - i0) / PE_GL;
    for (uint k = 0; k < ph->groups; ++k)
        PE_GODO_FN(load)(&ph->group[k], tw_hi, tw_lo, i0 + PE_GL * k);
#endif
    if (ph->single)
        PE_ODO_FN(load)(&ph->one, tw_hi, tw_lo, i0);
}

PE_INLINE void PE_FN(pe_phases_set)(PE_FN(pe_phases) *ph, ulong p)
{
    if (ph->single)
        PE_ODO_FN(set)(&ph->one, p);
#if PE_GROUPS
    for (uint k = 0; k < ph->groups; ++k)
        PE_GODO_FN(set)(&ph->group[k], p);
#endif
}

/* The next position: one odometer tick. Past INT64_MAX the position wraps
 * to INT64_MIN, where the sign-extended product jumps by -2^64 F: the tick
 * then takes the tuning word's low word off the top (bit-identical to a
 * fresh set there, and no multiply in the loop). The groups too unless
 * pe_row ticked them already (groups false, PE_TICK_IN_STEPS). */
PE_INLINE void PE_FN(pe_phases_tick)(PE_FN(pe_phases) *ph, bool wraps, bool groups)
{
    if (ph->single) {
        PE_ODO_FN(tick)(&ph->one);
        if (wraps)
            PE_ODO_FN(wrap)(&ph->one);
    }
#if PE_GROUPS
    for (uint k = 0; groups && k < ph->groups; ++k) {
        PE_GODO_FN(tick)(&ph->group[k]);
        if (wraps)
            PE_GODO_FN(wrap)(&ph->group[k]);
    }
#endif
}

#undef PE_W
#undef PE_FN
#undef PE_TWL
#undef PE_ODO
#undef PE_ODO_FN
#undef PE_GODO_FN
