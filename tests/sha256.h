/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sha256.h - SHA-256 (FIPS 180-4) of a byte string, as lowercase hex: the
 * fingerprint tests/test_digests.c pins output bytes with.
 */
#ifndef CLPE_TEST_SHA256_H
#define CLPE_TEST_SHA256_H

#include <stddef.h>

/* hex receives 64 hex digits and a NUL. */
void sha256_hex(const void *data, size_t size, char hex[65]);

#endif
