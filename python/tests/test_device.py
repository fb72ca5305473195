# SPDX-License-Identifier: Apache-2.0
"""Every enqueue call from Python, on the device, bit for bit against the
host emulation; every way of passing positions, buffers and events."""
import numpy as np
import pytest

import clpe
from conftest import DTYPES, assert_same_bits

D = 24


def random_values(rng, shape, dtype):
    values = rng.standard_normal(shape).astype(np.float32)
    if dtype == np.uint16:  # bf16 bits: the top half of a float32
        return (values.view(np.uint32) >> 16).astype(np.uint16)
    return values.astype(dtype)


@pytest.fixture(params=DTYPES)
def encoder(request, context):
    made = clpe.Encoder(context, d=D, dtype=request.param, scale=1.5, freq="t2t",
                        layout="split")
    if not made.supports(request.param):
        pytest.skip("the device lacks %s" % request.param)
    return made


def test_table(cl, queue, encoder):
    out = cl.array.empty(queue, (50, D), encoder.dtype)
    event = encoder.table(queue, out, start=2 ** 40)
    assert isinstance(event, cl.Event)
    event.wait()
    assert_same_bits(out.get(), encoder.host().table(range(2 ** 40, 2 ** 40 + 50)))


def test_table_into_a_strided_view_leaves_the_rest(cl, queue, encoder):
    host = np.full((30, D + 8), 7, encoder.dtype)
    wide = cl.array.to_device(queue, host)
    view = wide[5:25, 4:4 + D]  # byte offset and a row pitch of D + 8
    encoder.table(queue, view, start=-3).wait()
    host[5:25, 4:4 + D] = encoder.host().table(range(-3, 17))
    assert_same_bits(wide.get(), host)


def test_table_into_a_raw_buffer(cl, context, queue, encoder):
    itemsize = encoder.dtype.itemsize
    host = np.full((10, D + 2), 3, encoder.dtype)
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                       hostbuf=host)
    tensor = clpe.Tensor(buffer, offset=(D + 2) * itemsize, row_pitch=D + 2)
    encoder.table(queue, tensor, start=100, n=8).wait()
    got = np.empty_like(host)
    cl.enqueue_copy(queue, got, buffer)
    host[1:9, :D] = encoder.host().table(range(100, 108))
    assert_same_bits(got, host)


@pytest.mark.parametrize("kind", ["start", "starts", "ids", "ids-array", "raw-buffer"])
def test_add_every_position_source(cl, context, queue, encoder, kind):
    rng = np.random.default_rng(1)
    batch, seq = 3, 7
    x0 = random_values(rng, (batch, seq, D), encoder.dtype)
    starts = np.array([0, 2 ** 33, -5], np.int64)
    ids = rng.integers(-2 ** 62, 2 ** 62, (batch, seq), dtype=np.int64)
    positions = {
        "start": 12345,
        "starts": [int(s) for s in starts],
        "ids": ids,
        "ids-array": cl.array.to_device(queue, ids),
        "raw-buffer": clpe.Positions(clpe.PositionSource.PER_SEQUENCE, cl.Buffer(
            context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=starts)),
    }[kind]
    host_positions = {"start": 12345, "ids": ids, "ids-array": ids}.get(kind, starts)
    x = cl.array.to_device(queue, x0)
    encoder.add(queue, x, positions=positions).wait()
    assert_same_bits(x.get(), encoder.host().add(x0.copy(), host_positions))


def test_add_two_dimensional_default_start(cl, context, queue):
    encoder = clpe.Encoder(context, preset="fairseq", d=D)
    x0 = np.arange(5 * D, dtype=np.float32).reshape(5, D)
    x = cl.array.to_device(queue, x0)
    encoder.add(queue, x).wait()
    expected = x0 + clpe.host_table(range(2, 7), preset="fairseq", d=D)  # scale 1
    assert_same_bits(x.get(), expected)


def test_add_out(cl, queue, encoder):
    rng = np.random.default_rng(2)
    x0 = random_values(rng, (2, 9, D), encoder.dtype)
    x = cl.array.to_device(queue, x0)
    out = cl.array.empty_like(x)
    encoder.add_out(queue, x, out, positions=[4, 40]).wait()
    assert_same_bits(out.get(), encoder.host().add(x0.copy(), [4, 40]))
    assert_same_bits(x.get(), x0)


def test_gather_with_bad_ids(cl, queue, encoder):
    rng = np.random.default_rng(3)
    vocab, batch, seq = 11, 2, 6
    table = random_values(rng, (vocab, D), encoder.dtype)
    ids = rng.integers(0, vocab, (batch, seq), dtype=np.int32)
    ids[1, 2], ids[0, 4] = vocab, -1
    out = cl.array.empty(queue, (batch, seq, D), encoder.dtype)
    bad = cl.array.empty(queue, 2, np.uint32)
    encoder.gather(queue, cl.array.to_device(queue, ids), cl.array.to_device(queue, table),
                   out, positions=[3, 1000], bad_ids=bad).wait()
    expected, bad_count = encoder.host().gather(ids, table, [3, 1000])
    assert_same_bits(out.get(), expected)
    assert bad_count == 2
    assert bad.get().tolist() == [2, 4]  # two bad ids, the first at flat index 4


def test_pad_positions_then_gather(cl, context, queue):
    pad = 1
    ids = np.array([[pad, pad, 5, 9, 2], [7, 8, pad, 10, 2]], np.int32)
    # fairseq make_positions: padding_idx + cumsum of the mask, pads at padding_idx
    mask = ids != pad
    expected = np.where(mask, np.cumsum(mask, axis=1) + pad, pad).astype(np.int64)
    encoder = clpe.Encoder(context, preset="fairseq", d=D, scale=D ** 0.5)
    device_ids = cl.array.to_device(queue, ids)
    positions = cl.array.empty(queue, ids.shape, np.int64)
    encoder.pad_positions(queue, device_ids, positions, pad_id=pad)
    table = np.random.default_rng(4).standard_normal((12, D)).astype(np.float32)
    out = cl.array.empty(queue, ids.shape + (D,), np.float32)
    encoder.gather(queue, device_ids, cl.array.to_device(queue, table), out,
                   positions=positions).wait()
    assert positions.get().tolist() == expected.tolist()
    host_out, _ = encoder.host().gather(ids, table, expected)
    assert_same_bits(out.get(), host_out)
    assert_same_bits(out.get()[0, 0], table[pad] * np.float32(D ** 0.5))


def test_wait_for_and_events(cl, context, queue):
    encoder = clpe.Encoder(context, d=D)
    gate = cl.UserEvent(context)
    out = cl.array.zeros(queue, (4, D), np.float32)
    out.finish()
    event = encoder.table(queue, out, start=0, wait_for=[gate])
    assert event.command_execution_status != cl.command_execution_status.COMPLETE
    assert out.events[-1].int_ptr == event.int_ptr  # later array work waits for it
    gate.set_status(cl.command_execution_status.COMPLETE)
    event.wait()
    assert_same_bits(out.get(), clpe.host_table(range(4), d=D))


def test_create_like_shares_the_device(cl, context, queue):
    first = clpe.Encoder(context, d=D)
    other = first.create_like(preset="marian", dtype="f16")
    assert other.config.layout == clpe.Layout.SPLIT and other.config.d == D
    out = cl.array.empty(queue, (3, D), np.float16)
    other.table(queue, out).wait()
    assert_same_bits(out.get(), clpe.host_table(range(3), preset="marian", d=D, dtype="f16"))


def test_launch_info_follows_the_environment(context, monkeypatch):
    monkeypatch.setenv("CLPE_ROWS_PER_ITEM", "4")
    monkeypatch.setenv("CLPE_TILE_WALK", "0")
    info = clpe.Encoder(context, d=D).launch_info()
    assert info["rows_per_item"] == 4
    assert info["pairs_per_item"] in (1, 64) and info["work_group_size"] >= 1
    assert info["tile_walk"] == 0 and not any(k.startswith("reserved") for k in info)
    monkeypatch.setenv("CLPE_TILE_WALK", "1")
    info = clpe.Encoder(context, d=D).launch_info()
    assert info["tile_walk"] == (1 if info["pairs_per_item"] > 1 else 0)


def test_bf16_bits_read_back_as_float(cl, context, queue):
    encoder = clpe.Encoder(context, d=8, dtype="bf16")
    out = cl.array.empty(queue, (1, 8), np.uint16)
    encoder.table(queue, out, start=2).wait()
    as_float = (out.get().astype(np.uint32) << 16).view(np.float32)[0]
    exact = clpe.host_table(range(2, 3), d=8)[0]
    assert np.all(np.abs(as_float - exact) <= 2.0 ** -8 * np.abs(exact) + 1e-30)


def test_empty_work_returns_an_event_after_its_wait_list(cl, context, queue):
    encoder = clpe.Encoder(context, d=D)
    gate = cl.UserEvent(context)
    event = encoder.table(queue, cl.array.empty(queue, (0, D), np.float32), wait_for=[gate])
    assert isinstance(event, cl.Event)
    assert event.command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    event.wait()
    encoder.add(queue, cl.array.empty(queue, (2, 0, D), np.float32), positions=[1, 2]).wait()
    assert clpe.host_table(range(5, 5), d=D).shape == (0, D)


def test_the_library_holds_the_config_asked_for(context):
    encoder = clpe.Encoder(context, preset="fairseq", d=D, dtype="bf16", scale=2.5, base=500.0)
    held = encoder.library_config()
    assert held == encoder.config
    assert (held.freq, held.layout, held.dtype) == (clpe.Freq.TENSOR2TENSOR, clpe.Layout.SPLIT,
                                                    clpe.Dtype.BF16)
    assert (held.scale, held.base, held.padding_position, held.first_position) == \
        (2.5, 500.0, 1, 2)
    assert clpe.VERSION_NUMBER == 10000 * int(clpe.__version__.split(".")[0]) + \
        100 * int(clpe.__version__.split(".")[1]) + int(clpe.__version__.split(".")[2])
