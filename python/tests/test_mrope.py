# SPDX-License-Identifier: Apache-2.0
"""Multimodal rotary from Python (clpe.Rope and clpe.HostRope configured with
position streams): device bit for bit against the host emulation, host
against a float64 NumPy rotation of each pair by its stream's position, and
bad input refused. Skipped while the loaded library lacks the multimodal
calls."""
import numpy as np
import pytest

import clpe
from conftest import DTYPES, assert_same_bits

pytestmark = pytest.mark.skipif(not getattr(clpe, "HAS_MROPE", False),
                                reason="the loaded libclpe has no multimodal rotary calls")
HEAD_DIM = 16
SECTION = [2, 3, 3]


def stored(values, dtype_name, numpy_dtype):
    if dtype_name == "bf16":
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return values.astype(numpy_dtype)


def numpy_mrope(x, positions, section, base=10000.0):
    """x [batch, seq, heads, d] rotated in float64, pair i by positions
    [stream of i, batch, seq] * base^(-2i/d) (half-split)."""
    half = x.shape[-1] // 2
    w = base ** (-2.0 * np.arange(half) / x.shape[-1])
    streams = np.repeat(np.arange(len(section)), section)
    angle = np.moveaxis(positions[streams], 0, -1)[..., None, :] * w  # [batch, seq, 1, half]
    a, b = x[..., :half].astype(np.float64), x[..., half:].astype(np.float64)
    return np.concatenate([a * np.cos(angle) - b * np.sin(angle),
                           a * np.sin(angle) + b * np.cos(angle)], axis=-1)


def test_host_rotation_is_the_formula():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 5, 3, HEAD_DIM)).astype(np.float32)
    positions = rng.integers(0, 3000, (3, 2, 5))
    expected = numpy_mrope(q, positions, SECTION)
    with clpe.HostRope(HEAD_DIM, mrope_section=SECTION) as rope:
        rope.rotate(q, positions=positions)
        frequencies, amplitude = rope.frequencies()
        streams = rope.pair_streams()
        assert (rope.streams, rope.mrope_section) == (3, tuple(SECTION))
    assert np.abs(q - expected).max() <= 1e-6
    assert amplitude == 1.0
    assert list(streams) == [0, 0, 1, 1, 1, 2, 2, 2]
    assert np.allclose(frequencies, 10000.0 ** (-2.0 * np.arange(8) / HEAD_DIM), rtol=1e-15)


def test_vision_positions_are_rows_then_columns():
    """Vision: pairs [0, d/4) turn with the row, [d/4, d/2) with the column,
    each half with the frequencies of a rotary of width d/2."""
    rng = np.random.default_rng(2)
    q = rng.standard_normal((7, 2, HEAD_DIM))  # [patches, heads, d]
    pos_ids = rng.integers(0, 50, (7, 2))      # [patches, (row, column)]
    with clpe.HostRope.vision(HEAD_DIM, dtype="f64") as rope:
        got = rope.rotate(q.copy(), positions=pos_ids.T)
        # token-first, as rot_pos_emb gives them: the same bits
        assert np.array_equal(rope.rotate(q.copy(), positions=pos_ids), got)
    w = 10000.0 ** (-2.0 * np.arange(4) / 8)
    theta = np.concatenate([pos_ids[:, :1] * w, pos_ids[:, 1:] * w], axis=-1)[:, None, :]
    a, b = q[..., :8], q[..., 8:]
    expected = np.concatenate([a * np.cos(theta) - b * np.sin(theta),
                               a * np.sin(theta) + b * np.cos(theta)], axis=-1)
    assert np.abs(got - expected).max() <= 1e-13


@pytest.mark.parametrize("dtype", DTYPES)
def test_device_rotation_is_the_host_emulation(cl, context, queue, dtype):
    if not clpe.Encoder(context, d=2, dtype=dtype).supports(dtype):
        pytest.skip("the device lacks %s" % dtype)
    rope = clpe.Rope(context, head_dim=HEAD_DIM, mrope_section=SECTION, base=1e6, dtype=dtype)
    rng = np.random.default_rng(3)
    q0 = stored(rng.standard_normal((2, 4, 6, HEAD_DIM)), dtype, rope.dtype)
    k0 = q0[:, :, :2].copy()  # two key heads: grouped-query attention
    q_device = cl.array.to_device(queue, np.ascontiguousarray(q0.transpose(0, 2, 1, 3)))
    q_view = q_device.transpose((0, 2, 1, 3))  # [batch, heads, seq, d] seen as [b, s, h, d]
    k_device = cl.array.to_device(queue, k0)
    positions = rng.integers(-2 ** 40, 2 ** 40, (3, 2, 4), dtype=np.int64)
    rope.rotate(queue, q_view, k_device, positions=cl.array.to_device(queue, positions)).wait()
    host_q, host_k = q0.copy(), k0.copy()
    rope.host().rotate(host_q, host_k, positions=positions)
    assert_same_bits(np.ascontiguousarray(q_device.get().transpose(0, 2, 1, 3)), host_q)
    assert_same_bits(k_device.get(), host_k)


def test_vision_cache_on_the_device(cl, context, queue):
    rope = clpe.Rope.vision(context, head_dim=HEAD_DIM)
    pos_ids = np.random.default_rng(4).integers(0, 64, (9, 2))
    cos = cl.array.empty(queue, (9, HEAD_DIM), np.float32)
    sin = cl.array.empty(queue, (9, HEAD_DIM), np.float32)
    rope.cache(queue, cos, sin, positions=pos_ids).wait()  # host values, uploaded
    host_cos, host_sin = rope.host().cache(pos_ids.T)
    assert_same_bits(cos.get(), host_cos)
    assert_same_bits(sin.get(), host_sin)
    w = 10000.0 ** (-2.0 * np.arange(4) / 8)
    angle = np.concatenate([pos_ids[:, :1] * w, pos_ids[:, 1:] * w], axis=-1)
    assert np.abs(host_cos[:, :8] - np.cos(angle)).max() <= 1e-7
    assert np.array_equal(host_cos[:, :8], host_cos[:, 8:])


def test_token_first_device_positions(cl, context, queue):
    """The vision tower's pos_ids [patches, 2] on the device as they are
    (token-first), at an offset into their buffer: the host's bits."""
    rope = clpe.Rope.vision(context, head_dim=HEAD_DIM)
    rng = np.random.default_rng(6)
    pos_ids = rng.integers(0, 1 << 20, (11, 2))
    q0 = rng.standard_normal((11, 3, HEAD_DIM)).astype(np.float32)  # [patches, heads, d]
    q = cl.array.to_device(queue, q0)
    padded = np.concatenate([np.full((3, 2), 1 << 40), pos_ids]).astype(np.int64)
    positions = cl.array.to_device(queue, padded)[3:]
    rope.rotate(queue, q, positions=positions).wait()
    expected = rope.host().rotate(q0.copy(), positions=pos_ids.T)
    assert_same_bits(q.get(), expected)
    with pytest.raises(ValueError, match="C-contiguous"):
        rope.rotate(queue, q, positions=positions.transpose((1, 0)))


def test_like_an_encoder_and_inverse(cl, context, queue):
    rope = clpe.Rope.like(clpe.Encoder(context, d=8), head_dim=HEAD_DIM, mrope_section=SECTION)
    q0 = np.random.default_rng(5).standard_normal((1, 3, 2, HEAD_DIM)).astype(np.float32)
    q = cl.array.to_device(queue, q0)
    positions = np.array([[5, 6, 7], [5, 9, 9], [5, 6, 8]])
    rope.rotate(queue, q, positions=positions)
    rope.rotate(queue, q, positions=positions, inverse=True).wait()
    assert np.abs(q.get() - q0).max() <= 1e-6


def test_bad_input_is_refused():
    with pytest.raises(clpe.Error) as caught:
        clpe.HostRope(HEAD_DIM, mrope_section=[2, 3, 2])  # 7 pairs of 8
    assert caught.value.name == "CLPE_ERROR_INVALID_ROPE"
    with pytest.raises(clpe.Error) as caught:
        clpe.HostRope.vision(HEAD_DIM, scaling="yarn", factor=2.0, original_max_position=64)
    assert caught.value.name == "CLPE_ERROR_INVALID_SCALING"
    with pytest.raises(ValueError, match="ladder"):
        clpe.HostRope(HEAD_DIM, ladder="per_stream")  # no sections
    q = np.zeros((1, 4, 1, HEAD_DIM), np.float32)
    with clpe.HostRope(HEAD_DIM, mrope_section=SECTION) as rope:
        with pytest.raises(ValueError):
            rope.rotate(q, positions=np.zeros((2, 4), np.int64))  # two streams of three
        with pytest.raises(ValueError):
            rope.rotate(q, positions=np.zeros((3, 5), np.int64))  # five tokens of four
        with pytest.raises(TypeError):
            rope.rotate(q, positions=np.zeros((3, 4)))  # floats
    assert not q.any()


def test_one_class_per_object():
    """M-RoPE and the vision rotary are configurations of clpe.Rope and
    clpe.HostRope; MRope and HostMRope are those classes."""
    assert clpe.MRope is clpe.Rope and clpe.HostMRope is clpe.HostRope
    with clpe.HostRope(HEAD_DIM) as plain, \
            clpe.HostRope(HEAD_DIM, mrope_section=SECTION) as text, \
            clpe.HostRope.vision(HEAD_DIM) as vision:
        assert (plain.streams, plain.mrope_section) == (1, None)
        assert (vision.streams, vision.mrope_section) == (2, (4, 4))
        assert list(plain.pair_streams()) == [0] * 8
        # one ladder: the plain configuration's frequencies; per stream: two ladders of 4
        assert np.array_equal(text.frequencies()[0], plain.frequencies()[0])
        assert np.array_equal(vision.frequencies()[0][:4], vision.frequencies()[0][4:])
        q = np.ones((1, 2, 1, HEAD_DIM), np.float32)
        with pytest.raises(ValueError, match="token_first"):
            plain.rotate(q, positions=[[0, 1]], token_first=True)
        with pytest.raises(TypeError, match="streams"):
            text.rotate(q, positions=5)


def test_rope_kv_with_streams_equals_the_host_and_rotation(cl, context, queue):
    """Position streams into a paged cache: the device, the host emulation
    and the object's own rotation followed by a copy agree bit for bit."""
    rng = np.random.default_rng(7)
    rope = clpe.Rope(context, head_dim=HEAD_DIM, mrope_section=SECTION)
    host = rope.host()
    tokens = 3
    positions = rng.integers(-1000, 100000, size=(3, tokens)).astype(np.int64)
    k = rng.standard_normal((tokens, 1, HEAD_DIM)).astype(np.float32)
    v = rng.standard_normal((tokens, 1, HEAD_DIM)).astype(np.float32)
    slots = np.array([5, -1, 0], np.int64)
    key = np.zeros((2, 4, 1, HEAD_DIM), np.float32)
    value = np.zeros_like(key)
    d_key, d_value = cl.array.to_device(queue, key), cl.array.to_device(queue, value)
    clpe.rope_kv(rope, queue, d_key, d_value, slots, k=cl.array.to_device(queue, k),
                 v=cl.array.to_device(queue, v), positions=positions).wait()
    clpe.host_rope_kv(host, key, value, slots, k=k.copy(), v=v.copy(), positions=positions)
    assert (d_key.get() == key).all() and (d_value.get() == value).all()
    rotated = host.rotate(k.reshape(1, tokens, 1, HEAD_DIM).copy(),
                          positions=positions.reshape(3, 1, tokens)).reshape(tokens, 1, HEAD_DIM)
    flat_key, flat_value = key.reshape(8, 1, HEAD_DIM), value.reshape(8, 1, HEAD_DIM)
    for t, slot in enumerate(slots):
        if slot >= 0:
            assert (flat_key[slot] == rotated[t]).all() and (flat_value[slot] == v[t]).all()
    assert not flat_key[[1, 2, 3, 4, 6, 7]].any()
    rope.close()
    host.close()
