# SPDX-License-Identifier: Apache-2.0
"""End to end: Hugging Face M2M100's input stage (scaled token embedding +
sinusoidal position embedding with pad-aware positions) replaced by clpe on
PyOpenCL buffers. The model is built from a small config with random
weights (nothing downloaded). HF computes its table in float32 with exp and
sin; clpe's is exact, so the encoder's hidden states agree to float32
rounding, not bit for bit, while clpe's own input stage matches its host
emulation bit for bit."""
import numpy as np

import clpe
from conftest import assert_same_bits, need

PAD = 1  # M2M100's pad_token_id, which is also its padding_idx


def small_model(torch, transformers):
    torch.manual_seed(0)
    config = transformers.M2M100Config(
        vocab_size=96, d_model=32, encoder_layers=2, decoder_layers=1,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=64, scale_embedding=True,
        pad_token_id=PAD, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    return transformers.M2M100Model(config).eval()


def allow_encoder_forward(torch, monkeypatch):
    """Debian 12's torch 1.13 cannot import torch.distributed.fsdp under
    Python 3.11 (a dataclass in torch.distributed._shard is refused), and
    transformers' encoder forward imports it only to ask whether the module
    is FSDP-managed. It is not: answer that without the import."""
    try:
        import torch.distributed.fsdp  # noqa: F401
    except (ImportError, ValueError):
        from transformers.models.m2m_100 import modeling_m2m_100
        monkeypatch.setattr(modeling_m2m_100, "is_fsdp_managed_module", lambda module: False)


def test_m2m100_encoder_with_clpe_input_stage(cl, context, queue, monkeypatch):
    torch = need("torch")
    transformers = need("transformers")
    allow_encoder_forward(torch, monkeypatch)
    model = small_model(torch, transformers)
    encoder_hf = model.get_encoder()
    d = model.config.d_model
    # Left padding in the first row, a pad inside the second.
    input_ids = torch.tensor([[PAD, PAD, 5, 17, 42, 9, 2],
                              [7, 8, 9, PAD, 11, 12, 2]])
    attention_mask = input_ids.ne(PAD).long()
    with torch.no_grad():
        reference = encoder_hf(input_ids=input_ids, attention_mask=attention_mask)
        hf_input_stage = encoder_hf.embed_tokens(input_ids) + encoder_hf.embed_positions(input_ids)

    # clpe: fairseq's convention (M2M100's), sqrt(d) scale, positions on the device.
    scale = encoder_hf.embed_tokens.embed_scale
    encoder = clpe.Encoder(context, preset="fairseq", d=d, scale=scale)
    ids = cl.array.to_device(queue, input_ids.numpy().astype(np.int32))
    weights = encoder_hf.embed_tokens.weight.detach().numpy()
    embedding = cl.array.to_device(queue, np.ascontiguousarray(weights))
    positions = cl.array.empty(queue, ids.shape, np.int64)
    hidden = cl.array.empty(queue, ids.shape + (d,), np.float32)
    encoder.pad_positions(queue, ids, positions, pad_id=PAD)
    encoder.gather(queue, ids, embedding, hidden, positions=positions).wait()
    clpe_input_stage = hidden.get()

    # HF's positions (create_position_ids_from_input_ids) are clpe's.
    hf_positions = transformers.models.m2m_100.modeling_m2m_100 \
        .create_position_ids_from_input_ids(input_ids, PAD)
    assert positions.get().tolist() == hf_positions.tolist()
    # The input stage: exactly the host emulation, and HF's to float32 rounding.
    expected, _ = encoder.host().gather(input_ids.numpy(), weights, hf_positions.numpy())
    assert_same_bits(clpe_input_stage, expected)
    difference = np.abs(clpe_input_stage - hf_input_stage.numpy())
    assert difference.max() <= 4e-7 * max(1.0, float(np.abs(clpe_input_stage).max()))

    # The encoder run on clpe's input stage: positions already added, so the
    # model's own position embedding must add nothing.
    class NoPositions(torch.nn.Module):
        def forward(self, input_ids=None, inputs_embeds=None, past_key_values_length=0):
            return torch.zeros_like(inputs_embeds)

    encoder_hf.embed_positions = NoPositions()
    with torch.no_grad():
        replaced = encoder_hf(inputs_embeds=torch.from_numpy(clpe_input_stage),
                              attention_mask=attention_mask)
    a = replaced.last_hidden_state.numpy()
    b = reference.last_hidden_state.numpy()
    assert a.shape == b.shape == (2, 7, d)
    assert np.abs(a - b).max() <= 1e-5, np.abs(a - b).max()
    # The comparison is not vacuous: a wrong convention (interleaved instead
    # of split) moves the hidden states far beyond that.
    wrong = clpe.Encoder(context, preset="fairseq", d=d, scale=scale, layout="interleaved")
    wrong.gather(queue, ids, embedding, hidden, positions=positions).wait()
    with torch.no_grad():
        off = encoder_hf(inputs_embeds=torch.from_numpy(hidden.get()),
                         attention_mask=attention_mask).last_hidden_state.numpy()
    assert np.abs(off - b).max() > 1e-2
