/* SPDX-License-Identifier: Apache-2.0 */
/*
 * safetensors.h - reading a model.safetensors file as save_pretrained writes it.
 *
 * The format: an 8-byte little-endian header length N, N bytes of JSON
 * ({"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
 * "__metadata__": {...}}), then the tensors' bytes, offsets counted from the
 * end of the header. The file is mapped read-only; tensors are read from the
 * mapping and converted to float32 on request.
 */
#ifndef DECODER_SAFETENSORS_H
#define DECODER_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8

typedef enum st_dtype { ST_F32, ST_F16, ST_BF16, ST_F64 } st_dtype;

typedef struct st_tensor {
    char *name;
    st_dtype dtype;
    int ndim;
    uint64_t shape[ST_MAX_DIMS];
    uint64_t elements;
    const unsigned char *data; /* inside the mapping */
} st_tensor;

typedef struct st_file {
    void *map;
    size_t map_size;
    size_t count;
    st_tensor *tensors;
} st_file;

/* Map and index path. Returns 0, or -1 with a message in err; every tensor's
 * byte range is checked against the file and its dtype and shape. */
int st_open(st_file *f, const char *path, char *err, size_t err_cap);
void st_close(st_file *f);

/* The tensor called name, or NULL. */
const st_tensor *st_find(const st_file *f, const char *name);

/* Copy a tensor's elements into out as float32 (rounded to nearest from
 * float64; exact from the 16-bit types). */
void st_to_f32(const st_tensor *t, float *out);

#endif
