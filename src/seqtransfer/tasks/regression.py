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
from seqtransfer.data.tsv import as_number
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import atomic_write
from seqtransfer.tasks.sentence import fill_pairs


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
            score = as_number(value)
            if score is None:  # nan and inf too: a target no loss can train on
                raise SeqTransferError(f"score {value!r} is not a number", path=sentence.source, line=sentence.line, hint="give a finite number in the score field")
            scores.append([score])
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
        centred = fill_score_mean(model, gold)
        paired = fill_pairs(model, sentences)
        return "; ".join(line for line in (paired, centred) if line) or None


def fill_score_mean(model, gold: Sequence[list[float]]) -> str | None:
    """``model.score_mean`` from the training scores when ``model.center_scores`` asks for it.

    A fine-tuned encoder's regression head starts with a bias of 0 while SICK and STS-B scores lie
    in 1-5 and 0-5; at AdamW's 5e-5 the bias moves 0.02 in 3 epochs, so the encoder itself has to
    learn the offset first (MPNet's SICK-R dev Pearson after one epoch: -15.47, MiniLM's 82.02).
    Starting the bias at the mean leaves only the ordering to learn."""
    if not model.center_scores or model.score_mean is not None:
        return None
    model.score_mean = float(np.mean([scores[0] for scores in gold]))
    return f"regression head: bias starts at {model.score_mean:.4f}, the training scores' mean (model.center_scores)"


def check_centred_scores(model, kind) -> None:
    """``model.center_scores`` is about a regression head's bias: one line for any other task."""
    if model.center_scores and kind.name != "regression":
        raise SeqTransferError(
            f"model.center_scores starts a regression head's bias at the mean score; the {kind.name} task predicts labels, not a score",
            hint="drop model.center_scores, or train on a regression dataset (STS-B, SICK relatedness)",
        )


REGRESSION = SentenceRegression()
