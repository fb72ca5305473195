# SPDX-License-Identifier: Apache-2.0
"""Rotary embedding from Python (clpe.Rope, clpe.HostRope): device bit for
bit against the host emulation, host against a float64 NumPy rotation.
Skipped while the loaded library lacks the rotary calls."""
import numpy as np
import pytest

import clpe
from conftest import DTYPES, assert_same_bits

pytestmark = pytest.mark.skipif(not clpe.HAS_ROPE,
                                reason="the loaded libclpe has no rotary calls yet")
HEAD_DIM = 16


def numpy_rotation(x, positions, base=10000.0):
    """Half-split (rotate_half) rotation in float64, positions per token."""
    half = HEAD_DIM // 2
    w = base ** (-2.0 * np.arange(half) / HEAD_DIM)
    angle = positions[..., None, None] * w  # [batch, seq, 1, half]
    a, b = x[..., :half].astype(np.float64), x[..., half:].astype(np.float64)
    return np.concatenate([a * np.cos(angle) - b * np.sin(angle),
                           a * np.sin(angle) + b * np.cos(angle)], axis=-1)


def test_host_rotation_is_the_formula():
    rng = np.random.default_rng(7)
    q = rng.standard_normal((2, 5, 3, HEAD_DIM)).astype(np.float32)
    starts = np.array([0, 40])
    expected = numpy_rotation(q, starts[:, None] + np.arange(5))
    with clpe.HostRope(HEAD_DIM) as rope:
        rope.rotate(q, positions=[0, 40])
        frequencies, amplitude = rope.frequencies()
    assert np.abs(q - expected).max() <= 1e-6
    assert amplitude == 1.0
    assert np.allclose(frequencies, 10000.0 ** (-2.0 * np.arange(8) / HEAD_DIM), rtol=1e-15)


@pytest.mark.parametrize("dtype", DTYPES)
def test_device_rotation_is_the_host_emulation(cl, context, queue, dtype):
    rope = clpe.Rope(context, head_dim=HEAD_DIM, dtype=dtype)
    if not clpe.Encoder(context, d=2, dtype=dtype).supports(dtype):
        pytest.skip("the device lacks %s" % dtype)
    rng = np.random.default_rng(8)
    values = rng.standard_normal((2, 4, 6, HEAD_DIM)).astype(np.float32)
    q0 = values.astype(rope.dtype) if dtype != "bf16" else \
        (values.view(np.uint32) >> 16).astype(np.uint16)
    k0 = q0[:, :, :2].copy()  # two key heads: grouped-query attention
    # queries laid out [batch, heads, seq, d] on the device, seen as [batch, seq, heads, d]
    q_device = cl.array.to_device(queue, np.ascontiguousarray(q0.transpose(0, 2, 1, 3)))
    q_view = q_device.transpose((0, 2, 1, 3))
    k_device = cl.array.to_device(queue, k0)
    ids = rng.integers(-2 ** 40, 2 ** 40, (2, 4), dtype=np.int64)
    rope.rotate(queue, q_view, k_device, positions=ids).wait()
    host_q, host_k = q0.copy(), k0.copy()
    rope.host().rotate(host_q, host_k, positions=ids)
    assert_same_bits(np.ascontiguousarray(q_device.get().transpose(0, 2, 1, 3)), host_q)
    assert_same_bits(k_device.get(), host_k)

def test_cache_and_inverse(cl, context, queue):
    rope = clpe.Rope(context, head_dim=HEAD_DIM)
    cos = cl.array.empty(queue, (10, HEAD_DIM), np.float32)
    sin = cl.array.empty(queue, (10, HEAD_DIM), np.float32)
    rope.cache(queue, cos, sin, start=100).wait()
    host_cos, host_sin = rope.host().cache(range(100, 110))
    assert_same_bits(cos.get(), host_cos)
    assert_same_bits(sin.get(), host_sin)
    angle = np.arange(100, 110)[:, None] * 10000.0 ** (-2.0 * np.arange(8) / HEAD_DIM)
    assert np.abs(host_cos[:, :8] - np.cos(angle)).max() <= 1e-7
    q0 = np.random.default_rng(9).standard_normal((1, 3, 2, HEAD_DIM)).astype(np.float32)
    q = cl.array.to_device(queue, q0)
    rope.rotate(queue, q, positions=123456)
    rope.rotate(queue, q, positions=123456, inverse=True).wait()
    assert np.abs(q.get() - q0).max() <= 1e-6


def test_bad_rotary_configs():
    with pytest.raises(clpe.Error) as caught:
        clpe.HostRope(HEAD_DIM, rotary_dim=5)
    assert caught.value.name == "CLPE_ERROR_INVALID_ROPE"
    with pytest.raises(clpe.Error) as caught:
        clpe.HostRope(HEAD_DIM, scaling="linear", factor=0.5)
    assert caught.value.name == "CLPE_ERROR_INVALID_SCALING"


def test_frequency_settings_reach_the_library():
    mine = [1.0, 0.5, 0.25, 0.125, 1e-3, 1e-4, 1e-5, 1e-6]
    with clpe.HostRope(HEAD_DIM, scaling="frequencies", frequencies=mine) as rope:
        assert rope.frequencies() == (pytest.approx(mine, rel=1e-15, abs=0), 1.0)
    with clpe.HostRope(HEAD_DIM, rotary_dim=8, base=500000.0, pairing="interleaved") as rope:
        expected = 500000.0 ** (-2.0 * np.arange(4) / 8)
        assert np.allclose(rope.frequencies()[0], expected, rtol=1e-15, atol=0)


def test_like_an_encoder_shares_its_program(cl, context, queue):
    encoder = clpe.Encoder(context, d=8)
    rope = clpe.Rope.like(encoder, head_dim=HEAD_DIM, dtype="f16")
    cos = cl.array.empty(queue, (4, HEAD_DIM), np.float16)
    sin = cl.array.empty(queue, (4, HEAD_DIM), np.float16)
    rope.cache(queue, cos, sin, start=-7).wait()
    host_cos, host_sin = clpe.HostRope(HEAD_DIM, dtype="f16").cache(range(-7, -3))
    assert_same_bits(cos.get(), host_cos)
    assert_same_bits(sin.get(), host_sin)
