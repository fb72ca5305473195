# SPDX-License-Identifier: Apache-2.0
"""clpe's multimodal rotary against Hugging Face's own Qwen2-VL code.

The language model: Qwen2VLRotaryEmbedding (the cos and sin of three
position streams, with the rope_scaling of the config) and
apply_multimodal_rotary_pos_emb (mrope_section picks each pair's stream),
run as shipped in transformers 4.49.0. The vision tower: the model's own
rot_pos_emb (VisionRotaryEmbedding(head_dim / 2) indexed by every patch's
row and column), then apply_rotary_pos_emb_vision. clpe runs through the
Python package's host emulation (clpe.HostRope configured with position
streams: the bits every device writes).

"exact" is the rotation of the same float inputs by p_j * w_i, p_j the
position of the stream that pair i turns with and w_i the exact value of
Hugging Face's frequency formula for the scaling (the mpmath transcription
of tests/frameworks/test_rope_frameworks.py, at 256 bits). Per element:

    |clpe - exact| <= 2^-22 * hypot(a, b) * m                  (clpe's bound)
    |clpe - framework| <= |framework - exact| + 2^-22 * hypot(a, b) * m

and clpe's float64 rotation equals a float64 transcription of the same
formulas to float64 rounding.

Dynamic NTK is left out: Qwen2VLRotaryEmbedding of 4.49 reads
self.rope_kwargs, which it never sets, once positions grow past
max_position_embeddings. LongRoPE is left out too: Qwen2-VL computes it
once, at creation, without the call's length.

The clpe package is the installed one (scripts/test.sh installs ./python;
CLPE_LIBRARY may name another libclpe). Outside CI a missing clpe, torch or
transformers skips the module; with CI set it fails.
"""
import math

import numpy as np
import pytest

from test_rope_frameworks import (F32_BOUND, Case, amplitude, exact_cos_sin, frequencies,
                                  mp, need, transcription_ulps)

torch = need("torch")
transformers = need("transformers")
from transformers.models.qwen2_vl import modeling_qwen2_vl  # noqa: E402

clpe = need("clpe")
if not getattr(clpe, "HAS_MROPE", False):
    pytest.skip("the loaded clpe has no multimodal rotary", allow_module_level=True)

HEADS_Q, HEADS_K = 2, 1


def qwen2_vl_positions(offsets, text=3, grid=(2, 3)):
    """position_ids [3, tokens] as Qwen2-VL's get_rope_index lays them out,
    for segments of `text` text tokens then one image of grid (rows,
    columns) after merging: text tokens have one position in all three
    streams, an image's patches the temporal position of its start and
    height and width positions counted from there. Each segment starts at
    one of `offsets` (far apart, to reach the positions float32 loses)."""
    t, h, w = [], [], []
    for start in offsets:
        for s in range(text):
            t.append(start + s)
            h.append(start + s)
            w.append(start + s)
        first = start + text
        for r in range(grid[0]):
            for c in range(grid[1]):
                t.append(first)
                h.append(first + r)
                w.append(first + c)
    return np.array([t, h, w], dtype=np.int64)


OFFSETS = [0, 4090, 1000000, 16777200]


class MCase:
    def __init__(self, name, head_dim, base, section, scaling="default", hf_scaling=None,
                 clpe_config=None, max_positions=32768):
        self.name, self.section = name, section
        self.case = Case(name, "qwen2vl", head_dim, base, scaling, hf_scaling=hf_scaling,
                         max_positions=max_positions, clpe=clpe_config)
        self.hf_scaling = dict(hf_scaling or {"type": "mrope"}, mrope_section=list(section))

    def __repr__(self):
        return self.name

    def host(self, dtype):
        c = self.case
        keywords = {k: v for k, v in c.clpe.items() if k != "seq_len"}
        return clpe.HostRope(c.head_dim, mrope_section=self.section, base=c.base,
                             scaling=c.scaling, dtype=dtype, **keywords)


CASES = [
    # Qwen2-VL 7B: head_dim 128, rope_theta 1e6, mrope_section [16, 24, 24]
    MCase("qwen2-vl-7b", 128, 1000000.0, [16, 24, 24]),
    MCase("qwen2-vl-2b-like", 64, 1000000.0, [8, 12, 12]),
    MCase("linear", 64, 1000000.0, [8, 12, 12], "linear",
          {"type": "linear", "factor": 4.0}, {"factor": 4.0}),
    MCase("yarn", 64, 1000000.0, [8, 12, 12], "yarn",
          {"type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0},
          {"factor": 4.0, "original_max_position": 32768, "beta_fast": 32.0, "beta_slow": 1.0}),
    MCase("llama3", 128, 500000.0, [16, 24, 24], "llama3",
          {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192},
          {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position": 8192}),
]


def stream_of_pairs(section):
    return np.repeat(np.arange(len(section)), section)


def hf_text(mcase, q, k, position_ids):
    """q, k float32 [1, heads, tokens, d]; position_ids [3, tokens]."""
    c = mcase.case
    config = transformers.Qwen2VLConfig(
        hidden_size=HEADS_Q * c.head_dim, num_attention_heads=HEADS_Q,
        num_key_value_heads=HEADS_K, rope_theta=c.base, rope_scaling=dict(mcase.hf_scaling),
        max_position_embeddings=c.max_positions)
    rotary = modeling_qwen2_vl.Qwen2VLRotaryEmbedding(config)
    cos, sin = rotary(q, torch.from_numpy(position_ids[:, None, :]))
    q_out, k_out = modeling_qwen2_vl.apply_multimodal_rotary_pos_emb(
        q, k, cos, sin, list(mcase.section))
    return q_out.numpy(), k_out.numpy(), rotary.inv_freq.double().numpy(), \
        float(rotary.attention_scaling)


def exact_by_stream(w_exact, streams, positions):
    """cos, sin [tokens, pairs] of positions[stream of pair i] * w_i, exact."""
    cos = np.empty((positions.shape[1], len(w_exact)))
    sin = np.empty_like(cos)
    for j in range(positions.shape[0]):
        pairs = np.nonzero(streams == j)[0]
        c, s = exact_cos_sin([w_exact[i] for i in pairs], positions[j])
        cos[:, pairs], sin[:, pairs] = c, s
    return cos, sin


def half_split_rotation(x, cos, sin, m):
    """x float64 [..., tokens, d] rotated by cos, sin [tokens, d/2] and m;
    with hypot(a, b) of each element's pair."""
    n = x.shape[-1] // 2
    a, b = x[..., :n], x[..., n:]
    out = np.concatenate([m * (a * cos - b * sin), m * (a * sin + b * cos)], axis=-1)
    size = np.concatenate([np.hypot(a, b)] * 2, axis=-1)
    return out, size


def check_against(x, x_fw, x_clpe, cos, sin, m, what):
    exact, size = half_split_rotation(x.astype(np.float64), cos, sin, m)
    bound = F32_BOUND * size * m
    clpe_error = np.abs(x_clpe - exact)
    fw_error = np.abs(x_fw - exact)
    assert np.all(clpe_error <= bound), f"{what}: clpe {np.max(clpe_error / bound):.3g} x its bound"
    assert np.all(np.abs(x_clpe - x_fw) <= fw_error + bound), what
    return np.max(fw_error), np.max(clpe_error)


@pytest.mark.parametrize("mcase", CASES, ids=repr)
def test_text_matches_qwen2_vl(mcase):
    c = mcase.case
    positions = qwen2_vl_positions(OFFSETS)
    tokens = positions.shape[1]
    rng = np.random.default_rng(len(mcase.name))
    q = rng.standard_normal((1, HEADS_Q, tokens, c.head_dim)).astype(np.float32)
    k = rng.standard_normal((1, HEADS_K, tokens, c.head_dim)).astype(np.float32)
    q_fw, k_fw, fw_inv_freq, fw_amplitude = hf_text(mcase, torch.from_numpy(q.copy()),
                                                    torch.from_numpy(k.copy()), positions)
    with mcase.host("f32") as rope:
        (w_clpe, m), streams = rope.frequencies(), rope.pair_streams()
        q_clpe, k_clpe = q.copy(), k.copy()
        # [batch, heads, seq, d] seen as [batch, seq, heads, d]
        rope.rotate(q_clpe.transpose(0, 2, 1, 3), k_clpe.transpose(0, 2, 1, 3), positions)
    w_exact = frequencies(c, mp, mp.mpf)
    assert list(w_clpe) == [float(w) for w in w_exact]
    assert np.allclose(fw_inv_freq, w_clpe, rtol=2.0 ** -16, atol=0)
    assert m == fw_amplitude == amplitude(c)
    assert list(streams) == list(stream_of_pairs(mcase.section))
    cos, sin = exact_by_stream(w_exact, streams, positions)
    worst = [check_against(x, x_fw, x_clpe, cos, sin, m, f"{mcase.name} {what}")
             for x, x_fw, x_clpe, what in ((q, q_fw, q_clpe, "q"), (k, k_fw, k_clpe, "k"))]
    # past 2^24 Hugging Face's float32 positions are off; clpe's are not
    assert max(w[0] for w in worst) > 100 * max(w[1] for w in worst)


@pytest.mark.parametrize("mcase", CASES, ids=repr)
def test_text_float64_is_the_formula(mcase):
    c = mcase.case
    positions = qwen2_vl_positions(OFFSETS)
    tokens = positions.shape[1]
    rng = np.random.default_rng(len(mcase.name) + 1)
    q = rng.standard_normal((1, tokens, HEADS_Q, c.head_dim))
    with mcase.host("f64") as rope:
        (_, m), streams = rope.frequencies(), rope.pair_streams()
        q_clpe = q.copy()
        rope.rotate(q_clpe, None, positions)
    assert m == amplitude(c)
    w64 = np.array(frequencies(c, math, float))
    theta = positions[streams].T.astype(np.float64) * w64[None, :]  # [tokens, pairs]
    eps = 2.0 ** -52
    angle_error = np.abs(theta) * (transcription_ulps(c) + 1) * eps
    expected, size = half_split_rotation(q.transpose(0, 2, 1, 3), np.cos(theta), np.sin(theta), m)
    tolerance = size * m * (np.concatenate([angle_error] * 2, axis=-1) + 8 * eps)
    got = q_clpe.transpose(0, 2, 1, 3)
    assert np.all(np.abs(got - expected) <= tolerance), mcase.name


def test_text_only_prompt_is_plain_rope():
    """A text-only prompt (one position in every stream) is plain rotary:
    with mrope_section, clpe.HostRope gives its plain configuration's bits."""
    positions = np.arange(4000, 4040, dtype=np.int64)
    rng = np.random.default_rng(3)
    q = rng.standard_normal((1, 40, 2, 128)).astype(np.float32)
    q_plain = q.copy()
    with clpe.HostRope(128, mrope_section=[16, 24, 24], base=1e6) as mrope, \
            clpe.HostRope(128, base=1e6) as rope:
        mrope.rotate(q, None, np.stack([positions] * 3))
        rope.rotate(q_plain, None, positions[None, :])
    assert np.array_equal(q.view(np.uint32), q_plain.view(np.uint32))


# ---- the vision tower ----

VISION_HEAD_DIM = 80  # Qwen2-VL: embed_dim 1280, 16 heads
GRIDS = [(1, 4, 6), (2, 8, 4), (1, 16, 20)]  # grid_thw: frames, patch rows, patch columns


def hf_vision_model():
    config = transformers.Qwen2VLConfig().vision_config
    config.depth, config.embed_dim, config.num_heads = 1, 2 * VISION_HEAD_DIM, 2
    return modeling_qwen2_vl.Qwen2VisionTransformerPretrainedModel._from_config(config)


def vision_pos_ids(grid_thw, merge):
    """rot_pos_emb's pos_ids [patches, 2] (row, column), transcribed: the
    patches in the order of its merge windows, repeated per frame."""
    out = []
    for t, h, w in grid_thw:
        rows = np.arange(h)[:, None].repeat(w, 1)
        cols = np.arange(w)[None, :].repeat(h, 0)
        def order(a):
            return a.reshape(h // merge, merge, w // merge, merge).transpose(0, 2, 1, 3).ravel()
        out.append(np.tile(np.stack([order(rows), order(cols)], axis=-1), (t, 1)))
    return np.concatenate(out).astype(np.int64)


def test_vision_matches_qwen2_vl():
    model = hf_vision_model()
    grid_thw = torch.tensor(GRIDS)
    freqs = model.rot_pos_emb(grid_thw)  # [patches, head_dim / 2]
    pos_ids = vision_pos_ids(GRIDS, model.spatial_merge_size)
    # the positions are Hugging Face's: its table indexed by them is rot_pos_emb
    table = model.rotary_pos_emb(int(max(max(g[1:]) for g in GRIDS)))
    assert torch.equal(table[torch.from_numpy(pos_ids)].flatten(1), freqs)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().float(), emb.sin().float()  # VisionSdpaAttention.forward
    patches = pos_ids.shape[0]
    rng = np.random.default_rng(11)
    q = rng.standard_normal((patches, HEADS_Q, VISION_HEAD_DIM)).astype(np.float32)
    k = rng.standard_normal((patches, HEADS_Q, VISION_HEAD_DIM)).astype(np.float32)
    q_fw, k_fw = modeling_qwen2_vl.apply_rotary_pos_emb_vision(
        torch.from_numpy(q.copy()), torch.from_numpy(k.copy()), cos, sin)
    with clpe.HostRope.vision(VISION_HEAD_DIM) as rope:
        (w_clpe, m), streams = rope.frequencies(), rope.pair_streams()
        q_clpe, k_clpe = q.copy(), k.copy()
        rope.rotate(q_clpe, k_clpe, pos_ids)  # [patches, heads, d]; positions [patches, 2]
    # each stream a ladder of its own: VisionRotaryEmbedding(40)'s inv_freq, twice
    quarter = VISION_HEAD_DIM // 4
    w_exact = [1 / mp.mpf(10000) ** (mp.mpf(2 * j) / (2 * quarter)) for j in range(quarter)]
    assert list(w_clpe) == [float(w) for w in w_exact] * 2
    assert np.allclose(model.rotary_pos_emb.inv_freq.double().numpy(), w_clpe[:quarter],
                       rtol=2.0 ** -20, atol=0)
    assert m == 1.0 and list(streams) == [0] * quarter + [1] * quarter
    cos_x, sin_x = exact_by_stream(w_exact * 2, streams, pos_ids.T)
    for x, x_fw, x_clpe, what in ((q, q_fw, q_clpe, "q"), (k, k_fw, k_clpe, "k")):
        # [patches, heads, d] -> [heads, patches, d]: tokens next to last
        check_against(x.transpose(1, 0, 2), x_fw.numpy().transpose(1, 0, 2),
                      x_clpe.transpose(1, 0, 2), cos_x, sin_x, 1.0, f"vision {what}")


def test_vision_float64_is_the_formula():
    pos_ids = vision_pos_ids(GRIDS, 2)
    patches = pos_ids.shape[0]
    rng = np.random.default_rng(12)
    q = rng.standard_normal((patches, HEADS_Q, VISION_HEAD_DIM))
    with clpe.HostRope.vision(VISION_HEAD_DIM, dtype="f64") as rope:
        q_clpe = q.copy()
        rope.rotate(q_clpe, None, pos_ids)
    quarter = VISION_HEAD_DIM // 4
    # VisionRotaryEmbedding in float64: 1 / theta ** (arange(0, dim, 2) / dim), dim = 40
    inv_freq = 1.0 / 10000.0 ** (np.arange(0, 2 * quarter, 2) / (2 * quarter))
    theta = np.concatenate([pos_ids[:, :1] * inv_freq, pos_ids[:, 1:] * inv_freq], axis=-1)
    expected, size = half_split_rotation(q.transpose(1, 0, 2), np.cos(theta), np.sin(theta), 1.0)
    eps = 2.0 ** -52
    angle_error = np.abs(theta) * (4 + math.log(10000.0) / 2 + 1) * eps
    tolerance = size * (np.concatenate([angle_error] * 2, axis=-1) + 8 * eps)
    assert np.all(np.abs(q_clpe.transpose(1, 0, 2) - expected) <= tolerance)
