"""Inference: a model's decoded predictions over encoded sentences, and a score on a gold set.

Used by training (dev scores), by every command that predicts or evaluates, and by the workflows
(unification, self-labelling, ensembles); it knows nothing of optimisers or epochs.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from seqtransfer.data.batching import EncodedSentences, encode_sentences, evaluation_batches
from seqtransfer.data.metrics import evaluate, main_score, surface_scores
from seqtransfer.data.vocabulary import Vocabulary
from seqtransfer.tasks import kind_of
from seqtransfer.training.precision import resolve_precision


@dataclass
class EvaluationSet:
    """Encoded sentences with their gold annotation (label strings, trees; labels unseen in training included)."""

    encoded: EncodedSentences
    gold: list


def predict_labels(model: nn.Module, data: EncodedSentences, labels: Vocabulary | dict[str, Vocabulary], batch_size: int, amp: str = "off") -> list:
    """Decode every sentence of ``data``; predictions in the original order, as the model's task
    kind reads them (label strings for taggers, trees for parsers, {task: prediction} for a
    multi-task model, whose ``labels`` are its tasks' vocabularies).

    Each distinct word form of ``data`` goes through the character encoder once (``forms_of``).
    ``amp``: a fine-tuned encoder's precision (``training/precision.py``; off: fp32, the default,
    as in training's evaluations).
    """
    kind = kind_of(model)
    model.eval()
    predictions: list = [None] * len(data.lengths)
    device = model_device(model)
    precision = resolve_precision(amp, model, device, "amp")
    forms = model.word_representation.forms_of(data) if model.word_representation is not None else nullcontext()  # character vectors once per form
    with torch.inference_mode(), forms, precision.autocast():
        for batch in evaluation_batches(data, batch_size):
            decoded = kind.read_decoded(to_host(model.decode(batch.to(device))), data.lengths[batch.indices], labels)
            for sentence_index, prediction in zip(batch.indices, decoded):
                predictions[sentence_index] = prediction
    return predictions


def score_split(model: nn.Module, data, split: str, vocabularies, labels: Vocabulary, batch_size: int, folder: Path, name: str | None = None, amp: str = "off") -> dict:
    """Predict ``split`` of ``data`` (a ``TaskData``, encoded with the run's ``vocabularies``; the
    model's ``labels``) with ``model``, then ``score_predictions``: what training, a multi-task run
    and ``evaluate`` do for each split they score."""
    predicted = predict_labels(model, data.encode(split, vocabularies, with_targets=False), labels, batch_size, amp)
    return score_predictions(data, split, predicted, folder, name)


def score_predictions(data, split: str, predicted: list, folder: Path, name: str | None = None) -> dict:
    """Score predictions of ``split`` of ``data`` (one model's, or several models' together: an
    ensemble, a self-labelling run) against its gold annotation, and write the prediction file
    ``folder/NAME`` (default the split's name)."""
    gold = data.gold(split)
    scores = evaluate(gold, predicted, data.metric)
    if data.metric == "span_f1":  # entities: the WNUT-17 shared task's surface-form F1 beside conlleval's
        scores.update(surface_scores(data.tokens(split), gold, predicted))
    data.kind.write_predictions(folder, name or split, data.splits[split], gold, predicted)
    return scores


def model_device(model: nn.Module) -> torch.device:
    """Where the model's weights are (the loop moves each batch there, once)."""
    return next(model.parameters()).device


def to_host(decoded: torch.Tensor | dict):
    """A model's decoding on the CPU (nested dicts of a multi-task model too)."""
    if isinstance(decoded, dict):
        return {name: to_host(value) for name, value in decoded.items()}
    return decoded.cpu()


def score(model: nn.Module, evaluation: EvaluationSet, labels: Vocabulary, metric: str, batch_size: int) -> tuple[float, dict]:
    """(the score early stopping watches, all scores) on one evaluation set."""
    predicted = predict_labels(model, evaluation.encoded, labels, batch_size)
    scores = evaluate(evaluation.gold, predicted, metric)
    return main_score(metric, scores), scores


def label_probabilities(model: nn.Module, batch, temperature: float = 1.0) -> torch.Tensor:
    """(B, T, L) a model's label distributions at ``temperature``: a tagger's per token (a softmax
    output's, or a CRF's label marginals), a sentence classifier's per sentence (T = 1)."""
    if hasattr(model, "sentence_scores"):
        return (model.sentence_scores(batch) / temperature).softmax(-1).unsqueeze(1)
    return model.probabilities(batch, temperature)


def label_distributions(
    model: nn.Module, vocabularies, tokens: list[list[str]], labels: list[str], batch_size: int = 256, amp: str = "off", cache_features: bool = True, temperature: float = 1.0
) -> list[torch.Tensor]:
    """For each sentence, a (T, len(labels)) float tensor of the model's label probabilities at
    ``temperature`` (T = 1 for a sentence classifier), each of its labels in the column of the same
    name in ``labels`` (a label ``labels`` lacks is left out). What ensembles average and
    distillation's teachers give; ``amp``: a fine-tuned encoder's precision; ``cache_features=False``:
    a user's sentences, whose frozen encoder features stay in memory (``encode_sentences``)."""
    encoded = encode_sentences(tokens, vocabularies, cache_features=cache_features)
    position = {label: column for column, label in enumerate(labels)}
    own = [index for index, label in enumerate(vocabularies.labels.items) if label in position]
    columns = torch.tensor([position[vocabularies.labels.items[index]] for index in own])
    own = torch.tensor(own)
    distributions: list[torch.Tensor | None] = [None] * len(tokens)
    device = model_device(model)
    model.eval()
    with torch.inference_mode(), resolve_precision(amp, model, device, "amp").autocast():
        for batch in evaluation_batches(encoded, batch_size):
            probabilities = label_probabilities(model, batch.to(device), temperature).float().cpu()  # (B, T, L_model)
            for row, index in enumerate(batch.indices):
                length = min(int(encoded.lengths[index]), probabilities.size(1))  # a sentence classifier's one row
                mapped = torch.zeros(length, len(labels))
                mapped[:, columns] = probabilities[row, :length][:, own]
                distributions[index] = mapped
    return distributions
