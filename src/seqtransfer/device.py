"""Which device a run uses: ``auto`` (the first GPU torch sees, else the CPU), ``cpu``, ``cuda``,
``cuda:N`` or ``mps``. A run-time choice, like the number of threads: recorded in a run's
metrics, never part of what identifies a run, and run directories stay device-free (weights are
saved from CPU tensors and loaded onto whatever device the user asks for).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from seqtransfer.errors import SeqTransferError

DEVICE_HINT = "use --device cpu (or auto: the first GPU if there is one, else the CPU)"


def resolve_device(name: str | None) -> torch.device:
    """The torch device ``name`` means here; a device this machine lacks is one clear error."""
    name = (name or "auto").strip().lower()
    if name == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise SeqTransferError(f"unknown device '{name}'", hint="use auto, cpu, cuda, cuda:N or mps") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise SeqTransferError(f"--device {name}: torch sees no CUDA GPU on this machine", hint=DEVICE_HINT)
        index = device.index or 0
        if index >= count:
            raise SeqTransferError(f"--device {name}: this machine has {count} CUDA GPU(s) (cuda:0 to cuda:{count - 1})", hint=f"pick one of them, or {DEVICE_HINT}")
        return torch.device("cuda", index)
    if device.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise SeqTransferError("--device mps: this torch build or machine has no MPS (Apple GPU) support", hint=DEVICE_HINT)
    if device.type not in ("cpu", "cuda", "mps"):
        raise SeqTransferError(f"unsupported device '{name}'", hint="use auto, cpu, cuda, cuda:N or mps")
    return device


def describe_device(device: torch.device) -> str:
    """``cpu (AMD EPYC, AVX512)`` or ``cuda:0 (NVIDIA H100 80GB HBM3)``: what metrics.json records.
    A seed fixes a run's numbers on one kind of processor; another model or vector width picks
    other kernels, whose last-bit differences training amplifies, so the record says which ran it."""
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    if device.type == "cpu":
        return f"cpu ({', '.join(part for part in (processor_name(), torch.backends.cpu.get_cpu_capability()) if part)})"
    return str(device)


def describe_model_device(model: torch.nn.Module) -> str:
    """``describe_device`` of the device ``model``'s parameters are on."""
    return describe_device(next(model.parameters()).device)


def processor_name() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, platform elsewhere), "" if unknown."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor()


def prepare_device(device: torch.device) -> None:
    """Settings a device needs for deterministic runs (cuBLAS needs its workspace fixed)."""
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def peak_memory_megabytes(device: torch.device) -> float | None:
    """Peak GPU memory allocated by tensors in this process, None on the CPU."""
    if device.type != "cuda":
        return None
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)


def out_of_memory_error(batch_size: int, what: str, on: str = "GPU") -> SeqTransferError:
    other = "or use --device cpu" if on == "GPU" else "or skip very long sentences (data.max_sentence_length)"
    return SeqTransferError(
        f"the {on} ran out of memory {what} with batches of {batch_size} sentences",
        hint=f"lower train.evaluation_batch_size (predict and evaluate: --batch-size) or train.batch_size (with --restart), {other}",
    )


CPU_ALLOCATION_FAILURES = ("DefaultCPUAllocator: can't allocate", "DefaultCPUAllocator: not enough memory")


@contextmanager
def memory_errors_as_one_line(batch_size: int, what: str) -> Iterator[None]:
    """Running out of GPU or CPU memory inside the block is one error line naming the batch size
    (``out_of_memory_error``); any other error passes through."""
    try:
        yield
    except torch.cuda.OutOfMemoryError:
        raise out_of_memory_error(batch_size, what) from None
    except MemoryError:
        raise out_of_memory_error(batch_size, what, "machine") from None
    except RuntimeError as error:
        if any(failure in str(error) for failure in CPU_ALLOCATION_FAILURES):
            raise out_of_memory_error(batch_size, what, "machine") from None
        raise
