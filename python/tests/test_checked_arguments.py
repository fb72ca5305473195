# SPDX-License-Identifier: Apache-2.0
"""Every argument is checked before the library sees it: arrays for length,
dtype and contiguity, integers for type and range, enums by name, and every
view the library writes by its own extent. A refused call raises TypeError
or ValueError naming the argument, and writes nothing."""
import numpy as np
import pytest

import clpe
from conftest import assert_same_bits

needs_rope = pytest.mark.skipif(not clpe.HAS_ROPE,
                                reason="the loaded libclpe has no rotary calls")


# ---- arrays the library reads through a pointer (factor arrays) ------------------

@needs_rope
@pytest.mark.parametrize("frequencies", [0.5, [0.5], [1.0, 2.0, 3.0], np.ones(5), np.ones((2, 2)),
                                         [[1.0, 2.0, 3.0, 4.0]]])
def test_frequencies_of_the_wrong_length_are_refused(frequencies):
    # head_dim 8 rotates 4 pairs: the library reads exactly 4 values.
    with pytest.raises((TypeError, ValueError), match="frequencies"):
        clpe.HostRope(8, scaling="frequencies", frequencies=frequencies)


@needs_rope
@pytest.mark.parametrize("name", ["short_factor", "long_factor"])
def test_longrope_factors_of_the_wrong_length_are_refused(name):
    good = {"short_factor": [1.0] * 4, "long_factor": [2.0] * 4}
    for bad in ([1.0] * 3, [1.0] * 5, 1.0, np.ones(8)[::2][:3]):
        arrays = dict(good, **{name: bad})
        with pytest.raises((TypeError, ValueError), match=name):
            clpe.HostRope(8, scaling="longrope", factor=4.0, original_max_position=64.0,
                          seq_len=128, **arrays)
    # The rotary width, not head_dim, sets the count.
    with pytest.raises(ValueError, match=name):
        clpe.HostRope(16, rotary_dim=8, scaling="longrope", factor=4.0,
                      original_max_position=64.0, **dict(good, **{name: [1.0] * 8}))


@needs_rope
def test_factor_arrays_are_converted_whatever_their_layout():
    # Right length, other dtype, not contiguous: copied exactly, as given.
    wanted = np.array([1.0, 0.25, 0.0625, 0.015625])
    strided = np.zeros(8, np.float32)
    strided[::2] = wanted
    with clpe.HostRope(8, scaling="frequencies", frequencies=strided[::2]) as rope:
        frequencies, _ = rope.frequencies()
    assert frequencies.tolist() == wanted.tolist()
    with pytest.raises(TypeError, match="frequencies"):
        clpe.HostRope(8, scaling="frequencies", frequencies=["a", "b", "c", "d"])
    with pytest.raises(TypeError, match="frequencies"):
        clpe.HostRope(8, scaling="frequencies", frequencies=np.ones(4, complex))


@needs_rope
def test_arrays_the_scaling_does_not_read_are_refused():
    with pytest.raises(ValueError, match="frequencies does not apply to scaling default"):
        clpe.HostRope(8, frequencies=[1.0] * 4)
    with pytest.raises(ValueError, match="short_factor does not apply to scaling frequencies"):
        clpe.HostRope(8, scaling="frequencies", frequencies=[1.0] * 4, short_factor=[1.0] * 4)


# ---- integers: type and range, never wrapped or truncated --------------------------

@needs_rope
@pytest.mark.parametrize("fields, error, name", [
    (dict(seq_len=-1), ValueError, "seq_len"),
    (dict(seq_len=2 ** 64 + 1), ValueError, "seq_len"),
    (dict(seq_len=1.0), TypeError, "seq_len"),
    (dict(rotary_dim=-2), ValueError, "rotary_dim"),
    (dict(rotary_dim=2 ** 32 + 8), ValueError, "rotary_dim"),
    (dict(rotary_dim=True), TypeError, "rotary_dim"),
    (dict(base="10000"), TypeError, "base"),
    (dict(scaling="linear", factor="2"), TypeError, "factor"),
    (dict(truncate="no"), TypeError, "truncate"),
])
def test_rope_integers_and_numbers_are_checked(fields, error, name):
    with pytest.raises(error, match=name):
        clpe.HostRope(8, **fields)


@needs_rope
@pytest.mark.parametrize("head_dim, error", [(64.9, TypeError), (-64, ValueError),
                                             (2 ** 32 + 64, ValueError), ("64", TypeError)])
def test_head_dim_is_checked(head_dim, error):
    with pytest.raises(error, match="head_dim"):
        clpe.HostRope(head_dim)


@needs_rope
def test_numpy_integers_are_integers():
    with clpe.HostRope(np.uint32(8), rotary_dim=np.int64(8), seq_len=np.uint64(5)) as rope:
        assert rope.rotary_dim == 8


def test_encoder_integers_are_checked():
    with pytest.raises(TypeError, match="d must be an integer"):
        clpe.HostEncoder(d=8.0)
    with pytest.raises(ValueError, match="flags"):
        clpe.HostEncoder(d=8, flags=-1)
    with pytest.raises(ValueError, match="flags"):
        clpe.HostEncoder(d=8, flags=2 ** 32 + 1)
    with pytest.raises(TypeError, match="padding_position"):
        clpe.HostEncoder(d=8, padding_position=1.5)
    with pytest.raises(ValueError, match="first_position"):
        clpe.HostEncoder(d=8, first_position=2 ** 63)
    with pytest.raises(TypeError, match="scale"):
        clpe.HostEncoder(d=8, scale="2")
    encoder = clpe.HostEncoder(d=8)
    x = np.full((2, 8), 5, np.float32)
    with pytest.raises(TypeError, match="positions"):
        encoder.add(x, positions=True)  # a bool is not a position
    with pytest.raises(TypeError, match="positions"):
        encoder.add(x, positions=1.5)
    assert (x == 5).all()


def test_config_fields_set_by_hand_are_checked():
    config = clpe.config_default(8)
    config.flags = -1
    with pytest.raises(ValueError, match="flags"):
        clpe.HostEncoder(config)
    config = clpe.config_default(8)
    config.base = "1e4"
    with pytest.raises(TypeError, match="base"):
        clpe.HostEncoder(config)
    config = clpe.config_default(8)
    config.layout = "split"  # a name works here too
    assert clpe.HostEncoder(config).table(range(2)).shape == (2, 8)


# ---- enums: by name, with the names listed -------------------------------------------

@needs_rope
def test_unknown_pairing_and_scaling_names_are_listed():
    with pytest.raises(ValueError, match="unknown pairing 'foo' \\(one of .*half_split.*"
                                         "interleaved"):
        clpe.HostRope(8, pairing="foo")
    with pytest.raises(ValueError, match="unknown scaling 'ntk' \\(one of .*dynamic.*yarn"):
        clpe.HostRope(8, scaling="ntk")
    with pytest.raises(TypeError, match="pairing must be one of"):
        clpe.HostRope(8, pairing=1.0)
    # Names in any case, members and their values all work.
    assert clpe.HostRope(8, pairing="NeoX", scaling=clpe.RopeScaling.DEFAULT).rotary_dim == 8
    assert clpe.HostRope(8, pairing=int(clpe.RopePairing.INTERLEAVED)).rotary_dim == 8


def test_unknown_encoder_enum_names_are_listed():
    with pytest.raises(ValueError, match="unknown freq 'fast' \\(one of paper, t2t"):
        clpe.HostEncoder(d=8, freq="fast")
    with pytest.raises(TypeError, match="layout must be one of"):
        clpe.HostEncoder(d=8, layout=0.5)


# ---- device calls: counts and the views the library writes -----------------------------

def test_device_counts_are_checked(cl, context, queue):
    encoder = clpe.Encoder(context, d=8)
    out = cl.array.to_device(queue, np.full((4, 8), 5, np.float32))
    with pytest.raises(ValueError, match="n = -1"):
        encoder.table(queue, out, n=-1)
    with pytest.raises(TypeError, match="n must be an integer"):
        encoder.table(queue, out, n=2.5)
    with pytest.raises(TypeError, match="start"):
        encoder.table(queue, out, start=1.5)
    with pytest.raises(ValueError, match="seq"):
        encoder.add(queue, clpe.Tensor(out.base_data), batch=1, seq=-1)
    with pytest.raises(ValueError, match="x.offset"):
        encoder.add(queue, clpe.Tensor(out.base_data, offset=-4), batch=1, seq=1)
    with pytest.raises(TypeError, match="pad_id"):
        encoder.pad_positions(queue, [[1, 2]], cl.array.zeros(queue, (1, 2), np.int64),
                              pad_id=1.5)
    queue.finish()
    assert (out.get() == 5).all()


def test_gather_bad_ids_is_written_within_its_own_view(cl, context, queue):
    encoder = clpe.Encoder(context, d=8)
    table = cl.array.to_device(queue, np.ones((4, 8), np.float32))
    out = cl.array.to_device(queue, np.full((1, 3, 8), 5, np.float32))
    ids = [[0, 9, 1]]  # 9 is outside the vocabulary: the library counts it in bad_ids
    big = cl.array.to_device(queue, np.full(4, 7, np.uint32))
    with pytest.raises(ValueError, match="bad_ids must have at least 2 elements, got 1"):
        encoder.gather(queue, ids, table, out, bad_ids=big[:1])
    with pytest.raises(TypeError, match="bad_ids is written on the device"):
        encoder.gather(queue, ids, table, out, bad_ids=np.zeros(2, np.uint32))
    with pytest.raises(TypeError, match="bad_ids must have dtype uint32"):
        encoder.gather(queue, ids, table, out, bad_ids=big.astype(np.int32))
    queue.finish()
    assert big.get().tolist() == [7, 7, 7, 7]
    assert_same_bits(out.get(), np.full((1, 3, 8), 5, np.float32))
    # A view of two elements of a larger buffer gets exactly those two.
    encoder.gather(queue, ids, table, out, bad_ids=big[:2]).wait()
    assert big.get().tolist() == [1, 1, 7, 7]
