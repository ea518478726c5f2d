"""Train a model from a RunConfig (from scratch or by transfer) and write its run directory."""

from __future__ import annotations

import dataclasses
import shutil
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
from torch import nn

from seqtransfer import rundir
from seqtransfer.analysis.activations import ActivationRecorder, activation_recorder
from seqtransfer.config import RunConfig, check_values
from seqtransfer.data.annealing import AnnealedBatches
from seqtransfer.data.task_data import SPLITS, TaskData, label_notes, load_task_data
from seqtransfer.data.vocabulary import Vocabularies
from seqtransfer.device import describe_device, memory_errors_as_one_line, peak_memory_megabytes, prepare_device, resolve_device
from seqtransfer.embeddings.transformer import encoder_path
from seqtransfer.errors import SeqTransferError, SeqTransferWarning
from seqtransfer.models.registry import build_model
from seqtransfer.models.tagger import count_parameters, size_metrics
from seqtransfer.resources import peak_rss_megabytes, reset_peak_rss
from seqtransfer.training.inference import EvaluationSet, score_split
from seqtransfer.training.loop import BatchSource, Evaluate, FitResult, ShuffledBatches, dev_evaluation, fit
from seqtransfer.training.memory import check_parser_memory
from seqtransfer.training.precision import resolve_precision
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.tensorboard import TensorBoardLog
from seqtransfer.transfer.adaptations import check_adaptations, chosen_adaptations, parameter_groups
from seqtransfer.transfer.loss_terms import TermContext, loss_terms
from seqtransfer.transfer.masked_lm import load_pretraining_head
from seqtransfer.transfer.schemes import Scheme, get_scheme, scheme_prefixes, set_trainable
from seqtransfer.transfer.weights import copy_shared_label_rows, transfer_weights
from seqtransfer.workflows.checks import check_adapter, check_auxiliary_lm, check_distillation, check_nothing_is_added, check_resumable
from seqtransfer.workflows.resolution import resolve_run
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


def train_phases(
    model: nn.Module,
    scheme: Scheme,
    config: RunConfig,
    train: BatchSource,
    evaluate_dev: Evaluate,
    directory: Path,
    log: Log,
    show_progress: bool,
    recorder: ActivationRecorder | None = None,
    epoch_hooks: tuple = (),
    extra_losses: tuple = (),
    epoch_reports: tuple = (),
) -> FitResult:
    """Run the scheme's phases one after the other, each from the previous phase's best weights
    (with the adaptations of ``transfer.adaptations``, as their registry entries say: the phases
    they train, their epoch hooks, the epochs before early stopping, their layer-group rates)."""
    history: list[dict] = []
    restored_seconds = 0.0
    trained: set[str] = set()
    adaptations = chosen_adaptations(config.transfer)
    phases = scheme.phases(config.transfer)
    for adaptation in adaptations:
        if adaptation.phases:  # chain-thaw: a phase per layer group
            phases = adaptation.phases(model, phases)
    board = TensorBoardLog(directory) if config.train.log_to == "tensorboard" else None
    for phase in phases:
        if board:
            board.start_phase(phase.name, len(history))
        trainable = set_trainable(model, phase.trainable)
        log(f"phase '{phase.name}': {sum(p.numel() for p in model.parameters() if p.requires_grad)} trainable parameters ({len(trainable)} tensors)")
        hooks, train_config = adapted_phase(model, adaptations, set(trainable), config, (*epoch_hooks, *(recorder.start_phase(phase.name) if recorder else ())))
        groups = parameter_groups(model, config.transfer, config.train.learning_rate) if adaptations else None
        reports = (*epoch_reports, board) if board else epoch_reports
        result = fit(model, train, evaluate_dev, train_config, groups, hooks, extra_losses, directory / "checkpoint" / phase.name, log, show_progress, reports)
        if recorder:
            recorder.finish_phase(model, len(result.history))
        model.load_state_dict(result.best_state)
        trained.update(result.updated)
        history += [{"phase": phase.name, **record} for record in result.history]
        restored_seconds += result.restored_seconds
    if board:
        board.close()
    set_trainable(model, ("",))
    trained_parameters = sum(parameter.numel() for name, parameter in model.named_parameters() if name in trained)
    return FitResult(result.best_state, result.best_epoch, result.best_score, history, restored_seconds, trained_parameters)


def adapted_phase(model: nn.Module, adaptations: list, trainable: set[str], config: RunConfig, hooks: tuple) -> tuple[tuple, object]:
    """A phase's epoch hooks and training settings under the adaptations: gradual unfreezing's hook
    (which groups train in each epoch) first, and early stopping waiting until every group has trained."""
    train_config = config.train
    for adaptation in adaptations:
        if adaptation.epoch_hook:
            hooks = (adaptation.epoch_hook(model, trainable), *hooks)
        needed = adaptation.minimum_epochs(model, trainable) if adaptation.minimum_epochs else 0
        if needed > train_config.min_epochs:
            train_config = dataclasses.replace(train_config, min_epochs=needed)
    return hooks, train_config


def evaluation_set(data: TaskData, split: str, vocabularies: Vocabularies) -> EvaluationSet:
    return EvaluationSet(data.encode(split, vocabularies, with_targets=False), data.gold(split))


def score_splits(model, data: TaskData, vocabularies: Vocabularies, config: RunConfig, directory: Path) -> dict:
    """Scores and prediction files for every evaluation split."""
    return {split: score_split(model, data, split, vocabularies, vocabularies.labels, config.train.evaluation_batch_size, directory / "predictions") for split in data.splits if split != "train"}


def train_multitask_run(config: RunConfig, directory: Path, started: float, log: Log, show_progress: bool) -> dict:
    """A hierarchical multi-task model (several tasks and datasets; workflows/multitask.py), after
    refusing what applies to one task only."""
    from seqtransfer.workflows.multitask import train_multitask

    if config.data.select_like:
        raise SeqTransferError("data.select_* (selecting source sentences) applies to one task, not to a multi-task model", hint="drop data.select_like")
    if config.data.anneal_source:
        raise SeqTransferError("data.anneal_source (data annealing) applies to one task, not to a multi-task model", hint="drop data.anneal_source")
    check_adapter(config)
    return train_multitask(config, directory, started, log, show_progress)


def load_logged_task_data(config: RunConfig, splits: tuple[str, ...], log: Log) -> TaskData:
    """The run's data; what reading repaired (and the data's notes) go to the run's log too."""
    with warnings.catch_warnings(record=True) as repairs:
        warnings.simplefilter("always", SeqTransferWarning)
        data = load_task_data(config.data, splits)
    for repair in repairs:
        if issubclass(repair.category, SeqTransferWarning):
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
    fold taggers keep their tags in it as they go)."""
    directory = Path(run_directory)
    if (directory / rundir.METRICS).exists():
        raise SeqTransferError("run directory already holds a finished run", path=directory, hint="choose another --output")
    started = time.perf_counter()
    reset_peak_rss()  # this run's peak, not an earlier run's in the same process (a Ray worker)
    check_values(config)
    seed_everything(config.train.seed, config.train.threads)
    if config.model.tasks:  # a hierarchical multi-task model: several tasks and datasets
        return train_multitask_run(config, directory, started, log, show_progress)
    scheme = get_scheme(config.transfer.scheme)
    source = load_source(config, scheme)
    data = load_logged_task_data(config, SPLITS if scheme.phases(config.transfer) else ("dev", "test"), log)  # nothing trains: no training split needed
    if not scheme.phases(config.transfer):  # nothing trains: the source model as it is
        check_adapter(config)
        check_nothing_is_added(config, scheme)
        return source_as_is(config, directory, data, source, started, log)
    from seqtransfer.workflows.jackknife import jackknife_tags  # its fold taggers train through train_tagger

    vocabularies, matrix, earlier_seconds = resolve_run(config, scheme, data, source, directory, log, jackknife_tags)  # the configuration filled in and frozen
    started -= earlier_seconds  # fold taggers trained by an earlier start of this run count as its time
    model = build_target_model(config, scheme, vocabularies, matrix, source, log)
    check_target_model(config, model, scheme, source is not None, data, vocabularies, log)
    place_on_device(config, model, log)
    check_resumable(directory, config, model)
    with rundir.writer_lock(directory):
        if (directory / rundir.METRICS).exists():  # finished by another process while this one prepared
            raise SeqTransferError("run directory already holds a finished run", path=directory, hint="choose another --output")
        rundir.remove_partial_files(directory)
        if vocabularies.encoder and (directory / rundir.VOCABULARY).is_file():  # resumed: the pair features its first epochs read
            vocabularies.encoder_segments = rundir.read_vocabularies(directory).encoder_segments
        rundir.save_setup(directory, config, vocabularies)
        return fit_and_save(config, directory, data, vocabularies, model, scheme, started, log, show_progress, epoch_reports)


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


def place_on_device(config: RunConfig, model: nn.Module, log: Log) -> None:
    """The model on the run's device, with its precision (one line before anything is written when it cannot apply)."""
    device = resolve_device(config.train.device)
    prepare_device(device)
    model.to(device)
    precision = resolve_precision(config.train.amp, model, device)
    if precision.dtype is not None:
        log(f"precision: {precision.describe()}")


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
        metrics.update(
            trainable_parameters=0, history=[], seconds=round(time.perf_counter() - started, 1), device=describe_device(next(source.model.parameters()).device), peak_rss_megabytes=peak_rss_megabytes()
        )
        rundir.save_weights(directory, source.model.state_dict(), source.model)
        rundir.save_metrics(directory, metrics)
    return metrics


def training_source(config: RunConfig, data: TaskData, train) -> BatchSource:
    """The training set's batches: shuffled, or annealed from source to target (data/annealing.py)."""
    if data.target_count is None:
        return ShuffledBatches(train, config.train.batch_size, config.train.seed, config.train.batching)
    return AnnealedBatches(train, data.target_count, config.train.batch_size, config.train.seed, config.data.anneal_start, config.data.anneal_decay)


def fit_and_save(
    config: RunConfig, directory: Path, data: TaskData, vocabularies: Vocabularies, model: nn.Module, scheme: Scheme, started: float, log: Log, show_progress: bool, epoch_reports: tuple = ()
) -> dict:
    """Train the scheme's phases, score every split, write weights and metrics (metrics last)."""
    train = data.encode("train", vocabularies)
    dev = evaluation_set(data, "dev", vocabularies)
    log(f"training {scheme.name} on {data.dataset}/{data.task}: {len(train.lengths)} sentences, {int(train.lengths.sum())} tokens; {count_parameters(model)} parameters")
    recorder = activation_recorder(config.train.record_activations, directory, data.tokens("dev"), dev.encoded)
    device = next(model.parameters()).device
    log(f"device: {describe_device(device)}")
    with memory_errors_as_one_line(config.train.batch_size, "while training"):
        evaluate_dev = dev_evaluation(dev, vocabularies.labels, data.metric, config.train.evaluation_batch_size)
        extra_losses = loss_terms(TermContext(config, model, scheme, data, vocabularies, train.word_ids, log))
        result = train_phases(
            model, scheme, config, training_source(config, data, train), evaluate_dev, directory, log, show_progress, recorder, extra_losses=extra_losses, epoch_reports=epoch_reports
        )
    if recorder:
        recorder.record_final(model, result.best_epoch)
    metrics = {
        "dataset": data.dataset,
        "task": data.task,
        "metric": data.metric,
        "scheme": scheme.name,
        "best_epoch": result.best_epoch,
        **rundir.source_weights(config.transfer.source if scheme.uses_source else None),
        **rundir.encoder_weights(config.model),
    }
    with memory_errors_as_one_line(config.train.evaluation_batch_size, "while scoring dev and test"):
        metrics.update(score_splits(model, data, vocabularies, config, directory))
    # Epochs restored from a checkpoint ran in an earlier process: count their time too.
    seconds = time.perf_counter() - started + result.restored_seconds
    metrics.update(size_metrics(model, config.model))  # a frozen encoder's features come from outside the model: its weights count too
    metrics.update(trainable_parameters=result.trained_parameters, history=result.history, seconds=round(seconds, 1), device=describe_device(device), peak_rss_megabytes=peak_rss_megabytes())
    if peak_memory_megabytes(device) is not None:
        metrics["gpu_peak_megabytes"] = peak_memory_megabytes(device)
    rundir.save_weights(directory, result.best_state, model)
    rundir.save_metrics(directory, metrics)
    shutil.rmtree(directory / "checkpoint", ignore_errors=True)
    return metrics
