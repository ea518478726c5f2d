"""Mixed precision for Transformer encoders (``train.amp``) and for pretraining our recurrent LMs
(``pretrain-lm --amp``): autocast around each training step's forward pass, fp32 master weights,
and for fp16 a gradient scaler.

    off    fp32 everywhere (the default; BiLSTM taggers stay fp32: no gain was measured for them)
    auto   on a CUDA GPU: bf16 where it has it, else fp16 with loss scaling; elsewhere off
    bf16   bf16 autocast (also on the CPU, which is how the tests exercise the path)
    fp16   fp16 autocast with a gradient scaler (CUDA only)

Losses and the scores they read stay fp32: the output layers cast the emissions (softmax, CRF,
the sentence heads) before computing them, and autocast runs cross-entropy in fp32.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import torch
from torch import nn

from seqtransfer.errors import SeqTransferError

MODES = ("off", "auto", "bf16", "fp16")


@dataclass(frozen=True)
class Precision:
    dtype: torch.dtype | None  # None: fp32 (autocast off)
    device_type: str

    def autocast(self):
        return torch.autocast(self.device_type, dtype=self.dtype) if self.dtype is not None else nullcontext()

    def scaler(self) -> torch.amp.GradScaler | None:
        """A gradient scaler for fp16 (its small range), None otherwise."""
        return torch.amp.GradScaler(self.device_type) if self.dtype is torch.float16 else None

    def describe(self) -> str:
        return "fp32" if self.dtype is None else {torch.bfloat16: "bf16", torch.float16: "fp16"}[self.dtype] + " autocast, fp32 weights"


def takes_mixed_precision(model: nn.Module) -> bool:
    """A model mixed precision serves: one with a Transformer encoder inside it (fine-tuned), or a
    recurrent LM's pretraining (its class sets ``mixed_precision = True``)."""
    return getattr(model, "encoder", None) is not None or getattr(model, "mixed_precision", False)


def concrete_mode(mode: str, device: torch.device) -> str:
    """What ``mode`` trains in on ``device`` for a model that takes mixed precision: ``auto`` becomes
    bf16 or fp16 on a CUDA GPU (bf16 where it has it) and off elsewhere; the other modes stay."""
    if mode != "auto":
        return mode
    if device.type != "cuda":
        return "off"
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def resolve_precision(mode: str, model: nn.Module, device: torch.device, setting: str = "train.amp") -> Precision:
    """The precision one training run uses (or a prediction: ``setting`` ``amp``); one line for a setting that cannot apply."""
    if mode not in MODES:
        raise SeqTransferError(f"unknown {setting} '{mode}'", hint=f"use one of: {', '.join(MODES)}")
    if mode == "off" or (mode == "auto" and (device.type != "cuda" or not takes_mixed_precision(model))):
        return Precision(None, device.type)
    if not takes_mixed_precision(model):
        hint = (
            "drop train.amp (BiLSTM models gain nothing measured from it), or fine-tune an encoder (model.encoder_mode=finetune)"
            if setting == "train.amp"
            else f"drop {setting}: only a fine-tuned encoder's run predicts in half precision"
        )
        raise SeqTransferError(f"{setting}={mode} is for fine-tuned Transformer encoders (and pretrain-lm's recurrent LMs); this {type(model).__name__} runs in fp32", hint=hint)
    mode = concrete_mode(mode, device)  # auto reaches here on a CUDA GPU only
    if mode == "fp16" and device.type != "cuda":
        raise SeqTransferError(f"{setting}=fp16 needs a CUDA GPU; the model is on {device.type}", hint=f"use {setting}=bf16 or auto")
    return Precision(torch.bfloat16 if mode == "bf16" else torch.float16, device.type)
