"""A model put on the device it trains on, as every run does it (``workflows/run_path.py``) and the
benchmarks that time a run's step must do it too."""

from __future__ import annotations

import torch
from torch import nn

from seqtransfer.device import prepare_device
from seqtransfer.training.optimizer import dense_gradients_off_the_cpu


def place_for_training(model: nn.Module, device: torch.device) -> None:
    """The device prepared (cuBLAS's workspace, for deterministic runs), the model moved to it, and
    off the CPU its embedding tables given dense gradients (``dense_gradients_off_the_cpu``)."""
    prepare_device(device)
    model.to(device)
    dense_gradients_off_the_cpu(model, device)
