"""Bottleneck adapters in the Houlsby placement (Houlsby et al. 2019), a small module of our own.

The maintained ``adapters`` library (1.3.0) requires transformers ~=4.57, and we pin 5.23.0 (PEFT
has LoRA but no bottleneck adapters), so this is written here: in every Transformer layer, the
output projection of the attention block and of the feed-forward block (``*.output.dense``) is
followed by a residual bottleneck, x + W_up(GELU(W_down x)), W_up starting at zero so the adapted
encoder starts as the pretrained one. Only the adapters, the layer norms and the head train.
"""

from __future__ import annotations

import torch
from torch import nn


class Bottleneck(nn.Module):
    """(..., H) -> (..., H): x + up(gelu(down(x))), ``size`` units in the middle."""

    def __init__(self, hidden: int, size: int) -> None:
        super().__init__()
        self.down = nn.Linear(hidden, size)
        self.up = nn.Linear(size, hidden)
        nn.init.normal_(self.down.weight, std=1e-3)
        nn.init.zeros_(self.down.bias)
        nn.init.zeros_(self.up.weight)
        nn.init.zeros_(self.up.bias)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return inputs + self.up(nn.functional.gelu(self.down(inputs)))


class AdaptedLinear(nn.Module):
    """A pretrained linear layer (``base``) followed by its adapter."""

    def __init__(self, base: nn.Linear, size: int) -> None:
        super().__init__()
        self.base = base
        self.adapter = Bottleneck(base.out_features, size)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.adapter(self.base(inputs))


def add_houlsby_adapters(encoder: nn.Module, size: int) -> int:
    """Insert an adapter after every ``*.output.dense`` projection to the hidden size; returns how many."""
    hidden = encoder.config.hidden_size
    targets = [name for name, module in encoder.named_modules() if name.endswith("output.dense") and isinstance(module, nn.Linear) and module.out_features == hidden]
    for name in targets:
        parent_name, _, child = name.rpartition(".")
        parent = encoder.get_submodule(parent_name)
        setattr(parent, child, AdaptedLinear(getattr(parent, child), size))
    return len(targets)


def pretrained_name(name: str) -> str:
    """The pretrained encoder's name of a weight of the adapted encoder (PEFT's and our wrappers removed)."""
    return name.removeprefix("base_model.model.").replace(".base_layer.", ".").replace(".dense.base.", ".dense.")


def adapter_weight(name: str) -> bool:
    """A weight an adapter adds (LoRA's matrices, our bottlenecks)."""
    return "lora_" in name or ".adapter." in name
