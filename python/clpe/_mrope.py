# SPDX-License-Identifier: Apache-2.0
"""What position streams add to a rotary object (M-RoPE, the vision rotary):
their configuration and their positions.

clpe.Rope and clpe.HostRope are configured with streams through
mrope_section (the pairs of each stream) and ladder, or made by .vision():

    text = clpe.HostRope(128, mrope_section=[16, 24, 24], base=1e6)
    text.rotate(q, k, position_ids)        # position_ids [3, batch, seq]
    vision = clpe.HostRope.vision(80)
    vision.rotate(q, k, pos_ids)           # rot_pos_emb's pos_ids [patches, 2]

Positions reach the library as HostPositions or DevicePositions: a
PositionSource, or a StreamLayout of C-contiguous int64 values. Which C
call takes them is _rope.py's calls tables' business.
"""
from __future__ import annotations

import enum
from typing import Any, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import NDArray

from . import _status
from ._abi import MROPE_MAX_STREAMS, CMropeConfig, CRopeConfig, MropeLadder, PositionSource
from ._check import check_enum, check_uint32, is_integer
from ._host import int_array

_LADDERS = {"one": MropeLadder.ONE_LADDER, "one_ladder": MropeLadder.ONE_LADDER,
            "per_stream": MropeLadder.LADDER_PER_STREAM,
            "ladder_per_stream": MropeLadder.LADDER_PER_STREAM}


class StreamLayout(enum.IntEnum):
    """How int64 stream positions lie in memory, tokens t = b * seq + s, as
    the position sources the library takes them: STREAMS [streams, batch,
    seq] (Hugging Face's position_ids), TOKEN_FIRST [batch * seq, streams]
    (Qwen2-VL's vision pos_ids)."""
    STREAMS = int(PositionSource.STREAMS)
    TOKEN_FIRST = int(PositionSource.STREAMS_TOKEN_FIRST)


# Where a call's positions come from: a PositionSource (start, per-sequence
# starts, ids) or a StreamLayout of contiguous int64 values.
Source = Union[PositionSource, StreamLayout]


class HostPositions(NamedTuple):
    """Positions of a host call; values C-contiguous int64 when read."""
    source: Source
    start: int = 0
    values: Optional[NDArray[np.int64]] = None
    streams: int = 1


class DevicePositions(NamedTuple):
    """Positions of a device call: values in buffer (a cl_mem address) at
    offset bytes."""
    source: Source
    start: int = 0
    buffer: Optional[int] = None
    offset: int = 0
    streams: int = 1


def has_mrope() -> bool:
    return hasattr(_status._lib, "clpe_rope_create_mrope")


def check_int64_values(values: Any, what: str) -> None:
    """Refuse an unsigned NumPy array holding a value past int64's largest:
    compared as NumPy compares uint64 with a Python int (through float64),
    2^63 would pass and wrap to -2^63."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "u" and values.size and \
            int(values.max()) > np.iinfo(np.int64).max:
        raise ValueError("clpe: %s must fit in int64, got %d" % (what, int(values.max())))


def stream_config(rope: CRopeConfig, mrope_section: Any, ladder: Any) -> CMropeConfig:
    """The clpe_mrope_config of a rotary configuration and its streams; each
    entry of mrope_section is checked as an integer argument (4.9, '4' and
    True are refused, never converted)."""
    if not has_mrope():
        raise NotImplementedError("clpe: the loaded library has no multimodal rotary calls")
    if isinstance(mrope_section, (str, bytes)) or np.isscalar(mrope_section) or \
            not isinstance(mrope_section, (Sequence, np.ndarray)):
        raise TypeError("clpe: mrope_section must be a sequence of 1 to %d integers (the "
                        "pairs of each stream), got %r" % (MROPE_MAX_STREAMS, mrope_section))
    entries = list(mrope_section)
    if not 1 <= len(entries) <= MROPE_MAX_STREAMS:
        raise ValueError("clpe: mrope_section must have 1 to %d entries, got %d"
                         % (MROPE_MAX_STREAMS, len(entries)))
    c = CMropeConfig()
    c.rope = rope
    c.streams = len(entries)
    for j, entry in enumerate(entries):
        c.section[j] = check_uint32(entry, "mrope_section[%d]" % j)
    c.ladder = MropeLadder.ONE_LADDER if ladder is None else \
        check_enum(ladder, MropeLadder, _LADDERS, "ladder")
    return c


def _layout_of(shape: Tuple[int, ...], streams: int, token_first: Optional[bool],
               batch_seq: Optional[Tuple[int, int]]) -> Tuple[StreamLayout, int]:
    """(the layout, the token count) of C-contiguous positions of this
    shape: [streams, batch, seq], [streams, tokens] or token-first [tokens,
    streams]. A square [streams, streams] of `streams` tokens could be
    either: it is read as [streams, tokens], Hugging Face's position_ids
    order, unless token_first says otherwise (rot_pos_emb's token-first
    pos_ids always have more patches than streams)."""
    if token_first is not None and not isinstance(token_first, (bool, np.bool_)):
        raise TypeError("clpe: token_first must be True, False or None, got %r" % (token_first,))
    tokens = None if batch_seq is None else batch_seq[0] * batch_seq[1]
    expected = "[%d, batch, seq], [%d, tokens] or token-first [tokens, %d]" % (
        streams, streams, streams)
    if len(shape) == 3 and not token_first and shape[0] == streams and \
            (batch_seq is None or tuple(shape[1:]) == batch_seq):
        return StreamLayout.STREAMS, shape[1] * shape[2]
    if len(shape) == 2:
        first = shape[0] == streams and (tokens is None or shape[1] == tokens)
        last = shape[1] == streams and (tokens is None or shape[0] == tokens)
        if first and not token_first:
            return StreamLayout.STREAMS, shape[1]
        if last and token_first is not False:
            return StreamLayout.TOKEN_FIRST, shape[0]
    wanted = "" if batch_seq is None else " for batch %d, seq %d" % batch_seq
    raise ValueError("clpe: positions must be %s%s, got shape %s"
                     % (expected, wanted, tuple(shape)))


def host_stream_positions(positions: Any, streams: int, batch_seq: Optional[Tuple[int, int]],
                          token_first: Optional[bool] = None) -> Tuple[HostPositions, int]:
    """(HostPositions, tokens) of stream positions given as integers of any
    integer dtype and strides; values outside int64 are refused."""
    if positions is None or is_integer(positions):
        raise TypeError("clpe: this rotary object has %d position streams: give positions "
                        "[%d, batch, seq] or [tokens, %d]" % (streams, streams, streams))
    check_int64_values(positions, "positions")
    values = int_array(positions, np.int64, "positions")
    layout, tokens = _layout_of(values.shape, streams, token_first, batch_seq)
    return HostPositions(layout, 0, values, streams), tokens


def device_stream_positions(call: Any, positions: Any, streams: int,
                            batch_seq: Optional[Tuple[int, int]],
                            token_first: Optional[bool] = None) -> Tuple[DevicePositions, int]:
    """(DevicePositions, tokens) of stream positions: a C-contiguous int64
    pyopencl Array (its offset kept), or host values, uploaded."""
    if positions is None or is_integer(positions):
        raise TypeError("clpe: this rotary object has %d position streams: give positions "
                        "[%d, batch, seq] or [tokens, %d]" % (streams, streams, streams))
    if isinstance(positions, call.cl.MemoryObjectHolder):
        raise TypeError("clpe: give stream positions as a pyopencl.array.Array (a raw buffer "
                        "has no shape)")
    check_int64_values(positions, "positions")
    buffer, offset, shape = call.int_buffer(positions, "positions", np.int64)
    layout, tokens = _layout_of(tuple(shape), streams, token_first, batch_seq)
    return DevicePositions(layout, 0, buffer, offset, streams), tokens
