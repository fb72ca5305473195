/* bf16-round-check.c: the rounding of pe_bf16_round_halves (kernels/clpe_storage.cl)
 * checked against pe_float_to_bf16 for every non-NaN float32.
 * Build and run from the project root:
 *   gcc -O2 -I kernels bench/results/cpu-pocl-2026-12-02-eighteenth/bf16-round-check.c -lm && ./a.out */
/* every non-NaN float32: H + ((L | (H & 1)) > 0x8000), on 16-bit halves,
 * against pe_float_to_bf16 (clpe_phase.h) */
#include <stdio.h>
#include <stdint.h>
#include "clpe_phase.h"
int main(void)
{
    uint64_t bad = 0, checked = 0;
    for (uint64_t u = 0; u <= 0xFFFFFFFFu; ++u) {
        uint32_t f = (uint32_t)u;
        if ((f & 0x7FFFFFFFu) > 0x7F800000u)
            continue;
        uint16_t h = (uint16_t)(f >> 16), l = (uint16_t)f;
        uint16_t r = (uint16_t)(h + (((uint16_t)(l | (h & 1u))) > 0x8000u ? 1 : 0));
        ++checked;
        if (r != (uint16_t)pe_float_to_bf16(pe_as_float_host(f)))
            ++bad;
    }
    printf("checked %llu non-NaN floats, %llu differ\n", (unsigned long long)checked, (unsigned long long)bad);
    return bad != 0;
}
