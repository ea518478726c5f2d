"""Per-epoch checkpoints so that an interrupted training run resumes where it stopped.

Stored without pickle in one safetensors file (weights, best weights, optimizer state, the
torch random state; the epoch, best score and history as JSON in its metadata; saved inside an
epoch, also how far it got and what the model carries between batches: ``progress.py``), written
atomically: a kill at any moment leaves either the previous epoch's checkpoint or this one,
never the weights of one epoch with the state of another.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file
from safetensors.torch import save as serialize
from torch import nn

from seqtransfer.errors import SeqTransferError
from seqtransfer.files import atomic_write, read_json

RESTART_HINT = "run the same command with --restart to train it from the start (the checkpoint is deleted)"

STATE_FILE = "state.json"  # read only: the state of checkpoints written by earlier versions
# Per-parameter optimizer state kept in checkpoints (SGD's momentum; Adam's step and moments).
STATE_KEYS = ("momentum_buffer", "step", "exp_avg", "exp_avg_sq")
TENSORS_FILE = "tensors.safetensors"


@dataclass
class EpochProgress:
    """How far epoch ``epoch`` got: ``batches`` done (in its seeded order), their summed ``loss``,
    how many of them were ``skipped`` (nothing they read trained), its training ``seconds`` so far,
    and the fp16 gradient scaler's state (None without one)."""

    epoch: int
    batches: int = 0
    loss: float = 0.0
    skipped: int = 0
    seconds: float = 0.0
    scaler: dict | None = None

    def to_json(self) -> dict:
        return asdict(self)


def whole_number(value) -> int:
    """``value`` as an int when it is one (not a bool, not 2.5 nor "3"); ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(value)
    return value


def read_progress(values) -> EpochProgress | None:
    """The progress inside an epoch that a checkpoint's metadata holds (None where it holds none),
    every value checked; ValueError naming what is wrong when it is malformed."""
    if values is None:
        return None
    try:
        if not isinstance(values, dict) or set(values) - set(EpochProgress.__dataclass_fields__):
            raise ValueError(values)
        epoch, batches, skipped = (whole_number(values.get(key, 0)) for key in ("epoch", "batches", "skipped"))
        loss, seconds = (float(values.get(key, 0.0)) for key in ("loss", "seconds"))
        scaler = values.get("scaler")
        if isinstance(values.get("loss"), (bool, str)) or isinstance(values.get("seconds"), (bool, str)) or not (scaler is None or isinstance(scaler, dict) and "scale" in scaler):
            raise ValueError(values)
    except (TypeError, ValueError):
        raise ValueError("its progress inside an epoch is malformed") from None
    if epoch < 1 or batches < 1 or not 0 <= skipped <= batches or not math.isfinite(loss) or not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"its progress says batch {batches} of epoch {epoch}, {skipped} skipped, loss {loss}, {seconds} s")
    return EpochProgress(epoch, batches, loss, skipped, seconds, scaler)


def carried_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """What the model carries from one batch to the next that is not a weight, by name (the AWD-LSTM's
    last LSTM states, where the stream's next chunk starts: ``LAYER.PART`` -> (1, B, H)); {} for most models."""
    return model.carried_state() if hasattr(model, "carried_state") else {}


def restore_carried(model: nn.Module, tensors: dict[str, torch.Tensor]) -> None:
    """Give the model back what ``carried_state`` saved (nothing for a model that carries nothing)."""
    if tensors and hasattr(model, "restore_carried"):
        model.restore_carried(tensors)


@dataclass
class TrainingState:
    """Where training stands after ``epoch`` epochs."""

    best_state: dict[str, torch.Tensor]
    epoch: int = 0
    best_epoch: int = 0
    best_score: float = float("-inf")
    history: list[dict] = field(default_factory=list)
    progress: EpochProgress | None = None  # how far epoch ``epoch + 1`` got (a checkpoint saved inside it; progress.py)


def copy_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """A detached copy of the model's weights."""
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def save_tensors(path: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None) -> None:
    """Write a safetensors file atomically. Tensors that share memory (a decoder tied to the input
    embeddings: two names, one matrix) are written as copies, which safetensors requires; loading
    them back into a tied model fills the one matrix twice with the same values."""
    written, storages = {}, set()
    for name, tensor in tensors.items():
        tensor = tensor.detach().cpu().contiguous()
        storage = tensor.untyped_storage().data_ptr()
        written[name] = tensor.clone() if storage in storages else tensor
        storages.add(storage)
    data = serialize(written, metadata=metadata)
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
    best_score = state.best_score if state.best_epoch else None  # no best before epoch 1 ends (JSON has no -Infinity)
    summary = {"epoch": state.epoch, "best_epoch": state.best_epoch, "best_score": best_score, "history": state.history}
    if state.progress is not None:
        summary["progress"] = state.progress.to_json()
        tensors.update({f"carried.{name}": tensor for name, tensor in carried_state(model).items()})
    save_tensors(directory / TENSORS_FILE, tensors, metadata={"state": json.dumps(summary)})


def damaged(directory: Path, what: str) -> SeqTransferError:
    return SeqTransferError(f"the checkpoint of this unfinished run is damaged or not this run's: {what}", path=directory / TENSORS_FILE, hint=RESTART_HINT)


def read_summary(directory: Path) -> tuple[dict, dict[str, tuple[int, ...]]] | None:
    """(the epoch, best score and history, every tensor's shape) of a checkpoint, checked to be
    whole and consistent; None where there is none. Reads the file's header only."""
    if not (directory / TENSORS_FILE).is_file():
        return None
    try:
        with safe_open(str(directory / TENSORS_FILE), framework="pt") as handle:
            metadata = handle.metadata() or {}
            shapes = {name: tuple(handle.get_slice(name).get_shape()) for name in handle.keys()}
        summary = json.loads(metadata["state"]) if "state" in metadata else read_json(directory / STATE_FILE) if (directory / STATE_FILE).is_file() else None
    except Exception as error:  # safetensors and json raise their own errors for a truncated or garbled file
        raise damaged(directory, str(error).splitlines()[0][:160] or type(error).__name__) from None
    if summary is None:
        return None
    check_summary(directory, summary)
    return summary, shapes


def check_summary(directory: Path, summary) -> None:
    """The metadata describes the epochs it says: whole numbers in order, one history record per epoch."""
    try:
        epoch, best_epoch, history = int(summary["epoch"]), int(summary["best_epoch"]), list(summary["history"])
        if summary["best_score"] is not None or best_epoch:  # none only before the first epoch ends
            float(summary["best_score"])
        numbered = [int(record["epoch"]) for record in history]
    except (KeyError, TypeError, ValueError):
        raise damaged(directory, "its metadata lacks the epoch, best epoch, best score or history") from None
    if not 0 <= best_epoch <= epoch or numbered != list(range(epoch - len(history) + 1, epoch + 1)) or (epoch and not history):
        raise damaged(directory, f"its metadata says epoch {epoch}, best epoch {best_epoch} and {len(history)} history records")
    try:
        progress = read_progress(summary.get("progress"))
    except ValueError as error:
        raise damaged(directory, str(error)) from None
    if progress is not None and progress.epoch != epoch + 1:
        raise damaged(directory, f"its progress is in epoch {progress.epoch}, after epoch {epoch}")


def check_fits(directory: Path, model: nn.Module) -> None:
    """A checkpoint in ``directory`` (if any) is whole and holds this model's weights, every name and
    shape: read before anything of the run is rewritten, so that a mismatch strands nothing."""
    read = read_summary(directory)
    if read is None:
        return
    _, shapes = read
    expected = {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}
    held = {name[6:]: shape for name, shape in shapes.items() if name.startswith("model.")}
    if held != expected or any(shapes.get(f"best.{name}") != shape for name, shape in expected.items()):
        different = sorted(set(held) ^ set(expected)) or [name for name in expected if held.get(name) != expected[name]]
        raise damaged(directory, f"its weights do not fit the model (first difference: {(different or ['best weights'])[0]})")


def resume(directory: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> TrainingState | None:
    """Restore model, optimizer and random state from ``directory``; None if there is nothing."""
    read = read_summary(directory)
    if read is None:
        return None
    summary, _ = read
    check_fits(directory, model)
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
    restore_carried(model, {name[8:]: tensor for name, tensor in tensors.items() if name.startswith("carried.")})
    progress = read_progress(summary.get("progress"))
    best_score = float("-inf") if summary["best_score"] is None else summary["best_score"]
    return TrainingState(best_state, summary["epoch"], summary["best_epoch"], best_score, summary["history"], progress)
