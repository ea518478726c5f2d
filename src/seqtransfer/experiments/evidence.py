"""What a significance test needs of a run's test predictions, small enough for a kept record.

A report tests two methods on their test predictions (:mod:`~seqtransfer.experiments.significance`).
The predictions stay with the run directories, which a fresh machine does not have; a kept record
(:mod:`~seqtransfer.experiments.kept`) carries instead its per-sentence counts (correct and total
tokens, or gold, predicted and correct chunks), or for a correlation its per-sentence scores, and a
digest of the gold labels, so that the same test gives the same p-value from the records alone:

    "evidence": {"gold": "3f1c...", "metric": "accuracy", "shape": [1201, 2], "dtype": "uint16", "data": "eJz..."}

The arrays are zlib-compressed and base64-encoded: a few kilobytes per test set.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from pathlib import Path

import numpy as np

from seqtransfer.analysis.predictions import read_predictions, read_scores
from seqtransfer.data.metrics import is_correlation
from seqtransfer.data.schemes import convert
from seqtransfer.experiments.significance import sentence_counts


def encode_array(values: np.ndarray, counts: bool) -> dict:
    """{"shape", "dtype", "data"} of an array: counts as the smallest unsigned type that holds
    them, scores as float64 (exactly as read)."""
    if counts:
        values = values.astype(np.uint16 if values.size == 0 or values.max() < 2**16 else np.uint32)
    else:
        values = values.astype(np.float64)
    return {"shape": list(values.shape), "dtype": str(values.dtype), "data": base64.b64encode(zlib.compress(values.tobytes(), 9)).decode("ascii")}


def decode_array(encoded: dict) -> np.ndarray:
    raw = zlib.decompress(base64.b64decode(encoded["data"]))
    return np.frombuffer(raw, dtype=encoded["dtype"]).reshape(encoded["shape"]).astype(np.float64)


def gold_digest(gold) -> str:
    """A digest of the gold labels (or scores): two runs are compared only on the same test set."""
    return hashlib.sha256(json.dumps([list(map(str, labels)) for labels in gold]).encode("utf-8")).hexdigest()[:16]


def evidence_of(folder: Path, metric: str) -> dict | None:
    """The evidence of the test predictions in ``folder`` (``test.conll``, or ``test.tsv`` for a
    correlation, Pearson's or Spearman's), None where the run has none."""
    if is_correlation(metric):
        path = folder / "test.tsv"
        if not path.is_file():
            return None
        gold, predicted = read_scores(path)
        return {"gold": gold_digest([[f"{value:g}"] for value in gold]), "metric": metric, **encode_array(np.array([gold, predicted]).T, counts=False)}
    path = folder / "test.conll"
    if not path.is_file():
        return None
    predictions = read_predictions(path)
    gold = as_iob2(predictions.gold) if metric == "span_f1" else predictions.gold
    return {"gold": gold_digest(gold), "metric": metric, **encode_array(sentence_counts(predictions.gold, predictions.predicted, metric), counts=True)}


def as_iob2(gold: list[list[str]]) -> list[list[str]]:
    """BIOES gold labels (a run trained with ``data.convert_scheme=bioes``) written as IOB2 (in their
    own case: TChunk's ``s-np`` as ``b-np``), so that its digest is that of the same spans in an IOB2
    dataset's labels; other labels as they are. A dataset stored in IOB1 (CoNLL-2003) has other
    labels than this IOB2: its BIOES runs are then "gold differs" to its IOB1 runs, never mis-paired."""
    if not any(label[:2].upper() in ("E-", "S-") for labels in gold for label in labels):
        return gold
    return [convert(labels, "bioes", "iob2") for labels in gold]
