"""Recording the feature extractor's activations on the dev set during training (PretRand paper §4.2).

Switched on by ``train.record_activations`` (the epochs to record; 0 = before training, i.e. the
transferred weights). Off (None, the default) it costs nothing: no recorder is made. Files in the
run directory:

    activations/tokens.json              {"sentences": [[token, ...], ...]}, written once
    activations/epoch-000.safetensors    "activations": (N_tokens, H) float16, tokens in reading order
    activations/epoch-005.safetensors    ... after epoch 5
    activations/final.safetensors        the best weights (those of model.safetensors)

Each file's safetensors metadata holds ``epoch`` (counted across all phases of a scheme) and
``phase``. Recording runs the model in eval mode without gradients and draws no random numbers,
so a run gives the same scores with and without it. analysis/activations.py reads the files back.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save as serialize
from torch import nn

from seqtransfer.data.batching import EncodedSentences, evaluation_batches
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import atomic_write, write_json

FOLDER = "activations"
TOKENS_FILE = "tokens.json"
FINAL = "final"
TENSOR = "activations"


def feature_matrix(model: nn.Module, encoded: EncodedSentences, batch_size: int = 256) -> np.ndarray:
    """(N_tokens, H) float32 feature-extractor states of every token, sentences in their original order."""
    was_training = model.training
    model.eval()
    per_sentence: list[np.ndarray | None] = [None] * len(encoded.lengths)
    with torch.inference_mode():
        for batch in evaluation_batches(encoded, batch_size):
            states = model.features(batch.to(next(model.parameters()).device)).float().cpu().numpy()  # (B, T, H)
            for row, sentence_index in enumerate(batch.indices):
                per_sentence[sentence_index] = states[row, : encoded.lengths[sentence_index]]
    model.train(was_training)
    return np.concatenate(per_sentence) if per_sentence else np.zeros((0, 0), np.float32)


def save_activations(path: Path, matrix: np.ndarray, epoch: int, phase: str) -> None:
    """Write one recording atomically as float16."""
    data = serialize({TENSOR: np.ascontiguousarray(matrix, dtype=np.float16)}, metadata={"epoch": str(epoch), "phase": phase})
    with atomic_write(path, "wb") as handle:
        handle.write(data)


def epoch_file(folder: Path, epoch: int) -> Path:
    return folder / f"epoch-{epoch:03d}.safetensors"


class ActivationRecorder:
    """Epoch hooks for ``fit`` that save the dev activations at the requested epochs.

    The hook at the start of epoch e saves the state after epoch e-1; :meth:`finish_phase` saves
    the last epoch of a phase. Epochs are numbered across phases (PretRand's random++ runs two).
    """

    def __init__(self, run_directory: Path, tokens: list[list[str]], encoded: EncodedSentences, epochs: list[int], batch_size: int = 256) -> None:
        self.folder = Path(run_directory) / FOLDER
        self.encoded, self.batch_size = encoded, batch_size
        self.epochs = {int(epoch) for epoch in epochs}
        self.phase, self.phase_start, self.epochs_done = "", 0, 0
        write_json(self.folder / TOKENS_FILE, {"sentences": [list(sentence) for sentence in tokens]})

    def record(self, model: nn.Module, path: Path, epoch: int) -> None:
        save_activations(path, feature_matrix(model, self.encoded, self.batch_size), epoch, self.phase)

    def start_phase(self, name: str) -> tuple:
        """The epoch hooks of the phase called ``name``."""
        self.phase, self.phase_start = name, self.epochs_done
        return (self.epoch_hook,)

    def epoch_hook(self, epoch: int, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        finished = self.phase_start + epoch - 1
        later_phase_start = epoch == 1 and self.phase_start > 0  # the previous phase's best weights, not a new epoch
        path = epoch_file(self.folder, finished)
        # a run resumed inside epoch e runs e's hooks again, on weights part-way through e: the file written before e's first batch stays
        if finished in self.epochs and not later_phase_start and not path.is_file():
            self.record(model, path, finished)

    def finish_phase(self, model: nn.Module, epochs_run: int) -> None:
        """Save the phase's last epoch when requested (no later hook will), then move the epoch count on."""
        self.epochs_done = self.phase_start + epochs_run
        if epochs_run and self.epochs_done in self.epochs:
            self.record(model, epoch_file(self.folder, self.epochs_done), self.epochs_done)

    def record_final(self, model: nn.Module, best_epoch_of_last_phase: int) -> None:
        """Save the activations of the best weights (the model the run directory keeps)."""
        self.record(model, self.folder / f"{FINAL}.safetensors", self.phase_start + best_epoch_of_last_phase)


def activation_recorder(epochs: list[int] | None, run_directory: Path, tokens: list[list[str]], encoded: EncodedSentences, batch_size: int = 256) -> ActivationRecorder | None:
    """A recorder when ``epochs`` (``train.record_activations``) asks for one, else None (no cost)."""
    if epochs is None:
        return None
    try:
        numbers = [int(epoch) for epoch in epochs]
    except (TypeError, ValueError):
        raise SeqTransferError(f"train.record_activations must be a list of epoch numbers, got {epochs!r}", hint="e.g. train.record_activations=[0,5,10,15,20]") from None
    if any(number < 0 for number in numbers):
        raise SeqTransferError("train.record_activations holds a negative epoch", hint="0 = before training, 1 = after the first epoch, ...")
    return ActivationRecorder(run_directory, tokens, encoded, numbers, batch_size)
