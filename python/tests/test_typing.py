# SPDX-License-Identifier: Apache-2.0
"""The package is typed to the end: user scripts that call every public name
(typed/usage.py, typed/usage_rotary.py) pass mypy --strict against the
installed clpe, and the package's own modules pass mypy --strict."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import clpe
from conftest import need

TYPED = Path(__file__).resolve().parent / "typed"
PACKAGE = Path(clpe.__file__).resolve().parent
# PyOpenCL releases before 2024 ship no type information.
CONFIG = """[mypy]
strict = True
[mypy-pyopencl.*]
ignore_missing_imports = True
"""


def mypy(tmp_path, *arguments):
    """(exit status, the error lines) of mypy --strict run by this interpreter."""
    need("mypy")
    (tmp_path / "mypy.ini").write_text(CONFIG)
    env = dict(os.environ)
    # A package imported from a source tree (PYTHONPATH) is found by mypy
    # through MYPYPATH; an installed one through this interpreter's site.
    if "site-packages" not in str(PACKAGE):
        env["MYPYPATH"] = str(PACKAGE.parent)
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                             str(tmp_path / "mypy.ini"), "--cache-dir", str(tmp_path / "cache"),
                             *arguments], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=600)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    return result.returncode, errors, result.stdout + result.stderr


def script_errors(errors, script):
    return [line for line in errors if line.startswith(str(script)) or
            line.startswith(script.name)]


def test_a_typed_user_script_passes_mypy_strict(tmp_path):
    script = TYPED / "usage.py"
    _, errors, output = mypy(tmp_path, str(script))
    assert not script_errors(errors, script), output
    assert "Success" in output or "Found" in output, output  # mypy itself ran


def test_a_typed_rotary_user_script_passes_mypy_strict(tmp_path):
    script = TYPED / "usage_rotary.py"
    _, errors, output = mypy(tmp_path, str(script))
    assert not script_errors(errors, script), output


def test_the_package_passes_mypy_strict(tmp_path):
    status, errors, output = mypy(tmp_path, "-p", "clpe")
    assert status == 0 and not errors, output
