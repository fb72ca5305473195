# SPDX-License-Identifier: Apache-2.0
"""A model's config.json in, the right rotary out: clpe.HostRope.from_hf_config
on published model configurations (the rotary fields of each config.json,
written out below), against Hugging Face transformers' own code for the same
config:

- frequencies and amplitude: transformers' ROPE_INIT_FUNCTIONS (GPT-J: its
  create_sinusoidal_positions), evaluated in float64 (the functions write
  .float() and dtype=torch.float32; the test runs them with both meaning
  float64, so that what is compared is the formula, not float32 rounding).
  clpe's frequencies come from MPFR, so they agree to a few float64 ulps.
- rotated q and k: transformers' apply_rotary_pos_emb (Llama's rotate_half,
  GPT-J's rotate_every_two, Qwen2-VL's apply_multimodal_rotary_pos_emb) on
  float64 copies of the inputs with float64 cos/sin, which is the exact
  rotation to far below float32; clpe's float32 result must lie within its
  documented bound 2^-22 * m * hypot(a, b) of it, pair by pair.

Refusals: a field missing, mistyped or out of range is refused with a
message that names the field as config.json spells it.
"""
import copy
import inspect
import json
import math

import numpy as np
import pytest

import clpe
from conftest import need

pytestmark = pytest.mark.skipif(not clpe.HAS_ROPE,
                                reason="the loaded libclpe has no rotary calls")

PHI35_LONG = [
    1.0800000429153442, 1.1100000143051147, 1.1399999856948853, 1.340000033378601,
    1.5899999141693115, 1.600000023841858, 1.6200000047683716, 2.620000123977661,
    3.2300000190734863, 3.2300000190734863, 4.789999961853027, 7.400000095367432,
    7.700000286102295, 9.09000015258789, 12.199999809082031, 17.670000076293945,
    24.46000099182129, 28.57000160217285, 30.420001983642578, 30.840002059936523,
    32.590003967285156, 32.93000411987305, 42.320003509521484, 44.96000289916992,
    50.340003967285156, 50.45000457763672, 57.55000305175781, 57.93000411987305,
    58.21000289916992, 60.1400032043457, 62.61000442504883, 62.62000274658203,
    62.71000289916992, 63.1400032043457, 63.1400032043457, 63.77000427246094,
    63.93000411987305, 63.96000289916992, 63.970001220703125, 64.02999877929688,
    64.06999969482422, 64.08000183105469, 64.12000274658203, 64.41000366210938,
    64.4800033569336, 64.51000213623047, 64.52999877929688, 64.83999633789062,
    ]
PHI35_SHORT = [
    1.0, 1.0199999809265137, 1.0299999713897705, 1.0299999713897705, 1.0499999523162842,
    1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0499999523162842,
    1.0699999332427979, 1.0999999046325684, 1.1099998950958252, 1.1599998474121094,
    1.1599998474121094, 1.1699998378753662, 1.2899998426437378, 1.339999794960022,
    1.679999828338623, 1.7899998426437378, 1.8199998140335083, 1.8499997854232788,
    1.8799997568130493, 1.9099997282028198, 1.9399996995925903, 1.9899996519088745,
    2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346,
    2.0199997425079346, 2.0199997425079346, 2.0299997329711914, 2.0299997329711914,
    2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0299997329711914,
    2.0299997329711914, 2.0299997329711914, 2.0299997329711914, 2.0799996852874756,
    2.0899996757507324, 2.189999580383301, 2.2199995517730713, 2.5899994373321533,
    2.729999542236328, 2.749999523162842, 2.8399994373321533,
    ]

# The rotary fields of each config.json as published on the Hugging Face hub
# (the other fields do not reach the rotary).
CONFIGS = {
    "meta-llama/Llama-2-7b-hf": {
        "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 32, "max_position_embeddings": 4096, "rope_theta": 10000.0,
        "rope_scaling": None},
    "meta-llama/Llama-3.1-8B": {
        "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 8, "max_position_embeddings": 131072, "rope_theta": 500000.0,
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
    "meta-llama/Llama-3.2-1B": {
        "model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32, "head_dim": 64,
        "num_key_value_heads": 8, "max_position_embeddings": 131072, "rope_theta": 500000.0,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
    "lmsys/vicuna-7b-v1.5-16k": {
        "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 32, "max_position_embeddings": 4096,
        "rope_scaling": {"factor": 4.0, "type": "linear"}},
    "mistralai/Mistral-7B-v0.1": {
        "model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 8, "max_position_embeddings": 32768, "rope_theta": 10000.0},
    "Qwen/Qwen2-7B-Instruct": {
        "model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28,
        "num_key_value_heads": 4, "max_position_embeddings": 32768, "rope_theta": 1000000.0},
    "Qwen/Qwen2-VL-7B-Instruct": {
        "model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28,
        "num_key_value_heads": 4, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
    "microsoft/Phi-3.5-mini-instruct": {
        "model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32,
        "num_key_value_heads": 32, "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
        "rope_scaling": {"long_factor": PHI35_LONG, "short_factor": PHI35_SHORT,
                         "type": "longrope"}},
    "deepseek-ai/DeepSeek-V3": {
        "model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "max_position_embeddings": 163840, "rope_theta": 10000,
        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                         "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                         "type": "yarn"}},
    "EleutherAI/gpt-neox-20b": {
        "model_type": "gpt_neox", "hidden_size": 6144, "num_attention_heads": 64,
        "rotary_pct": 0.25, "rotary_emb_base": 10000, "max_position_embeddings": 2048},
    "EleutherAI/gpt-j-6b": {
        "model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64,
        "n_positions": 2048},
    "google/gemma-7b": {
        "model_type": "gemma", "hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256,
        "num_key_value_heads": 16, "max_position_embeddings": 8192, "rope_theta": 10000.0},
    "microsoft/phi-2": {
        "model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32,
        "partial_rotary_factor": 0.4, "max_position_embeddings": 2048, "rope_theta": 10000.0},
}

# (model, seq_len given to clpe and to transformers): LongRoPE picks its long
# factors beyond original_max_position_embeddings; dynamic NTK grows the base
# with seq_len (its config: Llama 2 with the scaling of transformers' docs).
CASES = [(name, 0) for name in CONFIGS] + [("microsoft/Phi-3.5-mini-instruct", 8192)]
DYNAMIC = dict(CONFIGS["meta-llama/Llama-2-7b-hf"],
               rope_scaling={"type": "dynamic", "factor": 2.0})
CASES.append(("dynamic", 10000))
CONFIGS_AND_DYNAMIC = dict(CONFIGS, dynamic=DYNAMIC)

POSITIONS = [0, 1, 2, 17, 255, 1000, 2047, 4095, 8191, 65535, 163839, 1000000]


@pytest.fixture(scope="module")
def torch():
    return need("torch")


@pytest.fixture(scope="module")
def transformers():
    return need("transformers")


class _Float64Torch:
    """transformers' torch, where dtype=torch.float32 means float64."""

    def __init__(self, torch):
        self._torch = torch

    def __getattr__(self, name):
        value = getattr(self._torch, name)
        if name in ("arange", "tensor", "ones", "zeros", "full"):
            def widened(*args, **kwargs):
                if kwargs.get("dtype") is self._torch.float32:
                    kwargs["dtype"] = self._torch.float64
                return value(*args, **kwargs)
            return widened
        return value


@pytest.fixture()
def float64(torch, transformers, monkeypatch):
    """transformers' rotary code evaluated in float64."""
    from transformers import modeling_rope_utils
    monkeypatch.setattr(torch.Tensor, "float", lambda self, *a, **k: self.double())
    monkeypatch.setattr(modeling_rope_utils, "torch", _Float64Torch(torch))
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(default)


def _rope_type(scaling):
    if not scaling:
        return "default"
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    return "default" if kind == "mrope" else kind


def _yarn_reads_original(yarn):
    """Whether this transformers' YaRN ramps over rope_scaling's
    original_max_position_embeddings and reads mscale (newer releases,
    DeepSeek's reference code), rather than over max_position_embeddings."""
    return "mscale_all_dim" in inspect.getsource(yarn)


def hf_reference(transformers, name, seq_len):
    """(inv_freq as float64, attention scaling) from transformers' own code."""
    import torch
    fields = copy.deepcopy(CONFIGS_AND_DYNAMIC[name])
    model_type = fields.pop("model_type")
    if model_type == "gptj":
        from transformers.models.gptj import modeling_gptj
        table = modeling_gptj.create_sinusoidal_positions(2, fields["rotary_dim"])
        # row 1 is [sin(w_i), cos(w_i)]: w_i back from its angle at position 1
        half = fields["rotary_dim"] // 2
        return np.arctan2(table[1, :half].numpy(), table[1, half:].numpy()), 1.0
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    kind = _rope_type(fields.get("rope_scaling"))
    amplitude = None
    if model_type == "deepseek_v3":
        # transformers 4.49 has no DeepSeek-V3 config: its fields as
        # DeepseekV3Config sets them (the rotary spans qk_rope_head_dim)
        fields["head_dim"] = fields["qk_rope_head_dim"]
        if not _yarn_reads_original(ROPE_INIT_FUNCTIONS["yarn"]):
            # an older YaRN ramps over max_position_embeddings and ignores
            # mscale: give it the length the newer one takes from
            # original_max_position_embeddings, and take the amplitude from
            # the newer formula, get_mscale(factor, mscale) /
            # get_mscale(factor, mscale_all_dim)
            rs = fields["rope_scaling"]
            fields["max_position_embeddings"] = rs["original_max_position_embeddings"]

            def get_mscale(scale, mscale=1.0):
                return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0
            amplitude = get_mscale(rs["factor"], rs["mscale"]) / get_mscale(
                rs["factor"], rs["mscale_all_dim"])
        config = transformers.PretrainedConfig(**fields)
    else:
        config = transformers.AutoConfig.for_model(model_type, **fields)
    inv_freq, scaling = ROPE_INIT_FUNCTIONS[kind](config, "cpu", seq_len=seq_len or None)
    assert inv_freq.dtype == torch.float64
    return inv_freq.numpy(), scaling if amplitude is None else amplitude


@pytest.mark.parametrize("name,seq_len", CASES)
def test_frequencies_and_amplitude(transformers, float64, name, seq_len):
    rope = clpe.HostRope.from_hf_config(CONFIGS_AND_DYNAMIC[name], seq_len=seq_len)
    want, want_amplitude = hf_reference(transformers, name, seq_len)
    got, amplitude = rope.frequencies()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    assert amplitude == pytest.approx(want_amplitude, rel=1e-15)


def _pair_hypot(x, rotary_dim, interleaved):
    """hypot(a, b) of the pair each of the first rotary_dim elements belongs to."""
    r = x[..., :rotary_dim].astype(np.float64)
    if interleaved:
        h = np.hypot(r[..., 0::2], r[..., 1::2])
        return np.repeat(h, 2, axis=-1)
    h = np.hypot(r[..., :rotary_dim // 2], r[..., rotary_dim // 2:])
    return np.concatenate([h, h], axis=-1)


@pytest.mark.parametrize("name,seq_len", CASES)
def test_rotated_q_and_k(torch, transformers, float64, name, seq_len):
    config = CONFIGS_AND_DYNAMIC[name]
    rope = clpe.HostRope.from_hf_config(config, seq_len=seq_len)
    inv_freq, m = hf_reference(transformers, name, seq_len)
    head_dim, rd = rope.head_dim, rope.rotary_dim
    interleaved = config["model_type"] in ("gptj", "deepseek_v3")
    rng = np.random.default_rng(47)
    positions = np.array([p for p in POSITIONS], np.int64)
    seq = positions.size
    q = rng.standard_normal((1, seq, 3, head_dim)).astype(np.float32)
    k = rng.standard_normal((1, seq, 2, head_dim)).astype(np.float32)
    streams = None
    if rope.streams > 1:
        # Qwen2-VL: temporal, height and width positions differ for image tokens
        streams = np.stack([positions, positions // 3, positions % 977]).reshape(3, 1, seq)
    got_q, got_k = q.copy(), k.copy()
    rope.rotate(got_q, got_k, positions=streams if streams is not None else positions[None])

    t = torch.from_numpy
    q64, k64 = t(q.astype(np.float64)), t(k.astype(np.float64))
    w = t(inv_freq)
    if interleaved:
        from transformers.models.gptj import modeling_gptj
        angles = t(positions.astype(np.float64))[None, :, None] * w[None, None, :]
        sin, cos = angles.sin() * m, angles.cos() * m
        want_q = modeling_gptj.apply_rotary_pos_emb(q64[..., :rd], sin, cos)
        want_k = modeling_gptj.apply_rotary_pos_emb(k64[..., :rd], sin, cos)
    else:
        # LlamaRotaryEmbedding.forward and Qwen2VLRotaryEmbedding.forward, in float64
        pos = t((streams if streams is not None else positions[None]).astype(np.float64))
        freqs = pos[..., None] * w
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos() * m, emb.sin() * m
        qh, kh = q64[..., :rd].transpose(1, 2), k64[..., :rd].transpose(1, 2)
        if streams is not None:
            from transformers.models.qwen2_vl import modeling_qwen2_vl
            want_q, want_k = modeling_qwen2_vl.apply_multimodal_rotary_pos_emb(
                qh, kh, cos, sin, config["rope_scaling"]["mrope_section"])
        else:
            from transformers.models.llama import modeling_llama
            want_q, want_k = modeling_llama.apply_rotary_pos_emb(qh, kh, cos, sin)
        want_q, want_k = want_q.transpose(1, 2), want_k.transpose(1, 2)
    for what, x, got, want in (("q", q, got_q, want_q), ("k", k, got_k, want_k)):
        error = np.abs(got[..., :rd].astype(np.float64) - want.numpy())
        bound = 2.0 ** -22 * m * _pair_hypot(x, rd, interleaved)
        worst = np.unravel_index(np.argmax(error - bound), error.shape)
        assert np.all(error <= bound), (what, worst, error[worst], bound[worst])
        # the elements past rotary_dim pass through untouched (GPT-NeoX's q_pass)
        assert np.array_equal(got[..., rd:], x[..., rd:])


def test_the_families_pairing_and_dims():
    gptj = clpe.hf_rope_settings(CONFIGS["EleutherAI/gpt-j-6b"])
    assert (gptj.head_dim, gptj.settings["rotary_dim"], gptj.settings["pairing"]) == \
        (256, 64, "interleaved")
    neox = clpe.hf_rope_settings(CONFIGS["EleutherAI/gpt-neox-20b"])
    assert (neox.head_dim, neox.settings["rotary_dim"], neox.settings["pairing"]) == \
        (96, 24, "half_split")
    gemma = clpe.HostRope.from_hf_config(CONFIGS["google/gemma-7b"])
    assert gemma.head_dim == 256  # its head_dim, not hidden_size / num_attention_heads = 192
    qwen = clpe.HostRope.from_hf_config(CONFIGS["Qwen/Qwen2-VL-7B-Instruct"])
    assert qwen.mrope_section == (16, 24, 24)


def test_a_config_json_path_and_overrides(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["meta-llama/Llama-3.1-8B"]))
    from_path = clpe.HostRope.from_hf_config(str(path), dtype="bf16")
    from_dict = clpe.HostRope.from_hf_config(CONFIGS["meta-llama/Llama-3.1-8B"], dtype="bf16")
    assert from_path.dtype == from_dict.dtype
    np.testing.assert_array_equal(from_path.frequencies()[0], from_dict.frequencies()[0])
    assert np.array_equal(from_path.cache(range(3, 9))[0], from_dict.cache(range(3, 9))[0])


def test_rope_on_the_device_matches_the_host(context, queue, cl):
    config = CONFIGS["deepseek-ai/DeepSeek-V3"]
    rope = clpe.Rope.from_hf_config(context, config)
    host = clpe.HostRope.from_hf_config(config)
    np.testing.assert_array_equal(rope.frequencies()[0], host.frequencies()[0])
    q = np.random.default_rng(1).standard_normal((5, 4, 64)).astype(np.float32)
    q_device = cl.array.to_device(queue, q)
    rope.rotate(queue, q_device, positions=100).wait()
    host.rotate(q, positions=100)
    np.testing.assert_array_equal(q_device.get(), q)


# ---- refusals name their field ----------------------------------------------

LLAMA3 = CONFIGS["meta-llama/Llama-3.1-8B"]
YARN = CONFIGS["deepseek-ai/DeepSeek-V3"]
LONGROPE = CONFIGS["microsoft/Phi-3.5-mini-instruct"]


def _with(config, top=None, **scaling):
    """config with top-level fields (top) and rope_scaling's keys changed
    (None: removed)."""
    out = copy.deepcopy(config)
    for table, changes in ((out, top or {}), (out.get("rope_scaling"), scaling)):
        for key, value in changes.items():
            if value is None:
                table.pop(key, None)
            else:
                table[key] = value
    return out


# (config, what is wrong, the field the message must name)
OUT_OF_RANGE = [
    (_with(LLAMA3, factor=0.5), "rope_scaling.factor"),
    (_with(LLAMA3, low_freq_factor=0.0), "rope_scaling.low_freq_factor"),
    (_with(LLAMA3, high_freq_factor=0.5), "rope_scaling.high_freq_factor"),
    (_with(LLAMA3, original_max_position_embeddings=0),
     "rope_scaling.original_max_position_embeddings"),
    (_with(LLAMA3, top={"rope_theta": 1.0}), "rope_theta"),
    (_with(CONFIGS["lmsys/vicuna-7b-v1.5-16k"], factor=0.25), "rope_scaling.factor"),
    (_with(DYNAMIC, factor=0.5), "rope_scaling.factor"),
    (_with(DYNAMIC, top={"max_position_embeddings": 0}), "max_position_embeddings"),
    (_with(YARN, factor=0.5), "rope_scaling.factor"),
    (_with(YARN, beta_fast=-1), "rope_scaling.beta_fast"),
    (_with(YARN, beta_slow=-1), "rope_scaling.beta_slow"),
    (_with(YARN, beta_fast=2, beta_slow=3), "rope_scaling.beta_fast"),
    (_with(YARN, attention_factor=-1.0), "rope_scaling.attention_factor"),
    (_with(YARN, original_max_position_embeddings=0),
     "rope_scaling.original_max_position_embeddings"),
    (_with(YARN, mscale_all_dim=-10 / math.log(40)), "rope_scaling.mscale"),
    (_with(LONGROPE, short_factor=[1.0] * 47 + [-1.0]), "rope_scaling.short_factor"),
    (_with(LONGROPE, long_factor=[0.0] * 48), "rope_scaling.long_factor"),
    (_with(LONGROPE, attention_factor=-2.0), "rope_scaling.attention_factor"),
    (_with(LONGROPE, top={"original_max_position_embeddings": 0}),
     "original_max_position_embeddings"),
    (_with(CONFIGS["Qwen/Qwen2-VL-7B-Instruct"], mrope_section=[16, 24, 20]),
     "rope_scaling.mrope_section"),
    (_with(CONFIGS["microsoft/phi-2"], top={"partial_rotary_factor": 0.0125}),
     "partial_rotary_factor"),
]


@pytest.mark.parametrize("config,field", OUT_OF_RANGE,
                         ids=["%d-%s" % (i, f) for i, (_, f) in enumerate(OUT_OF_RANGE)])
def test_out_of_range_names_the_field(config, field):
    with pytest.raises((clpe.Error, clpe.ConfigError)) as refused:
        clpe.HostRope.from_hf_config(config)
    assert field in str(refused.value)


MISSING_OR_MISTYPED = [
    (_with(LLAMA3, factor=None), clpe.ConfigError, "rope_scaling.factor"),
    (_with(LLAMA3, low_freq_factor=None), clpe.ConfigError, "rope_scaling.low_freq_factor"),
    (_with(LLAMA3, original_max_position_embeddings=None), clpe.ConfigError,
     "rope_scaling.original_max_position_embeddings"),
    (_with(LLAMA3, rope_type="su-perb"), clpe.ConfigError, "rope_scaling.rope_type"),
    (_with(LLAMA3, rope_type=None), clpe.ConfigError, "rope_scaling.rope_type"),
    (_with(LLAMA3, factor="8"), TypeError, "rope_scaling.factor"),
    (_with(LLAMA3, top={"rope_theta": "500000"}), TypeError, "rope_theta"),
    (_with(LLAMA3, top={"rope_scaling": [8.0]}), TypeError, "rope_scaling"),
    (_with(YARN, truncate="no"), TypeError, "rope_scaling.truncate"),
    (_with(LONGROPE, long_factor=None), clpe.ConfigError, "rope_scaling.long_factor"),
    (_with(LONGROPE, short_factor=[1.0] * 47), clpe.ConfigError, "rope_scaling.short_factor"),
    (_with(CONFIGS["Qwen/Qwen2-VL-7B-Instruct"], mrope_section=None), clpe.ConfigError,
     "rope_scaling.mrope_section"),
    (_with(CONFIGS["Qwen/Qwen2-VL-7B-Instruct"], mrope_section=[16, "24", 24]), TypeError,
     "rope_scaling.mrope_section"),
    (_with(DYNAMIC, top={"max_position_embeddings": None}), clpe.ConfigError,
     "max_position_embeddings"),
    ({"model_type": "llama", "num_attention_heads": 32}, clpe.ConfigError, "hidden_size"),
    ({"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128},
     clpe.ConfigError, "qk_rope_head_dim"),
]


@pytest.mark.parametrize("config,error,field", MISSING_OR_MISTYPED,
                         ids=["%d-%s" % (i, f) for i, (_, _, f) in enumerate(MISSING_OR_MISTYPED)])
def test_missing_or_mistyped_names_the_field(config, error, field):
    with pytest.raises(error) as refused:
        clpe.HostRope.from_hf_config(config)
    assert field in str(refused.value)
    if isinstance(refused.value, clpe.ConfigError):
        assert refused.value.field == field


def test_a_duplicate_key_is_refused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": 64, "num_attention_heads": 4, "rope_theta": 1e4, '
                    '"rope_theta": 5e5}')
    with pytest.raises(clpe.ConfigError) as refused:
        clpe.HostRope.from_hf_config(path)
    assert refused.value.field == "rope_theta"


def test_keywords_take_hugging_faces_name():
    rope = clpe.HostRope(128, base=500000.0, scaling="llama3", factor=8.0,
                         original_max_position_embeddings=8192, low_freq_factor=1.0,
                         high_freq_factor=4.0)
    assert rope.frequencies()[0][-1] < 1e-5
    with pytest.raises(clpe.Error) as refused:
        clpe.HostRope(128, base=500000.0, scaling="llama3", factor=8.0)
    assert "original_max_position" in str(refused.value)
    assert refused.value.detail.startswith("llama3: original_max_position")
