"""Checkpoints inside an epoch (``train.checkpoint_minutes``), so that a killed run loses minutes, not an epoch.

An epoch of the large tweet LM takes 50 minutes on this CPU: a run killed at its batch 465 of 542
resumed from the epoch's start and trained those 465 batches again. With checkpoints every
``checkpoint_minutes`` of an epoch, the run's checkpoint (``checkpoint.py``) also says how far the
epoch in progress got (``EpochProgress``); a resumed run restores the weights, the optimizer and the
random state of that moment, reads the epoch's batches in the same seeded order, skips the ones
done, and goes on: it trains the same weights as a run never stopped (``tests/test_mid_epoch.py``).

Not inside an epoch (only at its end, as before) where that moment cannot be restored exactly:
lazy momentum SGD (the BiLSTM taggers: embedding rows updated late, epochs of seconds) and loss
terms with a state of their own per epoch (the adversarial domain loss draws an epoch's target
batches at its start).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from seqtransfer.training import checkpoint
from seqtransfer.training.checkpoint import EpochProgress
from seqtransfer.training.optimizer import LazyMomentumSGD


def why_only_at_epoch_ends(optimizer: torch.optim.Optimizer, extra_losses: Sequence) -> str | None:
    """Why a run cannot checkpoint inside an epoch (None: it can)."""
    if isinstance(optimizer, LazyMomentumSGD):
        return "lazy momentum SGD brings embedding rows up to date late"
    if any(hasattr(term, "start_epoch") or hasattr(term, "epoch_summary") for term in extra_losses):
        return "a loss term keeps a state of its own per epoch"
    return None


class MidEpochCheckpoints:
    """Saves the run's checkpoint, with the epoch's progress, every ``minutes`` of an epoch; and hands
    a resumed run the progress it restored, once. A run that cannot checkpoint inside an epoch says
    why in ``log``, once, when an epoch of it outlasts ``minutes``."""

    def __init__(self, directory: Path | None, model: nn.Module, optimizer: torch.optim.Optimizer, state: checkpoint.TrainingState, minutes: float, extra_losses: Sequence = (), log=print) -> None:
        self.directory, self.model, self.optimizer, self.state, self.log = directory, model, optimizer, state, log
        self.interval = minutes * 60.0
        self.reason = why_only_at_epoch_ends(optimizer, extra_losses) if directory is not None and minutes > 0 else None
        self.enabled = directory is not None and minutes > 0 and self.reason is None
        self.resumed, state.progress = state.progress, None
        self.last_saved = time.perf_counter()

    def resumed_in(self, epoch: int) -> EpochProgress | None:
        """The progress restored for epoch ``epoch``, if the run resumed inside it."""
        return self.resumed if self.resumed is not None and self.resumed.epoch == epoch else None

    def start(self, epoch: int) -> EpochProgress:
        """Where epoch ``epoch`` starts: the progress restored for it, else its first batch."""
        resumed, self.resumed = self.resumed_in(epoch), None
        self.last_saved = time.perf_counter()
        return resumed or EpochProgress(epoch)

    def due(self) -> bool:
        """Whether a checkpoint is due before the next batch."""
        if time.perf_counter() - self.last_saved < self.interval:
            return False
        if self.reason:
            self.log(f"note: this epoch outlasts train.checkpoint_minutes, and the run checkpoints at epoch ends only: {self.reason}")
            self.reason = None
        return self.enabled

    def save(self, progress: EpochProgress) -> None:
        """The checkpoint of this moment: the weights, optimizer and random state with ``progress``."""
        self.state.progress = progress
        try:
            checkpoint.save(self.directory, self.model, self.optimizer, self.state)
        finally:
            self.state.progress = None
        self.last_saved = time.perf_counter()
