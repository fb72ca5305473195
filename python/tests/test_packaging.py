# SPDX-License-Identifier: Apache-2.0
"""The installed package is what PyPI and conda users expect: a
py3-none-<platform> wheel (ctypes, no extension module) with its library
beside the modules, type information, its dependencies declared, and the
version of the header it was built from."""
import os
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

import clpe
from clpe import _library
from conftest import HEADER


def test_library_names_per_platform():
    assert _library.library_names("linux") == ["libclpe.so.1", "libclpe.so"]
    assert _library.library_names("darwin") == ["libclpe.dylib"]
    assert _library.library_names("win32") == ["clpe.dll", "libclpe.dll"]
    assert _library.library_names("freebsd13") == ["libclpe.so.1", "libclpe.so"]


def test_the_library_is_the_one_beside_the_package():
    if "CLPE_LIBRARY" in os.environ:
        pytest.skip("CLPE_LIBRARY names another library")
    package = Path(clpe.__file__).parent
    assert Path(clpe.library_path).parent == package
    assert Path(clpe.library_path).name in _library.library_names()


def test_typed():
    assert (Path(clpe.__file__).parent / "py.typed").is_file()


def test_version_is_the_header_s():
    text = HEADER.read_text()
    parts = [re.search(r"#define CLPE_VERSION_%s (\d+)" % p, text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    assert clpe.__version__ == ".".join(parts)
    assert metadata.version("clpe") == clpe.__version__


def test_wheel_metadata():
    dist = metadata.distribution("clpe")
    wheel = dist.read_text("WHEEL") or ""
    tags = re.findall(r"^Tag: (\S+)$", wheel, re.M)
    assert tags, wheel
    for tag in tags:
        python, abi, platform = tag.split("-")
        assert (python, abi) == ("py3", "none"), tag
        assert platform != "any", tag
    requires = " ".join(dist.requires or [])
    assert re.search(r"\bnumpy\b", requires) and re.search(r"\bpyopencl\b", requires)


def test_no_second_copy_of_the_library_in_the_package():
    # A wheel is a zip: versioned links would have become copies.
    names = sorted(p.name for p in Path(clpe.__file__).parent.iterdir()
                   if p.name.startswith(("libclpe", "clpe.dll")))
    assert names == [Path(clpe.library_path).name], names
    assert sys.version_info >= (3, 9)


def test_the_icd_loader_is_the_system_s(context):
    """The wheel leaves the OpenCL ICD loader out: libclpe's libOpenCL.so.1
    is the system's, whether or not PyOpenCL brought a private one."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/maps")
    mapped = {line.split()[-1] for line in open("/proc/self/maps")
              if "/" in line and "libOpenCL" in line.rsplit("/", 1)[-1]}
    package = Path(clpe.__file__).parent
    inside = [p for p in mapped if Path(p).parent in (package, package.parent / "clpe.libs")]
    assert not inside, "the package carries an ICD loader: %s" % inside
    # A private copy (PyPI's PyOpenCL: pyopencl/.libs/libOpenCL-<hash>.so.1.0.0)
    # cannot satisfy libclpe's NEEDED libOpenCL.so.1; the system's does.
    public = [p for p in mapped if re.fullmatch(r"libOpenCL\.so(\.\d+)*", Path(p).name)]
    assert public, "no libOpenCL.so.1 mapped beside %s" % sorted(mapped)
