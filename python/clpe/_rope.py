# SPDX-License-Identifier: Apache-2.0
"""Rotary position embedding (clpe_rope): clpe.Rope on PyOpenCL arrays and
clpe.HostRope on NumPy arrays, available when the loaded library has the
rotary calls (clpe.HAS_ROPE)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple

import ctypes

import numpy as np

from . import _status
from ._abi import (ROPE_INVERSE, CBuildLog, CHostRopeTensor, CPositions, CRopeTensor, CTensor,
                   Dtype, RopePairing, RopeScaling)
from ._check import (check_enum, check_float64_array, check_host_array, check_real,
                     check_size, check_uint32, check_uint64)
from ._config import NUMPY_DTYPES, checked_int64, to_dtype
from ._host import host_positions, pitches_of

if TYPE_CHECKING:
    import pyopencl

_PAIRINGS = {"half_split": RopePairing.HALF_SPLIT, "half-split": RopePairing.HALF_SPLIT,
             "neox": RopePairing.HALF_SPLIT, "interleaved": RopePairing.INTERLEAVED,
             "gptj": RopePairing.INTERLEAVED}
_SCALINGS = {s.name.lower(): s for s in RopeScaling}
_FACTOR_ARRAYS = ("short_factor", "long_factor", "frequencies")
# The arrays each scaling reads; any other given with it is a mistake.
_ARRAYS_OF_SCALING = {int(s): () for s in RopeScaling}
_ARRAYS_OF_SCALING[int(RopeScaling.LONGROPE)] = ("short_factor", "long_factor")
_ARRAYS_OF_SCALING[int(RopeScaling.FREQUENCIES)] = ("frequencies",)
_NUMBERS = ("factor", "original_max_position", "low_freq_factor", "high_freq_factor",
            "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor")


def has_rope() -> bool:
    return hasattr(_status._lib, "clpe_rope_create")


def _need_rope():
    if not has_rope():
        raise NotImplementedError("clpe: the loaded library has no rotary calls")


class _RopeConfig:
    """clpe_rope_config from keywords, with the arrays it points to kept alive."""

    def __init__(self, head_dim, rotary_dim=0, base=None, pairing=None, dtype=None,
                 scaling=None, truncate=True, seq_len=0, **numbers_and_arrays):
        _need_rope()
        unknown = set(numbers_and_arrays) - set(_NUMBERS) - set(_FACTOR_ARRAYS)
        if unknown:
            raise TypeError("clpe: unknown rotary settings %s" % ", ".join(sorted(unknown)))
        head_dim = check_uint32(head_dim, "head_dim")
        rotary_dim = check_uint32(rotary_dim, "rotary_dim")
        if not isinstance(truncate, (bool, np.bool_)):
            raise TypeError("clpe: truncate must be True or False, got %r" % (truncate,))
        c = _status._lib.clpe_rope_config_default(head_dim)
        c.rotary_dim = rotary_dim
        if base is not None:
            c.base = check_real(base, "base")
        if pairing is not None:
            c.pairing = check_enum(pairing, RopePairing, _PAIRINGS, "pairing")
        if dtype is not None:
            c.dtype = int(to_dtype(dtype))
        if scaling is not None:
            c.scaling = check_enum(scaling, RopeScaling, _SCALINGS, "scaling")
        c.no_truncate = 0 if truncate else 1
        c.seq_len = check_uint64(seq_len, "seq_len")
        # The library reads rotary_dim / 2 values through each pointer.
        pairs = (rotary_dim or head_dim) // 2
        used = _ARRAYS_OF_SCALING.get(c.scaling)
        self.arrays = {}
        for name, value in numbers_and_arrays.items():
            if value is None:
                continue
            if name in _NUMBERS:
                setattr(c, name, check_real(value, name))
                continue
            if used is not None and name not in used:
                raise ValueError("clpe: %s does not apply to scaling %s"
                                 % (name, RopeScaling(c.scaling).name.lower()))
            array = check_float64_array(value, name, pairs)
            self.arrays[name] = array
            setattr(c, name, array.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
        self.c = c

    @property
    def head_dim(self):
        return self.c.head_dim

    @property
    def numpy_dtype(self):
        return NUMPY_DTYPES[Dtype(self.c.dtype)]


class _RopeBase(_status.Handle):
    _release = "clpe_rope_release"
    _what = "rotary object"

    @property
    def dtype(self):
        """The NumPy dtype of q, k and the cache (uint16 bits for bf16)."""
        return self._config.numpy_dtype

    @property
    def rotary_dim(self):
        return self._config.c.rotary_dim or self._config.c.head_dim

    def frequencies(self):
        """(the per-pair frequencies w_i as float64, the amplitude m)."""
        values = np.empty(self.rotary_dim // 2, np.float64)
        amplitude = ctypes.c_double()
        with self._hold() as handle:
            _status.check(_status._lib.clpe_rope_get_frequencies(
                handle, values.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), values.size,
                ctypes.byref(amplitude)), "frequencies")
        return values, amplitude.value


def _heads_layout(shape, strides, itemsize, what, head_dim):
    """(batch, seq, heads, [batch, seq, head] pitches) of a [batch, seq,
    heads, head_dim] or [seq, heads, head_dim] array, any strides."""
    if len(shape) not in (3, 4) or shape[-1] != head_dim:
        raise ValueError("clpe: %s must have shape [batch, seq, heads, %d] or [seq, heads, %d], "
                         "got %s" % (what, head_dim, head_dim, tuple(shape)))
    pitches = pitches_of(shape, strides, itemsize, what)
    if len(shape) == 3:
        shape, pitches = (1,) + tuple(shape), [0] + pitches
    return shape[0], shape[1], shape[2], pitches


class HostRope(_RopeBase):
    """The rotary host emulation on NumPy arrays (clpe_rope_create_host):
    HostRope(head_dim=128, base=500000, scaling="llama3", factor=8, ...)."""

    def __init__(self, head_dim, **config):
        self._config = _RopeConfig(head_dim, **config)
        status = ctypes.c_int32()
        handle = _status._lib.clpe_rope_create_host(ctypes.byref(self._config.c),
                                                    ctypes.byref(status))
        if not handle:
            raise _status.Error(status.value, "rope")
        self._handle = handle

    def _tensor(self, array, what):
        check_host_array(array, what, self.dtype, writable=True)
        batch, seq, heads, (batch_pitch, row_pitch, head_pitch) = _heads_layout(
            array.shape, array.strides, array.itemsize, what, self._config.head_dim)
        tensor = CHostRopeTensor(data=array.ctypes.data, heads=heads, head_pitch=head_pitch,
                                 row_pitch=row_pitch, batch_pitch=batch_pitch)
        return tensor, (batch, seq)

    def rotate(self, q: np.ndarray, k: Optional[np.ndarray] = None, positions: Any = None,
               inverse: bool = False) -> np.ndarray:
        """Rotate q (and k) in place; positions as in host_add (None: 0).
        Returns q."""
        q_tensor, (batch, seq) = self._tensor(q, "q")
        k_tensor = None
        if k is not None:
            k_tensor, k_shape = self._tensor(k, "k")
            if k_shape != (batch, seq):
                raise ValueError("clpe: q and k have different batch or seq")
        source, start, values = host_positions(positions, batch, seq, 0)
        start = checked_int64(start, "start")
        with self._hold() as handle:
            _status.check(_status._lib.clpe_host_rope(
                handle, batch, seq, ctypes.byref(q_tensor),
                ctypes.byref(k_tensor) if k_tensor is not None else None, int(source), start,
                values.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)) if values is not None
                else None, ROPE_INVERSE if inverse else 0), "rope")
        return q

    def cache(self, positions: range) -> Tuple[np.ndarray, np.ndarray]:
        """(cos, sin), each [len(positions), rotary_dim], for a range of positions."""
        if not isinstance(positions, range) or positions.step != 1:
            raise TypeError("clpe: positions must be a range of step 1")
        n = len(positions)
        start = checked_int64(positions.start, "start")
        cos = np.empty((n, self.rotary_dim), self.dtype)
        sin = np.empty_like(cos)
        with self._hold() as handle:
            _status.check(_status._lib.clpe_host_rope_cache(
                handle, start, n, cos.ctypes.data, sin.ctypes.data, 0), "rope cache")
        return cos, sin


class Rope(_RopeBase):
    """Rotary embedding on a device: Rope(context, device=None, head_dim=...,
    **config), or Rope.like(encoder, head_dim=..., ...) to share an
    encoder's built program."""

    def __init__(self, context, device=None, head_dim=None, **config):
        from ._opencl import _cl
        _cl()
        if device is None:
            if len(context.devices) != 1:
                raise ValueError("clpe: the context has %d devices; say which"
                                 % len(context.devices))
            device = context.devices[0]
        if head_dim is None:
            raise ValueError("clpe: give head_dim")
        self._config = _RopeConfig(head_dim, **config)
        self.context, self.device = context, device
        log_text = ctypes.create_string_buffer(1 << 16)
        log = CBuildLog(buffer=ctypes.cast(log_text, ctypes.c_void_p), capacity=len(log_text))
        status = ctypes.c_int32()
        handle = _status._lib.clpe_rope_create(context.int_ptr, device.int_ptr,
                                               ctypes.byref(self._config.c), ctypes.byref(log),
                                               ctypes.byref(status))
        if not handle:
            text = log_text.value.decode(errors="replace") if log.length else None
            raise _status.Error(status.value, "rope", build_log=text)
        self._handle = handle

    @classmethod
    def like(cls, encoder, head_dim, **config):
        """A Rope on an encoder's context and device, sharing its program."""
        rope = object.__new__(cls)
        rope._config = _RopeConfig(head_dim, **config)
        rope.context, rope.device = encoder.context, encoder.device
        status = ctypes.c_int32()
        with encoder._hold() as shared:
            handle = _status._lib.clpe_rope_create_like(shared, ctypes.byref(rope._config.c),
                                                        ctypes.byref(status))
        if not handle:
            raise _status.Error(status.value, "rope")
        rope._handle = handle
        return rope

    def host(self):
        """A HostRope of this configuration: the bits this one writes."""
        host = object.__new__(HostRope)
        host._config = self._config
        status = ctypes.c_int32()
        host._handle = _status._lib.clpe_rope_create_host(ctypes.byref(self._config.c),
                                                          ctypes.byref(status))
        if not host._handle:
            raise _status.Error(status.value, "rope")
        return host

    def _tensor(self, call, array, what):
        if not call._is_array(array):
            raise TypeError("clpe: %s must be a pyopencl.array.Array" % what)
        if array.dtype != self.dtype:
            raise TypeError("clpe: %s has dtype %s; this rotary object uses %s"
                            % (what, array.dtype, self.dtype))
        batch, seq, heads, (batch_pitch, row_pitch, head_pitch) = _heads_layout(
            array.shape, array.strides, array.dtype.itemsize, what, self._config.head_dim)
        call.events.extend(array.events)
        call.written.append(array)
        tensor = CRopeTensor(buffer=array.base_data.int_ptr if array.base_data is not None
                             else None, offset=array.offset, heads=heads,
                             head_pitch=head_pitch, row_pitch=row_pitch,
                             batch_pitch=batch_pitch)
        return tensor, (batch, seq)

    def rotate(self, queue: "pyopencl.CommandQueue", q: Any, k: Any = None, positions: Any = None,
               inverse: bool = False, wait_for: Any = None) -> "pyopencl.Event":
        """Rotate q (and k) in place: Arrays of [batch, seq, heads, head_dim]
        (any strides: a transposed [batch, heads, seq, d] view works) or
        [seq, heads, head_dim]. positions as in Encoder.add (None: 0)."""
        from ._opencl import _Call
        call = _Call(self, wait_for)
        q_tensor, (batch, seq) = self._tensor(call, q, "q")
        k_tensor = None
        if k is not None:
            k_tensor, k_shape = self._tensor(call, k, "k")
            if k_shape != (batch, seq):
                raise ValueError("clpe: q and k have different batch or seq")
        c_positions = call.positions(positions, batch, seq) if positions is not None \
            else CPositions(source=0, start=0)
        event = ctypes.c_void_p()
        count, events = call.wait_list()
        with self._hold() as handle:
            status = _status._lib.clpe_enqueue_rope(
                handle, queue.int_ptr, batch, seq, ctypes.byref(q_tensor),
                ctypes.byref(k_tensor) if k_tensor is not None else None,
                ctypes.byref(c_positions), ROPE_INVERSE if inverse else 0, count, events,
                ctypes.byref(event))
        return call.finish(status, "rope", event)

    def cache(self, queue: "pyopencl.CommandQueue", cos: Any, sin: Any, start: int = 0,
              n: Optional[int] = None, wait_for: Any = None) -> "pyopencl.Event":
        """cos and sin ([n, rotary_dim] Arrays) for positions start .. start+n-1."""
        from ._opencl import _Call
        call = _Call(self, wait_for)
        tensors = []
        for array, what in ((cos, "cos"), (sin, "sin")):
            if not call._is_array(array) or array.dtype != self.dtype or array.ndim != 2 \
                    or array.shape[1] != self.rotary_dim:
                raise TypeError("clpe: %s must be a [n, %d] pyopencl.array.Array of %s"
                                % (what, self.rotary_dim, self.dtype))
            pitches = pitches_of(array.shape, array.strides, array.dtype.itemsize, what)
            call.events.extend(array.events)
            call.written.append(array)
            tensors.append(CTensor(buffer=array.base_data.int_ptr, offset=array.offset,
                                   row_pitch=pitches[0]))
        rows = min(cos.shape[0], sin.shape[0])
        n = rows if n is None else check_size(n, "n")
        if not n <= rows:
            raise ValueError("clpe: n = %d, but cos and sin have %d rows" % (n, rows))
        start = checked_int64(start, "start")
        event = ctypes.c_void_p()
        count, events = call.wait_list()
        with self._hold() as handle:
            status = _status._lib.clpe_enqueue_rope_cache(
                handle, queue.int_ptr, start, n, ctypes.byref(tensors[0]),
                ctypes.byref(tensors[1]), count, events, ctypes.byref(event))
        return call.finish(status, "rope cache", event)
