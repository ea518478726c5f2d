"""The one run path of every trained model (issue 49, point 3): prepare -> resolve -> build -> fit ->
score -> save, for a model of one task and for a hierarchical multi-task model alike.

What differs between them is a *run kind* (``RunKind``): ``workflows/train.py`` ``OneTaskRun`` (one
dataset and task, from scratch or by transfer) and ``workflows/multitask.py`` ``MultitaskRun``
(several tasks and datasets). A kind reads its data and source, resolves and freezes the
configuration, builds the model, says how its phases are fitted and how its splits are scored.
Everything else happens here, once: the device and precision, the check that a checkpoint in the
run directory can be resumed, the writer lock, the "already finished" check, the setup files, the
scheme's phases (``train_phases``, the one training loop under each phase's trainable layers and the
transfer adaptations), the cost figures, and the weights and ``metrics.json`` (metrics last: a run
directory with metrics is finished). Self-labelling, jackknifed input tags and the experiment runner
train through ``train_tagger``, and so through this path.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from torch import nn

from seqtransfer import rundir
from seqtransfer.config import RunConfig
from seqtransfer.data.vocabulary import Vocabularies
from seqtransfer.device import describe_device, memory_errors_as_one_line, peak_memory_megabytes, resolve_device
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.tagger import size_metrics
from seqtransfer.resources import peak_rss_megabytes
from seqtransfer.training.activations import ActivationRecorder
from seqtransfer.training.loop import BatchSource, Evaluate, FitResult, fit
from seqtransfer.training.placement import place_for_training
from seqtransfer.training.precision import resolve_precision
from seqtransfer.training.tensorboard import TensorBoardLog
from seqtransfer.transfer.adaptations import chosen_adaptations, parameter_groups, with_head_rate, with_own_rate
from seqtransfer.transfer.schemes import RANDOM_BRANCH, Scheme, set_trainable
from seqtransfer.workflows.checks import check_resumable

Log = Callable[[str], None]


class RunKind(Protocol):
    """What the run path asks of a kind of run (one task, several tasks)."""

    config: RunConfig
    scheme: Scheme
    vocabularies: Vocabularies  # set by build()
    earlier_seconds: float  # time an earlier start of this run spent on work kept in its directory

    def build(self, directory: Path, log: Log) -> nn.Module:
        """Resolve and freeze the configuration, then build the model from it (on the CPU)."""

    def on_device(self, model: nn.Module, log: Log) -> None:
        """What needs the model on its device (penalties that keep the source's weights beside it)."""

    def before_setup(self, directory: Path) -> None:
        """Under the writer lock, before the setup files are written (what a resumed run keeps)."""

    def fit(self, model: nn.Module, directory: Path, log: Log, show_progress: bool) -> FitResult:
        """Train the scheme's phases (``train_phases``); the model ends with the best weights."""

    def identity(self) -> dict:
        """``dataset``, ``task`` and ``metric`` of ``metrics.json``."""

    def scores(self, model: nn.Module, directory: Path, result: FitResult) -> dict:
        """Every evaluation split's scores (and prediction files) of the trained model."""


def refuse_finished(directory: Path) -> None:
    if (directory / rundir.METRICS).exists():
        raise SeqTransferError("run directory already holds a finished run", path=directory, hint="choose another --output")


def place_on_device(config: RunConfig, model: nn.Module, log: Log) -> None:
    """The model on the run's device, with its precision (one line before anything is written when it cannot apply)."""
    device = resolve_device(config.train.device)
    place_for_training(model, device)
    precision = resolve_precision(config.train.amp, model, device)
    if precision.dtype is not None:
        log(f"precision: {precision.describe()}")


def run(kind: RunKind, directory: Path, started: float, log: Log, show_progress: bool) -> dict:
    """Build the kind's model, train it, score it and write its run directory; its metrics."""
    config = kind.config
    model = kind.build(directory, log)
    started -= kind.earlier_seconds  # fold taggers trained by an earlier start of this run count as its time
    place_on_device(config, model, log)
    kind.on_device(model, log)
    check_resumable(directory, config, model)
    with rundir.writer_lock(directory):
        refuse_finished(directory)  # finished by another process while this one prepared
        rundir.remove_partial_files(directory)
        kind.before_setup(directory)
        rundir.save_setup(directory, config, kind.vocabularies)
        with memory_errors_as_one_line(config.train.batch_size, "while training"):
            result = kind.fit(model, directory, log, show_progress)
        with memory_errors_as_one_line(config.train.evaluation_batch_size, "while scoring dev and test"):
            scores = kind.scores(model, directory, result)
        # Epochs restored from a checkpoint ran in an earlier process: count their time too.
        metrics = run_metrics(kind, model, result, scores, time.perf_counter() - started + result.restored_seconds)
        rundir.save_weights(directory, result.best_state, model)
        rundir.save_metrics(directory, metrics)
        shutil.rmtree(directory / "checkpoint", ignore_errors=True)
    return metrics


def run_metrics(kind: RunKind, model: nn.Module, result: FitResult, scores: dict, seconds: float) -> dict:
    """What ``metrics.json`` holds: what was trained, its scores, its size and its cost."""
    config = kind.config
    device = next(model.parameters()).device
    metrics = {
        **kind.identity(),
        "scheme": kind.scheme.name,
        "best_epoch": result.best_epoch,
        **rundir.source_weights(config.transfer.source if kind.scheme.uses_source else None),
        **rundir.encoder_weights(config.model),
        **scores,
        **size_metrics(model, config.model),  # a frozen encoder's features come from outside the model: its weights count too
        "trainable_parameters": result.trained_parameters,
        "history": result.history,
        "seconds": round(seconds, 1),
        "device": describe_device(device),
        "peak_rss_megabytes": peak_rss_megabytes(),
    }
    if peak_memory_megabytes(device) is not None:
        metrics["gpu_peak_megabytes"] = peak_memory_megabytes(device)
    return metrics


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
        groups = optimizer_groups(model, config, adaptations)
        reports = (*(numbered_across_phases(report, len(history)) for report in epoch_reports), *((board,) if board else ()))
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


def optimizer_groups(model: nn.Module, config: RunConfig, adaptations: list) -> list[dict] | None:
    """The optimizer's parameter groups: the adaptations' layer-group rates, a fine-tuned encoder's
    parser head at its own rate, PretRand's random branch at its own; None: one group at the run's rate."""
    rate = config.train.learning_rate
    groups = parameter_groups(model, config.transfer, rate) if adaptations else None
    if config.train.head_learning_rate:
        groups = with_head_rate(model, groups, rate, config.train.head_learning_rate)
    if config.transfer.random_branch_learning_rate:
        random_branch = {name for name, _ in model.named_parameters() if name.startswith(RANDOM_BRANCH)}
        groups = with_own_rate(model, groups, rate, random_branch, config.transfer.random_branch_learning_rate, "random branch")
    return groups


def numbered_across_phases(report, epochs_before: int):
    """An epoch report that also gets the run's epoch count across its phases (``"step"``): a
    scheme of several phases (chain-thaw's) numbers each phase's epochs from 1, a tuning service
    needs one count that only grows."""
    return lambda record: report({**record, "step": epochs_before + record["epoch"]})


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
