# SPDX-License-Identifier: Apache-2.0
"""A user's script: the rotary classes and calls of clpe, as a typed
program would call them. tests/test_typing.py checks it with mypy --strict;
it is not run."""
from typing import Any, Dict, Optional

import numpy as np
import numpy.typing as npt
import pyopencl as cl
import pyopencl.array as cl_array

import clpe


def rotary(ctx: cl.Context, queue: cl.CommandQueue) -> None:
    rope = clpe.Rope(ctx, head_dim=8, base=500000.0, pairing=clpe.RopePairing.HALF_SPLIT,
                     scaling=clpe.RopeScaling.LINEAR, factor=2.0)
    q = np.zeros((1, 4, 2, 8), np.float32)
    q_device = cl_array.to_device(queue, q)
    done: cl.Event = rope.rotate(queue, q_device, positions=10)
    done.wait()
    host = clpe.HostRope(8, base=500000.0, scaling="linear", factor=2.0)
    rotated: npt.NDArray[np.float32] = host.rotate(q.copy(), positions=10)
    cos, sin = host.cache(range(10, 14))
    print(rotated.shape, cos.shape, sin.shape, rope.frequencies())

    key = np.zeros((4, 2, 2, 8), np.float32)
    value = np.zeros_like(key)
    slots = np.array([5, 0, -1], np.int64)
    qkv = np.zeros((3, 48), np.float32)
    d_key = cl_array.to_device(queue, key)
    d_value = cl_array.to_device(queue, value)
    d_qkv = cl_array.to_device(queue, qkv)
    kv_done: cl.Event = clpe.rope_kv(rope, queue, d_key, d_value, slots, qkv=d_qkv, q_heads=2,
                                     positions=7)
    kv_done.wait()
    clpe.host_rope_kv(rope.host(), key, value, slots, qkv=qkv, q_heads=2, positions=7)

    mrope = clpe.MRope(ctx, head_dim=16, mrope_section=[2, 3, 3])
    positions = np.zeros((3, 3), np.int64)
    x = np.zeros((1, 3, 1, 16), np.float32)
    mrope.rotate(queue, cl_array.to_device(queue, x), positions=positions).wait()
    with clpe.HostMRope(16, mrope_section=[2, 3, 3]) as host_mrope:
        host_mrope.rotate(x.copy(), positions=positions)
    print(clpe.MropeLadder.ONE_LADDER)

    config: Dict[str, Any] = {"model_type": "llama", "hidden_size": 64,
                              "num_attention_heads": 4, "rope_theta": 500000.0}
    from_config: clpe.Rope = clpe.Rope.from_hf_config(ctx, config, dtype="f32")
    host_from_config: clpe.HostRope = clpe.HostRope.from_hf_config(config)
    mapped: Dict[str, Any] = clpe.hf_rope_settings(config).settings
    try:
        clpe.HostRope.from_hf_config("config.json")
    except clpe.ConfigError as refused:
        field: str = refused.field
        print(field)
    except clpe.Error as failed:
        detail: Optional[str] = failed.detail
        print(detail)
    print(from_config.head_dim, host_from_config.rotary_dim, mapped)
