# SPDX-License-Identifier: Apache-2.0
"""close() from one thread while eight others are inside calls: ctypes lets
other threads run while a call is in the library, so a handle released
under a call would be freed memory to that call. A call either completes
with every element right, or (started after close) raises ValueError."""
import threading
import time

import numpy as np
import pytest

import clpe
from conftest import assert_same_bits

THREADS = 8
SECONDS = 4.0
SHAPE = (1, 512, 8, 64)  # 262144 elements, long enough to be caught mid-call


def _race(make, call, expected_of, seconds=SECONDS):
    """Close objects made by make() while THREADS threads call them, for
    `seconds`; returns (calls completed, calls refused as closed)."""
    rng = np.random.default_rng(37)
    inputs = [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(THREADS)]
    expected = [expected_of(x) for x in inputs]
    completed, refused, failures = [0], [0], []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        obj = make()
        started = threading.Barrier(THREADS + 1)

        def worker(index):
            started.wait()
            while True:
                x = inputs[index].copy()
                try:
                    result = call(obj, x)
                except ValueError as err:
                    assert "closed" in str(err)
                    with lock:
                        refused[0] += 1
                    return
                try:
                    assert_same_bits(result, expected[index])
                except AssertionError as err:
                    with lock:
                        failures.append(str(err))
                    return
                with lock:
                    completed[0] += 1

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        started.wait()
        time.sleep(0.002 + 0.01 * rng.random())  # close somewhere inside the calls
        obj.close()
        for thread in threads:
            thread.join()
        assert not failures, failures[0]
    return completed[0], refused[0]


LLAMA3 = dict(scaling="llama3", factor=8.0, original_max_position=8192.0, low_freq_factor=1.0,
              high_freq_factor=4.0, base=500000.0)
# Positions of SHAPE's 512 tokens in each stream: far apart, so that every
# pair's angle depends on which stream it reads.
STREAM_POSITIONS = np.stack([np.arange(512) * 7 + 1000, np.arange(512) * 13 + 5,
                             np.arange(512) * 3 + 70000])[:, None, :]
# Each rotary configuration: (keywords, positions); made as clpe.HostRope
# and as clpe.HostMRope, its former name for the stream configurations.
ROTARIES = {
    "rope": (LLAMA3, 1000),
    "mrope": (dict(mrope_section=[8, 12, 12], base=1e6), STREAM_POSITIONS),
    "vision": (dict(vision=True), STREAM_POSITIONS[:2]),
}


def _rotary_race(make, positions, seconds=SECONDS):
    reference = make()

    def expected_of(x):
        y = x.copy()
        reference.rotate(y, positions=positions)
        return y

    completed, refused = _race(make, lambda rope, x: rope.rotate(x, positions=positions),
                               expected_of, seconds)
    assert completed > THREADS and refused >= THREADS


@pytest.mark.skipif(not clpe.HAS_ROPE, reason="the loaded libclpe has no rotary calls")
@pytest.mark.parametrize("name", ["HostRope", "HostMRope"])
@pytest.mark.parametrize("rotary", list(ROTARIES))
def test_host_rope_closed_during_calls(name, rotary):
    config, positions = ROTARIES[rotary]
    if rotary == "rope" and name == "HostMRope" or rotary != "rope" and not clpe.HAS_MROPE:
        pytest.skip("no such object")
    cls = getattr(clpe, name)
    _rotary_race(lambda: cls(64, **config), positions, SECONDS if rotary != "vision" else 2.0)


@pytest.mark.skipif(not getattr(clpe, "HAS_MROPE", False),
                    reason="the loaded libclpe has no multimodal rotary calls")
@pytest.mark.parametrize("rotary", list(ROTARIES))
def test_device_rope_closed_during_calls(cl, context, rotary):
    """The device classes: each thread enqueues on a queue of its own and
    waits; an object closed meanwhile must not be freed under a call."""
    config, positions = ROTARIES[rotary]
    queues = {}
    lock = threading.Lock()

    def queue_of_thread():
        with lock:
            return queues.setdefault(threading.get_ident(), cl.CommandQueue(context))

    def rotate(rope, x):
        queue = queue_of_thread()
        device = cl.array.to_device(queue, x)
        rope.rotate(queue, device, positions=positions).wait()
        return device.get()

    def make():
        return clpe.MRope(context, head_dim=64, **config)

    host = make().host()

    def expected_of(x):
        return host.rotate(x.copy(), positions=positions)

    completed, refused = _race(make, rotate, expected_of, seconds=2.0)
    assert completed > THREADS and refused >= THREADS


def test_host_encoder_closed_during_calls():
    shape = (SHAPE[1] * SHAPE[2], SHAPE[3])  # [seq, d]: the same element count

    def make():
        return clpe.HostEncoder(preset="fairseq", d=shape[1])

    reference = make()

    def expected_of(x):
        return reference.add(x.reshape(shape).copy(), positions=77)

    completed, refused = _race(make, lambda enc, x: enc.add(x.reshape(shape), positions=77),
                               expected_of, seconds=2.0)
    assert completed > THREADS and refused >= THREADS


def test_closed_object_refuses_calls_and_closes_once():
    encoder = clpe.HostEncoder(d=8)
    encoder.close()
    encoder.close()
    with pytest.raises(ValueError, match="this encoder has been closed"):
        encoder.table(range(2))
    with clpe.HostEncoder(d=8) as inner:
        pass
    with pytest.raises(ValueError, match="closed"):
        inner.add(np.zeros((1, 8), np.float32))
