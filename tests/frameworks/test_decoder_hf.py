# SPDX-License-Identifier: Apache-2.0
"""clpe-decoder (examples/decoder) against Hugging Face's own models.

Tiny random-initialised LlamaForCausalLM and XGLMForCausalLM are created here
(examples/decoder/make_tiny_model.py, fixed seed), saved with save_pretrained
(config.json + model.safetensors) and run by the C program on OpenCL and by
transformers on the CPU:

- positions from 0: clpe-decoder's greedy tokens are Hugging Face float32's,
  and its logits are within 1e-4 of them (relative to the largest logit);
- positions from 2^20, 2^24 and 2^62: both are compared with a float64 run
  of the same model whose position steps are exact (cos/sin and the
  sinusoidal rows from mpmath at 256 bits; Hugging Face would compute its
  rotary angles in float32 even in a float64 model). clpe-decoder is
  closer to it than Hugging Face float32 is (whose angles p * w are rounded
  to float32, and whose XGLM positions are float32 integers), and within
  1e-4 of it;
- the logits are bit-identical in clpe's two launch shapes
  (CLPE_PAIRS_PER_ITEM=1 and the default), and in the three ways of
  rotating into the paged cache (--rope kv, two-pass, device);
- several sequences through one paged cache with continuous batching give
  each sequence's solo tokens and logits, bit for bit;
- FP8 KV caches (fp8_e4m3, fp8_e5m2, with per-tensor scales): --rope kv and
  device bit-identical, batched runs bit-identical to solo ones, logits
  within 1e-4 of Hugging Face's model reading keys and values through the
  same FP8 rounding (ml_dtypes) and within a stated distance of the float32
  cache's, bad options refused;
- rotary sees only position differences: Llama's logits at 2^20, 2^24 and
  2^62 are its logits at 0 to float32 rounding;
- the same checks on Mesa Rusticl (llvmpipe), where it is installed.

Hugging Face XGLM keeps a table of max_position_embeddings + 2 rows; for
positions beyond it the test evaluates Hugging Face's own float32 formula
(XGLMSinusoidalPositionalEmbedding.get_embedding) for the rows needed, and
checks that formula against the table where the table has the rows.

Environment: CLPE_DECODER, the built program (build/examples/decoder/
clpe-decoder); not set, the module is skipped. Outside CI a missing torch or
transformers skips it; with CI set it fails.
"""
import copy
import importlib
import math
import os
import subprocess
import sys
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

REPOSITORY = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPOSITORY / "examples" / "decoder"))
from make_tiny_model import make_model  # noqa: E402

mp = mpmath.mp.clone() if hasattr(mpmath.mp, "clone") else mpmath.mp
mp.prec = 256

# llama3: Llama 3.1's rotary scaling, tied embeddings; llama-*: those scalings;
# mistral: a sliding window of 6; qwen2: q/k/v biases; qwen2_vl: M-RoPE
ARCHS = ["llama", "llama3", "llama-dynamic", "llama-yarn", "llama-longrope", "mistral", "qwen2",
         "qwen2_vl", "xglm"]
# Compared with a float64 model at long starts in one forward call: not
# llama-dynamic, whose frequencies change with each forward call's length
# (test_dynamic_long_context_... runs it call by call), nor llama-longrope,
# whose long factors transformers 4.49's Llama never takes
# (test_longrope_long_context_... gives both references the long factors).
EXACT_ARCHS = ["llama", "llama3", "llama-yarn", "mistral", "qwen2", "qwen2_vl", "xglm"]
ROTARY_ARCHS = [a for a in ARCHS if a != "xglm"]
# CLPE_FULL_TESTS=1: the bit-identity checks on every model; otherwise on a
# few that cover the code paths (plain rotary, a rotary per length, M-RoPE,
# sinusoidal positions)
FULL = os.environ.get("CLPE_FULL_TESTS") == "1"
SOME_ARCHS = ARCHS if FULL else ["llama", "llama-dynamic", "qwen2", "qwen2_vl", "xglm"]
PROMPT = [5, 17, 42, 99, 3, 250, 7, 11]
STEPS = 8
LONG_STARTS = [2**20, 2**40, 2**62]
TOLERANCE = 1e-4  # relative to the largest logit of the reference
XGLM_OFFSET = 2   # Hugging Face XGLMSinusoidalPositionalEmbedding.offset


# ---- the program -----------------------------------------------------------------

@pytest.fixture(scope="session")
def decoder():
    named = os.environ.get("CLPE_DECODER")
    if not named:
        pytest.skip("CLPE_DECODER is not set (build/examples/decoder/clpe-decoder)")
    path = Path(named)
    if not path.is_file():
        pytest.fail(f"CLPE_DECODER names {path}, which does not exist")
    return path


def run_decoder(decoder, model_dir, tmp_path, start, env=None, steps=STEPS, prompt=PROMPT,
                extra=()):
    """Generated tokens and the logits of every row, [len(prompt) + steps - 1, vocab]."""
    logits = tmp_path / f"logits-{start}-{os.getpid()}.npy"
    cmd = [str(decoder), str(model_dir), "--prompt", ",".join(map(str, prompt)),
           "--steps", str(steps), "--start", str(start), "--logits", str(logits), *extra]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                            env={**os.environ, **(env or {})})
    assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stdout}\n{result.stderr}"
    line = [s for s in result.stdout.splitlines() if s.startswith("tokens:")]
    assert len(line) == 1, result.stdout
    tokens = [int(t) for t in line[0].split()[1:]]
    data = np.load(logits)
    logits.unlink()
    return tokens, data


# ---- the models ------------------------------------------------------------------

@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """arch -> (float32 model, its save_pretrained directory)."""
    out = {}
    for arch in ARCHS:
        model = make_model(arch, seed=0)
        directory = tmp_path_factory.mktemp(arch)
        model.save_pretrained(directory, safe_serialization=True)
        assert (directory / "model.safetensors").is_file()
        if arch == "llama3":  # tied: the file holds the embedding once, under one name
            from safetensors import safe_open
            with safe_open(directory / "model.safetensors", "pt") as f:
                assert ("lm_head.weight" in f.keys()) != ("model.embed_tokens.weight" in f.keys())
        out[arch] = (model, directory)
    return out


def exact_angles(positions, frequencies):
    """cos and sin of p * w for every position and frequency (mpmath values),
    rounded to float64: [len(positions), len(frequencies)] each."""
    cos = np.empty((len(positions), len(frequencies)))
    sin = np.empty_like(cos)
    for r, p in enumerate(positions):
        for i, w in enumerate(frequencies):
            angle = mp.mpf(int(p)) * w
            cos[r, i] = float(mp.cos(angle))
            sin[r, i] = float(mp.sin(angle))
    return cos, sin


def exact_rotary_frequencies(config, seq_len=None):
    """Hugging Face's inv_freq and attention scaling (modeling_rope_utils:
    default, linear, dynamic, llama3 and yarn as transformers 4.49 computes
    them), evaluated exactly: w_i = theta^(-2i/head_dim), then the scaling.
    Dynamic NTK takes the length of the forward call, seq_len (its largest
    position + 1), as transformers' _dynamic_frequency_update gives it.
    Returns (frequencies, amplitude)."""
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    theta = mp.mpf(config.rope_theta)
    scaling = getattr(config, "rope_scaling", None) or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "dynamic":
        factor, original = mp.mpf(scaling["factor"]), config.max_position_embeddings
        length = max(int(seq_len), original)
        theta = theta * ((factor * length / original) - (factor - 1)) ** (
            mp.mpf(head_dim) / (head_dim - 2))
        return [theta ** (-mp.mpf(2 * i) / head_dim) for i in range(head_dim // 2)], mp.mpf(1)
    frequencies = [theta ** (-mp.mpf(2 * i) / head_dim) for i in range(head_dim // 2)]
    if kind in ("default", "mrope"):
        return frequencies, mp.mpf(1)
    factor = mp.mpf(scaling["factor"])
    if kind == "linear":
        return [w / factor for w in frequencies], mp.mpf(1)
    if kind == "yarn":
        # 4.49 ramps over max_position_embeddings, beta_fast 32, beta_slow 1,
        # truncated to integers; amplitude 0.1 ln(factor) + 1
        old_context = config.max_position_embeddings

        def correction_dim(rotations):
            return (head_dim * mp.log(old_context / (rotations * 2 * mp.pi))) / (2 * mp.log(theta))
        low = max(int(mp.floor(correction_dim(32))), 0)
        high = min(int(mp.ceil(correction_dim(1))), head_dim - 1)
        if low == high:
            high += 0.001
        out = []
        for i, w in enumerate(frequencies):
            ramp = min(max((mp.mpf(i) - low) / (high - low), 0), 1)
            extrapolation = 1 - ramp
            out.append(w / factor * (1 - extrapolation) + w * extrapolation)
        return out, mp.mpf("0.1") * mp.log(factor) + 1
    if kind == "longrope":
        # the factors of the call's length (short up to the original length,
        # long past it) and the default amplitude sqrt(1 + ln f / ln L)
        if hasattr(config, "original_max_position_embeddings"):
            original = config.original_max_position_embeddings
            factor = mp.mpf(config.max_position_embeddings) / original
        else:
            original = config.max_position_embeddings
        given = scaling.get("attention_factor")
        amplitude = (mp.mpf(given) if given is not None
                     else mp.sqrt(1 + mp.log(factor) / mp.log(original)) if factor > 1
                     else mp.mpf(1))
        ext = scaling["long_factor" if seq_len and seq_len > original else "short_factor"]
        return [w / mp.mpf(e) for w, e in zip(frequencies, ext)], amplitude
    assert kind == "llama3", kind
    low, high = mp.mpf(scaling["low_freq_factor"]), mp.mpf(scaling["high_freq_factor"])
    old_context = mp.mpf(scaling["original_max_position_embeddings"])
    out = []
    for w in frequencies:
        wavelength = 2 * mp.pi / w
        if wavelength < old_context / high:
            out.append(w)
        elif wavelength > old_context / low:
            out.append(w / factor)
        else:
            smooth = (old_context / wavelength - low) / (high - low)
            out.append((1 - smooth) * w / factor + smooth * w)
    return out, mp.mpf(1)


class ExactRotary(torch.nn.Module):
    """The model's rotary embedding with exact cos/sin (times the exact
    amplitude). Qwen2-VL's position_ids are [3, batch, seq] and so are its
    cos and sin, one per stream."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        scaling = getattr(config, "rope_scaling", None) or {}
        self.dynamic = scaling.get("rope_type", scaling.get("type")) == "dynamic"
        if not self.dynamic:
            self.frequencies, self.amplitude = exact_rotary_frequencies(config)

    def one(self, positions):
        cos, sin = exact_angles(positions, self.frequencies)
        cos = np.concatenate([cos, cos], axis=-1) * float(self.amplitude)
        sin = np.concatenate([sin, sin], axis=-1) * float(self.amplitude)
        return torch.from_numpy(cos)[None], torch.from_numpy(sin)[None]

    def forward(self, x, position_ids):
        if self.dynamic:  # the frequencies of this call's length
            self.frequencies, self.amplitude = exact_rotary_frequencies(
                self.config, int(position_ids.max()) + 1)
        if position_ids.dim() == 3:
            pairs = [self.one(position_ids[j, 0].tolist()) for j in range(position_ids.shape[0])]
            cos = torch.stack([c for c, _ in pairs])
            sin = torch.stack([s for _, s in pairs])
        else:
            cos, sin = self.one(position_ids[0].tolist())
        return cos.to(x.dtype), sin.to(x.dtype)


def xglm_rows_float32(rows, d, padding_idx):
    """Rows of Hugging Face XGLM's sinusoidal table, by its own float32
    formula (XGLMSinusoidalPositionalEmbedding.get_embedding) for the rows
    given instead of a whole table."""
    half = d // 2
    step = math.log(10000) / (half - 1)
    frequencies = torch.exp(torch.arange(half, dtype=torch.int64).float() * -step)
    angles = rows.float().unsqueeze(-1) * frequencies
    emb = torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)
    if d % 2 == 1:
        emb = torch.cat([emb, torch.zeros(*emb.shape[:-1], 1)], dim=-1)
    if padding_idx is not None:
        emb[rows == padding_idx] = 0
    return emb


def xglm_rows_exact(rows, d, padding_idx):
    """The same rows, exact: w_i = 10000^(-i/(d/2 - 1)), float64."""
    half = d // 2
    frequencies = [mp.mpf(10000) ** (-mp.mpf(i) / (half - 1)) for i in range(half)]
    flat = rows.reshape(-1).tolist()
    cos, sin = exact_angles(flat, frequencies)
    emb = np.concatenate([sin, cos], axis=-1)
    if d % 2 == 1:
        emb = np.concatenate([emb, np.zeros((len(flat), 1))], axis=-1)
    if padding_idx is not None:
        emb[np.array(flat) == padding_idx] = 0
    return torch.from_numpy(emb).reshape(*rows.shape, -1)


class XglmRows(torch.nn.Module):
    """XGLMSinusoidalPositionalEmbedding computing only the rows asked for."""

    def __init__(self, make_rows, d, padding_idx):
        super().__init__()
        self.make_rows, self.d, self.padding_idx = make_rows, d, padding_idx

    def forward(self, position_ids, past_key_values_length=0):
        return self.make_rows(position_ids + XGLM_OFFSET, self.d, self.padding_idx)


class Float64RMSNorm(torch.nn.Module):
    """RMSNorm in the input's dtype (Hugging Face's computes in float32
    whatever the model's dtype)."""

    def __init__(self, norm):
        super().__init__()
        self.weight, self.eps = norm.weight, norm.variance_epsilon

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Float64Softmax:
    """torch.nn.functional.softmax in float64 for float64 inputs, where the
    models ask for dtype=torch.float32 (their attention softmax)."""

    def __enter__(self):
        self.softmax = torch.nn.functional.softmax
        original = self.softmax

        def softmax(x, dim=None, _stacklevel=3, dtype=None):
            if x.dtype == torch.float64:
                dtype = torch.float64
            return original(x, dim=dim, dtype=dtype)
        torch.nn.functional.softmax = softmax
        return self

    def __exit__(self, *exc):
        torch.nn.functional.softmax = self.softmax


def float64_model(arch, model):
    """A float64 copy of model whose position steps are exact and whose
    norms and softmax compute in float64 too."""
    model = copy.deepcopy(model)
    cfg = model.config
    if arch != "xglm":
        model.model.rotary_emb = ExactRotary(cfg)
        for name, module in list(model.named_modules()):
            for child_name, child in list(module.named_children()):
                if type(child).__name__.endswith("RMSNorm"):
                    setattr(module, child_name, Float64RMSNorm(child))
    else:
        table = model.model.embed_positions
        model.model.embed_positions = XglmRows(xglm_rows_exact, cfg.d_model, table.padding_idx)
    return model.double()


def position_ids_of(arch, n, start, mrope=None):
    if mrope is not None:
        return torch.tensor(mrope, dtype=torch.int64)[:, None, :]
    positions = torch.arange(n, dtype=torch.int64)[None] + start
    return positions[None].expand(3, 1, n).clone() if arch == "qwen2_vl" else positions


def hf_logits(arch, model, ids, start, exact=False, mrope=None):
    """Logits of a float32 or float64 Hugging Face model for ids at positions
    start, start+1, ... (or Qwen2-VL's [3, len(ids)] mrope) in one forward
    call; exact: the float64 model of float64_model."""
    cfg = model.config
    if exact:
        model = float64_model(arch, model)
    elif arch == "xglm":
        table = model.model.embed_positions
        if start + len(ids) + XGLM_OFFSET > table.weights.shape[0]:
            model = copy.deepcopy(model)
            model.model.embed_positions = XglmRows(xglm_rows_float32, cfg.d_model,
                                                   table.padding_idx)
    # float64 as the default too: transformers 4.49's XGLM builds its causal
    # mask with torch.full(..., finfo(dtype).min) and no dtype, which torch
    # 1.13 refuses to fill a float32 tensor with when dtype is float64.
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64 if exact else torch.float32)
    try:
        with torch.no_grad(), Float64Softmax():
            out = model(torch.tensor([ids]),
                        position_ids=position_ids_of(arch, len(ids), start, mrope)).logits[0]
    finally:
        torch.set_default_dtype(default)
    return out.double().numpy()


def hf_generate(arch, model, prompt, steps, start=0, mrope=None):
    """Greedy decoding as generate runs it (prefill, then one token at a
    time through the KV cache; generate itself does not run on Debian's
    torch 1.13 with Python 3.11): the tokens and the logits of every row,
    [len(prompt) + steps - 1, vocab]. Generated tokens of Qwen2-VL continue
    from the largest prompt position + 1 on all three streams (its
    rope_deltas)."""
    n = len(prompt)
    delta = start if mrope is None else int(np.max(mrope)) + 1 - n
    rows, tokens = [], []
    with torch.no_grad():
        out = model(torch.tensor([prompt]), position_ids=position_ids_of(arch, n, start, mrope),
                    use_cache=True)
        for s in range(steps):
            rows.append(out.logits[0])
            tokens.append(int(out.logits[0, -1].argmax()))
            if s == steps - 1:
                break
            out = model(torch.tensor([[tokens[-1]]]),
                        position_ids=position_ids_of(arch, 1, n + s + delta),
                        past_key_values=out.past_key_values, use_cache=True)
    return tokens, torch.cat(rows).double().numpy()


def hf_greedy(arch, model, prompt, steps):
    return hf_generate(arch, model, prompt, steps)[0]


def hf_stepwise_logits(arch, model, prompt, tokens, start, exact=False):
    """The logits of every row as generate computes them (prefill, then one
    token at a time through the KV cache), fed the given tokens, of a fresh
    copy of the float32 model or of the float64 model: what a rotary whose
    frequencies change with each forward call's length (dynamic NTK) must
    be compared with. [len(prompt) + len(tokens) - 1, vocab]."""
    model = float64_model(arch, model) if exact else copy.deepcopy(model)
    n, rows = len(prompt), []
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64 if exact else torch.float32)
    try:
        with torch.no_grad(), Float64Softmax():
            out = model(torch.tensor([prompt]), position_ids=position_ids_of(arch, n, start),
                        use_cache=True)
            rows.append(out.logits[0])
            for s, token in enumerate(tokens[:-1]):
                out = model(torch.tensor([[token]]), position_ids=position_ids_of(arch, 1, start + n + s),
                            past_key_values=out.past_key_values, use_cache=True)
                rows.append(out.logits[0])
    finally:
        torch.set_default_dtype(default)
    return torch.cat(rows).double().numpy()


def distance(a, reference):
    return float(np.max(np.abs(a - reference)) / np.max(np.abs(reference)))


# ---- the tests -------------------------------------------------------------------

@pytest.mark.parametrize("arch", [a for a in EXACT_ARCHS if a != "xglm"])
def test_exact_frequencies_are_hf_inv_freq(models, arch):
    """The exact frequencies and amplitude are the formulas Hugging Face
    rounds to float32."""
    model, _ = models[arch]
    frequencies, amplitude = exact_rotary_frequencies(model.config)
    ours = np.array([float(w) for w in frequencies])
    rotary = model.model.rotary_emb
    assert np.allclose(ours, rotary.inv_freq.double().numpy(), rtol=1e-6, atol=0)
    assert abs(float(amplitude) - rotary.attention_scaling) <= 1e-6


@pytest.mark.parametrize("arch", ["llama", "xglm"])
def test_float64_model_is_float64_throughout(models, arch):
    """The float64 reference's norms and softmax are float64: it differs
    from Hugging Face's model.double() (float32 RMSNorm and softmax) at
    position 0 by far more than float64 rounding."""
    model, _ = models[arch]
    ids = PROMPT
    ours = hf_logits(arch, model, ids, 0, exact=True)
    with torch.no_grad():
        default = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            theirs = copy.deepcopy(model).double()(torch.tensor([ids])).logits[0].numpy()
        finally:
            torch.set_default_dtype(default)
    d = distance(theirs, ours)
    print(f"{arch}: model.double() vs the float64 model {d:.2e}")
    if arch == "llama":
        assert d > 1e-9  # its float32 norms and softmax show
    assert d < 1e-5


def test_xglm_row_formula_is_hf_table(models):
    """The float32 formula used beyond XGLM's table is the table's own."""
    model, _ = models["xglm"]
    table = model.model.embed_positions
    rows = torch.arange(table.weights.shape[0])
    assert torch.equal(xglm_rows_float32(rows, model.config.d_model, table.padding_idx),
                       table.weights)


@pytest.mark.parametrize("arch", ARCHS)
def test_from_position_zero_matches_hf_float32(decoder, models, arch, tmp_path):
    model, directory = models[arch]
    tokens, logits = run_decoder(decoder, directory, tmp_path, 0)
    hf_tokens, reference = hf_generate(arch, model, PROMPT, STEPS)
    assert tokens == hf_tokens
    assert len(set(tokens)) > 1, "a degenerate model: greedy decoding repeats one token"
    assert logits.shape == reference.shape
    d = distance(logits, reference)
    print(f"{arch} start 0: clpe-decoder vs Hugging Face float32 {d:.2e}")
    assert d <= TOLERANCE


@pytest.mark.parametrize("arch, start", [
    (arch, start) for arch in EXACT_ARCHS for start in LONG_STARTS
    if FULL or start < 2**62 or arch in ("llama", "llama3", "xglm")])
def test_long_context_closer_to_exact_than_hf_float32(decoder, models, arch, start, tmp_path):
    model, directory = models[arch]
    tokens, logits = run_decoder(decoder, directory, tmp_path, start)
    ids = PROMPT + tokens[:-1]
    exact = hf_logits(arch, model, ids, start, exact=True)
    hf32 = hf_logits(arch, model, ids, start)
    ours, theirs = distance(logits, exact), distance(hf32, exact)
    print(f"{arch} start {start}: distance to exact float64: clpe-decoder {ours:.2e}, "
          f"Hugging Face float32 {theirs:.2e}")
    assert ours < theirs
    assert ours <= TOLERANCE


@pytest.mark.parametrize("start", [2**20, 2**40])
def test_dynamic_long_context_closer_to_exact_than_hf_float32(decoder, models, start, tmp_path):
    """Dynamic NTK at long starts, against the float64 model run as generate
    runs it: each forward call takes the frequencies of its own length, and
    the cached keys keep the ones they were rotated with."""
    model, directory = models["llama-dynamic"]
    tokens, logits = run_decoder(decoder, directory, tmp_path, start)
    exact = hf_stepwise_logits("llama-dynamic", model, PROMPT, tokens, start, exact=True)
    hf32 = hf_stepwise_logits("llama-dynamic", model, PROMPT, tokens, start)
    assert logits.shape == exact.shape
    ours, theirs = distance(logits, exact), distance(hf32, exact)
    print(f"llama-dynamic start {start}: distance to exact float64: clpe-decoder {ours:.2e}, "
          f"Hugging Face float32 {theirs:.2e}")
    assert ours < theirs
    assert ours <= TOLERANCE


@pytest.mark.parametrize("start", [2**20, 2**40])
def test_longrope_long_context_closer_to_exact_than_hf_float32(decoder, models, start, tmp_path):
    """LongRoPE past max_position_embeddings takes the long factors, as
    Phi-3 and vLLM do (transformers 4.49's Llama keeps the short ones at
    every length): both references are the model with its long factors in
    place of the short ones."""
    model, directory = models["llama-longrope"]
    tokens, logits = run_decoder(decoder, directory, tmp_path, start)
    long_model = copy.deepcopy(model)
    scaling = dict(long_model.config.rope_scaling)
    scaling["short_factor"] = list(scaling["long_factor"])
    long_model.config.rope_scaling = scaling
    long_model.model.rotary_emb = type(model.model.rotary_emb)(config=long_model.config)
    ids = PROMPT + tokens[:-1]
    exact = hf_logits("llama-longrope", long_model, ids, start, exact=True)
    hf32 = hf_logits("llama-longrope", long_model, ids, start)
    assert logits.shape == exact.shape
    ours, theirs = distance(logits, exact), distance(hf32, exact)
    print(f"llama-longrope start {start}: distance to exact float64: clpe-decoder {ours:.2e}, "
          f"Hugging Face float32 {theirs:.2e}")
    assert ours < theirs
    assert ours <= TOLERANCE


@pytest.mark.parametrize("arch", SOME_ARCHS)
def test_launch_shapes_bit_identical(decoder, models, arch, tmp_path):
    _, directory = models[arch]
    for start in (0, 2**24):
        tokens, logits = run_decoder(decoder, directory, tmp_path, start)
        tokens1, logits1 = run_decoder(decoder, directory, tmp_path, start,
                                       env={"CLPE_PAIRS_PER_ITEM": "1"})
        assert tokens1 == tokens
        assert logits1.tobytes() == logits.tobytes()


@pytest.mark.parametrize("arch", [a for a in SOME_ARCHS if a != "xglm"])
def test_rope_modes_bit_identical(decoder, models, arch, tmp_path):
    """--rope kv (clpe_enqueue_rope_kv into the paged cache, the default),
    --rope two-pass (clpe_enqueue_rope, then a copy) and --rope device
    (clpe_device.h inside the decoder's attention and cache write) give the
    same bits."""
    _, directory = models[arch]
    for start in (0, 2**24, 2**62) if FULL or arch == "llama" else (0, 2**62):
        tokens, logits = run_decoder(decoder, directory, tmp_path, start)
        # --rope device rotates with one object's words at one position per
        # token: not M-RoPE, nor a rotary that changes with the length
        device = arch not in ("qwen2_vl", "llama-dynamic", "llama-longrope")
        for mode in ("two-pass", "device") if device else ("two-pass",):
            tokens_m, logits_m = run_decoder(decoder, directory, tmp_path, start,
                                             extra=["--rope", mode])
            assert tokens_m == tokens, mode
            assert logits_m.tobytes() == logits.tobytes(), mode


@pytest.mark.parametrize("dtype, near", [("f16", 5e-3), ("bf16", 5e-2)])
def test_half_caches(decoder, models, dtype, near, tmp_path):
    """A float16 or bfloat16 KV cache (--kv-cache-dtype): the three --rope
    modes still give the same bits (each rounds to nearest even as it
    writes, as clpe_enqueue_rope_kv does), and the logits stay near the
    float32 cache's."""
    for arch in ("llama", "xglm"):
        _, directory = models[arch]
        _, full = run_decoder(decoder, directory, tmp_path, 2**20)
        tokens, logits = run_decoder(decoder, directory, tmp_path, 2**20,
                                     extra=["--kv-cache-dtype", dtype])
        assert distance(logits, full) <= near, arch
        assert logits.tobytes() != full.tobytes(), arch
        for mode in ("two-pass", "device") if arch == "llama" else ():
            tokens_m, logits_m = run_decoder(decoder, directory, tmp_path, 2**20,
                                             extra=["--kv-cache-dtype", dtype, "--rope", mode])
            assert tokens_m == tokens and logits_m.tobytes() == logits.tobytes(), mode


# An FP8 cache's logits beside the float32 cache's, the same tokens fed
# (relative to the largest logit; measured on the tiny Llama at start 2^20:
# fp8_e4m3 1.7e-1 at scale 1, 1.6e-1 at scales 0.25,4; fp8_e5m2 2.1e-1; a
# float16 cache 8.4e-4). FP8 keeps 3 (E4M3) or 2 (E5M2) bits after the
# leading one, a relative step of 2^-3 or 2^-2, against float16's 2^-10.
FP8_NEAR = {"fp8_e4m3": 0.25, "fp8_e5m2": 0.35}


def test_fp8_caches(decoder, models, tmp_path):
    """FP8 KV caches (--kv-cache-dtype fp8_e4m3 / fp8_e5m2, written by
    clpe_enqueue_rope_kv, read with clpe_device.h's clpe_fp8_*_to_float):
    --rope kv and --rope device give the same bits, with the default scales
    and with different key and value scales; the logits of the same tokens
    stay within FP8_NEAR of the float32 cache's whatever the scales (a key
    scale applied to the values, or a scale left out, is 4 to 16 times
    off); the cache takes a quarter of the float32 cache's memory."""
    _, directory = models["llama"]
    start = 2**20
    f32_tokens, _ = run_decoder(decoder, directory, tmp_path, start)
    fed = PROMPT + f32_tokens[:-1]  # every row's logits for the same tokens
    _, full = run_decoder(decoder, directory, tmp_path, start, steps=1, prompt=fed)
    for dtype, scales in (("fp8_e4m3", None), ("fp8_e4m3", "0.25,4"), ("fp8_e5m2", None)):
        extra = ["--kv-cache-dtype", dtype] + (["--kv-scale", scales] if scales else [])
        tokens, logits = run_decoder(decoder, directory, tmp_path, start, steps=1, prompt=fed,
                                     extra=extra)
        d = distance(logits, full)
        print(f"{dtype} cache, scales {scales or '1,1'}: logits vs the float32 cache's {d:.2e}")
        assert d <= FP8_NEAR[dtype], (dtype, scales)
        assert logits.tobytes() != full.tobytes()
        if scales is None or dtype == "fp8_e4m3":
            tokens_d, logits_d = run_decoder(decoder, directory, tmp_path, start, steps=1,
                                             prompt=fed, extra=extra + ["--rope", "device"])
            assert tokens_d == tokens and logits_d.tobytes() == logits.tobytes(), (dtype, scales)
    stats = {}
    for dtype in ("f32", "fp8_e4m3"):
        result = subprocess.run([str(decoder), str(directory), "--prompt", "1,2,3", "--steps",
                                 "1", "--stats", "--kv-cache-dtype", dtype],
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        line = [x for x in result.stdout.splitlines() if x.startswith("KV cache:")][0]
        stats[dtype] = float(line.split(" MiB")[0].split(", ")[-1])
    assert "fp8_e4m3" in line and "one clpe call per layer" in result.stdout
    assert stats["fp8_e4m3"] * 4 == pytest.approx(stats["f32"], rel=1e-2), stats


class Fp8KvCache:
    """Hugging Face Llama's keys and values through an FP8 cache, as vLLM's
    reshape_and_cache writes it and clpe_enqueue_rope_kv documents it: x /
    scale in float32, saturated to the format's largest finite value,
    rounded to nearest even by ml_dtypes; read back as the byte's value
    times the scale in float32. Patches eager attention (the model must run
    with _attn_implementation "eager")."""

    LARGEST = {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0}

    def __init__(self, dtype, key_scale, value_scale):
        ml_dtypes = need("ml_dtypes")
        self.fp8 = {"fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2}[dtype]
        self.largest = self.LARGEST[dtype]
        self.scales = (np.float32(key_scale), np.float32(value_scale))

    def round(self, x, scale):
        q = np.clip((x.numpy() / scale).astype(np.float32), -self.largest, self.largest)
        return torch.from_numpy(q.astype(self.fp8).astype(np.float32) * scale)

    def __enter__(self):
        from transformers.models.llama import modeling_llama
        self.module = modeling_llama
        self.original = original = modeling_llama.eager_attention_forward

        def attention(module, query, key, value, *args, **kwargs):
            return original(module, query, self.round(key, self.scales[0]),
                            self.round(value, self.scales[1]), *args, **kwargs)
        modeling_llama.eager_attention_forward = attention
        return self

    def __exit__(self, *exc):
        self.module.eager_attention_forward = self.original


def test_fp8_cache_is_hf_with_an_fp8_cache(decoder, models, tmp_path):
    """From position 0, where Hugging Face float32's rotary is clpe's to
    float32 rounding, clpe-decoder with an FP8 cache gives the logits of
    Hugging Face's model whose attention reads keys and values rounded
    through the same FP8 cache (Fp8KvCache), far closer than either is to
    the float32 cache's: the cache is written and read with the scales
    where they belong. Measured: fp8_e4m3 at scales 0.5,2 7.8e-7,
    fp8_e5m2 6.9e-7, against 1.2e-1 and 2.0e-1 from Hugging Face with a
    float32 cache."""
    model, directory = models["llama"]
    model = copy.deepcopy(model)
    model.config._attn_implementation = "eager"
    f32_tokens, _ = run_decoder(decoder, directory, tmp_path, 0)
    fed = PROMPT + f32_tokens[:-1]
    for dtype, scales in (("fp8_e4m3", (0.5, 2.0)), ("fp8_e5m2", (1.0, 1.0))):
        _, logits = run_decoder(decoder, directory, tmp_path, 0, steps=1, prompt=fed,
                                extra=["--kv-cache-dtype", dtype, "--kv-scale",
                                       ",".join(map(str, scales))])
        with Fp8KvCache(dtype, *scales):
            reference = hf_logits("llama", model, fed, 0)
        plain = hf_logits("llama", model, fed, 0)
        d, apart = distance(logits, reference), distance(logits, plain)
        print(f"{dtype} cache, scales {scales}: vs Hugging Face with that cache {d:.2e}, "
              f"with a float32 one {apart:.2e}")
        assert d <= 1e-4 and apart > 100 * d, dtype


@pytest.mark.parametrize("arch", ["llama", "llama-dynamic"])
def test_fp8_batch_is_each_sequence_alone(decoder, models, arch, tmp_path):
    """Continuous batching with an FP8 cache (--max-seqs 2, blocks of 4, so
    the third sequence starts in blocks the first gave back): every
    sequence's tokens and logits are its solo run's, bit for bit
    (llama-dynamic: a KV call per sequence and layer, each with its
    length's rotary object)."""
    _, directory = models[arch]
    fp8 = ["--kv-cache-dtype", "fp8_e4m3", "--kv-scale", "0.5,2"]
    batch_seqs = [(PROMPT, 0, 12), ([1, 2, 3], 2**40, 20), ([9, 8, 7, 6, 5], -5, 10)]
    batch = tmp_path / "batch.txt"
    batch.write_text("".join(f"{','.join(map(str, p))} start={s} steps={n}\n"
                             for p, s, n in batch_seqs))
    logits = tmp_path / "batch.npy"
    cmd = [str(decoder), str(directory), "--batch", str(batch), "--max-seqs", "2",
           "--block-size", "4", "--cache-blocks", "16", "--logits", str(logits), "--stats", *fp8]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    lines = {int(line.split(":")[0].split()[1]): [int(t) for t in line.split(":")[1].split()]
             for line in result.stdout.splitlines() if line.startswith("tokens ")}
    assert sorted(lines) == list(range(len(batch_seqs)))
    assert "mixing prefill and decode" in result.stdout
    reused = [line for line in result.stdout.splitlines() if line.startswith("KV cache:")]
    assert reused and not reused[0].endswith("sequence finished: 0"), result.stdout
    for i, (prompt, start, steps) in enumerate(batch_seqs):
        tokens, solo = run_decoder(decoder, directory, tmp_path, start, steps=steps,
                                   prompt=prompt, extra=fp8)
        assert lines[i] == tokens, i
        assert np.load(tmp_path / f"batch-{i}.npy").tobytes() == solo.tobytes(), i


@pytest.mark.parametrize("arch, args, message", [
    ("llama", ["--kv-cache-dtype", "fp8"], "--kv-cache-dtype takes f32, f16, bf16, fp8_e4m3"),
    ("llama", ["--kv-cache-dtype", "fp8_e4m3", "--kv-scale", "0"], "--kv-scale takes K or K,V"),
    ("llama", ["--kv-cache-dtype", "fp8_e4m3", "--kv-scale", "-1"], "--kv-scale takes"),
    ("llama", ["--kv-cache-dtype", "fp8_e4m3", "--kv-scale", "nan"], "--kv-scale takes"),
    ("llama", ["--kv-cache-dtype", "fp8_e4m3", "--kv-scale", "inf"], "--kv-scale takes"),
    ("llama", ["--kv-cache-dtype", "fp8_e4m3", "--kv-scale", "1e39"], "--kv-scale takes"),
    ("llama", ["--kv-cache-dtype", "fp8_e4m3", "--kv-scale", "1e-50"], "--kv-scale takes"),
    ("llama", ["--kv-cache-dtype", "fp8_e5m2", "--kv-scale", "1,"], "--kv-scale takes"),
    ("llama", ["--kv-cache-dtype", "fp8_e5m2", "--kv-scale", "1,2,3"], "--kv-scale takes"),
    ("llama", ["--kv-cache-dtype", "fp8_e5m2", "--kv-scale", "x"], "--kv-scale takes"),
    ("llama", ["--kv-cache-dtype", "f16", "--kv-scale", "2"], "--kv-scale is for FP8 caches"),
    ("llama", ["--kv-scale", "2"], "--kv-scale is for FP8 caches"),
    ("llama", ["--kv-cache-dtype", "fp8_e4m3", "--rope", "two-pass"],
     "clpe has no other FP8 store"),
    ("xglm", ["--kv-cache-dtype", "fp8_e4m3"], "this model has no rotary"),
])
def test_fp8_bad_options_are_refused(decoder, models, arch, args, message):
    _, directory = models[arch]
    result = subprocess.run([str(decoder), str(directory), "--prompt", "1,2", *args],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
    assert "tokens:" not in result.stdout


def test_stats_show_one_rotary_call_per_layer(decoder, models):
    _, directory = models["llama"]
    result = subprocess.run([str(decoder), str(directory), "--prompt", "1,2,3", "--steps", "4",
                             "--stats"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "rotary: clpe_enqueue_rope_kv" in result.stdout
    assert "one clpe call per layer" in result.stdout
    layers = models["llama"][0].config.num_hidden_layers
    assert f"(1 gather + {layers} layers x 1)" in result.stdout, result.stdout


BATCH = [  # prompt, start, steps: different lengths and starts
    (PROMPT, 0, 40),
    ([1, 2, 3], 2**20, 33),
    (list(range(100, 120)), 2**62, 36),
    ([42], 77, 34),
    ([9, 8, 7, 6, 5], -5, 35),
]


# Qwen2-VL's positions of a prompt with a 2 x 2 image after three text
# tokens: the image's temporal position is constant, its height and width
# positions walk the grid; the text after it continues from the largest + 1.
MROPE = [[0, 1, 2, 3, 3, 3, 3, 5],
         [0, 1, 2, 3, 3, 4, 4, 5],
         [0, 1, 2, 3, 4, 3, 4, 5]]


def write_mrope(path):
    np.save(path, np.array(MROPE, dtype=np.int64))
    return path


def test_qwen2_vl_positions_match_hf(decoder, models, tmp_path):
    """Non-trivial [3, tokens] positions (--mrope): the tokens and logits of
    Hugging Face's model given the same position_ids (and generate's
    rope_deltas after the prompt)."""
    model, directory = models["qwen2_vl"]
    mrope = write_mrope(tmp_path / "positions.npy")
    tokens, logits = run_decoder(decoder, directory, tmp_path, 0, extra=["--mrope", str(mrope)])
    hf_tokens, reference = hf_generate("qwen2_vl", model, PROMPT, STEPS, mrope=MROPE)
    text_tokens, _ = hf_generate("qwen2_vl", model, PROMPT, STEPS)
    assert tokens == hf_tokens
    d = distance(logits, reference)
    print(f"qwen2_vl [3, tokens] positions: clpe-decoder vs Hugging Face float32 {d:.2e}")
    assert d <= TOLERANCE
    _, text_logits = run_decoder(decoder, directory, tmp_path, 0)
    assert text_logits.tobytes() != logits.tobytes()  # the positions matter


@pytest.mark.parametrize("arch", ["llama", "llama-dynamic", "qwen2_vl", "xglm"])
def test_batch_is_each_sequence_alone(decoder, models, arch, tmp_path):
    """Continuous batching through one paged cache: at most 3 sequences at
    once, so later ones start (their prefill in the same forward call as the
    others' decode steps) in blocks that finished ones gave back; every
    sequence's tokens and logits are its solo run's, bit for bit (Qwen2-VL:
    one sequence with [3, tokens] positions; llama-dynamic: one rotary
    object per sequence length, several calls per layer)."""
    _, directory = models[arch]
    mrope = write_mrope(tmp_path / "positions.npy") if arch == "qwen2_vl" else None
    batch = tmp_path / "batch.txt"
    batch.write_text("# prompt start steps\n" + "".join(
        f"{','.join(map(str, p))} start={s} steps={n}"
        + (f" mrope={mrope}" if mrope and i == 0 else "") + "\n"
        for i, (p, s, n) in enumerate(BATCH)))
    logits = tmp_path / "batch.npy"
    cmd = [str(decoder), str(directory), "--batch", str(batch), "--max-seqs", "3",
           "--block-size", "4", "--cache-blocks", "40", "--logits", str(logits), "--stats"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    lines = {int(line.split(":")[0].split()[1]): [int(t) for t in line.split(":")[1].split()]
             for line in result.stdout.splitlines() if line.startswith("tokens ")}
    assert sorted(lines) == list(range(len(BATCH)))
    assert "mixing prefill and decode" in result.stdout
    reused = [line for line in result.stdout.splitlines() if line.startswith("KV cache:")]
    assert reused and not reused[0].endswith("sequence finished: 0"), result.stdout
    for i, (prompt, start, steps) in enumerate(BATCH):
        extra = ["--mrope", str(mrope)] if mrope and i == 0 else []
        tokens, solo = run_decoder(decoder, directory, tmp_path, start, steps=steps,
                                   prompt=prompt, extra=extra)
        assert lines[i] == tokens, i
        batched = np.load(tmp_path / f"batch-{i}.npy")
        assert batched.tobytes() == solo.tobytes(), i


@pytest.mark.parametrize("arch", ["llama", "llama3"])
def test_rotary_logits_do_not_depend_on_start(decoder, models, arch, tmp_path):
    """Rotary attention sees only position differences, so exact rotations
    give the logits of start 0 at any start, to float32 rounding."""
    model, directory = models[arch]
    tokens, at_zero = run_decoder(decoder, directory, tmp_path, 0)
    for start in LONG_STARTS:
        tokens_s, at_start = run_decoder(decoder, directory, tmp_path, start)
        hf32 = hf_logits(arch, model, PROMPT + tokens[:-1], start)
        ours, theirs = distance(at_start, at_zero), distance(hf32, at_zero)
        print(f"{arch} start {start} vs start 0: clpe-decoder {ours:.2e}, "
              f"Hugging Face float32 {theirs:.2e}")
        assert tokens_s == tokens
        assert ours <= 1e-5


def rusticl_present(decoder, directory, tmp_path):
    probe = subprocess.run([str(decoder), str(directory), "--prompt", "1", "--steps", "0",
                            "--device", "rusticl"], capture_output=True, text=True, timeout=600,
                           env={**os.environ, "RUSTICL_ENABLE": "llvmpipe"})
    return probe.returncode == 0 or "no OpenCL device" not in probe.stderr


@pytest.mark.parametrize("arch", ["llama", "xglm"])  # a minute each: one Llama is enough
def test_rusticl(decoder, models, arch, tmp_path):
    model, directory = models[arch]
    if not rusticl_present(decoder, directory, tmp_path):
        pytest.skip("no Rusticl device (mesa-opencl-icd with RUSTICL_ENABLE=llvmpipe)")
    env = {"RUSTICL_ENABLE": "llvmpipe", "CLPE_DEVICE": "rusticl"}
    tokens, logits = run_decoder(decoder, directory, tmp_path, 0, env=env)
    assert tokens == hf_greedy(arch, model, PROMPT, STEPS)
    assert distance(logits, hf_logits(arch, model, PROMPT + tokens[:-1], 0)) <= TOLERANCE
    start = 2**24
    tokens, logits = run_decoder(decoder, directory, tmp_path, start, env=env)
    ids = PROMPT + tokens[:-1]
    exact = hf_logits(arch, model, ids, start, exact=True)
    ours, theirs = distance(logits, exact), distance(hf_logits(arch, model, ids, start), exact)
    print(f"{arch} Rusticl start {start}: clpe-decoder {ours:.2e}, "
          f"Hugging Face float32 {theirs:.2e}")
    assert ours < theirs and ours <= TOLERANCE
    if arch == "llama":
        # the three ways into the paged cache, and a sequence in a batch
        for mode in ("two-pass", "device"):
            _, other = run_decoder(decoder, directory, tmp_path, start, env=env,
                                   extra=["--rope", mode])
            assert other.tobytes() == logits.tobytes(), mode
        logits_path = tmp_path / "rusticl-batch.npy"
        result = subprocess.run(
            [str(decoder), str(directory), "--prompt", ",".join(map(str, PROMPT)),
             "--prompt", "1,2,3", "--steps", str(STEPS), "--start", str(start),
             "--logits", str(logits_path)],
            capture_output=True, text=True, timeout=600, env={**os.environ, **env})
        assert result.returncode == 0, result.stderr
        assert np.load(tmp_path / "rusticl-batch-0.npy").tobytes() == logits.tobytes()


@pytest.mark.parametrize("args, message", [
    (["--prompt", "1,2,x"], "token ids"),
    (["--prompt", "1,512"], "token ids"),
    (["--prompt", "1,2", "--start", str(2**63 - 2)], "leaves int64"),
    (["--prompt", "1", "--steps", "-1"], "--steps"),
    (["--prompt", "1", "--start", "9223372036854775808"], "--start"),
])
def test_bad_input_is_refused(decoder, models, args, message):
    _, directory = models["llama"]
    result = subprocess.run([str(decoder), str(directory), *args], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 2
    assert message in result.stderr
    assert "tokens:" not in result.stdout


def test_missing_model_is_refused(decoder, tmp_path):
    result = subprocess.run([str(decoder), str(tmp_path), "--prompt", "1"], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 1
    assert "config.json" in result.stderr


def broken_copy(directory, tmp_path, config_edit=None, safetensors_edit=None):
    import json
    import shutil
    out = tmp_path / "broken"
    shutil.copytree(directory, out)
    if config_edit:
        config = json.loads((out / "config.json").read_text())
        config_edit(config)
        (out / "config.json").write_text(json.dumps(config))
    if safetensors_edit:
        path = out / "model.safetensors"
        path.write_bytes(safetensors_edit(path.read_bytes()))
    return out


def edit_tensors(edit):
    """A safetensors_edit that changes the file's tensors (a dict of name to
    float32 tensor) with edit, written back as save_pretrained would."""
    def apply(data):
        from safetensors.torch import load, save
        tensors = dict(load(data))
        edit(tensors)
        return save(tensors, metadata={"format": "pt"})
    return apply


def poison(value):
    def edit(tensors):
        tensors["model.layers.1.mlp.up_proj.weight"][3, 5] = value
    return edit


@pytest.mark.parametrize("config_edit, safetensors_edit, message", [
    (lambda c: c.update(model_type="gpt2"), None, "model_type 'gpt2' is not supported"),
    (lambda c: c.update(hidden_size=32, head_dim=8), None,
     "has shape [512, 64], expected [512, 32]"),
    (lambda c: c.update(rope_scaling={"rope_type": "su", "factor": 2.0}), None,
     "rope_scaling.rope_type 'su' is not a rotary scaling clpe knows"),
    (lambda c: c.update(intermediate_size=128, rms_norm_eps=1e-6), None,
     "'model.layers.0.mlp.gate_proj.weight' has shape [160, 64], expected [128, 64]"),
    (lambda c: c.update(num_hidden_layers=3), None,
     "'model.layers.2.input_layernorm.weight' is missing"),
    (None, lambda b: b[: len(b) // 2], "outside the file"),
    (None, lambda b: (1 << 40).to_bytes(8, "little") + b[8:], "header longer than the file"),
    (None, lambda b: b[:8] + b"[" + b[9:], "header: JSON"),
    # Hugging Face raises on these; the decoder refuses them naming the field
    (lambda c: c.update(rope_theta="500000"), None, "rope_theta must be a number"),
    (lambda c: c.update(rms_norm_eps="abc"), None, "rms_norm_eps must be a number"),
    (lambda c: c.update(num_key_value_heads=2.0), None, "num_key_value_heads must be an integer"),
    (lambda c: c.update(tie_word_embeddings="no"), None, "tie_word_embeddings must be true or false"),
    (lambda c: c.update(rope_scaling="linear"), None, "rope_scaling must be an object or null"),
    (lambda c: c.update(rope_scaling={"rope_type": "linear"}), None,
     "rope_scaling.factor is missing; rope_type linear needs it"),
    (lambda c: c.update(rope_scaling={"rope_type": "linear", "factor": "2"}), None,
     "rope_scaling.factor must be a number"),
    (lambda c: c.update(rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                      "low_freq_factor": 1.0, "high_freq_factor": 4.0}), None,
     "rope_scaling.original_max_position_embeddings is missing"),
    (lambda c: c.update(rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                      "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                      "original_max_position_embeddings": 64.5}), None,
     "rope_scaling.original_max_position_embeddings must be an integer"),
    (lambda c: c.update(rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                      "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                      "original_max_position_embeddings": 1e30}), None,
     "rope_scaling.original_max_position_embeddings must be an integer"),
    (lambda c: c.update(rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                      "low_freq_factor": 4.0, "high_freq_factor": 1.0,
                                      "original_max_position_embeddings": 64}), None,
     "high_freq_factor"),
    # untied, and no lm_head.weight to read
    (None, edit_tensors(lambda t: t.pop("lm_head.weight")),
     "'lm_head.weight' is missing and tie_word_embeddings is false"),
    (None, edit_tensors(poison(float("nan"))),
     "'model.layers.1.mlp.up_proj.weight' holds NaN at element 197"),
    (None, edit_tensors(poison(float("-inf"))), "holds infinity"),
])
def test_bad_model_is_refused(decoder, models, tmp_path, config_edit, safetensors_edit, message):
    _, directory = models["llama"]
    broken = broken_copy(directory, tmp_path, config_edit, safetensors_edit)
    result = subprocess.run([str(decoder), str(broken), "--prompt", "1"], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 1, result.stderr
    assert message in result.stderr
    assert "tokens:" not in result.stdout


def add_biases(tensors):
    generator = torch.Generator().manual_seed(1)
    for name in list(tensors):
        if name.endswith(("_proj.weight",)):
            rows = tensors[name].shape[0]
            tensors[name[: -len("weight")] + "bias"] = torch.randn(rows, generator=generator)


def different_lm_head(tensors):
    tensors["lm_head.weight"] = tensors["lm_head.weight"].flip(0).contiguous()


@pytest.mark.parametrize("config_edit, safetensors_edit", [
    # attention_bias false (and mlp_bias false): the bias tensors in the file
    # are ignored, as Hugging Face ignores them
    (None, edit_tensors(add_biases)),
    # tie_word_embeddings true: lm_head and the input embedding are one
    # matrix even where the file holds two different ones (transformers
    # 4.49 loads the tied parameter from both names, lm_head.weight last)
    (lambda c: c.update(tie_word_embeddings=True), edit_tensors(different_lm_head)),
])
def test_config_read_as_hf_reads_it(decoder, models, tmp_path, config_edit, safetensors_edit):
    _, directory = models["llama"]
    odd = broken_copy(directory, tmp_path, config_edit, safetensors_edit)
    model = transformers.AutoModelForCausalLM.from_pretrained(odd, torch_dtype=torch.float32)
    model.eval()
    tokens, logits = run_decoder(decoder, odd, tmp_path, 0)
    assert tokens == hf_greedy("llama", model, PROMPT, STEPS)
    assert distance(logits, hf_logits("llama", model, PROMPT + tokens[:-1], 0)) <= TOLERANCE
