"""An auxiliary language-model loss while training (the tutorial's multi-task fine-tuning).

The task keeps its loss; ``transfer.auxiliary_lm_weight`` times a bidirectional language-model
loss on the same sentences is added (Rei 2017's auxiliary objective for sequence labelling): the
forward half of the feature extractor's state at token t predicts word t+1, the backward half
predicts word t-1. Words are the model's word-vocabulary indices; those past the
``transfer.auxiliary_lm_words`` most frequent ones (the vocabulary is ordered by training
frequency) are predicted as the unknown word. The two softmax layers are part of the model
(``language_model``), sized by ``model.language_model_words`` so that the run directory reloads;
prediction never reads them.

    states (B, T, H) = [forward (B, T, H/2); backward (B, T, H/2)]
    loss = weight * (sum_t CE(W_f forward_t, w_{t+1}) + sum_t CE(W_b backward_t, w_{t-1}))
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from seqtransfer.data.batching import Batch
from seqtransfer.data.vocabulary import PADDING, UNKNOWN
from seqtransfer.errors import SeqTransferError

UNKNOWN_INDEX = 1  # Vocabulary.build puts <pad>, <unk> first


class LanguageModelHead(nn.Module):
    """Next-word and previous-word softmax layers over the states' two halves: (N, H/2) -> (N, words) each."""

    def __init__(self, half: int, words: int) -> None:
        super().__init__()
        self.next_word = nn.Linear(half, words)
        self.previous_word = nn.Linear(half, words)
        self.words = words


def attach_language_model(model: nn.Module, words: int) -> None:
    """Give ``model`` its auxiliary LM layers (``words`` > 0), as the model's config says."""
    if words > 0:
        from seqtransfer.transfer.adversarial import feature_size

        if getattr(model, "feature_extractor", None) is None or getattr(model, "word_representation", None) is None:
            raise SeqTransferError(f"an auxiliary LM loss reads a BiLSTM feature extractor; this {type(model).__name__} has none",
                                   hint="drop transfer.auxiliary_lm_weight (it serves the BiLSTM tagger, PretRand and the parser)")
        model.language_model = LanguageModelHead(feature_size(model) // 2, words)


def word_targets(words: torch.Tensor, count: int) -> torch.Tensor:
    """(B, T) word indices -> the LM's targets: unknown past the ``count`` most frequent words, -1 for padding."""
    targets = torch.where(words < count, words, torch.full_like(words, UNKNOWN_INDEX))
    return targets.masked_fill(words == 0, -1)


class AuxiliaryLanguageModelLoss:
    """The extra loss term: reads the feature extractor's states of the batch through a forward hook."""

    def __init__(self, model: nn.Module, weight: float) -> None:
        self.weight = weight
        self.states: torch.Tensor | None = None
        model.feature_extractor.register_forward_hook(self.keep)

    def keep(self, module: nn.Module, inputs, output: torch.Tensor) -> None:  # noqa: ANN001 - hook signature
        if module.training:
            self.states = output

    def __call__(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        states = self.states
        if states.size(1) == batch.mask.size(1) + 1:  # a parser's ROOT first
            states = states[:, 1:]
        forward, backward = states.chunk(2, dim=-1)  # (B, T, H/2) each
        head = model.language_model
        targets = word_targets(batch.words, head.words)  # (B, T)
        next_loss = functional.cross_entropy(head.next_word(forward[:, :-1]).flatten(0, 1), targets[:, 1:].flatten(), ignore_index=-1, reduction="sum")
        previous_targets = targets[:, :-1].masked_fill(batch.words[:, 1:] == 0, -1)  # a padding state predicts nothing
        previous_loss = functional.cross_entropy(head.previous_word(backward[:, 1:]).flatten(0, 1), previous_targets.flatten(), ignore_index=-1, reduction="sum")
        return self.weight * (next_loss + previous_loss)


def auxiliary_language_model(config, model: nn.Module, log) -> tuple:
    """The extra loss term when ``transfer.auxiliary_lm_weight`` is set, else nothing."""
    if not config.transfer.auxiliary_lm_weight:
        return ()
    log(f"auxiliary LM loss: weight {config.transfer.auxiliary_lm_weight:g}, {model.language_model.words} words ({PADDING}, {UNKNOWN} and the most frequent)")
    return (AuxiliaryLanguageModelLoss(model, config.transfer.auxiliary_lm_weight),)
