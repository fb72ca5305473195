# SPDX-License-Identifier: Apache-2.0
"""clpe: exact sinusoidal position encoding on any OpenCL device.

    import clpe
    clpe.host_table([5, 6, 305], d=8)            # NumPy, no OpenCL needed
    enc = clpe.Encoder(ctx, device, preset="fairseq", d=1024)
    event = enc.add(queue, x, positions=[0, 7])  # x: a pyopencl.array.Array

Importing checks this binding's structs and constants against the loaded
libclpe (ImportError on any difference). See include/clpe.h of the clpe
repository for the exact meaning of every call.
"""
from . import _status
from ._abi import (Dtype, Flag, Freq, Layout, MropeLadder, PositionSource, RopePairing,
                   RopeScaling, check_abi)
from ._library import load_library

_lib, library_path = load_library()
_abi_table = check_abi(_lib, library_path)
_status.bind(_lib, _abi_table)

from ._config import NUMPY_DTYPES, Config, config_default, config_preset  # noqa: E402
from ._device_header import (device_header_path, device_include_dir, device_source,  # noqa: E402
                             device_words)
from ._host import HostEncoder, host_add, host_gather, host_table  # noqa: E402
from ._opencl import Encoder, Positions, Tensor, select_device  # noqa: E402
from ._mrope import has_mrope  # noqa: E402
from ._rope import HostMRope, HostRope, MRope, Rope, has_rope  # noqa: E402
from ._hf_config import ConfigError, map_config as hf_rope_settings  # noqa: E402
from ._rope_kv import host_rope_kv, rope_kv  # noqa: E402
from ._status import Error, status_name, status_string  # noqa: E402

__version__ = _lib.clpe_version_string().decode()
VERSION_NUMBER = _lib.clpe_version()  # MAJOR * 10000 + MINOR * 100 + PATCH
# Whether the loaded library has the rotary calls (clpe.Rope, clpe.HostRope).
HAS_ROPE = has_rope()
# Whether it has position streams (Rope(..., mrope_section=...), Rope.vision);
# MRope and HostMRope are Rope and HostRope under their 1.1 preview names.
HAS_MROPE = has_mrope()
MAX_D = next(value for name, _, value, _, _ in _abi_table if name == "CLPE_MAX_D")

__all__ = [
    "Config", "ConfigError", "Dtype", "Encoder", "Error", "Flag", "Freq", "HAS_MROPE", "HAS_ROPE",
    "HostEncoder", "HostMRope", "HostRope", "Layout", "MRope", "MropeLadder", "Rope",
    "RopePairing", "RopeScaling",
    "NUMPY_DTYPES", "PositionSource", "Positions", "Tensor", "config_default",
    "config_preset", "host_add", "host_gather", "host_table", "library_path",
    "select_device", "status_name", "status_string", "rope_kv", "host_rope_kv",
    "device_header_path", "device_include_dir", "device_source", "device_words",
    "hf_rope_settings",
]
