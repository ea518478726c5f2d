"""What makes a fine-tuned encoder train faster on a CPU computes what it replaces.

- the sub-word table's sparse gradient, made dense in a kept buffer, gives Adam(W) the updates
  of the dense gradient, step after step, whichever rows each batch reads;
- the written-out attention with dropout equals transformers' own attention when its dropout
  keeps everything, masks padding, and drops probabilities when it does not;
- every ``nn.Dropout`` of a fine-tuned encoder is the 16-bit-draw dropout of the same rate.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from seqtransfer.config import TrainConfig
from seqtransfer.models import attention
from seqtransfer.models.dropout import Dropout
from seqtransfer.models.transformer_encoder import use_fast_dropout
from seqtransfer.training.optimizer import clip_gradient_norm
from seqtransfer.training.optimizers import build_adam, build_adamw


def tiny_bert(dropout: float = 0.0, attention_dropout: float | None = None):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout if attention_dropout is None else attention_dropout,
    )
    return BertModel(config)


@pytest.mark.parametrize("build", [build_adam, build_adamw])
def test_a_sparse_embedding_gradient_gives_adam_the_dense_gradients_updates(build):
    torch.manual_seed(3)
    dense, sparse = nn.Embedding(40, 5), nn.Embedding(40, 5, sparse=True)
    sparse.load_state_dict(dense.state_dict())
    config = TrainConfig(learning_rate=0.01, weight_decay=0.01)
    optimizers = [build([{"params": list(model.parameters())}], config) for model in (dense, sparse)]
    for step in range(12):
        rows = torch.randint(0, 40, (3, 6)) if step % 3 else torch.tensor([[1, 1, 2]])  # repeated rows; a step with few rows
        target = torch.randn(*rows.shape, 5)
        for model, optimizer in zip((dense, sparse), optimizers):
            optimizer.zero_grad(set_to_none=True)
            ((model(rows) - target) ** 2).sum().backward()
            clip_gradient_norm(list(model.parameters()), 1.0)
            optimizer.step()
        assert torch.allclose(dense.weight, sparse.weight, atol=1e-6), f"step {step}"
    assert not sparse.weight.grad.is_sparse  # the step saw the dense buffer


def test_the_written_out_attention_equals_transformers_attention(monkeypatch):
    reference, fast = tiny_bert(attention_dropout=0.1), tiny_bert(attention_dropout=0.1)
    attention.use_fast_attention(fast)
    assert fast.config._attn_implementation == attention.NAME
    monkeypatch.setattr(attention, "Dropout", lambda rate: nn.Identity())  # keeps every probability; the path still runs (rate > 0)
    ids = torch.randint(1, 50, (3, 9))
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[0, 6:], mask[2, 3:] = 0, 0
    written_out = fast.train()(ids, attention_mask=mask).last_hidden_state
    expected = reference.eval()(ids, attention_mask=mask).last_hidden_state  # no dropout anywhere
    real = mask.bool()
    assert torch.allclose(written_out[real], expected[real], atol=1e-5)


def test_the_written_out_attention_drops_probabilities_and_passes_gradients():
    model = tiny_bert(dropout=0.5)
    attention.use_fast_attention(model)
    use_fast_dropout(model)
    ids = torch.randint(1, 50, (2, 8))
    model.train()
    torch.manual_seed(1)
    first = model(ids).last_hidden_state
    torch.manual_seed(2)
    second = model(ids).last_hidden_state
    assert not torch.allclose(first, second)  # other masks, other outputs
    torch.manual_seed(1)
    assert torch.equal(first, model(ids).last_hidden_state)  # a seed fixes the masks
    first.sum().backward()
    assert model.encoder.layer[0].attention.self.query.weight.grad.abs().sum() > 0
    model.eval()  # evaluation: transformers' own sdpa, no dropout
    assert torch.equal(model(ids).last_hidden_state, model(ids).last_hidden_state)


def test_fine_tuned_encoders_use_the_16_bit_draw_dropout_at_the_same_rates():
    model = tiny_bert(dropout=0.2)
    use_fast_dropout(model)
    dropouts = [module for module in model.modules() if isinstance(module, (nn.Dropout, Dropout))]
    assert dropouts and all(type(module) is Dropout and module.p == 0.2 for module in dropouts)


def test_low_precision_dropout_scales_each_kept_unit_before_rounding():
    torch.manual_seed(4)
    inputs = torch.randn(64, 300).to(torch.bfloat16)
    dropout = Dropout(0.1).train()
    outputs = dropout(inputs)
    kept = outputs != 0
    assert 0.85 < kept.float().mean().item() < 0.95
    expected = (inputs.float() * dropout.scale).to(torch.bfloat16)  # 1/0.9, not its bf16 rounding 1.109375
    assert torch.equal(outputs[kept], expected[kept])
    assert outputs.dtype == torch.bfloat16


def test_lazy_sgd_leaves_sparse_rows_alone_on_a_step_the_gradient_scaler_found_overflowing():
    from seqtransfer.training.optimizer import LazyMomentumSGD

    embedding = nn.Embedding(10, 3, sparse=True)
    before = embedding.weight.detach().clone()
    optimizer = LazyMomentumSGD(embedding.parameters(), lr=0.1, momentum=0.9, fused=True)
    embedding(torch.tensor([[1, 2]])).sum().backward()
    optimizer.found_inf = torch.tensor(1.0)  # what GradScaler.step sets on a fused optimizer
    optimizer.step()
    assert torch.equal(embedding.weight, before)
    optimizer.found_inf = torch.tensor(0.0)
    optimizer.step()
    assert not torch.equal(embedding.weight, before)
