/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check.h - the parts of `clpe check` (cmd_check.c drives them):
 *   check_cases.c        what to run: configurations, positions, inputs
 *   check_paths.c        running each path on the device and comparing it
 *                        bit for bit with the host emulation
 *   check_rope.c         the rotary paths, the same way
 *   check_rope_kv.c      rotary into a KV cache, the same way
 *   check_device_fns.c   the functions of clpe_device.h in a kernel of the
 *                        check's own, the same way
 *   check_reference.c    sampling device values against the MPFR reference
 *   check_report_text.c  the table and the failure lines on stdout
 *   check_report_json.c  the --json report
 */
#ifndef CLPE_CLI_CHECK_H
#define CLPE_CLI_CHECK_H

#include "cli.h"

#include "common/random.h"
#include "reference/reference.h"

#include <stdint.h>
#include <stdio.h>

/* f32, f16, bf16, f64: every clpe_dtype value */
#define CHECK_NDTYPES 4
/* Fill byte of every buffer before a kernel writes it. */
#define CHECK_POISON 0xA5

/* Every path `clpe check` runs, in the order of the reports: its enum name
 * and the name --paths, the text and the JSON use. Adding a path is one
 * entry here and, for an operation of its own (not a case of an existing
 * one), one row of cmd_check.c's OPERATIONS. */
#define CHECK_PATHS(X)                                                                         \
    X(TABLE, "table")                                                                          \
    X(ADD, "add")                                                                              \
    X(ADD_OUT, "add_out")                                                                      \
    X(GATHER, "gather")                                                                        \
    X(PAD_POSITIONS, "pad_positions")                                                          \
    X(ROPE, "rope")                                                                            \
    X(ROPE_CACHE, "rope_cache")                                                                \
    X(MROPE, "mrope")                                                                          \
    X(MROPE_CACHE, "mrope_cache")                                                              \
    X(VISION, "vision")                                                                        \
    X(VISION_CACHE, "vision_cache")                                                            \
    X(ROPE_KV, "rope_kv")                                                                      \
    X(ROPE_KV_PAGED, "rope_kv_paged")                                                          \
    X(DEVICE_FUNCTIONS, "device_functions")

typedef enum check_path {
#define CHECK_PATH_ENUM(id, name) CHECK_PATH_##id,
    CHECK_PATHS(CHECK_PATH_ENUM)
#undef CHECK_PATH_ENUM
    CHECK_NPATHS
} check_path;

extern const char *const check_path_names[CHECK_NPATHS];

/* One path's share of a dtype's counts. */
typedef struct check_path_tally {
    uint64_t elements;
    uint64_t mismatches;
    uint32_t cases;         /* calls compared */
} check_path_tally;

/* What one device and dtype came to. */
typedef struct check_tally {
    int dtype;
    int skipped;
    char skip_reason[96];
    uint64_t elements;      /* elements compared (data, not guards) */
    uint64_t mismatches;    /* elements whose bits differ, guards included */
    uint64_t samples;       /* elements compared with MPFR */
    double max_err;
    double bound;           /* the bound at the largest |position| */
    int64_t worst_pos;
    uint64_t over_bound;    /* samples whose error exceeded their bound */
    char first_over[200];
    char first_mismatch[320];
    char error[320];        /* a call that failed outright */
    char paths[160];        /* which paths ran, space-separated */
    uint32_t configurations;   /* configurations checked */
    uint32_t not_offered;      /* CHECK_IF_OFFERED ones this library build refused */
    uint64_t rope_elements;    /* of elements and mismatches: the rope and rope_cache paths */
    uint64_t rope_mismatches;
    uint64_t rope_samples;     /* float32 rotations compared with the exact one */
    double rope_max_ratio;     /* worst |error| / (2^-22 hypot(a, b)) of them */
    check_path_tally path[CHECK_NPATHS];
    unsigned char path_selected[CHECK_NPATHS];
} check_tally;

/* One device's run. */
typedef struct check_checker {
    const cli_device *dev;
    int quick;
    int corrupt_pending;    /* flip one bit of the next table read back (tests) */
    int corrupt_rope_pending; /* the same for the next rotated queries read back */
    int corrupt_kv_pending; /* the same for the next key cache read back */
    uint32_t paths;         /* bit p: path p runs (--paths) */
    uint64_t rng;
    ref_encoding *ref;      /* the reference of the configuration being checked */
} check_checker;

/* What one device came to, for the reports. */
typedef struct check_device_result {
    unsigned index;
    char name[256];
    char platform[256];
    char open_error[160];
    check_tally t[CHECK_NDTYPES];
} check_device_result;

static inline int check_tally_failed(const check_tally *t)
{
    return !t->skipped && (t->mismatches || t->error[0] || t->over_bound);
}

static inline const char *check_verdict(const check_tally *t)
{
    return t->skipped ? "skipped" : check_tally_failed(t) ? "FAIL" : "pass";
}

static inline int check_selected(const check_checker *ck, check_path p)
{
    return (ck->paths >> p) & 1u;
}

/* The counts of t before a case, to credit what the case adds to its path. */
typedef struct check_mark {
    uint64_t elements, mismatches;
} check_mark;

static inline check_mark check_mark_now(const check_tally *t)
{
    return (check_mark){t->elements, t->mismatches};
}

static inline void check_credit(check_tally *t, check_path p, check_mark before)
{
    t->path[p].elements += t->elements - before.elements;
    t->path[p].mismatches += t->mismatches - before.mismatches;
    ++t->path[p].cases;
}

/* Run `call`, one case of path p, when p is selected, and credit it to p. */
#define CHECK_RUN(ck, t, p, call)                                                              \
    do {                                                                                       \
        if (check_selected((ck), (p))) {                                                       \
            const check_mark mark_ = check_mark_now(t);                                        \
            call;                                                                              \
            check_credit((t), (p), mark_);                                                     \
        }                                                                                      \
    } while (0)

/* ---- check_cases.c ---- */

/* Widths the run covers. */
size_t check_widths(int quick, const uint32_t **widths);

/* How check_convention's configuration is to be run. */
typedef enum check_need {
    CHECK_DONE = 0,      /* past the last convention */
    CHECK_ALWAYS = 1,    /* every library build must run it */
    CHECK_IF_OFFERED = 2 /* a later layout or flag: run it when clpe_config_check
                            accepts it, skip it in a build that refuses it */
} check_need;
/* Convention number conv (0, 1, ...) at width w into *cfg: both frequency
 * conventions in every layout, then the odd widths (fairseq's zero column,
 * the Marian and XLM half pair). */
check_need check_convention(int conv, uint32_t w, clpe_config *cfg);

/* One table case: n rows from start, gap poisoned elements between rows. */
typedef struct check_table_case {
    int64_t start;
    size_t n;
    size_t gap;
} check_table_case;
#define CHECK_MAX_TABLE_CASES 24
/* The table cases for width d: starts that straddle the places where
 * careless arithmetic breaks, random starts, and one long table (several
 * launches, the odometer running far). Returns how many. */
size_t check_table_cases(int quick, uint32_t d, uint64_t *rng,
                         check_table_case out[CHECK_MAX_TABLE_CASES]);
/* A pseudo-random position (splitmix64 stream), the ones that break
 * careless code overweighted. */
int64_t check_rand_position(uint64_t *rng);
/* count elements of dtype with finite values in about [-4, 4]. */
void check_fill_random(int dtype, void *buf, size_t count, uint64_t *rng);
/* Positions of a [batch, seq] problem for a source: batch * seq ids,
 * batch starts, or *start. */
void check_make_positions(uint64_t *rng, clpe_position_source src, size_t batch, size_t seq,
                          int64_t *pos, int64_t *start);
/* n token ids for a vocab of vocab, about one in eight out of range; the
 * number of bad ones and the index of the first (0xFFFFFFFF: none). */
void check_make_ids(uint64_t *rng, int32_t *ids, size_t n, size_t vocab, uint32_t *bad,
                    uint32_t *first_bad);
/* [batch, seq] ids with left padding and pads in between, and the positions
 * fairseq's make_positions gives them. */
void check_make_padded_ids(uint64_t *rng, size_t batch, size_t seq, int32_t pad_id,
                           int64_t first, int64_t pad_pos, int32_t *ids, int64_t *positions);

/* ---- check_paths.c ---- */

/* "f32 paper/split d=64", for messages. */
void check_config_label(const clpe_config *cfg, char *out, size_t cap);
void check_table(check_checker *ck, check_tally *t, clpe_encoder *enc, const clpe_config *cfg,
                 int64_t start, size_t n, size_t gap);
void check_add(check_checker *ck, check_tally *t, clpe_encoder *enc, const clpe_config *cfg,
               clpe_position_source src, size_t batch, size_t seq);
void check_gather(check_checker *ck, check_tally *t, clpe_encoder *enc, const clpe_config *cfg,
                  size_t batch, size_t seq);
void check_pad_positions(check_checker *ck, check_tally *t, clpe_encoder *enc,
                         const clpe_config *cfg, size_t batch, size_t seq);

/* ---- check_rope.c ---- */

/* "f32 rope half/default head_dim=16", for messages. */
void check_rope_label(const clpe_rope_config *cfg, char *out, size_t cap);
/* A rotary configuration of the check's cases: the scaling's parameters
 * the check always uses (check_rope.c). */
clpe_rope_config check_rope_config(uint32_t head_dim, uint32_t rotary_dim,
                                   clpe_rope_pairing pairing, clpe_rope_scaling scaling,
                                   int dtype);
/* Rotations and caches of every case for dtype, with rotary objects that
 * share like's program (like may be NULL: each builds its own). */
void check_rope(check_checker *ck, check_tally *t, clpe_encoder *like, int dtype);

/* ---- check_rope_kv.c ---- */

/* clpe_enqueue_rope_kv against clpe_host_rope_kv: contiguous caches
 * (CHECK_PATH_ROPE_KV) and paged ones (CHECK_PATH_ROPE_KV_PAGED), every
 * cache dtype a rope of dtype takes, fused and separate inputs. */
void check_rope_kv(check_checker *ck, check_tally *t, clpe_encoder *like, int dtype);

/* ---- check_device_fns.c ---- */

/* clpe_device.h's functions in a kernel of the check's own against the
 * host emulation of the library's table and rotation (which the library's
 * own kernels match bit for bit on the other paths). */
void check_device_functions(check_checker *ck, check_tally *t, clpe_encoder *like, int dtype);

/* ---- check_reference.c ---- */

/* The float32 rotation bound: for the pair (a, b) rotated by the angle of
 * ref_at (its negative if inverse) into (got_a, got_b), the larger error of
 * the two against the exact rotation, over 2^-22 hypot(a, b). 0 for a zero
 * pair rotated to zero; NaN stays NaN. */
double check_rope_error_ratio(ref_encoding *ref, int inverse, double a, double b, double got_a,
                              double got_b);

/* Largest acceptable |error| of dtype against the exact value at p. */
double check_error_bound(int dtype, int64_t p);
/* Compare `samples` elements of n device rows from start (the first and
 * last rows always) with ck->ref. */
void check_sample_errors(check_checker *ck, check_tally *t, const clpe_config *cfg,
                         const unsigned char *rows, int64_t start, size_t n, size_t row_pitch,
                         int samples);

/* ---- check_report_text.c, check_report_json.c ---- */

void check_report_text(const check_device_result *res, size_t n, int all_pass, double seconds);
void check_report_json(FILE *f, const check_device_result *res, size_t n, int quick, int pass,
                       double seconds);

#endif
