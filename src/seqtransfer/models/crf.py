"""A linear-chain CRF with batched forward algorithm and batched Viterbi decoding.

Written by hand rather than taken from pytorch-crf because we need both loops batched over
sentences (its Viterbi back-tracks one sentence at a time in Python) and exact handling of
right-padded batches of mixed lengths. The only Python loop is over time steps.
"""

from __future__ import annotations

import torch
from torch import nn


class CRF(nn.Module):
    """Transition scores between L labels plus start and end scores."""

    def __init__(self, label_count: int) -> None:
        super().__init__()
        self.transitions = nn.Parameter(torch.zeros(label_count, label_count))  # [from, to]
        self.start = nn.Parameter(torch.zeros(label_count))
        self.end = nn.Parameter(torch.zeros(label_count))

    def negative_log_likelihood(self, emissions: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Sum over the batch of -log p(labels | emissions).

        emissions (B, T, L), labels (B, T) (any value where masked), mask (B, T) bool with
        every row's valid positions first and at least one valid position.
        """
        return (self.log_partition(emissions, mask) - self.path_score(emissions, labels, mask)).sum()

    def path_score(self, emissions: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B,) score of the given label paths."""
        labels = labels.clamp(min=0)
        weights = mask.to(emissions.dtype)  # (B, T)
        emitted = emissions.gather(2, labels.unsqueeze(-1)).squeeze(-1)  # (B, T)
        moved = self.transitions[labels[:, :-1], labels[:, 1:]]  # (B, T-1)
        lengths = mask.sum(1)
        last_labels = labels.gather(1, (lengths - 1).unsqueeze(1)).squeeze(1)  # (B,)
        return (
            self.start[labels[:, 0]]
            + (emitted * weights).sum(1)
            + (moved * weights[:, 1:]).sum(1)
            + self.end[last_labels]
        )

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B,) log of the sum over all label paths (forward algorithm)."""
        alpha = self.start + emissions[:, 0]  # (B, L)
        transitions = self.transitions.unsqueeze(0)  # (1, L, L)
        for step in range(1, emissions.size(1)):
            scores = alpha.unsqueeze(2) + transitions  # (B, L_from, L_to)
            candidate = torch.logsumexp(scores, dim=1) + emissions[:, step]  # (B, L)
            alpha = torch.where(mask[:, step].unsqueeze(1), candidate, alpha)
        return torch.logsumexp(alpha + self.end, dim=1)

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, T) best label paths (Viterbi); positions beyond each length are 0."""
        batch_size, width, _ = emissions.shape
        score = self.start + emissions[:, 0]  # (B, L)
        backpointers = []
        for step in range(1, width):
            best_score, best_previous = (score.unsqueeze(2) + self.transitions).max(dim=1)  # (B, L)
            candidate = best_score + emissions[:, step]
            valid = mask[:, step].unsqueeze(1)
            score = torch.where(valid, candidate, score)
            # Past the end, point each label to itself so back-tracking carries the last label.
            identity = torch.arange(score.size(1), device=score.device).expand_as(best_previous)
            backpointers.append(torch.where(valid, best_previous, identity))
        best_last = (score + self.end).argmax(dim=1)  # (B,)
        path = [best_last]
        for pointers in reversed(backpointers):
            path.append(pointers.gather(1, path[-1].unsqueeze(1)).squeeze(1))
        path.reverse()
        return torch.stack(path, dim=1) * mask.long() if width else emissions.new_zeros((batch_size, 0), dtype=torch.long)
