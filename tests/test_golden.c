/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_golden.c - the numbers printed in the seed texts, reproduced by the
 * device and by the host emulation.
 *
 * Seed 000 ("Who Bit Whom?") prints the d = 8 table (paper frequencies, base
 * 10000, interleaved) at positions 5, 6 and 305 to 3 decimals; seed 003
 * prints d = 4 at position 2 to 4 decimals. These are values a human wrote
 * down independently of this code, so they are the first line of defence
 * against a wrong convention (frequency, layout, sin/cos order).
 */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

/* Seed 000, table "pos sin,cos (i=0) ... (i=3)". */
static const int64_t seed8_pos[3] = {5, 6, 305};
static const double seed8[3][8] = {
    {-0.959, 0.284, 0.479, 0.878, 0.050, 0.999, 0.005, 1.000},
    {-0.279, 0.960, 0.565, 0.825, 0.060, 0.998, 0.006, 1.000},
    {-0.262, -0.965, -0.793, 0.609, 0.092, -0.996, 0.300, 0.954},
};

/* Seed 003: d = 4, position 2. */
static const double seed4[4] = {0.9093, -0.4161, 0.0200, 0.9998};

/* "To k decimals" means the printed value is the true one rounded to k
 * decimals: |v - printed| <= half a unit of the last digit. A little slack
 * (1e-6, far above float32's 6e-8 and far below the digit) absorbs float32
 * rounding of values that sit almost exactly on a half-unit boundary.
 *
 * One cell of seed 000 is misrounded: position 305, slot 4 (i = 2, sin)
 * prints 0.092, but sin(305 * 10000^(-4/8)) = sin(3.05) = 0.091465..., which
 * rounds to 0.091. For that cell alone we accept one full unit of the last
 * digit (1e-3): the seed's digits are still respected, and the exact value
 * is pinned down anyway by test_accuracy against MPFR. Every other cell
 * must round correctly. */
#define HALF_UNIT_3 (0.5e-3 + 1e-6)
#define HALF_UNIT_4 (0.5e-4 + 1e-6)
#define MISROUNDED_ROW 2
#define MISROUNDED_SLOT 4

static double tolerance8(int row, int slot)
{
    return (row == MISROUNDED_ROW && slot == MISROUNDED_SLOT) ? 1e-3 : HALF_UNIT_3;
}

/* Confirm the misrounding claim above from libm, so the wider tolerance is
 * never granted silently to a cell that does not need it. */
Test(golden, seed_misrounded_cell_is_the_only_one)
{
    for (int r = 0; r < 3; ++r) {
        for (int i = 0; i < 4; ++i) {
            double angle = (double)seed8_pos[r] * pow(10000.0, -2.0 * i / 8.0);
            double v[2] = {sin(angle), cos(angle)};
            for (int k = 0; k < 2; ++k) {
                int slot = 2 * i + k;
                int ok = fabs(v[k] - seed8[r][slot]) <= HALF_UNIT_3;
                if (r == MISROUNDED_ROW && slot == MISROUNDED_SLOT)
                    cr_expect(!ok, "cell (305, %d) is no longer misrounded: %.6f", slot, v[k]);
                else
                    cr_expect(ok, "seed cell (%lld, %d) = %.3f but libm says %.6f",
                              (long long)seed8_pos[r], slot, seed8[r][slot], v[k]);
            }
        }
    }
}

/* Device rows for `count` single positions of enc (one table call each). */
static float *device_rows(test_cl *t, clpe_encoder *enc, uint32_t d, const int64_t *pos,
                          size_t count)
{
    size_t bytes = count * d * sizeof(float);
    cl_mem buf = test_buffer_poisoned(t, bytes, 0xA5);
    for (size_t k = 0; k < count; ++k) {
        clpe_tensor out = {.buffer = buf, .offset = k * d * sizeof(float), .row_pitch = 0, .batch_pitch = 0};
        clpe_status st = clpe_enqueue_table(enc, t->queue, pos[k], 1, &out, 0, NULL, NULL);
        cr_assert_eq(st, CLPE_SUCCESS, "clpe_enqueue_table(%lld): %s", (long long)pos[k],
                     clpe_status_string(st));
    }
    float *rows = test_buffer_read(t, buf, bytes);
    clReleaseMemObject(buf);
    return rows;
}

static void check_seed8(const float *rows, const char *who)
{
    for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 8; ++s)
            cr_expect(fabs(rows[r * 8 + s] - seed8[r][s]) <= tolerance8(r, s),
                      "%s: d=8 position %lld slot %d = %.6f, seed says %.3f", who,
                      (long long)seed8_pos[r], s, rows[r * 8 + s], seed8[r][s]);
}

static void check_seed4(const float *row, const char *who)
{
    for (int s = 0; s < 4; ++s)
        cr_expect(fabs(row[s] - seed4[s]) <= HALF_UNIT_4,
                  "%s: d=4 position 2 slot %d = %.6f, seed says %.4f", who, s, row[s], seed4[s]);
}

Test(golden, seed_d8_device)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = test_config(8, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    float *rows = device_rows(&t, enc, 8, seed8_pos, 3);
    check_seed8(rows, "device");
    free(rows);

    /* The same rows from one table call over [5, 306), picked out. */
    size_t n = 301;
    cl_mem buf = test_buffer_poisoned(&t, n * 8 * sizeof(float), 0x5A);
    clpe_tensor out = {.buffer = buf, .offset = 0, .row_pitch = 0, .batch_pitch = 0};
    cr_assert_eq(clpe_enqueue_table(enc, t.queue, 5, n, &out, 0, NULL, NULL), CLPE_SUCCESS);
    float *all = test_buffer_read(&t, buf, n * 8 * sizeof(float));
    float picked[24];
    for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 8; ++s)
            picked[r * 8 + s] = all[(size_t)(seed8_pos[r] - 5) * 8 + s];
    check_seed8(picked, "device range");
    free(all);
    clReleaseMemObject(buf);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}

Test(golden, seed_d4_device)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = test_config(4, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    int64_t p = 2;
    float *row = device_rows(&t, enc, 4, &p, 1);
    check_seed4(row, "device");
    free(row);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}

Test(golden, seed_host_emulation)
{
    clpe_config cfg8 = test_config(8, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_config cfg4 = test_config(4, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_INTERLEAVED);
    clpe_status st;
    clpe_encoder *e8 = clpe_encoder_create_host(&cfg8, &st);
    cr_assert_not_null(e8, "%s", clpe_status_string(st));
    clpe_encoder *e4 = clpe_encoder_create_host(&cfg4, &st);
    cr_assert_not_null(e4, "%s", clpe_status_string(st));
    float rows[24], row4[4];
    for (int r = 0; r < 3; ++r)
        cr_assert_eq(clpe_host_table(e8, seed8_pos[r], 1, rows + 8 * r, 0), CLPE_SUCCESS);
    check_seed8(rows, "host");
    cr_assert_eq(clpe_host_table(e4, 2, 1, row4, 0), CLPE_SUCCESS);
    check_seed4(row4, "host");
    clpe_encoder_release(e8);
    clpe_encoder_release(e4);
}

/* The split layout holds the same numbers: sin of pair i at slot i, cos at
 * d/2 + i. Checked against the seed too, so a layout mix-up cannot hide. */
Test(golden, seed_split_layout_device)
{
    test_cl t;
    test_cl_open(&t);
    clpe_config cfg = test_config(8, 10000.0, CLPE_FREQ_PAPER, CLPE_LAYOUT_SPLIT);
    clpe_encoder *enc = test_encoder(&t, &cfg);
    float *rows = device_rows(&t, enc, 8, seed8_pos, 3);
    float interleaved[24];
    for (int r = 0; r < 3; ++r)
        for (int i = 0; i < 4; ++i) {
            interleaved[r * 8 + 2 * i] = rows[r * 8 + i];
            interleaved[r * 8 + 2 * i + 1] = rows[r * 8 + 4 + i];
        }
    check_seed8(interleaved, "device split");
    free(rows);
    clpe_encoder_release(enc);
    test_cl_close(&t);
}
