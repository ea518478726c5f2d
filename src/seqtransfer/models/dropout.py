"""Inverted dropout whose mask comes from ``torch.rand``.

``nn.Dropout`` draws its mask with ``bernoulli_``, which costs about 10 ns per element on this
CPU: 0.6 ms for one (16, 19, 200) batch, 7% of a training step. A uniform draw compared with the
rate is 4x faster and gives the same distribution (each unit kept with probability 1 - rate and
scaled by 1 / (1 - rate)). Only the random stream differs, so runs are as repeatable as before.
"""

from __future__ import annotations

import torch
from torch import nn


class Dropout(nn.Module):
    """Drop each element with probability ``rate`` in training; identity in evaluation. Any shape."""

    def __init__(self, rate: float) -> None:
        super().__init__()
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"dropout rate must be in [0, 1), got {rate}")
        self.rate = rate

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if not self.training or self.rate == 0.0:
            return inputs
        keep = torch.rand_like(inputs) >= self.rate
        return inputs * keep.to(inputs.dtype) * (1.0 / (1.0 - self.rate))

    def extra_repr(self) -> str:
        return f"rate={self.rate}"
