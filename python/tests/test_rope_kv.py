# SPDX-License-Identifier: Apache-2.0
"""Rotary into a KV cache from Python (clpe.rope_kv, clpe.host_rope_kv): the
host emulation equals HostRope.rotate followed by NumPy's own copy into the
cache, and the device equals the host bit for bit, fused and separate
inputs, contiguous and paged caches; a bad slot writes nothing."""
import numpy as np
import pytest

import clpe
from conftest import assert_same_bits

pytestmark = pytest.mark.skipif(not hasattr(clpe._lib, "clpe_enqueue_rope_kv"),
                                reason="the loaded libclpe has no rotary-into-cache call")
HEAD_DIM, HQ, HK = 16, 4, 2


def random_values(rng, shape, dtype):
    values = rng.standard_normal(shape).astype(np.float32)
    if dtype == np.uint16:  # bfloat16 bits
        return (values.view(np.uint32) >> 16).astype(np.uint16)
    return values.astype(dtype)


def paged_slots(rng, tokens, num_blocks, block_size):
    """Distinct slots from a shuffled block table; every fourth token padding."""
    order = rng.permutation(num_blocks * block_size)[:tokens].astype(np.int64)
    order[3::4] = -1
    return order


def test_host_is_rope_then_copy():
    rng = np.random.default_rng(1)
    tokens, num_blocks, block_size = 11, 6, 4
    qkv = random_values(rng, (tokens, (HQ + 2 * HK) * HEAD_DIM), np.float32)
    key = random_values(rng, (num_blocks, block_size, HK, HEAD_DIM), np.float16)
    value = random_values(rng, (num_blocks, block_size, HK, HEAD_DIM), np.float16)
    slots = paged_slots(rng, tokens, num_blocks, block_size)
    positions = rng.integers(0, 2 ** 40, tokens, dtype=np.int64)

    # expected: HostRope.rotate on copies of q and k, then NumPy's copy (float32 -> float16)
    rope = clpe.HostRope(HEAD_DIM)
    q = qkv[:, :HQ * HEAD_DIM].reshape(tokens, HQ, HEAD_DIM).copy()[None]
    k = qkv[:, HQ * HEAD_DIM:(HQ + HK) * HEAD_DIM].reshape(tokens, HK, HEAD_DIM).copy()[None]
    v = qkv[:, (HQ + HK) * HEAD_DIM:].reshape(tokens, HK, HEAD_DIM)
    rope.rotate(q, k, positions=positions[None])
    want_qkv = qkv.copy()
    want_qkv[:, :HQ * HEAD_DIM] = q[0].reshape(tokens, -1)
    want_key, want_value = key.copy(), value.copy()
    for t, slot in enumerate(slots):
        if slot >= 0:
            want_key[slot // block_size, slot % block_size] = k[0, t].astype(np.float16)
            want_value[slot // block_size, slot % block_size] = v[t].astype(np.float16)

    clpe.host_rope_kv(rope, key, value, slots, qkv=qkv, q_heads=HQ, positions=positions)
    assert_same_bits(qkv, want_qkv)
    assert_same_bits(key, want_key)
    assert_same_bits(value, want_value)


@pytest.mark.parametrize("dtype,cache_dtype", [("f32", np.float32), ("f32", np.float16),
                                               ("f32", np.uint16), ("f16", np.float16),
                                               ("bf16", np.uint16)])
def test_device_is_the_host(cl, context, queue, dtype, cache_dtype):
    rope = clpe.Rope(context, head_dim=HEAD_DIM, dtype=dtype, rotary_dim=12)
    rng = np.random.default_rng(2)
    tokens, batch, max_seq = 9, 2, 8
    # separate q, k, v; a contiguous cache [batch, max_seq, HK, HEAD_DIM]
    q = random_values(rng, (tokens, HQ, HEAD_DIM), rope.dtype)
    k = random_values(rng, (tokens, HK, HEAD_DIM), rope.dtype)
    v = random_values(rng, (tokens, HK, HEAD_DIM), rope.dtype)
    key = random_values(rng, (batch, max_seq, HK, HEAD_DIM), cache_dtype)
    value = random_values(rng, (batch, max_seq, HK, HEAD_DIM), cache_dtype)
    slots = np.array([0, 1, 2, 3, 8, 9, -1, 10, 11], np.int64)  # b * max_seq + position
    d = {name: cl.array.to_device(queue, a) for name, a in
         (("q", q), ("k", k), ("v", v), ("key", key), ("value", value))}
    q_out = cl.array.zeros(queue, q.shape, rope.dtype)
    clpe.rope_kv(rope, queue, d["key"], d["value"], slots, q=d["q"], k=d["k"], v=d["v"],
                 q_out=q_out, positions=5).wait()
    want_out = np.zeros_like(q)
    clpe.host_rope_kv(rope.host(), key, value, slots, q=q.copy(), k=k, v=v, q_out=want_out,
                      positions=5)
    assert_same_bits(q_out.get(), want_out)
    assert_same_bits(d["q"].get(), q)  # read only
    assert_same_bits(d["key"].get(), key)
    assert_same_bits(d["value"].get(), value)


def test_fused_into_a_paged_cache_with_heads_outside_the_slots(cl, context, queue):
    rope = clpe.Rope(context, head_dim=HEAD_DIM, pairing="interleaved")
    rng = np.random.default_rng(3)
    tokens, num_blocks, block_size = 13, 5, 4
    qkv = random_values(rng, (tokens, (HQ + 2 * HK) * HEAD_DIM), np.float32)
    # blocks stored [num_blocks, HK, block_size, HEAD_DIM], seen in clpe's order
    key = random_values(rng, (num_blocks, HK, block_size, HEAD_DIM), np.float32)
    value = random_values(rng, (num_blocks, HK, block_size, HEAD_DIM), np.float32)
    slots = paged_slots(rng, tokens, num_blocks, block_size)
    positions = rng.integers(0, 5000, tokens, dtype=np.int64)
    d_qkv = cl.array.to_device(queue, qkv)
    d_key, d_value = cl.array.to_device(queue, key), cl.array.to_device(queue, value)
    report = cl.array.zeros(queue, 2, np.uint32)
    clpe.rope_kv(rope, queue, d_key.transpose((0, 2, 1, 3)), d_value.transpose((0, 2, 1, 3)),
                 cl.array.to_device(queue, slots), qkv=d_qkv, q_heads=HQ,
                 positions=cl.array.to_device(queue, positions), report=report).wait()
    assert list(report.get()) == [0, 0xFFFFFFFF]
    clpe.host_rope_kv(rope.host(), key.transpose(0, 2, 1, 3), value.transpose(0, 2, 1, 3),
                      slots, qkv=qkv, q_heads=HQ, positions=positions)
    assert_same_bits(d_qkv.get(), qkv)
    assert_same_bits(d_key.get(), key)
    assert_same_bits(d_value.get(), value)


def test_a_bad_slot_writes_nothing(cl, context, queue):
    rope = clpe.Rope(context, head_dim=HEAD_DIM)
    rng = np.random.default_rng(4)
    tokens = 6
    qkv = random_values(rng, (tokens, (HQ + 2 * HK) * HEAD_DIM), np.float32)
    key = random_values(rng, (2, 4, HK, HEAD_DIM), np.float32)
    value = random_values(rng, (2, 4, HK, HEAD_DIM), np.float32)
    slots = np.array([0, 1, 5, 2, 5, 3], np.int64)  # 5 twice
    d_qkv = cl.array.to_device(queue, qkv)
    d_key, d_value = cl.array.to_device(queue, key), cl.array.to_device(queue, value)
    report = cl.array.zeros(queue, 2, np.uint32)
    clpe.rope_kv(rope, queue, d_key, d_value, slots, qkv=d_qkv, q_heads=HQ,
                 report=report).wait()
    assert list(report.get()) == [1, 4]
    assert_same_bits(d_qkv.get(), qkv)
    assert_same_bits(d_key.get(), key)
    assert_same_bits(d_value.get(), value)
    with pytest.raises(clpe.Error) as caught:
        clpe.host_rope_kv(rope.host(), key, value, np.array([0, 1, 2, 3, 4, 8]), qkv=qkv,
                          q_heads=HQ)
    assert caught.value.name == "CLPE_ERROR_INVALID_SLOTS"
    assert_same_bits(d_key.get(), key)
    with pytest.raises(clpe.Error) as caught:  # the cache over the inputs
        clpe.rope_kv(rope, queue, d_key, d_key, slots, qkv=d_qkv, q_heads=HQ)
    assert caught.value.name == "CLPE_ERROR_ALIASING"
