/* SPDX-License-Identifier: Apache-2.0 */
/*
 * random.h - the pseudo-random stream the clients of libclpe share
 * (splitmix64): small, fast, and the same sequence everywhere, so a seed
 * printed by a failing test or check reproduces it.
 */
#ifndef CLPE_COMMON_RANDOM_H
#define CLPE_COMMON_RANDOM_H

#include <stdint.h>

/* The next number of the stream whose state is *state (any seed). */
uint64_t splitmix64(uint64_t *state);

#endif
