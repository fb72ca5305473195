# SPDX-License-Identifier: Apache-2.0
"""Rotary into FP8 KV caches (clpe.rope_kv, clpe.host_rope_kv with
cache_dtype "fp8_e4m3" / "fp8_e5m2"): every cache byte equals an independent
reference, ml_dtypes' float8_e4m3fn / float8_e5m2 fed x / scale computed in
float32 by NumPy and saturated to the largest finite value first, as vLLM's
reshape_and_cache stores it. Values (copied) cover every float16 and
bfloat16 bit pattern and a large sample of float32 ones with the edges
(+-448, +-57344, subnormals, the halfway points between FP8 neighbours,
NaN, +-inf); keys (rotated) are the rotation's stored value quantized. The
device (PoCL, both launch shapes through CLPE_PAIRS_PER_ITEM) equals the
host emulation bit for bit."""
import numpy as np
import pytest

import clpe

ml_dtypes = pytest.importorskip("ml_dtypes")

pytestmark = pytest.mark.skipif(not hasattr(clpe._lib, "clpe_enqueue_rope_kv"),
                                reason="the loaded libclpe has no rotary-into-cache call")

FORMATS = {
    "fp8_e4m3": (ml_dtypes.float8_e4m3fn, 448.0),
    "fp8_e5m2": (ml_dtypes.float8_e5m2, 57344.0),
}
SCALES = [1.0, 0.0123, 37.5, 2.0 ** -20, 1e-8, 3e7]  # the last two: outside [2^-20, 2^20]
HEAD_DIM, HK = 16, 2


def reference(x, scale, fmt):
    """FP8 bytes of float32 values x: x / scale in float32, saturated, then
    ml_dtypes' round to nearest even (NaN stays NaN)."""
    target, top = FORMATS[fmt]
    with np.errstate(all="ignore"):
        q = np.asarray(x, np.float32) / np.float32(scale)
        q = np.where(np.isnan(q), q, np.clip(q, -top, top)).astype(np.float32)
        return q.astype(target).view(np.uint8)


def as_float32(values, dtype):
    """The exact value of each element of a clpe storage array as float32."""
    if dtype == "bf16":
        return (values.astype(np.uint32) << 16).view(np.float32)
    return values.astype(np.float32)


def edge_values(scale):
    """float32 values at the edges of both FP8 formats, before and after
    multiplying by scale: the largest finite ones and past them, the
    halfway points between FP8 neighbours and one float32 ulp around them,
    FP8 and float32 subnormals, zeros, infinities and NaN."""
    out = [0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 480.0, 57344.0, 61440.0, 65536.0,
           1e30, 2.0 ** -149, 2.0 ** -126, 2.0 ** -10, 2.0 ** -17, 3 * 2.0 ** -18]
    for target, _ in FORMATS.values():
        codes = np.arange(256, dtype=np.uint8).view(target).astype(np.float32)
        finite = np.unique(codes[np.isfinite(codes)])
        mids = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
        for v in (finite, mids):
            out.extend(v.tolist())
            out.extend(np.nextafter(v, np.float32(np.inf)).tolist())
            out.extend(np.nextafter(v, np.float32(-np.inf)).tolist())
    x = np.array(out, np.float32)
    with np.errstate(all="ignore"):
        x = np.concatenate([x, -x, x * np.float32(scale), -x * np.float32(scale)])
    return x.astype(np.float32)


def storage_values(dtype, rng, scale):
    """Values of the storage type: every bit pattern of a 16-bit type, or
    2^18 random float32 bit patterns and the edges (as the storage array)."""
    if dtype == "f16":
        return np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    if dtype == "bf16":
        return np.arange(65536, dtype=np.uint32).astype(np.uint16)
    random = rng.integers(0, 2 ** 32, 2 ** 18, dtype=np.uint64).astype(np.uint32)
    edges = edge_values(scale)
    return np.concatenate([random.view(np.float32), edges]).astype(np.float32)


def fp8_caches(tokens, heads=HK):
    shape = (1, tokens, heads, HEAD_DIM)
    return np.zeros(shape, np.uint8), np.zeros(shape, np.uint8)


def values_as_tokens(flat, dtype):
    """flat values padded with zeros to whole tokens [tokens, HK, HEAD_DIM]."""
    per_token = HK * HEAD_DIM
    tokens = -(-flat.size // per_token)
    padded = np.zeros(tokens * per_token, flat.dtype)
    padded[:flat.size] = flat
    return padded.reshape(tokens, HK, HEAD_DIM)


def numpy_dtype(dtype):
    return {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}[dtype]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_values_equal_the_reference(cl, context, queue, dtype, fmt):
    rng = np.random.default_rng(7)
    rope = clpe.Rope(context, head_dim=HEAD_DIM, dtype=dtype)
    for scale in SCALES:
        v = values_as_tokens(storage_values(dtype, rng, scale), dtype)
        tokens = v.shape[0]
        k = np.zeros_like(v)
        slots = np.arange(tokens, dtype=np.int64)
        want = reference(as_float32(v, dtype), scale, fmt).reshape(1, tokens, HK, HEAD_DIM)

        key, value = fp8_caches(tokens)
        clpe.host_rope_kv(rope.host(), key, value, slots, k=k, v=v, cache_dtype=fmt,
                          k_scale=2.0, v_scale=scale)
        assert np.array_equal(value, want), "host, scale %r: %d bytes differ" % (
            scale, int(np.count_nonzero(value != want)))

        d_key = cl.array.zeros(queue, key.shape, np.uint8)
        d_value = cl.array.zeros(queue, value.shape, np.uint8)
        clpe.rope_kv(rope, queue, d_key, d_value, slots, k=cl.array.to_device(queue, k),
                     v=cl.array.to_device(queue, v), cache_dtype=fmt, k_scale=2.0,
                     v_scale=scale).wait()
        got = d_value.get()
        assert np.array_equal(got, want), "device, scale %r: %d bytes differ" % (
            scale, int(np.count_nonzero(got != want)))
        assert np.array_equal(d_key.get(), key)


def rotated_keys(rope, k, positions):
    """k rotated as clpe stores it in the rope's dtype (HostRope.rotate)."""
    rotated = k.copy()[None]
    q = np.zeros((1, k.shape[0], 1, k.shape[-1]), k.dtype)
    rope.rotate(q, rotated, positions=positions[None])
    return rotated[0]


@pytest.mark.parametrize("head_dim,rotary_dim", [(16, 12), (128, 128), (128, 64)])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_keys_paged_equal_the_reference(cl, context, queue, dtype, fmt, head_dim, rotary_dim):
    """Rotated keys into a paged cache: each byte the reference of the
    stored rotation; the device equals the host, q included, for position
    ids and a start position (head_dim 128: the vector groups too)."""
    rng = np.random.default_rng(11)
    rope = clpe.Rope(context, head_dim=head_dim, dtype=dtype, rotary_dim=rotary_dim)
    tokens, num_blocks, block_size, hq = 37, 12, 4, 4
    nd = numpy_dtype(dtype)
    big = np.float32(900.0 if fmt == "fp8_e4m3" else 6e4)

    def values(shape):
        x = (rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 300.0, big], shape))
        x = np.clip(x, -6e4, 6e4).astype(np.float32)  # finite in float16 too
        # NaN and infinities where the values are copied: past rotary_dim
        # (a rotated NaN's sign is the arithmetic's, not a stored value's)
        tail = x[..., rotary_dim:].reshape(-1)
        tail[::13] = np.nan
        tail[5::17] = -np.inf
        tail[7::19] = -np.nan
        x[..., rotary_dim:] = tail.reshape(x[..., rotary_dim:].shape)
        if dtype == "bf16":
            return (x.view(np.uint32) >> 16).astype(np.uint16)
        return x.astype(nd)

    q, k, v = values((tokens, hq, head_dim)), values((tokens, HK, head_dim)), values(
        (tokens, HK, head_dim))
    slots = rng.permutation(num_blocks * block_size)[:tokens].astype(np.int64)
    slots[5::6] = -1
    ids = rng.integers(0, 2 ** 40, tokens, dtype=np.int64)
    for positions, k_scale, v_scale in ((ids, 0.37, 1.5), (123, 1.0, 0.01)):
        position_ids = ids if positions is ids else np.arange(123, 123 + tokens, dtype=np.int64)
        shape = (num_blocks, block_size, HK, head_dim)
        key, value = np.full(shape, 0x11, np.uint8), np.full(shape, 0x22, np.uint8)
        want_key, want_value = key.copy(), value.copy()
        stored = as_float32(rotated_keys(rope.host(), k, position_ids), dtype)
        for t, slot in enumerate(slots):
            if slot >= 0:
                want_key[slot // block_size, slot % block_size] = reference(stored[t], k_scale,
                                                                            fmt)
                want_value[slot // block_size, slot % block_size] = reference(
                    as_float32(v[t], dtype), v_scale, fmt)
        host_q = q.copy()
        clpe.host_rope_kv(rope.host(), key, value, slots, q=host_q, k=k, v=v,
                          positions=positions, cache_dtype=fmt, k_scale=k_scale, v_scale=v_scale)
        assert np.array_equal(key, want_key)
        assert np.array_equal(value, want_value)

        d_q = cl.array.to_device(queue, q)
        d_key = cl.array.to_device(queue, np.full(shape, 0x11, np.uint8))
        d_value = cl.array.to_device(queue, np.full(shape, 0x22, np.uint8))
        clpe.rope_kv(rope, queue, d_key, d_value, slots, q=d_q, k=cl.array.to_device(queue, k),
                     v=cl.array.to_device(queue, v), positions=positions, cache_dtype=fmt,
                     k_scale=k_scale, v_scale=v_scale).wait()
        assert np.array_equal(d_key.get(), key)
        assert np.array_equal(d_value.get(), value)
        assert np.array_equal(d_q.get().view(np.uint8), host_q.view(np.uint8))


def test_ml_dtypes_arrays_name_their_format():
    rope = clpe.HostRope(HEAD_DIM)
    k = np.ones((3, HK, HEAD_DIM), np.float32)
    key = np.zeros((1, 3, HK, HEAD_DIM), ml_dtypes.float8_e5m2)
    value = np.zeros_like(key)
    clpe.host_rope_kv(rope, key, value, np.arange(3), k=k, v=k * 3, v_scale=0.5)
    assert np.all(value.astype(np.float32) == 6.0)
    with pytest.raises(TypeError, match="cache_dtype"):
        clpe.host_rope_kv(rope, key, value, np.arange(3), k=k, v=k, cache_dtype="fp8_e4m3")


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), 1e39])
def test_bad_scale_is_refused_and_writes_nothing(bad):
    rope = clpe.HostRope(HEAD_DIM)
    k = np.ones((3, HK, HEAD_DIM), np.float32)
    key, value = fp8_caches(3)
    for name in ("k_scale", "v_scale"):
        with pytest.raises(ValueError, match=name):
            clpe.host_rope_kv(rope, key, value, np.arange(3), k=k, v=k, cache_dtype="fp8",
                              **{name: bad})
    assert not key.any() and not value.any()


def test_scale_on_a_float_cache_is_refused():
    rope = clpe.HostRope(HEAD_DIM)
    k = np.ones((3, HK, HEAD_DIM), np.float32)
    key = np.zeros((1, 3, HK, HEAD_DIM), np.float16)
    with pytest.raises(ValueError, match="k_scale applies to FP8 caches only"):
        clpe.host_rope_kv(rope, key, key.copy(), np.arange(3), k=k, v=k, k_scale=0.5)
    with pytest.raises(TypeError, match="uint8 cache needs cache_dtype"):
        clpe.host_rope_kv(rope, np.zeros((1, 3, HK, HEAD_DIM), np.uint8),
                          np.zeros((1, 3, HK, HEAD_DIM), np.uint8), np.arange(3), k=k, v=k)


def test_f64_rope_has_no_fp8_cache():
    rope = clpe.HostRope(HEAD_DIM, dtype="f64")
    k = np.ones((3, HK, HEAD_DIM), np.float64)
    key, value = fp8_caches(3)
    with pytest.raises(clpe.Error) as caught:
        clpe.host_rope_kv(rope, key, value, np.arange(3), k=k, v=k, cache_dtype="fp8")
    assert caught.value.name == "CLPE_ERROR_DTYPE_MISMATCH"
