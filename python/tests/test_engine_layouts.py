# SPDX-License-Identifier: Apache-2.0
"""The KV cache layouts of serving engines through clpe's cache pitches
(docs/engines.md): vLLM's [2, num_blocks, block_size, heads, head_dim] (its
FlashAttention backend's kv_cache; key_cache = kv_cache[0]) and FlashInfer's
paged_kv_cache [num_pages, 2, page_size, heads, head_dim] (NHD) and
[num_pages, 2, heads, page_size, head_dim] (HND), written by clpe.rope_kv on
the device and clpe.host_rope_kv on the host. Each is checked against the
engine's own indexing: token t at position p of a sequence whose block
table is B lands in block B[p // block_size], entry p % block_size, with k
rotated (clpe.HostRope.rotate, whose bits rope_kv's keys equal by contract)
and v as it is; every other entry keeps its sentinel."""
import numpy as np
import pytest

import clpe

pytestmark = pytest.mark.skipif(not clpe.HAS_ROPE, reason="no rotary calls in libclpe")

HEADS, HEAD_DIM, BLOCK, BLOCKS = 2, 16, 4, 6
BLOCK_TABLE = [4, 1, 5]  # one sequence's blocks, in order
TOKENS = 10              # positions 0 .. 9: blocks 4, 1 and half of 5


def _layout(engine):
    """(the engine's cache array, key view, value view, where(block, entry))
    with key and value views [num_blocks, block_size, heads, head_dim]."""
    sentinel = np.float32(-7.0)
    if engine == "vllm":
        cache = np.full((2, BLOCKS, BLOCK, HEADS, HEAD_DIM), sentinel, np.float32)
        return cache, cache[0], cache[1], lambda b, e: (cache[0, b, e], cache[1, b, e])
    if engine == "flashinfer-nhd":
        cache = np.full((BLOCKS, 2, BLOCK, HEADS, HEAD_DIM), sentinel, np.float32)
        return cache, cache[:, 0], cache[:, 1], lambda b, e: (cache[b, 0, e], cache[b, 1, e])
    cache = np.full((BLOCKS, 2, HEADS, BLOCK, HEAD_DIM), sentinel, np.float32)
    return (cache, cache[:, 0].transpose(0, 2, 1, 3), cache[:, 1].transpose(0, 2, 1, 3),
            lambda b, e: (cache[b, 0, :, e], cache[b, 1, :, e]))


ENGINES = ["vllm", "flashinfer-nhd", "flashinfer-hnd"]


def _inputs():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((TOKENS, 4, HEAD_DIM)).astype(np.float32)
    k = rng.standard_normal((TOKENS, HEADS, HEAD_DIM)).astype(np.float32)
    v = rng.standard_normal((TOKENS, HEADS, HEAD_DIM)).astype(np.float32)
    positions = np.arange(TOKENS, dtype=np.int64)
    slots = np.array([BLOCK_TABLE[p // BLOCK] * BLOCK + p % BLOCK for p in positions], np.int64)
    return q, k, v, positions, slots


def _expect(where, rope, k, v, positions):
    k_rot = k.copy()
    rope.rotate(k_rot[None], positions=positions[None])
    for t, p in enumerate(positions):
        key, value = where(BLOCK_TABLE[p // BLOCK], p % BLOCK)
        np.testing.assert_array_equal(key, k_rot[t])
        np.testing.assert_array_equal(value, v[t])
    # entries no token maps to keep the sentinel
    used = {(BLOCK_TABLE[p // BLOCK], p % BLOCK) for p in positions}
    for block in range(BLOCKS):
        for entry in range(BLOCK):
            if (block, entry) not in used:
                key, value = where(block, entry)
                assert np.all(key == -7.0) and np.all(value == -7.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_host_rope_kv_into_the_engines_layout(engine):
    rope = clpe.HostRope(HEAD_DIM, base=10000.0)
    cache, key_view, value_view, where = _layout(engine)
    q, k, v, positions, slots = _inputs()
    clpe.host_rope_kv(rope, key_view, value_view, slots, q=q, k=k, v=v, positions=positions)
    _expect(where, rope, k, v, positions)


@pytest.mark.parametrize("engine", ENGINES)
def test_rope_kv_on_the_device_into_the_engines_layout(cl, context, queue, engine):
    rope = clpe.Rope(context, head_dim=HEAD_DIM, base=10000.0)
    cache, _, _, where = _layout(engine)
    device_cache = cl.array.to_device(queue, cache)
    if engine == "vllm":
        key_view, value_view = device_cache[0], device_cache[1]
    elif engine == "flashinfer-nhd":
        key_view, value_view = device_cache[:, 0], device_cache[:, 1]
    else:
        key_view = device_cache[:, 0].transpose((0, 2, 1, 3))
        value_view = device_cache[:, 1].transpose((0, 2, 1, 3))
    q, k, v, positions, slots = _inputs()
    dq, dk, dv = (cl.array.to_device(queue, x) for x in (q, k, v))
    dslots = cl.array.to_device(queue, slots)
    dpos = cl.array.to_device(queue, positions)
    clpe.rope_kv(rope, queue, key_view, value_view, dslots, q=dq, k=dk, v=dv,
                 positions=dpos).wait()
    cache[...] = device_cache.get()
    _expect(where, rope.host(), k, v, positions)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_pitches_docs_engines_md_gives(engine):
    """The clpe_kv_cache fields docs/engines.md lists for each layout are the
    ones the package derives from the engine's arrays."""
    from clpe._rope_kv import _cache_layout
    H, D, S, N = HEADS, HEAD_DIM, BLOCK, BLOCKS
    documented = {  # (head_pitch, slot_pitch, block_pitch, value offset), in elements
        "vllm": (D, H * D, S * H * D, N * S * H * D),
        "flashinfer-nhd": (D, H * D, 2 * S * H * D, S * H * D),
        "flashinfer-hnd": (S * D, D, 2 * H * S * D, H * S * D),
    }[engine]
    cache, key_view, value_view, _ = _layout(engine)
    _, blocks, size, heads, head_pitch, slot_pitch, block_pitch = _cache_layout(
        key_view, value_view, HEAD_DIM)
    offset = (value_view.__array_interface__["data"][0] - cache.ctypes.data) // cache.itemsize
    assert (blocks, size, heads) == (N, S, H)
    assert (head_pitch, slot_pitch, block_pitch, offset) == documented
