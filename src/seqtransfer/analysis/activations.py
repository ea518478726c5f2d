"""Reading back the dev activations a run recorded during training (PretRand paper §4.2).

training/activations.py records them (``train.record_activations``) and describes the files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors import safe_open

from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_json
from seqtransfer.training.activations import FINAL, FOLDER, TENSOR, TOKENS_FILE


@dataclass
class Recording:
    """One saved activation file: which epoch (across phases) and phase it comes from."""

    name: str  # "epoch-005" or "final"
    epoch: int
    phase: str
    path: Path

    def matrix(self) -> np.ndarray:
        """(N_tokens, H) float16 activations."""
        with safe_open(str(self.path), framework="numpy") as handle:
            return handle.get_tensor(TENSOR)


def read_recording(path: Path) -> Recording:
    with safe_open(str(path), framework="numpy") as handle:
        metadata = handle.metadata() or {}
    return Recording(path.stem, int(metadata.get("epoch", 0)), metadata.get("phase", ""), path)


def list_recordings(run_directory: str | Path) -> tuple[list[list[str]], list[Recording]]:
    """The dev sentences and the recordings of a run: epochs in order, then ``final``."""
    folder = Path(run_directory) / FOLDER
    if not (folder / TOKENS_FILE).is_file():
        raise SeqTransferError("this run has no recorded activations", path=folder, hint="train it with train.record_activations=[0,5,10,15,20] (0 = before fine-tuning)")
    sentences = read_json(folder / TOKENS_FILE)["sentences"]
    epochs = sorted((read_recording(path) for path in folder.glob("epoch-*.safetensors")), key=lambda recording: recording.epoch)
    final = [read_recording(folder / f"{FINAL}.safetensors")] if (folder / f"{FINAL}.safetensors").is_file() else []
    return sentences, epochs + final
