"""The one training loop: an optimizer of ``optimizers.py``, per-epoch learning-rate decay, early stopping.

Every transfer scheme uses this loop. A scheme only changes which parameters train and at what
learning rate (``parameter_groups``) and, where needed, what happens at the start of an epoch
(``epoch_hooks``, e.g. unfreezing a layer).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from seqtransfer.config import TrainConfig
from seqtransfer.data.batching import Batch, EncodedSentences, training_batches
from seqtransfer.data.vocabulary import Vocabulary
from seqtransfer.errors import SeqTransferError
from seqtransfer.learning_rate_schedules import Position, get_schedule
from seqtransfer.threads import CoreShare, thread_dependent_module
from seqtransfer.training import checkpoint
from seqtransfer.training.inference import EvaluationSet, model_device, score
from seqtransfer.training.optimizer import LazyMomentumSGD, clip_gradient_norm
from seqtransfer.training.optimizers import make_optimizer
from seqtransfer.training.precision import Precision, resolve_precision
from seqtransfer.training.progress import EpochProgress, MidEpochCheckpoints

EpochHook = Callable[[int, nn.Module, torch.optim.Optimizer], None]


@dataclass
class FitResult:
    """What training produced: the best weights, when they were reached, the epoch history."""

    best_state: dict[str, torch.Tensor]
    best_epoch: int
    best_score: float
    history: list[dict] = field(default_factory=list)
    restored_seconds: float = 0.0  # time of the epochs restored from a checkpoint (run by an earlier process)
    trained_parameters: int = 0  # parameters that trained in at least one phase
    updated: frozenset[str] = frozenset()  # names of the parameters the optimizer stepped (``updated_names``)


def set_learning_rates(optimizer: torch.optim.Optimizer, schedule, position: Position, config: TrainConfig) -> None:
    """Every parameter group's rate at this step, from its base rate."""
    for group in optimizer.param_groups:
        group["lr"] = schedule(group["base_lr"], position, config)


class BatchSource(Protocol):
    """What one training epoch reads: ``batches(epoch)`` in a seeded order."""

    sentence_count: int
    batch_count: int
    mean_batch_loss: bool  # the model's loss of a batch is already a mean (the LMs': per word), not a sum over its sentences

    def batches(self, epoch: int) -> Iterator[Batch]: ...


class ShuffledBatches:
    """One training set's batches (``batching``: see ``training_batches``), shuffled per epoch by (seed, epoch)."""

    mean_batch_loss = False

    def __init__(self, data: EncodedSentences, batch_size: int, seed: int, batching: str = "tokens") -> None:
        self.data, self.batch_size, self.seed, self.batching = data, batch_size, seed, batching
        self.sentence_count = len(data.lengths)
        self.batch_count = -(-self.sentence_count // batch_size)

    def batches(self, epoch: int) -> Iterator[Batch]:
        return training_batches(self.data, self.batch_size, np.random.default_rng([self.seed, epoch]), batching=self.batching)


# A loss term added to the model's (adversarial domain loss, penalties). A term with a
# ``start_epoch(epoch)`` method is told each epoch's number before its first batch (the domain
# loss draws that epoch's target batches); one with an ``epoch_summary()`` method (-> {name:
# number}) adds those numbers to each epoch's record and log line.
ExtraLoss = Callable[[nn.Module, Batch], torch.Tensor]


def epoch_settings(model: nn.Module, optimizer: torch.optim.Optimizer, config: TrainConfig) -> tuple[list[nn.Parameter], torch.device, Precision, torch.amp.GradScaler | None, Callable]:
    """What every batch of an epoch reads, looked up once: (the optimizer's parameters, the model's
    device, its precision, that precision's gradient scaler or None, the learning-rate schedule)."""
    parameters = [parameter for group in optimizer.param_groups for parameter in group["params"]]
    device = model_device(model)
    precision = resolve_precision(config.amp, model, device)
    return parameters, device, precision, precision.scaler(), get_schedule(config.schedule or "inverse_time")


def backward_and_step(total: torch.Tensor, optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler | None, parameters: list[nn.Parameter], gradient_clip: float) -> None:
    """Back-propagate one batch's loss, clip the gradients and step the optimizer (through ``scaler`` under fp16)."""
    (scaler.scale(total) if scaler else total).backward()
    if scaler:
        scaler.unscale_(optimizer)  # clip the true gradients
    if gradient_clip > 0:
        clip_gradient_norm(parameters, gradient_clip)
    if scaler:
        scaler.step(optimizer)  # skipped when the fp16 gradients overflowed
        scaler.update()
    else:
        optimizer.step()


def divergence_error(value: float, step: int, epoch: int, config: TrainConfig) -> SeqTransferError:
    """The one-line error of a loss that became infinite or NaN at batch ``step`` (from 0) of ``epoch``."""
    clipping = f"train.gradient_clip (now {config.gradient_clip})" if config.gradient_clip > 0 else "turn on train.gradient_clip (e.g. 5)"
    return SeqTransferError(f"the training loss became {value} at batch {step + 1} of epoch {epoch}: training diverged", hint=f"lower train.learning_rate (now {config.learning_rate}) or {clipping}")


class LossTotal:
    """The epoch's summed training loss, and the check that every batch's loss is finite.

    On a CPU each batch's loss is read when the batch ends. On another device a read makes the host
    wait until the device has run every queued kernel, so the host could not queue the next batch
    while this one runs; there the losses stay on the device and are read together every
    ``read_every`` batches and at the end (the sum is the same, in the same order). A loss that is
    not finite raises ``divergence_error`` naming its own batch either way.
    """

    def __init__(self, device: torch.device, config: TrainConfig, epoch: int, read_every: int | None = None, total: float = 0.0) -> None:
        self.read_every = read_every or (1 if device.type == "cpu" else 25)
        self.config, self.epoch = config, epoch
        self.pending: list[tuple[int, torch.Tensor]] = []
        self.total = total  # a resumed epoch's: the batches done before

    def add(self, loss: torch.Tensor, step: int) -> None:
        self.pending.append((step, loss.detach()))
        if len(self.pending) >= self.read_every:
            self.read()

    def read(self) -> float:
        """The sum so far (reading what waits on the device)."""
        if self.pending:
            values = torch.stack([loss for _, loss in self.pending]).tolist() if len(self.pending) > 1 else [self.pending[0][1].item()]
            for (step, _), value in zip(self.pending, values):
                if not math.isfinite(value):
                    raise divergence_error(value, step, self.epoch, self.config)
                self.total += value
            self.pending = []
        return self.total


def check_something_trained(skipped: int, batch_count: int, epoch: int) -> None:
    """Refuse an epoch whose every batch was skipped because nothing it reads trains."""
    if skipped and skipped == batch_count:
        raise SeqTransferError(f"nothing trains in epoch {epoch}: no batch reaches a trainable weight", hint="check the scheme's phases and transfer.adaptations (what is frozen)")


def train_epoch(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    source: BatchSource,
    config: TrainConfig,
    epoch: int,
    show_progress: bool,
    extra_losses: Sequence[ExtraLoss] = (),
    cores: CoreShare | None = None,
    checkpoints: MidEpochCheckpoints | None = None,
) -> float:
    """One pass over the training batches; returns the model's loss without extra terms: the mean per
    sentence, or the mean per batch where a batch's loss is already a mean (``source.mean_batch_loss``).
    ``cores``: the run's threads, adjusted between batches to the free cores.
    ``checkpoints``: where a resumed epoch starts, and checkpoints inside the epoch (progress.py)."""
    model.train()
    parameters, device, precision, scaler, schedule = epoch_settings(model, optimizer, config)
    for term in extra_losses:
        if hasattr(term, "start_epoch"):
            term.start_epoch(epoch)
    progress = checkpoints.start(epoch) if checkpoints else EpochProgress(epoch)
    if scaler and progress.scaler:
        scaler.load_state_dict(progress.scaler)
    losses, skipped, started = LossTotal(device, config, epoch, total=progress.loss), progress.skipped, time.perf_counter()
    batches = islice(source.batches(epoch), progress.batches, None)  # the seeded order; a resumed epoch skips the batches done
    # Embedding rows are brought up to date as batches read them, and all of them at the end.
    with optimizer.track_rows(model) if isinstance(optimizer, LazyMomentumSGD) else nullcontext():
        for step, batch in enumerate(
            tqdm(batches, initial=progress.batches, total=source.batch_count, desc=f"epoch {epoch}", leave=False, disable=not show_progress, unit="batch"), start=progress.batches
        ):
            if cores:
                cores.tick()
            if checkpoints and step > progress.batches and checkpoints.due():
                seconds = progress.seconds + time.perf_counter() - started
                checkpoints.save(EpochProgress(epoch, step, losses.read(), skipped, seconds, scaler.state_dict() if scaler else None))
            set_learning_rates(optimizer, schedule, Position(epoch, step, source.batch_count), config)
            optimizer.zero_grad(set_to_none=True)
            batch = batch.to(device)
            with precision.autocast():
                loss = model.loss(batch)
                total = loss + sum(term(model, batch) for term in extra_losses) if extra_losses else loss
            if not total.requires_grad:  # nothing this batch reads trains yet (a multi-task model's lower levels, gradually unfrozen)
                losses.add(loss, step)
                skipped += 1
                continue
            backward_and_step(total, optimizer, scaler, parameters, config.gradient_clip)
            losses.add(loss, step)
    check_something_trained(skipped, source.batch_count, epoch)
    return losses.read() / max(source.batch_count if source.mean_batch_loss else source.sentence_count, 1)


# Scores a model on dev: (the score early stopping watches, per-task scores of a multi-task model or {}).
Evaluate = Callable[[nn.Module], tuple[float, dict]]


def dev_evaluation(dev: EvaluationSet, labels: Vocabulary, metric: str, batch_size: int) -> Evaluate:
    """The dev score of a single-task model."""
    return lambda model: (score(model, dev, labels, metric, batch_size)[0], {})


def start_training(model: nn.Module, parameter_groups: Sequence[dict] | None, config: TrainConfig, checkpoint_dir: Path | None) -> tuple[torch.optim.Optimizer, checkpoint.TrainingState]:
    """(the optimizer, the training state): resumed from ``checkpoint_dir`` when it holds one, else fresh."""
    groups = parameter_groups or [{"params": [parameter for parameter in model.parameters() if parameter.requires_grad]}]
    optimizer = make_optimizer(groups, config)
    state = checkpoint.resume(checkpoint_dir, model, optimizer) if checkpoint_dir else None
    return optimizer, state or checkpoint.TrainingState(best_state=checkpoint.copy_state(model))


def shown_score(score: float, describe_dev: Callable[[float], str] | None) -> str:
    """How the log shows a dev score: ``describe_dev``'s words, or ``dev 71.50``."""
    return describe_dev(score) if describe_dev else f"dev {score:6.2f}"


def resumption_line(state: checkpoint.TrainingState, describe_dev: Callable[[float], str] | None) -> str:
    """The log line of a resumed run: after which epoch, and the best dev score so far."""
    where = f"in epoch {state.progress.epoch} after batch {state.progress.batches}" if state.progress else f"after epoch {state.epoch}"
    if not state.epoch:
        return f"resuming {where}"
    best = describe_dev(state.best_score).strip() if describe_dev else f"dev {state.best_score:.2f}"
    return f"resuming {where} (best {best} at epoch {state.best_epoch})"


def keep_if_best(state: checkpoint.TrainingState, model: nn.Module, epoch: int, dev_score: float) -> bool:
    """Whether the epoch's dev score is the best so far (or the first); if so its weights become the state's best."""
    improved = dev_score > state.best_score or state.best_epoch == 0
    if improved:
        state.best_score, state.best_epoch, state.best_state = dev_score, epoch, checkpoint.copy_state(model)
    return improved


def fit(
    model: nn.Module,
    train: BatchSource,
    evaluate_dev: Evaluate,
    config: TrainConfig,
    parameter_groups: Sequence[dict] | None = None,
    epoch_hooks: Sequence[EpochHook] = (),
    extra_losses: Sequence[ExtraLoss] = (),
    checkpoint_dir: Path | None = None,
    log: Callable[[str], None] = print,
    show_progress: bool = True,
    epoch_reports: Sequence[Callable[[dict], None]] = (),
    describe_dev: Callable[[float], str] | None = None,
) -> FitResult:
    """Train until the dev score has not improved for ``config.patience`` epochs (and at least
    ``config.min_epochs`` epochs); each epoch's
    record (epoch, loss, dev, seconds) goes to every ``epoch_reports`` callable (a tuning service);
    a resumed run first gives them its earlier epochs' records, marked ``"restored": True``.
    ``describe_dev``: how the log shows a dev score (an LM's: its held-out perplexity; default ``dev 71.50``)."""
    optimizer, state = start_training(model, parameter_groups, config, checkpoint_dir)
    cores = shared_cores(model, config, log)
    restored_seconds = sum(record.get("epoch_seconds", 0.0) for record in state.history) + (state.progress.seconds if state.progress else 0.0)
    if state.epoch or state.progress:
        log(resumption_line(state, describe_dev))
    for record in state.history:  # a resumed run's earlier epochs, marked: a tuning service needs every epoch, a log only the new ones
        for report in epoch_reports:
            report({**record, "restored": True})
    checkpoints = MidEpochCheckpoints(checkpoint_dir, model, optimizer, state, config.checkpoint_minutes, extra_losses, log)
    while state.epoch < config.max_epochs and (state.epoch < config.min_epochs or state.epoch - state.best_epoch < config.patience):
        epoch = state.epoch + 1
        for hook in epoch_hooks:
            hook(epoch, model, optimizer)
        resumed = checkpoints.resumed_in(epoch)  # the epoch's part an earlier process trained counts in its seconds
        started = time.perf_counter() - (resumed.seconds if resumed else 0.0)
        loss = train_epoch(model, optimizer, train, config, epoch, show_progress, extra_losses, cores, checkpoints)
        train_seconds = time.perf_counter() - started
        summaries = {name: value for term in extra_losses if hasattr(term, "epoch_summary") for name, value in term.epoch_summary().items()}
        dev_score, task_scores = evaluate_dev(model)
        improved = keep_if_best(state, model, epoch, dev_score)
        state.epoch = epoch
        epoch_seconds = time.perf_counter() - started  # training + dev scoring
        record = epoch_record(epoch, loss, dev_score, task_scores, summaries, train_seconds, epoch_seconds)
        record.update(epoch_end_settings(optimizer, cores))
        state.history.append(record)
        log(epoch_line(epoch, loss, shown_score(dev_score, describe_dev), improved, train_seconds, task_scores, summaries))
        if checkpoint_dir:
            checkpoint.save(checkpoint_dir, model, optimizer, state)
        for report in epoch_reports:
            report(record)
    return FitResult(state.best_state, state.best_epoch, state.best_score, state.history, restored_seconds, updated=updated_names(model, optimizer))


def shared_cores(model: nn.Module, config: TrainConfig, log: Callable[[str], None]) -> CoreShare:
    """The run's threads: shared with other programs (``train.share_cores``) only where the thread
    count cannot change its numbers (:func:`~seqtransfer.threads.thread_dependent_module`)."""
    dependent = thread_dependent_module(model) if config.share_cores else None
    cores = CoreShare(config.threads, config.share_cores and dependent is None)
    if dependent and cores.granted > 1:
        reason = f"this model's {dependent} sums its gradients in an order that depends on the thread count"
        log(f"threads stay at {cores.granted} while other programs run: {reason} (on a busy machine use train.threads=1)")
    return cores


def epoch_record(epoch: int, loss: float, dev_score: float, task_scores: dict, summaries: dict, train_seconds: float, epoch_seconds: float) -> dict:
    """One epoch of the run's history (``metrics.json``), as a tuning service is told it."""
    record = {"epoch": epoch, "loss": round(loss, 4), "dev": round(dev_score, 2), "train_seconds": round(train_seconds, 2), "epoch_seconds": round(epoch_seconds, 4)}
    if task_scores:
        record["dev_tasks"] = {task: round(value, 2) for task, value in task_scores.items()}
    record.update(summaries)
    return record


def epoch_end_settings(optimizer: torch.optim.Optimizer, cores: CoreShare) -> dict:
    """The learning rates at an epoch's end, per parameter group, and the threads where they stay
    fixed (for a model whose numbers hang on them, the run's numbers are those of this count)."""
    settings = {"learning_rates": [float(f"{group['lr']:.6g}") for group in optimizer.param_groups]}
    if not cores.adapt:
        settings["threads"] = cores.threads
    return settings


def epoch_line(epoch: int, loss: float, shown_dev: str, improved: bool, train_seconds: float, task_scores: dict, summaries: dict) -> str:
    """The log line of one epoch: loss, dev score (* when best so far), training seconds, per-task and extra-term figures."""
    tasks = "".join(f"  {task} {value:6.2f}" for task, value in task_scores.items())
    extras = "".join(f"  {name.replace('_', ' ')} {value:.2f}" for name, value in summaries.items())
    return f"epoch {epoch:3d}  loss {loss:8.3f}  {shown_dev}{' *' if improved else '  '}  {train_seconds:5.1f}s{tasks}{extras}"


def updated_names(model: nn.Module, optimizer: torch.optim.Optimizer) -> frozenset[str]:
    """The names of the parameters ``optimizer`` has stepped (a resumed run's earlier epochs included).

    Adam and momentum SGD keep state for a parameter from its first gradient on, so a table the
    forward pass never reads (the word and character tables of a model reading an encoder's features
    alone, the unread side of a co-training view) does not count. SGD without momentum keeps no
    state: then every parameter that may train counts.
    """
    held = {id(parameter) for group in optimizer.param_groups for parameter in group["params"]}
    parameters = [(name, parameter) for name, parameter in model.named_parameters() if id(parameter) in held]
    stepped = frozenset(name for name, parameter in parameters if optimizer.state.get(parameter))
    return stepped or frozenset(name for name, parameter in parameters if parameter.requires_grad)
