"""The base sequence tagger of the PretRand paper, section 3: Psi(Phi(Upsilon(w))).

    word_representation (WRE, Upsilon): (B, T) -> (B, T, D_word + D_char)
    feature_extractor   (FE, Phi):      BiLSTM -> (B, T, H)
    classifier          (Cl, Psi):      linear -> (B, T, L) emissions
    output:                             softmax or CRF: loss and decoding

Parameter names start with these four module names; transfer schemes select parameters by them.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from seqtransfer.config import ModelConfig
from seqtransfer.data.batching import Batch
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.bilstm import BiLSTM, NoFeatureExtractor
from seqtransfer.models.dropout import Dropout
from seqtransfer.models.outputs import OUTPUTS
from seqtransfer.models.representation import WordRepresentation, word_representation_of


class SequenceLabeller(nn.Module):
    """What every labelling model shares: emissions -> output layer (loss, decoding)."""

    task_kind = "tagging"  # seqtransfer.tasks: what decode() returns, how it is scored and written
    output: nn.Module
    word_representation: WordRepresentation

    def emissions(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, L) label scores."""
        raise NotImplementedError

    def loss(self, batch: Batch) -> torch.Tensor:
        """Summed loss of the batch (labels must be present); the output layer reads fp32 scores (mixed precision)."""
        return self.output.loss(self.emissions(batch).float(), batch.labels, batch.mask, batch.weights)  # weights: None, or soft selection's

    def decode(self, batch: Batch) -> torch.Tensor:
        """(B, T) predicted label indices."""
        return self.output.decode(self.emissions(batch).float(), batch.mask)

    def probabilities(self, batch: Batch) -> torch.Tensor:
        """(B, T, L) per-token label distributions (what ensembles average): a softmax output's, or a CRF's label marginals."""
        return self.output.probabilities(self.emissions(batch).float(), batch.mask)

    @classmethod
    def from_vocabularies(cls, config: ModelConfig, vocabularies) -> "SequenceLabeller":
        """A model sized for ``vocabularies`` (words, characters, labels)."""
        return cls(config, len(vocabularies.words), len(vocabularies.characters), len(vocabularies.labels))

    def load_word_vectors(self, matrix: np.ndarray) -> None:
        """Copy a (V, D) embedding matrix into the word embedding."""
        self.word_representation.load_vectors(matrix)


def check_classifier(config: ModelConfig) -> None:
    if config.classifier not in OUTPUTS:
        raise SeqTransferError(f"unknown classifier '{config.classifier}'", hint=f"use model.classifier={' or '.join(OUTPUTS)}")


class Tagger(SequenceLabeller):
    """Word+char BiLSTM tagger with a softmax or CRF output (``model.feature_extractor=none``: no BiLSTM)."""

    feature_extractors = ("bilstm", "none")  # what model.feature_extractor may choose (models/registry.py)

    def __init__(self, config: ModelConfig, word_count: int, character_count: int, label_count: int) -> None:
        super().__init__()
        check_classifier(config)
        self.word_representation = word_representation_of(config, word_count, character_count)
        if config.feature_extractor == "none":  # the representation feeds the classifier (To-tune paper: FE + CRF)
            self.feature_extractor, size = NoFeatureExtractor(), self.word_representation.output_size
        else:
            self.feature_extractor, size = BiLSTM(self.word_representation.output_size, config.hidden), config.hidden
        self.dropout = Dropout(config.dropout)
        self.classifier = nn.Linear(size, label_count)
        self.output = OUTPUTS[config.classifier](label_count)

    def features(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, H) feature extractor states (before dropout)."""
        return self.feature_extractor(self.word_representation(batch), batch.lengths)

    def emissions(self, batch: Batch) -> torch.Tensor:
        """Batch -> (B, T, L) label scores."""
        return self.classifier(self.dropout(self.features(batch)))


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters (optionally only those with requires_grad)."""
    return sum(parameter.numel() for parameter in model.parameters() if parameter.requires_grad or not trainable_only)


def size_metrics(model: nn.Module, config) -> dict[str, int]:
    """A run's ``parameters`` for metrics.json: the model's own, plus the frozen encoder its
    features come from (``frozen_encoder_parameters``, also recorded by itself) where it has one."""
    frozen = frozen_encoder_parameters(config)
    return {"parameters": count_parameters(model) + frozen, **({"frozen_encoder_parameters": frozen} if frozen else {})}


def shared_frozen_encoder_parameters(configs) -> int:
    """Parameters of the frozen encoders that several models' features come from, each encoder
    counted once (members of an ensemble that read one frozen encoder share it)."""
    frozen = {config.encoder: count for config in configs if (count := frozen_encoder_parameters(config))}
    return sum(frozen.values())


def frozen_encoder_parameters(config) -> int:
    """Parameters of a frozen encoder that computes the model's features outside it
    (``model.encoder_mode=features``): part of what a run needs, never trained; 0 otherwise."""
    if not config.encoder or config.encoder_mode != "features":
        return 0
    from seqtransfer.embeddings.transformer import encoder_parameters

    return encoder_parameters(config.encoder)
