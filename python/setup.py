"""Build the clpe Python package: compile libclpe with CMake from the clpe
checkout this directory belongs to and ship it inside the package, so that
`pip install ./python` is the whole installation."""
import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent  # the clpe repository root
LIBRARY = "libclpe.so"


def header_version():
    text = (SOURCE / "include" / "clpe.h").read_text()
    parts = [re.search(r"#define CLPE_VERSION_%s (\d+)" % p, text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


class BuildWithLibrary(build_py):
    """build_py that also builds the shared library next to the modules."""

    def run(self):
        super().run()
        if not (SOURCE / "CMakeLists.txt").is_file():
            raise SystemExit("clpe: build the package from a clpe checkout (python/ inside it)")
        build_dir = Path(self.get_finalized_command("build").build_temp) / "libclpe"
        configure = ["cmake", "-S", str(SOURCE), "-B", str(build_dir),
                     "-DCMAKE_BUILD_TYPE=Release", "-DCLPE_BUILD_TESTS=OFF",
                     "-DCLPE_BUILD_CLI=OFF", "-DCLPE_BUILD_BENCH=OFF"]
        subprocess.check_call(configure)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "clpe",
                               "--parallel", jobs])
        # libclpe.so is a link to the versioned file; ship the file itself.
        built = (build_dir / LIBRARY).resolve()
        target = Path(self.build_lib) / "clpe" / LIBRARY
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)
        # clpe_device.h (generated with the library): clpe.device_header_path()
        header = Path(self.build_lib) / "clpe" / "include" / "clpe_device.h"
        header.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(build_dir / "include" / "clpe_device.h", header)


class BinaryDistribution(Distribution):
    """The wheel carries a compiled library, so it is platform-specific."""

    def has_ext_modules(self):
        return True


setup(version=header_version(), cmdclass={"build_py": BuildWithLibrary},
      distclass=BinaryDistribution)
