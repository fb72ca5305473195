# SPDX-License-Identifier: Apache-2.0
"""The C and Python mappings of a model's config.json agree: the published
configs of test_hf_config.py through `clpe rope-cache --hf-config` (jansson,
common/hf_config.c, on the device) give the same cos/sin bytes as
clpe.HostRope.from_hf_config(...).cache in Python, and the tool refuses what
the package refuses, naming the same field."""
import json
import subprocess

import numpy as np
import pytest

import clpe
from test_hf_config import CONFIGS, DYNAMIC

pytestmark = pytest.mark.skipif(not clpe.HAS_ROPE,
                                reason="the loaded libclpe has no rotary calls")

ALL = dict(CONFIGS, dynamic=DYNAMIC)


def _rope_cache(cli, tmp_path, config, *flags):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    cos, sin = tmp_path / "cos.npy", tmp_path / "sin.npy"
    done = subprocess.run([str(cli), "rope-cache", "--quiet", "--hf-config", str(path),
                           "--cos-out", str(cos), "--sin-out", str(sin)] + list(flags),
                          capture_output=True, text=True)
    if done.returncode:
        return done, None, None
    return done, np.load(cos), np.load(sin)


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("start,seq", [(0, 48), (8150, 100)])
def test_the_cli_writes_the_packages_cache(cli, tmp_path, name, start, seq):
    done, cos, sin = _rope_cache(cli, tmp_path, ALL[name], "--start", str(start),
                                 "--seq", str(seq))
    assert done.returncode == 0, done.stderr
    # the tool gives dynamic NTK and LongRoPE the length start + seq
    rope = clpe.HostRope.from_hf_config(ALL[name], seq_len=start + seq,
                                        mrope_section=None)
    want_cos, want_sin = rope.cache(range(start, start + seq))
    assert cos.dtype == want_cos.dtype and cos.shape == want_cos.shape
    assert cos.tobytes() == want_cos.tobytes()
    assert sin.tobytes() == want_sin.tobytes()


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f64"])
def test_the_cli_dtype(cli, tmp_path, dtype):
    config = CONFIGS["meta-llama/Llama-3.1-8B"]
    done, cos, sin = _rope_cache(cli, tmp_path, config, "--seq", "33", "--dtype", dtype)
    assert done.returncode == 0, done.stderr
    want_cos, want_sin = clpe.HostRope.from_hf_config(config, dtype=dtype,
                                                      seq_len=33).cache(range(33))
    assert cos.tobytes() == want_cos.tobytes() and sin.tobytes() == want_sin.tobytes()


def test_the_cli_multimodal_positions(cli, tmp_path):
    config = CONFIGS["Qwen/Qwen2-VL-7B-Instruct"]
    positions = np.stack([np.arange(40), np.arange(40) // 5, np.arange(40) % 7]).astype(np.int64)
    np.save(tmp_path / "positions.npy", positions)
    done, cos, sin = _rope_cache(cli, tmp_path, config, "--positions",
                                 str(tmp_path / "positions.npy"))
    assert done.returncode == 0, done.stderr
    want_cos, want_sin = clpe.HostRope.from_hf_config(config).cache(positions)
    assert cos.tobytes() == want_cos.tobytes() and sin.tobytes() == want_sin.tobytes()


REFUSED = [
    ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192}},
     "rope_scaling.low_freq_factor"),
    ({"rope_scaling": {"rope_type": "su-perb", "factor": 8.0}}, "rope_scaling.rope_type"),
    ({"rope_theta": "500000"}, "rope_theta"),
    ({"rope_scaling": {"rope_type": "linear", "factor": "4"}}, "rope_scaling.factor"),
]


@pytest.mark.parametrize("change,field", REFUSED)
def test_the_cli_refuses_naming_the_field(cli, tmp_path, change, field):
    config = dict(CONFIGS["meta-llama/Llama-3.1-8B"], **change)
    done, _, _ = _rope_cache(cli, tmp_path, config, "--seq", "4")
    assert done.returncode == 2
    assert field in done.stderr
    with pytest.raises((clpe.ConfigError, TypeError)) as refused:
        clpe.HostRope.from_hf_config(config)
    assert field in str(refused.value)


def test_the_cli_gives_the_librarys_reason(cli, tmp_path):
    config = dict(CONFIGS["meta-llama/Llama-3.1-8B"])
    config["rope_scaling"] = dict(config["rope_scaling"], high_freq_factor=0.5)
    done, _, _ = _rope_cache(cli, tmp_path, config, "--seq", "4")
    assert done.returncode == 2
    assert "high_freq_factor" in done.stderr


def test_config_flags_are_refused_with_it(cli, tmp_path):
    done, _, _ = _rope_cache(cli, tmp_path, CONFIGS["google/gemma-7b"], "--seq", "4",
                             "--head-dim", "128")
    assert done.returncode == 2
    assert "--head-dim cannot be combined with --hf-config" in done.stderr


@pytest.mark.parametrize("text,said", [
    ("{\"rope_theta\": 10000.0,", "--hf-config"),
    ("[1, 2]", "top level must be a JSON object"),
    ("{\"model_type\": \"llama\", \"num_attention_heads\": 32}", "hidden_size"),
    ("{\"hidden_size\": 64, \"num_attention_heads\": 4, \"rope_theta\": 1e4,"
     " \"rope_theta\": 5e5}", "duplicate"),
    ("{\"hidden_size\": 64, \"num_attention_heads\": 4, \"rotary_pct\": 1.5}", "rotary_pct"),
])
def test_the_cli_refuses_a_malformed_config(cli, tmp_path, text, said):
    path = tmp_path / "config.json"
    path.write_text(text)
    done = subprocess.run([str(cli), "rope-cache", "--hf-config", str(path), "--seq", "4",
                           "--cos-out", str(tmp_path / "c.npy"), "--sin-out",
                           str(tmp_path / "s.npy")], capture_output=True, text=True)
    assert done.returncode == 2
    assert said in done.stderr
    assert not (tmp_path / "c.npy").exists()


def test_the_cli_positions_need_sections(cli, tmp_path):
    np.save(tmp_path / "positions.npy", np.zeros((3, 4), np.int64))
    done, _, _ = _rope_cache(cli, tmp_path, CONFIGS["Qwen/Qwen2-7B-Instruct"], "--positions",
                             str(tmp_path / "positions.npy"))
    assert done.returncode == 2
    assert "mrope_section" in done.stderr
