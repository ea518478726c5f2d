"""The 16-bit-draw dropout: identity in evaluation, keeps 1 - rate of the units, unbiased."""

import pytest
import torch

from seqtransfer.models.dropout import Dropout


def test_identity_in_evaluation_and_at_rate_zero():
    inputs = torch.randn(4, 7, 9)
    dropout = Dropout(0.5).eval()
    assert dropout(inputs) is inputs
    assert Dropout(0.0).train()(inputs) is inputs


def test_keeps_about_one_minus_rate_and_preserves_the_mean():
    torch.manual_seed(0)
    inputs = torch.ones(200, 500)
    outputs = Dropout(0.3).train()(inputs)
    kept = (outputs != 0).float().mean().item()
    assert kept == pytest.approx(0.7, abs=0.01)
    assert torch.allclose(outputs[outputs != 0], torch.tensor(1 / 0.7))
    assert outputs.mean().item() == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize("rate", [0.5, 0.25])
def test_each_of_the_four_draws_of_a_random_word_is_unbiased(rate):
    torch.manual_seed(2)
    outputs = Dropout(rate).train()(torch.ones(20000, 4))  # column k = lane k of each 64-bit word
    kept = (outputs != 0).float().mean(0)
    assert torch.allclose(kept, torch.full((4,), 1 - rate), atol=0.015)


def test_gradient_flows_only_through_kept_units():
    torch.manual_seed(1)
    inputs = torch.randn(50, 20, requires_grad=True)
    outputs = Dropout(0.5).train()(inputs)
    outputs.sum().backward()
    assert torch.equal(inputs.grad != 0, outputs != 0)


def test_same_seed_same_mask():
    inputs = torch.ones(30, 30)
    torch.manual_seed(5)
    first = Dropout(0.5).train()(inputs)
    torch.manual_seed(5)
    assert torch.equal(first, Dropout(0.5).train()(inputs))


@pytest.mark.parametrize("rate", [-0.1, 1.0])
def test_rejects_impossible_rates(rate):
    with pytest.raises(ValueError):
        Dropout(rate)
