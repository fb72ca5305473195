/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.h - writing JSON text, for the reports of the clpe tool and the
 * benchmark.
 */
#ifndef CLPE_COMMON_JSON_H
#define CLPE_COMMON_JSON_H

#include <stdio.h>

/* s as a quoted JSON string: '"' and '\' escaped, control characters as
 * \u00XX, every other byte (UTF-8 included) as it is. */
void json_string(FILE *f, const char *s);

#endif
