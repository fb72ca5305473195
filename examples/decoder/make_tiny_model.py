#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Create a tiny random-initialised Hugging Face model directory for clpe-decoder.

    python3 examples/decoder/make_tiny_model.py llama /tmp/tiny-llama
    build/examples/decoder/clpe-decoder /tmp/tiny-llama --prompt 1,2,3,4 --steps 8

The model is LlamaForCausalLM ("llama"; "llama3": with Llama 3.1's rotary
scaling and tied embeddings; "llama-dynamic", "llama-yarn", "llama-longrope":
with those scalings), MistralForCausalLM ("mistral", a sliding window of 6),
Qwen2ForCausalLM ("qwen2", q/k/v biases), Qwen2VLForConditionalGeneration
("qwen2_vl": M-RoPE, a tiny vision tower the decoder does not run) or
XGLMForCausalLM ("xglm") with a few layers, a small width and vocabulary and
weights from a fixed seed, saved with
save_pretrained as config.json + model.safetensors. Needs torch and
transformers. tests/frameworks/test_decoder_hf.py builds its models with the
same function.
"""
import argparse
import sys


def tiny_config(arch):
    """The configuration of the tiny model of an architecture."""
    import transformers

    if arch == "llama":
        return transformers.LlamaConfig(
            vocab_size=512, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
            rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False)
    if arch == "llama3":
        # Llama 3.1's rotary scaling (its long wavelengths stretched, a
        # smooth band between) and tied input and output embeddings
        return transformers.LlamaConfig(
            vocab_size=512, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
            rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
            rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 64})
    small_llama = dict(vocab_size=512, hidden_size=64, intermediate_size=160,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                       rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False)
    if arch == "llama-dynamic":
        # max_position_embeddings 8: the decode steps of an 8-token prompt go
        # past it, where the base grows with the length
        return transformers.LlamaConfig(max_position_embeddings=8, **small_llama,
                                        rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    if arch == "llama-yarn":
        # no rope_scaling.original_max_position_embeddings: transformers 4.49
        # ignores it (and ramps over max_position_embeddings)
        return transformers.LlamaConfig(
            max_position_embeddings=64, **small_llama,
            rope_scaling={"rope_type": "yarn", "factor": 4.0})
    if arch == "llama-longrope":
        # head_dim 16: 8 factors each. The short factors up to
        # max_position_embeddings, the long ones past it (as Phi-3 and later
        # transformers switch; 4.49's Llama keeps the short ones throughout)
        pairs = 8
        return transformers.LlamaConfig(
            max_position_embeddings=64, **small_llama,
            rope_scaling={"rope_type": "longrope", "factor": 4.0,
                          "short_factor": [1.0 + 0.1 * i for i in range(pairs)],
                          "long_factor": [1.5 + 0.5 * i for i in range(pairs)]})
    if arch == "mistral":
        return transformers.MistralConfig(
            vocab_size=512, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=10000.0,
            sliding_window=6, tie_word_embeddings=False)
    if arch == "qwen2":
        return transformers.Qwen2Config(
            vocab_size=512, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
            rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True)
    if arch == "qwen2_vl":
        return transformers.Qwen2VLConfig(
            vocab_size=512, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
            rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=False,
            rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
            vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2,
                           "patch_size": 2, "temporal_patch_size": 1, "spatial_merge_size": 1})
    if arch == "xglm":
        return transformers.XGLMConfig(
            vocab_size=512, d_model=64, ffn_dim=160, num_layers=2, attention_heads=4,
            max_position_embeddings=64, activation_function="gelu", scale_embedding=True,
            dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, layerdrop=0.0,
            tie_word_embeddings=False)
    raise ValueError(f"unknown architecture {arch!r} ({', '.join(ARCHS)})")


ARCHS = ["llama", "llama3", "llama-dynamic", "llama-yarn", "llama-longrope", "mistral", "qwen2",
         "qwen2_vl", "xglm"]


SMALL = {  # --small: a larger model for timing (about 30M parameters)
    "llama": dict(vocab_size=8192, hidden_size=512, intermediate_size=1408, num_hidden_layers=8,
                  num_attention_heads=8, num_key_value_heads=8, head_dim=64,
                  max_position_embeddings=2048),
    "xglm": dict(vocab_size=8192, d_model=512, ffn_dim=1408, num_layers=8, attention_heads=8,
                 max_position_embeddings=2048),
}
for _arch in ("llama3", "llama-dynamic", "llama-yarn", "mistral", "qwen2"):
    SMALL[_arch] = SMALL["llama"]


def make_model(arch, seed=0, init_std=0.2, small=False):
    """A tiny model with random weights from seed. init_std is larger than
    Hugging Face's default 0.02 so that the logits differ visibly between
    tokens and positions."""
    import torch
    import transformers

    config = tiny_config(arch)
    if small:
        if arch not in SMALL:
            raise ValueError(f"--small is not made for {arch} (its rotary sections are "
                             "sized for the tiny head)")
        for key, value in SMALL[arch].items():
            setattr(config, key, value)
    config.initializer_range = init_std
    if arch == "xglm":
        config.init_std = init_std
    torch.manual_seed(seed)
    cls = {"xglm": transformers.XGLMForCausalLM, "mistral": transformers.MistralForCausalLM,
           "qwen2": transformers.Qwen2ForCausalLM,
           "qwen2_vl": transformers.Qwen2VLForConditionalGeneration}.get(
               arch, transformers.LlamaForCausalLM)
    model = cls(config).eval()
    # Norm weights and biases start at 1 and 0; give them values too, so that
    # a wrong weight or a missing bias shows in the comparison.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("arch", choices=ARCHS)
    parser.add_argument("out_dir")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--small", action="store_true",
                        help="8 layers, hidden 512, vocabulary 8192 instead (for timing)")
    args = parser.parse_args()
    model = make_model(args.arch, args.seed, small=args.small)
    model.save_pretrained(args.out_dir, safe_serialization=True)
    print(f"{args.out_dir}: {args.arch}, {sum(p.numel() for p in model.parameters())} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
