# SPDX-License-Identifier: Apache-2.0
"""clpe.Error: a failed call's status as an exception, with its name."""
from __future__ import annotations

import threading
from typing import Any, Dict, Optional, TypeVar

from ._abi import AbiTable

from ._abi import ABI_CONSTANT

# OpenCL's own codes, which clpe passes through unchanged (CL/cl.h; these
# values are fixed by the OpenCL specification).
_OPENCL_NAMES = {
    -1: "CL_DEVICE_NOT_FOUND", -2: "CL_DEVICE_NOT_AVAILABLE",
    -3: "CL_COMPILER_NOT_AVAILABLE", -4: "CL_MEM_OBJECT_ALLOCATION_FAILURE",
    -5: "CL_OUT_OF_RESOURCES", -6: "CL_OUT_OF_HOST_MEMORY",
    -7: "CL_PROFILING_INFO_NOT_AVAILABLE", -8: "CL_MEM_COPY_OVERLAP",
    -9: "CL_IMAGE_FORMAT_MISMATCH", -10: "CL_IMAGE_FORMAT_NOT_SUPPORTED",
    -11: "CL_BUILD_PROGRAM_FAILURE", -12: "CL_MAP_FAILURE",
    -13: "CL_MISALIGNED_SUB_BUFFER_OFFSET",
    -14: "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
    -15: "CL_COMPILE_PROGRAM_FAILURE", -16: "CL_LINKER_NOT_AVAILABLE",
    -17: "CL_LINK_PROGRAM_FAILURE", -18: "CL_DEVICE_PARTITION_FAILED",
    -19: "CL_KERNEL_ARG_INFO_NOT_AVAILABLE",
    -30: "CL_INVALID_VALUE", -31: "CL_INVALID_DEVICE_TYPE", -32: "CL_INVALID_PLATFORM",
    -33: "CL_INVALID_DEVICE", -34: "CL_INVALID_CONTEXT", -35: "CL_INVALID_QUEUE_PROPERTIES",
    -36: "CL_INVALID_COMMAND_QUEUE", -37: "CL_INVALID_HOST_PTR",
    -38: "CL_INVALID_MEM_OBJECT", -39: "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR",
    -40: "CL_INVALID_IMAGE_SIZE", -41: "CL_INVALID_SAMPLER", -42: "CL_INVALID_BINARY",
    -43: "CL_INVALID_BUILD_OPTIONS", -44: "CL_INVALID_PROGRAM",
    -45: "CL_INVALID_PROGRAM_EXECUTABLE", -46: "CL_INVALID_KERNEL_NAME",
    -47: "CL_INVALID_KERNEL_DEFINITION", -48: "CL_INVALID_KERNEL",
    -49: "CL_INVALID_ARG_INDEX", -50: "CL_INVALID_ARG_VALUE", -51: "CL_INVALID_ARG_SIZE",
    -52: "CL_INVALID_KERNEL_ARGS", -53: "CL_INVALID_WORK_DIMENSION",
    -54: "CL_INVALID_WORK_GROUP_SIZE", -55: "CL_INVALID_WORK_ITEM_SIZE",
    -56: "CL_INVALID_GLOBAL_OFFSET", -57: "CL_INVALID_EVENT_WAIT_LIST",
    -58: "CL_INVALID_EVENT", -59: "CL_INVALID_OPERATION", -60: "CL_INVALID_GL_OBJECT",
    -61: "CL_INVALID_BUFFER_SIZE", -62: "CL_INVALID_MIP_LEVEL",
    -63: "CL_INVALID_GLOBAL_WORK_SIZE", -64: "CL_INVALID_PROPERTY",
    -65: "CL_INVALID_IMAGE_DESCRIPTOR", -66: "CL_INVALID_COMPILER_OPTIONS",
    -67: "CL_INVALID_LINKER_OPTIONS", -68: "CL_INVALID_DEVICE_PARTITION_COUNT",
    -69: "CL_INVALID_PIPE_SIZE", -70: "CL_INVALID_DEVICE_QUEUE",
    -71: "CL_INVALID_SPEC_CONSTANT", -72: "CL_MAX_SIZE_RESTRICTION_EXCEEDED",
    -1001: "CL_PLATFORM_NOT_FOUND_KHR",
}

_lib: Any = None  # the loaded library (bind)
_Self = TypeVar("_Self", bound="Handle")
_clpe_names: Dict[int, str] = {}


def bind(lib: Any, abi_table: AbiTable) -> None:
    """Take clpe's status names from the library's own table, so a status
    added to the library is named without a change here."""
    global _lib
    _lib = lib
    for name, kind, value, _, _ in abi_table:
        if kind == ABI_CONSTANT and (name == "CLPE_SUCCESS" or name.startswith("CLPE_ERROR_")) \
                and name != "CLPE_ERROR_END_UNSTABLE":
            _clpe_names[value] = name


def status_name(status: int) -> str:
    """"CLPE_ERROR_INVALID_D", "CL_OUT_OF_RESOURCES", or "status N" if unknown."""
    status = int(status)
    return _clpe_names.get(status) or _OPENCL_NAMES.get(status) or "status %d" % status


def status_string(status: int) -> str:
    """The library's one-line description of status."""
    text: bytes = _lib.clpe_status_string(int(status))
    return text.decode()


class Error(RuntimeError):
    """A clpe call failed. .status is the clpe_status (an int, clpe's own
    code or OpenCL's: .is_opencl), .name its C name, .build_log the device
    compiler's log when an encoder's build failed (else None), .detail the
    field refused and why (a rotary configuration; else None)."""

    def __init__(self, status: int, context: Optional[str] = None,
                 build_log: Optional[str] = None, detail: Optional[str] = None) -> None:
        self.status = int(status)
        self.name = status_name(self.status)
        self.build_log = build_log
        # which field was refused and why, where the library says (rotary
        # configurations: clpe_rope_config_check)
        self.detail = detail
        # OpenCL's own code passed through, rather than one of clpe's
        self.is_opencl = bool(_lib.clpe_status_is_opencl(self.status))
        message = "%s (%d): %s" % (self.name, self.status, status_string(self.status))
        if context:
            message = "%s: %s" % (context, message)
        if detail:
            message += " (%s)" % detail
        if build_log:
            message += "\n" + build_log
        super().__init__(message)


def check(status: int, context: Optional[str] = None) -> None:
    """Raise Error for any status other than CLPE_SUCCESS."""
    if status != 0:
        raise Error(status, context)


class _Held:
    """with handle_object._hold() as handle: the library handle, kept alive
    until the block ends even if another thread closes the object meanwhile
    (ctypes lets other threads run while a call is inside the library)."""

    __slots__ = ("owner", "handle")

    def __init__(self, owner: "Handle") -> None:
        self.owner = owner
        self.handle: Optional[int] = None

    def __enter__(self) -> int:
        owner = self.owner
        state = owner.__dict__.get("_state")
        if state is None:
            raise ValueError("clpe: this %s has been closed" % owner._what)
        with state.lock:
            if state.closed or state.handle is None:
                raise ValueError("clpe: this %s has been closed" % owner._what)
            state.calls += 1
            handle: int = state.handle
            self.handle = handle
        return handle

    def __exit__(self, *exc: object) -> None:
        self.owner._state.leave()


class _HandleState:
    """The library handle of one Python object, the calls using it and
    whether close() was asked for: the handle is released by whichever comes
    last, close() or the end of the last call in flight."""

    __slots__ = ("lock", "handle", "calls", "closed", "release")

    def __init__(self, handle: Optional[int], release: Optional[str]) -> None:
        self.lock = threading.Lock()
        self.handle = handle
        self.calls = 0
        self.closed = False
        self.release = release

    def _take(self) -> Optional[int]:
        """The handle to release now, or None; called with the lock held."""
        if self.closed and self.calls == 0 and self.handle:
            handle, self.handle = self.handle, None
            return handle
        return None

    def leave(self) -> None:
        with self.lock:
            self.calls -= 1
            handle = self._take()
        self._free(handle)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            handle = self._take()
        self._free(handle)

    def _free(self, handle: Optional[int]) -> None:
        if handle and _lib is not None and self.release:
            getattr(_lib, self.release)(handle)


class Handle:
    """A library object owned from Python, released by close(), at the end of
    a with block, or when garbage-collected; queued work still completes.
    Subclasses name their release function in _release.

    Every call into the library takes the handle through `with
    self._hold() as handle:`. close() from another thread while calls are
    inside the library marks the object closed (new calls raise ValueError)
    and the handle is released when the last of those calls returns."""

    _release: Optional[str] = None
    _what = "object"
    _state: _HandleState  # set once, through _handle, in the instance's __dict__

    @property
    def _handle(self) -> Optional[int]:
        """The library handle; None once closed."""
        state = self.__dict__.get("_state")
        return None if state is None or state.closed else state.handle

    @_handle.setter
    def _handle(self, handle: Optional[int]) -> None:
        if self.__dict__.get("_state") is not None:
            raise RuntimeError("clpe: a handle is set once")
        self.__dict__["_state"] = _HandleState(handle, self._release)

    def _hold(self) -> _Held:
        """A context manager giving the live handle (ValueError once closed)
        and keeping it alive until the block ends."""
        return _Held(self)

    def _live(self) -> int:
        """The live handle, for a call that cannot overlap close(); prefer
        _hold(), which also keeps it alive across the call."""
        handle = self._handle
        if not handle:
            raise ValueError("clpe: this %s has been closed" % self._what)
        return handle

    def close(self) -> None:
        """Release the object now, or when the calls still inside the
        library on other threads return (else when garbage-collected)."""
        state = self.__dict__.get("_state")
        if state is not None:
            state.close()

    __del__ = close

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
