"""Adaptation schemes that combine with any transfer scheme: parameter groups, epoch hooks, extra losses.

    transfer.adaptations=[discriminative, gradual_unfreezing, l2sp]

- ``discriminative`` (ULMFiT): each layer group trains at the rate of the group above divided by
  ``transfer.discriminative_factor`` (2.6): the top (the classifier) at the base rate.
- ``gradual_unfreezing`` (ULMFiT): epoch 1 trains the top group only, each epoch one more group
  below it, until everything trains.
- ``l2sp`` (Li et al. 2018): alpha/2 * ||w - w_source||^2 over the weights copied from the source
  (``transfer.l2sp_weight``, per batch; the word and character tables are left out: their rows
  of new words have no source value), pulling the fine-tuned weights towards the pretrained ones;
  without a source run, a fine-tuned encoder's weights towards its pretrained weights.
- ``chain_thaw`` (Felbo et al. 2017; ULMFiT): phases instead of one: the head alone, then each
  layer group alone from the bottom up, then everything; each phase trains to early stopping
  from the previous phase's best weights.
- ``last_layer`` (ULMFiT's "Last"): the head (the top layer group) alone trains; the groups below
  keep their pretrained weights. For an encoder read fine-tuned only (the AWD-LSTM), this is its
  frozen reading: the forward pass still runs it, in training mode (its dropouts on).
- ``ewc`` (Kirkpatrick et al. 2017): lambda/2 * sum_i F_i (w_i - w_source,i)^2, F the diagonal
  empirical Fisher information of the source model on its own training data (mean squared
  gradient over ``transfer.ewc_batches`` batches), computed once and stored in the source run
  directory (``fisher.safetensors``); ``transfer.ewc_weight`` is lambda.

Each is one line of ``ADAPTATIONS``: what it needs of the model, and what it changes as the one
training loop applies it (train_phases: the phases it trains, an epoch hook, the epochs before
early stopping; parameter_groups: a rate factor per layer group; loss_terms: a pull towards the
source's weights).

A model's layer groups, bottom to top (``layer_groups``): a Transformer's embeddings, then each of
its layers; or the word representation, then each BiLSTM layer; then everything else (the head).
The optimizer holds every parameter from the start; a frozen one just gets no gradient. Chain-thaw
and gradual unfreezing stage only the groups with a weight that trains (``trainable_groups``): under
LoRA, the embeddings have none.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from safetensors.torch import load_file
from torch import nn

from seqtransfer.config import TransferConfig
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import training_batches
from seqtransfer.embeddings.transformer import unread_weight
from seqtransfer.errors import SeqTransferError, warn
from seqtransfer.models.encoders import pretrained_encoder
from seqtransfer.training.checkpoint import save_tensors
from seqtransfer.transfer.schemes import EVERYTHING, Phase

LayerGroup = tuple[str, list[str]]  # (name, parameter names)
EMBEDDING_TABLES = ("word_representation.word_embedding.weight", "word_representation.character_encoder.embedding.weight")


def layer_groups(model: nn.Module) -> list[LayerGroup]:
    """Parameter names by layer group, bottom to top: the encoder's (``layer_prefixes``, where the
    model has them), then whatever no lower group takes, the top group (the head)."""
    names = [name for name, _ in model.named_parameters()]
    if hasattr(model, "grouped_layers"):  # a model that groups its layers itself (the hierarchical multi-task model: by level)
        return model.grouped_layers(names)
    prefixes, shared = model.layer_prefixes(names) if hasattr(model, "layer_prefixes") else ([], ())
    groups, taken = [], set()
    for prefix in prefixes:
        members = [name for name in names if (name.startswith(prefix) or prefix == prefixes[0] and name in shared) and name not in taken]  # shared inputs join the bottom group
        if members:
            groups.append((prefix.rstrip("."), members))
            taken.update(members)
    groups.append(("head", [name for name in names if name not in taken]))
    return [group for group in groups if group[1]]


def trainable_names(model: nn.Module, prefixes: tuple[str, ...]) -> set[str]:
    """The parameter names a phase training ``prefixes`` trains: not those the model never trains (an encoder's own weights under an adapter)."""
    frozen = getattr(model, "frozen", lambda name: False)
    return {name for name, _ in model.named_parameters() if name.startswith(prefixes) and not frozen(name)}


def trainable_groups(model: nn.Module, allowed: set[str]) -> list[LayerGroup]:
    """The layer groups, bottom to top, with a weight in ``allowed``: a group with none (the
    embeddings under LoRA) gets no phase of chain-thaw and no epoch of gradual unfreezing."""
    return [(group, names) for group, names in layer_groups(model) if any(name in allowed for name in names)]


@dataclass(frozen=True)
class Adaptation:
    """One adaptation: what it changes, as the one training loop applies it (train_phases,
    parameter_groups, the loss terms), and what it needs of the model."""

    name: str
    description: str
    minimum_groups: int = 1  # layer groups that must train (a staging or rate needs a group below the head)
    pulls_towards_source: bool = False  # an extra loss term towards the source's weights (loss_terms.source_penalties)
    pretrained_reference: bool = False  # with no source run, it pulls a fine-tuned encoder towards its pretrained weights
    stages_groups: bool = False  # chooses which layer groups train when (at most one such adaptation)
    phases: Callable[[nn.Module, list], list] | None = None  # the scheme's phases -> the phases to train
    epoch_hook: Callable[[nn.Module, set[str]], Callable] | None = None  # (model, trainable names) -> hook(epoch, model, optimizer)
    minimum_epochs: Callable[[nn.Module, set[str]], int] | None = None  # epochs before early stopping may end a phase
    rate_factor: Callable[[TransferConfig], float] | None = None  # each layer group below the top: the rate above divided by it
    keeps_lower_layers: bool = False  # the layer groups below the head never train: only pretrained ones make sense


def warning(message: str, log: Callable[[str], None] | None) -> None:
    """A warning to the run's ``log`` (as a ``warning:`` line), else to Python's warnings."""
    if log:
        log(f"warning: {message}")
    else:
        warn(message)


def check_adaptations(
    config: TransferConfig, model: nn.Module, has_source: bool, phases: list | None = None, transferred: tuple[str, ...] = (), max_epochs: int | None = None, log: Callable[[str], None] | None = None
) -> list[Adaptation]:
    """The configured adaptations; one that cannot apply to this model or scheme is a one-line
    error. ``phases``: the scheme's (None: everything trains in one); ``transferred``: the name
    prefixes of the weights it copies from its source; ``max_epochs``: the run's, a warning (to the
    run's ``log``, else Python's warnings) when an adaptation's minimum epochs (gradual unfreezing's,
    to open every group) exceed it."""
    chosen = []
    trainable = tuple(prefix for phase in phases for prefix in phase.trainable) if phases is not None else ("",)
    groups = [group for group, _ in trainable_groups(model, trainable_names(model, trainable))]  # those the scheme trains
    unknown = [name for name in config.adaptations if name not in ADAPTATIONS]
    if unknown:
        raise SeqTransferError(f"unknown adaptation '{unknown[0]}'", hint=f"use transfer.adaptations=[{', '.join(ADAPTATIONS)}]")
    staging = [f"'{name}'" for name in config.adaptations if ADAPTATIONS[name].stages_groups]
    if len(staging) > 1:
        raise SeqTransferError(f"adaptations {' and '.join(staging)} both choose which layer groups train when", hint="use one of them")
    for adaptation in chosen_adaptations(config):
        name = adaptation.name
        if len(groups) < adaptation.minimum_groups:
            raise SeqTransferError(
                f"adaptation '{name}' needs at least {adaptation.minimum_groups} layer groups that train; this model and scheme train {len(groups)} ({', '.join(groups)})",
                hint="drop it, or use a scheme that trains the layers below the head (finetune, scratch)",
            )
        if adaptation.phases and phases is not None and len(phases) != 1:
            raise SeqTransferError(f"adaptation '{name}' replaces a one-phase scheme's phase; this scheme has several", hint="use it with --method finetune or scratch")
        if adaptation.pulls_towards_source and not has_source and not (adaptation.pretrained_reference and pretrained_encoder(model)):
            raise SeqTransferError(
                f"adaptation '{name}' pulls towards a source run's weights, and this scheme has none",
                hint="use it with --method finetune (a source run); l2sp also pulls a fine-tuned encoder towards its pretrained weights",
            )
        if (
            adaptation.pulls_towards_source
            and has_source
            and transferred
            and not any(parameter.startswith(transferred) and parameter.startswith(trainable) for parameter, _ in model.named_parameters())
        ):
            raise SeqTransferError(f"adaptation '{name}' pulls the transferred weights towards the source's, and this scheme keeps them frozen", hint="drop it, or use --method finetune")
        if adaptation.keeps_lower_layers and not has_source and not pretrained_encoder(model):
            warning(f"adaptation '{name}' trains the head alone, and nothing below it was pretrained (no source run, no model.encoder): those layers stay random", log)
        chosen.append(adaptation)
        needed = adaptation.minimum_epochs(model, trainable_names(model, trainable)) if adaptation.minimum_epochs else 0
        if max_epochs is not None and max_epochs < needed:
            warning(
                f"adaptation '{name}' needs {needed} epochs to open every layer group, the top first: train.max_epochs={max_epochs} "
                f"leaves the lowest {needed - max_epochs} frozen (raise it to {needed} to train them all)",
                log,
            )
    return chosen


def parameter_groups(model: nn.Module, config: TransferConfig, learning_rate: float) -> list[dict]:
    """One optimizer group per layer group, every parameter included; rates divided by the factor per group below the top."""
    parameters = dict(model.named_parameters())
    groups = layer_groups(model)
    factor = math.prod(adaptation.rate_factor(config) for adaptation in chosen_adaptations(config) if adaptation.rate_factor)
    return [{"params": [parameters[name] for name in names], "lr": learning_rate / factor ** (len(groups) - 1 - depth), "name": group} for depth, (group, names) in enumerate(groups)]


def with_head_rate(model: nn.Module, groups: list[dict] | None, learning_rate: float, head_rate: float) -> list[dict]:
    """Optimizer groups with the head (the top layer group, ``layer_groups``) at ``head_rate``; the
    other groups keep theirs (``groups``: the adaptations' groups, or None: one group at ``learning_rate``)."""
    return with_own_rate(model, groups, learning_rate, set(layer_groups(model)[-1][1]), head_rate, "head")


def with_own_rate(model: nn.Module, groups: list[dict] | None, learning_rate: float, names: set[str], rate: float, label: str) -> list[dict]:
    """Optimizer groups with the parameters called ``names`` split off at ``rate`` (a group named
    ``label``); the others keep their groups' rates (``groups`` None: one group at ``learning_rate``)."""
    chosen = {id(parameter) for name, parameter in model.named_parameters() if name in names}
    if groups is None:
        groups = [{"params": list(model.parameters()), "lr": learning_rate, "name": "all"}]
    split = []
    for group in groups:
        rest = [parameter for parameter in group["params"] if id(parameter) not in chosen]
        own = [parameter for parameter in group["params"] if id(parameter) in chosen]
        split += [{**group, "params": rest}] if rest else []
        split += [{**group, "params": own, "lr": rate, "name": label}] if own else []
    return split


def last_layer_phases(model: nn.Module, phases: list) -> list:
    """The head alone (ULMFiT's "Last"): every layer group below it keeps its pretrained weights (a one-phase scheme only)."""
    if len(phases) != 1:
        raise SeqTransferError("last_layer replaces a one-phase scheme's phase; this scheme has several", hint="use it with --method finetune or scratch")
    groups = trainable_groups(model, trainable_names(model, phases[0].trainable))
    return [Phase("head", tuple(groups[-1][1]))]


def chain_thaw_phases(model: nn.Module, phases: list) -> list:
    """The head, each lower layer group bottom-up, then everything (a one-phase scheme only)."""
    if len(phases) != 1:
        raise SeqTransferError("chain-thaw replaces a one-phase scheme's phase; this scheme has several", hint="use it with --method finetune or scratch")
    groups = trainable_groups(model, trainable_names(model, phases[0].trainable))
    return [Phase("head", tuple(groups[-1][1])), *(Phase(name, tuple(names)) for name, names in groups[:-1]), Phase("all", EVERYTHING)]


def unfreezing_hook(model: nn.Module, allowed: set[str]) -> Callable:
    """Epoch hook: at epoch e the top e layer groups that train (``allowed``, what the phase lets train) train."""
    groups = trainable_groups(model, allowed)

    def unfreeze(epoch: int, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        open_names = {name for _, names in groups[max(len(groups) - epoch, 0) :] for name in names}
        for name, parameter in model.named_parameters():
            parameter.requires_grad = name in open_names and name in allowed

    return unfreeze


def unfreezing_epochs(model: nn.Module, allowed: set[str]) -> int:
    """The epoch at which gradual unfreezing has opened every layer group the phase trains (early
    stopping may not end a phase before it: the lowest groups would never train)."""
    return max(len(trainable_groups(model, allowed)), 1)


ADAPTATIONS: dict[str, Adaptation] = {
    "discriminative": Adaptation(
        "discriminative", "discriminative learning rates: each layer group below the top at 1/factor of the one above", 2, rate_factor=lambda config: config.discriminative_factor
    ),
    "gradual_unfreezing": Adaptation(
        "gradual_unfreezing", "gradual unfreezing: the top group first, one more group per epoch", 2, stages_groups=True, epoch_hook=unfreezing_hook, minimum_epochs=unfreezing_epochs
    ),
    "l2sp": Adaptation("l2sp", "L2-SP: a pull towards the source run's weights", pulls_towards_source=True, pretrained_reference=True),
    "chain_thaw": Adaptation("chain_thaw", "chain-thaw: the head, then each layer group alone bottom-up, then all", 2, stages_groups=True, phases=chain_thaw_phases),
    "last_layer": Adaptation(
        "last_layer", "ULMFiT's Last: the head alone trains, every layer group below it stays as pretrained", 2, stages_groups=True, phases=last_layer_phases, keeps_lower_layers=True
    ),
    "ewc": Adaptation("ewc", "EWC: a pull towards the source weights, weighted by their Fisher information on the source data", pulls_towards_source=True),
}
SOURCE_PENALTIES = tuple(name for name, adaptation in ADAPTATIONS.items() if adaptation.pulls_towards_source)


def chosen_adaptations(config: TransferConfig) -> list[Adaptation]:
    """The run's adaptations, in its order (checked before training: ``check_adaptations``)."""
    return [ADAPTATIONS[name] for name in config.adaptations]


class L2SP:
    """alpha/2 * sum ||w - w_source||^2 over the transferred weights (an extra loss term, per batch);
    with ``fisher`` (EWC), each weight's term is scaled by its Fisher information F."""

    def __init__(self, model: nn.Module, source_state: dict[str, torch.Tensor], names: list[str], weight: float, fisher: dict[str, torch.Tensor] | None = None) -> None:
        parameters = dict(model.named_parameters())
        frozen = getattr(model, "frozen", lambda name: False)  # an encoder's own weights under an adapter never move: their terms are 0
        # nor an encoder's pooler: nothing reads it, and a pull on it alone would give it a gradient (and optimizer state) it never had
        self.names = [
            name
            for name in names
            if name in parameters
            and name not in EMBEDDING_TABLES
            and parameters[name].shape == source_state[name].shape
            and (fisher is None or name in fisher)
            and not frozen(name)
            and not unread_weight(name)
        ]
        self.pairs = [(parameters[name], source_state[name].to(parameters[name].device)) for name in self.names]
        self.importance = None if fisher is None else [fisher[name].to(parameters[name].device) for name in self.names]
        self.weight = weight

    def used(self, model: nn.Module, batch) -> tuple[str, ...]:
        """The name prefixes of the weights a batch pulls: every transferred one, or in a model
        whose batches train only part of it (``weights_used_by``: a multi-task model's tasks), those
        the batch uses, so that a step changes nothing another task owns."""
        return model.weights_used_by(batch) if hasattr(model, "weights_used_by") else ("",)

    def __call__(self, model: nn.Module, batch) -> torch.Tensor:
        used = self.used(model, batch)
        terms = [(index, parameter, start) for index, (name, (parameter, start)) in enumerate(zip(self.names, self.pairs)) if name.startswith(used)]
        if self.importance is None:
            return 0.5 * self.weight * sum(((parameter - start) ** 2).sum() for _, parameter, start in terms)
        return 0.5 * self.weight * sum((self.importance[index] * (parameter - start) ** 2).sum() for index, parameter, start in terms)


class EWC(L2SP):
    """lambda/2 * sum F (w - w_source)^2 over the transferred weights (an extra loss term, per batch)."""

    def __init__(self, model: nn.Module, source_state: dict[str, torch.Tensor], fisher: dict[str, torch.Tensor], names: list[str], weight: float) -> None:
        super().__init__(model, source_state, names, weight, fisher)


FISHER = "fisher.safetensors"


def source_batches(source):
    """A single-task source run's training batches, in its epoch-0 order."""
    train = source.config.train
    encoded = load_task_data(source.config.data, ("train",)).encode("train", source.vocabularies)
    return training_batches(encoded, train.batch_size, np.random.default_rng([train.seed, 0]))


def source_fisher(source, batches: int, log: Callable[[str], None], training_batches=None) -> dict[str, torch.Tensor]:
    """The diagonal empirical Fisher of a source run on its training data: read from its run directory, or computed and stored there.

    Each tensor's mean squared gradient over the batches that reached it (all of them, but for a
    multi-task source's branches, which only their tasks' batches reach). ``training_batches``:
    a function giving the source's batches (a multi-task source's, from workflows/multitask.py,
    one task per batch), called only when the information is not stored; default a single-task
    source's (``source_batches``)."""
    path = source.directory / FISHER
    if path.is_file():
        stored = load_file(str(path))
        if stored.get("__batches__", torch.zeros(1)).item() == batches:
            return {name: tensor for name, tensor in stored.items() if name != "__batches__"}
    model = source.model
    sums = {name: torch.zeros_like(parameter) for name, parameter in model.named_parameters()}
    seen = dict.fromkeys(sums, 0)  # batches that reached each tensor (a multi-task source's batch trains one task's branches)
    counted = 0
    cuda = [parameter.device.index or 0 for parameter in model.parameters() if parameter.is_cuda][:1]
    with torch.random.fork_rng(devices=cuda):  # dropout here draws nothing from the target run's random streams (cached or not, the same run)
        model.train()
        for batch in (training_batches or source_batches)(source):
            if counted == batches:
                break
            model.zero_grad(set_to_none=True)
            model.loss(batch).backward()
            for name, parameter in model.named_parameters():
                if parameter.grad is not None:
                    sums[name] += parameter.grad.to_dense() ** 2
                    seen[name] += 1
            counted += 1
        model.eval()
    fisher = {name: total / max(seen[name], 1) for name, total in sums.items()}
    save_tensors(path, {**fisher, "__batches__": torch.tensor([float(batches)])})
    log(f"EWC: Fisher information of the source over {counted} batches of its training data, stored in {path}")
    return fisher
