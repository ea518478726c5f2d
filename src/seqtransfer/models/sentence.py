"""Sentence classifiers: one label per sentence (``tasks/sentence.py``).

    (Regressors: the same with one output, a score, and a squared-error loss.)
    SentenceClassifier   WRE (words, characters, frozen encoder mix when model.encoder is set)
                         -> BiLSTM -> mean over tokens -> dropout -> linear          (B, L)
                         (pairs A [SEP] B: means u over A and v over B, [u; v; |u-v|; u*v] -> linear)
    EncoderClassifier    fine-tuned Transformer -> [CLS] of the sentence's first window
                         -> dropout -> linear                                         (B, L)

Both put the label scores at token 0 of a (B, T, L) emission tensor, so the loss and decoding
read column 0 of the batch's ``labels`` target; decoding gives (B, T) with the label in column 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as functional
from torch import nn

from seqtransfer.config import ModelConfig
from seqtransfer.data.batching import Batch
from seqtransfer.models.bilstm import BiLSTM
from seqtransfer.models.dropout import Dropout
from seqtransfer.models.encoder_tagger import EncoderTagger
from seqtransfer.models.representation import word_representation_of


def mean_over(states: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
    """(B, T, H) states, (B, T) bool -> (B, H) mean of the selected positions (0 where none is)."""
    weights = selected.to(states.dtype).unsqueeze(-1)
    return (states * weights).sum(1) / weights.sum(1).clamp(min=1.0)


class SentenceHead:
    """Loss and decoding of sentence scores (B, L) against column 0 of the labels."""

    task_kind = "sentence"

    def sentence_scores(self, batch: Batch) -> torch.Tensor:
        raise NotImplementedError

    def loss(self, batch: Batch) -> torch.Tensor:
        return functional.cross_entropy(self.sentence_scores(batch).float(), batch.labels[:, 0], ignore_index=-1, reduction="sum")

    def decode(self, batch: Batch) -> torch.Tensor:
        predicted = torch.zeros_like(batch.mask, dtype=torch.long)
        predicted[:, 0] = self.sentence_scores(batch).argmax(-1)
        return predicted


class RegressionHead(SentenceHead):
    """Squared error of one score per sentence (targets ``scores``, column 0); decoding gives the score in column 0."""

    task_kind = "regression"

    def __init__(self, config: ModelConfig, word_count: int, character_count: int, label_count: int) -> None:
        """The sentence model below it in the MRO, with one output whose bias starts at the training
        scores' mean when ``model.center_scores`` asks (``model.score_mean``; tasks/regression.py)."""
        super().__init__(config, word_count, character_count, 1)
        if config.center_scores and config.score_mean is not None:
            with torch.no_grad():
                self.classifier.bias.fill_(config.score_mean)

    def loss(self, batch: Batch) -> torch.Tensor:
        return functional.mse_loss(self.sentence_scores(batch)[:, 0].float(), batch.targets["scores"][:, 0], reduction="sum")

    def decode(self, batch: Batch) -> torch.Tensor:
        predicted = torch.zeros(batch.mask.shape, dtype=torch.float32, device=batch.mask.device)
        predicted[:, 0] = self.sentence_scores(batch)[:, 0]
        return predicted


class SentenceClassifier(SentenceHead, nn.Module):
    def __init__(self, config: ModelConfig, word_count: int, character_count: int, label_count: int) -> None:
        super().__init__()
        self.word_representation = word_representation_of(config, word_count, character_count)
        self.feature_extractor = BiLSTM(self.word_representation.output_size, config.hidden)
        self.dropout = Dropout(config.dropout)
        self.pairs = bool(config.sentence_pairs)
        self.classifier = nn.Linear(config.hidden * (4 if self.pairs else 1), label_count)

    @classmethod
    def from_vocabularies(cls, config: ModelConfig, vocabularies) -> "SentenceClassifier":
        return cls(config, len(vocabularies.words), len(vocabularies.characters), len(vocabularies.labels))

    def features(self, batch: Batch) -> torch.Tensor:
        """(B, T, H) BiLSTM states."""
        return self.feature_extractor(self.word_representation(batch), batch.lengths)

    def sentence_scores(self, batch: Batch) -> torch.Tensor:
        states = self.features(batch)
        if not self.pairs:
            return self.classifier(self.dropout(mean_over(states, batch.mask)))  # (B, H) mean over the sentence's tokens
        # a pair A [SEP] B: u, v = mean over A, over B; [u; v; |u - v|; u * v] (Conneau et al. 2017)
        first, second = mean_over(states, batch.segments == 0), mean_over(states, batch.segments == 1)
        return self.classifier(self.dropout(torch.cat([first, second, (first - second).abs(), first * second], dim=-1)))


class EncoderClassifier(SentenceHead, EncoderTagger):
    """A fine-tuned encoder's sentence vector -> linear: the [CLS] vector of the sentence's first
    window (``model.sentence_pooling=cls``), or the mean of its token vectors (``mean``)."""

    feature_extractors = ()  # its [CLS] vector feeds the classifier

    def __init__(self, config: ModelConfig, word_count: int, character_count: int, label_count: int) -> None:
        super().__init__(config, word_count, character_count, label_count)
        self.sentence_pooling = config.sentence_pooling

    def sentence_scores(self, batch: Batch) -> torch.Tensor:
        if self.sentence_pooling == "mean":
            return self.classifier(self.dropout(mean_over(self.token_states(batch), batch.mask)))  # (B, H): every window's tokens
        states = self.encode(batch)  # (W, S, H)
        first_windows = batch.token_index[:, 0] // states.size(1)  # each sentence's first window (its first token lies there)
        return self.classifier(self.dropout(states[first_windows, 0]))


class SentenceRegressor(RegressionHead, SentenceClassifier):
    """The BiLSTM sentence model with one output: a score."""


class EncoderRegressor(RegressionHead, EncoderClassifier):
    """A fine-tuned encoder's [CLS] vector -> one score."""
