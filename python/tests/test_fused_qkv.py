# SPDX-License-Identifier: Apache-2.0
"""A fused QKV projection output rotated in place from Python: q and k are
views of one array (heads interleaved per token, as the projection writes
them), on the device (pyopencl.array views of one buffer) and in the host
emulation (NumPy views), bit for bit what separate q and k arrays give, the
v heads untouched; views whose elements meet are refused."""
import numpy as np
import pytest

import clpe
from conftest import DTYPES, assert_same_bits

pytestmark = pytest.mark.skipif(not clpe.HAS_ROPE,
                                reason="the loaded libclpe has no rotary calls yet")
HEAD_DIM = 16
BATCH, SEQ, HQ, HK = 2, 11, 4, 2


def projection(dtype, heads_outer):
    """A [batch, seq, hq + 2 hk, d] (or [batch, heads, seq, d] seen through
    transposed strides) fused output of small exact values."""
    numpy_dtype = clpe.HostRope(HEAD_DIM, dtype=dtype).dtype
    rng = np.random.default_rng(11)
    values = rng.integers(-512, 512, (BATCH, SEQ, HQ + 2 * HK, HEAD_DIM)) / 128.0
    if dtype == "bf16":  # bfloat16 bits in uint16: a float32's top half
        fused = (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    else:
        fused = values.astype(numpy_dtype)
    if heads_outer:
        fused = np.ascontiguousarray(fused.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    return fused


def views(fused):
    return fused[:, :, :HQ, :], fused[:, :, HQ:HQ + HK, :]


@pytest.mark.parametrize("heads_outer", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_host_fused_equals_separate(dtype, heads_outer):
    fused = projection(dtype, heads_outer)
    v_before = fused[:, :, HQ + HK:, :].copy()
    q_sep, k_sep = (np.ascontiguousarray(x) for x in views(fused))
    with clpe.HostRope(HEAD_DIM, dtype=dtype) as rope:
        q, k = views(fused)
        rope.rotate(q, k, positions=[3, 1000])
        rope.rotate(q_sep, k_sep, positions=[3, 1000])
    assert_same_bits(np.ascontiguousarray(q), q_sep)
    assert_same_bits(np.ascontiguousarray(k), k_sep)
    assert_same_bits(fused[:, :, HQ + HK:, :], v_before)


@pytest.mark.parametrize("pairs", [None, "1"])
@pytest.mark.parametrize("heads_outer", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_device_fused_equals_separate(cl, device, monkeypatch, dtype, heads_outer, pairs):
    import pyopencl.array as cla
    if pairs:
        monkeypatch.setenv("CLPE_PAIRS_PER_ITEM", pairs)
    else:
        monkeypatch.delenv("CLPE_PAIRS_PER_ITEM", raising=False)
    context = cl.Context([device])  # a program of its own, built in this launch shape
    queue = cl.CommandQueue(context)
    rope = clpe.Rope(context, head_dim=HEAD_DIM, dtype=dtype)
    encoder = clpe.Encoder(context, d=HEAD_DIM)
    if not encoder.supports(dtype):
        pytest.skip("the device lacks %s" % dtype)
    assert (encoder.launch_info()["pairs_per_item"] == 1) == (pairs == "1")
    encoder.close()
    fused = projection(dtype, heads_outer)
    # the same layout on the device: heads outer is a transposed view
    order = (0, 2, 1, 3) if heads_outer else (0, 1, 2, 3)
    base_dev = cla.to_device(queue, np.ascontiguousarray(fused.transpose(order)))
    fused_dev = base_dev.transpose(order)
    q_sep, k_sep = (cla.to_device(queue, np.ascontiguousarray(x)) for x in views(fused))
    q, k = views(fused_dev)
    rope.rotate(queue, q, k, positions=[3, 1000]).wait()
    rope.rotate(queue, q_sep, k_sep, positions=[3, 1000]).wait()
    got = base_dev.get().transpose(order)
    assert_same_bits(np.ascontiguousarray(got[:, :, :HQ, :]), q_sep.get())
    assert_same_bits(np.ascontiguousarray(got[:, :, HQ:HQ + HK, :]), k_sep.get())
    assert_same_bits(np.ascontiguousarray(got[:, :, HQ + HK:, :]),
                     np.ascontiguousarray(fused[:, :, HQ + HK:, :]))
    # and the host emulation of the fused layout
    with rope.host() as host:
        hq, hk = views(fused)
        host.rotate(hq, hk, positions=[3, 1000])
    assert_same_bits(np.ascontiguousarray(got), np.ascontiguousarray(fused))
    rope.close()


def test_views_that_meet_are_refused(cl, context, queue):
    import pyopencl.array as cla
    fused = projection("f32", False)
    fused_dev = cla.to_device(queue, fused)
    rope = clpe.Rope(context, head_dim=HEAD_DIM)
    q, k = fused_dev[:, :, :HQ, :], fused_dev[:, :, HQ - 1:HQ + 1, :]  # head HQ-1 in both
    with pytest.raises(clpe.Error) as err:
        rope.rotate(queue, q, k)
    assert err.value.name == "CLPE_ERROR_ALIASING"
    assert_same_bits(fused_dev.get(), fused)
    with clpe.HostRope(HEAD_DIM) as host, pytest.raises(clpe.Error) as err:
        host.rotate(fused[:, :, :HQ, :], fused[:, :, HQ - 1:HQ + 1, :])
    assert err.value.name == "CLPE_ERROR_ALIASING"
    rope.close()
