"""Scores for sequence labelling: token accuracy, conlleval span F1, per-label scores.

All scores are percentages (0-100). Span scores follow conlleval: a predicted chunk is correct
iff a gold chunk has the same type, start and end (chunks from :func:`schemes.chunks`); with
no gold and no predicted chunk every score is 0, as conlleval prints 0.00.

Inputs are lists of sentences, each a list of tag strings; gold and predicted must have the
same number of sentences and tokens (a mismatch is a programming error: ValueError).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from seqtransfer.data.attachment import attachment_scores
from seqtransfer.data.class_scores import ClassScores
from seqtransfer.data.schemes import chunks
from seqtransfer.errors import SeqTransferError

Sentences = Sequence[Sequence[str]]


@dataclass(frozen=True)
class SpanScores:
    """Overall conlleval scores (percent) and counts, plus one :class:`ClassScores` per chunk type."""

    precision: float
    recall: float
    f1: float
    gold_count: int
    predicted_count: int
    correct_count: int
    per_class: dict[str, ClassScores]

    def as_dict(self) -> dict:
        """Plain dict for JSON, per-class scores nested under ``per_class``."""
        overall = {name: value for name, value in asdict(self).items() if name != "per_class"}
        return {**overall, "per_class": {name: scores.as_dict() for name, scores in self.per_class.items()}}


def _check_lengths(gold: Sentences, predicted: Sentences) -> None:
    """Raise ValueError unless gold and predicted have the same sentence and token counts."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    for index, (gold_tags, predicted_tags) in enumerate(zip(gold, predicted)):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(f"sentence {index}: {len(gold_tags)} gold tags but {len(predicted_tags)} predicted")


def token_accuracy(gold: Sentences, predicted: Sentences) -> float:
    """Percentage of tokens whose predicted label equals the gold label (0 if there are none)."""
    _check_lengths(gold, predicted)
    total = sum(len(tags) for tags in gold)
    correct = sum(g == p for gold_tags, predicted_tags in zip(gold, predicted) for g, p in zip(gold_tags, predicted_tags))
    return 100.0 * correct / total if total else 0.0


def _sentence_chunks(sentences: Sentences) -> set[tuple[int, str, int, int]]:
    """All chunks as ``(sentence index, type, start, end)``."""
    return {(index, chunk_type, start, end) for index, tags in enumerate(sentences) for chunk_type, start, end in chunks(tags)}


def span_scores(gold: Sentences, predicted: Sentences) -> SpanScores:
    """conlleval precision, recall and F1 over exactly matching chunks, overall and per type."""
    _check_lengths(gold, predicted)
    gold_chunks, predicted_chunks = _sentence_chunks(gold), _sentence_chunks(predicted)
    correct_chunks = gold_chunks & predicted_chunks
    gold_by_type = Counter(chunk[1] for chunk in gold_chunks)
    predicted_by_type = Counter(chunk[1] for chunk in predicted_chunks)
    correct_by_type = Counter(chunk[1] for chunk in correct_chunks)
    per_class = {
        chunk_type: ClassScores.from_counts(gold_by_type[chunk_type], predicted_by_type[chunk_type], correct_by_type[chunk_type])
        for chunk_type in sorted(gold_by_type.keys() | predicted_by_type.keys())
    }
    overall = ClassScores.from_counts(len(gold_chunks), len(predicted_chunks), len(correct_chunks))
    return SpanScores(**asdict(overall), per_class=per_class)


def surface_scores(tokens: Sequence[Sequence[str]], gold: Sentences, predicted: Sentences) -> dict:
    """The WNUT-17 shared task's surface-form scores (Derczynski et al. 2017, its wnuteval.py):
    over the distinct (words, type) pairs of the gold entities, of the predicted ones, and of the
    predicted ones that match a gold entity exactly (span and type): ``surface_precision``,
    ``surface_recall`` and ``surface_f1`` (percent). An entity named five times counts once, so a
    system is rewarded for the rare and emerging names, not for a frequent one found again.
    (The task's entity F1 is conlleval's F1 over IOB2 tags: the same chunks, the same counts.)"""
    _check_lengths(gold, predicted)
    gold_chunks, predicted_chunks = _sentence_chunks(gold), _sentence_chunks(predicted)

    def surfaces(chunk_set: set[tuple[int, str, int, int]]) -> set[tuple[tuple[str, ...], str]]:
        return {(tuple(tokens[sentence][start:end]), chunk_type) for sentence, chunk_type, start, end in chunk_set}

    scores = ClassScores.from_counts(len(surfaces(gold_chunks)), len(surfaces(predicted_chunks)), len(surfaces(gold_chunks & predicted_chunks)))
    return {"surface_precision": scores.precision, "surface_recall": scores.recall, "surface_f1": scores.f1}


def label_scores(gold: Sentences, predicted: Sentences) -> dict[str, ClassScores]:
    """Token-level precision, recall and F1 per label (per-class scores for POS tagging)."""
    _check_lengths(gold, predicted)
    gold_counts: Counter[str] = Counter()
    predicted_counts: Counter[str] = Counter()
    correct_counts: Counter[str] = Counter()
    for gold_tags, predicted_tags in zip(gold, predicted):
        gold_counts.update(gold_tags)
        predicted_counts.update(predicted_tags)
        correct_counts.update(g for g, p in zip(gold_tags, predicted_tags) if g == p)
    return {label: ClassScores.from_counts(gold_counts[label], predicted_counts[label], correct_counts[label]) for label in sorted(gold_counts.keys() | predicted_counts.keys())}


def accuracy_scores(gold: Sentences, predicted: Sentences) -> dict:
    """``accuracy`` and per-label token scores under ``per_class``."""
    per_class = {name: scores.as_dict() for name, scores in label_scores(gold, predicted).items()}
    return {"accuracy": token_accuracy(gold, predicted), "per_class": per_class}


def span_f1_scores(gold: Sentences, predicted: Sentences) -> dict:
    """``accuracy`` plus conlleval ``f1``, ``precision``, ``recall`` and counts; chunk-type scores under ``per_class``."""
    spans = span_scores(gold, predicted)
    result: dict = {"accuracy": token_accuracy(gold, predicted), "f1": spans.f1, "precision": spans.precision, "recall": spans.recall}
    result.update(gold_count=spans.gold_count, predicted_count=spans.predicted_count, correct_count=spans.correct_count)
    result["per_class"] = {name: scores.as_dict() for name, scores in spans.per_class.items()}
    return result


def attachment(gold, predicted) -> dict:
    """LAS and UAS of trees (not label strings), as CoNLL 2018 scores them."""
    return attachment_scores(gold, predicted)


@dataclass(frozen=True)
class Metric:
    """How a task is scored: the function, the score early stopping and reports read, its short title."""

    name: str
    score: Callable[[Sequence, Sequence], dict]
    main: str
    title: str


def correlation_scores(gold, predicted) -> dict:
    """Pearson (``pearson``) and Spearman (``spearman``) correlation x 100 of one score per sentence."""
    first = np.array([scores[0] for scores in gold], dtype=np.float64)
    second = np.array([scores[0] for scores in predicted], dtype=np.float64)
    return {"pearson": 100.0 * pearson(first, second), "spearman": 100.0 * pearson(average_ranks(first), average_ranks(second)), "sentences": len(first)}


def pearson(first: np.ndarray, second: np.ndarray) -> float:
    """Pearson's r; 0 when either side is constant."""
    first, second = first - first.mean(), second - second.mean()
    denominator = np.sqrt((first**2).sum() * (second**2).sum())
    return float((first * second).sum() / denominator) if denominator > 0 else 0.0


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing their average rank (as Spearman's rho needs)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return sums[inverse] / counts[inverse]


POSITIVE_LABEL = "1"  # MRPC's paraphrase, QQP's duplicate: the class whose F1 binary tasks report


def positive_f1_scores(gold: Sentences, predicted: Sentences) -> dict:
    """``f1`` of the positive class "1" of a binary task (MRPC's F1), beside ``accuracy`` and per-label scores."""
    scores = accuracy_scores(gold, predicted)
    labels = {label for tags in gold for label in tags}
    if POSITIVE_LABEL not in labels:
        raise SeqTransferError(
            f"positive-class F1 needs a class {POSITIVE_LABEL!r}; the gold labels are {', '.join(sorted(labels)[:10])}",
            hint="score this task by accuracy, or map its positive class to 1 (data.label_map)",
        )
    return {**scores, "f1": scores["per_class"][POSITIVE_LABEL]["f1"]}


METRICS: dict[str, Metric] = {
    "accuracy": Metric("accuracy", accuracy_scores, "accuracy", "acc."),
    "span_f1": Metric("span_f1", span_f1_scores, "f1", "F1"),
    "attachment": Metric("attachment", attachment, "las", "LAS"),
    "correlation": Metric("correlation", correlation_scores, "pearson", "Pearson"),
    "spearman": Metric("spearman", correlation_scores, "spearman", "Spearman"),  # the same scores, Spearman's as the one number (STS-B's second column)
    "positive_f1": Metric("positive_f1", positive_f1_scores, "f1", "F1 of 1"),
}


def is_correlation(name: str) -> bool:
    """Whether ``name`` scores one number per sentence by a correlation (Pearson's or Spearman's):
    its predictions are a regression's ``gold TAB predicted TAB text`` lines, not labels."""
    return name in METRICS and METRICS[name].score is correlation_scores


def get_metric(name: str) -> Metric:
    if name not in METRICS:
        raise SeqTransferError(f"unknown metric {name!r}", hint=f"use one of: {', '.join(METRICS)}")
    return METRICS[name]


def main_score(metric: str, scores: dict) -> float:
    """The one number of a score dict that early stopping and reports use (F1, accuracy, LAS)."""
    return scores[get_metric(metric).main]


def evaluate(gold: Sequence, predicted: Sequence, metric: str) -> dict:
    """Flat score dict of ``metric``: ``accuracy`` (+ ``f1``, ``precision``, ``recall`` for ``span_f1``;
    ``uas``, ``las`` for ``attachment``) and ``per_class`` scores."""
    return get_metric(metric).score(gold, predicted)
