# SPDX-License-Identifier: Apache-2.0
"""The numbers printed in the seed texts, reproduced from Python (host
emulation and device), and the README's one-liner that prints them."""
import os
import subprocess
import sys

import numpy as np

import clpe

# Seed 000 ("Who Bit Whom?"): d = 8, paper frequencies, interleaved, 3 decimals.
SEED8_POSITIONS = [5, 6, 305]
SEED8 = np.array([
    [-0.959, 0.284, 0.479, 0.878, 0.050, 0.999, 0.005, 1.000],
    [-0.279, 0.960, 0.565, 0.825, 0.060, 0.998, 0.006, 1.000],
    [-0.262, -0.965, -0.793, 0.609, 0.092, -0.996, 0.300, 0.954],
])
# Seed 003: d = 4, position 2, 4 decimals.
SEED4 = np.array([0.9093, -0.4161, 0.0200, 0.9998])

# The seed misprints sin(3.05) = 0.0915 as 0.092 (row 305, slot 4); that
# cell alone gets a whole unit of the last digit (tests/test_golden.c says why).
TOLERANCE8 = np.full(SEED8.shape, 0.5e-3 + 1e-6)
TOLERANCE8[2, 4] = 1e-3


def check_seed8(table):
    assert table.shape == (3, 8)
    assert np.all(np.abs(table - SEED8) <= TOLERANCE8), table
    assert abs(table[2, 4] - 0.0915) < 1e-4  # the misprinted cell is really 0.0915


def test_seed_tables_host():
    check_seed8(clpe.host_table(SEED8_POSITIONS, d=8))
    row = clpe.host_table(range(2, 3), d=4)[0]
    assert np.all(np.abs(row - SEED4) <= 0.5e-4 + 1e-6), row


def test_seed_table_device(cl, context, queue):
    encoder = clpe.Encoder(context, d=8)
    out = cl.array.empty(queue, (301, 8), np.float32)
    encoder.table(queue, out, start=5).wait()
    check_seed8(out.get()[[0, 1, 300]])


def test_readme_one_liner():
    code = "import clpe; print(clpe.host_table([5, 6, 305], d=8).round(3))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=os.path.dirname(os.path.abspath(__file__)))
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "[[-0.959  0.284  0.479  0.878  0.05   0.999  0.005  1.   ]\n"
        " [-0.279  0.96   0.565  0.825  0.06   0.998  0.006  1.   ]\n"
        " [-0.262 -0.965 -0.793  0.609  0.091 -0.996  0.3    0.954]]\n")
