"""Train a model from a RunConfig (from scratch or by transfer) and write its run directory."""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
from torch import nn

from seqtransfer import rundir
from seqtransfer.config import RunConfig, check_values
from seqtransfer.corpora.annealing import AnnealedBatches
from seqtransfer.corpora.task_data import SPLITS, TaskData, label_notes, load_task_data
from seqtransfer.data.vocabulary import Vocabularies
from seqtransfer.device import describe_model_device, resolve_device
from seqtransfer.embeddings.transformer import encoder_path
from seqtransfer.errors import SeqTransferError, SeqTransferWarning
from seqtransfer.models.registry import build_model
from seqtransfer.models.tagger import count_parameters, size_metrics
from seqtransfer.resources import peak_rss_megabytes, reset_peak_rss
from seqtransfer.training.activations import activation_recorder
from seqtransfer.training.inference import EvaluationSet, score_split
from seqtransfer.training.loop import BatchSource, FitResult, ShuffledBatches, dev_evaluation
from seqtransfer.training.memory import check_parser_memory
from seqtransfer.training.seeding import seed_everything
from seqtransfer.transfer.adaptations import check_adaptations
from seqtransfer.transfer.loss_terms import TermContext, loss_terms
from seqtransfer.transfer.masked_lm import load_pretraining_head
from seqtransfer.transfer.schemes import Scheme, get_scheme, scheme_prefixes
from seqtransfer.transfer.weights import copy_shared_label_rows, transfer_weights
from seqtransfer.workflows.checks import check_adapter, check_auxiliary_lm, check_distillation, check_nothing_is_added
from seqtransfer.workflows.jackknife import jackknife_tags
from seqtransfer.workflows.multitask import MultitaskRun
from seqtransfer.workflows.resolution import resolve_run
from seqtransfer.workflows.run_path import refuse_finished, run, train_phases
from seqtransfer.workflows.sources import adopt_source_settings, load_source

Log = Callable[[str], None]


def build_target_model(config: RunConfig, scheme: Scheme, vocabularies: Vocabularies, matrix: np.ndarray, source, log: Log) -> nn.Module:
    """A fresh model of ``config.model.architecture``, with the source's weights where the scheme says."""
    model = build_model(config.model, vocabularies)
    if model.word_representation is not None:
        model.word_representation.load_vectors(matrix)
    if hasattr(model, "load_pretrained"):  # a fine-tuned encoder starts from its pretrained weights
        model.load_pretrained()
        if getattr(model, "language_model", None) is not None:  # the auxiliary LM (masked or causal): from the folder's pretraining head, if it has one
            pretrained = load_pretraining_head(model.language_model, encoder_path(config.model.encoder))
            origin = "the encoder folder's pretraining head" if pretrained else "random (no pretraining head of its shapes in the encoder folder)"
            log(f"auxiliary LM head: {origin}")
    if source is not None:
        source_state = source.model.state_dict()
        prefixes = scheme_prefixes(model, scheme)
        copied = transfer_weights(model, source_state, prefixes)
        log(f"transferred {len(copied)} tensors from {config.transfer.source} ({', '.join(prefixes)})")
        if config.transfer.copy_shared_labels:
            shared = copy_shared_label_rows(model, source_state, vocabularies.labels, source.vocabularies.labels)
            log(f"copied classifier rows of {len(shared)} shared labels")
    return model


def evaluation_set(data: TaskData, split: str, vocabularies: Vocabularies) -> EvaluationSet:
    return EvaluationSet(data.encode(split, vocabularies, with_targets=False), data.gold(split))


def score_splits(model, data: TaskData, vocabularies: Vocabularies, config: RunConfig, directory: Path) -> dict:
    """Scores and prediction files for every evaluation split."""
    return {split: score_split(model, data, split, vocabularies, vocabularies.labels, config.train.evaluation_batch_size, directory / "predictions") for split in data.splits if split != "train"}


def multitask_run(config: RunConfig) -> MultitaskRun:
    """A hierarchical multi-task model (several tasks and datasets; workflows/multitask.py), after
    refusing what applies to one task only."""
    if config.data.select_like:
        raise SeqTransferError("data.select_* (selecting source sentences) applies to one task, not to a multi-task model", hint="drop data.select_like")
    if config.data.anneal_source:
        raise SeqTransferError("data.anneal_source (data annealing) applies to one task, not to a multi-task model", hint="drop data.anneal_source")
    check_adapter(config)
    return MultitaskRun(config)


def load_logged_task_data(config: RunConfig, splits: tuple[str, ...], log: Log) -> TaskData:
    """The run's data; what reading repaired (and the data's notes) go to the run's log too."""
    with warnings.catch_warnings(record=True) as repairs:
        warnings.simplefilter("always", SeqTransferWarning)
        data = load_task_data(config.data, splits)
    logged = set()
    for repair in repairs:
        if issubclass(repair.category, SeqTransferWarning):
            if str(repair.message) not in logged:  # a file read twice (its dev carved from its training split) says it once
                logged.add(str(repair.message))
                log(f"warning: {repair.message}")
        else:
            warnings.warn_explicit(repair.message, repair.category, repair.filename, repair.lineno)
    if "dev" not in data.splits:
        raise SeqTransferError(f"dataset '{data.dataset}' has no dev split for early stopping", hint="pass --dev PATH")
    for note in data.notes + label_notes(data):
        log(f"warning: {note}")
    return data


def train_tagger(config: RunConfig, run_directory: str | Path, log: Log = print, show_progress: bool = True, epoch_reports: tuple = ()) -> dict:
    """Train with the configured scheme, keep the best dev epoch, score dev and test, write the run directory
    (``epoch_reports``: callables given each epoch's record, e.g. a tuning service's report). The
    settings are checked before the run directory is written (but for jackknifed input tags, whose
    fold taggers keep their tags in it as they go). One task or several, the run takes the one run
    path of ``workflows/run_path.py``."""
    directory = Path(run_directory)
    refuse_finished(directory)
    started = time.perf_counter()
    reset_peak_rss()  # this run's peak, not an earlier run's in the same process (a Ray worker)
    check_values(config)
    seed_everything(config.train.seed, config.train.threads)
    if config.model.tasks:  # a hierarchical multi-task model: several tasks and datasets
        return run(multitask_run(config), directory, started, log, show_progress)
    scheme = get_scheme(config.transfer.scheme)
    source = load_source(config, scheme)
    data = load_logged_task_data(config, SPLITS if scheme.phases(config.transfer) else ("dev", "test"), log)  # nothing trains: no training split needed
    if not scheme.phases(config.transfer):  # nothing trains: the source model as it is
        check_adapter(config)
        check_nothing_is_added(config, scheme)
        return source_as_is(config, directory, data, source, started, log)
    return run(OneTaskRun(config, scheme, source, data, epoch_reports), directory, started, log, show_progress)


class OneTaskRun:
    """A model of one task and dataset, from scratch or by transfer (a ``RunKind`` of workflows/run_path.py)."""

    def __init__(self, config: RunConfig, scheme: Scheme, source, data: TaskData, epoch_reports: tuple = ()) -> None:
        self.config, self.scheme, self.source, self.data, self.epoch_reports = config, scheme, source, data, epoch_reports
        self.earlier_seconds = 0.0

    def build(self, directory: Path, log: Log) -> nn.Module:
        config, scheme, data = self.config, self.scheme, self.data
        fold_tags = functools.partial(jackknife_tags, train=train_tagger)  # its fold taggers train through train_tagger
        self.vocabularies, matrix, self.earlier_seconds = resolve_run(config, scheme, data, self.source, directory, log, fold_tags)  # the configuration filled in and frozen
        model = build_target_model(config, scheme, self.vocabularies, matrix, self.source, log)
        check_target_model(config, model, scheme, self.source is not None, data, self.vocabularies, log)
        return model

    def on_device(self, model: nn.Module, log: Log) -> None:
        pass

    def before_setup(self, directory: Path) -> None:
        if self.vocabularies.encoder and (directory / rundir.VOCABULARY).is_file():  # resumed: the pair features its first epochs read
            self.vocabularies.encoder_segments = rundir.read_vocabularies(directory).encoder_segments

    def fit(self, model: nn.Module, directory: Path, log: Log, show_progress: bool) -> FitResult:
        config, data, vocabularies = self.config, self.data, self.vocabularies
        train = data.encode("train", vocabularies)
        dev = evaluation_set(data, "dev", vocabularies)
        log(f"training {self.scheme.name} on {data.dataset}/{data.task}: {len(train.lengths)} sentences, {int(train.lengths.sum())} tokens; {count_parameters(model)} parameters")
        recorder = activation_recorder(config.train.record_activations, directory, data.tokens("dev"), dev.encoded)
        log(f"device: {describe_model_device(model)}")
        evaluate_dev = dev_evaluation(dev, vocabularies.labels, data.metric, config.train.evaluation_batch_size)
        extra_losses = loss_terms(TermContext(config, model, self.scheme, data, vocabularies, train.word_ids, log))
        batches = training_source(config, data, train)
        result = train_phases(model, self.scheme, config, batches, evaluate_dev, directory, log, show_progress, recorder, extra_losses=extra_losses, epoch_reports=self.epoch_reports)
        if recorder:
            recorder.record_final(model, result.best_epoch)
        return result

    def identity(self) -> dict:
        return {"dataset": self.data.dataset, "task": self.data.task, "metric": self.data.metric}

    def scores(self, model: nn.Module, directory: Path, result: FitResult) -> dict:
        return score_splits(model, self.data, self.vocabularies, self.config, directory)


def check_target_model(config: RunConfig, model: nn.Module, scheme: Scheme, has_source: bool, data: TaskData, vocabularies: Vocabularies, log: Log) -> None:
    """What must hold of the built model: the auxiliary LM's layers train, teachers can teach it, its
    adaptations apply, a parser's longest batches fit in memory."""
    check_auxiliary_lm(config, scheme)
    if data.kind.name == "dependency":
        check_splits_fit(config, data)
    check_distillation(config, model, data, vocabularies.labels)
    if config.transfer.adaptations:
        check_adaptations(config.transfer, model, has_source, scheme.phases(config.transfer), scheme_prefixes(model, scheme), max_epochs=config.train.max_epochs, log=log)


def check_splits_fit(config: RunConfig, data: TaskData) -> None:
    """A parser's longest training and evaluation batches fit in the machine's memory (one line each);
    on a GPU the host's memory says nothing of the device's, and nothing is checked here."""
    if resolve_device(config.train.device).type != "cpu":
        return
    check_parser_memory(
        [len(sentence.tokens) for sentence in data.splits["train"]],
        config.train.batch_size,
        True,
        "training sentence",
        "skip longer training sentences with data.max_sentence_length=N (e.g. 300), or lower train.batch_size",
    )
    for split in (name for name in data.splits if name != "train"):
        check_parser_memory(
            [len(sentence.tokens) for sentence in data.splits[split]],
            config.train.evaluation_batch_size,
            False,
            f"{split} sentence",
            "lower train.evaluation_batch_size, or score the split without its longest sentences",
        )


def source_as_is(config: RunConfig, directory: Path, data: TaskData, source: rundir.LoadedRun, started: float, log: Log) -> dict:
    """A run directory holding the source model unchanged (its vocabularies and labels: target words
    it never saw are unknown words, target labels it lacks are never predicted), scored on the target's splits."""
    adopt_source_settings(config, source)  # its path (a self-labelling run's first final model)
    config.model = source.config.model
    config.data.scheme, config.data.metric = data.scheme, data.metric
    log(f"source only: {config.transfer.source} applied to {data.dataset}/{data.task} without training")
    target_labels = {label for sentence in data.kind.label_strings(data.gold("dev")) for label in sentence}
    missing = sorted(target_labels - set(source.vocabularies.labels.items))
    if missing:
        log(f"warning: the source model never predicts {len(missing)} dev label(s) of the target: {', '.join(missing[:20])}")
    with rundir.writer_lock(directory):
        rundir.remove_partial_files(directory)
        rundir.save_setup(directory, config, source.vocabularies)
        metrics = {"dataset": data.dataset, "task": data.task, "metric": data.metric, "scheme": "source_only", "best_epoch": 0}
        metrics.update(score_splits(source.model, data, source.vocabularies, config, directory))
        metrics.update(size_metrics(source.model, config.model))
        metrics.update(trainable_parameters=0, history=[], seconds=round(time.perf_counter() - started, 1), device=describe_model_device(source.model), peak_rss_megabytes=peak_rss_megabytes())
        rundir.save_weights(directory, source.model.state_dict(), source.model)
        rundir.save_metrics(directory, metrics)
    return metrics


def training_source(config: RunConfig, data: TaskData, train) -> BatchSource:
    """The training set's batches: shuffled, or annealed from source to target (corpora/annealing.py)."""
    if data.target_count is None:
        return ShuffledBatches(train, config.train.batch_size, config.train.seed, config.train.batching)
    return AnnealedBatches(train, data.target_count, config.train.batch_size, config.train.seed, config.data.anneal_start, config.data.anneal_decay)
