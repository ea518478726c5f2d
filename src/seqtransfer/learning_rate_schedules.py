"""Learning-rate schedules: each parameter group's rate at each training step, from its base rate.

    inverse_time    lr / (1 + decay * (epoch - 1)), per epoch (``train.learning_rate_decay``; 0 = constant:
                    the PretRand paper's SGD, NCRF++ uses 0.05)
    linear_warmup   linear warm-up over the first ``train.warmup`` share of all steps
                    (``max_epochs`` epochs), then linear decay to 0 at the last step (BERT fine-tuning)
    slanted_triangular  ULMFiT's: up for the first ``train.warmup`` share (cut_frac), then down;
                    from lr/32 to lr and back to lr/32 (ratio 32, Howard & Ruder 2018, eq. 3)
    cosine          cosine annealing from lr to 0 over all steps (Loshchilov & Hutter 2017): the "Cos"
                    of the ULMFiT comparison, in STLR's place

A schedule is a function of the step alone, so a resumed run continues it exactly. It reads the
train section only, so the schedules lie in the configuration's layer: the configuration check
(``config_values.schedule_names``) reads their registry, a schedule registered at run time
included, and the training loop (``training/loop.py``) applies them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from seqtransfer.config_sections import TrainConfig
from seqtransfer.errors import SeqTransferError


@dataclass(frozen=True)
class Position:
    """Where training is: epoch (1-based), step within the epoch (0-based), steps per epoch."""

    epoch: int
    step: int
    steps_per_epoch: int


def inverse_time(base: float, position: Position, config: TrainConfig) -> float:
    return base / (1.0 + config.learning_rate_decay * (position.epoch - 1))  # the expression of earlier versions: the same rates to the bit


def linear_warmup(base: float, position: Position, config: TrainConfig) -> float:
    return base * warmup_factor(position, config)


def warmup_factor(position: Position, config: TrainConfig) -> float:
    total = max(config.max_epochs * position.steps_per_epoch, 1)
    done = (position.epoch - 1) * position.steps_per_epoch + position.step + 1
    warmup = max(int(config.warmup * total), 1)
    if done <= warmup:
        return done / warmup
    return max(0.0, (total - done) / max(total - warmup, 1))


SLANTED_RATIO = 32


def slanted_triangular(base: float, position: Position, config: TrainConfig) -> float:
    total = max(config.max_epochs * position.steps_per_epoch, 1)
    step = (position.epoch - 1) * position.steps_per_epoch + position.step  # t, from 0
    if not config.warmup:  # no warm-up: the top at the first step, then down to lr/ratio at the last
        proportion = 1 - step / max(total - 1, 1)
    else:
        cut = max(int(total * config.warmup), 1)
        proportion = step / cut if step < cut else 1 - (step - cut) / max(cut * (1 / config.warmup - 1), 1)
    return base * (1 + max(proportion, 0.0) * (SLANTED_RATIO - 1)) / SLANTED_RATIO


def cosine(base: float, position: Position, config: TrainConfig) -> float:
    total = max(config.max_epochs * position.steps_per_epoch, 1)
    step = (position.epoch - 1) * position.steps_per_epoch + position.step
    return base * 0.5 * (1 + math.cos(math.pi * min(step / total, 1.0)))


SCHEDULES: dict[str, Callable[[float, Position, TrainConfig], float]] = {"inverse_time": inverse_time, "linear_warmup": linear_warmup, "slanted_triangular": slanted_triangular, "cosine": cosine}


def get_schedule(name: str) -> Callable[[float, Position, TrainConfig], float]:
    if name not in SCHEDULES:
        raise SeqTransferError(f"unknown learning-rate schedule '{name}'", hint=f"use train.schedule={' or '.join(SCHEDULES)}")
    return SCHEDULES[name]
