"""One seed fixes a run: Python's, numpy's and torch's generators, deterministic kernels, and the threads."""

from __future__ import annotations

import random

import numpy as np
import torch

from seqtransfer.threads import granted_threads


def seed_everything(seed: int, threads: int) -> None:
    """Make a run repeatable on CPU."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(granted_threads(threads))
    # The same switch as torch.use_deterministic_algorithms(True, warn_only=True), which also imports
    # torch._inductor to set its flag for torch.compile (unused here): 1.5 s of every process's start.
    torch.set_deterministic_debug_mode("warn")
    # Deterministic mode also fills every new tensor with NaN by default (to expose reads of
    # uninitialised memory): a quarter of the training step. Nothing reads such memory (the scores
    # are identical either way), so skip the fill.
    torch.utils.deterministic.fill_uninitialized_memory = False
