"""Per-epoch checkpoints so that an interrupted training run resumes where it stopped.

Stored without pickle in one safetensors file (weights, best weights, optimizer state, the
torch random state; the epoch, best score and history as JSON in its metadata), written
atomically: a kill at any moment leaves either the previous epoch's checkpoint or this one,
never the weights of one epoch with the state of another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file
from safetensors.torch import save as serialize
from torch import nn

from seqtransfer.files import atomic_write, read_json

STATE_FILE = "state.json"  # read only: the state of checkpoints written by earlier versions
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


def save_tensors(path: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None) -> None:
    """Write a safetensors file atomically."""
    data = serialize({name: tensor.detach().cpu().contiguous() for name, tensor in tensors.items()}, metadata=metadata)
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
    device = next(model.parameters()).device
    if device.type == "cuda":
        tensors["random.cuda"] = torch.cuda.get_rng_state(device)
    summary = {"epoch": state.epoch, "best_epoch": state.best_epoch, "best_score": state.best_score, "history": state.history}
    save_tensors(directory / TENSORS_FILE, tensors, metadata={"state": json.dumps(summary)})


def resume(directory: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> TrainingState | None:
    """Restore model, optimizer and random state from ``directory``; None if there is nothing."""
    if not (directory / TENSORS_FILE).is_file():
        return None
    with safe_open(str(directory / TENSORS_FILE), framework="pt") as handle:
        metadata = handle.metadata() or {}
    if "state" in metadata:
        summary = json.loads(metadata["state"])
    elif (directory / STATE_FILE).is_file():  # checkpoints written before the state moved into the tensors file
        summary = read_json(directory / STATE_FILE)
    else:
        return None
    tensors = load_file(str(directory / TENSORS_FILE))
    model.load_state_dict({name[6:]: tensor for name, tensor in tensors.items() if name.startswith("model.")})
    for index, parameter in enumerate(p for group in optimizer.param_groups for p in group["params"]):
        for key in STATE_KEYS:
            if f"optimizer.{index}.{key}" in tensors:
                value = tensors[f"optimizer.{index}.{key}"]
                optimizer.state[parameter][key] = value.to(parameter.device, copy=True)  # fused Adam keeps its step beside the weights
        if f"momentum.{index}" in tensors:  # checkpoints written before optimizers were registered
            optimizer.state[parameter]["momentum_buffer"] = tensors[f"momentum.{index}"].to(parameter.device, copy=True)
    torch.set_rng_state(tensors["random.torch"])
    if "random.cuda" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors["random.cuda"], next(model.parameters()).device)
    best_state = {name[5:]: tensor for name, tensor in tensors.items() if name.startswith("best.")}
    return TrainingState(best_state, summary["epoch"], summary["best_epoch"], summary["best_score"], summary["history"])
