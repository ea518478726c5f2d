"""Optimizers by name: one line each in ``OPTIMIZERS``.

``sgd`` is momentum SGD with lazy word-embedding updates (``optimizer.py``), the PretRand paper's
choice for taggers (§6.3, learning rate 0.015). ``adam`` is what deep biaffine parsers train
with: Stanza's parser (which the MuTSPad paper follows, §5.3) uses Adam with a learning rate of
0.003 and betas (0.9, 0.95); Dozat & Manning 2017 use 0.002 and (0.9, 0.9). With SGD at 0.015
our parser reached 7% LAS on Tweebank after two epochs, against ~50% for Adam (measured).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from seqtransfer.config import TrainConfig
from seqtransfer.errors import SeqTransferError
from seqtransfer.training.optimizer import LazyMomentumSGD


class DenseGradients:
    """Makes sparse gradients (a word embedding's) dense before an Adam step: Adam's moments decay
    every row at every step, so a sparse update would not be Adam.

    Each parameter's dense gradient lives in one buffer kept across steps: only the rows the last
    step wrote are zeroed again, and the new rows are copied in. A fresh dense tensor per step
    (``to_dense()``, or ``nn.Embedding``'s own dense backward) costs more than the arithmetic: for
    a 30,522 x 384 sub-word table, 20-40 ms per step of first-touch page faults on this CPU against
    about 2 ms (measured), because a large allocation is mapped afresh by the C allocator every time.
    The values are those of ``to_dense()``: each row of the coalesced gradient appears once.
    """

    def densify_sparse_gradients(self) -> None:
        buffers = self.__dict__.setdefault("_dense_gradients", {})
        for group in self.param_groups:
            for parameter in group["params"]:
                gradient = parameter.grad
                if gradient is None or not gradient.is_sparse:
                    continue
                gradient = gradient.coalesce()
                rows = gradient._indices()[0]
                buffer, written = buffers.get(parameter) or (torch.zeros_like(parameter), rows)
                buffer.index_fill_(0, written, 0.0)
                buffer.index_copy_(0, rows, gradient._values())  # coalesced: each row once
                buffers[parameter] = (buffer, rows)
                parameter.grad = buffer


class DenseAdam(DenseGradients, torch.optim.Adam):
    """Adam on dense gradients (``DenseGradients``)."""

    @torch.no_grad()
    def step(self, closure=None):  # noqa: ANN001 - torch's signature
        self.densify_sparse_gradients()
        return super().step(closure)


def build_sgd(groups: list[dict], config: TrainConfig) -> torch.optim.Optimizer:
    # fused: one kernel over all dense parameters instead of a Python loop per tensor.
    return LazyMomentumSGD(groups, lr=config.learning_rate, momentum=config.momentum, weight_decay=config.weight_decay, fused=True)


def build_adam(groups: list[dict], config: TrainConfig) -> torch.optim.Optimizer:
    # fused: one kernel over all parameters; 7 instead of 35 ms per step for the parser's 11M weights on this CPU (measured)
    return DenseAdam(groups, lr=config.learning_rate, betas=tuple(config.betas), weight_decay=config.weight_decay, fused=True)


@dataclass(frozen=True)
class OptimizerKind:
    name: str
    build: Callable[[list[dict], TrainConfig], torch.optim.Optimizer]
    default_learning_rate: float


def build_adamw(groups: list[dict], config: TrainConfig) -> torch.optim.Optimizer:
    # decoupled weight decay (train.weight_decay, e.g. 0.01) as BERT fine-tuning; sparse gradients made dense as in DenseAdam
    return DenseAdamW(groups, lr=config.learning_rate, betas=tuple(config.betas), weight_decay=config.weight_decay, fused=True)


class DenseAdamW(DenseGradients, torch.optim.AdamW):
    """AdamW on dense gradients (``DenseGradients``)."""

    @torch.no_grad()
    def step(self, closure=None):  # noqa: ANN001 - torch's signature
        self.densify_sparse_gradients()
        return super().step(closure)


OPTIMIZERS: dict[str, OptimizerKind] = {
    "sgd": OptimizerKind("sgd", build_sgd, 0.015),
    "adam": OptimizerKind("adam", build_adam, 0.003),
    "adamw": OptimizerKind("adamw", build_adamw, 5e-5),  # fine-tuned Transformer encoders (Devlin et al. 2019)
}


def get_optimizer_kind(name: str | None) -> OptimizerKind:
    """The optimizer called ``name`` (None: ``sgd``, the taggers' optimizer)."""
    name = name or "sgd"
    if name not in OPTIMIZERS:
        raise SeqTransferError(f"unknown optimizer '{name}'", hint=f"use train.optimizer={' or '.join(OPTIMIZERS)}")
    return OPTIMIZERS[name]


def fill_optimizer(config: TrainConfig, default: str) -> None:
    """Resolve ``train.optimizer`` (to the task kind's ``default``) and ``train.learning_rate`` (to the optimizer's)."""
    config.optimizer = get_optimizer_kind(config.optimizer or default).name
    if config.learning_rate is None:
        config.learning_rate = OPTIMIZERS[config.optimizer].default_learning_rate


def make_optimizer(parameter_groups: Sequence[dict], config: TrainConfig) -> torch.optim.Optimizer:
    """The configured optimizer; each group keeps its own base learning rate for the decay."""
    kind = get_optimizer_kind(config.optimizer)
    learning_rate = config.learning_rate if config.learning_rate is not None else kind.default_learning_rate
    groups = [dict(group) for group in parameter_groups]
    for group in groups:
        group.setdefault("lr", learning_rate)
        group["base_lr"] = group["lr"]
    return kind.build(groups, dataclasses.replace(config, learning_rate=learning_rate))
