"""Sentence (pair) regression (STS-B similarity, SICK relatedness): one real score per sentence.

Gold is the sentence's one-value score column, as a one-item list of floats; the batch target
``scores`` is a (B, T) float array with the score in column 0; models predict a score per
sentence, decoded into column 0. Scored by Pearson (main) and Spearman correlation (x 100).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from seqtransfer.data.corpus import Sentence
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import atomic_write


class SentenceRegression:
    name = "regression"
    metrics = ("correlation", "spearman")
    sentence_weights = False  # the loss ignores Batch.weights
    optimizer = "sgd"
    architectures = {"tagger": "sentence_regressor", "encoder": "encoder_regressor"}

    def gold(self, sentences: Sequence[Sentence], column: str) -> list[list[float]]:
        scores = []
        for sentence in sentences:
            value = sentence.labels(column)[0]
            try:
                scores.append([float(value)])
            except ValueError:
                raise SeqTransferError(f"score {value!r} is not a number", path=sentence.source, line=sentence.line, hint="give a number in the score field") from None
        return scores

    def check(self, sentences: Sequence[Sentence], column: str, scheme: str, strict: bool = False) -> list[str]:
        self.gold(sentences, column)
        return []

    def resolve_scheme(self, sentences: Sequence[Sentence], column: str, declared: str) -> tuple[str, str | None]:
        return "none", None

    def label_strings(self, gold: Sequence[list[float]]) -> list[list[str]]:
        return []  # no label vocabulary: a score is predicted, not a class

    def encode_targets(self, gold: Sequence[list[float]], labels) -> dict[str, list[np.ndarray]]:
        return {"scores": [np.asarray(scores, dtype=np.float32) for scores in gold]}

    def read_decoded(self, decoded: torch.Tensor, lengths: np.ndarray, labels) -> list[list[float]]:
        return [[float(value)] for value in decoded[:, 0].tolist()]

    def write_predictions(self, directory: Path, name: str, sentences: Sequence[Sentence], gold, predicted) -> None:
        """``predictions/NAME.tsv``: [gold TAB] predicted TAB text per sentence."""
        with atomic_write(directory / f"{name}.tsv") as handle:
            for index, sentence in enumerate(sentences):
                fields = ([f"{gold[index][0]:g}"] if gold is not None else []) + [f"{predicted[index][0]:.4f}", " ".join(sentence.tokens)]
                handle.write("\t".join(fields) + "\n")

    def format_output(self, sentences: Sequence[Sentence], predicted: Sequence[list[float]]) -> str:
        return "".join(f"{scores[0]:.4f}\t{' '.join(sentence.tokens)}\n" for sentence, scores in zip(sentences, predicted))

    def for_user(self, prediction: list[float]) -> float:
        return prediction[0]

    def fill_config(self, model, gold, sentences: Sequence[Sentence] = ()) -> str | None:
        from seqtransfer.tasks.sentence import fill_pairs

        return fill_pairs(model, sentences)


REGRESSION = SentenceRegression()
