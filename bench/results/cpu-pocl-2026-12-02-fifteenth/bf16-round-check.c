/*
 * bf16-round-check.c - the fifteenth round's check of the 16-bit-halves
 * rounding (kernels/clpe_storage.cl, pe_bf16_pack_rounded16) against the
 * kernels' and the host's rounding (u + 0x7FFF + bit 16, top half) for
 * every non-NaN float32 bit pattern. Prints "bad 0" when they agree.
 * Build: cc -O2 bf16-round-check.c -o check && ./check  (about 4 s)
 */
#include <stdint.h>
#include <stdio.h>

int main(void)
{
    uint64_t bad = 0;
    for (uint64_t v = 0; v <= 0xFFFFFFFFull; v++) {
        uint32_t u = (uint32_t)v;
        if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: the kernel takes the general path */
            continue;
        uint16_t ref = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
        uint16_t hi = (uint16_t)(u >> 16), lo = (uint16_t)u;
        uint16_t avg = (uint16_t)(((uint32_t)(lo | (hi & 1u)) + 0x7FFFu) >> 1); /* vpavgw */
        uint16_t r = (uint16_t)(hi + (avg >> 15));
        if (r != ref && bad++ < 5)
            printf("%08x: %04x, expected %04x\n", u, r, ref);
    }
    printf("bad %llu\n", (unsigned long long)bad);
    return bad != 0;
}
