"""Precision, recall and F1 of one class, from counts (conlleval's arithmetic); shared by the
span, token and attachment scores."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ClassScores:
    """Precision, recall and F1 (percent) with the counts they come from."""

    precision: float
    recall: float
    f1: float
    gold_count: int
    predicted_count: int
    correct_count: int

    @classmethod
    def from_counts(cls, gold_count: int, predicted_count: int, correct_count: int) -> ClassScores:
        """Scores from counts, 0 wherever a denominator is 0 (as conlleval)."""
        precision = 100.0 * correct_count / predicted_count if predicted_count else 0.0
        recall = 100.0 * correct_count / gold_count if gold_count else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return cls(precision, recall, f1, gold_count, predicted_count, correct_count)

    def as_dict(self) -> dict:
        """Plain dict for JSON."""
        return asdict(self)
