/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.h - a small JSON reader for config.json and the safetensors header.
 *
 * Parses a whole document into a tree that the caller frees with json_free.
 * Numbers are kept as double and, where the text is an integer that fits,
 * also as int64 (safetensors offsets need all 64 bits' worth of exactness).
 * Strings are decoded (escapes, \u with surrogate pairs, as UTF-8).
 */
#ifndef DECODER_JSON_H
#define DECODER_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum json_type {
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT
} json_type;

typedef struct json_value {
    json_type type;
    int boolean;              /* JSON_BOOL */
    double number;            /* JSON_NUMBER */
    int is_integer;           /* JSON_NUMBER written as an integer that fits int64 */
    int64_t integer;          /* valid when is_integer */
    char *string;             /* JSON_STRING, NUL-terminated */
    size_t count;             /* JSON_ARRAY and JSON_OBJECT: number of items */
    struct json_value *items; /* the items (object values, in document order) */
    char **keys;              /* JSON_OBJECT: the keys, parallel to items */
} json_value;

/* Parse len bytes of text. Returns the root, or NULL with a message (that
 * names the byte offset) in err. */
json_value *json_parse(const char *text, size_t len, char *err, size_t err_cap);

/* Free a tree from json_parse. NULL is a no-op. */
void json_free(json_value *root);

/* The value of key in an object (the last one if repeated), or NULL when
 * obj is not an object or has no such key. */
const json_value *json_get(const json_value *obj, const char *key);

#endif
