# SPDX-License-Identifier: Apache-2.0
"""Every rotary class checks what it is given as clpe.Rope does, and a call
with nothing to do does nothing: mrope_section entries and the ladder are
refused by name rather than converted, stream positions that do not fit in
int64 are refused rather than wrapped, zero-token calls return without
touching the library, and rope_kv writes its report into the view it was
given, at that view's offset."""
import numpy as np
import pytest

import clpe
from conftest import assert_same_bits

pytestmark = pytest.mark.skipif(not getattr(clpe, "HAS_MROPE", False),
                                reason="the loaded libclpe has no multimodal rotary calls")
HEAD_DIM = 16          # 8 pairs
SECTION = [2, 3, 3]
HQ, HK = 2, 1


# ---- mrope_section and ladder: checked as integers and names ----

# Each would become a valid section if converted (4.9 -> 4, '4' -> 4, True ->
# 1, 2^32 + 4 -> 4 in a uint32), so only a check refuses it.
@pytest.mark.parametrize("section,error", [
    ([4.9, 2, 2], TypeError), (["4", 2, 2], TypeError), ([True, 3, 4], TypeError),
    ([np.float64(4.0), 2, 2], TypeError), ([2 ** 32 + 4, 2, 2], ValueError),
    ([-4, 6, 6], ValueError)])
def test_mrope_section_entries_are_checked(section, error):
    with pytest.raises(error, match=r"mrope_section\[0\]"):
        clpe.HostMRope(HEAD_DIM, mrope_section=section)


@pytest.mark.parametrize("section", ["8", 8, [], [1, 1, 1, 1, 4]])
def test_mrope_section_must_be_a_short_sequence(section):
    with pytest.raises((TypeError, ValueError), match="mrope_section"):
        clpe.HostRope(HEAD_DIM, mrope_section=section)


def test_unknown_ladder_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="ladder"):
        clpe.HostMRope(HEAD_DIM, mrope_section=SECTION, ladder="foo")
    with pytest.raises(TypeError, match="ladder"):
        clpe.HostMRope(HEAD_DIM, mrope_section=SECTION, ladder=1.0)
    with clpe.HostRope(HEAD_DIM, mrope_section=[4, 4], ladder="per_stream") as rope:
        assert list(rope.pair_streams()) == [0] * 4 + [1] * 4


# ---- positions outside int64: refused, never wrapped ----

@pytest.mark.parametrize("value", [2 ** 64 - 1, 2 ** 63])
def test_host_stream_positions_outside_int64_are_refused(value):
    q = np.ones((1, 2, HQ, HEAD_DIM), np.float32)
    positions = np.full((3, 1, 2), value, np.uint64)
    with clpe.HostRope(HEAD_DIM) as rope, pytest.raises(ValueError, match="positions"):
        rope.rotate(q, positions=positions[0])  # the reference: one stream
    with clpe.HostMRope(HEAD_DIM, mrope_section=SECTION) as rope:
        with pytest.raises(ValueError, match="positions"):
            rope.rotate(q, positions=positions)
        with pytest.raises(ValueError, match="positions"):
            rope.rotate(q, positions=positions.tolist())  # Python ints
        with pytest.raises(ValueError, match="positions"):
            rope.cache(positions[:, 0])
    assert np.all(q == 1)


@pytest.mark.parametrize("value", [2 ** 64 - 1, 2 ** 63])
def test_device_stream_positions_outside_int64_are_refused(cl, context, queue, value):
    q = cl.array.to_device(queue, np.ones((1, 2, HQ, HEAD_DIM), np.float32))
    positions = np.full((3, 1, 2), value, np.uint64)
    rope = clpe.MRope(context, head_dim=HEAD_DIM, mrope_section=SECTION)
    with pytest.raises(ValueError, match="positions"):
        rope.rotate(queue, q, positions=positions)
    with pytest.raises(TypeError, match="positions"):
        rope.rotate(queue, q, positions=cl.array.to_device(queue, positions))
    assert np.all(q.get() == 1)
    rope.close()


@pytest.mark.parametrize("value", [2 ** 64 - 1, 2 ** 63])
def test_rope_kv_positions_and_slots_outside_int64_are_refused(cl, context, queue, value):
    rope = clpe.Rope(context, head_dim=HEAD_DIM)
    key = np.zeros((2, 4, HK, HEAD_DIM), np.float32)
    k = np.ones((2, HK, HEAD_DIM), np.float32)
    d_key, d_value = cl.array.to_device(queue, key), cl.array.to_device(queue, key)
    d_k = cl.array.to_device(queue, k)
    huge = np.full(2, value, np.uint64)
    with pytest.raises(ValueError, match="positions"):
        clpe.rope_kv(rope, queue, d_key, d_value, [0, 1], k=d_k, v=d_k, positions=huge)
    with pytest.raises(ValueError, match="slots"):
        clpe.rope_kv(rope, queue, d_key, d_value, huge, k=d_k, v=d_k)
    with pytest.raises(ValueError, match="positions"):
        clpe.host_rope_kv(rope.host(), key, key.copy(), [0, 1], k=k, v=k, positions=huge)
    assert not d_key.get().any() and not key.any()
    rope.close()


# ---- zero tokens: nothing to do, on every class ----

def host_ropes():
    return [clpe.HostRope(HEAD_DIM), clpe.HostMRope(HEAD_DIM, mrope_section=SECTION),
            clpe.HostMRope(HEAD_DIM, vision=True)]


@pytest.mark.parametrize("index", range(3), ids=["rope", "mrope", "vision"])
def test_host_zero_tokens_do_nothing(index):
    rope = host_ropes()[index]
    q = np.empty((1, 0, HQ, HEAD_DIM), np.float32)
    k = np.empty((1, 0, HK, HEAD_DIM), np.float32)
    positions = None if index == 0 else np.empty((rope.streams, 1, 0), np.int64)
    assert rope.rotate(q, k, positions=positions) is q
    seq_first = q[0]  # [seq, heads, head_dim]
    assert rope.rotate(seq_first, None,
                       positions=None if index == 0 else positions[:, 0]) is seq_first
    if index == 0:
        cos, sin = rope.cache(range(5, 5))
    else:
        cos, sin = rope.cache(np.empty((rope.streams, 0), np.int64))
    assert cos.shape == sin.shape == (0, HEAD_DIM)
    rope.close()


def device_ropes(context):
    return [clpe.Rope(context, head_dim=HEAD_DIM),
            clpe.MRope(context, head_dim=HEAD_DIM, mrope_section=SECTION),
            clpe.MRope(context, head_dim=HEAD_DIM, vision=True)]


@pytest.mark.parametrize("index", range(3), ids=["rope", "mrope", "vision"])
def test_device_zero_tokens_do_nothing(cl, context, queue, index):
    rope = device_ropes(context)[index]
    q = cl.array.empty(queue, (1, 0, HQ, HEAD_DIM), np.float32)
    k = cl.array.empty(queue, (0, HK, HEAD_DIM), np.float32)
    if index == 0:
        positions = None
    else:
        positions = cl.array.empty(queue, (rope.streams, 1, 0), np.int64)
    rope.rotate(queue, q, positions=positions).wait()
    rope.rotate(queue, k, positions=None if index == 0 else np.empty((rope.streams, 0),
                                                                     np.int64)).wait()
    cos = cl.array.empty(queue, (0, HEAD_DIM), np.float32)
    sin = cl.array.empty(queue, (0, HEAD_DIM), np.float32)
    if index == 0:
        rope.cache(queue, cos, sin, start=3).wait()
    else:
        rope.cache(queue, cos, sin, positions=np.empty((rope.streams, 0), np.int64)).wait()
    rope.close()


def test_rope_kv_zero_tokens_do_nothing(cl, context, queue):
    rope = clpe.Rope(context, head_dim=HEAD_DIM)
    key = np.arange(2 * 4 * HK * HEAD_DIM, dtype=np.float32).reshape(2, 4, HK, HEAD_DIM)
    d_key, d_value = cl.array.to_device(queue, key), cl.array.to_device(queue, key + 1)
    qkv = cl.array.empty(queue, (0, (HQ + 2 * HK) * HEAD_DIM), np.float32)
    report = cl.array.to_device(queue, np.array([7, 7], np.uint32))
    clpe.rope_kv(rope, queue, d_key, d_value, np.empty(0, np.int64), qkv=qkv, q_heads=HQ,
                 positions=np.empty(0, np.int64), report=report).wait()
    empty = cl.array.empty(queue, (0, HK, HEAD_DIM), np.float32)
    clpe.rope_kv(rope, queue, d_key, d_value, cl.array.empty(queue, 0, np.int64), k=empty,
                 v=empty, positions=5).wait()
    assert_same_bits(d_key.get(), key)
    assert_same_bits(d_value.get(), key + 1)
    host_key, host_value = key.copy(), key + 1
    host_qkv = np.empty((0, (HQ + 2 * HK) * HEAD_DIM), np.float32)
    assert clpe.host_rope_kv(rope.host(), host_key, host_value, [], qkv=host_qkv,
                             q_heads=HQ) is host_qkv
    assert_same_bits(host_key, key)
    rope.close()


# ---- rope_kv's report: written where the view is ----

def test_rope_kv_report_honours_the_views_offset(cl, context, queue):
    rope = clpe.Rope(context, head_dim=HEAD_DIM)
    rng = np.random.default_rng(5)
    tokens = 6
    qkv = rng.standard_normal((tokens, (HQ + 2 * HK) * HEAD_DIM)).astype(np.float32)
    key = rng.standard_normal((2, 4, HK, HEAD_DIM)).astype(np.float32)
    d_qkv = cl.array.to_device(queue, qkv)
    d_key, d_value = cl.array.to_device(queue, key), cl.array.to_device(queue, key)
    sentinel = np.arange(100, 108, dtype=np.uint32)
    big = cl.array.to_device(queue, sentinel)
    slots = np.array([0, 1, 5, 2, 5, 3], np.int64)  # 5 twice: token 4 refused
    clpe.rope_kv(rope, queue, d_key, d_value, slots, qkv=d_qkv, q_heads=HQ,
                 report=big[4:6]).wait()
    expected = sentinel.copy()
    expected[4:6] = [1, 4]
    assert list(big.get()) == list(expected)
    assert_same_bits(d_qkv.get(), qkv)  # refused: nothing written
    # a good call reports no bad token, again at the view
    clpe.rope_kv(rope, queue, d_key, d_value, np.array([0, 1, 2, 3, 4, 5]), qkv=d_qkv,
                 q_heads=HQ, report=big[2:4]).wait()
    expected[2:4] = [0, 0xFFFFFFFF]
    assert list(big.get()) == list(expected)
    with pytest.raises(ValueError, match="report"):
        clpe.rope_kv(rope, queue, d_key, d_value, slots, qkv=d_qkv, q_heads=HQ,
                     report=big[::2][:2])  # not contiguous
    with pytest.raises(ValueError, match="report"):
        clpe.rope_kv(rope, queue, d_key, d_value, slots, qkv=d_qkv, q_heads=HQ,
                     report=big[:3])
    rope.close()
