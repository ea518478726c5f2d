"""Adversarial pretraining (Ganin et al. 2016; MuTSPad paper §5.2.1): while a source model learns
its task, a domain discriminator learns to tell the feature extractor's states of source
sentences from those of unlabelled target sentences, behind a gradient-reversal layer, so that
the feature extractor learns states the discriminator cannot tell apart. The model is then
fine-tuned on the target task as any source run (``transfer.scheme=finetune``).

    train.adversarial_data=tweebank:upos      unlabelled target sentences (labels ignored), or a
                                              text file, one whitespace-tokenised sentence per line
    train.adversarial_weight=0.1              lambda: the reversed gradient's scale
    train.adversarial_schedule=ganin          lambda ramped from 0 to that over training, as Ganin et
                                              al. (2016) do: 2 / (1 + exp(-10 p)) - 1 times it, p the
                                              share of train.max_epochs done when the epoch starts
                                              (theirs is per step; constant, the default, keeps it)
    model.discriminator_hidden=100            units of the discriminator's hidden layer

Each training batch of the source is paired with a batch of target sentences, which the term
draws itself in a seeded order per epoch. The discriminator's loss (binary cross-entropy per
token, summed as the task loss is) is an extra loss term of the one training loop, registered as
the other terms are (transfer/loss_terms.py); the discriminator is part of the source model
(models/discriminator.py: saved with it, never transferred). The source states are those the
task loss computed (read by a forward hook on the feature extractor: no second pass). Each epoch's record and log line carry the
discriminator's token accuracy on the training batches (``domain_accuracy``): near 50 % (the
share of target tokens in the pairs, more exactly) the feature extractor's states no longer tell
the domains apart; near 100 % the reversal is not winning.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import torch
import torch.nn.functional as functional
from torch import nn

from seqtransfer.corpora.unlabeled import read_unlabeled
from seqtransfer.data.batching import Batch, EncodedSentences, encode_sentences, training_batches
from seqtransfer.errors import SeqTransferError


class ReverseGradient(torch.autograd.Function):
    """Identity forward; the gradient times -scale backward."""

    @staticmethod
    def forward(context, inputs: torch.Tensor, scale: float) -> torch.Tensor:  # noqa: ANN001 - torch's signature
        context.scale = scale
        return inputs.view_as(inputs)

    @staticmethod
    def backward(context, gradient: torch.Tensor):  # noqa: ANN001, ANN205
        return -context.scale * gradient, None


def token_states(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, T[+1], H) feature-extractor output -> (N, H) states of the real tokens (a parser's ROOT dropped)."""
    if states.size(1) == mask.size(1) + 1:
        states = states[:, 1:]
    return states[mask]


def target_batches(target: EncodedSentences, batch_size: int, seed: int, epoch: int) -> Iterator[Batch]:
    """Batches of unlabelled target sentences in a seeded order per epoch, starting over when the
    target set is used up (as many as the source has batches)."""
    cycle = 0
    while True:
        yield from training_batches(target, batch_size, np.random.default_rng([seed, epoch, 7919, cycle]))
        cycle += 1


class DomainLoss:
    """The extra loss term: lambda-reversed discriminator cross-entropy on source and target
    states; each call reads the next of the epoch's target batches (``start_epoch``)."""

    def __init__(self, model: nn.Module, weight: float, target: EncodedSentences, batch_size: int, seed: int, schedule: str = "constant", max_epochs: int = 1) -> None:
        """``target``: the unlabelled target sentences, encoded (``encode_sentences``); ``schedule``:
        lambda constant at ``weight``, or Ganin's ramp towards it over ``max_epochs``."""
        self.full_weight, self.schedule, self.max_epochs = weight, schedule, max_epochs
        self.weight, self.target, self.batch_size, self.seed = ramped_weight(weight, schedule, 1, max_epochs), target, batch_size, seed
        self.targets: Iterator[Batch] = target_batches(target, batch_size, seed, 1)
        self.source_states: torch.Tensor | None = None
        self.correct = self.tokens = self.target_tokens = 0  # this epoch's discriminator decisions
        model.feature_extractor.register_forward_hook(self.keep)

    def keep(self, module: nn.Module, inputs, output: torch.Tensor) -> None:  # noqa: ANN001 - hook signature
        if module.training:
            self.source_states = output

    def start_epoch(self, epoch: int) -> None:
        self.targets = target_batches(self.target, self.batch_size, self.seed, epoch)
        self.weight = ramped_weight(self.full_weight, self.schedule, epoch, self.max_epochs)

    def __call__(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        source = token_states(self.source_states, batch.mask)
        companion = next(self.targets).to(batch.mask.device)
        target = token_states(model.feature_extractor(model.word_representation(companion), companion.lengths), companion.mask)
        states = ReverseGradient.apply(torch.cat([source, target]), self.weight)
        domains = torch.cat([source.new_zeros(len(source)), target.new_ones(len(target))])
        logits = model.domain_discriminator(states)
        with torch.no_grad():  # kept on the model's device: read once per epoch, no sync per batch
            self.correct = self.correct + ((logits > 0) == (domains > 0.5)).sum()
        self.tokens, self.target_tokens = self.tokens + len(domains), self.target_tokens + len(target)
        return functional.binary_cross_entropy_with_logits(logits, domains, reduction="sum")

    def epoch_summary(self) -> dict[str, float]:
        """{"domain_accuracy": % of this epoch's training tokens whose domain the discriminator told
        right, "domain_majority": % a constant guess of the larger domain would get}; then starts over."""
        if not self.tokens:
            return {}
        summary = {"domain_accuracy": round(100.0 * int(self.correct) / self.tokens, 2), "domain_majority": round(100.0 * max(self.target_tokens, self.tokens - self.target_tokens) / self.tokens, 2)}
        if self.schedule != "constant":
            summary["adversarial_lambda"] = round(self.weight, 4)
        self.correct = self.tokens = self.target_tokens = 0
        return summary


def ramped_weight(weight: float, schedule: str, epoch: int, max_epochs: int) -> float:
    """Lambda in ``epoch`` (from 1): ``weight`` (constant), or Ganin et al.'s 2 / (1 + exp(-10 p)) - 1
    times it, p = (epoch - 1) / max_epochs: 0 in the first epoch, near ``weight`` from half-way on."""
    if schedule == "constant":
        return weight
    progress = (epoch - 1) / max(max_epochs, 1)
    return weight * (2.0 / (1.0 + math.exp(-10.0 * progress)) - 1.0)


def domain_loss(config, model: nn.Module, vocabularies, log) -> DomainLoss:
    """The run's domain loss against ``train.adversarial_data``'s unlabelled target sentences."""
    train = config.train
    tokens = unlabelled_target(config)
    ramp = "" if train.adversarial_schedule == "constant" else f" (Ganin's ramp from 0 over {train.max_epochs} epochs)"
    log(f"adversarial training against {train.adversarial_data}: {len(tokens)} unlabelled target sentences, lambda {train.adversarial_weight}{ramp}")
    schedule = (train.adversarial_schedule, train.max_epochs)
    return DomainLoss(model, train.adversarial_weight, encode_sentences(tokens, vocabularies), train.batch_size, train.seed, *schedule)


def unlabelled_target(config) -> list[list[str]]:
    """The unlabelled target sentences of adversarial training (none without ``train.adversarial_data``)."""
    if not config.train.adversarial_data:
        return []
    tokens = unlabelled_tokens(config.train.adversarial_data, config.data.data_dir, config.train.adversarial_tokenizer, config.train.adversarial_word_column)
    if not tokens:
        raise SeqTransferError(f"train.adversarial_data '{config.train.adversarial_data}' holds no sentences", hint="give unlabelled target sentences")
    return tokens


def unlabelled_tokens(entry: str, data_dir: str | None, tokenizer: str = "whitespace", word_column: int | None = None) -> list[list[str]]:
    """Target sentences: a dataset's training split, ``tweets_unlabeled``, a text file (one sentence
    per line, split by ``tokenizer``) or a column file's ``word_column``; see :mod:`seqtransfer.corpora.unlabeled`."""
    try:
        return read_unlabeled(entry, data_dir, tokenizer, word_column, "train.adversarial_word_column")
    except SeqTransferError as error:
        raise SeqTransferError(
            f"train.adversarial_data '{entry}': {error.message}", path=error.path, line=error.line, hint=error.hint or "give a text file (one sentence per line), tweets_unlabeled or DATASET[:TASK]"
        ) from None
