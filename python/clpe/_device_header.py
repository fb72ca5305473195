# SPDX-License-Identifier: Apache-2.0
"""clpe_device.h from Python: the OpenCL C header whose functions give clpe's
exact sine and cosine inside kernels of your own (see docs/
device_functions.md of the clpe sources).

    import clpe, pyopencl as cl
    rope = clpe.Rope(ctx, head_dim=128, base=500000.0)
    words, options = clpe.device_words(rope)
    program = cl.Program(ctx, clpe.device_source() + my_kernel_source).build(options)
    # or: cl.Program(ctx, '#include "clpe_device.h"\\n' + ...).build(
    #         options + " -I " + clpe.device_include_dir())
"""
import ctypes
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Tuple, Union, cast

from . import _status

if TYPE_CHECKING:
    import pyopencl as cl

    from ._opencl import Encoder
    from ._rope import Rope

_HEADER = "clpe_device.h"


def device_source() -> str:
    """The text of clpe_device.h that the loaded library carries (always
    the one its words match): put it before your own program source."""
    function = getattr(_status._lib, "clpe_device_source", None)
    if function is None:
        raise RuntimeError("clpe: the loaded library is older than clpe_device.h")
    text: bytes = function()
    return text.decode()


def _candidates() -> Iterator[Path]:
    from . import library_path
    yield Path(__file__).resolve().parent / "include" / _HEADER  # shipped in the package
    library = Path(library_path).resolve().parent
    yield library / "include" / _HEADER                          # a CMake build folder
    for prefix in list(library.parents)[:3]:                     # <prefix>/lib[/<arch>]
        yield prefix / "include" / _HEADER


def device_header_path() -> str:
    """The path of clpe_device.h for the loaded library: the copy shipped in
    this package, else the one installed beside the library. Only a file
    whose text is the library's own is returned; FileNotFoundError if there
    is none (device_source() needs no file)."""
    text = device_source()
    for path in _candidates():
        try:
            if path.read_text() == text:
                return str(path)
        except OSError:
            continue
    raise FileNotFoundError("clpe: no clpe_device.h matching the library %s was found; "
                            "build with clpe.device_source() instead"
                            % __import__("clpe").library_path)


def device_include_dir() -> str:
    """The folder of clpe_device.h, for a build option -I."""
    return str(Path(device_header_path()).parent)


def device_words(obj: Union["Encoder", "Rope"]) -> Tuple["cl.Buffer", str]:
    """(words, build_options) for clpe_device.h: a new read-only
    pyopencl.Buffer on obj's context holding the tuning words of obj (a
    clpe.Rope or clpe.Encoder) in the layout clpe.h documents, and the
    options to add to the build of a program that reads it."""
    import pyopencl as cl

    from ._opencl import Encoder
    from ._rope import Rope
    if isinstance(obj, Rope):
        name = "clpe_rope_device_words"
    elif isinstance(obj, Encoder):
        name = "clpe_encoder_device_words"
    else:
        raise TypeError("clpe: device_words takes a clpe.Rope or clpe.Encoder, not %s"
                        % type(obj).__name__)
    function = getattr(_status._lib, name, None)
    if function is None:
        raise RuntimeError("clpe: the loaded library is older than clpe_device.h")
    mem = ctypes.c_void_p()
    options = ctypes.c_char_p()
    with obj._hold() as handle:
        status = function(handle, ctypes.byref(mem), ctypes.byref(options))
    if status != 0:
        raise _status.Error(status, "device words")
    if mem.value is None or options.value is None:
        raise RuntimeError("clpe: %s succeeded without its buffer or options" % name)
    # from_int_ptr makes an object of the class it is called on.
    buffer = cast("cl.Buffer", cl.Buffer.from_int_ptr(mem.value, retain=False))
    return buffer, options.value.decode()
