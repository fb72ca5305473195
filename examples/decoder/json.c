/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.c - a recursive-descent JSON parser (RFC 8259) into a tree.
 */
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deeper nesting than any configuration file needs is refused, so the
 * recursion is bounded. */
#define JSON_MAX_DEPTH 64

typedef struct parser {
    const char *text;
    size_t len;
    size_t pos;
    char *err;
    size_t err_cap;
} parser;

static int fail(parser *p, const char *what)
{
    if (p->err && p->err_cap)
        snprintf(p->err, p->err_cap, "JSON: %s at byte %zu", what, p->pos);
    return -1;
}

static void skip_space(parser *p)
{
    while (p->pos < p->len) {
        char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

static int literal(parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->text + p->pos, word, n) != 0)
        return fail(p, "unknown literal");
    p->pos += n;
    return 0;
}

static void free_value(json_value *v)
{
    if (v->type == JSON_STRING) {
        free(v->string);
    } else if (v->type == JSON_ARRAY || v->type == JSON_OBJECT) {
        for (size_t i = 0; i < v->count; i++) {
            free_value(&v->items[i]);
            if (v->keys)
                free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
    }
    memset(v, 0, sizeof *v);
}

static int hex4(parser *p, unsigned *out)
{
    if (p->len - p->pos < 4)
        return fail(p, "short \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->text[p->pos++];
        value <<= 4;
        if (c >= '0' && c <= '9')
            value |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            value |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            value |= (unsigned)(c - 'A' + 10);
        else
            return fail(p, "bad \\u escape");
    }
    *out = value;
    return 0;
}

static size_t put_utf8(char *dst, unsigned cp)
{
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        dst[0] = (char)(0xC0 | (cp >> 6));
        dst[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xE0 | (cp >> 12));
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    dst[0] = (char)(0xF0 | (cp >> 18));
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    dst[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string starting at the opening quote; the decoded text is never longer
 * than the escaped one, so one buffer of that size holds it. */
static int parse_string(parser *p, char **out)
{
    p->pos++; /* the opening quote */
    size_t end = p->pos;
    while (end < p->len && p->text[end] != '"') {
        if (p->text[end] == '\\')
            end++;
        end++;
    }
    if (end >= p->len)
        return fail(p, "unterminated string");
    char *s = malloc(end - p->pos + 1);
    if (!s)
        return fail(p, "out of memory");
    size_t n = 0;
    while (p->text[p->pos] != '"') {
        unsigned char c = (unsigned char)p->text[p->pos++];
        if (c < 0x20) {
            free(s);
            return fail(p, "control character in string");
        }
        if (c != '\\') {
            s[n++] = (char)c;
            continue;
        }
        char e = p->text[p->pos++];
        unsigned cp;
        switch (e) {
        case '"': s[n++] = '"'; break;
        case '\\': s[n++] = '\\'; break;
        case '/': s[n++] = '/'; break;
        case 'b': s[n++] = '\b'; break;
        case 'f': s[n++] = '\f'; break;
        case 'n': s[n++] = '\n'; break;
        case 'r': s[n++] = '\r'; break;
        case 't': s[n++] = '\t'; break;
        case 'u':
            if (hex4(p, &cp) != 0) {
                free(s);
                return -1;
            }
            if (cp >= 0xD800 && cp < 0xDC00 && p->len - p->pos >= 6 &&
                p->text[p->pos] == '\\' && p->text[p->pos + 1] == 'u') {
                unsigned low;
                p->pos += 2;
                if (hex4(p, &low) != 0) {
                    free(s);
                    return -1;
                }
                if (low >= 0xDC00 && low < 0xE000)
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                else
                    p->pos -= 6; /* not a pair: keep the low escape for next time */
            }
            /* "\uXXXX" is 6 bytes; its UTF-8 at most 3 (4 for a 12-byte pair) */
            n += put_utf8(s + n, cp);
            break;
        default:
            free(s);
            return fail(p, "bad escape");
        }
    }
    p->pos++; /* the closing quote */
    s[n] = '\0';
    *out = s;
    return 0;
}

static int parse_number(parser *p, json_value *v)
{
    size_t start = p->pos;
    int integer = 1;
    if (p->text[p->pos] == '-')
        p->pos++;
    size_t digits = p->pos;
    while (p->pos < p->len && p->text[p->pos] >= '0' && p->text[p->pos] <= '9')
        p->pos++;
    if (p->pos == digits)
        return fail(p, "bad number");
    if (p->pos < p->len && p->text[p->pos] == '.') {
        integer = 0;
        p->pos++;
        size_t frac = p->pos;
        while (p->pos < p->len && p->text[p->pos] >= '0' && p->text[p->pos] <= '9')
            p->pos++;
        if (p->pos == frac)
            return fail(p, "bad number");
    }
    if (p->pos < p->len && (p->text[p->pos] == 'e' || p->text[p->pos] == 'E')) {
        integer = 0;
        p->pos++;
        if (p->pos < p->len && (p->text[p->pos] == '+' || p->text[p->pos] == '-'))
            p->pos++;
        size_t exp = p->pos;
        while (p->pos < p->len && p->text[p->pos] >= '0' && p->text[p->pos] <= '9')
            p->pos++;
        if (p->pos == exp)
            return fail(p, "bad number");
    }
    char buf[64];
    size_t n = p->pos - start;
    if (n >= sizeof buf)
        return fail(p, "number too long");
    memcpy(buf, p->text + start, n);
    buf[n] = '\0';
    v->type = JSON_NUMBER;
    v->number = strtod(buf, NULL);
    if (integer) {
        errno = 0;
        long long x = strtoll(buf, NULL, 10);
        if (errno == 0) {
            v->is_integer = 1;
            v->integer = (int64_t)x;
        }
    }
    return 0;
}

static int parse_value(parser *p, json_value *v, int depth);

static int grow(parser *p, json_value *v, size_t *cap, int with_keys)
{
    if (v->count < *cap)
        return 0;
    size_t next = *cap ? *cap * 2 : 8;
    json_value *items = realloc(v->items, next * sizeof *items);
    if (!items)
        return fail(p, "out of memory");
    v->items = items;
    if (with_keys) {
        char **keys = realloc(v->keys, next * sizeof *keys);
        if (!keys)
            return fail(p, "out of memory");
        v->keys = keys;
    }
    *cap = next;
    return 0;
}

static int parse_container(parser *p, json_value *v, int depth, int object)
{
    char close = object ? '}' : ']';
    size_t cap = 0;
    v->type = object ? JSON_OBJECT : JSON_ARRAY;
    p->pos++;
    skip_space(p);
    if (p->pos < p->len && p->text[p->pos] == close) {
        p->pos++;
        return 0;
    }
    for (;;) {
        if (grow(p, v, &cap, object) != 0)
            return -1;
        char *key = NULL;
        if (object) {
            skip_space(p);
            if (p->pos >= p->len || p->text[p->pos] != '"')
                return fail(p, "expected a key");
            if (parse_string(p, &key) != 0)
                return -1;
            skip_space(p);
            if (p->pos >= p->len || p->text[p->pos] != ':') {
                free(key);
                return fail(p, "expected ':'");
            }
            p->pos++;
        }
        json_value *item = &v->items[v->count];
        memset(item, 0, sizeof *item);
        if (object)
            v->keys[v->count] = key;
        v->count++; /* counted now, so a failure below frees the key */
        if (parse_value(p, item, depth + 1) != 0)
            return -1;
        skip_space(p);
        if (p->pos < p->len && p->text[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->text[p->pos] == close) {
            p->pos++;
            return 0;
        }
        return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int parse_value(parser *p, json_value *v, int depth)
{
    if (depth > JSON_MAX_DEPTH)
        return fail(p, "nested too deeply");
    skip_space(p);
    if (p->pos >= p->len)
        return fail(p, "unexpected end");
    char c = p->text[p->pos];
    switch (c) {
    case '{':
        return parse_container(p, v, depth, 1);
    case '[':
        return parse_container(p, v, depth, 0);
    case '"':
        v->type = JSON_STRING;
        return parse_string(p, &v->string);
    case 't':
        v->type = JSON_BOOL;
        v->boolean = 1;
        return literal(p, "true");
    case 'f':
        v->type = JSON_BOOL;
        return literal(p, "false");
    case 'n':
        v->type = JSON_NULL;
        return literal(p, "null");
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return parse_number(p, v);
        return fail(p, "unexpected character");
    }
}

json_value *json_parse(const char *text, size_t len, char *err, size_t err_cap)
{
    parser p = {.text = text, .len = len, .err = err, .err_cap = err_cap};
    json_value *root = calloc(1, sizeof *root);
    if (!root) {
        fail(&p, "out of memory");
        return NULL;
    }
    if (parse_value(&p, root, 0) != 0) {
        json_free(root);
        return NULL;
    }
    skip_space(&p);
    if (p.pos != p.len) {
        fail(&p, "text after the value");
        json_free(root);
        return NULL;
    }
    return root;
}

void json_free(json_value *root)
{
    if (!root)
        return;
    free_value(root);
    free(root);
}

const json_value *json_get(const json_value *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT)
        return NULL;
    for (size_t i = obj->count; i-- > 0;)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}
