"""How a multi-task model trains: batches of several training sets, one set per batch
(``TaskSchedule``), and each task's loss weight per epoch (MuTSPad paper, section 4.1)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import torch
from torch import nn

from seqtransfer.config import MultiTaskConfig, RunConfig
from seqtransfer.data.batching import Batch, EncodedSentences, training_batches
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.multitask import task_levels


class TaskSchedule:
    """Batches of several training sets, one set per batch (a ``BatchSource`` of the training loop)."""

    mean_batch_loss = False

    def __init__(self, streams: list[EncodedSentences], batch_size: int, seed: int, sampling: str) -> None:
        self.streams, self.batch_size, self.seed, self.sampling = streams, batch_size, seed, sampling
        self.counts = [-(-len(stream.lengths) // batch_size) for stream in streams]
        self.sentence_count = sum(len(stream.lengths) for stream in streams)
        self.batch_count = sum(self.counts)

    def order(self, epoch: int) -> list[int]:
        """The stream of each batch of the epoch, in order."""
        left = list(self.counts)
        if self.sampling == "proportional":
            generator = np.random.default_rng([self.seed, epoch, len(self.streams)])
            order = []
            while sum(left):
                stream = int(generator.choice(len(left), p=np.array(left) / sum(left)))
                order.append(stream)
                left[stream] -= 1
            return order
        order = []
        while sum(left):  # round robin, low -> high; a used-up set drops out
            for stream, remaining in enumerate(left):
                if remaining:
                    order.append(stream)
                    left[stream] -= 1
        return order

    def batches(self, epoch: int) -> Iterator[Batch]:
        iterators = [training_batches(stream, self.batch_size, np.random.default_rng([self.seed, epoch, number])) for number, stream in enumerate(self.streams)]
        for stream in self.order(epoch):
            yield next(iterators[stream])


def initial_weights(config: RunConfig) -> dict[str, float]:
    """First-epoch loss weight per task: ``multitask.loss_weights`` or 2^-level."""
    levels = task_levels(config.model.tasks)
    given = config.multitask.loss_weights or {}
    unknown = [task for task in given if task not in levels]
    if unknown:
        raise SeqTransferError(f"multitask.loss_weights names unknown task '{unknown[0]}'", hint=f"the tasks are: {', '.join(levels)}")
    return {task: float(given.get(task, 2.0**-level)) for task, level in levels.items()}


def geometric_weight(initial: float, epoch: int, config: MultiTaskConfig) -> float:
    """min(1, alpha * growth^(epoch - 1)) (MuTSPad paper, section 4.1)."""
    return min(1.0, initial * config.weight_growth ** (epoch - 1))


def linear_weight(initial: float, epoch: int, config: MultiTaskConfig) -> float:
    """alpha, then equal steps up to 1 at epoch ``weight_ramp_epochs``."""
    ramp = config.weight_ramp_epochs
    return 1.0 if ramp <= 1 else min(1.0, initial + (1.0 - initial) * (epoch - 1) / (ramp - 1))


def constant_weight(initial: float, epoch: int, config: MultiTaskConfig) -> float:
    """alpha at every epoch."""
    return initial


WEIGHT_SCHEDULES: dict[str, Callable[[float, int, MultiTaskConfig], float]] = {"geometric": geometric_weight, "linear": linear_weight, "constant": constant_weight}


def loss_weight_hook(initial: dict[str, float], config: MultiTaskConfig) -> Callable:
    """Epoch hook: each task's loss weight at this epoch (``multitask.weight_schedule``)."""
    schedule = WEIGHT_SCHEDULES[config.weight_schedule]

    def set_weights(epoch: int, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        model.loss_weights = {task: schedule(weight, epoch, config) for task, weight in initial.items()}

    return set_weights
