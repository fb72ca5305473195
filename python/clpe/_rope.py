# SPDX-License-Identifier: Apache-2.0
"""Rotary position embedding: clpe.Rope on PyOpenCL arrays and clpe.HostRope
on NumPy arrays, available when the loaded library has the rotary calls
(clpe.HAS_ROPE).

One class per object, whatever its positions: a plain configuration turns
every pair of a token by that token's position; mrope_section (M-RoPE,
Qwen2-VL's language model) or .vision() (its vision tower) turns each pair
by the position of its stream (see _mrope.py). Every library call goes
through one calls table per kind of object (the seam below). clpe.MRope and
clpe.HostMRope are the same classes under the names of the 1.1 previews.
"""
from __future__ import annotations

import ctypes
import re
from typing import Any, Callable, Dict, Optional, Set, Tuple, Type, TypeVar, Union, cast

import numpy as np
from numpy.typing import NDArray

from . import _hf_config, _mrope, _status
from ._abi import (ROPE_INVERSE, CBuildLog, CHostRopeTensor,
                   CMropeConfig, CPositions, CRopeConfig, CRopeTensor, CTensor,
                   Dtype, PositionSource, RopePairing, RopeScaling)
from ._check import (check_enum, check_float64_array, check_host_array, check_real,
                     check_size, check_uint32, check_uint64)
from ._config import NUMPY_DTYPES, checked_int64, to_dtype
from ._host import host_positions, pitches_of
from ._mrope import DevicePositions, HostPositions, StreamLayout

# A pyopencl object (the package has no type information): arrays, queues, events.
Device = Any
HostArray = NDArray[Any]
RopeT = TypeVar("RopeT", bound="Rope")
HostRopeT = TypeVar("HostRopeT", bound="HostRope")

_PAIRINGS = {"half_split": RopePairing.HALF_SPLIT, "half-split": RopePairing.HALF_SPLIT,
             "neox": RopePairing.HALF_SPLIT, "interleaved": RopePairing.INTERLEAVED,
             "gptj": RopePairing.INTERLEAVED}
_SCALINGS = {s.name.lower(): s for s in RopeScaling}
_FACTOR_ARRAYS = ("short_factor", "long_factor", "frequencies")
# The arrays each scaling reads; any other given with it is a mistake.
_ARRAYS_OF_SCALING: Dict[int, Tuple[str, ...]] = {int(s): () for s in RopeScaling}
_ARRAYS_OF_SCALING[int(RopeScaling.LONGROPE)] = ("short_factor", "long_factor")
_ARRAYS_OF_SCALING[int(RopeScaling.FREQUENCIES)] = ("frequencies",)
_NUMBERS = ("factor", "original_max_position", "low_freq_factor", "high_freq_factor",
            "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor")


def has_rope() -> bool:
    return hasattr(_status._lib, "clpe_rope_create")


def _need_rope() -> None:
    if not has_rope():
        raise NotImplementedError("clpe: the loaded library has no rotary calls")


def _ref(struct: Optional[ctypes.Structure]) -> Any:
    return ctypes.byref(struct) if struct is not None else None


def _flags(inverse: bool) -> int:
    if not isinstance(inverse, (bool, np.bool_)):
        raise TypeError("clpe: inverse must be True or False, got %r" % (inverse,))
    return ROPE_INVERSE if inverse else 0


# ---- the seam: every call a rotary object makes into the library ----------
#
# A rotary object reaches the library only through its configuration's calls
# table: _PlainCalls (one position per token) or _StreamCalls (a clpe_rope
# made with position streams; its calls are the plain ones). Positions
# arrive as _mrope.HostPositions / DevicePositions, a PositionSource or a
# StreamLayout of contiguous int64 values (itself a position source).

class _PlainCalls:
    """The library calls of a rotary object with one position per token."""

    release = "clpe_rope_release"
    streams_positions = False

    @staticmethod
    def create(context: int, device: int, config: "_RopeConfig", log: Any, status: Any) -> Any:
        return _status._lib.clpe_rope_create(context, device, ctypes.byref(config.c), log,
                                             status)

    @staticmethod
    def create_like(encoder: Any, config: "_RopeConfig", status: Any) -> Any:
        return _status._lib.clpe_rope_create_like(encoder, ctypes.byref(config.c), status)

    @staticmethod
    def create_host(config: "_RopeConfig", status: Any) -> Any:
        return _status._lib.clpe_rope_create_host(ctypes.byref(config.c), status)

    @staticmethod
    def frequencies(handle: Any, values: NDArray[np.float64], streams: NDArray[np.uint32],
                    amplitude: ctypes.c_double) -> int:
        status = int(_status._lib.clpe_rope_get_frequencies(
            handle, values.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), values.size,
            ctypes.byref(amplitude)))
        if status or not hasattr(_status._lib, "clpe_rope_get_streams"):
            streams[:] = 0
            return status
        return int(_status._lib.clpe_rope_get_streams(
            handle, streams.ctypes.data_as(ctypes.POINTER(ctypes.c_uint32)), streams.size, None))

    @staticmethod
    def _c(positions: DevicePositions) -> CPositions:
        return CPositions(source=int(positions.source.value), start=positions.start,
                          buffer=positions.buffer, offset=positions.offset)

    @staticmethod
    def _values(positions: HostPositions) -> Any:
        values = positions.values
        return values.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)) if values is not None \
            else None

    @staticmethod
    def rotate(handle: Any, queue: int, batch: int, seq: int, q: CRopeTensor,
               k: Optional[CRopeTensor], positions: DevicePositions, flags: int, count: int,
               events: Any, event: ctypes.c_void_p) -> int:
        c = _PlainCalls._c(positions)
        return int(_status._lib.clpe_enqueue_rope(
            handle, queue, batch, seq, ctypes.byref(q), _ref(k), ctypes.byref(c), flags, count,
            events, ctypes.byref(event)))

    @staticmethod
    def cache(handle: Any, queue: int, n: int, positions: DevicePositions, cos: CTensor,
              sin: CTensor, count: int, events: Any, event: ctypes.c_void_p) -> int:
        c = _PlainCalls._c(positions)
        return int(_status._lib.clpe_enqueue_rope_cache_at(
            handle, queue, n, ctypes.byref(c), ctypes.byref(cos), ctypes.byref(sin), count,
            events, ctypes.byref(event)))

    @staticmethod
    def host_rotate(handle: Any, batch: int, seq: int, q: CHostRopeTensor,
                    k: Optional[CHostRopeTensor], positions: HostPositions, flags: int) -> int:
        return int(_status._lib.clpe_host_rope(
            handle, batch, seq, ctypes.byref(q), _ref(k), int(positions.source.value),
            positions.start, _PlainCalls._values(positions), flags))

    @staticmethod
    def host_cache(handle: Any, n: int, positions: HostPositions, cos: int, sin: int) -> int:
        return int(_status._lib.clpe_host_rope_cache_at(
            handle, n, int(positions.source.value), positions.start,
            _PlainCalls._values(positions), cos, sin, 0))

    @staticmethod
    def rope_kv(handle: Any, queue: int, tokens: int, q: Optional[CRopeTensor],
                q_out: Optional[CRopeTensor], k: Optional[CRopeTensor],
                v: Optional[CRopeTensor], cache: ctypes.Structure, slots: ctypes.Structure,
                positions: DevicePositions, flags: int, count: int, events: Any,
                event: ctypes.c_void_p) -> int:
        c = _PlainCalls._c(positions)
        return int(_status._lib.clpe_enqueue_rope_kv(
            handle, queue, tokens, _ref(q), _ref(q_out), _ref(k), _ref(v), ctypes.byref(cache),
            ctypes.byref(slots), ctypes.byref(c), flags, count, events, ctypes.byref(event)))

    @staticmethod
    def host_rope_kv(handle: Any, tokens: int, q: Optional[CHostRopeTensor],
                     q_out: Optional[CHostRopeTensor], k: Optional[CHostRopeTensor],
                     v: Optional[CHostRopeTensor], cache: ctypes.Structure, slots: Any,
                     positions: HostPositions, flags: int) -> int:
        return int(_status._lib.clpe_host_rope_kv(
            handle, tokens, _ref(q), _ref(q_out), _ref(k), _ref(v), ctypes.byref(cache), slots,
            int(positions.source.value), positions.start, _PlainCalls._values(positions),
            flags))




class _StreamCalls(_PlainCalls):
    """The library calls of a rotary object with position streams: made from
    a clpe_mrope_config; every other call is a plain object's, which takes
    stream positions as position sources of their own."""

    streams_positions = True

    @staticmethod
    def _config(config: "_RopeConfig") -> CMropeConfig:
        assert config.mrope is not None, "a plain configuration has no streams"
        return config.mrope

    @staticmethod
    def create(context: int, device: int, config: "_RopeConfig", log: Any, status: Any) -> Any:
        return _status._lib.clpe_rope_create_mrope(
            context, device, ctypes.byref(_StreamCalls._config(config)), log, status)

    @staticmethod
    def create_like(encoder: Any, config: "_RopeConfig", status: Any) -> Any:
        return _status._lib.clpe_rope_create_mrope_like(
            encoder, ctypes.byref(_StreamCalls._config(config)), status)

    @staticmethod
    def create_host(config: "_RopeConfig", status: Any) -> Any:
        return _status._lib.clpe_rope_create_mrope_host(
            ctypes.byref(_StreamCalls._config(config)), status)


Calls = Type[_PlainCalls]


class _RopeConfig:
    """clpe_rope_config (and clpe_mrope_config, given position streams) from
    keywords, with the arrays it points to kept alive."""

    def __init__(self, head_dim: Any, rotary_dim: Any = 0, base: Any = None,
                 pairing: Any = None, dtype: Any = None, scaling: Any = None,
                 truncate: Any = True, seq_len: Any = 0, mrope_section: Any = None,
                 ladder: Any = None, vision: Any = False, **numbers_and_arrays: Any) -> None:
        _need_rope()
        # Hugging Face's name for it, as rope_scaling spells it
        if "original_max_position_embeddings" in numbers_and_arrays:
            if "original_max_position" in numbers_and_arrays:
                raise TypeError("clpe: give original_max_position or "
                                "original_max_position_embeddings, not both")
            numbers_and_arrays["original_max_position"] = numbers_and_arrays.pop(
                "original_max_position_embeddings")
        unknown = set(numbers_and_arrays) - set(_NUMBERS) - set(_FACTOR_ARRAYS)
        if unknown:
            raise TypeError("clpe: unknown rotary settings %s" % ", ".join(sorted(unknown)))
        head_dim = check_uint32(head_dim, "head_dim")
        rotary_dim = check_uint32(rotary_dim, "rotary_dim")
        for flag, name in ((truncate, "truncate"), (vision, "vision")):
            if not isinstance(flag, (bool, np.bool_)):
                raise TypeError("clpe: %s must be True or False, got %r" % (name, flag))
        c: CRopeConfig = _status._lib.clpe_rope_config_default(head_dim)
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
        self.arrays: Dict[str, NDArray[np.float64]] = {}
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
        if vision:
            # Qwen2-VL's vision tower: rows then columns, a frequency ladder each.
            if mrope_section is None:
                mrope_section = [pairs // 2] * 2
            if ladder is None:
                ladder = "per_stream"
        elif mrope_section is None and ladder is not None:
            raise ValueError("clpe: ladder applies to position streams: give mrope_section too")
        self.c = c
        self.mrope = None if mrope_section is None else \
            _mrope.stream_config(c, mrope_section, ladder)
        self.calls: Calls = _PlainCalls if self.mrope is None else _StreamCalls
        # clpe field -> the config.json field it came from (from_hf_config)
        self.fields: Dict[str, str] = {}

    def detail(self) -> Optional[str]:
        """Why the library refuses this configuration, naming the field as
        the caller gave it (config.json's name where it came from there);
        None when the library does not say."""
        lib = _status._lib
        name = "clpe_rope_config_check" if self.mrope is None else "clpe_mrope_config_check"
        if not hasattr(lib, name):
            return None
        text = ctypes.create_string_buffer(512)
        struct: ctypes.Structure = self.c if self.mrope is None else self.mrope
        if getattr(lib, name)(ctypes.byref(struct), text, len(text)) == 0:
            return None
        detail: str = text.value.decode(errors="replace")
        if self.fields:
            words = re.compile(r"\b(%s)\b" % "|".join(
                re.escape(f) for f in sorted(self.fields, key=len, reverse=True)))
            named: Set[str] = set()

            def label(m: "re.Match[str]") -> str:
                if m.group(1) in named:
                    return m.group(1)
                named.add(m.group(1))
                return "%s (config.json's %s)" % (m.group(1), self.fields[m.group(1)])
            detail = words.sub(label, detail)
        return detail

    def error(self, status: int, build_log: Optional[str] = None) -> _status.Error:
        """The clpe.Error of a failed creation, with the library's reason."""
        return _status.Error(status, "rope", build_log=build_log, detail=self.detail())

    @classmethod
    def from_hf(cls, config: _hf_config.HfConfig, overrides: Dict[str, Any]) -> "_RopeConfig":
        """The configuration a model's config.json describes; overrides
        (dtype, seq_len, pairing, ...) replace or add keywords."""
        mapped = _hf_config.map_config(config)
        settings = dict(mapped.settings)
        settings.update(overrides)
        head_dim = settings.pop("head_dim", mapped.head_dim)
        rope_config = cls(head_dim, **settings)
        rope_config.fields = {k: v for k, v in mapped.fields.items() if k not in overrides}
        return rope_config

    @property
    def head_dim(self) -> int:
        return int(self.c.head_dim)

    @property
    def rotary_dim(self) -> int:
        return int(self.c.rotary_dim or self.c.head_dim)

    @property
    def streams(self) -> int:
        return 1 if self.mrope is None else int(self.mrope.streams)

    @property
    def numpy_dtype(self) -> np.dtype[Any]:
        return NUMPY_DTYPES[Dtype(self.c.dtype)]


def _heads_layout(shape: Tuple[int, ...], strides: Tuple[int, ...], itemsize: int, what: str,
                  head_dim: int) -> Tuple[int, int, int, Tuple[int, int, int]]:
    """(batch, seq, heads, (batch, seq, head) pitches) of a [batch, seq,
    heads, head_dim] or [seq, heads, head_dim] array, any strides."""
    if len(shape) not in (3, 4) or shape[-1] != head_dim:
        raise ValueError("clpe: %s must have shape [batch, seq, heads, %d] or [seq, heads, %d], "
                         "got %s" % (what, head_dim, head_dim, tuple(shape)))
    pitches = [int(p) for p in pitches_of(shape, strides, itemsize, what)]
    if len(shape) == 3:
        shape, pitches = (1,) + tuple(shape), [0] + pitches
    return shape[0], shape[1], shape[2], (pitches[0], pitches[1], pitches[2])


class _RopeBase(_status.Handle):
    _what = "rotary object"
    _config: _RopeConfig

    def _adopt(self, config: _RopeConfig, handle: Any) -> None:
        self._config = config
        self._release = config.calls.release
        self._handle = handle

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype of q, k and the cache (uint16 bits for bf16)."""
        return self._config.numpy_dtype

    @property
    def head_dim(self) -> int:
        return self._config.head_dim

    @property
    def rotary_dim(self) -> int:
        return self._config.rotary_dim

    @property
    def streams(self) -> int:
        """Positions per token: 1, or the streams of mrope_section."""
        return self._config.streams

    @property
    def mrope_section(self) -> Optional[Tuple[int, ...]]:
        """The pairs of each position stream; None for one position per token."""
        mrope = self._config.mrope
        return None if mrope is None else tuple(mrope.section[:mrope.streams])

    def _frequencies(self) -> Tuple[NDArray[np.float64], NDArray[np.uint32], float]:
        values = np.empty(self.rotary_dim // 2, np.float64)
        streams = np.empty(values.size, np.uint32)
        amplitude = ctypes.c_double()
        with self._hold() as handle:
            _status.check(self._config.calls.frequencies(handle, values, streams, amplitude),
                          "frequencies")
        return values, streams, amplitude.value

    def frequencies(self) -> Tuple[NDArray[np.float64], float]:
        """(the per-pair frequencies w_i as float64, the amplitude m)."""
        values, _, amplitude = self._frequencies()
        return values, amplitude

    def pair_streams(self) -> NDArray[np.uint32]:
        """The position stream each pair turns with, as the library holds it."""
        return self._frequencies()[1]

    def _check_pair(self, q_shape: Tuple[int, int], k_shape: Optional[Tuple[int, int]]) -> None:
        if k_shape is not None and k_shape != q_shape:
            raise ValueError("clpe: q and k have different batch or seq")


class HostRope(_RopeBase):
    """The rotary host emulation on NumPy arrays (clpe_rope_create_host):
    HostRope(head_dim=128, base=500000, scaling="llama3", factor=8, ...),
    HostRope(128, mrope_section=[16, 24, 24], base=1e6) (M-RoPE), or
    HostRope.vision(80) (Qwen2-VL's vision tower)."""

    def __init__(self, head_dim: int, **config: Any) -> None:
        self._host_init(_RopeConfig(head_dim, **config))

    def _host_init(self, config: _RopeConfig) -> None:
        status = ctypes.c_int32()
        handle = config.calls.create_host(config, ctypes.byref(status))
        if not handle:
            raise config.error(status.value)
        self._adopt(config, handle)

    @classmethod
    def from_hf_config(cls: Type[HostRopeT], config: _hf_config.HfConfig,
                       **overrides: Any) -> HostRopeT:
        """The rotary a model's config.json describes (a path, or the dict
        as the model ships it): rope_theta, head_dim (or hidden_size /
        num_attention_heads), partial_rotary_factor / rotary_dim /
        rotary_pct, max_position_embeddings and rope_scaling of any
        rope_type clpe knows (default, linear, dynamic, yarn, llama3,
        longrope, mrope). The pairing comes from model_type (GPT-J, CodeGen,
        DeepSeek: interleaved; others half-split). overrides (dtype,
        seq_len for dynamic and longrope, pairing, ...) win. A field
        missing, mistyped or unknown raises clpe.ConfigError naming it."""
        rope = object.__new__(cls)
        rope._host_init(_RopeConfig.from_hf(config, overrides))
        return rope

    @classmethod
    def vision(cls: Type[HostRopeT], head_dim: int, **config: Any) -> HostRopeT:
        """Qwen2-VL's vision rotary: two streams (row, column) of head_dim / 4
        pairs, a frequency ladder each; positions rot_pos_emb's [patches, 2]."""
        return cls(head_dim, vision=True, **config)

    def _tensor(self, array: HostArray, what: str) -> Tuple[CHostRopeTensor, Tuple[int, int]]:
        check_host_array(array, what, self.dtype, writable=True)
        batch, seq, heads, (batch_pitch, row_pitch, head_pitch) = _heads_layout(
            array.shape, array.strides, array.itemsize, what, self._config.head_dim)
        tensor = CHostRopeTensor(data=array.ctypes.data, heads=heads, head_pitch=head_pitch,
                                 row_pitch=row_pitch, batch_pitch=batch_pitch)
        return tensor, (batch, seq)

    def _positions(self, positions: Any, batch: int, seq: int,
                   token_first: Optional[bool]) -> HostPositions:
        if self._config.calls.streams_positions:
            return _mrope.host_stream_positions(positions, self.streams, (batch, seq),
                                                token_first)[0]
        if token_first is not None:
            raise ValueError("clpe: token_first applies to position streams")
        _mrope.check_int64_values(positions, "positions")
        source, start, values = host_positions(positions, batch, seq, 0)
        return HostPositions(PositionSource(source), checked_int64(start, "start"), values)

    def rotate(self, q: HostArray, k: Optional[HostArray] = None, positions: Any = None,
               inverse: bool = False, token_first: Optional[bool] = None) -> HostArray:
        """Rotate q (and k), [batch, seq, heads, head_dim] or [seq, heads,
        head_dim] arrays of any strides, in place. positions: as in host_add
        (None: 0), or with position streams [streams, batch, seq], [streams,
        tokens] or token-first [tokens, streams] (a square [streams, streams]
        is read stream-first unless token_first=True). Returns q."""
        q_tensor, shape = self._tensor(q, "q")
        k_tensor, k_shape = self._tensor(k, "k") if k is not None else (None, None)
        self._check_pair(shape, k_shape)
        c_positions = self._positions(positions, shape[0], shape[1], token_first)
        flags = _flags(inverse)
        with self._hold() as handle:
            if shape[0] * shape[1] == 0:
                return q
            _status.check(self._config.calls.host_rotate(
                handle, shape[0], shape[1], q_tensor, k_tensor, c_positions, flags), "rope")
        return q

    def cache(self, positions: Any,
              token_first: Optional[bool] = None) -> Tuple[HostArray, HostArray]:
        """(cos, sin), each [tokens, rotary_dim]: for a range of positions,
        or with position streams for positions [streams, tokens] or [tokens,
        streams] (the cos and sin Hugging Face multiplies by after its
        section select)."""
        if self._config.calls.streams_positions:
            c_positions, n = _mrope.host_stream_positions(positions, self.streams, None,
                                                          token_first)
        else:
            if not isinstance(positions, range) or positions.step != 1:
                raise TypeError("clpe: positions must be a range of step 1")
            n = len(positions)
            c_positions = HostPositions(PositionSource.START,
                                        checked_int64(positions.start, "start"))
        cos = np.empty((n, self.rotary_dim), self.dtype)
        sin = np.empty_like(cos)
        with self._hold() as handle:
            if n:
                _status.check(self._config.calls.host_cache(
                    handle, n, c_positions, cos.ctypes.data, sin.ctypes.data), "rope cache")
        return cos, sin


class Rope(_RopeBase):
    """Rotary embedding on a device: Rope(context, device=None, head_dim=...,
    **config) (mrope_section=[16, 24, 24] for M-RoPE), Rope.vision(context,
    head_dim=80) for Qwen2-VL's vision tower, or Rope.like(encoder,
    head_dim=..., ...) to share an encoder's built program."""

    context: Device
    device: Device

    def __init__(self, context: Device, device: Device = None, head_dim: Optional[int] = None,
                 **config: Any) -> None:
        if head_dim is None:
            raise ValueError("clpe: give head_dim")
        self._device_init(context, device, lambda: _RopeConfig(head_dim, **config))

    @classmethod
    def from_hf_config(cls: Type[RopeT], context: Device, config: _hf_config.HfConfig,
                       device: Device = None, **overrides: Any) -> RopeT:
        """The rotary a model's config.json describes (a path, or the dict),
        on a device: the mapping of HostRope.from_hf_config."""
        rope = object.__new__(cls)
        rope._device_init(context, device, lambda: _RopeConfig.from_hf(config, overrides))
        return rope

    def _device_init(self, context: Device, device: Device,
                     make_config: Callable[[], _RopeConfig]) -> None:
        from ._opencl import _cl
        _cl()
        if device is None:
            if len(context.devices) != 1:
                raise ValueError("clpe: the context has %d devices; say which"
                                 % len(context.devices))
            device = context.devices[0]
        rope_config = make_config()
        self.context, self.device = context, device
        log_text = ctypes.create_string_buffer(1 << 16)
        log = CBuildLog(buffer=ctypes.cast(log_text, ctypes.c_void_p), capacity=len(log_text))
        status = ctypes.c_int32()
        handle = rope_config.calls.create(context.int_ptr, device.int_ptr, rope_config,
                                          ctypes.byref(log), ctypes.byref(status))
        if not handle:
            text = log_text.value.decode(errors="replace") if log.length else None
            raise rope_config.error(status.value, build_log=text)
        self._adopt(rope_config, handle)

    @classmethod
    def vision(cls: Type[RopeT], context: Device, device: Device = None,
               head_dim: Optional[int] = None, **config: Any) -> RopeT:
        """Qwen2-VL's vision rotary on a device (see HostRope.vision)."""
        return cls(context, device, head_dim, vision=True, **config)

    @classmethod
    def like(cls: Type[RopeT], encoder: Any, head_dim: int, **config: Any) -> RopeT:
        """A Rope on an encoder's context and device, sharing its program."""
        rope = object.__new__(cls)
        rope_config = _RopeConfig(head_dim, **config)
        rope.context, rope.device = encoder.context, encoder.device
        status = ctypes.c_int32()
        with encoder._hold() as shared:
            handle = rope_config.calls.create_like(shared, rope_config, ctypes.byref(status))
        if not handle:
            raise rope_config.error(status.value)
        rope._adopt(rope_config, handle)
        return rope

    def host(self) -> HostRope:
        """A HostRope of this configuration: the bits this one writes."""
        host = object.__new__(HostRope)
        host._host_init(self._config)
        return host

    def _tensor(self, call: Any, array: Device,
                what: str) -> Tuple[CRopeTensor, Tuple[int, int]]:
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

    def _positions(self, call: Any, positions: Any, batch: int, seq: int,
                   token_first: Optional[bool]) -> DevicePositions:
        if self._config.calls.streams_positions:
            return _mrope.device_stream_positions(call, positions, self.streams, (batch, seq),
                                                  token_first)[0]
        if token_first is not None:
            raise ValueError("clpe: token_first applies to position streams")
        if positions is None:
            return DevicePositions(PositionSource.START)
        _mrope.check_int64_values(positions, "positions")
        c: CPositions = call.positions(positions, batch, seq)
        return DevicePositions(PositionSource(c.source), c.start, c.buffer, c.offset)

    def rotate(self, queue: Device, q: Device, k: Device = None, positions: Any = None,
               inverse: bool = False, wait_for: Any = None,
               token_first: Optional[bool] = None) -> Device:
        """Rotate q (and k) in place: Arrays of [batch, seq, heads, head_dim]
        (any strides: a transposed [batch, heads, seq, d] view works) or
        [seq, heads, head_dim]. positions as in Encoder.add (None: 0), or
        with position streams as in HostRope.rotate (a C-contiguous int64
        Array, or host values, uploaded). Returns the call's event."""
        from ._opencl import _Call
        call = _Call(self, wait_for)
        q_tensor, shape = self._tensor(call, q, "q")
        k_tensor, k_shape = self._tensor(call, k, "k") if k is not None else (None, None)
        self._check_pair(shape, k_shape)
        flags = _flags(inverse)
        c_positions = self._positions(call, positions, shape[0], shape[1], token_first)
        event = ctypes.c_void_p()
        count, events = call.wait_list()
        with self._hold() as handle:
            if shape[0] * shape[1] == 0:
                return call.nothing_to_do(queue)
            status = self._config.calls.rotate(handle, queue.int_ptr, shape[0], shape[1],
                                               q_tensor, k_tensor, c_positions, flags, count,
                                               events, event)
        return call.finish(status, "rope", event)

    def cache(self, queue: Device, cos: Device, sin: Device, start: int = 0,
              n: Optional[int] = None, wait_for: Any = None, positions: Any = None,
              token_first: Optional[bool] = None) -> Device:
        """cos and sin ([n, rotary_dim] Arrays) for positions start ..
        start+n-1 (n: every row by default), or with position streams for
        positions [streams, n] or [n, streams] as in HostRope.cache."""
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
            tensors.append(CTensor(buffer=array.base_data.int_ptr if array.base_data is not None
                                   else None, offset=array.offset, row_pitch=pitches[0]))
        rows = min(cos.shape[0], sin.shape[0])
        if self._config.calls.streams_positions:
            if n is not None or start != 0:
                raise ValueError("clpe: with position streams, give positions, not start or n")
            c_positions, n = _mrope.device_stream_positions(call, positions, self.streams, None,
                                                            token_first)
        else:
            if positions is not None or token_first is not None:
                raise ValueError("clpe: give start and n; positions are for position streams")
            n = rows if n is None else check_size(n, "n")
            c_positions = DevicePositions(PositionSource.START, checked_int64(start, "start"))
        if not n <= rows:
            raise ValueError("clpe: n = %d, but cos and sin have %d rows" % (n, rows))
        event = ctypes.c_void_p()
        count, events = call.wait_list()
        with self._hold() as handle:
            if n == 0:
                return call.nothing_to_do(queue)
            status = self._config.calls.cache(handle, queue.int_ptr, n, c_positions, tensors[0],
                                              tensors[1], count, events, event)
        return call.finish(status, "rope cache", event)


# The names of the 1.1 previews, where M-RoPE had classes of its own.
MRope = Rope
HostMRope = HostRope
