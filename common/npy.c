/* SPDX-License-Identifier: Apache-2.0 */
/*
 * npy.c - NumPy .npy headers: build one for clpe's output, and parse one
 * back (for tests, tools and fuzzing). See npy.h.
 */
#include "npy.h"

#include <clpe.h>

#include <string.h>

static const char NPY_MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

const char *npy_descr_for_dtype(int dtype)
{
    switch (dtype) {
    case CLPE_DTYPE_F32: return "<f4";
    case CLPE_DTYPE_F16: return "<f2";
    case CLPE_DTYPE_BF16: return "<u2"; /* raw bfloat16 bits: NumPy has no bf16 */
    case CLPE_DTYPE_F64: return "<f8";
    }
    return NULL;
}

/* Append the decimal digits of v; returns the new length or 0 on overflow. */
static size_t put_u64(char *buf, size_t len, size_t cap, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (len + n > cap)
        return 0;
    while (n)
        buf[len++] = tmp[--n];
    return len;
}

static size_t put_str(char *buf, size_t len, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (len + n > cap)
        return 0;
    memcpy(buf + len, s, n);
    return len + n;
}

size_t npy_header(char *buf, size_t cap, const char *descr, uint64_t rows, uint64_t cols)
{
    if (!buf || !descr)
        return 0;
    size_t dl = strlen(descr);
    if (dl == 0 || dl > 8)
        return 0;
    for (size_t i = 0; i < dl; ++i)
        if (descr[i] == '\'' || descr[i] == '\\')
            return 0;
    /* The dictionary goes after the 10-byte preamble. */
    size_t len = 10;
    if (cap < len)
        return 0;
    len = put_str(buf, len, cap, "{'descr': '");
    if (len) len = put_str(buf, len, cap, descr);
    if (len) len = put_str(buf, len, cap, "', 'fortran_order': False, 'shape': (");
    if (len) len = put_u64(buf, len, cap, rows);
    if (len) len = put_str(buf, len, cap, ", ");
    if (len) len = put_u64(buf, len, cap, cols);
    if (len) len = put_str(buf, len, cap, "), }");
    if (!len)
        return 0;
    /* Pad with spaces and end with '\n' so the data is 64-byte aligned. */
    size_t total = (len + 1 + 63) / 64 * 64;
    if (total > cap || total - 10 > 0xFFFF)
        return 0;
    memset(buf + len, ' ', total - 1 - len);
    buf[total - 1] = '\n';
    memcpy(buf, NPY_MAGIC, 6);
    buf[6] = 1; /* version 1.0 */
    buf[7] = 0;
    size_t hl = total - 10;
    buf[8] = (char)(hl & 0xFF);
    buf[9] = (char)(hl >> 8);
    return total;
}

int npy_write_header(FILE *f, const char *descr, uint64_t rows, uint64_t cols)
{
    char buf[NPY_HEADER_MAX];
    size_t n = npy_header(buf, sizeof buf, descr, rows, cols);
    if (!n)
        return -1;
    return fwrite(buf, 1, n, f) == n ? 0 : -1;
}

/* ---- parsing ------------------------------------------------------------------ */

/* A cursor over the dictionary text [p, end). */
typedef struct cursor {
    const char *p;
    const char *end;
} cursor;

static void skip_space(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        ++c->p;
}

static int expect(cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        ++c->p;
        return 0;
    }
    return -1;
}

/* A quoted Python string of at most cap-1 characters, no escapes. */
static int parse_string(cursor *c, char *out, size_t cap)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return -1;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || n + 1 >= cap)
            return -1;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end)
        return -1;
    ++c->p;
    out[n] = '\0';
    return 0;
}

static int parse_uint(cursor *c, uint64_t *out)
{
    skip_space(c);
    uint64_t v = 0;
    const char *start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        unsigned digit = (unsigned)(*c->p - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return -1;
        v = v * 10 + digit;
        ++c->p;
    }
    /* Python 2 era writers append L to longs. */
    if (c->p < c->end && *c->p == 'L')
        ++c->p;
    if (c->p == start)
        return -1;
    *out = v;
    return 0;
}

static int parse_shape(cursor *c, npy_info *info)
{
    if (expect(c, '('))
        return -1;
    info->ndim = 0;
    for (;;) {
        skip_space(c);
        if (c->p < c->end && *c->p == ')') {
            ++c->p;
            return info->ndim == 0 ? -1 : 0; /* only 1-D and 2-D arrays */
        }
        if (info->ndim == 2)
            return -1;
        if (parse_uint(c, &info->shape[info->ndim]))
            return -1;
        ++info->ndim;
        skip_space(c);
        if (c->p < c->end && *c->p == ',')
            ++c->p;
        else if (!(c->p < c->end && *c->p == ')'))
            return -1;
    }
}

static int parse_bool(cursor *c, int *out)
{
    skip_space(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && memcmp(c->p, "True", 4) == 0) {
        c->p += 4;
        *out = 1;
        return 0;
    }
    if (left >= 5 && memcmp(c->p, "False", 5) == 0) {
        c->p += 5;
        *out = 0;
        return 0;
    }
    return -1;
}

int npy_parse_header(const void *bytes, size_t len, npy_info *info)
{
    const unsigned char *b = bytes;
    if (!b || !info || len < 10 || memcmp(b, NPY_MAGIC, 6) != 0)
        return -1;
    size_t hl, pre;
    if (b[6] == 1) {
        hl = (size_t)b[8] | (size_t)b[9] << 8;
        pre = 10;
    } else if (b[6] == 2 || b[6] == 3) {
        if (len < 12)
            return -1;
        hl = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        pre = 12;
    } else {
        return -1;
    }
    if (hl > len - pre)
        return -1;

    npy_info out;
    memset(&out, 0, sizeof out);
    int have_descr = 0, have_order = 0, have_shape = 0;
    cursor c = {(const char *)b + pre, (const char *)b + pre + hl};
    if (expect(&c, '{'))
        return -1;
    for (;;) {
        skip_space(&c);
        if (c.p < c.end && *c.p == '}') {
            ++c.p;
            break;
        }
        char key[32];
        if (parse_string(&c, key, sizeof key) || expect(&c, ':'))
            return -1;
        if (strcmp(key, "descr") == 0 && !have_descr) {
            if (parse_string(&c, out.descr, sizeof out.descr))
                return -1;
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
            if (parse_bool(&c, &out.fortran_order))
                return -1;
            have_order = 1;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            if (parse_shape(&c, &out))
                return -1;
            have_shape = 1;
        } else {
            return -1;
        }
        skip_space(&c);
        if (c.p < c.end && *c.p == ',')
            ++c.p;
        else if (!(c.p < c.end && *c.p == '}'))
            return -1;
    }
    /* Only padding may follow the dictionary. */
    for (; c.p < c.end; ++c.p)
        if (*c.p != ' ' && *c.p != '\n' && *c.p != '\0')
            return -1;
    if (!have_descr || !have_order || !have_shape)
        return -1;
    out.data_offset = pre + hl;
    *info = out;
    return 0;
}
