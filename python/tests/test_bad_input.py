# SPDX-License-Identifier: Apache-2.0
"""Bad input raises (clpe.Error with the library's status, or a Python
TypeError / ValueError for what the binding refuses itself) and writes
nothing."""
import math

import numpy as np
import pytest

import clpe
from conftest import assert_same_bits

D = 16


def raises_status(name):
    return pytest.raises(clpe.Error, match="^.*%s " % name)


def test_error_carries_status_and_name():
    with pytest.raises(clpe.Error) as caught:
        clpe.HostEncoder(d=7)
    error = caught.value
    assert isinstance(error, RuntimeError)
    assert (error.status, error.name) == (-2005, "CLPE_ERROR_INVALID_D")
    assert str(error).startswith("config: CLPE_ERROR_INVALID_D (-2005): ")
    assert not error.is_opencl
    assert clpe.status_name(-5) == "CL_OUT_OF_RESOURCES"
    assert clpe.status_name(-2028) == "CLPE_ERROR_RESERVED_FIELD"


@pytest.mark.parametrize("fields, name", [
    (dict(d=0), "CLPE_ERROR_INVALID_D"),
    (dict(d=(1 << 24) + 2), "CLPE_ERROR_INVALID_D"),
    (dict(d=8, base=1.0), "CLPE_ERROR_INVALID_BASE"),
    (dict(d=8, base=math.nan), "CLPE_ERROR_INVALID_BASE"),
    (dict(d=8, scale=math.inf), "CLPE_ERROR_INVALID_SCALE"),
    (dict(d=8, freq=7), "CLPE_ERROR_INVALID_CONFIG"),
    (dict(d=8, layout=9), "CLPE_ERROR_INVALID_CONFIG"),
    (dict(d=8, preset="no-such-framework"), "CLPE_ERROR_UNKNOWN_PRESET"),
])
def test_bad_configs(context, fields, name):
    with raises_status(name):
        clpe.HostEncoder(**fields)
    with raises_status(name):
        clpe.Encoder(context, **fields)


def test_unknown_names_and_types():
    with pytest.raises(ValueError, match="unknown dtype"):
        clpe.HostEncoder(d=8, dtype=np.uint16)  # bf16 must be said as "bf16"
    with pytest.raises(ValueError, match="unknown layout"):
        clpe.HostEncoder(d=8, layout="diagonal")
    with pytest.raises(ValueError, match="give d"):
        clpe.HostEncoder(preset="fairseq")


def test_host_calls_write_nothing_on_error():
    encoder = clpe.HostEncoder(d=D)
    out = np.full((3, D), 5, np.float32)
    with pytest.raises(TypeError, match="dtype"):
        encoder.table(range(3), np.zeros((3, D), np.float64))
    with pytest.raises(ValueError, match="shape"):
        encoder.table(range(2), out)
    with raises_status("CLPE_ERROR_POSITION_OVERFLOW"):
        encoder.table(range(2 ** 63 - 2, 2 ** 63 + 1), out)
    with pytest.raises(ValueError, match="fit in int64"):
        encoder.table([0, 1, 2 ** 63], out)
    assert (out == 5).all()

    x = np.full((2, 3, D), 5, np.float32)
    with raises_status("CLPE_ERROR_POSITION_OVERFLOW"):
        encoder.add(x, 2 ** 63 - 2)  # the third row would be at 2^63
    with pytest.raises(ValueError, match="positions must be"):
        encoder.add(x, [1, 2, 3])
    with pytest.raises(ValueError, match="read-only"):
        encoder.add(np.broadcast_to(x[0], (3, D)))
    with pytest.raises(TypeError, match="integers"):
        encoder.add(x, np.zeros((2, 3)))  # float positions
    with pytest.raises(ValueError, match="contiguous"):
        encoder.add(x[..., ::-1])
    with pytest.raises(ValueError, match="positive strides"):
        encoder.add(x[::-1])
    assert (x == 5).all()

    with pytest.raises(ValueError, match="fit in int32"):
        encoder.gather([[0, 2 ** 31]], np.zeros((4, D), np.float32))
    encoder.close()
    with pytest.raises(ValueError, match="closed"):
        encoder.table(range(1))


@pytest.fixture()
def encoder(context):
    return clpe.Encoder(context, d=D)


def filled(cl, queue, shape, dtype=np.float32, value=5):
    array = cl.array.to_device(queue, np.full(shape, value, dtype))
    array.finish()
    return array


def test_table_buffer_too_small(cl, context, queue, encoder):
    host = np.full((4, D), 5, np.float32)
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                       hostbuf=host)
    with raises_status("CLPE_ERROR_BUFFER_TOO_SMALL"):
        encoder.table(queue, buffer, start=0, n=5)
    with raises_status("CLPE_ERROR_MISALIGNED_OFFSET"):
        encoder.table(queue, clpe.Tensor(buffer, offset=2), start=0, n=1)
    with raises_status("CLPE_ERROR_POSITION_OVERFLOW"):
        encoder.table(queue, buffer, start=2 ** 63 - 1, n=2)
    with raises_status("CLPE_ERROR_INVALID_PITCH"):
        encoder.table(queue, clpe.Tensor(buffer, row_pitch=D - 1), start=0, n=2)
    with pytest.raises(ValueError, match="give n="):
        encoder.table(queue, buffer)
    queue.finish()
    got = np.empty_like(host)
    cl.enqueue_copy(queue, got, buffer)
    assert_same_bits(got, host)


def test_array_arguments_checked(cl, queue, encoder):
    x = filled(cl, queue, (2, 3, D))
    with pytest.raises(TypeError, match="dtype"):
        encoder.add(queue, filled(cl, queue, (2, 3, D), np.float64))
    with pytest.raises(ValueError, match="the last of size 16"):
        encoder.add(queue, filled(cl, queue, (2, 3, D + 1)))
    with pytest.raises(ValueError, match="positions must be"):
        encoder.add(queue, x, positions=[1, 2, 3])
    with pytest.raises(TypeError, match="clpe.Positions"):
        encoder.add(queue, x, positions=x.base_data)
    with pytest.raises(ValueError, match="disagrees"):
        encoder.add(queue, x, batch=3)
    with pytest.raises(ValueError, match="n = 5"):
        encoder.table(queue, x[0], n=5)
    with pytest.raises(TypeError, match="must be a pyopencl"):
        encoder.table(queue, np.zeros((2, D), np.float32))
    assert_same_bits(x.get(), np.full((2, 3, D), 5, np.float32))


def test_aliasing_and_mismatches(cl, context, queue, encoder):
    x = filled(cl, queue, (2, 3, D))
    with raises_status("CLPE_ERROR_ALIASING"):
        encoder.add_out(queue, clpe.Tensor(x.base_data), clpe.Tensor(x.base_data, offset=4 * D),
                        batch=1, seq=2)
    other_context = cl.Context([context.devices[0]])
    other_queue = cl.CommandQueue(other_context)
    with raises_status("CLPE_ERROR_CONTEXT_MISMATCH"):
        encoder.add(other_queue, x)
    f16 = clpe.Encoder(context, d=D, dtype="f16")
    with pytest.raises(TypeError, match="dtype"):  # an f32 embedding for an f16 encoder
        f16.gather(queue, [[0]], filled(cl, queue, (4, D)), filled(cl, queue, (1, 1, D),
                                                                   np.float16))
    with raises_status("CLPE_ERROR_INDEX_BUFFER_TOO_SMALL"):
        encoder.add(queue, x, positions=clpe.Positions(
            clpe.PositionSource.IDS, cl.array.zeros(queue, 5, np.int64).base_data))
    queue.finish()
    assert_same_bits(x.get(), np.full((2, 3, D), 5, np.float32))


def test_gather_and_pad_positions_checked(cl, queue, encoder):
    out = filled(cl, queue, (1, 3, D))
    table = filled(cl, queue, (4, D), value=1)
    with pytest.raises(ValueError, match="ids have shape"):
        encoder.gather(queue, [[0, 1]], table, out)
    with raises_status("CLPE_ERROR_INVALID_IDS"):
        encoder.gather(queue, cl.array.zeros(queue, 2, np.int32).base_data, table, out)
    positions = filled(cl, queue, (1, 3), np.int64, 9)
    with raises_status("CLPE_ERROR_INVALID_IDS"):
        encoder.pad_positions(queue, cl.array.zeros(queue, 1, np.int32).base_data, positions,
                              pad_id=1)
    with pytest.raises(ValueError, match="pad_id"):
        encoder.pad_positions(queue, [[1, 2, 3]], positions, pad_id=2 ** 31)
    queue.finish()
    assert_same_bits(out.get(), np.full((1, 3, D), 5, np.float32))
    assert positions.get().tolist() == [[9, 9, 9]]
