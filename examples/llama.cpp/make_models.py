#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tiny GGUF models with random weights for the llama.cpp checks.

    make_models.py OUT_DIR      (gguf-py on PYTHONPATH: llama.cpp's own gguf-py)

Writes five float32 models, each with the rotary of a real family:
  llama.gguf         Llama: interleaved pairs (ggml's normal mode), base 10000
  llama3.gguf        Llama 3.1: base 500000 and llama3 scaling, as the
                     rope_freqs factors convert_hf_to_gguf.py computes
  qwen2.gguf         Qwen2: rotate_half pairs (neox mode), base 1000000,
                     q/k/v biases
  yarn.gguf          Llama with YaRN (factor 4, original context 512)
  qwen2vl.gguf       Qwen2-VL's language model: M-RoPE (ggml's multi mode),
                     sections [4, 6, 6, 0] of the 16 pairs (Qwen2-VL's
                     [16, 24, 24, 0] for heads of 128, scaled to heads of 32),
                     base 1000000, q/k/v biases; on text, llama.cpp gives
                     every section the token's position

The weights are seeded numpy normals, scaled so that the logits are
spread well apart (greedy tokens then do not hinge on the last bit of a
matrix product); the tokenizer is a small SentencePiece-style vocabulary
made here: the byte tokens, the letters and some frequent English pieces,
with scores that make the longer pieces win. No torch, no download.
"""
import math
import sys
from pathlib import Path

import numpy as np
import gguf

N_EMBD = 128
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = N_EMBD // N_HEAD
N_FF = 256
N_LAYER = 2
N_CTX = 8192

PIECES = ("the and ing ion ent for tha ter hat his ere was you ith ver all wit "
          "thi tio hello world once upon time there lived small model rotary "
          "position exact angle sine cosine token").split()


def vocab():
    """(tokens, scores, types) of an SPM vocabulary with byte fallback."""
    tokens = ["<unk>", "<s>", "</s>"]
    scores = [0.0, 0.0, 0.0]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for b in range(256):
        tokens.append(f"<0x{b:02X}>")
        scores.append(0.0)
        types.append(gguf.TokenType.BYTE)
    pieces = ["\u2581"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces += [chr(c) for c in range(ord("A"), ord("Z") + 1)] + list(".,!?'")
    for word in PIECES:
        for n in range(2, len(word) + 1):
            for cand in (word[:n], "\u2581" + word[:n]):
                if cand not in pieces:
                    pieces.append(cand)
        if "\u2581" + word not in pieces:
            pieces.append("\u2581" + word)
    for p in pieces:
        tokens.append(p)
        scores.append(float(len(p)) - 100.0)  # longer pieces merge first
        types.append(gguf.TokenType.NORMAL)
    return tokens, scores, types


def llama3_factors(base, dim, factor=8.0, low=1.0, high=4.0, old_ctx=8192):
    """rope_freqs as convert_hf_to_gguf.py writes them for llama3 scaling."""
    out = []
    for i in range(0, dim, 2):
        freq = 1.0 / (base ** (i / dim))
        wavelen = 2 * math.pi / freq
        if wavelen < old_ctx / high:
            out.append(1.0)
        elif wavelen > old_ctx / low:
            out.append(factor)
        else:
            smooth = (old_ctx / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write(path, arch, seed, base, factors=None, yarn=None, bias=False, sections=None):
    rng = np.random.default_rng(seed)
    tokens, scores, types = vocab()
    n_vocab = len(tokens)

    def mat(rows, cols, scale=1.0):
        return (rng.standard_normal((rows, cols)) * scale / math.sqrt(cols)).astype(np.float32)

    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"clpe tiny {path.stem}")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(base)
    if sections is not None:
        w.add_rope_dimension_sections(sections)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    if yarn:
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(yarn["factor"])
        w.add_rope_scaling_orig_ctx_len(yarn["original"])
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    # numpy shapes are ggml's ne reversed: [n_out, n_in]
    w.add_tensor("token_embd.weight", rng.standard_normal((n_vocab, N_EMBD)).astype(np.float32))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    w.add_tensor("output.weight", mat(n_vocab, N_EMBD, 4.0))
    if factors is not None:
        w.add_tensor("rope_freqs.weight", factors)
    kv = N_HEAD_KV * HEAD_DIM
    for i in range(N_LAYER):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", mat(N_EMBD, N_EMBD, 2.0))
        w.add_tensor(f"blk.{i}.attn_k.weight", mat(kv, N_EMBD, 2.0))
        w.add_tensor(f"blk.{i}.attn_v.weight", mat(kv, N_EMBD))
        if bias:
            w.add_tensor(f"blk.{i}.attn_q.bias", (rng.standard_normal(N_EMBD) * 0.5).astype(np.float32))
            w.add_tensor(f"blk.{i}.attn_k.bias", (rng.standard_normal(kv) * 0.5).astype(np.float32))
            w.add_tensor(f"blk.{i}.attn_v.bias", (rng.standard_normal(kv) * 0.5).astype(np.float32))
        w.add_tensor(f"blk.{i}.attn_output.weight", mat(N_EMBD, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", mat(N_FF, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_up.weight", mat(N_FF, N_EMBD))
        w.add_tensor(f"blk.{i}.ffn_down.weight", mat(N_EMBD, N_FF))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    write(out / "llama.gguf", "llama", 1, 10000.0)
    write(out / "llama3.gguf", "llama", 2, 500000.0, factors=llama3_factors(500000.0, HEAD_DIM))
    write(out / "qwen2.gguf", "qwen2", 3, 1000000.0, bias=True)
    write(out / "yarn.gguf", "llama", 4, 10000.0, yarn={"factor": 4.0, "original": 512})
    write(out / "qwen2vl.gguf", "qwen2vl", 5, 1000000.0, bias=True, sections=[4, 6, 6, 0])


if __name__ == "__main__":
    main()
