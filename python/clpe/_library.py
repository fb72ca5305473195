# SPDX-License-Identifier: Apache-2.0
"""Find and load libclpe, and declare the C prototypes of clpe.h.

The library is the one the package was built with (next to this file:
libclpe.so on Linux, libclpe.dylib on macOS, clpe.dll or libclpe.dll on
Windows), unless the environment variable CLPE_LIBRARY names another file;
failing both, an installed libclpe the system's loader finds.
"""
import ctypes
import ctypes.util
import os
import sys
from typing import Any, List, Optional, Tuple
from ctypes import (POINTER, c_char_p, c_double, c_int, c_int32, c_int64, c_size_t, c_uint,
                    c_uint32, c_uint64, c_void_p)

from ._abi import (CAbiEntry, CBuildLog, CConfig, CDeviceTuning, CHostKvCache,
                   CHostRopeTensor, CKvCache, CKvSlots, CLaunchInfo,
                   CMropeConfig, CPositions, CRopeConfig, CRopeTensor, CTensor,
                   CTokenIds, c_enum, cl_handle)

c_status = c_int32
c_encoder = c_void_p
c_handle_list = POINTER(cl_handle)

# name: (restype, argtypes), as declared in clpe.h
PROTOTYPES = {
    "clpe_abi_entries": (POINTER(CAbiEntry), [POINTER(c_size_t)]),
    "clpe_version": (c_uint, []),
    "clpe_version_string": (c_char_p, []),
    "clpe_status_string": (c_char_p, [c_status]),
    "clpe_status_is_opencl": (c_int, [c_status]),
    "clpe_config_default": (CConfig, [c_uint32]),
    "clpe_config_preset": (c_status, [c_char_p, c_uint32, POINTER(CConfig), POINTER(c_int64)]),
    "clpe_config_check": (c_status, [POINTER(CConfig)]),
    "clpe_encoder_create": (c_encoder, [cl_handle, cl_handle, POINTER(CConfig),
                                        POINTER(CBuildLog), POINTER(c_status)]),
    "clpe_encoder_create_like": (c_encoder, [c_encoder, POINTER(CConfig), POINTER(c_status)]),
    "clpe_encoder_create_host": (c_encoder, [POINTER(CConfig), POINTER(c_status)]),
    "clpe_encoder_release": (None, [c_encoder]),
    "clpe_encoder_get_config": (c_status, [c_encoder, POINTER(CConfig)]),
    "clpe_encoder_get_launch_info": (c_status, [c_encoder, POINTER(CLaunchInfo)]),
    "clpe_get_device_tuning": (c_status, [cl_handle, POINTER(CDeviceTuning)]),
    "clpe_enqueue_table": (c_status, [c_encoder, cl_handle, c_int64, c_size_t, POINTER(CTensor),
                                      c_uint32, c_handle_list, POINTER(cl_handle)]),
    "clpe_enqueue_add": (c_status, [c_encoder, cl_handle, c_size_t, c_size_t, POINTER(CTensor),
                                    POINTER(CPositions), c_uint32, c_handle_list,
                                    POINTER(cl_handle)]),
    "clpe_enqueue_add_out": (c_status, [c_encoder, cl_handle, c_size_t, c_size_t,
                                        POINTER(CTensor), POINTER(CTensor), POINTER(CPositions),
                                        c_uint32, c_handle_list, POINTER(cl_handle)]),
    "clpe_enqueue_gather": (c_status, [c_encoder, cl_handle, c_size_t, c_size_t,
                                       POINTER(CTokenIds), POINTER(CTensor), c_enum, c_size_t,
                                       POINTER(CTensor), POINTER(CPositions), cl_handle,
                                       c_uint32, c_handle_list, POINTER(cl_handle)]),
    "clpe_enqueue_pad_positions": (c_status, [c_encoder, cl_handle, c_size_t, c_size_t,
                                              POINTER(CTokenIds), c_int32, c_int64, c_int64,
                                              cl_handle, c_size_t, c_uint32, c_handle_list,
                                              POINTER(cl_handle)]),
    "clpe_host_table": (c_status, [c_encoder, c_int64, c_size_t, c_void_p, c_size_t]),
    "clpe_host_add": (c_status, [c_encoder, c_size_t, c_size_t, c_void_p, c_size_t, c_size_t,
                                 c_enum, c_int64, POINTER(c_int64)]),
    "clpe_host_gather": (c_status, [c_encoder, c_size_t, c_size_t, POINTER(c_int32), c_void_p,
                                    c_size_t, c_size_t, c_void_p, c_size_t, c_enum, c_int64,
                                    POINTER(c_int64), POINTER(c_size_t)]),
    "clpe_device_supports_dtype": (c_int, [cl_handle, c_enum]),
    "clpe_select_device": (c_status, [c_char_p, POINTER(cl_handle), POINTER(cl_handle)]),
}

c_rope = c_void_p
# Declared by clpe.h; bound only where the loaded library exports them (the
# rotary calls arrived after the rest, and the binding works without them).
OPTIONAL_PROTOTYPES = {
    "clpe_rope_config_default": (CRopeConfig, [c_uint32]),
    "clpe_rope_create": (c_rope, [cl_handle, cl_handle, POINTER(CRopeConfig),
                                  POINTER(CBuildLog), POINTER(c_status)]),
    "clpe_rope_create_like": (c_rope, [c_encoder, POINTER(CRopeConfig), POINTER(c_status)]),
    "clpe_rope_create_host": (c_rope, [POINTER(CRopeConfig), POINTER(c_status)]),
    "clpe_rope_release": (None, [c_rope]),
    "clpe_rope_get_frequencies": (c_status, [c_rope, POINTER(c_double), c_size_t,
                                             POINTER(c_double)]),
    "clpe_enqueue_rope": (c_status, [c_rope, cl_handle, c_size_t, c_size_t,
                                     POINTER(CRopeTensor), POINTER(CRopeTensor),
                                     POINTER(CPositions), c_uint32, c_uint32, c_handle_list,
                                     POINTER(cl_handle)]),
    "clpe_enqueue_rope_cache": (c_status, [c_rope, cl_handle, c_int64, c_size_t,
                                           POINTER(CTensor), POINTER(CTensor), c_uint32,
                                           c_handle_list, POINTER(cl_handle)]),
    "clpe_host_rope": (c_status, [c_rope, c_size_t, c_size_t, POINTER(CHostRopeTensor),
                                  POINTER(CHostRopeTensor), c_enum, c_int64, POINTER(c_int64),
                                  c_uint32]),
    "clpe_host_rope_cache": (c_status, [c_rope, c_int64, c_size_t, c_void_p, c_void_p,
                                        c_size_t]),
    # clpe_device.h's words and text (_device_header.py)
    "clpe_encoder_device_words": (c_status, [c_encoder, POINTER(cl_handle), POINTER(c_char_p)]),
    "clpe_rope_device_words": (c_status, [c_rope, POINTER(cl_handle), POINTER(c_char_p)]),
    "clpe_device_source": (c_char_p, []),
    "clpe_enqueue_rope_kv": (c_status, [c_rope, cl_handle, c_size_t, POINTER(CRopeTensor),
                                        POINTER(CRopeTensor), POINTER(CRopeTensor),
                                        POINTER(CRopeTensor), POINTER(CKvCache),
                                        POINTER(CKvSlots), POINTER(CPositions), c_uint32,
                                        c_uint32, c_handle_list, POINTER(cl_handle)]),
    "clpe_host_rope_kv": (c_status, [c_rope, c_size_t, POINTER(CHostRopeTensor),
                                     POINTER(CHostRopeTensor), POINTER(CHostRopeTensor),
                                     POINTER(CHostRopeTensor), POINTER(CHostKvCache),
                                     POINTER(c_int64), c_enum, c_int64, POINTER(c_int64),
                                     c_uint32]),
    "clpe_rope_kv_refused_calls": (c_status, [c_rope, cl_handle, POINTER(c_uint64)]),
    # multimodal rotary (M-RoPE) and vision rotary
    "clpe_mrope_config_vision": (CMropeConfig, [c_uint32]),
    "clpe_rope_create_mrope": (c_rope, [cl_handle, cl_handle, POINTER(CMropeConfig),
                                        POINTER(CBuildLog), POINTER(c_status)]),
    "clpe_rope_create_mrope_like": (c_rope, [c_encoder, POINTER(CMropeConfig),
                                             POINTER(c_status)]),
    "clpe_rope_create_mrope_host": (c_rope, [POINTER(CMropeConfig), POINTER(c_status)]),
    "clpe_rope_get_streams": (c_status, [c_rope, POINTER(c_uint32), c_size_t,
                                         POINTER(c_uint32)]),
    "clpe_enqueue_rope_cache_at": (c_status, [c_rope, cl_handle, c_size_t, POINTER(CPositions),
                                              POINTER(CTensor), POINTER(CTensor), c_uint32,
                                              c_handle_list, POINTER(cl_handle)]),
    "clpe_host_rope_cache_at": (c_status, [c_rope, c_size_t, c_enum, c_int64, POINTER(c_int64),
                                           c_void_p, c_void_p, c_size_t]),
    # the reason a rotary configuration is refused
    "clpe_rope_config_check": (c_status, [POINTER(CRopeConfig), c_char_p, c_size_t]),
    "clpe_mrope_config_check": (c_status, [POINTER(CMropeConfig), c_char_p, c_size_t]),
}


# The major version whose ABI PROTOTYPES declare: the wheel's library is
# named after it (libclpe.so.1, its soname), and another major version is
# another ABI.
ABI_MAJOR = 1


def library_names(platform: Optional[str] = None) -> List[str]:
    """File names of libclpe on a platform (sys.platform by default), most
    likely first."""
    platform = sys.platform if platform is None else platform
    if platform.startswith("win") or platform == "cygwin":
        return ["clpe.dll", "libclpe.dll"]
    if platform == "darwin":
        return ["libclpe.dylib"]
    return ["libclpe.so.%d" % ABI_MAJOR, "libclpe.so"]


def _candidates() -> List[str]:
    override = os.environ.get("CLPE_LIBRARY")
    if override:
        return [override]
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, name) for name in library_names()
             if os.path.exists(os.path.join(here, name))]
    system = ctypes.util.find_library("clpe")
    if system:
        found.append(system)
    return found


def load_library() -> Tuple[Any, str]:
    """(the loaded library with its prototypes declared, its path). The
    library is typed Any: its functions are declared here, at run time."""
    tried: List[str] = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as err:
            tried.append("%s (%s)" % (path, err))
            continue
        missing = [name for name in PROTOTYPES if not hasattr(lib, name)]
        if missing:
            raise ImportError("clpe: %s lacks %s; it is older than this binding"
                              % (path, ", ".join(missing)))
        for name, (restype, argtypes) in list(PROTOTYPES.items()) + \
                list(OPTIONAL_PROTOTYPES.items()):
            if not hasattr(lib, name):
                continue
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = argtypes
        return lib, path
    tried = tried or ["no %s beside the package" % " or ".join(library_names())]
    raise ImportError("clpe: cannot load libclpe: tried %s. Install the package with "
                      "`pip install ./python` from a clpe checkout, or set CLPE_LIBRARY "
                      "to the path of the library" % "; ".join(tried))
