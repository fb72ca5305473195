# SPDX-License-Identifier: Apache-2.0
"""clpe's rotary embedding against the real framework code.

Hugging Face transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb
(default, linear, dynamic, yarn, llama3), Phi3RotaryEmbedding (longrope),
GPTNeoXRotaryEmbedding (partial rotary) and GPT-J's interleaved
rotate_every_two run as shipped; clpe runs through its host emulation
(clpe_host_rope, the bits every device writes) in a minimal ctypes wrapper.

"exact" below is the rotation of the same float inputs by the angle p * w_i,
where w_i is the exact value of Hugging Face's formula for the scaling
(transformers 4.57, evaluated in mpmath at 256 bits: the frequencies clpe
computes in MPFR) and the amplitude m is Hugging Face's attention_scaling (a
Python float). The frameworks evaluate the same formula in float32 and take
cos and sin of a float32 phase, so they are not exact; the test is, per
element and position:

    |clpe - exact| <= 2^-22 * hypot(a, b) * m                  (clpe's bound)
    |clpe - framework| <= |framework - exact| + 2^-22 * hypot(a, b) * m

and clpe's float64 rotation equals a float64 transcription of the same
formulas to float64 rounding. transformers 4.49 is the newest release that
imports with Debian 12's torch 1.13; where its YaRN differs from 4.57 the
configurations below are ones both versions compute alike (the 4.57-only
parameters are covered by tests/test_rope_freq.c).

Environment: CLPE_LIBRARY (default build/libclpe.so). Outside CI a missing
torch or transformers skips the module; with CI set it fails.
"""
import ctypes
import importlib
import math
import os
from pathlib import Path

import numpy as np
import pytest


def need(module):
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module)


torch = need("torch")
transformers = need("transformers")
mpmath = need("mpmath")
from transformers.models.gpt_neox import modeling_gpt_neox  # noqa: E402
from transformers.models.gptj import modeling_gptj  # noqa: E402
from transformers.models.llama import modeling_llama  # noqa: E402
from transformers.models.phi3 import modeling_phi3  # noqa: E402

mp = mpmath.mp.clone() if hasattr(mpmath.mp, "clone") else mpmath.mp
mp.prec = 256

REPOSITORY = Path(__file__).resolve().parents[2]
F32_BOUND = 2.0 ** -22  # clpe's float32 rotary bound, relative to hypot(a, b) * m

# ---- minimal ctypes wrapper (include/clpe.h, "Rotary position embedding") ----

HALF_SPLIT, INTERLEAVED = 0, 1
F32, F64 = 0, 3
SCALING = {"default": 0, "linear": 1, "dynamic": 2, "yarn": 3, "llama3": 4, "longrope": 5}
POSITIONS_IDS = 2
c_double_p = ctypes.POINTER(ctypes.c_double)


class RopeConfig(ctypes.Structure):
    _fields_ = [
        ("head_dim", ctypes.c_uint32),
        ("rotary_dim", ctypes.c_uint32),
        ("base", ctypes.c_double),
        ("pairing", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("scaling", ctypes.c_int),
        ("factor", ctypes.c_double),
        ("original_max_position", ctypes.c_double),
        ("low_freq_factor", ctypes.c_double),
        ("high_freq_factor", ctypes.c_double),
        ("beta_fast", ctypes.c_double),
        ("beta_slow", ctypes.c_double),
        ("mscale", ctypes.c_double),
        ("mscale_all_dim", ctypes.c_double),
        ("no_truncate", ctypes.c_int32),
        ("attention_factor", ctypes.c_double),
        ("seq_len", ctypes.c_uint64),
        ("short_factor", c_double_p),
        ("long_factor", c_double_p),
        ("frequencies", c_double_p),
        ("reserved", ctypes.c_uint64 * 4),
    ]


class HostRopeTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("heads", ctypes.c_size_t),
        ("head_pitch", ctypes.c_size_t),
        ("row_pitch", ctypes.c_size_t),
        ("batch_pitch", ctypes.c_size_t),
        ("reserved", ctypes.c_uint64 * 2),
    ]


def load_library():
    path = os.environ.get("CLPE_LIBRARY") or str(REPOSITORY / "build" / "libclpe.so")
    lib = ctypes.CDLL(path)
    lib.clpe_rope_config_default.restype = RopeConfig
    lib.clpe_rope_config_default.argtypes = [ctypes.c_uint32]
    lib.clpe_rope_create_host.restype = ctypes.c_void_p
    lib.clpe_rope_create_host.argtypes = [ctypes.POINTER(RopeConfig), ctypes.POINTER(ctypes.c_int)]
    lib.clpe_rope_release.argtypes = [ctypes.c_void_p]
    lib.clpe_rope_get_frequencies.argtypes = [ctypes.c_void_p, c_double_p, ctypes.c_size_t, c_double_p]
    lib.clpe_host_rope.argtypes = [
        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
        ctypes.POINTER(HostRopeTensor), ctypes.POINTER(HostRopeTensor),
        ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.c_uint32,
    ]
    lib.clpe_host_rope_cache.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_size_t,
                                         ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.clpe_status_string.restype = ctypes.c_char_p
    lib.clpe_status_string.argtypes = [ctypes.c_int]
    return lib


@pytest.fixture(scope="module")
def lib():
    return load_library()


def check(lib, status, what):
    assert status == 0, f"{what}: {lib.clpe_status_string(status).decode()}"


class HostRope:
    """One clpe rotary object for the host emulation."""

    def __init__(self, lib, case, dtype):
        self.lib, self.case = lib, case
        cfg = lib.clpe_rope_config_default(case.head_dim)
        cfg.rotary_dim = case.rotary_dim
        cfg.base = case.base
        cfg.pairing = case.pairing
        cfg.dtype = dtype
        cfg.scaling = SCALING[case.scaling]
        self.keep = []  # arrays the config points into
        for name, value in case.clpe.items():
            if name in ("short_factor", "long_factor"):
                array = np.ascontiguousarray(value, dtype=np.float64)
                self.keep.append(array)
                value = array.ctypes.data_as(c_double_p)
            setattr(cfg, name, value)
        status = ctypes.c_int(0)
        self.handle = lib.clpe_rope_create_host(ctypes.byref(cfg), ctypes.byref(status))
        check(lib, status.value, f"{case.name}: clpe_rope_create_host")

    def close(self):
        self.lib.clpe_rope_release(self.handle)

    def frequencies(self):
        n = self.case.rotary_dim // 2
        w = (ctypes.c_double * n)()
        m = ctypes.c_double(0)
        check(self.lib, self.lib.clpe_rope_get_frequencies(self.handle, w, n, ctypes.byref(m)),
              "clpe_rope_get_frequencies")
        return np.array(w[:]), m.value

    def rotate(self, q, k, positions, layout):
        """q, k: C-contiguous [batch, heads, seq, d] ("bhsd") or [batch, seq,
        heads, d] ("bshd"), rotated in place; positions int64 [batch, seq]."""
        def tensor(x):
            if layout == "bhsd":
                b, h, s, d = x.shape
                return HostRopeTensor(x.ctypes.data, h, s * d, d, h * s * d)
            b, s, h, d = x.shape
            return HostRopeTensor(x.ctypes.data, h, d, h * d, s * h * d)
        tq, tk = tensor(q), tensor(k)
        positions = np.ascontiguousarray(positions, dtype=np.int64)
        batch, seq = positions.shape
        status = self.lib.clpe_host_rope(
            self.handle, batch, seq, ctypes.byref(tq), ctypes.byref(tk), POSITIONS_IDS, 0,
            positions.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), 0)
        check(self.lib, status, f"{self.case.name}: clpe_host_rope")

    def cache(self, position):
        cos = np.zeros(self.case.rotary_dim, np.float32)
        sin = np.zeros(self.case.rotary_dim, np.float32)
        check(self.lib, self.lib.clpe_host_rope_cache(self.handle, position, 1, cos.ctypes.data,
                                                      sin.ctypes.data, 0), "clpe_host_rope_cache")
        return cos, sin


# ---- Hugging Face's frequency formulas (transformers 4.57 modeling_rope_utils.py) ----
# One transcription, evaluated twice: with M = math on Python floats (the
# float64 transcription) and with M = mp on mpmath numbers (exact at 256 bits).

def frequencies(case, M, num):
    c = case.clpe
    dim = case.rotary_dim
    base = num(case.base)
    if case.scaling == "dynamic":
        # seq_len = max(seq_len, max_position_embeddings)
        # base = base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))
        max_pos = num(c["original_max_position"])
        seq_len = max(num(c["seq_len"]), max_pos)
        factor = num(c["factor"])
        base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (num(dim) / (dim - 2))
    # inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    inv_freq = [1 / base ** (num(2 * i) / dim) for i in range(dim // 2)]
    if case.scaling == "linear":
        return [w / num(c["factor"]) for w in inv_freq]  # inv_freq /= factor
    if case.scaling == "yarn":
        factor = num(c["factor"])
        beta_fast = num(c.get("beta_fast") or 32)
        beta_slow = num(c.get("beta_slow") or 1)
        max_pos = num(c["original_max_position"])

        def find_correction_dim(num_rotations):
            # (dim * math.log(max_position_embeddings / (num_rotations * 2 * math.pi))) / (2 * math.log(base))
            return (dim * M.log(max_pos / (num_rotations * 2 * M.pi))) / (2 * M.log(base))
        low, high = find_correction_dim(beta_fast), find_correction_dim(beta_slow)
        if not c.get("no_truncate"):
            low, high = M.floor(low), M.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high = num(float(high) + 0.001)  # a Python float addition in Hugging Face
        out = []
        for i, w in enumerate(inv_freq):
            ramp = min(max((i - low) / num(high - low), 0), 1)
            extrapolation_factor = 1 - ramp
            # inv_freq_interpolation * (1 - extrapolation_factor) + inv_freq_extrapolation * extrapolation_factor
            out.append(w / factor * (1 - extrapolation_factor) + w * extrapolation_factor)
        return out
    if case.scaling == "llama3":
        factor, low_ff, high_ff = (num(c[k]) for k in ("factor", "low_freq_factor", "high_freq_factor"))
        old = num(c["original_max_position"])
        out = []
        for w in inv_freq:
            wavelen = 2 * M.pi / w
            if wavelen > old / low_ff:
                out.append(w / factor)
            elif wavelen < old / high_ff:
                out.append(w)
            else:
                smooth = (old / wavelen - low_ff) / (high_ff - low_ff)
                out.append((1 - smooth) * w / factor + smooth * w)
        return out
    if case.scaling == "longrope":
        # ext_factors = long_factor if seq_len > original_max_position_embeddings else short_factor
        # inv_freq = 1.0 / (ext_factors * base**inv_freq_shape)
        key = "long_factor" if c["seq_len"] > c["original_max_position"] else "short_factor"
        return [w / num(e) for w, e in zip(inv_freq, c[key])]
    return inv_freq


def amplitude(case):
    """attention_factor as Hugging Face computes it (Python floats)."""
    c = case.clpe
    if case.scaling == "yarn":
        if c.get("attention_factor"):
            return c["attention_factor"]

        def get_mscale(scale, mscale=1):
            return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0
        if c.get("mscale") and c.get("mscale_all_dim"):
            return float(get_mscale(c["factor"], c["mscale"]) / get_mscale(c["factor"], c["mscale_all_dim"]))
        return get_mscale(c["factor"])
    if case.scaling == "longrope":
        if c.get("attention_factor"):
            return c["attention_factor"]
        factor = c["factor"]
        return 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(c["original_max_position"]))
    return 1.0


# ---- the cases ----

POSITIONS = [0, 1, 2, 100, 4095, 4096, 8191, 65535, 131071, 524287, 1000003, 1048575,
             16777215, 16777217, 16777259]
HEADS_Q, HEADS_K = 2, 1  # grouped-query attention: queries and keys with their own heads


class Case:
    def __init__(self, name, framework, head_dim, base, scaling="default", rotary_dim=None,
                 pairing=HALF_SPLIT, hf_scaling=None, max_positions=2048, clpe=None, positions=POSITIONS):
        self.name, self.framework, self.head_dim, self.base = name, framework, head_dim, base
        self.scaling, self.pairing, self.hf_scaling = scaling, pairing, hf_scaling
        self.rotary_dim = rotary_dim or head_dim
        self.max_positions = max_positions
        self.clpe = dict(clpe or {})
        self.positions = positions
        if scaling in ("dynamic", "longrope"):
            self.clpe["seq_len"] = max(positions) + 1  # Hugging Face: torch.max(position_ids) + 1

    def __repr__(self):
        return self.name


PHI3_SHORT = [1.0 + 0.02 * i for i in range(48)]
PHI3_LONG = [1.0 + 0.75 * i for i in range(48)]

CASES = [
    Case("llama2-default", "llama", 64, 10000.0),
    Case("llama3-default", "llama", 128, 500000.0),
    Case("linear", "llama", 64, 10000.0, "linear", hf_scaling={"rope_type": "linear", "factor": 4.0},
         clpe={"factor": 4.0}),
    Case("dynamic", "llama", 64, 10000.0, "dynamic", hf_scaling={"rope_type": "dynamic", "factor": 2.0},
         max_positions=4096, clpe={"factor": 2.0, "original_max_position": 4096}),
    Case("dynamic-short", "llama", 64, 10000.0, "dynamic", hf_scaling={"rope_type": "dynamic", "factor": 2.0},
         max_positions=4096, clpe={"factor": 2.0, "original_max_position": 4096}, positions=[0, 7, 100, 4095]),
    # YaRN as 4.49 and 4.57 both compute it: no original_max_position_embeddings in
    # rope_scaling (both take max_position_embeddings), truncation, no mscale
    Case("yarn", "llama", 64, 10000.0, "yarn",
         hf_scaling={"rope_type": "yarn", "factor": 8.0, "beta_fast": 32.0, "beta_slow": 1.0},
         max_positions=4096, clpe={"factor": 8.0, "original_max_position": 4096, "beta_fast": 32.0,
                                   "beta_slow": 1.0}),
    Case("llama3.1", "llama", 128, 500000.0, "llama3",
         hf_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192},
         max_positions=131072, clpe={"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                     "original_max_position": 8192}),
    Case("phi3-longrope-long", "phi3", 96, 10000.0, "longrope",
         hf_scaling={"type": "longrope", "short_factor": PHI3_SHORT, "long_factor": PHI3_LONG},
         max_positions=131072, clpe={"factor": 131072 / 4096, "original_max_position": 4096,
                                     "short_factor": PHI3_SHORT, "long_factor": PHI3_LONG}),
    Case("phi3-longrope-short", "phi3", 96, 10000.0, "longrope",
         hf_scaling={"type": "longrope", "short_factor": PHI3_SHORT, "long_factor": PHI3_LONG},
         max_positions=131072, clpe={"factor": 131072 / 4096, "original_max_position": 4096,
                                     "short_factor": PHI3_SHORT, "long_factor": PHI3_LONG},
         positions=[0, 5, 1000, 4095]),
    Case("gpt-neox-partial", "neox", 128, 10000.0, rotary_dim=32),
    Case("gpt-j-interleaved", "gptj", 96, 10000.0, rotary_dim=64, pairing=INTERLEAVED),
]


# ---- the frameworks, as shipped ----

def hf_rotate(case, q, k, positions):
    """q, k float32 tensors [batch, heads, seq, d] (GPT-J: [batch, seq, heads,
    d]); returns the framework's rotated q, k and its inv_freq, amplitude."""
    position_ids = torch.tensor(positions, dtype=torch.int64)
    heads = q.shape[1] if case.framework != "gptj" else q.shape[2]
    common = dict(hidden_size=heads * case.head_dim, num_attention_heads=heads,
                  num_key_value_heads=heads, max_position_embeddings=case.max_positions)
    if case.framework == "llama":
        config = transformers.LlamaConfig(head_dim=case.head_dim, rope_theta=case.base,
                                          rope_scaling=case.hf_scaling, **common)
        rotary = modeling_llama.LlamaRotaryEmbedding(config)
        cos, sin = rotary(q, position_ids)
        q_out, k_out = modeling_llama.apply_rotary_pos_emb(q, k, cos, sin)
    elif case.framework == "phi3":
        config = transformers.Phi3Config(rope_theta=case.base, rope_scaling=case.hf_scaling,
                                         original_max_position_embeddings=4096, **common)
        rotary = modeling_phi3.Phi3RotaryEmbedding(config)
        cos, sin = rotary(q, position_ids)
        q_out, k_out = modeling_phi3.apply_rotary_pos_emb(q, k, cos, sin)
    elif case.framework == "neox":
        config = transformers.GPTNeoXConfig(rotary_pct=case.rotary_dim / case.head_dim,
                                            rotary_emb_base=case.base, **common)
        rotary = modeling_gpt_neox.GPTNeoXRotaryEmbedding(config)
        cos, sin = rotary(q, position_ids)
        q_out, k_out = modeling_gpt_neox.apply_rotary_pos_emb(q, k, cos, sin)
    else:
        return gptj_rotate(case, q, k, position_ids)
    return q_out, k_out, rotary.inv_freq.double().numpy(), float(rotary.attention_scaling)


def gptj_sincos(rotary_dim, position_ids):
    """modeling_gptj.create_sinusoidal_positions(num_pos, dim), row by row for
    the wanted positions (its table would need 2^24 rows here):
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.int64) / dim))
        sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(num_pos, dtype=torch.int64).float(), inv_freq).float()
        return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1)"""
    dim = rotary_dim
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.int64) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", position_ids.reshape(-1).float(), inv_freq).float()
    return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1), inv_freq


def gptj_rotate(case, q, k, position_ids):
    """GPTJAttention.forward: sincos = embed_positions[position_ids];
    sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1);
    q_rot = query[:, :, :, : self.rotary_dim]; q_pass = query[:, :, :, self.rotary_dim :]
    q_rot = apply_rotary_pos_emb(q_rot, sin, cos); query = torch.cat([q_rot, q_pass], dim=-1)"""
    table, inv_freq = gptj_sincos(case.rotary_dim, position_ids)
    # the row transcription is the shipped function where its table fits
    small = modeling_gptj.create_sinusoidal_positions(4096, case.rotary_dim)
    rows = position_ids.reshape(-1) < 4096
    assert torch.equal(table[rows], small[position_ids.reshape(-1)[rows]])
    sincos = table.reshape(position_ids.shape[0], position_ids.shape[1], -1)
    sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
    r = case.rotary_dim
    out = []
    for x in (q, k):
        x_rot = modeling_gptj.apply_rotary_pos_emb(x[:, :, :, :r], sin, cos)
        out.append(torch.cat([x_rot, x[:, :, :, r:]], dim=-1))
    return out[0], out[1], inv_freq.double().numpy(), 1.0


# ---- exact rotation ----

def pair_index(case):
    """(first, second) element of each pair within the rotated dims."""
    n = case.rotary_dim // 2
    if case.pairing == INTERLEAVED:
        return np.arange(n) * 2, np.arange(n) * 2 + 1
    return np.arange(n), np.arange(n) + n


def exact_cos_sin(w_exact, positions):
    """cos, sin of p * w_i, exact then rounded to float64: [positions, pairs]."""
    cos = np.empty((len(positions), len(w_exact)))
    sin = np.empty_like(cos)
    for j, p in enumerate(positions):
        for i, w in enumerate(w_exact):
            theta = mp.mpf(int(p)) * w
            cos[j, i], sin[j, i] = float(mp.cos(theta)), float(mp.sin(theta))
    return cos, sin


def rotation(x, cos, sin, m, case, seq_axis):
    """Rotate x (float64 [.., seq, .., d] with seq on seq_axis) by cos, sin
    [seq, pairs] and amplitude m in float64; returns the result and
    hypot(a, b) of each element's pair."""
    first, second = pair_index(case)
    x = np.moveaxis(x, seq_axis, -2)  # [..., seq, d]
    a, b = x[..., first], x[..., second]
    out = x.copy()
    out[..., first] = m * (a * cos - b * sin)
    out[..., second] = m * (a * sin + b * cos)
    size = np.zeros_like(x)
    size[..., first] = size[..., second] = np.hypot(a, b)
    return np.moveaxis(out, -2, seq_axis), np.moveaxis(size, -2, seq_axis)


def inputs(case, dtype, seed):
    rng = np.random.default_rng(seed)
    seq = len(case.positions)
    if case.framework == "gptj":  # [batch, seq, heads, d]
        shapes = [(1, seq, HEADS_Q, case.head_dim), (1, seq, HEADS_K, case.head_dim)]
    else:  # [batch, heads, seq, d]
        shapes = [(1, HEADS_Q, seq, case.head_dim), (1, HEADS_K, seq, case.head_dim)]
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_matches_the_framework(lib, case):
    positions = np.array([case.positions], dtype=np.int64)
    q, k = inputs(case, np.float32, seed=len(case.name))
    layout, seq_axis = ("bshd", 1) if case.framework == "gptj" else ("bhsd", 2)

    # the framework, on copies
    q_fw, k_fw, fw_inv_freq, fw_amplitude = hf_rotate(case, torch.from_numpy(q.copy()),
                                                      torch.from_numpy(k.copy()), positions)

    rope = HostRope(lib, case, F32)
    try:
        w_clpe, m = rope.frequencies()
        q_clpe, k_clpe = q.copy(), k.copy()
        rope.rotate(q_clpe, k_clpe, positions, layout)
    finally:
        rope.close()

    # the same configuration: clpe's frequencies are the exact formula,
    # correctly rounded; the framework's float32 ones are close to them; the
    # amplitude is the framework's to the bit
    w_exact = frequencies(case, mp, mp.mpf)
    assert list(w_clpe) == [float(w) for w in w_exact]
    assert np.allclose(fw_inv_freq, w_clpe, rtol=2.0 ** -16, atol=0)
    assert m == fw_amplitude == amplitude(case)

    cos, sin = exact_cos_sin(w_exact, case.positions)
    r = case.rotary_dim
    for x, x_fw, x_clpe in ((q, q_fw, q_clpe), (k, k_fw, k_clpe)):
        x_fw = x_fw.numpy()
        exact, size = rotation(x[..., :r].astype(np.float64), cos, sin, m, case, seq_axis)
        bound = F32_BOUND * size * m
        clpe_error = np.abs(x_clpe[..., :r] - exact)
        fw_error = np.abs(x_fw[..., :r] - exact)
        assert np.all(clpe_error <= bound), f"{case.name}: clpe {np.max(clpe_error / bound):.3g} x its bound"
        assert np.all(np.abs(x_clpe[..., :r] - x_fw[..., :r]) <= fw_error + bound)
        # the dimensions past rotary_dim are untouched by both
        assert np.array_equal(x_clpe[..., r:], x[..., r:])
        assert np.array_equal(x_fw[..., r:], x[..., r:])


def transcription_ulps(case):
    """Relative error budget (in units of 2^-52) of the float64 frequency
    transcription, as in tests/test_rope_freq.c: ln(base)/2 from the rounded
    exponent 2i/dim through pow, 4 for pow, division and scaling, and
    factor + 1 for the YaRN and Llama 3 blends."""
    log_base = math.log(case.base)
    if case.scaling == "dynamic":  # the grown base: w_last = base^(-(dim - 2) / dim)
        log_base = -math.log(frequencies(case, math, float)[-1]) * case.rotary_dim / (case.rotary_dim - 2)
    blend = case.clpe["factor"] + 1 if case.scaling in ("yarn", "llama3") else 0
    return 4 + log_base / 2 + blend


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_float64_is_the_formula(lib, case):
    positions = np.array([case.positions], dtype=np.int64)
    q, k = inputs(case, np.float64, seed=len(case.name) + 1)
    layout, seq_axis = ("bshd", 1) if case.framework == "gptj" else ("bhsd", 2)
    rope = HostRope(lib, case, F64)
    try:
        w_clpe, m = rope.frequencies()
        q_clpe, k_clpe = q.copy(), k.copy()
        rope.rotate(q_clpe, k_clpe, positions, layout)
    finally:
        rope.close()
    assert m == amplitude(case)
    # the float64 transcription: theta = p * w (float64), numpy cos and sin
    w64 = np.array(frequencies(case, math, float))
    theta = np.array(case.positions, dtype=np.float64)[:, None] * w64[None, :]
    r = case.rotary_dim
    eps = 2.0 ** -52
    # theta carries |theta| * (budget + 1/2) * eps; cos, sin, the products
    # and the sums a few eps of hypot(a, b) * m
    angle_error = np.abs(theta) * (transcription_ulps(case) + 1) * eps
    for x, x_clpe in ((q, q_clpe), (k, k_clpe)):
        expected, size = rotation(x[..., :r], np.cos(theta), np.sin(theta), m, case, seq_axis)
        first, _ = pair_index(case)
        per_pair = np.zeros((len(case.positions), r))
        per_pair[:, first] = angle_error
        per_pair[:, pair_index(case)[1]] = angle_error
        shape = [1] * x.ndim
        shape[seq_axis], shape[-1] = len(case.positions), r
        tolerance = size * m * (per_pair.reshape(shape) + 8 * eps)
        assert np.all(np.abs(x_clpe[..., :r] - expected) <= tolerance), case.name
        assert np.array_equal(x_clpe[..., r:], x[..., r:])


PRECISION_POSITIONS = [4095, 131071, 1048575, 16777217]


def test_precision_table(lib, capsys):
    """The README's precision table: max |cos/sin error| of Hugging Face's
    float32 Llama RoPE (head_dim 128, base 500000) and of clpe's float32
    cos/sin cache against the exact values (run with -s to see it)."""
    case = Case("llama3-default", "llama", 128, 500000.0, positions=PRECISION_POSITIONS)
    config = transformers.LlamaConfig(hidden_size=128, num_attention_heads=1, head_dim=128,
                                      rope_theta=500000.0, max_position_embeddings=131072)
    rotary = modeling_llama.LlamaRotaryEmbedding(config)
    x = torch.zeros(1, 1, len(PRECISION_POSITIONS), 128)
    fw_cos, fw_sin = rotary(x, torch.tensor([PRECISION_POSITIONS]))
    cos, sin = exact_cos_sin(frequencies(case, mp, mp.mpf), PRECISION_POSITIONS)
    rope = HostRope(lib, case, F32)
    rows = []
    try:
        for j, p in enumerate(PRECISION_POSITIONS):
            c, s = rope.cache(p)
            exact = np.concatenate([cos[j], cos[j], sin[j], sin[j]])
            fw = np.concatenate([fw_cos[0, j].numpy(), fw_sin[0, j].numpy()])
            ours = np.concatenate([c, s])
            rows.append((p, np.max(np.abs(fw - exact)), np.max(np.abs(ours - exact))))
    finally:
        rope.close()
    with capsys.disabled():
        print("\nposition  Hugging Face float32  clpe float32")
        for p, fw_error, clpe_error in rows:
            print(f"{p:>9}  {fw_error:20.2e}  {clpe_error:12.2e}")
    for p, fw_error, clpe_error in rows:
        assert clpe_error <= F32_BOUND
        assert fw_error > clpe_error
