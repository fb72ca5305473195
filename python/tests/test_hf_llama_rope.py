# SPDX-License-Identifier: Apache-2.0
"""End to end: Hugging Face Llama's rotary embedding (apply_rotary_pos_emb)
replaced by clpe.Rope on PyOpenCL buffers, in a model built from a small
config with random weights (nothing downloaded). HF rotates with float32
cos/sin tables; clpe's angles are exact, so the hidden states agree to
float32 rounding."""
import numpy as np
import pytest

import clpe
from conftest import need

pytestmark = pytest.mark.skipif(not clpe.HAS_ROPE,
                                reason="the loaded libclpe has no rotary calls yet")


def test_llama_with_clpe_rotary(cl, context, queue, monkeypatch):
    torch = need("torch")
    transformers = need("transformers")
    from transformers.models.llama import modeling_llama

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        rope_theta=10000.0, attn_implementation="eager")
    model = transformers.LlamaModel(config).eval()
    head_dim = config.hidden_size // config.num_attention_heads
    input_ids = torch.tensor([[3, 9, 27, 5, 61, 2, 8, 40, 33, 12]])
    past = 37  # positions start after a cache of 37 tokens
    position_ids = torch.arange(past, past + input_ids.shape[1])[None]
    with torch.no_grad():
        reference = model(input_ids=input_ids, position_ids=position_ids).last_hidden_state

    rope = clpe.Rope(context, head_dim=head_dim, base=config.rope_theta)
    calls = []

    def clpe_rotary(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        # HF hands [batch, heads, seq, head_dim]; clpe takes any head layout.
        q_device = cl.array.to_device(queue, q.contiguous().numpy())
        k_device = cl.array.to_device(queue, k.contiguous().numpy())
        rope.rotate(queue, q_device.transpose((0, 2, 1, 3)), k_device.transpose((0, 2, 1, 3)),
                    positions=past).wait()
        calls.append(q.shape)
        return torch.from_numpy(q_device.get()), torch.from_numpy(k_device.get())

    monkeypatch.setattr(modeling_llama, "apply_rotary_pos_emb", clpe_rotary)
    with torch.no_grad():
        replaced = model(input_ids=input_ids, position_ids=position_ids).last_hidden_state
    assert len(calls) == config.num_hidden_layers
    a, b = replaced.numpy(), reference.numpy()
    assert np.abs(a - b).max() <= 1e-5 * max(1.0, float(np.abs(b).max())), np.abs(a - b).max()

    # Rotary attention sees only position differences: another start gives
    # the same states. Rotating backwards (inverse) reverses the differences,
    # which must move them far: the comparison above is not vacuous.
    def backwards(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        q_host, k_host = q.contiguous().numpy().copy(), k.contiguous().numpy().copy()
        rope.host().rotate(q_host.transpose(0, 2, 1, 3), k_host.transpose(0, 2, 1, 3),
                           positions=past, inverse=True)
        return torch.from_numpy(q_host), torch.from_numpy(k_host)

    monkeypatch.setattr(modeling_llama, "apply_rotary_pos_emb", backwards)
    with torch.no_grad():
        off = model(input_ids=input_ids, position_ids=position_ids).last_hidden_state.numpy()
    assert np.abs(off - b).max() > 1e-2
