# SPDX-License-Identifier: Apache-2.0
"""The clpe package's build backend: scikit-build-core, plus the C sources
of libclpe copied into the sdist.

A checkout builds libclpe from the clpe tree this folder lives in (python/..).
An sdist must build by itself, so build_sdist stages python/ with the C
sources in clpe-src/ (python/CMakeLists.txt uses that copy when it exists)
and points the version at clpe-src/include/clpe.h. Every other hook is
scikit-build-core's own.
"""
import os
import shutil
import tempfile
from pathlib import Path

from scikit_build_core import build as _build
from scikit_build_core.build import *  # noqa: F401,F403 (the PEP 517 hooks)

HERE = Path(__file__).resolve().parent.parent  # python/
VENDORED = "clpe-src"
# What the CMake build of the library and the tool (host/cli) reads (the
# tests and benchmark are not built when clpe is a subproject), the licence,
# and the top-level README whose Python section tests/test_readme.py runs.
C_SOURCES = ["CMakeLists.txt", "cmake", "include", "host", "kernels", "common", "reference",
             "LICENSE", "CHANGELOG.md", "README.md"]
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.so.*", "*.dylib", "*.dll",
                              "build", "dist", "*.egg-info", ".pytest_cache")


def build_sdist(sdist_directory, config_settings=None):
    if (HERE / VENDORED / "CMakeLists.txt").is_file():
        return _build.build_sdist(sdist_directory, config_settings)
    root = HERE.parent
    if not (root / "include" / "clpe.h").is_file():
        raise RuntimeError("clpe: build the sdist from a clpe checkout (python/ inside it)")
    sdist_directory = os.path.abspath(sdist_directory)
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp) / "python"
        shutil.copytree(HERE, stage, ignore=SKIP)
        for name in C_SOURCES:
            source = root / name
            if source.is_dir():
                shutil.copytree(source, stage / VENDORED / name, ignore=SKIP)
            elif source.is_file():
                (stage / VENDORED).mkdir(exist_ok=True)
                shutil.copy2(source, stage / VENDORED / name)
        pyproject = stage / "pyproject.toml"
        text = pyproject.read_text()
        pointer = 'input = "../include/clpe.h"'
        if pointer not in text:
            raise RuntimeError("clpe: pyproject.toml no longer reads the version from " + pointer)
        pyproject.write_text(text.replace(pointer, 'input = "%s/include/clpe.h"' % VENDORED))
        cwd = os.getcwd()
        os.chdir(stage)
        try:
            return _build.build_sdist(sdist_directory, config_settings)
        finally:
            os.chdir(cwd)
