# SPDX-License-Identifier: Apache-2.0
"""A user's script: every public class and function of clpe but the rotary
ones (usage_rotary.py), written as a typed program would call them.
tests/test_typing.py checks it with mypy --strict; it is not run."""
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import numpy.typing as npt
import pyopencl as cl
import pyopencl.array as cl_array

import clpe


def host_part() -> Tuple[npt.NDArray[np.float64], int]:
    version: str = clpe.__version__
    number: int = clpe.VERSION_NUMBER
    widest: int = clpe.MAX_D
    path: str = clpe.library_path
    print(version, number, widest, path, clpe.HAS_ROPE, clpe.HAS_MROPE)
    cfg: clpe.Config = clpe.config_preset("fairseq", 16)
    other: clpe.Config = clpe.config_default(16)
    custom = clpe.Config(d=8, base=500.0, freq=clpe.Freq.PAPER, layout=clpe.Layout.SPLIT,
                         dtype=clpe.Dtype.F64, scale=2.0, flags=clpe.Flag(0),
                         padding_position=cfg.padding_position,
                         first_position=other.first_position)
    bf16_bits: np.dtype[Any] = clpe.NUMPY_DTYPES[clpe.Dtype.BF16]
    print(bf16_bits, custom.numpy_dtype)
    table: npt.NDArray[np.float64] = clpe.host_table(range(100, 104), config=custom)
    x = np.ones((2, 4, 8), np.float64)
    added: npt.NDArray[np.float64] = clpe.host_add(x, positions=[100, 0], config=custom)
    embedding = np.zeros((3, 8), np.float32)
    out, bad = clpe.host_gather([[0, 2, 7]], embedding, d=8)
    with clpe.HostEncoder(preset="marian", d=8) as enc:
        rows: npt.NDArray[np.float32] = enc.table([0, 1])
        enc.add(rows[None], positions=None)
        enc.gather(np.array([1], np.int32), embedding)
        print(enc.dtype, enc.config.d)
    try:
        clpe.host_table([0], d=7)
    except clpe.Error as err:
        status: int = err.status
        name: str = err.name
        log: Optional[str] = err.build_log
        opencl: bool = err.is_opencl
        print(clpe.status_name(status), clpe.status_string(status), name, log, opencl)
    print(clpe.PositionSource.IDS, out.shape, added.shape)
    return table, bad


def device_part() -> List[cl.Event]:
    device: cl.Device = clpe.select_device()
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx)
    enc = clpe.Encoder(ctx, device, d=16, dtype=np.float32)
    supported: bool = enc.supports("f32")
    info: Dict[str, int] = enc.launch_info()
    held: clpe.Config = enc.library_config()
    host: clpe.HostEncoder = enc.host()
    print(supported, info, held, host)
    rows = cl_array.empty(queue, (5, 16), np.float32)
    x = cl_array.to_device(queue, np.ones((2, 3, 16), np.float32))
    out = cl_array.empty_like(x)
    raw = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size=2 * 3 * 16 * 4)
    starts = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                       hostbuf=np.array([0, 5], np.int64))
    ids = cl_array.to_device(queue, np.array([[1, 0, 3]], np.int32))
    embedding = cl_array.to_device(queue, np.ones((4, 16), np.float32))
    gathered = cl_array.empty(queue, (1, 3, 16), np.float32)
    positions = cl_array.empty(queue, (1, 3), np.int64)
    events = [
        enc.table(queue, rows, start=2 ** 40),
        enc.add(queue, x, positions=[0, 5]),
        enc.add_out(queue, x, out, positions=[[0, 1, 2], [5, 6, 7]]),
        enc.table(queue, clpe.Tensor(raw, offset=0, row_pitch=16), n=6),
        enc.add(queue, raw, batch=2, seq=3,
                positions=clpe.Positions(clpe.PositionSource.PER_SEQUENCE, starts)),
        enc.gather(queue, ids, embedding, gathered),
        enc.pad_positions(queue, ids, positions, pad_id=0, first_position=2, pad_position=1),
    ]
    other: clpe.Encoder = enc.create_like(dtype=np.float16, d=16)
    words, options = clpe.device_words(enc)
    header: str = clpe.device_header_path()
    folder: str = clpe.device_include_dir()
    source: str = clpe.device_source()
    print(words.size, options, header, folder, len(source))
    other.close()
    enc.close()
    return events


if __name__ == "__main__":
    host_part()
    device_part()
