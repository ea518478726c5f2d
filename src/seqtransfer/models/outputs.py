"""Output layers that turn per-token label scores into a loss and a decoded label sequence.

A classifier (a linear layer) produces emissions (B, T, L); the output layer decides how they
are normalised: independent softmax per token, or a CRF over the sequence. Keeping the two
apart lets PretRand and ensembles combine emissions of several branches before one output.
"""

from __future__ import annotations

import torch
import torch.nn.functional as functional
from torch import nn

from seqtransfer.models.crf import CRF


class SoftmaxOutput(nn.Module):
    """Token-level softmax cross-entropy, summed over tokens (equation 2 of the PretRand paper)."""

    def __init__(self, label_count: int) -> None:
        super().__init__()
        self.label_count = label_count

    def loss(self, emissions: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, L), (B, T), (B, T) [, (B,) sentence weights] -> scalar (weighted) sum of token losses."""
        if weights is None:
            return functional.cross_entropy(emissions[mask], labels[mask], reduction="sum")
        token_weights = weights[:, None].expand_as(mask)[mask]
        return (functional.cross_entropy(emissions[mask], labels[mask], reduction="none") * token_weights).sum()

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, T, L) -> (B, T) arg-max labels."""
        return emissions.argmax(-1) * mask.long()

    def probabilities(self, emissions: torch.Tensor, mask: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
        """(B, T, L) per-token label distributions: the softmax of each token's scores (divided by ``temperature``)."""
        return (emissions / temperature).softmax(-1)


class CRFOutput(nn.Module):
    """Linear-chain CRF negative log-likelihood, summed over sentences."""

    def __init__(self, label_count: int) -> None:
        super().__init__()
        self.crf = CRF(label_count)

    def loss(self, emissions: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        """Summed (weighted, with (B,) sentence ``weights``) negative log-likelihood of the sentences."""
        return self.crf.negative_log_likelihood(emissions, labels, mask, weights)

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.crf.decode(emissions, mask)

    def probabilities(self, emissions: torch.Tensor, mask: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
        """(B, T, L) each token's label marginals under the CRF (every score divided by ``temperature``),
        p(y_t = l | sentence): what ensembles average, self-labelling's confidences and distillation
        read (0 past each sentence's end)."""
        return self.crf.marginals(emissions, mask, temperature)


OUTPUTS = {"softmax": SoftmaxOutput, "crf": CRFOutput}
