"""Heads: what a model does with its encoder's token states, one per task kind (``tasks/``).

An encoder (``models/encoders.py``) turns a batch into token states (B, T, D); a head turns them
into a loss and a decoding. A model class is one encoder and one head (``models/encoders.py``,
``model_class``): the head is built after the encoder, from the encoder's output size.

    tagging      dropout -> linear -> softmax or CRF (``model.classifier``)            (B, T, L)
    dependency   [ROOT; states] -> biaffine arcs and relations (Dozat & Manning 2017)  (B, T, T+1), (B, T, L)
    sentence     a reader's sentence (or pair) vector (models/sentence_readers.py: the mean
                 or [CLS], max, bi-attention, ESIM, BCN) -> dropout -> linear           (B, L)
    regression   the sentence head with one output and a squared-error loss           (B,)

Module names (``dropout``, ``classifier``, ``output``) are those the transfer schemes select
parameters by. Sentence scores sit at token 0: decoding gives (B, T) with the label in column 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as functional
from torch import nn

from seqtransfer.config import ModelConfig
from seqtransfer.data.batching import Batch
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.biaffine import BiaffineClassifier
from seqtransfer.models.dropout import Dropout
from seqtransfer.models.outputs import OUTPUTS
from seqtransfer.models.sentence_readers import build_reader


def check_classifier(config: ModelConfig) -> None:
    if config.classifier not in OUTPUTS:
        raise SeqTransferError(f"unknown classifier '{config.classifier}'", hint=f"use model.classifier={' or '.join(OUTPUTS)}")


class TaggingHead:
    """Per-token label scores -> softmax or CRF: loss, decoding, label distributions."""

    task_kind = "tagging"  # seqtransfer.tasks: what decode() returns, how it is scored and written
    chooses_feature_extractor = True  # model.feature_extractor may put a BiLSTM (or nothing) between encoder and head

    def check_head(self, config: ModelConfig) -> None:
        check_classifier(config)

    def build_head(self, config: ModelConfig, input_size: int, label_count: int) -> None:
        self.dropout = Dropout(config.dropout)
        self.classifier = nn.Linear(input_size, label_count)
        self.output = OUTPUTS[config.classifier](label_count)

    def emissions(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, L) label scores."""
        return self.classifier(self.dropout(self.features(batch)))

    def loss(self, batch: Batch) -> torch.Tensor:
        """Summed loss of the batch (labels must be present); the output layer reads fp32 scores (mixed precision)."""
        return self.output.loss(self.emissions(batch).float(), batch.labels, batch.mask, batch.weights)  # weights: None, or soft selection's

    def decode(self, batch: Batch) -> torch.Tensor:
        """(B, T) predicted label indices."""
        return self.output.decode(self.emissions(batch).float(), batch.mask)

    def probabilities(self, batch: Batch, temperature: float = 1.0) -> torch.Tensor:
        """(B, T, L) per-token label distributions at ``temperature`` (what ensembles average and
        teachers distil): a softmax output's, or a CRF's label marginals."""
        return self.output.probabilities(self.emissions(batch).float(), batch.mask, temperature)


class DependencyHead:
    """ROOT first, then biaffine arc and relation scorers over (B, T+1, H) states.

    An encoder that ``reads_root`` (``rooted_features``) reads a ROOT of its own (the word encoder's BiLSTM reads a
    learned ROOT input first, as Stanza's parser does); for any other, the head puts a learned
    ROOT state (``root_state``) before the encoder's token states.
    """

    task_kind = "dependency"
    chooses_feature_extractor = False

    def check_head(self, config: ModelConfig) -> None:
        pass

    def build_head(self, config: ModelConfig, input_size: int, label_count: int) -> None:
        if not getattr(self, "reads_root", False):
            self.root_state = nn.Parameter(torch.randn(input_size) * 0.1)
        self.dropout = Dropout(config.dropout)
        self.classifier = BiaffineClassifier(input_size, config.arc_hidden, config.relation_hidden, label_count, config.dropout)
        self.single_root = config.single_root is not False

    def states(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T+1, H) states, ROOT first (after dropout)."""
        if getattr(self, "reads_root", False):
            return self.dropout(self.rooted_features(batch))
        states = self.features(batch)
        return self.dropout(torch.cat([self.root_state.to(states.dtype).expand(states.size(0), 1, -1), states], dim=1))

    def loss(self, batch: Batch) -> torch.Tensor:
        """Summed cross-entropy of the gold heads and of the gold arcs' relations."""
        return self.classifier.loss(self.states(batch), batch.targets["heads"], batch.targets["labels"], batch.mask, batch.lengths, batch.weights)

    def decode(self, batch: Batch) -> dict[str, torch.Tensor]:
        """{"heads": (B, T) maximum spanning trees, "labels": (B, T) relation indices}."""
        return self.classifier.decode(self.states(batch), batch.mask, batch.lengths, self.single_root)


class SentenceHead:
    """One label per sentence: loss and decoding of (B, L) scores against column 0 of the labels.

    The sentence (or pair) vector comes from the reader ``model.sentence_reader`` chooses
    (``models/sentence_readers.py``; by default the encoder's [CLS] where it has one, else the mean
    of the token states, a pair read apart as [u; v; |u - v|; u * v]); dropout and a linear layer
    (``classifier``) score it.
    """

    task_kind = "sentence"
    chooses_feature_extractor = True  # none before a reader with its own encoding (ESIM, the BCN: filled so, fill_reader_input)

    def check_head(self, config: ModelConfig) -> None:
        pass

    def build_head(self, config: ModelConfig, input_size: int, label_count: int) -> None:
        self.reader = build_reader(config, input_size, self)
        self.dropout = Dropout(config.dropout)
        self.classifier = nn.Linear(self.reader.output_size, label_count)

    def sentence_scores(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, L) label scores of each sentence."""
        return self.classifier(self.dropout(self.reader(self, batch)))

    def loss(self, batch: Batch) -> torch.Tensor:
        return functional.cross_entropy(self.sentence_scores(batch).float(), batch.labels[:, 0], ignore_index=-1, reduction="sum")

    def decode(self, batch: Batch) -> torch.Tensor:
        predicted = torch.zeros_like(batch.mask, dtype=torch.long)
        predicted[:, 0] = self.sentence_scores(batch).argmax(-1)
        return predicted


class RegressionHead(SentenceHead):
    """One score per sentence, squared error against ``scores`` (column 0); its bias starts at the
    training scores' mean when ``model.center_scores`` asks (``model.score_mean``; tasks/regression.py)."""

    task_kind = "regression"

    def build_head(self, config: ModelConfig, input_size: int, label_count: int) -> None:
        super().build_head(config, input_size, 1)
        if config.center_scores and config.score_mean is not None:
            with torch.no_grad():
                self.classifier.bias.fill_(config.score_mean)

    def loss(self, batch: Batch) -> torch.Tensor:
        return functional.mse_loss(self.sentence_scores(batch)[:, 0].float(), batch.targets["scores"][:, 0], reduction="sum")

    def decode(self, batch: Batch) -> torch.Tensor:
        predicted = torch.zeros(batch.mask.shape, dtype=torch.float32, device=batch.mask.device)
        predicted[:, 0] = self.sentence_scores(batch)[:, 0]
        return predicted


HEADS: dict[str, type] = {"tagging": TaggingHead, "dependency": DependencyHead, "sentence": SentenceHead, "regression": RegressionHead}
