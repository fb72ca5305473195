# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: the OpenCL device every clpe tool picks (PoCL on a
machine without a GPU), a context and queue on it, the CLI, the header."""
import importlib
import os
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent


def source_root():
    """The clpe sources these tests read (clpe.h, the top-level README): the
    copy an sdist carries in clpe-src/ beside tests/, else the checkout that
    python/tests lives in."""
    for candidate in (HERE.parent / "clpe-src", HERE.parents[1]):
        if (candidate / "include" / "clpe.h").is_file():
            return candidate
    raise RuntimeError("clpe tests: no include/clpe.h in %s/clpe-src or %s (run them from a "
                       "checkout or an unpacked sdist)" % (HERE.parent, HERE.parents[1]))


REPOSITORY = source_root()
HEADER = REPOSITORY / "include" / "clpe.h"
DTYPES = ["f32", "f16", "bf16", "f64"]


def need(module):
    """Import an optional test dependency: skipped on a developer's machine
    without it, but in CI (CI set) a missing one fails the run."""
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module)


@pytest.fixture(scope="session")
def cl():
    return need("pyopencl")


@pytest.fixture(scope="session")
def device(cl):
    import clpe
    return clpe.select_device()


@pytest.fixture(scope="session")
def context(cl, device):
    return cl.Context([device])


@pytest.fixture()
def queue(cl, context):
    return cl.CommandQueue(context)


@pytest.fixture(scope="session")
def cli():
    """The clpe command-line tool: CLPE_CLI, else the one the installed
    package carries (clpe/bin/clpe), else build/host/cli/clpe of the
    checkout. Named but missing is a failure, not a skip."""
    named = os.environ.get("CLPE_CLI")
    if named:
        path = Path(named)
    else:
        from clpe.__main__ import tool_path
        path = Path(tool_path())
        if not path.is_file():
            path = REPOSITORY / "build" / "host" / "cli" / "clpe"
    if not path.is_file():
        if named or os.environ.get("CI"):
            pytest.fail("no clpe CLI at %s" % path)
        pytest.skip("no clpe CLI at %s (build the project, or set CLPE_CLI)" % path)
    return path


def bits(array):
    """The raw bits of a float array, for exact comparisons (NaN included)."""
    array = np.ascontiguousarray(array)
    return array.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[array.itemsize])


def assert_same_bits(actual, expected):
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    diff = np.flatnonzero(bits(actual) != bits(expected))
    assert diff.size == 0, "%d of %d elements differ, first at flat index %d: %r vs %r" % (
        diff.size, actual.size, diff[0], actual.flat[diff[0]], expected.flat[diff[0]])
