# SPDX-License-Identifier: Apache-2.0
"""clpe.Encoder: the enqueue calls on PyOpenCL queues, arrays and buffers.

Every call takes the caller's queue and a wait_for list, never blocks, and
returns the pyopencl.Event of its work, as PyOpenCL's own calls do. Arrays
passed in contribute their pending events to the wait list, and an array
written gets the returned event (Array.add_event), so PyOpenCL operations
on it that follow wait for it even on an out-of-order queue.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import ctypes
import dataclasses
import os

import numpy as np

from . import _status
from ._abi import (CBuildLog, CConfig, CLaunchInfo, CPositions, CTensor, CTokenIds, Dtype,
                   PositionSource)
from ._check import check_device_view, check_enum, check_int32, check_size
from ._config import Config, DtypeArg, checked_int64, make_config
from ._host import HostEncoder, int_array, pitches_of

if TYPE_CHECKING:
    import pyopencl
    import pyopencl.array

    # What a call reads or writes: an array, or a raw buffer described by a Tensor.
    DeviceData = Union[pyopencl.array.Array, pyopencl.Buffer, "Tensor", Any]
    WaitFor = Optional[Sequence[pyopencl.Event]]

_BUILD_LOG_BYTES = 1 << 16
_POSITION_SOURCES = {s.name.lower(): s for s in PositionSource}


def _cl() -> Any:
    try:
        import pyopencl
        import pyopencl.array  # noqa: F401  (registers pyopencl.array)
    except ImportError as err:
        raise ImportError("clpe: clpe.Encoder needs PyOpenCL (pip install pyopencl, or "
                          "Debian's python3-pyopencl); the host_* functions do not") from err
    return pyopencl


@dataclasses.dataclass
class Tensor:
    """A [batch, seq, d] region of a raw pyopencl.Buffer (clpe_tensor):
    offset in bytes, pitches in elements, 0 meaning packed rows."""
    buffer: "pyopencl.Buffer"
    offset: int = 0
    row_pitch: int = 0
    batch_pitch: int = 0


@dataclasses.dataclass
class Positions:
    """Positions read from a raw pyopencl.Buffer of int64 (clpe_positions):
    source PositionSource.PER_SEQUENCE ([batch] starts) or .IDS
    ([batch, seq] position ids); offset in bytes."""
    source: PositionSource
    buffer: "pyopencl.Buffer"
    offset: int = 0


class _Call:
    """The pieces one enqueue gathers: events to wait for, arrays it
    writes, host buffers it uploaded (kept alive until the call returns)."""

    def __init__(self, encoder: Any, wait_for: "WaitFor") -> None:
        self.cl = _cl()
        self.encoder = encoder  # an Encoder, or a rotary object with .config.d and .dtype
        self.events: List[Any] = list(wait_for or [])
        self.written: List[Any] = []
        self.uploads: List[Any] = []

    def _is_array(self, obj: Any) -> bool:
        return isinstance(obj, self.cl.array.Array)

    def tensor(self, obj: Any, what: str, ndims: Tuple[int, ...],
               write: bool) -> Tuple[CTensor, Optional[Tuple[int, ...]]]:
        """(CTensor, leading shape or None) for an Array, a Tensor or a Buffer."""
        d = self.encoder.config.d
        dtype = self.encoder.dtype
        if self._is_array(obj):
            if obj.dtype != dtype:
                raise TypeError("clpe: %s has dtype %s; this encoder uses %s"
                                % (what, obj.dtype, dtype))
            if obj.ndim not in ndims or obj.shape[-1] != d:
                raise ValueError("clpe: %s must have %s dimensions, the last of size %d; got %s"
                                 % (what, " or ".join(map(str, ndims)), d, obj.shape))
            pitches = pitches_of(obj.shape, obj.strides, obj.dtype.itemsize, what)
            self.events.extend(obj.events)
            if write:
                self.written.append(obj)
            tensor = CTensor(buffer=obj.base_data.int_ptr if obj.base_data is not None else None,
                             offset=obj.offset, row_pitch=pitches[-1],
                             batch_pitch=pitches[0] if obj.ndim == 3 else 0)
            leading: Tuple[int, ...] = obj.shape[:-1]
            return tensor, leading
        if isinstance(obj, Tensor):
            return CTensor(buffer=self._buffer(obj.buffer, what),
                           offset=check_size(obj.offset, what + ".offset"),
                           row_pitch=check_size(obj.row_pitch, what + ".row_pitch"),
                           batch_pitch=check_size(obj.batch_pitch, what + ".batch_pitch")), None
        return CTensor(buffer=self._buffer(obj, what)), None

    def _buffer(self, obj: Any, what: str) -> Optional[int]:
        if obj is None:
            return None
        if not isinstance(obj, self.cl.MemoryObjectHolder):
            raise TypeError("clpe: %s must be a pyopencl.array.Array, a pyopencl.Buffer or a "
                            "clpe.Tensor, got %s" % (what, type(obj).__name__))
        pointer: int = obj.int_ptr
        return pointer

    def int_buffer(self, obj: Any, what: str, dtype: "np.typing.DTypeLike", write: bool = False,
                   min_size: int = 0) -> Tuple[Optional[int], int, Optional[Tuple[int, ...]]]:
        """(cl_mem, byte offset, shape or None) of an integer Array or Buffer;
        host values (NumPy, lists) are uploaded, where only read. An Array
        must hold min_size elements in its own extent."""
        if self._is_array(obj):
            check_device_view(obj, what, dtype, min_size)
            self.events.extend(obj.events)
            if write:
                self.written.append(obj)
            buffer = obj.base_data.int_ptr if obj.base_data is not None else None
            return buffer, obj.offset, obj.shape
        if isinstance(obj, self.cl.MemoryObjectHolder):
            return obj.int_ptr, 0, None
        if write:
            raise TypeError("clpe: %s is written on the device: give a pyopencl.array.Array "
                            "or a pyopencl.Buffer, got %s" % (what, type(obj).__name__))
        values = int_array(obj, dtype, what)
        return self.upload(values), 0, values.shape

    def upload(self, values: "np.typing.NDArray[Any]") -> Optional[int]:
        cl = self.cl
        if values.size == 0:
            return None
        buffer = cl.Buffer(self.encoder.context, cl.mem_flags.READ_ONLY |
                           cl.mem_flags.COPY_HOST_PTR, hostbuf=values)
        # OpenCL keeps a released buffer alive until the commands using it end.
        self.uploads.append(buffer)
        pointer: int = buffer.int_ptr
        return pointer

    def positions(self, positions: Any, batch: int, seq: int) -> CPositions:
        if positions is None:
            return CPositions(source=PositionSource.START,
                              start=self.encoder.config.first_position)
        if isinstance(positions, (int, np.integer)) and not isinstance(positions, bool):
            return CPositions(source=PositionSource.START,
                              start=checked_int64(positions, "start"))
        if isinstance(positions, Positions):
            return CPositions(source=check_enum(positions.source, PositionSource,
                                                _POSITION_SOURCES, "positions.source"),
                              buffer=self._buffer(positions.buffer, "positions"),
                              offset=check_size(positions.offset, "positions.offset"))
        if isinstance(positions, self.cl.MemoryObjectHolder):
            raise TypeError("clpe: say what a raw buffer of positions holds: "
                            "clpe.Positions(clpe.PositionSource.PER_SEQUENCE or .IDS, buffer)")
        buffer, offset, shape = self.int_buffer(positions, "positions", np.int64)
        shape = tuple(shape or ())
        if shape == (batch,):
            source = PositionSource.PER_SEQUENCE
        elif shape == (batch, seq):
            source = PositionSource.IDS
        else:
            raise ValueError("clpe: positions must be an int, %d per-sequence starts or a "
                             "[%d, %d] array of position ids, got shape %s"
                             % (batch, batch, seq, tuple(shape)))
        return CPositions(source=int(source), buffer=buffer, offset=offset)

    def nothing_to_do(self, queue: "pyopencl.CommandQueue") -> "pyopencl.Event":
        """The event of an empty call: a marker after its wait list, as the
        library gives (PyOpenCL has no buffer behind an empty array)."""
        done = self.cl.enqueue_marker(queue, wait_for=self.events or None)
        for array in self.written:
            array.add_event(done)
        event: "pyopencl.Event" = done
        return event

    def wait_list(self) -> Tuple[int, Any]:
        handles = [event.int_ptr for event in self.events]
        return len(handles), (ctypes.c_void_p * len(handles))(*handles) if handles else None

    def finish(self, status: int, what: str, event: "ctypes.c_void_p") -> "pyopencl.Event":
        _status.check(status, what)
        if not event.value:
            # clpe.h: a successful call asked for an event always gives one.
            raise RuntimeError("clpe: %s succeeded without an event" % what)
        done: "pyopencl.Event" = self.cl.Event.from_int_ptr(event.value, retain=False)
        for array in self.written:
            array.add_event(done)
        return done


def _shape(found: Optional[int], given: Optional[int], what: str) -> int:
    """A dimension from an Array's shape, or from a keyword for a Buffer."""
    if found is not None:
        if given is not None and check_size(given, what) != found:
            raise ValueError("clpe: %s = %d disagrees with the array's %d" % (what, given, found))
        return found
    if given is None:
        raise ValueError("clpe: give %s= for a raw buffer" % what)
    return check_size(given, what)


def _batch_seq(leading: Optional[Sequence[int]], batch: Optional[int],
               seq: Optional[int]) -> Tuple[int, int]:
    if leading is None:
        return _shape(None, batch, "batch"), _shape(None, seq, "seq")
    if len(leading) == 1:
        return _shape(1, batch, "batch"), _shape(leading[0], seq, "seq")
    return _shape(leading[0], batch, "batch"), _shape(leading[1], seq, "seq")


class Encoder(_status.Handle):
    """An encoder for one configuration on (context, device): clpe_encoder.

    Encoder(ctx, dev, d=512), Encoder(ctx, dev, preset="fairseq", d=1024,
    dtype=np.float16, scale=32.0), Encoder(ctx, dev, config=cfg). The
    device may be left out when the context has one. Building compiles the
    kernels (blocking, once); create_like() makes more encoders cheaply.
    """

    _release = "clpe_encoder_release"
    _what = "encoder"

    def __init__(self, context: "pyopencl.Context", device: Optional["pyopencl.Device"] = None,
                 config: Optional[Config] = None, **fields: Any) -> None:
        _cl()  # a clear ImportError now rather than an AttributeError later
        if device is None:
            if len(context.devices) != 1:
                raise ValueError("clpe: the context has %d devices; say which"
                                 % len(context.devices))
            device = context.devices[0]
        self.config = make_config(config, **fields)
        self.context, self.device = context, device
        log_text = ctypes.create_string_buffer(_BUILD_LOG_BYTES)
        log = CBuildLog(buffer=ctypes.cast(log_text, ctypes.c_void_p), capacity=len(log_text))
        status = ctypes.c_int32()
        c_config = self.config.to_c()
        handle = _status._lib.clpe_encoder_create(context.int_ptr, device.int_ptr,
                                                  ctypes.byref(c_config), ctypes.byref(log),
                                                  ctypes.byref(status))
        if not handle:
            text = log_text.value.decode(errors="replace") if log.length else None
            raise _status.Error(status.value, "encoder", build_log=text)
        self._handle = handle

    def create_like(self, config: Optional[Config] = None, **fields: Any) -> "Encoder":
        """An encoder for another configuration on the same context and
        device, sharing this one's built program (no compilation)."""
        other = object.__new__(Encoder)
        if fields.get("preset") is not None:
            fields.setdefault("d", self.config.d)
        elif config is None:
            config = self.config
        other.config = make_config(config, **fields)
        other.context, other.device = self.context, self.device
        status = ctypes.c_int32()
        c_config = other.config.to_c()
        with self._hold() as this:
            handle = _status._lib.clpe_encoder_create_like(this, ctypes.byref(c_config),
                                                           ctypes.byref(status))
        if not handle:
            raise _status.Error(status.value, "encoder")
        other._handle = handle
        return other

    def library_config(self) -> Config:
        """The configuration as the library holds it (clpe_encoder_get_config)."""
        c_config = CConfig()
        with self._hold() as handle:
            _status.check(_status._lib.clpe_encoder_get_config(handle, ctypes.byref(c_config)),
                          "config")
        return Config.from_c(c_config, self.config.first_position)

    def host(self) -> HostEncoder:
        """A HostEncoder of this configuration: the bits this one writes."""
        return HostEncoder(self.config)

    @property
    def dtype(self) -> "np.dtype[Any]":
        """The NumPy dtype of the encoder's buffers (uint16 bits for bf16)."""
        return self.config.numpy_dtype

    def supports(self, dtype: DtypeArg) -> bool:
        """Whether this encoder's device can run dtype (f64 needs cl_khr_fp64)."""
        from ._config import to_dtype
        return bool(_status._lib.clpe_device_supports_dtype(self.device.int_ptr,
                                                            int(to_dtype(dtype))))

    def launch_info(self) -> Dict[str, int]:
        """The launch shape chosen for the device (clpe_launch_info), as a dict."""
        info = CLaunchInfo()
        with self._hold() as handle:
            _status.check(_status._lib.clpe_encoder_get_launch_info(handle, ctypes.byref(info)),
                          "launch_info")
        names = [field[0] for field in CLaunchInfo._fields_]
        return {name: int(getattr(info, name)) for name in names
                if not name.startswith("reserved")}

    def table(self, queue: "pyopencl.CommandQueue", out: "DeviceData",
              start: Optional[int] = None, n: Optional[int] = None,
              wait_for: "WaitFor" = None) -> "pyopencl.Event":
        """out[r] = PE(start + r) for r < n (default: every row of out;
        start defaults to the config's first_position). out: a [n, d] Array,
        or a Buffer / clpe.Tensor with n given."""
        call = _Call(self, wait_for)
        tensor, leading = call.tensor(out, "out", (2,), write=True)
        if leading is None:
            n = _shape(None, n, "n")
        elif n is None:
            n = leading[0]
        elif not check_size(n, "n") <= leading[0]:
            raise ValueError("clpe: n = %d, but out has %d rows" % (n, leading[0]))
        start = checked_int64(self.config.first_position if start is None else start, "start")
        event = ctypes.c_void_p()
        if n == 0:
            return call.nothing_to_do(queue)
        count, events = call.wait_list()
        with self._hold() as handle:
            status = _status._lib.clpe_enqueue_table(
                handle, queue.int_ptr, start, n, ctypes.byref(tensor), count, events,
                ctypes.byref(event))
        return call.finish(status, "table", event)

    def add(self, queue: "pyopencl.CommandQueue", x: "DeviceData", positions: Any = None,
            batch: Optional[int] = None, seq: Optional[int] = None,
            wait_for: "WaitFor" = None) -> "pyopencl.Event":
        """x = x * scale + PE(pos) in place over [batch, seq, d] (or [seq, d]).
        positions: None (the config's first_position), an int start, a
        sequence of per-sequence starts or a [batch, seq] array of position
        ids (host values are uploaded as int64), an int64 Array, or a
        clpe.Positions over a raw buffer."""
        call = _Call(self, wait_for)
        tensor, leading = call.tensor(x, "x", (2, 3), write=True)
        batch, seq = _batch_seq(leading, batch, seq)
        c_positions = call.positions(positions, batch, seq)
        event = ctypes.c_void_p()
        if batch == 0 or seq == 0:
            return call.nothing_to_do(queue)
        count, events = call.wait_list()
        with self._hold() as handle:
            status = _status._lib.clpe_enqueue_add(
                handle, queue.int_ptr, batch, seq, ctypes.byref(tensor),
                ctypes.byref(c_positions), count, events, ctypes.byref(event))
        return call.finish(status, "add", event)

    def add_out(self, queue: "pyopencl.CommandQueue", x: "DeviceData", out: "DeviceData",
                positions: Any = None, batch: Optional[int] = None, seq: Optional[int] = None,
                wait_for: "WaitFor" = None) -> "pyopencl.Event":
        """out = x * scale + PE(pos) over [batch, seq, d]; positions as in add."""
        call = _Call(self, wait_for)
        x_tensor, x_leading = call.tensor(x, "x", (2, 3), write=False)
        out_tensor, out_leading = call.tensor(out, "out", (2, 3), write=True)
        if x_leading is not None and out_leading is not None and \
                tuple(x_leading) != tuple(out_leading):
            raise ValueError("clpe: x has shape %s but out %s"
                             % (getattr(x, "shape"), getattr(out, "shape")))
        batch, seq = _batch_seq(x_leading if x_leading is not None else out_leading, batch, seq)
        c_positions = call.positions(positions, batch, seq)
        event = ctypes.c_void_p()
        if batch == 0 or seq == 0:
            return call.nothing_to_do(queue)
        count, events = call.wait_list()
        with self._hold() as handle:
            status = _status._lib.clpe_enqueue_add_out(
                handle, queue.int_ptr, batch, seq, ctypes.byref(x_tensor),
                ctypes.byref(out_tensor), ctypes.byref(c_positions), count, events,
                ctypes.byref(event))
        return call.finish(status, "add_out", event)

    def gather(self, queue: "pyopencl.CommandQueue", ids: Any, embedding: "DeviceData",
               out: "DeviceData", positions: Any = None, bad_ids: Any = None,
               vocab: Optional[int] = None, batch: Optional[int] = None,
               seq: Optional[int] = None, wait_for: "WaitFor" = None
               ) -> "pyopencl.Event":
        """out[b, s] = embedding[ids[b, s]] * scale + PE(pos(b, s)): ids an
        int32 [batch, seq] (or [seq]) Array, Buffer or host array; embedding
        a [vocab, d] Array (or a Buffer / clpe.Tensor with vocab=); out
        [batch, seq, d]. An id outside [0, vocab) gets PE alone; bad_ids
        (optional, two uint32 on the device) receives [count, first index]."""
        call = _Call(self, wait_for)
        emb_tensor, emb_leading = call.tensor(embedding, "embedding", (2,), write=False)
        vocab = _shape(emb_leading[0] if emb_leading is not None else None, vocab, "vocab")
        out_tensor, out_leading = call.tensor(out, "out", (2, 3), write=True)
        ids_buffer, ids_offset, ids_shape = call.int_buffer(ids, "ids", np.int32)
        if ids_shape is not None and out_leading is not None and \
                tuple(ids_shape) != tuple(out_leading):
            raise ValueError("clpe: ids have shape %s but out %s" % (tuple(ids_shape),
                                                                       getattr(out, "shape")))
        batch, seq = _batch_seq(out_leading if out_leading is not None else ids_shape,
                                batch, seq)
        c_ids = CTokenIds(buffer=ids_buffer, offset=ids_offset)
        c_positions = call.positions(positions, batch, seq)
        bad_buffer = None
        if bad_ids is not None:
            # The library writes two uint32 there: [count, first index].
            bad_buffer, bad_offset, _ = call.int_buffer(bad_ids, "bad_ids", np.uint32,
                                                        write=True, min_size=2)
            if bad_offset:
                raise ValueError("clpe: bad_ids must start at its buffer's start")
        event = ctypes.c_void_p()
        if batch == 0 or seq == 0:
            return call.nothing_to_do(queue)
        count, events = call.wait_list()
        with self._hold() as handle:
            status = _status._lib.clpe_enqueue_gather(
                handle, queue.int_ptr, batch, seq, ctypes.byref(c_ids),
                ctypes.byref(emb_tensor), int(Dtype(self.config.dtype)), vocab,
                ctypes.byref(out_tensor), ctypes.byref(c_positions), bad_buffer, count, events,
                ctypes.byref(event))
        return call.finish(status, "gather", event)

    def pad_positions(self, queue: "pyopencl.CommandQueue", ids: Any, out: Any, pad_id: int,
                      first_position: Optional[int] = None,
                      pad_position: Optional[int] = None, batch: Optional[int] = None,
                      seq: Optional[int] = None, wait_for: "WaitFor" = None
                      ) -> "pyopencl.Event":
        """Pad-aware position ids (fairseq make_positions, HF M2M100): out
        (int64 [batch, seq]) = pad_position where ids == pad_id, else
        first_position + k for the k-th non-pad token of the row. The
        defaults are the config's first_position and padding_position."""
        call = _Call(self, wait_for)
        ids_buffer, ids_offset, ids_shape = call.int_buffer(ids, "ids", np.int32)
        out_buffer, out_offset, out_shape = call.int_buffer(out, "out", np.int64, write=True)
        if ids_shape is not None and out_shape is not None and \
                tuple(ids_shape) != tuple(out_shape):
            raise ValueError("clpe: ids have shape %s but out %s" % (tuple(ids_shape),
                                                                       tuple(out_shape)))
        shape = ids_shape if ids_shape is not None else out_shape
        batch, seq = _batch_seq(shape, batch, seq)
        first = self.config.first_position if first_position is None else first_position
        pad = self.config.padding_position if pad_position is None else pad_position
        pad_id = check_int32(pad_id, "pad_id")
        first = checked_int64(first, "first_position")
        pad = checked_int64(pad, "pad_position")
        c_ids = CTokenIds(buffer=ids_buffer, offset=ids_offset)
        event = ctypes.c_void_p()
        if batch == 0 or seq == 0:
            return call.nothing_to_do(queue)
        count, events = call.wait_list()
        with self._hold() as handle:
            status = _status._lib.clpe_enqueue_pad_positions(
                handle, queue.int_ptr, batch, seq, ctypes.byref(c_ids), pad_id, first, pad,
                out_buffer, out_offset, count, events, ctypes.byref(event))
        return call.finish(status, "pad_positions", event)


def select_device(selector: Optional[str] = None) -> "pyopencl.Device":
    """The device every clpe tool would pick (clpe_select_device): None uses
    CLPE_DEVICE, else the first GPU, else the first device; "3", "gpu",
    "cpu" or part of a name. Returns a pyopencl.Device."""
    cl = _cl()
    platform, device = ctypes.c_void_p(), ctypes.c_void_p()
    status = _status._lib.clpe_select_device(
        selector.encode() if selector else None, ctypes.byref(platform), ctypes.byref(device))
    if status != 0:
        # The message names the selector in effect: the argument, else
        # CLPE_DEVICE, which the library reads when given none.
        from_environment = os.environ.get("CLPE_DEVICE") if not selector else None
        if from_environment:
            context = "select_device(None), CLPE_DEVICE=%r" % from_environment
        else:
            context = "select_device(%r)" % (selector,)
        if _status.status_name(status) == "CLPE_ERROR_NO_DEVICE":
            context += ": no device matches" if selector or from_environment \
                else ": no OpenCL device"
        raise _status.Error(status, context)
    found: "pyopencl.Device" = cl.Device.from_int_ptr(device.value)
    return found
