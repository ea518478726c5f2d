"""Sentence classification (TREC-6 question types, SST-2 sentiment): one label per sentence.

Gold is the sentence's one-value label column, as a one-item list, so the accuracy metric and its
per-class scores apply unchanged (accuracy over one "token" per sentence = sentence accuracy).
The batch target ``labels`` holds the label in column 0 of a (B, T) array; a model's decoding is
(B, T) with the predicted label in column 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from seqtransfer.data.batching import encode_labels
from seqtransfer.data.conll import write_prediction_lines
from seqtransfer.data.corpus import Sentence
from seqtransfer.data.tsv import PAIR_SEPARATOR
from seqtransfer.data.vocabulary import Vocabulary
from seqtransfer.files import atomic_write


class SentenceClassification:
    name = "sentence"
    metrics = ("accuracy", "positive_f1")
    sentence_weights = False  # the loss ignores Batch.weights
    optimizer = "sgd"
    architectures = {"tagger": "sentence_classifier", "encoder": "encoder_classifier"}  # scheme's architecture (or a fine-tuned encoder) -> model

    def gold(self, sentences: Sequence[Sentence], column: str) -> list[list[str]]:
        return [sentence.labels(column)[:1] for sentence in sentences]

    def check(self, sentences: Sequence[Sentence], column: str, scheme: str, strict: bool = False) -> list[str]:
        self.gold(sentences, column)  # a missing label column is a one-line error
        return []

    def resolve_scheme(self, sentences: Sequence[Sentence], column: str, declared: str) -> tuple[str, str | None]:
        return "none", None

    def label_strings(self, gold: Sequence[list[str]]) -> Sequence[list[str]]:
        return gold

    def encode_targets(self, gold: Sequence[list[str]], labels: Vocabulary) -> dict[str, list[np.ndarray]]:
        return {"labels": [encode_labels(labels, sentence) for sentence in gold]}

    def read_decoded(self, decoded: torch.Tensor, lengths: np.ndarray, labels: Vocabulary) -> list[list[str]]:
        return [labels.decode(decoded[:, :1].numpy()[row]) for row in range(len(lengths))]

    def write_predictions(self, directory: Path, name: str, sentences: Sequence[Sentence], gold, predicted) -> None:
        """``predictions/NAME.tsv``: [gold TAB] predicted TAB text per sentence; and ``NAME.conll``,
        one line per sentence (``sentence-N gold predicted``), which significance tests and
        ``analyze transfer`` read as they read tagging runs."""
        with atomic_write(directory / f"{name}.tsv") as handle:
            for index, sentence in enumerate(sentences):
                fields = ([gold[index][0]] if gold is not None else []) + [predicted[index][0], " ".join(sentence.tokens)]
                handle.write("\t".join(fields) + "\n")
        names = [[f"sentence-{index + 1}"] for index in range(len(sentences))]
        write_prediction_lines(directory / f"{name}.conll", names, None if gold is None else list(gold), list(predicted))

    def format_output(self, sentences: Sequence[Sentence], predicted: Sequence[list[str]]) -> str:
        return "".join(f"{labels[0]}\t{' '.join(sentence.tokens)}\n" for sentence, labels in zip(sentences, predicted))

    def for_user(self, prediction: list[str]) -> str:
        return prediction[0]

    def fill_config(self, model, gold, sentences: Sequence[Sentence] = ()) -> str | None:
        return fill_pairs(model, sentences)


def fill_pairs(model, sentences: Sequence[Sentence]) -> str | None:
    """``model.sentence_pairs`` from the training sentences: pairs hold the ``[SEP]`` token."""
    if model.sentence_pairs is None:
        model.sentence_pairs = any(PAIR_SEPARATOR in sentence.tokens for sentence in sentences)
        return f"sentence pairs: {'yes' if model.sentence_pairs else 'no'} (model.sentence_pairs, from the training data)"
    return None


SENTENCE = SentenceClassification()
