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
under a float32 rope.

    qkv = ...  # [tokens, (hq + 2 * hk) * head_dim], the projection output
    clpe.rope_kv(rope, queue, key_cache, value_cache, slots, qkv=qkv, q_heads=hq,
                 positions=positions)
"""
import ctypes

import numpy as np

from . import _status
from ._abi import (ROPE_INVERSE, CHostKvCache, CHostRopeTensor, CKvCache, CKvSlots, CPositions,
                   CRopeTensor, Dtype, PositionSource)
from ._check import check_uint32
from ._config import NUMPY_DTYPES, checked_int64
from ._host import int_array, pitches_of

_DTYPES = {dtype: Dtype(code) for code, dtype in NUMPY_DTYPES.items()}


def has_rope_kv():
    return hasattr(_status._lib, "clpe_enqueue_rope_kv")


def _cache_layout(key, value, head_dim):
    """(dtype, num_blocks, block_size, heads, head, slot, block pitches) of
    the two cache arrays, which must agree in shape, dtype and strides."""
    for array, name in ((key, "key_cache"), (value, "value_cache")):
        if array.ndim != 4 or array.shape[-1] != head_dim:
            raise ValueError("clpe: %s must have shape [num_blocks, block_size, kv_heads, %d], "
                             "got %s" % (name, head_dim, tuple(array.shape)))
    if key.shape != value.shape or key.dtype != value.dtype or key.strides != value.strides:
        raise ValueError("clpe: key_cache and value_cache differ in shape, dtype or strides")
    if key.dtype not in _DTYPES:
        raise TypeError("clpe: the cache's dtype %s is not one of clpe's" % key.dtype)
    block_pitch, slot_pitch, head_pitch = pitches_of(key.shape, key.strides, key.dtype.itemsize,
                                                     "key_cache")
    num_blocks, block_size, heads = key.shape[:3]
    # an axis of one entry has pitch 0 here: the library takes its default
    return (_DTYPES[key.dtype], num_blocks, block_size, heads, head_pitch, slot_pitch,
            block_pitch)


def _token_heads(array, head_dim, what):
    """(tokens, heads, head_pitch, row_pitch) of a [tokens, heads, head_dim] array."""
    if array.ndim != 3 or array.shape[-1] != head_dim:
        raise ValueError("clpe: %s must have shape [tokens, heads, %d], got %s"
                         % (what, head_dim, tuple(array.shape)))
    row_pitch, head_pitch = pitches_of(array.shape, array.strides, array.dtype.itemsize, what)
    return array.shape[0], array.shape[1], head_pitch, row_pitch


def _fused_views(qkv, q_heads, kv_heads, head_dim, itemsize):
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
    offsets = [0, int(q_heads) * head_dim, (int(q_heads) + kv_heads) * head_dim]
    heads = [int(q_heads), kv_heads, kv_heads]
    return qkv.shape[0], [(o * itemsize, h, row_pitch) for o, h in zip(offsets, heads)]


def _check_tokens(found, tokens, what):
    if tokens is not None and found != tokens:
        raise ValueError("clpe: %s has %d tokens, the others %d" % (what, found, tokens))
    return found


def rope_kv(rope, queue, key_cache, value_cache, slots, q=None, k=None, v=None, qkv=None,
            q_heads=None, q_out=None, positions=None, inverse=False, report=None,
            wait_for=None):
    """Rotate q (qkv's queries, or q: [tokens, hq, head_dim]) in place or into
    q_out, and write k rotated and v into key_cache and value_cache at each
    token's slot (int64, -1: not cached). Arrays are pyopencl Arrays of the
    rope's dtype (the cache's may be float16 or bfloat16 under float32).
    positions: an int (the first token's; the others count up), or int64
    position ids [tokens]. report: an optional uint32 Array of 2 the call
    fills with the number of tokens refused for a bad slot and the first of
    them; a call with a bad slot writes nothing (checked on the device).
    Returns the call's event."""
    from ._opencl import _Call
    if not has_rope_kv():
        raise NotImplementedError("clpe: the loaded library has no clpe_enqueue_rope_kv")
    call = _Call(rope, wait_for)
    head_dim = rope._config.head_dim
    dtype = rope.dtype
    for array, what in ((key_cache, "key_cache"), (value_cache, "value_cache")):
        if not call._is_array(array):
            raise TypeError("clpe: %s must be a pyopencl.array.Array" % what)
    (cache_dtype, num_blocks, block_size, kv_heads, head_pitch, slot_pitch,
     block_pitch) = _cache_layout(key_cache, value_cache, head_dim)

    def device_array(array, what, write):
        if not call._is_array(array):
            raise TypeError("clpe: %s must be a pyopencl.array.Array" % what)
        if array.dtype != dtype:
            raise TypeError("clpe: %s has dtype %s; this rotary object uses %s"
                            % (what, array.dtype, dtype))
        call.events.extend(array.events)
        if write:
            call.written.append(array)
        return array.base_data.int_ptr if array.base_data is not None else None

    tokens = None
    tensors = {}
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
    key_buffer, value_buffer = key_cache.base_data.int_ptr, value_cache.base_data.int_ptr
    cache = CKvCache(key=key_buffer, value=value_buffer, key_offset=key_cache.offset,
                     value_offset=value_cache.offset, dtype=int(cache_dtype),
                     num_blocks=num_blocks, block_size=block_size, heads=kv_heads,
                     head_pitch=head_pitch, slot_pitch=slot_pitch, block_pitch=block_pitch)
    slots_buffer, slots_offset, shape = call.int_buffer(slots, "slots", np.int64)
    if shape is not None and tuple(shape) != (tokens,):
        raise ValueError("clpe: slots must have %d values, got shape %s" % (tokens, tuple(shape)))
    report_buffer = None
    if report is not None:
        report_buffer, _, shape = call.int_buffer(report, "report", np.uint32, write=True)
        if shape is not None and tuple(shape) != (2,):
            raise ValueError("clpe: report must be 2 uint32 values")
    kv_slots = CKvSlots(buffer=slots_buffer, offset=slots_offset, report=report_buffer)
    if positions is None or (isinstance(positions, (int, np.integer)) and
                             not isinstance(positions, bool)):
        start = 0 if positions is None else checked_int64(positions, "positions")
        c_positions = CPositions(source=int(PositionSource.START), start=start)
    else:
        buffer, offset, shape = call.int_buffer(positions, "positions", np.int64)
        if shape is not None and tuple(shape) != (tokens,):
            raise ValueError("clpe: positions must be an int or %d position ids, got shape %s"
                             % (tokens, tuple(shape)))
        c_positions = CPositions(source=int(PositionSource.IDS), buffer=buffer, offset=offset)
    event = ctypes.c_void_p()
    count, events = call.wait_list()

    def ref(name):
        return ctypes.byref(tensors[name]) if name in tensors else None

    with rope._hold() as handle:
        status = _status._lib.clpe_enqueue_rope_kv(
            handle, queue.int_ptr, tokens, ref("q"), ref("q_out"), ref("k"), ref("v"),
            ctypes.byref(cache), ctypes.byref(kv_slots), ctypes.byref(c_positions),
            ROPE_INVERSE if inverse else 0, count, events, ctypes.byref(event))
    return call.finish(status, "rope_kv", event)


def host_rope_kv(rope, key_cache, value_cache, slots, q=None, k=None, v=None, qkv=None,
                 q_heads=None, q_out=None, positions=None, inverse=False):
    """The exact bits of rope_kv on NumPy arrays, with a HostRope (or a Rope's
    .host()). A bad slot raises clpe.Error (CLPE_ERROR_INVALID_SLOTS) and
    writes nothing."""
    if not has_rope_kv():
        raise NotImplementedError("clpe: the loaded library has no clpe_host_rope_kv")
    head_dim = rope._config.head_dim
    dtype = rope.dtype
    for array, what in ((key_cache, "key_cache"), (value_cache, "value_cache")):
        if not isinstance(array, np.ndarray) or not array.flags.writeable:
            raise TypeError("clpe: %s must be a writeable numpy.ndarray" % what)
    (cache_dtype, num_blocks, block_size, kv_heads, head_pitch, slot_pitch,
     block_pitch) = _cache_layout(key_cache, value_cache, head_dim)

    def host_array(array, what, write):
        if not isinstance(array, np.ndarray) or array.dtype != dtype:
            raise TypeError("clpe: %s must be a numpy.ndarray of %s" % (what, dtype))
        if write and not array.flags.writeable:
            raise ValueError("clpe: %s is read-only" % what)

    tokens = None
    tensors = {}
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
        for name, array in (("q", q), ("k", k), ("v", v)):
            if array is None:
                continue
            host_array(array, name, write=name == "q" and q_out is None)
            found, heads, hp, rp = _token_heads(array, head_dim, name)
            tokens = _check_tokens(found, tokens, name)
            tensors[name] = CHostRopeTensor(data=array.ctypes.data, heads=heads, head_pitch=hp,
                                            row_pitch=rp)
    if q_out is not None:
        if "q" not in tensors:
            raise ValueError("clpe: q_out needs queries (q or qkv)")
        host_array(q_out, "q_out", write=True)
        found, heads, hp, rp = _token_heads(q_out, head_dim, "q_out")
        _check_tokens(found, tokens, "q_out")
        tensors["q_out"] = CHostRopeTensor(data=q_out.ctypes.data, heads=heads, head_pitch=hp,
                                           row_pitch=rp)
    cache = CHostKvCache(key=key_cache.ctypes.data, value=value_cache.ctypes.data,
                         dtype=int(cache_dtype), num_blocks=num_blocks, block_size=block_size,
                         heads=kv_heads, head_pitch=head_pitch, slot_pitch=slot_pitch,
                         block_pitch=block_pitch)
    slot_values = int_array(slots, np.int64, "slots")
    if slot_values.shape != (tokens,):
        raise ValueError("clpe: slots must have %d values, got shape %s"
                         % (tokens, slot_values.shape))
    source, start, values = PositionSource.START, 0, None
    if isinstance(positions, (int, np.integer)) and not isinstance(positions, bool):
        start = int(positions)
    elif positions is not None:
        source, values = PositionSource.IDS, int_array(positions, np.int64, "positions")
        if values.shape != (tokens,):
            raise ValueError("clpe: positions must be an int or %d position ids, got shape %s"
                             % (tokens, values.shape))

    def ref(name):
        return ctypes.byref(tensors[name]) if name in tensors else None

    start = checked_int64(start, "start")
    with rope._hold() as handle:
        _status.check(_status._lib.clpe_host_rope_kv(
            handle, tokens, ref("q"), ref("q_out"), ref("k"), ref("v"), ctypes.byref(cache),
            slot_values.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), int(source), start,
            values.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)) if values is not None
            else None, ROPE_INVERSE if inverse else 0), "rope_kv")
    return q_out if q_out is not None else (q if q is not None else qkv)
