"""Significance of score differences: paired approximate randomisation and bootstrap intervals.

Both work at the sentence level. Entity F1 is not a sum over sentences, so every trial
recomputes the real score from summed counts: each sentence is reduced once to a few counts
(correct and total tokens for accuracy; gold, predicted and correct chunks for span F1), and a
trial is then a weighted sum of those rows, which numpy does for thousands of trials at once.
Written by hand because no maintained library runs a paired randomisation test on a
non-decomposable metric (scipy.stats.permutation_test would call Python once per trial).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats

from seqtransfer.data.metrics import METRICS, POSITIVE_LABEL, average_ranks
from seqtransfer.data.schemes import chunks

Sentences = Sequence[Sequence[str]]
# Scores that are a share of correct tokens. Parsing runs are read from their ``relation@head``
# prediction view (see tasks/dependency.py), where a token is right exactly when it counts for LAS.
TOKEN_METRICS = ("accuracy", "attachment")

# Trials per numpy batch: bounds memory to about (batch x sentences) floats.
_BATCH = 1000
# Shuffled differences this close to the observed one count as "at least as large" (float noise).
_TOLERANCE = 1e-9


def _sentence_chunk_counts(gold_tags: Sequence[str], predicted_tags: Sequence[str]) -> list[int]:
    """[gold chunks, predicted chunks, exactly matching chunks] of one sentence."""
    gold_chunks, predicted_chunks = set(chunks(gold_tags)), set(chunks(predicted_tags))
    return [len(gold_chunks), len(predicted_chunks), len(gold_chunks & predicted_chunks)]


def _positive_counts(gold_tags: Sequence[str], predicted_tags: Sequence[str]) -> list[int]:
    """[gold, predicted, correct] labels of the positive class in one sentence (one label for a sentence task)."""
    return [sum(g == POSITIVE_LABEL for g in gold_tags), sum(p == POSITIVE_LABEL for p in predicted_tags), sum(g == p == POSITIVE_LABEL for g, p in zip(gold_tags, predicted_tags))]


def sentence_counts(gold: Sentences, predicted: Sentences, metric: str) -> np.ndarray:
    """Per-sentence counts, shape (sentences, 2) for accuracy, (sentences, 3) for span F1.

    Accuracy columns: correct tokens, tokens. Span F1 columns: gold, predicted, correct chunks
    (positive-class F1: gold, predicted, correct labels "1").
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}")
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    if metric in TOKEN_METRICS:
        rows = [[sum(g == p for g, p in zip(gold_tags, predicted_tags)), len(gold_tags)] for gold_tags, predicted_tags in zip(gold, predicted)]
    elif metric == "positive_f1":  # the positive class's labels play the chunks: F1 = 2 correct / (gold + predicted) again
        rows = [_positive_counts(gold_tags, predicted_tags) for gold_tags, predicted_tags in zip(gold, predicted)]
    else:
        rows = [_sentence_chunk_counts(gold_tags, predicted_tags) for gold_tags, predicted_tags in zip(gold, predicted)]
    return np.asarray(rows, dtype=np.float64).reshape(len(gold), 2 if metric in TOKEN_METRICS else 3)


def score_from_counts(totals: np.ndarray, metric: str) -> np.ndarray:
    """Scores (percent) from summed counts of shape (..., columns); 0 where a denominator is 0.

    F1 = 2PR / (P + R) = 2 correct / (gold + predicted), as :func:`metrics.evaluate` (conlleval).
    """
    if metric in TOKEN_METRICS:
        numerator, denominator = totals[..., 0], totals[..., 1]
    else:
        numerator, denominator = 2 * totals[..., 2], totals[..., 0] + totals[..., 1]
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, 100.0 * numerator / safe, 0.0)


def _shuffled_differences(counts_a: np.ndarray, counts_b: np.ndarray, metric: str, trials: int, generator: np.random.Generator) -> np.ndarray:
    """Score differences A − B for ``trials`` random sentence-level swaps of the two systems."""
    exchange = counts_b - counts_a  # what A gains on a sentence when its prediction is swapped
    total_a, total_b = counts_a.sum(axis=0), counts_b.sum(axis=0)
    differences = []
    for start in range(0, trials, _BATCH):
        swaps = (generator.random((min(_BATCH, trials - start), len(counts_a))) < 0.5).astype(np.float64)  # (trials, sentences)
        moved = swaps @ exchange  # (trials, columns)
        differences.append(score_from_counts(total_a + moved, metric) - score_from_counts(total_b - moved, metric))
    return np.concatenate(differences) if differences else np.zeros(0)


def paired_randomization_test(gold: Sentences, predicted_a: Sentences, predicted_b: Sentences, metric: str, trials: int = 10000, seed: int = 0) -> float:
    """Two-sided p-value that systems A and B score the same (paired approximate randomisation).

    Each trial swaps A's and B's predictions of every sentence with probability 0.5 and
    recomputes the score difference; p = (r + 1) / (trials + 1), where r counts trials whose
    absolute difference is at least the observed one.
    """
    return paired_randomization_counts(sentence_counts(gold, predicted_a, metric), sentence_counts(gold, predicted_b, metric), metric, trials, seed)


def paired_randomization_counts(counts_a: np.ndarray, counts_b: np.ndarray, metric: str, trials: int = 10000, seed: int = 0) -> float:
    """:func:`paired_randomization_test` on the two systems' per-sentence counts (:func:`sentence_counts`):
    :func:`paired_randomization_seeds` of one seed."""
    return paired_randomization_seeds([(counts_a, counts_b)], metric, trials, seed)


def paired_randomization_seeds(pairs: Sequence[tuple[np.ndarray, np.ndarray]], metric: str, trials: int = 10000, seed: int = 0) -> float:
    """The paired test over several seeds at once: the statistic is the mean over seeds of A's
    score minus B's (each seed's runs on the same sentences), and each trial swaps A's and B's
    predictions of every sentence of every seed with probability 0.5. ``pairs``: per seed, the two
    systems' per-sentence counts (:func:`sentence_counts`). It asks whether A and B differ on these
    sentences over the seeds' runs together (a small, consistent difference becomes visible); it
    does not model how much a method's score varies from seed to seed (the seeds' spread does)."""
    generator = np.random.default_rng(seed)
    observed = abs(np.mean([float(score_from_counts(a.sum(axis=0), metric) - score_from_counts(b.sum(axis=0), metric)) for a, b in pairs]))
    differences = np.mean([_shuffled_differences(a, b, metric, trials, generator) for a, b in pairs], axis=0)
    at_least_as_large = int(np.count_nonzero(np.abs(differences) >= observed - _TOLERANCE))
    return (at_least_as_large + 1) / (trials + 1)


def paired_randomization_correlation_seeds(pairs: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], trials: int = 10000, seed: int = 0, chunk: int = 500, spearman: bool = False) -> float:
    """:func:`paired_randomization_seeds` for one score per sentence scored by a correlation:
    ``pairs`` holds, per seed, (gold, A's scores, B's scores), each (N,); trials in chunks of
    ``chunk``. Pearson's r, or with ``spearman`` Spearman's rho (each trial's swapped scores ranked again)."""
    generator = np.random.default_rng(seed)
    correlate = _spearman if spearman else _pearson
    pairs = [tuple(np.asarray(values, dtype=np.float64) for values in pair) for pair in pairs]
    observed = abs(np.mean([correlate(gold, a[None])[0] - correlate(gold, b[None])[0] for gold, a, b in pairs]))
    differences = np.zeros(trials)
    for gold, a, b in pairs:
        for start in range(0, trials, chunk):
            swap = generator.random((min(chunk, trials - start), len(gold))) < 0.5
            differences[start : start + len(swap)] += (correlate(gold, np.where(swap, b, a)) - correlate(gold, np.where(swap, a, b))) / len(pairs)
    at_least_as_large = int(np.count_nonzero(np.abs(differences) >= observed - _TOLERANCE))
    return (at_least_as_large + 1) / (trials + 1)


def paired_randomization_correlation(gold: np.ndarray, predicted_a: np.ndarray, predicted_b: np.ndarray, trials: int = 10000, seed: int = 0, chunk: int = 500) -> float:
    """The same test for one score per sentence, scored by Pearson's r (STS-B, SICK-R): each trial
    swaps A's and B's scores of every sentence with probability 0.5. (N,) arrays:
    :func:`paired_randomization_correlation_seeds` of one seed."""
    return paired_randomization_correlation_seeds([(gold, predicted_a, predicted_b)], trials, seed, chunk)


def _pearson(gold: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Pearson's r of ``gold`` (N,) with each row of ``predicted`` (R, N): (R,)."""
    gold_centred = gold - gold.mean()
    centred = predicted - predicted.mean(axis=1, keepdims=True)
    return (centred @ gold_centred) / (np.sqrt((centred**2).sum(axis=1)) * np.sqrt((gold_centred**2).sum()) + 1e-12)


def _spearman(gold: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Spearman's rho of ``gold`` (N,) with each row of ``predicted`` (R, N): (R,), Pearson's r of
    their average ranks (ties share theirs, as the score's own :func:`average_ranks` does)."""
    return _pearson(average_ranks(gold), np.stack([average_ranks(row) for row in predicted]))


def bootstrap_confidence_interval(gold: Sentences, predicted: Sentences, metric: str, samples: int = 1000, confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval (percent) of one system's score, resampling sentences."""
    counts = sentence_counts(gold, predicted, metric)
    if len(counts) == 0:
        raise ValueError("cannot bootstrap a score over zero sentences")
    generator = np.random.default_rng(seed)
    scores = []
    for start in range(0, samples, _BATCH):
        # Multinomial weights = how often each sentence is drawn: the same as resampling indices.
        weights = generator.multinomial(len(counts), np.full(len(counts), 1 / len(counts)), size=min(_BATCH, samples - start))
        scores.append(score_from_counts(weights.astype(np.float64) @ counts, metric))
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(np.concatenate(scores), [tail, 100 - tail])
    return float(low), float(high)


def welch_p_value(scores_a: Sequence[float], scores_b: Sequence[float]) -> float | None:
    """Two-sided p of Welch's t-test between two methods' scores, one per seed (scipy's
    ``ttest_ind(equal_var=False)``): it treats each seed's run as one sample, so it weighs a
    difference against how much each method moves from seed to seed, which the paired tests, over
    the sentences of shared seeds, do not. None with fewer than two seeds a side, or none that vary."""
    if len(scores_a) < 2 or len(scores_b) < 2 or (np.std(scores_a) == 0 and np.std(scores_b) == 0):
        return None
    with warnings.catch_warnings():  # one method at the same score on every seed: scipy warns of precision, its p stands
        warnings.simplefilter("ignore", RuntimeWarning)
        p_value = float(stats.ttest_ind(scores_a, scores_b, equal_var=False).pvalue)
    return p_value if np.isfinite(p_value) else None
