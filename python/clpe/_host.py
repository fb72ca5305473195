# SPDX-License-Identifier: Apache-2.0
"""The host emulation on NumPy arrays: the exact bits a device writes for a
table, an add or a gather, with no OpenCL at all (clpe_encoder_create_host)."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

import ctypes

import numpy as np
import numpy.typing as npt

from . import _status
from ._abi import PositionSource
from ._check import is_integer
from ._config import Config, make_config

# A NumPy array of any dtype (the calls check dtypes themselves).
Array = npt.NDArray[Any]

# Positions of an add or gather: None (the first position), an int start,
# per-sequence starts, or [batch, seq] position ids.
PositionsArg = Union[None, int, Sequence[int], Sequence[Sequence[int]],
                     "npt.NDArray[np.integer[Any]]"]


def int_array(values: Any, dtype: "npt.DTypeLike", what: str) -> Array:
    """values as a C-contiguous array of the integer dtype, refusing (never
    wrapping) anything that does not fit."""
    info = np.iinfo(dtype)
    if not isinstance(values, np.ndarray):
        # Python ints, checked one by one: NumPy would turn 2**63 into a float.
        cells = np.array(values, dtype=object)
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                   for v in cells.flat):
            raise TypeError("clpe: %s must be integers" % what)
        if not all(info.min <= v <= info.max for v in cells.flat):
            raise ValueError("clpe: %s must fit in %s" % (what, np.dtype(dtype).name))
        return np.ascontiguousarray(cells.astype(dtype))
    array = values
    if array.size == 0:
        return np.zeros(array.shape, dtype)
    if array.dtype.kind not in "iu":
        raise TypeError("clpe: %s must be integers that fit in %s, got %s"
                        % (what, np.dtype(dtype).name, array.dtype))
    if array.min() < info.min or array.max() > info.max:
        raise ValueError("clpe: %s must fit in %s" % (what, np.dtype(dtype).name))
    return np.ascontiguousarray(array, dtype=dtype)


def row_pitches(array: Any, what: str, dtype: "npt.DTypeLike", d: int,
                writable: bool) -> List[int]:
    """The pitch in elements of each leading axis of a [rows, d] or
    [batch, seq, d] NumPy array (0, the library's default, for an axis of
    one entry); checks dtype, width and strides."""
    if not isinstance(array, np.ndarray):
        raise TypeError("clpe: %s must be a numpy.ndarray, got %s" % (what, type(array).__name__))
    if array.dtype != dtype:
        raise TypeError("clpe: %s has dtype %s; this encoder uses %s" % (what, array.dtype, dtype))
    if array.ndim not in (2, 3) or array.shape[-1] != d:
        raise ValueError("clpe: %s must have shape [rows, %d] or [batch, seq, %d], got %s"
                         % (what, d, d, array.shape))
    if writable and not array.flags.writeable:
        raise ValueError("clpe: %s is read-only" % what)
    return pitches_of(array.shape, array.strides, array.itemsize, what)


def pitches_of(shape: Sequence[int], strides: Sequence[int], itemsize: int,
               what: str) -> List[int]:
    """The pitch in elements of each leading axis (0 for an axis of one
    entry); rows must be contiguous and strides positive whole elements."""
    if 0 in shape:
        return [0] * (len(shape) - 1)  # nothing is touched, whatever the strides
    if shape[-1] > 1 and strides[-1] != itemsize:
        raise ValueError("clpe: the elements of a row of %s must be contiguous" % what)
    pitches: List[int] = []
    for size, stride in zip(shape[:-1], strides[:-1]):
        if size <= 1:
            pitches.append(0)  # never stepped over: the library's default
        elif stride <= 0 or stride % itemsize:
            raise ValueError("clpe: %s must have positive strides in whole elements" % what)
        else:
            pitches.append(stride // itemsize)
    return pitches


def host_positions(positions: PositionsArg, batch: int, seq: int, first_position: int
                   ) -> Tuple[PositionSource, int, Optional["npt.NDArray[np.int64]"]]:
    """(source, start, int64 array or None) for the host calls."""
    if positions is None:
        return PositionSource.START, first_position, None
    if isinstance(positions, (int, np.integer)) and not isinstance(positions, bool):
        return PositionSource.START, int(positions), None
    values = int_array(positions, np.int64, "positions")
    if values.shape == (batch,):
        return PositionSource.PER_SEQUENCE, 0, values
    if values.shape == (batch, seq):
        return PositionSource.IDS, 0, values
    raise ValueError("clpe: positions must be an int, %d per-sequence starts or a [%d, %d] "
                     "array of position ids, got shape %s" % (batch, batch, seq, values.shape))


def _int64_start(start: Any) -> int:
    if not is_integer(start):
        raise TypeError("clpe: start must be an integer, got %r (%s)"
                        % (start, type(start).__name__))
    value = int(start)
    if not -2 ** 63 <= value < 2 ** 63:
        raise _status.Error(-2012, "start = %d" % value)  # CLPE_ERROR_POSITION_OVERFLOW
    return value


def _pointer(array: Optional[Array], ctype: Any = ctypes.c_void_p) -> Any:
    return None if array is None else array.ctypes.data_as(ctype)


class HostEncoder(_status.Handle):
    """A host-only encoder: the clpe_host_* calls on NumPy arrays.

    Made like clpe.Encoder, from a Config or keywords: HostEncoder(d=512),
    HostEncoder(preset="fairseq", d=1024, dtype="bf16")."""

    _release = "clpe_encoder_release"
    _what = "encoder"

    def __init__(self, config: Optional[Config] = None, **fields: Any) -> None:
        self.config = make_config(config, **fields)
        status = ctypes.c_int32()
        c_config = self.config.to_c()
        handle = _status._lib.clpe_encoder_create_host(ctypes.byref(c_config),
                                                       ctypes.byref(status))
        if not handle:
            raise _status.Error(status.value, "host encoder")
        self._handle = handle

    @property
    def dtype(self) -> "np.dtype[Any]":
        """The NumPy dtype of the arrays (uint16 bits for bf16)."""
        return self.config.numpy_dtype

    def table(self, positions: Any, out: Optional[Array] = None) -> Array:
        """Rows PE(p) for p in positions (a range, or any ints) as a
        [len(positions), d] array; into out if given."""
        d = self.config.d
        if isinstance(positions, (int, np.integer)):
            raise TypeError("clpe: positions must be a range or a sequence of ints, not one "
                            "int (table(range(start, start + n)))")
        contiguous = isinstance(positions, range) and positions.step == 1
        rows = [] if contiguous else [_int64_start(p) for p in int_array(positions, np.int64,
                                                                          "positions")]
        n = len(positions)
        if out is None:
            out = np.empty((n, d), self.dtype)
        pitches = row_pitches(out, "out", self.dtype, d, writable=True)
        if out.ndim != 2 or out.shape[0] != n:
            raise ValueError("clpe: out must have shape [%d, %d], got %s" % (n, d, out.shape))
        if contiguous:
            with self._hold() as handle:
                _status.check(_status._lib.clpe_host_table(
                    handle, _int64_start(positions.start), n, _pointer(out), pitches[0]), "table")
            return out
        # One row per position; computed aside so that a failure writes nothing.
        result = np.empty((n, d), self.dtype)
        with self._hold() as handle:
            for r, position in enumerate(rows):
                _status.check(_status._lib.clpe_host_table(handle, position, 1,
                                                           _pointer(result[r:r + 1]), 0), "table")
        out[...] = result
        return out

    def add(self, x: Array, positions: PositionsArg = None) -> Array:
        """x = x * scale + PE(pos) in place over x ([seq, d] or [batch, seq, d]);
        positions: None (first_position), an int start, per-sequence starts
        or [batch, seq] position ids. Returns x."""
        pitches = row_pitches(x, "x", self.dtype, self.config.d, writable=True)
        batch, seq = (1,) + x.shape[:1] if x.ndim == 2 else x.shape[:2]
        row_pitch = pitches[-1]
        batch_pitch = pitches[0] if x.ndim == 3 else 0
        source, start, values = host_positions(positions, batch, seq,
                                               self.config.first_position)
        start = _int64_start(start)
        with self._hold() as handle:
            _status.check(_status._lib.clpe_host_add(
                handle, batch, seq, _pointer(x), row_pitch, batch_pitch, int(source), start,
                _pointer(values, ctypes.POINTER(ctypes.c_int64))), "add")
        return x

    def gather(self, ids: Any, embedding: Array, positions: PositionsArg = None,
               out: Optional[Array] = None) -> Tuple[Array, int]:
        """out[b, s] = embedding[ids[b, s]] * scale + PE(pos(b, s)); ids
        [seq] or [batch, seq] (int32 values), embedding [vocab, d]. Returns
        (out, number of ids outside [0, vocab)): such a row gets PE alone."""
        d = self.config.d
        ids = int_array(ids, np.int32, "ids")
        if ids.ndim not in (1, 2):
            raise ValueError("clpe: ids must have shape [seq] or [batch, seq], got %s"
                             % (ids.shape,))
        batch, seq = (1,) + ids.shape if ids.ndim == 1 else ids.shape
        if not isinstance(embedding, np.ndarray) or embedding.ndim != 2:
            raise ValueError("clpe: embedding must be a [vocab, %d] numpy.ndarray" % d)
        emb_pitch = row_pitches(embedding, "embedding", self.dtype, d, writable=False)[0]
        vocab = embedding.shape[0]
        shape = ids.shape + (d,)
        if out is None:
            out = np.empty(shape, self.dtype)
        if out.shape != shape:
            raise ValueError("clpe: out must have shape %s, got %s" % (shape, out.shape))
        pitches = row_pitches(out, "out", self.dtype, d, writable=True)
        # The library steps through out as batch * seq rows of one pitch.
        row_pitch = pitches[-1] or pitches[0]
        if out.ndim == 3 and batch > 1 and seq > 1 and pitches[0] != seq * pitches[1]:
            raise ValueError("clpe: the rows of out must be evenly spaced across sequences")
        source, start, values = host_positions(positions, batch, seq,
                                               self.config.first_position)
        bad = ctypes.c_size_t()
        start = _int64_start(start)
        with self._hold() as handle:
            _status.check(_status._lib.clpe_host_gather(
                handle, batch, seq, _pointer(ids, ctypes.POINTER(ctypes.c_int32)),
                _pointer(embedding) if vocab else None, vocab, emb_pitch, _pointer(out),
                row_pitch, int(source), start, _pointer(values, ctypes.POINTER(ctypes.c_int64)),
                ctypes.byref(bad)), "gather")
        return out, bad.value


def host_table(positions: Union[range, Sequence[int], Array],
               out: Optional[Array] = None, **config: Any) -> Array:
    """clpe.host_table([5, 6, 305], d=8): the exact table rows, as NumPy."""
    with HostEncoder(**config) as encoder:
        return encoder.table(positions, out)


def host_add(x: Array, positions: PositionsArg = None, **config: Any) -> Array:
    """x * scale + PE in place on a NumPy array; returns x."""
    with HostEncoder(**config) as encoder:
        return encoder.add(x, positions)


def host_gather(ids: Any, embedding: Array, positions: PositionsArg = None,
                out: Optional[Array] = None, **config: Any) -> Tuple[Array, int]:
    """The fused input stage on NumPy arrays; returns (out, bad id count)."""
    with HostEncoder(**config) as encoder:
        return encoder.gather(ids, embedding, positions, out)
