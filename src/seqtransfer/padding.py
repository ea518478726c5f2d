"""Right-padded batches of sequences: reversing each sequence's valid prefix in place.

A backward LSTM over a padded batch must read each sequence from its last real step: the valid
prefix of each row is reversed (padding stays at the end), the LSTM reads it, and its outputs are
reversed back. Shapes: B sequences, T steps (padded), D features.
"""

from __future__ import annotations

import torch


def reversal_index(lengths: torch.Tensor, width: int) -> torch.Tensor:
    """(B, T) index that reverses the first ``lengths[b]`` positions of each row, keeps the rest.

    Applying it twice is the identity.
    """
    positions = torch.arange(width, device=lengths.device).unsqueeze(0)  # (1, T)
    reversed_positions = lengths.unsqueeze(1) - 1 - positions  # (B, T)
    return torch.where(positions < lengths.unsqueeze(1), reversed_positions, positions)


def reverse_padded(inputs: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Reorder (B, T, D) ``inputs`` along time with a (B, T) ``index``."""
    return inputs.gather(1, index.unsqueeze(-1).expand(-1, -1, inputs.size(-1)))
