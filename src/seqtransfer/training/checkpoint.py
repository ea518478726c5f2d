"""Per-epoch checkpoints so that an interrupted training run resumes where it stopped.

Stored without pickle: tensors in safetensors (weights, best weights, optimizer state, the
torch random state), the rest in JSON. Each file is written atomically.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file
from safetensors.torch import save as serialize
from torch import nn

from seqtransfer.files import atomic_write, read_json, write_json

STATE_FILE = "state.json"
# Per-parameter optimizer state kept in checkpoints (SGD's momentum; Adam's step and moments).
STATE_KEYS = ("momentum_buffer", "step", "exp_avg", "exp_avg_sq")
TENSORS_FILE = "tensors.safetensors"


@dataclass
class TrainingState:
    """Where training stands after ``epoch`` epochs."""

    best_state: dict[str, torch.Tensor]
    epoch: int = 0
    best_epoch: int = 0
    best_score: float = float("-inf")
    history: list[dict] = field(default_factory=list)


def copy_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """A detached copy of the model's weights."""
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def save_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """Write a safetensors file atomically."""
    data = serialize({name: tensor.contiguous() for name, tensor in tensors.items()})
    with atomic_write(path, "wb") as handle:
        handle.write(data)


def save(directory: Path, model: nn.Module, optimizer: torch.optim.Optimizer, state: TrainingState) -> None:
    """Save everything needed to continue training after ``state.epoch``."""
    tensors = {f"model.{name}": tensor for name, tensor in model.state_dict().items()}
    tensors.update({f"best.{name}": tensor for name, tensor in state.best_state.items()})
    for index, parameter in enumerate(p for group in optimizer.param_groups for p in group["params"]):
        for key, value in optimizer.state.get(parameter, {}).items():
            if key in STATE_KEYS and torch.is_tensor(value):
                tensors[f"optimizer.{index}.{key}"] = value
    tensors["random.torch"] = torch.get_rng_state()
    save_tensors(directory / TENSORS_FILE, tensors)
    summary = {"epoch": state.epoch, "best_epoch": state.best_epoch, "best_score": state.best_score, "history": state.history}
    write_json(directory / STATE_FILE, summary)


def resume(directory: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> TrainingState | None:
    """Restore model, optimizer and random state from ``directory``; None if there is nothing."""
    if not (directory / STATE_FILE).is_file() or not (directory / TENSORS_FILE).is_file():
        return None
    summary = read_json(directory / STATE_FILE)
    tensors = load_file(str(directory / TENSORS_FILE))
    model.load_state_dict({name[6:]: tensor for name, tensor in tensors.items() if name.startswith("model.")})
    for index, parameter in enumerate(p for group in optimizer.param_groups for p in group["params"]):
        for key in STATE_KEYS:
            if f"optimizer.{index}.{key}" in tensors:
                optimizer.state[parameter][key] = tensors[f"optimizer.{index}.{key}"].clone()
        if f"momentum.{index}" in tensors:  # checkpoints written before optimizers were registered
            optimizer.state[parameter]["momentum_buffer"] = tensors[f"momentum.{index}"].clone()
    torch.set_rng_state(tensors["random.torch"])
    best_state = {name[5:]: tensor for name, tensor in tensors.items() if name.startswith("best.")}
    return TrainingState(best_state, summary["epoch"], summary["best_epoch"], summary["best_score"], summary["history"])
