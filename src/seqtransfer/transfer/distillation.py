"""Distillation of runs (an ensemble, or one bigger model) into the model being trained (Hinton et al. 2015):
taggers per token, sentence classifiers per sentence.

    transfer.distill_from=[RUN, RUN, ...]  transfer.distillation_temperature=2  transfer.distillation_weight=1
    transfer.distill_from=[ENSEMBLE]       (a folder written by `seqtransfer ensemble`: each of its runs teaches)

The teachers' label distributions at temperature T, averaged over the teachers, are computed once
for every training token (their labels mapped onto the student's by name; a label the student
does not have is dropped and the rest renormalised). An extra loss term of the one training loop
adds weight * T^2 * sum over tokens of the cross-entropy between those soft targets and the
student's distribution at temperature T (the KL divergence up to a constant). The student's
emissions are computed a second time for this term (another dropout draw): about one more
forward pass per batch.

A softmax tagger's distribution is the softmax of its per-token label scores (emissions); a CRF
teacher's is its token marginals (forward-backward over its transitions, every score divided by
T), as ensembles read it. The term teaches the student's emissions alone: a CRF student's
transitions learn from its own loss only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from seqtransfer import rundir
from seqtransfer.data.batching import Batch
from seqtransfer.data.vocabulary import Vocabulary, one_tag_set
from seqtransfer.errors import SeqTransferError, warn
from seqtransfer.models.registry import build_model
from seqtransfer.rundir import member_directories
from seqtransfer.training.inference import label_distributions


def label_scores(model: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T, L) label scores and their (B, T) mask: per token for a tagger, one row per sentence
    (T = 1) for a sentence classifier."""
    if hasattr(model, "sentence_scores"):
        scores = model.sentence_scores(batch).unsqueeze(1)  # (B, 1, L)
        return scores, torch.ones(scores.shape[:2], dtype=torch.bool, device=scores.device)
    return model.emissions(batch), batch.mask


def gives_label_distributions(model: nn.Module) -> bool:
    """Whether a model gives label distributions to distil: a tagger's per token, a classifier's per sentence (not a regressor's score)."""
    return getattr(model, "task_kind", None) != "regression" and (hasattr(model, "emissions") or hasattr(model, "sentence_scores"))


def teacher_directories(entries: Sequence[str | Path]) -> list[Path]:
    """The teacher runs ``transfer.distill_from`` names: each run directory, and each model of a
    folder of models that predict together (an ensemble's folder, ``seqtransfer ensemble``)."""
    return [directory for entry in entries for directory in member_directories(entry)]


def check_teacher(directory: Path, labels: Vocabulary) -> None:
    """A teacher run gives label distributions (a tagger or sentence classifier) in the student's tag
    set: else one line. Read from its run directory, its model built on the meta device (nothing loaded, nothing drawn)."""
    config, vocabularies = rundir.read_run_setup(directory)
    with torch.device("meta"):
        model = build_model(config.model, vocabularies)
    if not gives_label_distributions(model):
        raise SeqTransferError("a teacher must be a tagging or sentence-classification run (it gives label scores)", path=directory, hint="pass tagger, PretRand or classifier runs")
    teacher_labels = set(vocabularies.labels.items)
    if not one_tag_set(teacher_labels, set(labels.items)):
        raise SeqTransferError(
            f"the teacher labels in another tag set: {len(teacher_labels & set(labels.items))} of its {len(teacher_labels)} labels are this task's",
            path=directory,
            hint="distil from runs of the same task, or train the teacher with data.label_map=FILE so that it labels in this tag set",
        )


def teacher_distributions(run, tokens: Sequence[Sequence[str]], labels: Vocabulary, temperature: float, batch_size: int = 256) -> list[np.ndarray]:
    """Per sentence (T, L_student): one teacher's label distribution at ``temperature`` (the one
    ``training/inference.py`` ``label_distributions`` that ensembles average), on the student's
    labels, renormalised over the labels the student has (T = 1 for a sentence classifier)."""
    check_teacher(run.directory, labels)
    dropped = sorted(set(run.vocabularies.labels.items) - set(labels.items))
    if dropped:
        warn(f"{run.directory}: the teacher's labels {', '.join(dropped[:6])}{' ...' if len(dropped) > 6 else ''} are not this task's; their probability is dropped and the rest renormalised")
    distributions = label_distributions(run.model, run.vocabularies, [list(sentence) for sentence in tokens], labels.items, batch_size, temperature=temperature)
    return [student / np.maximum(student.sum(-1, keepdims=True), 1e-12) for student in (distribution.numpy() for distribution in distributions)]


class Distillation:
    """The extra loss term: weight * T^2 * cross-entropy(teachers' soft targets, student at T) over the batch's tokens."""

    def __init__(self, teachers: list, tokens: Sequence[Sequence[str]], labels: Vocabulary, temperature: float, weight: float) -> None:
        per_teacher = [teacher_distributions(teacher, tokens, labels, temperature) for teacher in teachers]
        self.soft = [np.mean([distributions[index] for distributions in per_teacher], axis=0) for index in range(len(tokens))]
        self.temperature, self.weight = temperature, weight

    def targets(self, batch: Batch, width: int) -> torch.Tensor:
        """(B, width, L) soft targets of the batch's sentences (zeros on padding)."""
        labels = self.soft[0].shape[1]
        padded = np.zeros((len(batch.indices), width, labels), dtype=np.float32)
        for row, index in enumerate(batch.indices):
            padded[row, : len(self.soft[index])] = self.soft[index]
        return torch.from_numpy(padded).to(batch.mask.device)

    def __call__(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        scores, mask = label_scores(model, batch)
        log_student = (scores / self.temperature).log_softmax(-1)  # (B, T, L)
        cross_entropy = -(self.targets(batch, scores.shape[1]) * log_student).sum(-1)[mask].sum()
        return self.weight * self.temperature**2 * cross_entropy
