"""Hidden negative transfer between a reference run A and a transferred run B (PretRand paper §4.1).

On the N tokens of one split (equations 3-5, token level, in percent):

    PT = 100 * N_corrected / N    tokens wrong in A and right in B (positive transfer)
    NT = 100 * N_falsified / N    tokens right in A and wrong in B (negative transfer)
    G  = PT - NT                  which equals accuracy(B) - accuracy(A)

Per gold class the same counts are normalised by the class's own token count, so a class's G is
its accuracy improvement (Figure 12). The falsified tokens are listed with their context and a
mistake type (see ``mistakes.py``). Works between any two runs scored on the same data
(scratch vs SFT, scratch vs PretRand, SFT vs PretRand as in §7.2.6). For parsing runs a token
is right when its head and universal relation are (labelled attachment; see tasks/dependency.py),
and its class is its gold relation.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from seqtransfer.analysis.mistakes import MISTAKE_TYPES, WordLookup, load_word_lookup, mistake_type
from seqtransfer.analysis.predictions import Predictions, check_same_data, predictions_path, read_predictions
from seqtransfer.files import read_json

CONTEXT_WINDOW = 8  # tokens of context kept on each side of a falsified token
HEAD_SUFFIX = re.compile(r"@\d+$")  # "nsubj@3" -> "nsubj"; ARK's POS tag "@" has no digits


@dataclass
class TransferCounts:
    """Token counts of one gold class (or of all tokens, label ``all``)."""

    label: str
    tokens: int
    corrected: int  # wrong in the reference, right in the transferred run
    falsified: int  # right in the reference, wrong in the transferred run
    correct_reference: int
    correct_transferred: int

    def percent(self, count: int) -> float:
        return 100.0 * count / self.tokens if self.tokens else 0.0

    @property
    def positive_transfer(self) -> float:
        return self.percent(self.corrected)

    @property
    def negative_transfer(self) -> float:
        return self.percent(self.falsified)

    @property
    def gain(self) -> float:
        return self.positive_transfer - self.negative_transfer

    def as_dict(self) -> dict:
        scores = {"pt": self.positive_transfer, "nt": self.negative_transfer, "gain": self.gain}
        scores.update(accuracy_reference=self.percent(self.correct_reference), accuracy_transferred=self.percent(self.correct_transferred))
        return {**asdict(self), **{name: round(value, 4) for name, value in scores.items()}}


@dataclass
class FalsifiedToken:
    """A token right in the reference run and wrong in the transferred one, in its sentence."""

    sentence: int  # 0-based sentence index in the split
    position: int  # 0-based token position in the sentence
    token: str
    gold: str
    reference_label: str
    transferred_label: str
    mistake: str  # a key of MISTAKE_TYPES
    left: str  # up to CONTEXT_WINDOW tokens before, space-separated
    right: str  # up to CONTEXT_WINDOW tokens after


@dataclass
class TransferComparison:
    """PT / NT / G of run B against run A on one split, overall and per gold class."""

    reference: str
    transferred: str
    split: str
    dataset: str
    reference_method: str
    transferred_method: str
    overall: TransferCounts
    per_class: list[TransferCounts]
    falsified: list[FalsifiedToken] = field(default_factory=list)
    vocabulary: str | None = None  # the source vocabulary used for the out-of-vocabulary rule

    @property
    def title(self) -> str:
        return f"{self.dataset}: {self.transferred_method} vs {self.reference_method}"

    def falsified_by_type(self) -> dict[str, list[FalsifiedToken]]:
        """Falsified tokens grouped by mistake type, in MISTAKE_TYPES order."""
        groups: dict[str, list[FalsifiedToken]] = {name: [] for name in MISTAKE_TYPES}
        for token in self.falsified:
            groups[token.mistake].append(token)
        return groups

    def as_dict(self) -> dict:
        names = ("reference", "transferred", "split", "dataset", "reference_method", "transferred_method", "vocabulary")
        summary = {name: getattr(self, name) for name in names}
        summary["mistake_counts"] = {name: len(tokens) for name, tokens in self.falsified_by_type().items()}
        return {**summary, "overall": self.overall.as_dict(), "per_class": [counts.as_dict() for counts in self.per_class], "falsified": [asdict(token) for token in self.falsified]}


def flatten(sentences: list[list[str]]) -> np.ndarray:
    """(N,) array of the labels of every token, sentence after sentence."""
    return np.array([label for sentence in sentences for label in sentence], dtype=object)


def gold_class(label: str) -> str:
    """The class a gold label is counted under: the label, or for a parsing run's ``relation@head``
    label (head and relation right <=> the token counts for LAS) its relation."""
    return HEAD_SUFFIX.sub("", label)


def count_transfer(gold: np.ndarray, reference: np.ndarray, transferred: np.ndarray) -> tuple[TransferCounts, list[TransferCounts]]:
    """Overall and per-gold-class counts from (N,) label arrays."""
    right_reference, right_transferred = reference == gold, transferred == gold
    columns = np.stack([np.ones_like(right_reference), right_transferred & ~right_reference, right_reference & ~right_transferred, right_reference, right_transferred]).astype(np.int64)  # (5, N)
    labels, class_index = np.unique(np.array([gold_class(str(label)) for label in gold], dtype=str), return_inverse=True)
    per_class_sums = np.stack([np.bincount(class_index, weights=row, minlength=len(labels)) for row in columns], axis=1).astype(int)  # (C, 5)
    per_class = [TransferCounts(str(label), *map(int, sums)) for label, sums in zip(labels, per_class_sums)]
    return TransferCounts("all", *map(int, columns.sum(axis=1))), per_class


def falsified_tokens(reference: Predictions, transferred: Predictions, lookup: WordLookup | None) -> list[FalsifiedToken]:
    """Every token right in ``reference`` and wrong in ``transferred``, in reading order."""
    found = []
    for index, (tokens, gold, labels_a, labels_b) in enumerate(zip(reference.tokens, reference.gold, reference.predicted, transferred.predicted)):
        for position, token in enumerate(tokens):
            if labels_a[position] == gold[position] != labels_b[position]:
                left = " ".join(tokens[max(0, position - CONTEXT_WINDOW) : position])
                right = " ".join(tokens[position + 1 : position + 1 + CONTEXT_WINDOW])
                kind = mistake_type(token, lookup)
                found.append(FalsifiedToken(index, position, token, gold[position], labels_a[position], labels_b[position], kind, left, right))
    return found


def compare_predictions(reference: Predictions, transferred: Predictions, lookup: WordLookup | None = None) -> tuple[TransferCounts, list[TransferCounts], list[FalsifiedToken]]:
    """Counts (overall, per class) and falsified tokens of two prediction files of the same data."""
    check_same_data(reference, transferred)
    overall, per_class = count_transfer(flatten(reference.gold), flatten(reference.predicted), flatten(transferred.predicted))
    return overall, per_class, falsified_tokens(reference, transferred, lookup)


def run_description(run_directory: Path) -> tuple[str, str]:
    """(dataset, method) of a run from its metrics.json, the folder name standing in for a custom dataset."""
    metrics_path = run_directory / "metrics.json"
    metrics = read_json(metrics_path) if metrics_path.is_file() else {}
    dataset = metrics.get("dataset") or "custom"
    return (run_directory.name if dataset == "custom" else dataset), str(metrics.get("scheme", run_directory.name))


def compare_runs(reference_run: str | Path, transferred_run: str | Path, split: str = "dev") -> TransferComparison:
    """PT / NT / G of ``transferred_run`` against ``reference_run`` on their predictions of ``split``."""
    reference_run, transferred_run = Path(reference_run), Path(transferred_run)
    reference = read_predictions(predictions_path(reference_run, split))
    transferred = read_predictions(predictions_path(transferred_run, split))
    lookup = load_word_lookup(transferred_run) if (transferred_run / "vocabulary.json").is_file() else None
    overall, per_class, falsified = compare_predictions(reference, transferred, lookup)
    dataset, transferred_method = run_description(transferred_run)
    _, reference_method = run_description(reference_run)
    return TransferComparison(str(reference_run), str(transferred_run), split, dataset, reference_method, transferred_method, overall, per_class, falsified, lookup.path if lookup else None)
