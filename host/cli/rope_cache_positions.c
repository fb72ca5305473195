/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rope_cache_positions.c - what `clpe rope-cache --positions FILE` adds:
 * the int64 .npy file of positions [streams, tokens] (Qwen2-VL's
 * position_ids [3, 1, seq] of one sequence, squeezed; or its vision
 * tower's pos_ids [patches, 2], transposed), read and checked, and the
 * multimodal configuration the flags describe (cmd_rope_cache.c computes
 * the cache).
 */
#include "cli.h"
#include "common/npy.h"
#include "output_file.h"
#include "rope_cache.h"
#include "stderr_capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Largest positions file read: 2^31 int64 values. */
#define POSITIONS_MAX ((uint64_t)1 << 31)

/* The positions file: int64 [streams, tokens] (or [tokens] for one
 * stream), C order, little-endian; stream j of token t at j * tokens + t. */
typedef struct positions_file {
    int64_t *values;   /* stream j of token t at j * tokens + t */
    uint64_t tokens;
} positions_file;

static int read_positions(const char *path, uint32_t streams, positions_file *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("--positions: cannot open '%s': %s", path, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    unsigned char head[NPY_HEADER_MAX * 16];
    size_t got = fread(head, 1, sizeof head, f);
    npy_info info;
    int rc = CLI_EXIT_USAGE;
    if (npy_parse_header(head, got, &info) != 0) {
        cli_error("--positions: '%s' is not a .npy file", path);
        goto done;
    }
    const uint64_t rows = info.ndim == 2 ? info.shape[0] : 1;
    const uint64_t cols = info.ndim == 2 ? info.shape[1] : info.shape[0];
    if (strcmp(info.descr, "<i8") != 0 || info.fortran_order || info.ndim < 1) {
        cli_error("--positions: '%s' must hold int64 ('<i8') values in C order, got '%s'%s",
                  path, info.descr, info.fortran_order ? " in Fortran order" : "");
        goto done;
    }
    if (rows != streams) {
        cli_error("--positions: '%s' has %llu stream%s; the sections give %u", path,
                  (unsigned long long)rows, rows == 1 ? "" : "s", (unsigned)streams);
        goto done;
    }
    if (cols == 0 || cols > POSITIONS_MAX / rows) {
        cli_error("--positions: '%s' must hold 1 to %llu tokens, got %llu", path,
                  (unsigned long long)(POSITIONS_MAX / rows), (unsigned long long)cols);
        goto done;
    }
    const size_t count = (size_t)(rows * cols);
    out->values = malloc(count * sizeof *out->values);
    if (!out->values) {
        cli_error("--positions: out of memory for %zu positions", count);
        rc = CLI_EXIT_RUNTIME;
        goto done;
    }
    if (fseek(f, (long)info.data_offset, SEEK_SET) != 0 ||
        fread(out->values, sizeof *out->values, count, f) != count || fgetc(f) != EOF) {
        cli_error("--positions: '%s' does not hold exactly the %zu values its header "
                  "announces", path, count);
        free(out->values);
        out->values = NULL;
        goto done;
    }
    out->tokens = cols;
    rc = CLI_EXIT_OK;
done:
    fclose(f);
    return rc;
}

clpe_mrope_config cli_mrope_config_from_args(const cli_args *a, const cli_rope_factors *fac,
                                             const cli_rope_positions *pos)
{
    clpe_mrope_config m = a->vision ? clpe_mrope_config_vision(a->head_dim)
                                    : (clpe_mrope_config){.streams = a->mrope_streams};
    m.rope = cli_rope_config_from_args(a, 0);
    m.rope.short_factor = fac->short_factor;
    m.rope.long_factor = fac->long_factor;
    if (a->mrope_streams) {
        m.streams = a->mrope_streams;
        memset(m.section, 0, sizeof m.section);
        memcpy(m.section, a->mrope_section, a->mrope_streams * sizeof m.section[0]);
    } else {
        /* --vision alone: the rotary pairs in two halves (rows, columns) */
        uint32_t rotary = m.rope.rotary_dim ? m.rope.rotary_dim : m.rope.head_dim;
        m.section[0] = m.section[1] = rotary / 4;
    }
    /* dynamic NTK and LongRoPE take Hugging Face's max(position_ids) + 1 */
    int64_t top = -1;
    for (uint64_t k = 0; k < pos->tokens * m.streams; ++k)
        top = pos->token_first[k] > top ? pos->token_first[k] : top;
    m.rope.seq_len = top >= 0 ? (uint64_t)top + 1 : 0;
    return m;
}

int cli_rope_positions_read(const cli_args *a, cli_rope_positions *out)
{
    const uint32_t streams = a->mrope_streams ? a->mrope_streams : 2;
    positions_file file = {NULL, 0};
    memset(out, 0, sizeof *out);
    int rc = read_positions(a->positions_file, streams, &file);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (a->have_seq && a->seq != file.tokens) {
        cli_error("--seq %llu disagrees with the %llu tokens of '%s'", (unsigned long long)a->seq,
                  (unsigned long long)file.tokens, a->positions_file);
        free(file.values);
        return CLI_EXIT_USAGE;
    }
    /* the file's [streams, tokens] as [tokens, streams], so that a chunk
     * of tokens is one range */
    out->token_first = malloc((size_t)(file.tokens * streams) * sizeof *out->token_first);
    if (!out->token_first) {
        cli_error("--positions: out of memory for %llu positions",
                  (unsigned long long)(file.tokens * streams));
        free(file.values);
        return CLI_EXIT_RUNTIME;
    }
    for (uint64_t t = 0; t < file.tokens; ++t)
        for (uint32_t j = 0; j < streams; ++j)
            out->token_first[t * streams + j] = file.values[j * file.tokens + t];
    out->tokens = file.tokens;
    free(file.values);
    return CLI_EXIT_OK;
}
