/* SPDX-License-Identifier: Apache-2.0 */
/*
 * safetensors.c - map a .safetensors file and index its tensors.
 */
#include "safetensors.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t cap, const char *fmt, const char *a, const char *b)
{
    snprintf(err, cap, fmt, a, b);
    return -1;
}

static int dtype_of(const char *s, st_dtype *out, size_t *size)
{
    static const struct {
        const char *name;
        st_dtype dtype;
        size_t size;
    } table[] = {{"F32", ST_F32, 4}, {"F16", ST_F16, 2}, {"BF16", ST_BF16, 2}, {"F64", ST_F64, 8}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(s, table[i].name) == 0) {
            *out = table[i].dtype;
            *size = table[i].size;
            return 0;
        }
    return -1;
}

/* One header entry into t, checked against the data section's size. */
static int index_tensor(const char *name, const json_t *v, const unsigned char *data,
                        uint64_t data_size, st_tensor *t, char *err, size_t cap)
{
    const json_t *dtype = json_object_get(v, "dtype");
    const json_t *shape = json_object_get(v, "shape");
    const json_t *offsets = json_object_get(v, "data_offsets");
    size_t element_size;
    if (!json_is_string(dtype) || !json_is_array(shape) || !json_is_array(offsets) ||
        json_array_size(offsets) != 2)
        return fail(err, cap, "%s: tensor '%s' lacks dtype, shape or data_offsets", "safetensors",
                    name);
    if (dtype_of(json_string_value(dtype), &t->dtype, &element_size) != 0)
        return fail(err, cap, "tensor '%s': dtype %s is not one of F32, F16, BF16, F64", name,
                    json_string_value(dtype));
    if (json_array_size(shape) > ST_MAX_DIMS)
        return fail(err, cap, "tensor '%s': %s", name, "too many dimensions");
    t->ndim = (int)json_array_size(shape);
    t->elements = 1;
    for (size_t i = 0; i < json_array_size(shape); i++) {
        const json_t *n = json_array_get(shape, i);
        if (!json_is_integer(n) || json_integer_value(n) < 0)
            return fail(err, cap, "tensor '%s': %s", name, "bad shape");
        t->shape[i] = (uint64_t)json_integer_value(n);
        if (t->shape[i] && t->elements > UINT64_MAX / 8 / t->shape[i])
            return fail(err, cap, "tensor '%s': %s", name, "shape too large");
        t->elements *= t->shape[i];
    }
    const json_t *b = json_array_get(offsets, 0), *e = json_array_get(offsets, 1);
    if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 ||
        json_integer_value(e) < json_integer_value(b) ||
        (uint64_t)json_integer_value(e) > data_size)
        return fail(err, cap, "tensor '%s': %s", name, "data_offsets outside the file");
    if ((uint64_t)(json_integer_value(e) - json_integer_value(b)) !=
        t->elements * element_size)
        return fail(err, cap, "tensor '%s': %s", name,
                    "data_offsets disagree with dtype and shape");
    t->data = data + json_integer_value(b);
    t->name = strdup(name);
    return t->name ? 0 : fail(err, cap, "%s%s", "out of memory", "");
}

int st_open(st_file *f, const char *path, char *err, size_t cap)
{
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return fail(err, cap, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || sb.st_size < 8) {
        close(fd);
        return fail(err, cap, "%s: %s", path, "not a safetensors file (too short)");
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return fail(err, cap, "%s: %s", path, strerror(errno));
    f->map = map;
    f->map_size = (size_t)sb.st_size;
    const unsigned char *bytes = map;
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--)
        header_len = header_len << 8 | bytes[i];
    if (header_len > f->map_size - 8) {
        st_close(f);
        return fail(err, cap, "%s: %s", path, "header longer than the file");
    }
    json_error_t error;
    json_t *root = json_loadb((const char *)bytes + 8, (size_t)header_len,
                              JSON_REJECT_DUPLICATES, &error);
    if (!root || !json_is_object(root)) {
        if (root)
            fail(err, cap, "%s: header: %s", path, "not a JSON object");
        else
            snprintf(err, cap, "%s: header: JSON: %s (byte %d)", path, error.text,
                     error.position);
        json_decref(root);
        st_close(f);
        return -1;
    }
    f->tensors = calloc(json_object_size(root) ? json_object_size(root) : 1, sizeof *f->tensors);
    if (!f->tensors) {
        json_decref(root);
        st_close(f);
        return fail(err, cap, "%s: %s", path, "out of memory");
    }
    const unsigned char *data = bytes + 8 + header_len;
    uint64_t data_size = f->map_size - 8 - header_len;
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value) {
        if (strcmp(key, "__metadata__") == 0)
            continue;
        if (index_tensor(key, value, data, data_size, &f->tensors[f->count], err, cap) != 0) {
            json_decref(root);
            st_close(f);
            return -1;
        }
        f->count++;
    }
    json_decref(root);
    return 0;
}

void st_close(st_file *f)
{
    for (size_t i = 0; i < f->count; i++)
        free(f->tensors[i].name);
    free(f->tensors);
    if (f->map)
        munmap(f->map, f->map_size);
    memset(f, 0, sizeof *f);
}

const st_tensor *st_find(const st_file *f, const char *name)
{
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    uint32_t bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | mant << 13;
    } else if (exp != 0) {
        bits = sign | (exp + 112) << 23 | mant << 13;
    } else if (mant == 0) {
        bits = sign;
    } else { /* subnormal half: normalise */
        int e = -1;
        do {
            e++;
            mant <<= 1;
        } while (!(mant & 0x400));
        bits = sign | (uint32_t)(112 - e) << 23 | (mant & 0x3FF) << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

void st_to_f32(const st_tensor *t, float *out)
{
    for (uint64_t i = 0; i < t->elements; i++) {
        const unsigned char *p = t->data;
        switch (t->dtype) {
        case ST_F32:
            memcpy(&out[i], p + 4 * i, 4);
            break;
        case ST_F64: {
            double d;
            memcpy(&d, p + 8 * i, 8);
            out[i] = (float)d;
            break;
        }
        case ST_F16: {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = half_to_float(h);
            break;
        }
        case ST_BF16: {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            uint32_t bits = (uint32_t)h << 16;
            memcpy(&out[i], &bits, 4);
            break;
        }
        }
    }
}
