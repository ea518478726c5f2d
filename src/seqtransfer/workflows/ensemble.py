"""Ensembles: average the label distributions of several finished runs, per token (taggers) or per
sentence (sentence classifiers).

Members may have different vocabularies and label orders (a fine-tuned run and a scratch run),
so each member encodes the sentences with its own vocabularies and its distributions are
mapped onto the union of the labels by name before averaging. A CRF member's distributions are its
label marginals (forward-backward over its transitions). Members must label in one tag set:
two members sharing fewer than half of the smaller label set (NER and POS models, or WNUT's and
CoNLL-2003's entity types) are refused in one line; a source in another tag set is mapped when it
is trained (``data.label_map``), so that its run labels in the shared one.

An ensemble's folder (``build_ensemble``, ``seqtransfer ensemble``) names its members in
``members.json`` (combination ``average``), so that ``evaluate``, ``predict``, ``seqtransfer.load``
and ``transfer.distill_from`` take it as one model.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import torch

from seqtransfer import rundir
from seqtransfer.corpora.task_data import TaskData
from seqtransfer.data.vocabulary import one_tag_set
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.tagger import count_parameters, shared_frozen_encoder_parameters
from seqtransfer.run_members import run_fingerprint
from seqtransfer.rundir import LoadedRun
from seqtransfer.training.inference import label_distributions, score_predictions
from seqtransfer.transfer.distillation import gives_label_distributions


def check_members(runs: list[LoadedRun], kind: str | None = None) -> None:
    """Members of one ensemble: each gives label distributions (a tagger or a sentence classifier),
    all of one task kind (``kind``, when the ensemble is scored on a task's data) and one tag set."""
    kind = kind or runs[0].model.task_kind
    for run in runs:
        if not gives_label_distributions(run.model) or not (hasattr(run.model, "probabilities") or hasattr(run.model, "sentence_scores")):
            raise SeqTransferError(
                f"ensembles average label distributions; this {run.model.task_kind} run has none",
                path=run.directory,
                hint="ensemble tagging or sentence-classification runs only (remove the ensemble method for this task)",
            )
        if run.model.task_kind != kind:
            raise SeqTransferError(f"an ensemble of {kind} runs has a {run.model.task_kind} member", path=run.directory, hint="ensemble runs of the task the ensemble is scored on")
        if run.vocabularies.tags is not None and not run.vocabularies.tagger:
            raise SeqTransferError(
                f"this run reads the input's {run.config.model.tag_feature} tags (model.tag_feature), which an ensemble does not pass on",
                path=run.directory,
                hint="ensemble runs that read no input tags, or that tag their input themselves (model.tag_tagger=RUN)",
            )
    check_label_sets(runs)


def check_label_sets(runs: list[LoadedRun]) -> None:
    """One line when two members label in different tag sets (they share fewer than half of the smaller set's labels)."""
    for first, second in itertools.combinations(runs, 2):
        labels_first, labels_second = set(first.vocabularies.labels.items), set(second.vocabularies.labels.items)
        shared = labels_first & labels_second
        if not one_tag_set(labels_first, labels_second):
            raise SeqTransferError(
                f"the runs label in different tag sets: {len(labels_first)} and {len(labels_second)} labels, {len(shared)} shared "
                f"({shown(labels_first - shared)} against {shown(labels_second - shared)})",
                path=second.directory,
                hint="combine runs of one tag set, or train a source in another tag set with data.label_map=FILE (YAML: DATASET: {its label: shared label})",
            )


def shown(labels: set[str], most: int = 4) -> str:
    """Up to ``most`` labels, sorted, and "..." when there are more."""
    ordered = sorted(labels)
    return ", ".join(ordered[:most]) + (" ..." if len(ordered) > most else "")


def averaged_distributions(runs: list[LoadedRun], tokens: list[list[str]], batch_size: int = 256, amp: str = "off", cache_features: bool = True) -> tuple[list[str], list[torch.Tensor]]:
    """The union of the members' labels and, per sentence, the (T, labels) mean of their distributions."""
    check_label_sets(runs)
    labels = sorted({label for run in runs for label in run.vocabularies.labels.items})
    members = [label_distributions(run.model, run.vocabularies, tokens, labels, batch_size, amp, cache_features) for run in runs]
    return labels, [torch.stack(parts).mean(0) for parts in zip(*members)]


def ensemble_predict(runs: list[LoadedRun], tokens: list[list[str]], batch_size: int = 256, amp: str = "off", cache_features: bool = True) -> list[list[str]]:
    """Arg-max of the averaged member distributions, one label per token (a sentence classifier's: one per sentence)."""
    labels, averaged = averaged_distributions(runs, tokens, batch_size, amp, cache_features)
    return [[labels[index] for index in sentence.argmax(-1).tolist()] for sentence in averaged]


def build_ensemble(member_directories: list[Path], data: TaskData, directory: Path) -> dict:
    """Score the ensemble on every evaluation split and write its metrics and predictions."""
    started = time.perf_counter()
    runs = [rundir.load_run(path) for path in member_directories]
    check_members(runs, data.kind.name)
    rundir.write_members(directory, member_directories, "average", method="ensemble")  # the folder is then one model to evaluate, predict with or distil
    metrics = {"dataset": data.dataset, "task": data.task, "metric": data.metric, "scheme": "ensemble", "members": [str(path) for path in member_directories]}
    metrics["member_runs"] = [run_fingerprint(path) for path in member_directories]  # which training of each member (a grid rebuilds when one differs)
    for split in data.splits:
        if split != "train":  # a tagger's predictions: predictions/SPLIT.conll
            metrics[split] = score_predictions(data, split, ensemble_predict(runs, data.tokens(split)), directory / "predictions")
    frozen = shared_frozen_encoder_parameters(run.config.model for run in runs)
    metrics["parameters"] = sum(count_parameters(run.model) for run in runs) + frozen
    if frozen:
        metrics["frozen_encoder_parameters"] = frozen
    # the reports' size (rundir.parameters_without_embeddings), counted now: a member's folder can be trained again later
    metrics["network_parameters"] = sum(rundir.parameters_without_embeddings(path) for path in member_directories) + frozen
    metrics["seconds"] = round(time.perf_counter() - started, 1) + sum(run.metrics.get("seconds", 0) for run in runs)
    rundir.save_metrics(directory, metrics)
    return metrics
