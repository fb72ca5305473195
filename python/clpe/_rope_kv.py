# SPDX-License-Identifier: Apache-2.0
"""Rotary into a KV cache (clpe_enqueue_rope_kv): clpe.rope_kv on PyOpenCL
arrays and clpe.host_rope_kv, its exact bits, on NumPy arrays.

After the QKV projection, one call rotates q (in place, or into q_out),
rotates k and copies v into the cache slot of each token (-1: a padding
token, not cached). The cache is [num_blocks, block_size, kv_heads,
head_dim] (any strides: a [num_blocks, kv_heads, block_size, head_dim]
array transposed to that order works); a contiguous cache [batch,
max_seq, kv_heads, head_dim] is the same with slot = b * max_seq +
position. Its dtype may be the rope's, or float16 / bfloat16 (uint16 bits)
under a float32 rope, or FP8 under a float32, float16 or bfloat16 rope:
uint8 arrays with cache_dtype="fp8_e4m3" (or "fp8", vLLM's name) or
"fp8_e5m2", or ml_dtypes' float8_e4m3fn / float8_e5m2 arrays. An FP8
cache stores k / k_scale and v / v_scale (float32, round to nearest even,
saturated to the largest finite value), as vLLM's kv_cache_dtype="fp8".

    qkv = ...  # [tokens, (hq + 2 * hk) * head_dim], the projection output
    clpe.rope_kv(rope, queue, key_cache, value_cache, slots, qkv=qkv, q_heads=hq,
                 positions=positions)
"""
from __future__ import annotations

import ctypes
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from numpy.typing import NDArray

from . import _mrope, _status
from ._abi import (CHostKvCache, CHostRopeTensor, CKvCache, CKvSlots, CRopeTensor, Dtype,
                   PositionSource)
from ._check import check_uint32, is_integer
from ._config import NUMPY_DTYPES, checked_int64
from ._host import int_array, pitches_of
from ._mrope import DevicePositions, HostPositions
from ._rope import HostRope, Rope, _flags

Device = Any  # a pyopencl object (the package has no type information)
HostArray = NDArray[Any]
_DTYPES = {dtype: Dtype(code) for code, dtype in NUMPY_DTYPES.items()}
_REPORT_BYTES = 8  # two uint32: [tokens refused, the first of them]
# FP8 caches: vLLM's kv_cache_dtype names, and ml_dtypes' array dtypes
FP8_CACHE_DTYPES: Dict[str, Dtype] = {
    "fp8": Dtype.FP8_E4M3, "fp8_e4m3": Dtype.FP8_E4M3, "fp8_e5m2": Dtype.FP8_E5M2,
}
_FP8_NUMPY_NAMES: Dict[str, Dtype] = {
    "float8_e4m3fn": Dtype.FP8_E4M3, "float8_e5m2": Dtype.FP8_E5M2,
}


def _fp8_dtype(array_dtype: Any, cache_dtype: Optional[str]) -> Optional[Dtype]:
    """The FP8 type of a cache array (None: not FP8): an ml_dtypes float8
    array's own, or cache_dtype's for uint8 bytes."""
    own = _FP8_NUMPY_NAMES.get(getattr(array_dtype, "name", ""))
    if cache_dtype is None:
        if array_dtype == np.uint8:
            raise TypeError("clpe: a uint8 cache needs cache_dtype='fp8_e4m3' or 'fp8_e5m2'")
        return own
    if not isinstance(cache_dtype, str) or cache_dtype not in FP8_CACHE_DTYPES:
        raise ValueError("clpe: cache_dtype must be one of %s, got %r"
                         % (", ".join(sorted(FP8_CACHE_DTYPES)), cache_dtype))
    wanted = FP8_CACHE_DTYPES[cache_dtype]
    if own is None and array_dtype != np.uint8:
        raise TypeError("clpe: cache_dtype=%r needs uint8 (or ml_dtypes float8) caches, got %s"
                        % (cache_dtype, array_dtype))
    if own is not None and own != wanted:
        raise TypeError("clpe: cache_dtype=%r but the caches are %s" % (cache_dtype, array_dtype))
    return wanted


def _scales(cache_dtype: Dtype, k_scale: Any, v_scale: Any) -> Tuple[float, float]:
    """The key and value scales as the library takes them: an FP8 cache's
    positive and finite, another cache's 1 (no scaling)."""
    fp8 = cache_dtype in (Dtype.FP8_E4M3, Dtype.FP8_E5M2)
    values = []
    for value, name in ((k_scale, "k_scale"), (v_scale, "v_scale")):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating,
                                                             np.integer)):
            raise TypeError("clpe: %s must be a number, got %r" % (name, value))
        with np.errstate(over="ignore"):  # past float32: infinite, refused below
            scale = float(np.float32(value))
        if fp8 and not (0.0 < scale < float("inf")):
            raise ValueError("clpe: %s must be a positive finite float32, got %r"
                             % (name, value))
        if not fp8 and scale != 1.0:
            raise ValueError("clpe: %s applies to FP8 caches only (cache_dtype='fp8_e4m3' or "
                             "'fp8_e5m2'); got %r" % (name, value))
        values.append(scale)
    return values[0], values[1]


def has_rope_kv() -> bool:
    return hasattr(_status._lib, "clpe_enqueue_rope_kv")


def _cache_layout(key: Any, value: Any, head_dim: int,
                  cache_dtype: Optional[str] = None) -> Tuple[Dtype, int, int, int, int, int, int]:
    """(dtype, num_blocks, block_size, heads, head, slot, block pitches) of
    the two cache arrays, which must agree in shape, dtype and strides."""
    for array, name in ((key, "key_cache"), (value, "value_cache")):
        if array.ndim != 4 or array.shape[-1] != head_dim:
            raise ValueError("clpe: %s must have shape [num_blocks, block_size, kv_heads, %d], "
                             "got %s" % (name, head_dim, tuple(array.shape)))
    if key.shape != value.shape or key.dtype != value.dtype or key.strides != value.strides:
        raise ValueError("clpe: key_cache and value_cache differ in shape, dtype or strides")
    fp8 = _fp8_dtype(key.dtype, cache_dtype)
    if fp8 is None and key.dtype not in _DTYPES:
        raise TypeError("clpe: the cache's dtype %s is not one of clpe's" % key.dtype)
    block_pitch, slot_pitch, head_pitch = pitches_of(key.shape, key.strides, key.dtype.itemsize,
                                                     "key_cache")
    num_blocks, block_size, heads = (int(n) for n in key.shape[:3])
    # an axis of one entry has pitch 0 here: the library takes its default
    return (fp8 if fp8 is not None else _DTYPES[key.dtype], num_blocks, block_size, heads,
            head_pitch, slot_pitch, block_pitch)


def _token_heads(array: Any, head_dim: int, what: str) -> Tuple[int, int, int, int]:
    """(tokens, heads, head_pitch, row_pitch) of a [tokens, heads, head_dim] array."""
    if array.ndim != 3 or array.shape[-1] != head_dim:
        raise ValueError("clpe: %s must have shape [tokens, heads, %d], got %s"
                         % (what, head_dim, tuple(array.shape)))
    row_pitch, head_pitch = pitches_of(array.shape, array.strides, array.dtype.itemsize, what)
    return int(array.shape[0]), int(array.shape[1]), head_pitch, row_pitch


def _fused_views(qkv: Any, q_heads: Any, kv_heads: int, head_dim: int,
                 itemsize: int) -> Tuple[int, List[Tuple[int, int, int]]]:
    """(tokens, [(byte offset, heads, row_pitch)] of q, k, v) in a fused
    [tokens, (hq + 2 hk) * head_dim] array."""
    if q_heads is None:
        raise ValueError("clpe: with qkv, give q_heads")
    q_heads = check_uint32(q_heads, "q_heads")
    width = (q_heads + 2 * kv_heads) * head_dim
    if qkv.ndim != 2 or qkv.shape[1] != width:
        raise ValueError("clpe: qkv must have shape [tokens, %d] ((q_heads + 2 kv_heads) * "
                         "head_dim), got %s" % (width, tuple(qkv.shape)))
    (row_pitch,) = pitches_of(qkv.shape, qkv.strides, itemsize, "qkv")
    row_pitch = row_pitch or width
    offsets = [0, q_heads * head_dim, (q_heads + kv_heads) * head_dim]
    heads = [q_heads, kv_heads, kv_heads]
    return int(qkv.shape[0]), [(o * itemsize, h, row_pitch) for o, h in zip(offsets, heads)]


def _check_tokens(found: int, tokens: Optional[int], what: str) -> int:
    if tokens is not None and found != tokens:
        raise ValueError("clpe: %s has %d tokens, the others %d" % (what, found, tokens))
    return found


def _need_rope_kv(rope: Any, kind: type) -> None:
    if not has_rope_kv():
        raise NotImplementedError("clpe: the loaded library has no rotary-into-cache calls")
    if not isinstance(rope, kind):
        raise TypeError("clpe: rope must be a clpe.%s, got %s" % (kind.__name__,
                                                                   type(rope).__name__))


def _device_positions(call: Any, rope: Rope, positions: Any, tokens: int,
                      token_first: Optional[bool]) -> DevicePositions:
    if rope._config.calls.streams_positions:
        return _mrope.device_stream_positions(call, positions, rope.streams, (1, tokens),
                                              token_first)[0]
    if token_first is not None:
        raise ValueError("clpe: token_first applies to position streams")
    if positions is None or is_integer(positions):
        start = 0 if positions is None else checked_int64(positions, "positions")
        return DevicePositions(PositionSource.START, start)
    _mrope.check_int64_values(positions, "positions")
    buffer, offset, shape = call.int_buffer(positions, "positions", np.int64)
    if shape is not None and tuple(shape) != (tokens,):
        raise ValueError("clpe: positions must be an int or %d position ids, got shape %s"
                         % (tokens, tuple(shape)))
    return DevicePositions(PositionSource.IDS, 0, buffer, offset)


def _report_view(call: Any, report: Any) -> Tuple[Optional[int], Optional[Tuple[Any, Any]]]:
    """(the cl_mem the library writes the report into, None or (a buffer of
    the call's own, the Array to copy it to afterwards)). The library writes
    at its buffer's start, so a view at an offset gets the report through a
    buffer of the call's own."""
    if report is None:
        return None, None
    if not call._is_array(report) and isinstance(report, call.cl.MemoryObjectHolder):
        if report.size < _REPORT_BYTES:
            raise ValueError("clpe: report must hold 2 uint32 values")
        return int(report.int_ptr), None
    if not call._is_array(report):
        raise TypeError("clpe: report is written on the device: give a uint32 "
                        "pyopencl.array.Array of 2 values or a pyopencl.Buffer, got %s"
                        % type(report).__name__)
    buffer, offset, shape = call.int_buffer(report, "report", np.uint32, write=True)
    if tuple(shape) != (2,):
        raise ValueError("clpe: report must be 2 uint32 values, got shape %s" % (tuple(shape),))
    if offset == 0:
        return buffer, None
    scratch = call.cl.Buffer(call.encoder.context, call.cl.mem_flags.READ_WRITE, _REPORT_BYTES)
    return int(scratch.int_ptr), (scratch, report)


def rope_kv(rope: Rope, queue: Device, key_cache: Device, value_cache: Device, slots: Any,
            q: Device = None, k: Device = None, v: Device = None, qkv: Device = None,
            q_heads: Optional[int] = None, q_out: Device = None, positions: Any = None,
            inverse: bool = False, report: Device = None, wait_for: Any = None,
            token_first: Optional[bool] = None, cache_dtype: Optional[str] = None,
            k_scale: float = 1.0, v_scale: float = 1.0) -> Device:
    """Rotate q (qkv's queries, or q: [tokens, hq, head_dim]) in place or into
    q_out, and write k rotated and v into key_cache and value_cache at each
    token's slot (int64, -1: not cached). Arrays are pyopencl Arrays of the
    rope's dtype (the cache's may be float16 or bfloat16 under float32).
    positions: an int (the first token's; the others count up), or int64
    position ids [tokens]. report: an optional uint32 Array of 2 (a view
    at any offset) or Buffer the call fills with the number of tokens
    refused for a bad slot and the first of them; a call with a bad slot
    writes nothing (checked on the device). cache_dtype: "fp8_e4m3" ("fp8")
    or "fp8_e5m2" for uint8 caches, which then store k / k_scale and
    v / v_scale (see the module's text). Returns the call's event."""
    from ._opencl import _Call
    _need_rope_kv(rope, Rope)
    call = _Call(rope, wait_for)
    head_dim = rope.head_dim
    dtype = rope.dtype
    for array, what in ((key_cache, "key_cache"), (value_cache, "value_cache")):
        if not call._is_array(array):
            raise TypeError("clpe: %s must be a pyopencl.array.Array" % what)
    (cache_type, num_blocks, block_size, kv_heads, head_pitch, slot_pitch,
     block_pitch) = _cache_layout(key_cache, value_cache, head_dim, cache_dtype)
    key_scale, value_scale = _scales(cache_type, k_scale, v_scale)
    flags = _flags(inverse)

    def device_array(array: Device, what: str, write: bool) -> Optional[int]:
        if not call._is_array(array):
            raise TypeError("clpe: %s must be a pyopencl.array.Array" % what)
        if array.dtype != dtype:
            raise TypeError("clpe: %s has dtype %s; this rotary object uses %s"
                            % (what, array.dtype, dtype))
        call.events.extend(array.events)
        if write:
            call.written.append(array)
        return int(array.base_data.int_ptr) if array.base_data is not None else None

    tokens: Optional[int] = None
    tensors: Dict[str, CRopeTensor] = {}
    if qkv is not None:
        if q is not None or k is not None or v is not None:
            raise ValueError("clpe: give qkv, or q, k and v, not both")
        buffer = device_array(qkv, "qkv", write=q_out is None)
        tokens, views = _fused_views(qkv, q_heads, kv_heads, head_dim, qkv.dtype.itemsize)
        for name, (offset, heads, row_pitch) in zip("qkv", views):
            tensors[name] = CRopeTensor(buffer=buffer, offset=qkv.offset + offset, heads=heads,
                                        row_pitch=row_pitch)
    else:
        if k is None or v is None:
            raise ValueError("clpe: give qkv, or k and v (and q)")
        for name, array in (("q", q), ("k", k), ("v", v)):
            if array is None:
                continue
            buffer = device_array(array, name, write=name == "q" and q_out is None)
            found, heads, hp, rp = _token_heads(array, head_dim, name)
            tokens = _check_tokens(found, tokens, name)
            tensors[name] = CRopeTensor(buffer=buffer, offset=array.offset, heads=heads,
                                        head_pitch=hp, row_pitch=rp)
    assert tokens is not None
    if q_out is not None:
        if "q" not in tensors:
            raise ValueError("clpe: q_out needs queries (q or qkv)")
        buffer = device_array(q_out, "q_out", write=True)
        found, heads, hp, rp = _token_heads(q_out, head_dim, "q_out")
        _check_tokens(found, tokens, "q_out")
        tensors["q_out"] = CRopeTensor(buffer=buffer, offset=q_out.offset, heads=heads,
                                       head_pitch=hp, row_pitch=rp)
    for array in (key_cache, value_cache):
        call.events.extend(array.events)
        call.written.append(array)
    cache = CKvCache(key=key_cache.base_data.int_ptr if key_cache.base_data is not None
                     else None,
                     value=value_cache.base_data.int_ptr if value_cache.base_data is not None
                     else None, key_offset=key_cache.offset, value_offset=value_cache.offset,
                     dtype=int(cache_type), num_blocks=num_blocks, block_size=block_size,
                     heads=kv_heads, head_pitch=head_pitch, slot_pitch=slot_pitch,
                     block_pitch=block_pitch, key_scale=key_scale, value_scale=value_scale)
    _mrope.check_int64_values(slots, "slots")
    slots_buffer, slots_offset, shape = call.int_buffer(slots, "slots", np.int64)
    if shape is not None and tuple(shape) != (tokens,):
        raise ValueError("clpe: slots must have %d values, got shape %s" % (tokens, tuple(shape)))
    report_buffer, report_copy = _report_view(call, report)
    kv_slots = CKvSlots(buffer=slots_buffer, offset=slots_offset, report=report_buffer)
    c_positions = _device_positions(call, rope, positions, tokens, token_first)
    event = ctypes.c_void_p()
    count, events = call.wait_list()

    def ref(name: str) -> Optional[CRopeTensor]:
        return tensors.get(name)

    with rope._hold() as handle:
        if tokens == 0:
            return call.nothing_to_do(queue)
        status = rope._config.calls.rope_kv(
            handle, queue.int_ptr, tokens, ref("q"), ref("q_out"), ref("k"), ref("v"), cache,
            kv_slots, c_positions, flags, count, events, event)
    done = call.finish(status, "rope_kv", event)
    if report_copy is None:
        return done
    # The report after the call, into the caller's view; the call's event
    # stays on the arrays it wrote, this copy's on the report.
    scratch, view = report_copy
    copied = call.cl.enqueue_copy(queue, view.base_data, scratch, dst_offset=view.offset,
                                  byte_count=_REPORT_BYTES,
                                  wait_for=[done] if done is not None else None)
    view.add_event(copied)
    return call.cl.enqueue_marker(queue, wait_for=[e for e in (done, copied) if e is not None])


def host_rope_kv(rope: HostRope, key_cache: HostArray, value_cache: HostArray, slots: Any,
                 q: Optional[HostArray] = None, k: Optional[HostArray] = None,
                 v: Optional[HostArray] = None, qkv: Optional[HostArray] = None,
                 q_heads: Optional[int] = None, q_out: Optional[HostArray] = None,
                 positions: Any = None, inverse: bool = False,
                 token_first: Optional[bool] = None, cache_dtype: Optional[str] = None,
                 k_scale: float = 1.0, v_scale: float = 1.0) -> Optional[HostArray]:
    """The exact bits of rope_kv on NumPy arrays, with a HostRope (or a Rope's
    .host()). A bad slot raises clpe.Error (CLPE_ERROR_INVALID_SLOTS) and
    writes nothing. cache_dtype, k_scale and v_scale as for rope_kv.
    Returns q_out, else q, else qkv."""
    _need_rope_kv(rope, HostRope)
    head_dim = rope.head_dim
    dtype = rope.dtype
    for array, what in ((key_cache, "key_cache"), (value_cache, "value_cache")):
        if not isinstance(array, np.ndarray) or not array.flags.writeable:
            raise TypeError("clpe: %s must be a writeable numpy.ndarray" % what)
    (cache_type, num_blocks, block_size, kv_heads, head_pitch, slot_pitch,
     block_pitch) = _cache_layout(key_cache, value_cache, head_dim, cache_dtype)
    key_scale, value_scale = _scales(cache_type, k_scale, v_scale)
    flags = _flags(inverse)

    def host_array(array: Any, what: str, write: bool) -> None:
        if not isinstance(array, np.ndarray) or array.dtype != dtype:
            raise TypeError("clpe: %s must be a numpy.ndarray of %s" % (what, dtype))
        if write and not array.flags.writeable:
            raise ValueError("clpe: %s is read-only" % what)

    tokens: Optional[int] = None
    tensors: Dict[str, CHostRopeTensor] = {}
    if qkv is not None:
        if q is not None or k is not None or v is not None:
            raise ValueError("clpe: give qkv, or q, k and v, not both")
        host_array(qkv, "qkv", write=q_out is None)
        tokens, views = _fused_views(qkv, q_heads, kv_heads, head_dim, qkv.dtype.itemsize)
        for name, (offset, heads, row_pitch) in zip("qkv", views):
            tensors[name] = CHostRopeTensor(data=qkv.ctypes.data + offset, heads=heads,
                                            row_pitch=row_pitch)
    else:
        if k is None or v is None:
            raise ValueError("clpe: give qkv, or k and v (and q)")
        parts: Tuple[Tuple[str, Optional[HostArray]], ...] = (("q", q), ("k", k), ("v", v))
        for name, part in parts:
            if part is None:
                continue
            host_array(part, name, write=name == "q" and q_out is None)
            found, heads, hp, rp = _token_heads(part, head_dim, name)
            tokens = _check_tokens(found, tokens, name)
            tensors[name] = CHostRopeTensor(data=part.ctypes.data, heads=heads, head_pitch=hp,
                                            row_pitch=rp)
    assert tokens is not None
    if q_out is not None:
        if "q" not in tensors:
            raise ValueError("clpe: q_out needs queries (q or qkv)")
        host_array(q_out, "q_out", write=True)
        found, heads, hp, rp = _token_heads(q_out, head_dim, "q_out")
        _check_tokens(found, tokens, "q_out")
        tensors["q_out"] = CHostRopeTensor(data=q_out.ctypes.data, heads=heads, head_pitch=hp,
                                           row_pitch=rp)
    cache = CHostKvCache(key=key_cache.ctypes.data, value=value_cache.ctypes.data,
                         dtype=int(cache_type), num_blocks=num_blocks, block_size=block_size,
                         heads=kv_heads, head_pitch=head_pitch, slot_pitch=slot_pitch,
                         block_pitch=block_pitch, key_scale=key_scale, value_scale=value_scale)
    _mrope.check_int64_values(slots, "slots")
    slot_values = int_array(slots, np.int64, "slots")
    if slot_values.shape != (tokens,):
        raise ValueError("clpe: slots must have %d values, got shape %s"
                         % (tokens, slot_values.shape))
    c_positions: HostPositions
    if rope._config.calls.streams_positions:
        c_positions = _mrope.host_stream_positions(positions, rope.streams, (1, tokens),
                                                   token_first)[0]
    elif token_first is not None:
        raise ValueError("clpe: token_first applies to position streams")
    elif positions is None or is_integer(positions):
        start = 0 if positions is None else checked_int64(positions, "positions")
        c_positions = HostPositions(PositionSource.START, start)
    else:
        _mrope.check_int64_values(positions, "positions")
        values = int_array(positions, np.int64, "positions")
        if values.shape != (tokens,):
            raise ValueError("clpe: positions must be an int or %d position ids, got shape %s"
                             % (tokens, values.shape))
        c_positions = HostPositions(PositionSource.IDS, 0, values)
    result = q_out if q_out is not None else (q if q is not None else qkv)
    with rope._hold() as handle:
        if tokens == 0:
            return result
        _status.check(rope._config.calls.host_rope_kv(
            handle, tokens, tensors.get("q"), tensors.get("q_out"), tensors.get("k"),
            tensors.get("v"), cache, slot_values.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
            c_positions, flags), "rope_kv")
    return result
