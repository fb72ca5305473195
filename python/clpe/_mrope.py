# SPDX-License-Identifier: Apache-2.0
"""Multimodal rotary (clpe_mrope): M-RoPE as Qwen2-VL's language model uses it
and the 2-D rotary of its vision tower. clpe.MRope on PyOpenCL arrays and
clpe.HostMRope on NumPy arrays, available when the loaded library has the
multimodal calls (clpe.HAS_MROPE).

    text = clpe.HostMRope(128, mrope_section=[16, 24, 24], base=1e6)
    text.rotate(q, k, position_ids)        # position_ids [3, batch, seq]
    vision = clpe.HostMRope(80, vision=True)
    vision.rotate(q, k, pos_ids.T)         # rot_pos_emb's pos_ids [patches, 2]
"""
import ctypes

import numpy as np

from . import _status
from ._abi import (MROPE_MAX_STREAMS, ROPE_INVERSE, CBuildLog, CHostMropePositions,
                   CHostRopeTensor, CMropeConfig, CMropePositions, CRopeTensor, CTensor,
                   MropeLadder)
from ._host import pitches_of
from ._rope import _heads_layout, _RopeConfig

_LADDERS = {"one": MropeLadder.ONE_LADDER, "one_ladder": MropeLadder.ONE_LADDER,
            "per_stream": MropeLadder.LADDER_PER_STREAM,
            "ladder_per_stream": MropeLadder.LADDER_PER_STREAM}
_ELEMENT = 8  # bytes of an int64 position


def has_mrope():
    return hasattr(_status._lib, "clpe_mrope_create")


def _need_mrope():
    if not has_mrope():
        raise NotImplementedError("clpe: the loaded library has no multimodal rotary calls")


class _MropeConfig:
    """clpe_mrope_config from keywords: the rotary ones of clpe.HostRope, and
    mrope_section (the pairs of each position stream) and ladder, or
    vision=True for Qwen2-VL's vision tower (two streams of head_dim / 4
    pairs, a frequency ladder each)."""

    def __init__(self, head_dim, mrope_section=None, vision=False, ladder=None, **rope_config):
        _need_mrope()
        self.rope = _RopeConfig(head_dim, **rope_config)  # keeps its arrays alive
        c = CMropeConfig()
        c.rope = self.rope.c
        if vision:
            if mrope_section is None:
                mrope_section = [int(head_dim) // 4] * 2
            if ladder is None:
                ladder = MropeLadder.LADDER_PER_STREAM
        if mrope_section is None:
            raise ValueError("clpe: give mrope_section (the pairs of each stream) or vision=True")
        section = [int(s) for s in mrope_section]
        if not 1 <= len(section) <= MROPE_MAX_STREAMS or min(section) < 0:
            raise _status.Error(-2029, "mrope_section = %s" % (section,))  # INVALID_ROPE
        c.streams = len(section)
        for j, s in enumerate(section):
            c.section[j] = s
        if ladder is None:
            ladder = MropeLadder.ONE_LADDER
        c.ladder = int(_LADDERS[ladder.lower()] if isinstance(ladder, str) else ladder)
        self.c = c

    @property
    def head_dim(self):
        return self.c.rope.head_dim

    @property
    def streams(self):
        return self.c.streams

    @property
    def numpy_dtype(self):
        return self.rope.numpy_dtype


def _token_layout(shape, strides, itemsize, streams, what):
    """(batch, seq, stream pitch, token pitch) of positions [streams, batch,
    seq] or [streams, seq] with these strides, or None when the tokens are
    not one evenly spaced run (then the caller copies them)."""
    if len(shape) not in (2, 3) or shape[0] != streams:
        raise ValueError("clpe: %s must have shape [%d, batch, seq] or [%d, seq], got %s"
                         % (what, streams, streams, tuple(shape)))
    if len(shape) == 2:
        shape, strides = (shape[0], 1, shape[1]), (strides[0], 0, strides[1])
    n_streams, batch, seq = shape
    if any(s <= 0 or s % itemsize for s, n in zip(strides, shape) if n > 1):
        return None
    stream_pitch = strides[0] // itemsize if n_streams > 1 else 0
    if seq > 1:
        token_pitch = strides[2] // itemsize
        if batch > 1 and strides[1] != seq * strides[2]:
            return None
    else:
        token_pitch = strides[1] // itemsize if batch > 1 else 0
    return batch, seq, stream_pitch, token_pitch


def _host_positions(positions, streams):
    """(the int64 array, which the caller keeps alive through the call,
    CHostMropePositions pointing into it, batch, seq)."""
    values = np.asarray(positions)
    if values.dtype != np.int64:
        if values.dtype.kind not in "iu":
            raise TypeError("clpe: positions must be integers")
        values = values.astype(np.int64)
    layout = _token_layout(values.shape, values.strides, _ELEMENT, streams, "positions")
    if layout is None:
        values = np.ascontiguousarray(values)
        layout = _token_layout(values.shape, values.strides, _ELEMENT, streams, "positions")
    batch, seq, stream_pitch, token_pitch = layout
    c = CHostMropePositions(data=values.ctypes.data, stream_pitch=stream_pitch,
                            token_pitch=token_pitch)
    return values, c, batch, seq


class _MropeBase(_status.Handle):
    _release = "clpe_mrope_release"

    def _live(self):
        if not self._handle:
            raise ValueError("clpe: this multimodal rotary object has been closed")
        return self._handle

    @property
    def dtype(self):
        """The NumPy dtype of q, k and the cache (uint16 bits for bf16)."""
        return self._config.numpy_dtype

    @property
    def streams(self):
        return self._config.streams

    @property
    def rotary_dim(self):
        return self._config.c.rope.rotary_dim or self._config.c.rope.head_dim

    def frequencies(self):
        """(w_i as float64, the stream of each pair, the amplitude m)."""
        n = self.rotary_dim // 2
        values = np.empty(n, np.float64)
        streams = np.empty(n, np.uint32)
        amplitude = ctypes.c_double()
        _status.check(_status._lib.clpe_mrope_get_frequencies(
            self._live(), values.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            streams.ctypes.data_as(ctypes.POINTER(ctypes.c_uint32)), n,
            ctypes.byref(amplitude)), "frequencies")
        return values, streams, amplitude.value


def _create_host(config):
    status = ctypes.c_int32()
    handle = _status._lib.clpe_mrope_create_host(ctypes.byref(config.c), ctypes.byref(status))
    if not handle:
        raise _status.Error(status.value, "mrope")
    return handle


class HostMRope(_MropeBase):
    """The multimodal rotary host emulation on NumPy arrays
    (clpe_mrope_create_host): HostMRope(head_dim, mrope_section=[16, 24, 24],
    base=1e6, scaling=..., ...) or HostMRope(head_dim, vision=True)."""

    def __init__(self, head_dim, **config):
        self._config = _MropeConfig(head_dim, **config)
        self._handle = _create_host(self._config)

    def _tensor(self, array, what):
        if not isinstance(array, np.ndarray) or array.dtype != self.dtype:
            raise TypeError("clpe: %s must be a numpy.ndarray of %s" % (what, self.dtype))
        if not array.flags.writeable:
            raise ValueError("clpe: %s is read-only" % what)
        batch, seq, heads, (batch_pitch, row_pitch, head_pitch) = _heads_layout(
            array.shape, array.strides, array.itemsize, what, self._config.head_dim)
        return CHostRopeTensor(data=array.ctypes.data, heads=heads, head_pitch=head_pitch,
                               row_pitch=row_pitch, batch_pitch=batch_pitch), (batch, seq)

    def rotate(self, q, k=None, positions=None, inverse=False):
        """Rotate q (and k), [batch, seq, heads, head_dim] or [seq, heads,
        head_dim] arrays of any strides, in place; positions [streams, batch,
        seq] or [streams, seq] (any strides: rot_pos_emb's [patches, 2]
        pos_ids transposed). Returns q."""
        handle = self._live()
        q_tensor, shape = self._tensor(q, "q")
        k_tensor = None
        if k is not None:
            k_tensor, k_shape = self._tensor(k, "k")
            if k_shape != shape:
                raise ValueError("clpe: q and k have different batch or seq")
        if positions is None:
            raise ValueError("clpe: give positions [streams, batch, seq]")
        values, c_positions, batch, seq = _host_positions(positions, self.streams)
        if (batch, seq) != shape:
            raise ValueError("clpe: positions are for batch %d, seq %d; q has batch %d, seq %d"
                             % (batch, seq, shape[0], shape[1]))
        _status.check(_status._lib.clpe_host_mrope(
            handle, batch, seq, ctypes.byref(q_tensor),
            ctypes.byref(k_tensor) if k_tensor is not None else None,
            ctypes.byref(c_positions), ROPE_INVERSE if inverse else 0), "mrope")
        return q

    def cache(self, positions):
        """(cos, sin), each [tokens, rotary_dim], for positions [streams,
        tokens]: the cos and sin Hugging Face multiplies by after its
        section select."""
        values, c_positions, batch, seq = _host_positions(positions, self.streams)
        n = batch * seq
        cos = np.empty((n, self.rotary_dim), self.dtype)
        sin = np.empty_like(cos)
        _status.check(_status._lib.clpe_host_mrope_cache(
            self._live(), n, ctypes.byref(c_positions), cos.ctypes.data, sin.ctypes.data, 0),
            "mrope cache")
        return cos, sin


class MRope(_MropeBase):
    """Multimodal rotary on a device: MRope(context, device=None, head_dim=...,
    mrope_section=..., **rope_config), MRope(..., vision=True), or
    MRope.like(encoder, head_dim=..., ...) to share an encoder's program."""

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
        self._config = _MropeConfig(head_dim, **config)
        self.context, self.device = context, device
        log_text = ctypes.create_string_buffer(1 << 16)
        log = CBuildLog(buffer=ctypes.cast(log_text, ctypes.c_void_p), capacity=len(log_text))
        status = ctypes.c_int32()
        handle = _status._lib.clpe_mrope_create(context.int_ptr, device.int_ptr,
                                                ctypes.byref(self._config.c), ctypes.byref(log),
                                                ctypes.byref(status))
        if not handle:
            text = log_text.value.decode(errors="replace") if log.length else None
            raise _status.Error(status.value, "mrope", build_log=text)
        self._handle = handle

    @classmethod
    def like(cls, encoder, head_dim, **config):
        """An MRope on an encoder's context and device, sharing its program."""
        mrope = object.__new__(cls)
        mrope._config = _MropeConfig(head_dim, **config)
        mrope.context, mrope.device = encoder.context, encoder.device
        status = ctypes.c_int32()
        handle = _status._lib.clpe_mrope_create_like(
            encoder._live(), ctypes.byref(mrope._config.c), ctypes.byref(status))
        if not handle:
            raise _status.Error(status.value, "mrope")
        mrope._handle = handle
        return mrope

    def host(self):
        """A HostMRope of this configuration: the bits this one writes."""
        host = object.__new__(HostMRope)
        host._config = self._config
        host._handle = _create_host(self._config)
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

    def _positions(self, call, positions):
        """(CMropePositions, batch, seq) of an int64 Array (any strides that
        keep the tokens evenly spaced) or of host values (uploaded)."""
        if call._is_array(positions):
            if positions.dtype != np.int64:
                raise TypeError("clpe: positions must have dtype int64, got %s" % positions.dtype)
            layout = _token_layout(positions.shape, positions.strides, _ELEMENT, self.streams,
                                   "positions")
            if layout is None:
                raise ValueError("clpe: the tokens of positions must be evenly spaced")
            call.events.extend(positions.events)
            buffer = positions.base_data.int_ptr if positions.base_data is not None else None
            batch, seq, stream_pitch, token_pitch = layout
            return CMropePositions(buffer=buffer, offset=positions.offset,
                                   stream_pitch=stream_pitch, token_pitch=token_pitch), batch, seq
        values = np.ascontiguousarray(np.asarray(positions), dtype=np.int64)
        batch, seq, stream_pitch, token_pitch = _token_layout(
            values.shape, values.strides, _ELEMENT, self.streams, "positions")
        return CMropePositions(buffer=call.upload(values), stream_pitch=stream_pitch,
                               token_pitch=token_pitch), batch, seq

    def rotate(self, queue, q, k=None, positions=None, inverse=False, wait_for=None):
        """Rotate q (and k) in place: Arrays as for Rope.rotate; positions
        [streams, batch, seq] or [streams, seq] (an int64 Array or host
        values)."""
        from ._opencl import _Call
        call = _Call(self, wait_for)
        q_tensor, shape = self._tensor(call, q, "q")
        k_tensor = None
        if k is not None:
            k_tensor, k_shape = self._tensor(call, k, "k")
            if k_shape != shape:
                raise ValueError("clpe: q and k have different batch or seq")
        if positions is None:
            raise ValueError("clpe: give positions [streams, batch, seq]")
        c_positions, batch, seq = self._positions(call, positions)
        if (batch, seq) != shape:
            raise ValueError("clpe: positions are for batch %d, seq %d; q has batch %d, seq %d"
                             % (batch, seq, shape[0], shape[1]))
        event = ctypes.c_void_p()
        count, events = call.wait_list()
        status = _status._lib.clpe_enqueue_mrope(
            self._live(), queue.int_ptr, batch, seq, ctypes.byref(q_tensor),
            ctypes.byref(k_tensor) if k_tensor is not None else None, ctypes.byref(c_positions),
            ROPE_INVERSE if inverse else 0, count, events, ctypes.byref(event))
        return call.finish(status, "mrope", event)

    def cache(self, queue, cos, sin, positions, wait_for=None):
        """cos and sin ([tokens, rotary_dim] Arrays) for positions [streams, tokens]."""
        from ._opencl import _Call
        call = _Call(self, wait_for)
        c_positions, batch, seq = self._positions(call, positions)
        n = batch * seq
        tensors = []
        for array, what in ((cos, "cos"), (sin, "sin")):
            if not call._is_array(array) or array.dtype != self.dtype or array.ndim != 2 \
                    or array.shape != (n, self.rotary_dim):
                raise TypeError("clpe: %s must be a [%d, %d] pyopencl.array.Array of %s"
                                % (what, n, self.rotary_dim, self.dtype))
            pitches = pitches_of(array.shape, array.strides, array.dtype.itemsize, what)
            call.events.extend(array.events)
            call.written.append(array)
            tensors.append(CTensor(buffer=array.base_data.int_ptr, offset=array.offset,
                                   row_pitch=pitches[0]))
        event = ctypes.c_void_p()
        count, events = call.wait_list()
        status = _status._lib.clpe_enqueue_mrope_cache(
            self._live(), queue.int_ptr, n, ctypes.byref(c_positions), ctypes.byref(tensors[0]),
            ctypes.byref(tensors[1]), count, events, ctypes.byref(event))
        return call.finish(status, "mrope cache", event)
