/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hf_config.h - a model's config.json as a rotary configuration, mapped as
 * the Python package maps it (python/clpe/_hf_config.py): head and rotary
 * widths, base, pairing, and every rope_scaling clpe has (default, linear,
 * dynamic, yarn, llama3, longrope, and M-RoPE's mrope_section). A
 * multimodal model's text_config is read before the top level.
 *
 * The clpe tool and examples/decoder share it; it needs jansson (Debian:
 * libjansson-dev), so it is a library of its own (clpe_hf_config), apart
 * from clpe_common.
 */
#ifndef CLPE_COMMON_HF_CONFIG_H
#define CLPE_COMMON_HF_CONFIG_H

#include <clpe.h>

#include <stddef.h>
#include <stdint.h>

struct json_t;

typedef struct hf_rope {
    clpe_rope_config cfg;        /* LongRoPE's factor lists point into the two below */
    double *short_factor;
    double *long_factor;
    uint32_t streams;            /* entries of rope_scaling.mrope_section; 0 without */
    uint32_t section[CLPE_MROPE_MAX_STREAMS];
} hf_rope;

/* Map a parsed config.json (a jansson object). path names the file in
 * messages. Returns 0, or -1 with "PATH: reason" in err (the field named as
 * config.json spells it); free with hf_rope_free either way. The values
 * are not checked against clpe's rules here: clpe_rope_config_check does
 * that, with the reason. */
int hf_rope_from_json(const struct json_t *top, const char *path, hf_rope *out, char *err,
                      size_t err_cap);
/* Read the file at path, then map it; name is how messages call it. */
int hf_rope_read_file(const char *path, const char *name, hf_rope *out, char *err,
                      size_t err_cap);
void hf_rope_free(hf_rope *r);

#endif
