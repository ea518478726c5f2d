"""The transfer schemes of the PretRand paper as data: what is copied, what trains, in which phases.

A scheme never has its own training loop. It names

- ``architecture``: the model to build (``tagger`` or ``pretrand``);
- ``transferred``: module-name prefixes whose weights come from the source run;
- ``phases``: one or more training phases, each the set of module-name prefixes that train in
  it (everything else is frozen); each phase runs the one training loop with early stopping.
  No phase at all (``source_only``): the source model is scored on the target data as it is.

Adding a scheme = one function returning phases plus one entry in ``SCHEMES``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from seqtransfer.config import TransferConfig
from seqtransfer.errors import SeqTransferError

if TYPE_CHECKING:  # type hints only: `seqtransfer --help` reads SCHEMES and must not import torch (1.5 s)
    from torch import nn

EVERYTHING = ("",)  # the empty prefix matches every parameter name
TRANSFERRED = ("word_representation.", "feature_extractor.")
RANDOM_UNITS = ("random_feature_extractor.", "random_classifier.", "classifier.", "weighting.", "output.")
RANDOM_BRANCH = ("random_feature_extractor.", "random_classifier.")  # Phi_r and Psi_r


@dataclass(frozen=True)
class Phase:
    """One call of the training loop: the parameters whose names start with ``trainable`` train."""

    name: str
    trainable: tuple[str, ...]


@dataclass(frozen=True)
class Scheme:
    name: str
    description: str
    architecture: str
    transferred: tuple[str, ...]
    phases: Callable[[TransferConfig], list[Phase]]

    @property
    def uses_source(self) -> bool:
        return bool(self.transferred)


def single_phase(trainable: tuple[str, ...]) -> Callable[[TransferConfig], list[Phase]]:
    return lambda config: [Phase("train", trainable)]


def pretrand_phases(config: TransferConfig) -> list[Phase]:
    """random++: first the randomly initialised units alone (the transferred WRE and FE frozen), then all jointly.

    The pre-trained branch's classifier Psi_p is randomly initialised (the tag sets differ), so by
    default it trains in the first phase with the random branch, as do u, v and the CRF
    (``random_units``). The paper's words, "optimising only the randomly initialised units while
    freezing the pre-trained ones", also read as the random branch alone (``random_branch``: Phi_r
    and Psi_r; Psi_p, u, v and the CRF stay at their initial values until the joint phase).
    """
    joint = Phase("joint", EVERYTHING)
    first = RANDOM_BRANCH if config.random_plus_plus_trains == "random_branch" else RANDOM_UNITS
    return [Phase("random", first), joint] if config.random_plus_plus else [joint]


SCHEMES: dict[str, Scheme] = {
    "scratch": Scheme("scratch", "From-scratch: every parameter randomly initialised (GloVe rows pre-loaded)", "tagger", (), single_phase(EVERYTHING)),
    "finetune": Scheme("finetune", "SFT: WRE and FE copied from the source, classifier random, all fine-tuned", "tagger", TRANSFERRED, single_phase(EVERYTHING)),
    "features": Scheme("features", "SFE: WRE and FE copied from the source and frozen; only the classifier trains", "tagger", TRANSFERRED, single_phase(("classifier.", "output."))),
    "pretrand": Scheme("pretrand", "PretRand: pre-trained branch + random branch, normalised, weighted, random++", "pretrand", TRANSFERRED, pretrand_phases),
    # No phase: the source model as it is (its vocabularies and labels), scored on the target data.
    "source_only": Scheme("source_only", "Source only: the source model applied to the target data, no training (MuTSPad's Mono-Task Pre-Training*)", "tagger", EVERYTHING, lambda config: []),
}


def get_scheme(name: str) -> Scheme:
    if name not in SCHEMES:
        raise SeqTransferError(f"unknown transfer scheme '{name}'", hint=f"use one of: {', '.join(SCHEMES)}")
    return SCHEMES[name]


def set_trainable(model: nn.Module, trainable: tuple[str, ...]) -> list[str]:
    """Freeze every parameter except those whose names start with a ``trainable`` prefix.

    Returns the names that train.
    """
    names = []
    frozen = getattr(model, "frozen", lambda name: False)  # weights a model never trains (an encoder under an adapter)
    for name, parameter in model.named_parameters():
        parameter.requires_grad = name.startswith(trainable) and not frozen(name)
        if parameter.requires_grad:
            names.append(name)
    return names


def scheme_prefixes(model: nn.Module, scheme: Scheme) -> tuple[str, ...]:
    """The scheme's transferred prefixes; a fine-tuned encoder's model reads words with its
    ``encoder.`` where the others have their ``word_representation.``."""
    if hasattr(model, "load_pretrained"):
        return tuple("encoder." if prefix == "word_representation." else prefix for prefix in scheme.transferred)
    return scheme.transferred
