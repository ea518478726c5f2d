"""Schemes that add a term to the task's loss, by name (``LOSS_TERMS``).

Each builder reads the run (``TermContext``) and returns its terms, none when the run's settings
do not ask for it; the one training loop adds every term to each batch's loss
(training/loop.py ``ExtraLoss``). A new term is its module, its settings and one line here.

- ``adversarial``: the domain discriminator's reversed loss on source and unlabelled target
  states (``train.adversarial_data``; transfer/adversarial.py);
- ``source_penalties``: L2-SP and EWC (``transfer.adaptations``), towards the source run's weights,
  or a fine-tuned encoder's pretrained weights (L2-SP);
- ``distillation``: the soft targets of teacher runs (``transfer.distill_from``);
- ``auxiliary_lm``: an auxiliary language model (``transfer.auxiliary_lm_weight``).

A multi-task run builds its own penalties, one per branch (workflows/multitask.py), and has no
adversarial training.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torch import nn

from seqtransfer import rundir
from seqtransfer.transfer.adaptations import EWC, L2SP, SOURCE_PENALTIES, source_fisher
from seqtransfer.transfer.adversarial import domain_loss
from seqtransfer.transfer.auxiliary_lm import auxiliary_language_model
from seqtransfer.transfer.distillation import Distillation, teacher_directories
from seqtransfer.transfer.schemes import Scheme, scheme_prefixes

if TYPE_CHECKING:
    from seqtransfer.config import RunConfig
    from seqtransfer.corpora.task_data import TaskData
    from seqtransfer.data.vocabulary import Vocabularies


@dataclass(frozen=True)
class TermContext:
    """What a loss term may read: the run's settings, its model and scheme, its data and
    vocabularies, the training sentences' word ids (an auxiliary LM's classes) and the run's log."""

    config: RunConfig
    model: nn.Module
    scheme: Scheme
    data: TaskData
    vocabularies: Vocabularies
    training_word_ids: Any
    log: Callable[[str], None]


def adversarial(context: TermContext) -> tuple:
    """The domain loss against ``train.adversarial_data``'s unlabelled target sentences, when set."""
    train = context.config.train
    if not train.adversarial_data:
        return ()
    return (domain_loss(context.config, context.model, context.vocabularies, context.log),)


def source_penalties(context: TermContext) -> tuple:
    """L2-SP and EWC towards the source run's weights, when ``transfer.adaptations`` asks for them."""
    config, model, log = context.config, context.model, context.log
    wanted = [name for name in SOURCE_PENALTIES if name in config.transfer.adaptations]
    if not wanted:
        return ()

    if config.transfer.source is None:  # a fine-tuned encoder, just loaded with its pretrained weights: the reference
        reference = {name: tensor.detach().clone() for name, tensor in model.state_dict().items() if name.startswith("encoder.")}
        penalty = L2SP(model, reference, list(reference), config.transfer.l2sp_weight)
        log(f"L2-SP (alpha {config.transfer.l2sp_weight}) towards the pretrained encoder: {len(penalty.pairs)} tensors")
        return (penalty,)
    source = rundir.load_run(config.transfer.source)
    source_state = {name: tensor.detach().clone() for name, tensor in source.model.state_dict().items()}
    names = [name for name in source_state if name.startswith(scheme_prefixes(model, context.scheme))]
    penalties = []
    if "l2sp" in wanted:
        penalties.append(L2SP(model, source_state, names, config.transfer.l2sp_weight))
        log(f"L2-SP (alpha {config.transfer.l2sp_weight}) over {len(penalties[-1].pairs)} transferred tensors")
    if "ewc" in wanted:
        fisher = source_fisher(source, config.transfer.ewc_batches, log)
        penalties.append(EWC(model, source_state, fisher, names, config.transfer.ewc_weight))
        log(f"EWC (lambda {config.transfer.ewc_weight}) over {len(penalties[-1].pairs)} transferred tensors")
    return tuple(penalties)


def distillation(context: TermContext) -> tuple:
    """The distillation term when ``transfer.distill_from`` names teacher runs."""
    transfer = context.config.transfer
    if not transfer.distill_from:
        return ()

    teachers = [rundir.load_run(directory) for directory in teacher_directories(transfer.distill_from)]
    term = Distillation(teachers, context.data.tokens("train"), context.vocabularies.labels, transfer.distillation_temperature, transfer.distillation_weight)
    context.log(f"distilling {len(teachers)} teacher run(s) at temperature {transfer.distillation_temperature}, weight {transfer.distillation_weight}")
    return (term,)


def auxiliary_lm(context: TermContext) -> tuple:
    """The auxiliary language model's term when ``transfer.auxiliary_lm_weight`` is set."""
    return auxiliary_language_model(context.config, context.model, context.training_word_ids, context.log)


# name -> builder; the terms are added to the loss in this order
LOSS_TERMS: dict[str, Callable[[TermContext], tuple]] = {"adversarial": adversarial, "source_penalties": source_penalties, "distillation": distillation, "auxiliary_lm": auxiliary_lm}


def loss_terms(context: TermContext) -> tuple:
    """Every registered term the run asks for, in ``LOSS_TERMS`` order."""
    return tuple(term for build in LOSS_TERMS.values() for term in build(context))
