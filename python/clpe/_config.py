# SPDX-License-Identifier: Apache-2.0
"""What an encoder computes (clpe_config) in Python's terms, and the
mapping between clpe's dtypes and NumPy's."""
from __future__ import annotations

import ctypes
import dataclasses
import enum
from typing import Any, Dict, Mapping, Optional, Type, TypeVar, Union, cast

import numpy as np
import numpy.typing as npt

from . import _status
from ._abi import CConfig, Dtype, Flag, Freq, Layout
from ._check import (INT64, check_enum, check_int32, check_int64, check_real, check_uint32,
                     is_integer)

# What the calls accept for a dtype, a frequency rule and a layout: the
# member, its name, or (dtype) a NumPy float dtype; an int is passed on for
# the library to judge.
DtypeArg = Union[Dtype, "npt.DTypeLike"]
FreqArg = Union[Freq, str, int]
LayoutArg = Union[Layout, str, int]
_E = TypeVar("_E", bound=enum.Enum)

# bf16 has no NumPy type: its values travel as their raw 16 bits in uint16,
# as the CLI writes them (np.uint32 << 16 viewed as float32 recovers them).
NUMPY_DTYPES: Dict[Dtype, "np.dtype[Any]"] = {
    Dtype.F32: np.dtype("<f4"),
    Dtype.F16: np.dtype("<f2"),
    Dtype.BF16: np.dtype("<u2"),
    Dtype.F64: np.dtype("<f8"),
}
_DTYPE_NAMES: Dict[str, Dtype] = {
    "f32": Dtype.F32, "float32": Dtype.F32,
    "f16": Dtype.F16, "float16": Dtype.F16, "half": Dtype.F16,
    "bf16": Dtype.BF16, "bfloat16": Dtype.BF16,
    "f64": Dtype.F64, "float64": Dtype.F64, "double": Dtype.F64,
}
_FREQ_NAMES: Dict[str, Freq] = {"paper": Freq.PAPER, "t2t": Freq.TENSOR2TENSOR,
               "tensor2tensor": Freq.TENSOR2TENSOR}
_LAYOUT_NAMES: Dict[str, Layout] = {"interleaved": Layout.INTERLEAVED, "split": Layout.SPLIT,
                 "split_cos_first": Layout.SPLIT_COS_FIRST,
                 "split-cos-first": Layout.SPLIT_COS_FIRST}


def to_dtype(value: DtypeArg) -> Dtype:
    """clpe Dtype from a Dtype, a name ("f32", "bf16", ...) or a NumPy float
    dtype. uint16 is refused: say "bf16" to mean bfloat16 bits."""
    if isinstance(value, Dtype):
        return value
    if isinstance(value, str) and value.lower() in _DTYPE_NAMES:
        return _DTYPE_NAMES[value.lower()]
    as_numpy: Optional["np.dtype[Any]"]
    try:
        as_numpy = np.dtype(value)
    except TypeError:
        as_numpy = None
    if as_numpy is not None and as_numpy.kind == "f":
        for dtype, numpy_dtype in NUMPY_DTYPES.items():
            if numpy_dtype == as_numpy.newbyteorder("<"):
                return dtype
    raise ValueError("clpe: unknown dtype %r (use float32, float16, float64 or 'bf16')"
                     % (value,))


def _to_enum(value: Any, names: Mapping[str, Any], enum_type: Type[_E],
             what: str) -> Union[_E, int]:
    return _known(enum_type, check_enum(value, enum_type, names, what))


@dataclasses.dataclass
class Config:
    """clpe_config, plus first_position: where a sequence starts in the
    convention (a preset's; the default start of table, add and gather)."""
    d: int
    base: float = 10000.0
    # A value the library knows but this binding does not stays an int.
    freq: Union[Freq, int] = Freq.PAPER
    layout: Union[Layout, int] = Layout.INTERLEAVED
    dtype: Union[Dtype, int] = Dtype.F32
    scale: float = 1.0
    flags: Flag = Flag(0)
    padding_position: int = 0
    first_position: int = 0

    @property
    def numpy_dtype(self) -> "np.dtype[Any]":
        """The NumPy dtype of the encoder's buffers (uint16 bits for bf16)."""
        return NUMPY_DTYPES[Dtype(self.dtype)]

    def to_c(self) -> CConfig:
        """The clpe_config, every field checked (a Config's fields may have
        been set by hand): TypeError or ValueError naming the field."""
        cfg = CConfig()
        cfg.d = check_uint32(self.d, "d")
        cfg.base = check_real(self.base, "base")
        cfg.freq = check_enum(self.freq, Freq, _FREQ_NAMES, "freq")
        cfg.layout = check_enum(self.layout, Layout, _LAYOUT_NAMES, "layout")
        cfg.dtype = check_int32(self.dtype, "dtype") if is_integer(self.dtype) \
            else int(to_dtype(cast(DtypeArg, self.dtype)))
        cfg.scale = check_real(self.scale, "scale")
        cfg.flags = check_uint32(self.flags, "flags")
        cfg.padding_position = checked_int64(self.padding_position, "padding_position")
        return cfg

    @classmethod
    def from_c(cls, cfg: CConfig, first_position: int = 0) -> "Config":
        return cls(d=cfg.d, base=cfg.base, freq=_known(Freq, cfg.freq),
                   layout=_known(Layout, cfg.layout), dtype=_known(Dtype, cfg.dtype),
                   scale=cfg.scale, flags=Flag(cfg.flags),
                   padding_position=cfg.padding_position, first_position=first_position)


def checked_int64(value: Any, what: str) -> int:
    """value as an int, refused unless an integer (TypeError) that fits in
    int64 (ValueError): ctypes would truncate or wrap it."""
    if is_integer(value) and not INT64[0] <= int(value) <= INT64[1]:
        raise ValueError("clpe: %s = %d does not fit in int64" % (what, int(value)))
    return check_int64(value, what)


def _known(enum_type: Type[_E], value: int) -> Union[_E, int]:
    return enum_type(value) if value in {member.value for member in enum_type} else value


def config_default(d: int) -> Config:
    """d as given, base 10000, paper frequencies, interleaved, float32, scale 1."""
    _check_width(d)
    return Config.from_c(_status._lib.clpe_config_default(d))


def config_preset(name: str, d: int) -> Config:
    """The configuration of a framework ("vaswani", "tensor2tensor",
    "fairseq", "marian", "opennmt-tf", ...) for width d, first_position set."""
    _check_width(d)
    cfg = CConfig()
    first = ctypes.c_int64()
    _status.check(_status._lib.clpe_config_preset(str(name).encode(), d, ctypes.byref(cfg),
                                                  ctypes.byref(first)),
                  "preset %r" % (name,))
    return Config.from_c(cfg, first.value)


def _check_width(d: Any) -> None:
    if not is_integer(d):
        raise TypeError("clpe: d must be an integer, got %r" % (d,))
    if not 0 <= d < 2 ** 32:
        raise _status.Error(-2005, "d = %d" % d)  # CLPE_ERROR_INVALID_D


def make_config(config: Optional[Config] = None, preset: Optional[str] = None,
                d: Optional[int] = None, dtype: Optional[DtypeArg] = None,
                base: Optional[float] = None, freq: Optional[FreqArg] = None,
                layout: Optional[LayoutArg] = None, scale: Optional[float] = None,
                flags: Optional[Union[Flag, int]] = None, padding_position: Optional[int] = None,
                first_position: Optional[int] = None) -> Config:
    """A Config from a Config, a preset name or d, with the given fields
    replaced; checked by the library (clpe_config_check)."""
    if config is not None:
        if preset is not None:
            raise ValueError("clpe: give config or preset, not both")
        result = dataclasses.replace(config)
        if d is not None:
            result.d = d
    elif d is None:
        raise ValueError("clpe: give d (with or without a preset) or a config")
    elif preset is not None:
        result = config_preset(preset, d)
    else:
        result = config_default(d)
    if dtype is not None:
        result.dtype = to_dtype(dtype)
    if base is not None:
        result.base = check_real(base, "base")
    if freq is not None:
        result.freq = _to_enum(freq, _FREQ_NAMES, Freq, "freq")
    if layout is not None:
        result.layout = _to_enum(layout, _LAYOUT_NAMES, Layout, "layout")
    if scale is not None:
        result.scale = check_real(scale, "scale")
    if flags is not None:
        result.flags = Flag(check_uint32(flags, "flags"))
    if padding_position is not None:
        result.padding_position = checked_int64(padding_position, "padding_position")
    if first_position is not None:
        result.first_position = checked_int64(first_position, "first_position")
    _check_width(result.d)
    c_config = result.to_c()
    _status.check(_status._lib.clpe_config_check(ctypes.byref(c_config)), "config")
    return result
