"""Several models predicting together (one place for it): ``single`` (the first), ``vote`` (per
token, the label most give), ``confident`` (per sentence, the surer model's labels) or ``average``
(an ensemble's: the arg-max of their averaged label distributions). Serves the predictor of a
folder of models (``predictor.VotingPredictor``), ``evaluate`` on such a folder, self-labelling's
labelling rounds and ensembles; ``rundir``/``run_members`` name the members."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from seqtransfer.data.batching import encode_sentences, evaluation_batches
from seqtransfer.rundir import load_run
from seqtransfer.training.inference import label_probabilities, model_device, predict_labels
from seqtransfer.training.precision import resolve_precision
from seqtransfer.workflows.ensemble import ensemble_predict


def model_predictions(
    directory, tokens: Sequence[Sequence[str]], batch_size: int = 256, confidences: bool = True, amp: str = "off", cache_features: bool = True
) -> tuple[list[list[str]], np.ndarray | None]:
    """A run's (a directory or a loaded run, on any device) labels for every sentence and, with
    ``confidences``, each sentence's confidence (its lowest probability of a predicted label);
    ``amp``: a fine-tuned encoder's precision (``predict_labels``); ``cache_features=False``: a
    user's sentences, whose frozen encoder features stay in memory (``encode_sentences``)."""
    run = load_run(directory) if isinstance(directory, (str, Path)) else directory
    encoded = encode_sentences(tokens, run.vocabularies, cache_features=cache_features)  # once, for the decoding and for the probabilities
    labels = predict_labels(run.model, encoded, run.vocabularies.labels, batch_size, amp)
    if not confidences:
        return labels, None
    index = run.vocabularies.labels.index
    confidence = np.ones(len(tokens))
    device = model_device(run.model)
    run.model.eval()
    with torch.inference_mode(), resolve_precision(amp, run.model, device, "amp").autocast():
        for batch in evaluation_batches(encoded, batch_size):
            probabilities = label_probabilities(run.model, batch.to(device)).cpu()  # (B, T, L)
            for row, sentence in enumerate(batch.indices):
                chosen = torch.tensor([index[label] for label in labels[sentence]])
                confidence[sentence] = float(probabilities[row, torch.arange(len(chosen)), chosen].min())
    return labels, confidence


def vote(predictions: Sequence[list[list[str]]]) -> list[list[str]]:
    """Per token, the label most models give (a tie: the first model's label)."""
    voted = []
    for sentences in zip(*predictions):
        voted.append([max(Counter(column).items(), key=lambda item: (item[1], -column.index(item[0])))[0] for column in zip(*sentences)])
    return voted


def combine(combination: str, runs: Sequence, tokens: Sequence[Sequence[str]], batch_size: int = 256, amp: str = "off", cache_features: bool = True) -> list[list[str]]:
    """The labels several runs (directories or loaded runs) give together: ``single`` (the first),
    ``vote`` (per token, see :func:`vote`), ``confident`` (per sentence, the surer run's labels) or
    ``average`` (an ensemble's: the arg-max of their averaged label distributions);
    ``cache_features``: see :func:`model_predictions`."""
    if combination == "average":
        loaded = [load_run(run) if isinstance(run, (str, Path)) else run for run in runs]
        return ensemble_predict(loaded, [list(sentence) for sentence in tokens], batch_size, amp, cache_features)
    predictions = [model_predictions(run, tokens, batch_size, combination == "confident", amp, cache_features) for run in runs]
    if combination == "confident":
        return [predictions[int(np.argmax([confidence[index] for _, confidence in predictions]))][0][index] for index in range(len(tokens))]
    return vote([labels for labels, _ in predictions]) if combination == "vote" else predictions[0][0]
