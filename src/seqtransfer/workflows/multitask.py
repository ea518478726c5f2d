"""Training a hierarchical multi-task model on several datasets (MuTSPad paper, section 4).

- **Data.** ``multitask.data`` names, for each task of ``model.tasks``, a dataset and its task
  (``tweebank:upos``). Each dataset keeps its own sentences ("heterogeneous" multi-task
  learning): a batch comes from one task's training set and trains that task only, with the
  branches below it and the shared word representation. With ``multitask.unified`` (a folder
  written by ``seqtransfer unify``) every training sentence is labelled for every task, gold or
  predicted, and every batch trains every task; dev and test stay each task's gold data.
- **Scheduling.** ``round_robin`` (the paper's "one task per batch"): the tasks take turns low ->
  high (POS, CK, NER, DP), a task whose set is used up drops out, and the epoch ends when every
  training set has been read once. ``proportional``: the next batch's task is drawn with
  probability proportional to the batches it has left (the same sentences per epoch, mixed).
- **Loss weights** start at ``multitask.loss_weights`` (default 2^-level: 1, 0.5, 0.25, 0.25 for
  the paper's hierarchy) and change every epoch as ``multitask.weight_schedule`` says, by an
  epoch hook of the one training loop: ``geometric`` (the paper's) multiplies them by
  ``weight_growth`` (2) up to 1; ``linear`` raises them in equal steps to 1 at epoch
  ``weight_ramp_epochs``; ``constant`` keeps them.
- **Early stopping** watches the mean of the tasks' dev main scores (accuracy, F1, LAS), or one
  task's score (``multitask.early_stopping``); every task's dev score per epoch is in the history
  and its best epoch in ``metrics.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from seqtransfer.config import RunConfig, idle_settings
from seqtransfer.corpora.task_data import TaskData, load_task_data
from seqtransfer.data.batching import EncodedSentences, encode_sentences
from seqtransfer.data.vocabulary import Vocabularies, Vocabulary
from seqtransfer.device import describe_model_device
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.multitask import HierarchicalMultiTask, TaskView, target_name, task_order
from seqtransfer.models.registry import build_model
from seqtransfer.models.tagger import count_parameters
from seqtransfer.tasks.regression import check_centred_scores
from seqtransfer.training.inference import EvaluationSet, score, score_split
from seqtransfer.training.loop import Evaluate, FitResult
from seqtransfer.training.optimizers import fill_optimizer
from seqtransfer.training.vocabularies import build_word_vocabularies
from seqtransfer.transfer.adaptations import EWC, L2SP, SOURCE_PENALTIES, check_adaptations, layer_groups, source_fisher
from seqtransfer.transfer.auxiliary_lm import auxiliary_language_model, language_model_words
from seqtransfer.transfer.schemes import Scheme, get_scheme
from seqtransfer.transfer.weights import copy_shared_label_rows, transfer_weights
from seqtransfer.workflows.run_path import train_phases
from seqtransfer.workflows.sources import adopt_source_settings, load_source
from seqtransfer.workflows.task_schedule import WEIGHT_SCHEDULES, TaskSchedule, initial_weights, loss_weight_hook  # noqa: F401 - WEIGHT_SCHEDULES: read from here
from seqtransfer.workflows.unify import unified_sentences, with_task_columns

Log = Callable[[str], None]
SCHEMES = ("scratch", "finetune")  # multi-task training from scratch, or MuTSPad's multi-task fine-tuning of a multi-task source


USER_FILE_KEYS = ("train", "dev", "test", "columns", "task", "scheme", "separator")


def data_config_of(config: RunConfig, entry, task: str):
    """The DataConfig of one task's entry in ``multitask.data``: ``"dataset"``, ``"dataset:task"``,
    or a mapping of a user's files ``{train: PATH, dev: PATH, test: PATH, columns: [word, ner], task: ner}``."""
    base = replace(config.data, dataset=None, task=None, train=None, dev=None, test=None, columns=None, metric=None)
    if isinstance(entry, dict):
        unknown = [key for key in entry if key not in USER_FILE_KEYS]
        if unknown or not entry.get("train"):
            raise SeqTransferError(
                f"multitask.data.{task} has {'unknown key ' + repr(unknown[0]) if unknown else 'no train file'}",
                hint=f"give a dataset name or a mapping with keys {', '.join(USER_FILE_KEYS)} (train required)",
            )
        return replace(base, **entry)
    if not isinstance(entry, str) or not entry.strip():
        raise SeqTransferError(f"multitask.data.{task} must be a dataset name, got {entry!r}", hint=f"e.g. multitask.data.{task}=tweebank:upos")
    dataset, _, dataset_task = entry.partition(":")
    return replace(base, dataset=dataset.strip(), task=dataset_task.strip() or None)


def load_multitask_data(config: RunConfig) -> dict[str, TaskData]:
    """Each task's data, low -> high; a task no dataset labels (or data for no task) is an error."""
    hierarchy = config.model.tasks
    if config.model.tag_feature or config.model.tag_tagger or config.model.tag_jackknife:
        raise SeqTransferError(
            "model.tag_feature (input tags) is for single-task models", hint="a multi-task model learns the tags as a task of its own: drop model.tag_feature, model.tag_tagger and model.tag_jackknife"
        )
    order = task_order(hierarchy)
    entries = config.multitask.data or {}
    for task in order:
        if task not in entries:
            raise SeqTransferError(f"task '{task}' is in model.tasks but no dataset labels it", hint=f"add multitask.data.{task}=DATASET[:TASK] (see `seqtransfer datasets`)")
    for task in entries:
        if task not in hierarchy:
            raise SeqTransferError(f"multitask.data names task '{task}', which model.tasks does not list", hint=f"the tasks are: {', '.join(order)}")
    tasks = {}
    for task in order:
        data = load_task_data(data_config_of(config, entries[task], task))
        if "dev" not in data.splits:
            raise SeqTransferError(f"dataset '{data.dataset}' (task '{task}') has no dev split for early stopping", hint="use a dataset with a dev split")
        tasks[task] = data
    if config.multitask.unified:  # training sentences labelled for every task (`seqtransfer unify`)
        tasks = with_task_columns(unified_sentences(config.multitask.unified), tasks, config.multitask.unified)
    return tasks


def dataset_key(data: TaskData) -> tuple:
    """What tells datasets apart: the registry name, and for a user's files the training file."""
    train = data.splits.get("train") or [None]
    return data.dataset, getattr(train[0], "source", None)


def distinct_datasets(tasks: dict[str, TaskData]) -> list[TaskData]:
    """One TaskData per dataset (TweeBank's POS and DP tasks read the same sentences)."""
    seen: dict[tuple, TaskData] = {}
    for data in tasks.values():
        seen.setdefault(dataset_key(data), data)
    return list(seen.values())


def prepare_multitask_vocabularies(config: RunConfig, tasks: dict[str, TaskData], log: Log, base: Vocabularies | None = None) -> tuple[Vocabularies, np.ndarray]:
    """Words and characters of every dataset (extending the source's when transferring), labels per task."""
    datasets = distinct_datasets(tasks)
    train_tokens = [tokens for data in datasets for tokens in data.tokens("train")]
    evaluation_tokens = [tokens for data in datasets for split in data.splits if split != "train" for tokens in data.tokens(split)]
    vocabularies, matrix = build_word_vocabularies(config, train_tokens, evaluation_tokens, [], log, base)
    vocabularies.task_labels = {task: Vocabulary.build((label for sentence in data.kind.label_strings(data.gold("train")) for label in sentence), specials=()) for task, data in tasks.items()}
    log("labels: " + ", ".join(f"{task} {len(labels)}" for task, labels in vocabularies.task_labels.items()))
    return vocabularies, matrix


def encode_streams(tasks: dict[str, TaskData], vocabularies: Vocabularies, unified: bool) -> list[EncodedSentences]:
    """The training sets a batch is drawn from: one per task, or (unified data) one holding the
    targets of every task, named ``task.labels`` / ``task.heads``."""
    groups: dict[str, list[str]] = {}
    for task in tasks:
        groups.setdefault("unified" if unified else task, []).append(task)
    streams = []
    for members in groups.values():
        data = tasks[members[0]]
        targets = {}
        for task in members:
            encoded = tasks[task].kind.encode_targets(tasks[task].gold("train"), vocabularies.task_labels[task])
            targets.update({target_name(task, name): arrays for name, arrays in encoded.items()})
        streams.append(encode_sentences(data.tokens("train"), vocabularies, targets=targets))
    return streams


def dev_evaluation(tasks: dict[str, TaskData], vocabularies: Vocabularies, config: RunConfig) -> tuple[Evaluate, dict[str, EvaluationSet]]:
    """Scores every task on its dev set; the watched score is their mean (or one task's)."""
    watched = config.multitask.early_stopping
    if watched != "mean" and watched not in tasks:
        raise SeqTransferError(f"multitask.early_stopping is '{watched}'", hint=f"use mean or a task: {', '.join(tasks)}")
    dev = {task: EvaluationSet(data.encode("dev", vocabularies, with_targets=False), data.gold("dev")) for task, data in tasks.items()}
    batch_size = config.train.evaluation_batch_size

    def evaluate_dev(model: HierarchicalMultiTask) -> tuple[float, dict]:
        scores = {task: score(TaskView(model, task), dev[task], vocabularies.task_labels[task], data.metric, batch_size)[0] for task, data in tasks.items()}
        return (sum(scores.values()) / len(scores) if watched == "mean" else scores[watched]), scores

    return evaluate_dev, dev


def shared_tasks(model: HierarchicalMultiTask, source: HierarchicalMultiTask) -> list[str]:
    """Tasks both models have, of the same kind, reading the same lower tasks (their weights fit)."""
    return [task for task in model.order if source.kinds.get(task) == model.kinds[task] and source.hierarchy.get(task) == model.hierarchy[task]]


def transferred_prefixes(model: HierarchicalMultiTask, source: HierarchicalMultiTask) -> tuple[str, ...]:
    """MuTSPad: the shared WRE, and the feature extractor and projection of every shared task."""
    shared = shared_tasks(model, source)
    projections = [f"projections.{task}." for task in shared if task in model.projections and task in source.projections]
    return ("word_representation.", *projections, *(f"branches.{task}.feature_extractor." for task in shared))


def load_multitask_source(config: RunConfig, scheme: Scheme):
    if scheme.name not in SCHEMES:
        raise SeqTransferError(f"scheme '{scheme.name}' does not apply to multi-task models", hint=f"use one of: {', '.join(SCHEMES)}")
    if not scheme.uses_source:
        return None
    source = load_source(config, scheme)
    adopt_source_settings(config, source)
    if not isinstance(source.model, HierarchicalMultiTask):
        raise SeqTransferError("the source run is not a multi-task model", path=config.transfer.source, hint="pass a run trained with model.tasks set (multi-task pretraining)")
    config.model.projection = source.config.model.projection
    return source


def multitask_source_batches(source):
    """A multi-task source run's training batches of epoch 1, one task per batch (its Fisher information's)."""
    train = source.config.train
    streams = encode_streams(load_multitask_data(source.config), source.vocabularies, bool(source.config.multitask.unified))
    return TaskSchedule(streams, train.batch_size, train.seed, source.config.multitask.sampling).batches(1)


def multitask_adaptations(config: RunConfig, model: HierarchicalMultiTask, source, log: Log) -> tuple:
    """Check ``transfer.adaptations`` against the model's groups (the levels of its hierarchy) and
    build L2-SP and EWC towards a multi-task source's weights (extra loss terms) when asked."""
    if not config.transfer.adaptations:
        return ()
    check_adaptations(config.transfer, model, has_source=source is not None, max_epochs=config.train.max_epochs, log=log)
    log("adaptations " + ", ".join(config.transfer.adaptations) + " over groups: " + ", ".join(name for name, _ in layer_groups(model)))
    if not set(SOURCE_PENALTIES) & set(config.transfer.adaptations):
        return ()
    state = {name: tensor.detach().clone() for name, tensor in source.model.state_dict().items()}
    copied = [name for name in state if name.startswith(transferred_prefixes(model, source.model))]  # the branches fed as in the source
    penalties = []
    if "l2sp" in config.transfer.adaptations:
        penalties.append(L2SP(model, state, copied, config.transfer.l2sp_weight))
        log(f"L2-SP (alpha {config.transfer.l2sp_weight}) over {len(penalties[-1].pairs)} transferred tensors, each batch over those its tasks use")
    if "ewc" in config.transfer.adaptations:
        fisher = source_fisher(source, config.transfer.ewc_batches, log, multitask_source_batches)
        penalties.append(EWC(model, state, fisher, copied, config.transfer.ewc_weight))
        log(f"EWC (lambda {config.transfer.ewc_weight}) over {len(penalties[-1].pairs)} transferred tensors, each batch over those its tasks use")
    return tuple(penalties)


def build_multitask_model(config: RunConfig, vocabularies: Vocabularies, matrix: np.ndarray, source, log: Log) -> HierarchicalMultiTask:
    model = build_model(config.model, vocabularies)
    model.word_representation.load_vectors(matrix)
    if source is not None:
        state = source.model.state_dict()
        copied = transfer_weights(model, state, transferred_prefixes(model, source.model))
        shared = shared_tasks(model, source.model)
        skipped = [task for task in model.order if task not in shared]
        log(
            f"transferred {len(copied)} tensors from {config.transfer.source} (branches: {', '.join(shared) or 'none'}"
            + (f"; new or differently fed, not transferred: {', '.join(skipped)})" if skipped else ")")
        )
        if config.transfer.copy_shared_labels:
            for task in shared:
                labels = copy_task_labels(model, state, task, vocabularies.task_labels[task], source.vocabularies.task_labels[task])
                log(f"{task}: copied classifier rows of {len(labels)} shared labels")
    return model


# The biaffine scorer's parts that do not depend on the relation set (MLPs, arc scorer).
LABEL_FREE = ("classifier.arc_dependent.", "classifier.arc_head.", "classifier.relation_dependent.", "classifier.relation_head.", "classifier.arc_scorer.")


def copy_task_labels(model: HierarchicalMultiTask, source_state: dict, task: str, labels: Vocabulary, source_labels: Vocabulary) -> list[str]:
    """Initialise a task's classifier from the source where labels are shared (section 4.1): the
    rows of shared labels (tagging: linear and CRF; parsing: relation scorer), and for parsing the
    label-free MLPs and arc scorer."""
    prefix = f"branches.{task}."
    branch_state = {name.removeprefix(prefix): tensor for name, tensor in source_state.items() if name.startswith(prefix)}
    if model.kinds[task] == "tagging":
        return copy_shared_label_rows(model.branches[task], branch_state, labels, source_labels)
    transfer_weights(model.branches[task], branch_state, LABEL_FREE)
    pairs = [(labels.index[label], source_labels.index[label]) for label in labels.items if label in source_labels.index]
    if pairs:
        target_rows, source_rows = (torch.tensor(rows) for rows in zip(*pairs))
        with torch.no_grad():
            model.branches[task].classifier.relation_scorer.weight[target_rows] = branch_state["classifier.relation_scorer.weight"][source_rows]
    return [labels.items[target] for target, _ in pairs]


def best_epochs(history: list[dict]) -> dict[str, int]:
    """The epoch of each task's best dev score."""
    best: dict[str, tuple[float, int]] = {}
    for record in history:
        for task, value in record.get("dev_tasks", {}).items():
            if task not in best or value > best[task][0]:
                best[task] = (value, record["epoch"])
    return {task: epoch for task, (_, epoch) in best.items()}


def score_tasks(model: HierarchicalMultiTask, tasks: dict[str, TaskData], vocabularies: Vocabularies, config: RunConfig, directory: Path) -> dict:
    """Per task: scores of every evaluation split and ``predictions/TASK/SPLIT.conll``."""
    results = {}
    for task, data in tasks.items():
        view = TaskView(model, task)
        results[task] = {"dataset": data.dataset, "task": data.task, "metric": data.metric}
        for split in data.splits:
            if split != "train":
                results[task][split] = score_split(view, data, split, vocabularies, vocabularies.task_labels[task], config.train.evaluation_batch_size, directory / "predictions" / task)
    return results


def check_multitask_settings(config: RunConfig) -> None:
    """One line for a setting a multi-task model cannot take, before any data is read."""
    if config.transfer.distill_from:
        raise SeqTransferError("distillation (transfer.distill_from) teaches a mono-task model, not a multi-task one", hint="drop transfer.distill_from")
    if config.model.encoder and config.model.encoder_mode == "finetune":
        raise SeqTransferError("a multi-task model reads a frozen encoder's features, not a fine-tuned encoder, for now", hint="use model.encoder_mode=features")
    if config.train.adversarial_data or config.model.discriminator_hidden:
        raise SeqTransferError("adversarial training is not available for multi-task models yet", hint="train mono-task sources with train.adversarial_data")
    watched = config.multitask.early_stopping
    if watched != "mean" and watched not in config.model.tasks:
        raise SeqTransferError(f"multitask.early_stopping is '{watched}'", hint=f"use mean or a task: {', '.join(config.model.tasks)}")


def resolve_multitask_settings(config: RunConfig, tasks: dict[str, TaskData], log: Log) -> None:
    """The data's notes logged; the architecture, task kinds, optimizer and each kind's filled
    settings (saved with the run); a warning for each setting nothing will read."""
    for task, data in tasks.items():
        for note in data.notes:
            log(f"warning: {task}: {note}")
    config.model.architecture = "multitask"
    config.model.task_kinds = {task: data.kind.name for task, data in tasks.items()}
    fill_optimizer(config.train, "adam" if "dependency" in config.model.task_kinds.values() else "sgd")
    for idle in idle_settings(config):
        log(f"warning: {idle}")
    for data in tasks.values():
        check_centred_scores(config.model, data.kind)
        filled = data.kind.fill_config(config.model, data.gold("train"), data.splits["train"])
        if filled:
            log(filled)


def resolve_multitask_run(config: RunConfig, tasks: dict[str, TaskData], source, log: Log) -> tuple[Vocabularies, np.ndarray]:
    """A multi-task run's configuration filled in (architecture, task kinds, optimizer, each kind's
    settings, the vocabularies with the encoder's shape, an auxiliary LM's words), then frozen, as
    ``workflows/resolution.py`` does for one task: the model is built from the frozen configuration."""
    resolve_multitask_settings(config, tasks, log)
    vocabularies, matrix = prepare_multitask_vocabularies(config, tasks, log, base=source.vocabularies if source else None)
    if config.transfer.auxiliary_lm_weight:  # saved with the run: the LM layers are part of the model
        config.model.language_model_words = language_model_words(config, vocabularies)
    config.freeze()
    return vocabularies, matrix


class MultitaskRun:
    """A hierarchical multi-task model, from scratch or from a multi-task source (a ``RunKind`` of
    workflows/run_path.py)."""

    def __init__(self, config: RunConfig) -> None:
        self.config, self.scheme = config, get_scheme(config.transfer.scheme)
        self.earlier_seconds = 0.0
        self.penalties: tuple = ()

    def build(self, directory: Path, log: Log) -> HierarchicalMultiTask:
        config = self.config
        check_multitask_settings(config)
        self.source = load_multitask_source(config, self.scheme)
        self.tasks = load_multitask_data(config)
        self.weights = initial_weights(config)  # a bad multitask.loss_weights is one line before anything is built
        self.vocabularies, matrix = resolve_multitask_run(config, self.tasks, self.source, log)
        return build_multitask_model(config, self.vocabularies, matrix, self.source, log)

    def on_device(self, model: nn.Module, log: Log) -> None:
        self.penalties = multitask_adaptations(self.config, model, self.source, log)  # L2-SP keeps the source weights beside the model's

    def before_setup(self, directory: Path) -> None:
        pass

    def fit(self, model: nn.Module, directory: Path, log: Log, show_progress: bool) -> FitResult:
        config, tasks = self.config, self.tasks
        streams = encode_streams(tasks, self.vocabularies, bool(config.multitask.unified))
        schedule = TaskSchedule(streams, config.train.batch_size, config.train.seed, config.multitask.sampling)
        extra_losses = (*self.penalties, *auxiliary_language_model(config, model, [ids for stream in streams for ids in stream.word_ids], log))
        evaluate_dev, _ = dev_evaluation(tasks, self.vocabularies, config)
        log(
            f"training multi-task {self.scheme.name}: "
            + ", ".join(f"{task} <- {data.dataset}/{data.task} ({len(data.splits['train'])} sentences)" for task, data in tasks.items())
            + f"; {schedule.batch_count} batches per epoch ({config.multitask.sampling}); {count_parameters(model)} parameters; device: {describe_model_device(model)}"
        )
        hooks = (loss_weight_hook(self.weights, config.multitask),)
        return train_phases(model, self.scheme, config, schedule, evaluate_dev, directory, log, show_progress, epoch_hooks=hooks, extra_losses=extra_losses)

    def identity(self) -> dict:
        return {"dataset": "+".join(data.dataset for data in distinct_datasets(self.tasks)), "task": "multitask", "metric": self.config.multitask.early_stopping}

    def scores(self, model: nn.Module, directory: Path, result: FitResult) -> dict:
        task_results = score_tasks(model, self.tasks, self.vocabularies, self.config, directory)
        for task, epoch in best_epochs(result.history).items():
            task_results[task]["best_epoch"] = epoch
        return {"tasks": task_results}
