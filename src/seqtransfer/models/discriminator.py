"""The domain discriminator of adversarial training (MuTSPad paper §5.2.1), a part of the source model.

``model.discriminator_hidden`` > 0 gives the model one (saved with it, never transferred); the
loss that trains it behind a gradient-reversal layer is ``transfer/adversarial.py``'s.
"""

from __future__ import annotations

import torch
from torch import nn


class DomainDiscriminator(nn.Module):
    """(N, H) token states -> (N,) logit of "target domain": linear, ReLU, linear."""

    def __init__(self, input_size: int, hidden: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(input_size, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.layers(states).squeeze(-1)


def feature_size(model: nn.Module) -> int:
    """Units of the model's feature-extractor states (the tagger's BiLSTM, the parser's stack)."""
    extractor = model.feature_extractor
    return getattr(extractor, "output_size", None) or extractor.forward_lstm.hidden_size * 2


def attach_discriminator(model: nn.Module, hidden: int) -> None:
    """Give ``model`` its domain discriminator (``hidden`` > 0), as the model's config says."""
    if hidden > 0:
        model.domain_discriminator = DomainDiscriminator(feature_size(model), hidden)
