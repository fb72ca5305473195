"""What an encoder computes (clpe_config) in Python's terms, and the
mapping between clpe's dtypes and NumPy's."""
from __future__ import annotations

import ctypes
import dataclasses

import numpy as np

from . import _status
from ._abi import CConfig, Dtype, Flag, Freq, Layout

# bf16 has no NumPy type: its values travel as their raw 16 bits in uint16,
# as the CLI writes them (np.uint32 << 16 viewed as float32 recovers them).
NUMPY_DTYPES = {
    Dtype.F32: np.dtype("<f4"),
    Dtype.F16: np.dtype("<f2"),
    Dtype.BF16: np.dtype("<u2"),
    Dtype.F64: np.dtype("<f8"),
}
_DTYPE_NAMES = {
    "f32": Dtype.F32, "float32": Dtype.F32,
    "f16": Dtype.F16, "float16": Dtype.F16, "half": Dtype.F16,
    "bf16": Dtype.BF16, "bfloat16": Dtype.BF16,
    "f64": Dtype.F64, "float64": Dtype.F64, "double": Dtype.F64,
}
_FREQ_NAMES = {"paper": Freq.PAPER, "t2t": Freq.TENSOR2TENSOR,
               "tensor2tensor": Freq.TENSOR2TENSOR}
_LAYOUT_NAMES = {"interleaved": Layout.INTERLEAVED, "split": Layout.SPLIT,
                 "split_cos_first": Layout.SPLIT_COS_FIRST,
                 "split-cos-first": Layout.SPLIT_COS_FIRST}


def to_dtype(value):
    """clpe Dtype from a Dtype, a name ("f32", "bf16", ...) or a NumPy float
    dtype. uint16 is refused: say "bf16" to mean bfloat16 bits."""
    if isinstance(value, Dtype):
        return value
    if isinstance(value, str) and value.lower() in _DTYPE_NAMES:
        return _DTYPE_NAMES[value.lower()]
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


def _to_enum(value, names, enum_type, what):
    if isinstance(value, str):
        if value.lower() in names:
            return names[value.lower()]
        raise ValueError("clpe: unknown %s %r (one of %s)" % (what, value, ", ".join(names)))
    return enum_type(int(value)) if int(value) in set(enum_type) else int(value)


@dataclasses.dataclass
class Config:
    """clpe_config, plus first_position: where a sequence starts in the
    convention (a preset's; the default start of table, add and gather)."""
    d: int
    base: float = 10000.0
    freq: Freq = Freq.PAPER
    layout: Layout = Layout.INTERLEAVED
    dtype: Dtype = Dtype.F32
    scale: float = 1.0
    flags: Flag = Flag(0)
    padding_position: int = 0
    first_position: int = 0

    @property
    def numpy_dtype(self):
        """The NumPy dtype of the encoder's buffers (uint16 bits for bf16)."""
        return NUMPY_DTYPES[Dtype(self.dtype)]

    def to_c(self):
        cfg = CConfig()
        cfg.d = self.d
        cfg.base = self.base
        cfg.freq = int(self.freq)
        cfg.layout = int(self.layout)
        cfg.dtype = int(self.dtype)
        cfg.scale = self.scale
        cfg.flags = int(self.flags)
        cfg.padding_position = checked_int64(self.padding_position, "padding_position")
        return cfg

    @classmethod
    def from_c(cls, cfg, first_position=0):
        return cls(d=cfg.d, base=cfg.base, freq=_known(Freq, cfg.freq),
                   layout=_known(Layout, cfg.layout), dtype=_known(Dtype, cfg.dtype),
                   scale=cfg.scale, flags=Flag(cfg.flags),
                   padding_position=cfg.padding_position, first_position=first_position)


def checked_int64(value, what):
    """value as an int, refused (ValueError) outside int64: ctypes would wrap it."""
    value = int(value)
    if not -2 ** 63 <= value < 2 ** 63:
        raise ValueError("clpe: %s = %d does not fit in int64" % (what, value))
    return value


def _known(enum_type, value):
    return enum_type(value) if value in set(enum_type) else value


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


def _check_width(d):
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
        raise TypeError("clpe: d must be an integer, got %r" % (d,))
    if not 0 <= d < 2 ** 32:
        raise _status.Error(-2005, "d = %d" % d)  # CLPE_ERROR_INVALID_D


def make_config(config=None, preset=None, d=None, dtype=None, base=None, freq=None,
                layout=None, scale=None, flags=None, padding_position=None,
                first_position=None):
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
        result.base = float(base)
    if freq is not None:
        result.freq = _to_enum(freq, _FREQ_NAMES, Freq, "freq")
    if layout is not None:
        result.layout = _to_enum(layout, _LAYOUT_NAMES, Layout, "layout")
    if scale is not None:
        result.scale = float(scale)
    if flags is not None:
        result.flags = Flag(int(flags))
    if padding_position is not None:
        result.padding_position = int(padding_position)
    if first_position is not None:
        result.first_position = int(first_position)
    _check_width(result.d)
    c_config = result.to_c()
    _status.check(_status._lib.clpe_config_check(ctypes.byref(c_config)), "config")
    return result
