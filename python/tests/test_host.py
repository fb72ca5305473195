# SPDX-License-Identifier: Apache-2.0
"""The host emulation from NumPy: no OpenCL needed, strided arrays, and
add/gather agreeing with table + NumPy's own float32 arithmetic."""
import subprocess
import sys

import numpy as np
import pytest

import clpe
from conftest import assert_same_bits

D = 12


def test_host_calls_need_no_pyopencl():
    code = ("import sys; sys.modules['pyopencl'] = None\n"
            "import clpe\n"
            "print(clpe.host_table(range(3), d=4).shape)\n"
            "try:\n"
            "    clpe.select_device()\n"
            "except ImportError as e:\n"
            "    print('ImportError', 'PyOpenCL' in str(e))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "(3, 4)\nImportError True\n"


def test_add_on_a_strided_view_is_table_plus_numpy_float32():
    scale = 1.75
    base = np.random.default_rng(5).standard_normal((3, 10, D + 4)).astype(np.float32)
    x = base.copy()
    view = x[::2, 1:9, 2:2 + D]  # batch and row pitches other than packed
    starts = [7, -100]
    clpe.host_add(view, starts, d=D, scale=scale, preset="tensor2tensor")
    with clpe.HostEncoder(d=D, preset="tensor2tensor") as encoder:
        tables = [encoder.table(range(s, s + 8)) for s in starts]
    expected = base.copy()
    for b, table in enumerate(tables):
        rows = expected[2 * b, 1:9, 2:2 + D]
        rows[...] = rows * np.float32(scale) + table  # product rounded, then the sum
    assert_same_bits(x, expected)  # and nothing outside the view changed


def test_gather_counts_bad_ids_and_matches_table():
    embedding = np.random.default_rng(6).standard_normal((5, D)).astype(np.float32)
    ids = np.array([[0, 4, 5, -1], [2, 2, 2, 1]], np.int32)
    out, bad = clpe.host_gather(ids, embedding, [0, 3], d=D, scale=2.0)
    assert bad == 2
    table = clpe.host_table(range(0, 7), d=D)
    for b, start in enumerate([0, 3]):
        for s in range(4):
            row = embedding[ids[b, s]] if 0 <= ids[b, s] < 5 else np.zeros(D, np.float32)
            assert_same_bits(out[b, s], row * np.float32(2.0) + table[start + s])


def test_table_out_with_a_row_pitch():
    wide = np.zeros((4, D + 3), np.float64)
    clpe.host_table(range(10, 14), out=wide[:, :D], d=D, dtype=np.float64)
    assert_same_bits(wide[:, :D], clpe.host_table(range(10, 14), d=D, dtype="f64"))
    assert not wide[:, D:].any()


@pytest.mark.parametrize("preset", ["fairseq", "marian", "xlm"])
def test_odd_widths(preset):
    try:
        encoder = clpe.HostEncoder(preset=preset, d=9)
    except clpe.Error as error:
        assert error.name in ("CLPE_ERROR_INVALID_D", "CLPE_ERROR_UNKNOWN_PRESET")
        pytest.skip("%s: %s" % (preset, error.name))
    table = encoder.table(range(3, 6))
    assert table.shape == (3, 9)
    if preset == "fairseq":  # the odd column is padded with zeros
        assert not table[:, 8].any()
