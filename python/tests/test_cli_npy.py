# SPDX-License-Identifier: Apache-2.0
"""Tables from Python are bit for bit the CLI's .npy files: every preset,
every dtype, explicit and default starts, from the host emulation and from
the device."""
import subprocess

import numpy as np
import pytest

import clpe
from conftest import DTYPES, assert_same_bits

PRESETS = ["vaswani", "tensor2tensor", "fairseq", "marian", "opennmt-tf"]
# Presets a newer library may add; tested when the library knows them.
LATER_PRESETS = ["xlm", "musicgen"]


def known_presets():
    found = list(PRESETS)
    for name in LATER_PRESETS:
        try:
            clpe.config_preset(name, 8)
        except clpe.Error:
            continue
        found.append(name)
    return found


def cli_table(cli, tmp_path, args):
    path = tmp_path / "pe.npy"
    subprocess.run([str(cli), "encode", "--quiet", "-o", str(path)] + args, check=True,
                   timeout=120)
    return np.load(path)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("preset", known_presets())
def test_host_table_is_the_cli_npy(cli, tmp_path, preset, dtype):
    d, n, start = 34, 40, 4294967000
    from_cli = cli_table(cli, tmp_path, ["--preset", preset, "--d", str(d), "--seq", str(n),
                                         "--dtype", dtype, "--start", str(start)])
    assert from_cli.dtype == clpe.NUMPY_DTYPES[clpe.Dtype[dtype.upper()]]
    assert_same_bits(clpe.host_table(range(start, start + n), preset=preset, d=d, dtype=dtype),
                     from_cli)


@pytest.mark.parametrize("preset", known_presets())
def test_default_start_is_the_preset_first_position(cli, tmp_path, preset):
    from_cli = cli_table(cli, tmp_path, ["--preset", preset, "--d", "16", "--seq", "5"])
    first = clpe.config_preset(preset, 16).first_position
    assert_same_bits(clpe.host_table(range(first, first + 5), preset=preset, d=16), from_cli)


@pytest.mark.parametrize("dtype", DTYPES)
def test_device_table_is_the_cli_npy(cli, tmp_path, cl, context, queue, dtype):
    encoder = clpe.Encoder(context, d=64, dtype=dtype, freq="t2t", layout="split")
    if not encoder.supports(dtype):
        pytest.skip("the device lacks %s" % dtype)
    start = -(2 ** 62) + 11
    out = cl.array.empty(queue, (100, 64), encoder.dtype)
    encoder.table(queue, out, start=start).wait()
    from_cli = cli_table(cli, tmp_path, ["--d", "64", "--seq", "100", "--dtype", dtype,
                                         "--freq", "t2t", "--layout", "split",
                                         "--start", str(start)])
    assert_same_bits(out.get(), from_cli)


@pytest.mark.parametrize("preset", ["fairseq", "marian", "xlm"])
def test_odd_width_is_the_cli_npy(cli, tmp_path, preset):
    if preset not in known_presets():
        pytest.skip("the library has no %s preset" % preset)
    from_cli = cli_table(cli, tmp_path, ["--preset", preset, "--d", "33", "--seq", "20",
                                         "--start", "1000"])
    assert from_cli.shape == (20, 33)
    assert_same_bits(clpe.host_table(range(1000, 1020), preset=preset, d=33), from_cli)
