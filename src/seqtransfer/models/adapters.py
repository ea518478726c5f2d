"""Bottleneck adapters in the Houlsby placement (Houlsby et al. 2019), a small module of our own.

The maintained ``adapters`` library (1.3.0) requires transformers ~=4.57, and we pin 5.23.0 (PEFT
has LoRA but no bottleneck adapters), so this is written here: in every Transformer layer, the
output projection of the attention block and of the feed-forward block (``*.output.dense``) is
followed by a residual bottleneck, x + W_up(GELU(W_down x)), W_up starting at zero so the adapted
encoder starts as the pretrained one. Only the adapters, the layer norms and the head train.
"""

from __future__ import annotations

import re

import torch
from torch import nn

from seqtransfer.errors import SeqTransferError


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


# The two projections back to the hidden size in each layer, before the residual and layer norm:
# BERT-like (BERT, RoBERTa, our own LMs) attention.output.dense and output.dense; MPNet
# attention.attn.o and output.dense; DistilBERT attention.out_lin and ffn.lin2.
HOULSBY_SUFFIXES = ("output.dense", ".attn.o", ".attention.out_lin", ".ffn.lin2")
# LoRA's targets where PEFT has no default for the model type (PEFT's for BERT: query and value)
LORA_TARGETS = {"mpnet": ["q", "v"]}


def add_houlsby_adapters(encoder: nn.Module, size: int) -> int:
    """Insert an adapter after both projections to the hidden size of every layer (attention and
    feed-forward); returns how many. An architecture where they are not found is refused."""
    hidden = encoder.config.hidden_size
    targets = [name for name, module in encoder.named_modules() if name.endswith(HOULSBY_SUFFIXES) and isinstance(module, nn.Linear) and module.out_features == hidden]
    layers = int(getattr(encoder.config, "num_hidden_layers", 0) or getattr(encoder.config, "n_layers", 0))
    if len(targets) != 2 * layers:
        raise SeqTransferError(
            f"Houlsby adapters: found {len(targets)} of the 2 x {layers} output projections in this {encoder.config.model_type} encoder",
            hint="use model.encoder_adapter=lora, or a BERT-, RoBERTa-, MPNet- or DistilBERT-like encoder",
        )
    for name in targets:
        parent_name, _, child = name.rpartition(".")
        parent = encoder.get_submodule(parent_name)
        setattr(parent, child, AdaptedLinear(getattr(parent, child), size))
    return len(targets)


def add_lora(encoder: nn.Module, rank: int, alpha: float) -> nn.Module:
    """The encoder with LoRA (PEFT) on its attention's query and value projections."""
    import warnings

    from peft import LoraConfig, get_peft_model

    targets = LORA_TARGETS.get(encoder.config.model_type)  # None: PEFT's default for the model type
    try:
        with warnings.catch_warnings():  # peft 0.21 calls a transformers method that 5.x deprecates: nothing for our users to act on
            warnings.simplefilter("ignore", FutureWarning)
            return get_peft_model(encoder, LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.1, target_modules=targets))
    except ValueError as error:  # PEFT knows no target modules for this model type
        raise SeqTransferError(f"LoRA: {str(error).splitlines()[0][:160]}", hint="use model.encoder_adapter=houlsby, or a model type PEFT knows (BERT, RoBERTa, MPNet...)") from None


def houlsby(encoder: nn.Module, config) -> nn.Module:
    """``model.encoder_adapter=houlsby``: bottlenecks of ``model.adapter_size`` units."""
    add_houlsby_adapters(encoder, config.adapter_size)
    return encoder


def lora(encoder: nn.Module, config) -> nn.Module:
    """``model.encoder_adapter=lora``: rank ``model.lora_rank``, scale ``model.lora_alpha``."""
    return add_lora(encoder, config.lora_rank, config.lora_alpha)


# model.encoder_adapter -> (encoder, model config) -> the adapted encoder
ADAPTERS = {"lora": lora, "houlsby": houlsby}


def pretrained_name(name: str) -> str:
    """The pretrained encoder's name of a weight of the adapted encoder (PEFT's and our wrappers removed)."""
    return re.sub(r"\.base\.(weight|bias)$", r".\1", name.removeprefix("base_model.model.").replace(".base_layer.", "."))


def adapter_weight(name: str) -> bool:
    """A weight an adapter adds (LoRA's matrices, our bottlenecks)."""
    return "lora_" in name or ".adapter." in name
