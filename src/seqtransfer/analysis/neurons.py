"""What happened to the feature extractor's units during fine-tuning (PretRand paper §4.2).

Charge (§4.2.1, equation 6). From the (N, H) activations on the N dev tokens before (epoch 0, the
transferred weights) and after fine-tuning, the asymmetric correlation matrix is

    C[j, t] = Pearson(h_after[:, j], h_before[:, t]) = (Z_after^T Z_before)[j, t] / N

with Z the column-standardised activations (population standard deviation): one (H, N) x (N, H)
product. A unit's charge is C[j, j]. A unit constant over the dev set has no defined correlation;
its entries are 0 here rather than NaN.

Top-k words (§4.2.2, Figures 8-9). Units fire per token, but the paper lists words, so the
activations are aggregated per word type (the raw token string, case kept): a word's score for
a unit is its **maximum** activation over its occurrences for the positive list and its
**minimum** for the negative list, i.e. the tokens that fire the unit most, each word listed
once. This is done for every recorded epoch and, to show what the unit encoded before transfer,
for the source model on the source dataset's dev split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import yaml

from seqtransfer.analysis.activations import Recording, list_recordings
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import encode_sentences
from seqtransfer.errors import SeqTransferError
from seqtransfer.rundir import load_run
from seqtransfer.training.activations import feature_matrix
from seqtransfer.training.checkpoint import save_tensors

SOURCE_COLUMN = "source dev"


def standardise(matrix: np.ndarray) -> np.ndarray:
    """(N, H) -> (N, H) float64 columns of mean 0 and standard deviation 1 (constant columns -> 0)."""
    matrix = np.asarray(matrix, dtype=np.float64)
    centred = matrix - matrix.mean(axis=0)
    deviation = centred.std(axis=0)
    return np.divide(centred, deviation, out=np.zeros_like(centred), where=deviation > 0)


def correlation_matrix(after: np.ndarray, before: np.ndarray) -> np.ndarray:
    """(N, H) after, (N, H') before -> (H, H') Pearson correlations, C[j, t] = corr(after_j, before_t)."""
    if after.shape[0] != before.shape[0]:
        raise ValueError(f"activations of {after.shape[0]} and {before.shape[0]} tokens")
    return standardise(after).T @ standardise(before) / max(after.shape[0], 1)


def charges(correlation: np.ndarray) -> np.ndarray:
    """(H, H) -> (H,) the charge of each unit: its correlation with itself before fine-tuning; NaN for
    a unit constant before or after (its column or row of correlations is all 0: none is defined)."""
    values = np.diagonal(correlation).astype(np.float64)
    constant = ~np.any(correlation, axis=1) | ~np.any(correlation, axis=0)
    values[constant] = np.nan
    return values


@dataclass
class TopWords:
    """Top-k words of every unit: (H, k) word lists and (H, k) activations, best first."""

    positive: list[list[str]]
    positive_values: np.ndarray
    negative: list[list[str]]
    negative_values: np.ndarray


def word_extremes(activations: np.ndarray, words: list[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Distinct words (V,) and their per-unit maximum and minimum activations, each (V, H)."""
    vocabulary, word_ids = np.unique(np.asarray(words, dtype=object).astype(str), return_inverse=True)
    order = np.argsort(word_ids, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(word_ids[order]) != 0])  # first row of each word in sorted order
    sorted_activations = np.asarray(activations, dtype=np.float32)[order]
    return list(vocabulary), np.maximum.reduceat(sorted_activations, starts, axis=0), np.minimum.reduceat(sorted_activations, starts, axis=0)


def top_k_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """(V, H) -> (H, k) row indices of the k largest scores of each column, largest first."""
    k = min(k, scores.shape[0])
    candidates = np.argpartition(-scores, k - 1, axis=0)[:k]  # (k, H), unordered
    ranks = np.argsort(-np.take_along_axis(scores, candidates, axis=0), axis=0, kind="stable")
    return np.take_along_axis(candidates, ranks, axis=0).T


def top_words(activations: np.ndarray, words: list[str], k: int = 10) -> TopWords:
    """The k words firing each unit most positively and most negatively (module docstring)."""
    vocabulary, maxima, minima = word_extremes(activations, words)
    positive_rows, negative_rows = top_k_rows(maxima, k), top_k_rows(-minima, k)  # (H, k)
    units = np.arange(maxima.shape[1])[:, None]
    return TopWords(
        [[vocabulary[row] for row in rows] for rows in positive_rows], maxima[positive_rows, units], [[vocabulary[row] for row in rows] for rows in negative_rows], minima[negative_rows, units]
    )


@dataclass
class NeuronAnalysis:
    """Charge and top-k words of the feature extractor's units of one run."""

    run: str
    before: Recording
    after: Recording
    correlation: np.ndarray  # (H, H)
    token_count: int
    top_words: dict[str, TopWords] = field(default_factory=dict)  # column name -> top words; source column first when present

    @property
    def charges(self) -> np.ndarray:
        return charges(self.correlation)

    def summary(self) -> dict:
        """Charge statistics over the units that vary before and after (``constant_units`` counts the others)."""
        every, hidden = self.charges, self.correlation.shape[0]
        values = every[~np.isnan(every)]
        values = values if len(values) else np.full(1, np.nan)  # every unit constant: no charge to summarise
        off_diagonal = np.abs(self.correlation[~np.eye(hidden, dtype=bool)]) if hidden > 1 else np.zeros(1)
        return {
            "units": hidden,
            "constant_units": int(np.isnan(every).sum()),
            "tokens": self.token_count,
            "before": self.before.name,
            "after": self.after.name,
            "mean_charge": float(values.mean()),
            "median_charge": float(np.median(values)),
            "min_charge": float(values.min()),
            "max_charge": float(values.max()),
            "share_charge_above_0.8": float((values > 0.8).mean()),
            "mean_abs_off_diagonal": float(off_diagonal.mean()),
        }

    def selected_units(self, count: int = 4) -> list[int]:
        """Default units to show: the least charged half and the most charged half of ``count`` (units
        constant before or after, with no charge, are not among them)."""
        varying = np.flatnonzero(~np.isnan(self.charges))
        order = varying[np.argsort(self.charges[varying], kind="stable")]
        lowest, highest = order[: count // 2], order[::-1][: count - count // 2]
        return sorted({int(unit) for unit in [*lowest, *highest]})


def column_name(recording: Recording) -> str:
    return "final" if recording.name == "final" else f"epoch {recording.epoch}"


def choose_before_after(recordings: list[Recording], path: Path) -> tuple[Recording, Recording]:
    """Epoch 0 and the best weights (``final``), or the last recorded epoch without them."""
    before = [recording for recording in recordings if recording.name == "epoch-000"]
    if not before or len(recordings) < 2:
        raise SeqTransferError("need the activations before fine-tuning (epoch 0) and at least one later recording", path=path, hint="train with train.record_activations=[0,5,10,15,20]")
    return before[0], recordings[-1]


def analyse_neurons(run_directory: str | Path, top_k: int = 10, with_source: bool = False, device: str = "cpu") -> NeuronAnalysis:
    """Charge of every unit and top-k words per recording; ``with_source`` adds the source-dev column first."""
    sentences, recordings = list_recordings(run_directory)
    words = [token for sentence in sentences for token in sentence]
    before, after = choose_before_after(recordings, Path(run_directory))
    correlation = correlation_matrix(after.matrix(), before.matrix())
    columns: dict[str, TopWords] = {}
    if with_source:
        columns[SOURCE_COLUMN] = top_words(*source_dev_activations(run_directory, device), top_k)
    for recording in recordings:
        columns[column_name(recording)] = top_words(recording.matrix(), words, top_k)
    return NeuronAnalysis(str(run_directory), before, after, correlation, len(words), columns)


def source_dev_activations(run_directory: str | Path, device: str = "cpu") -> tuple[np.ndarray, list[str]]:
    """(N, H) activations of the run's source model on its own dev split, and the N tokens (§4.2.2)."""
    config = yaml.safe_load((Path(run_directory) / "config.yaml").read_text(encoding="utf-8")) or {}
    source_path = (config.get("transfer") or {}).get("source")
    if not source_path:
        raise SeqTransferError("this run was not transferred from a source run", path=run_directory, hint="pass --no-source")
    if not Path(source_path).is_dir():
        raise SeqTransferError(f"the source run {source_path} is not reachable", path=run_directory, hint="run from the folder the transfer ran in, or pass --no-source")
    source = load_run(source_path, device)
    data = load_task_data(source.config.data, splits=("dev",))
    tokens = data.tokens("dev")
    matrix = feature_matrix(source.model, encode_sentences(tokens, source.vocabularies), source.config.train.evaluation_batch_size)
    return matrix, [token for sentence in tokens for token in sentence]


def save_correlation(analysis: NeuronAnalysis, path: Path) -> None:
    """The (H, H) correlation matrix and the (H,) charges as float32 tensors in one safetensors file."""
    tensors = {"correlation": torch.from_numpy(analysis.correlation.astype(np.float32)), "charges": torch.from_numpy(analysis.charges.astype(np.float32))}
    save_tensors(path, tensors)
