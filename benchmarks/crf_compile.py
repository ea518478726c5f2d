"""torch.compile against the CRF's paths, counted on this CPU (issue 51, point 1).

    python benchmarks/crf_compile.py --lengths 10 40 100 --json benchmarks/results/crf_compile.json

Issue 51 asks that the alternatives that remove a recurrence's launches (one batched kernel,
``torch.compile``, CUDA graphs) be measured on a CPU count. The batched form is the scan
(``models/crf_scan.py``, ``launches.py``). This script measures ``torch.compile`` (inductor) on the
CRF's training computation, the log partition's forward and backward, for B sentences of exactly
T tokens and L labels:

- ``eager``: the operators dispatched, without views (``launches.Counting``): a GPU's launches;
- ``compiled``: read from the code inductor generates for the forward and the backward: the calls
  their ``call`` functions make (generated C++ kernels, and extern kernels such as ``bmm``), the loop
  nests inside those C++ kernels (``#pragma omp for`` and ``omp single`` regions), and the seconds
  the first call takes (tracing and compiling).

On a CPU inductor puts many loop nests in one C++ function (one call); on a GPU it emits Triton
kernels, about one per loop nest that cannot fuse with the next (each time step's reduction reads
the one before). So ``gpu_estimate`` = extern calls + loop nests is the count to set against the
eager launches; it is an estimate read from code, not a timing. Each T is compiled afresh
(``torch._dynamo.reset``), as a run meets a new padded length: the loop over time steps is
unrolled, so every distinct T traces and compiles again. CUDA graphs need a GPU and are not measured.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import torch
from launches import VIEW_OPERATORS, Counting
from torch._inductor.utils import run_and_get_code

from seqtransfer.models.crf import log_partition_torch
from seqtransfer.models.crf_scan import log_partition_scan

PATHS = {"loop": log_partition_torch, "scan": log_partition_scan}
CALL = re.compile(r"^\s+(?:[\w, ]+=\s*)?(cpp_fused_\w+|triton_\w+|extern_kernels\.\w+|aten\.\w+(?:\.\w+)?)\(", re.MULTILINE)


def inputs(batch: int, length: int, labels: int) -> tuple[torch.Tensor, ...]:
    """Emissions (B, T, L) that need their gradient, a full mask (B, T), transitions (L, L), start and end (L,)."""
    generator = torch.Generator().manual_seed(0)
    emissions = torch.randn(batch, length, labels, generator=generator, requires_grad=True)
    transitions, start, end = (torch.randn(*shape, generator=generator, requires_grad=True) for shape in ((labels, labels), (labels,), (labels,)))
    return emissions, torch.ones(batch, length, dtype=torch.bool), transitions, start, end


def training(function, arguments) -> None:
    """The log partition's forward and backward, as a training step takes them."""
    function(*arguments).sum().backward()


def eager_kernels(function, arguments) -> int:
    training(function, arguments)  # warm-up
    with Counting() as counting:
        training(function, arguments)
    return sum(number for operator, number in counting.operators.items() if operator not in VIEW_OPERATORS)


def calls_in(code: str) -> int:
    """The kernel calls of one generated module's ``call`` function."""
    body = code[code.index("def call(") :] if "def call(" in code else ""
    body = body[: body.index("\ndef ", 1)] if "\ndef " in body[1:] else body
    return len(CALL.findall(body))


def extern_calls_in(code: str) -> int:
    body = code[code.index("def call(") :] if "def call(" in code else ""
    return len(re.findall(r"extern_kernels\.\w+\(", body))


def loop_nests_in(code: str) -> int:
    """The parallel loop nests of a module's generated C++ kernels (at least one per kernel)."""
    kernels = re.findall(r"cpp_pybinding\(.*?r\'\'\'(.*?)\'\'\'", code, flags=re.DOTALL)
    return sum(max(1, kernel.count("#pragma omp for") + kernel.count("#pragma omp single")) for kernel in kernels)


def compiled_kernels(function, arguments) -> dict:
    """What inductor's code for the forward and backward calls, and the seconds of the first call."""
    torch._dynamo.reset()
    compiled = torch.compile(function, dynamic=False)
    started = time.perf_counter()
    _, codes = run_and_get_code(lambda: training(compiled, arguments))
    seconds = time.perf_counter() - started
    calls, extern, nests = (sum(count(code) for code in codes) for count in (calls_in, extern_calls_in, loop_nests_in))
    return {"compiled_calls": calls, "extern_calls": extern, "loop_nests": nests, "gpu_estimate": extern + nests, "compile_seconds": round(seconds, 1), "generated_modules": len(codes)}


def measure(path: str, batch: int, length: int, labels: int) -> dict:
    arguments = inputs(batch, length, labels)
    eager = eager_kernels(PATHS[path], arguments)
    return {"path": path, "batch": batch, "length": length, "labels": labels, "eager_kernels": eager, **compiled_kernels(PATHS[path], arguments)}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[10, 40, 100])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--labels", type=int, default=13, help="WNUT-17's 13 IOB2 labels")
    parser.add_argument("--paths", nargs="+", default=list(PATHS), choices=list(PATHS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None)
    arguments = parser.parse_args(argv)
    torch.set_num_threads(arguments.threads)
    torch._inductor.config.force_disable_caches = True  # every compilation timed in full, none read from an earlier run's cache
    rows = []
    print(f"{'path':6} {'T':>4} {'eager kernels':>14} {'compiled calls':>15} {'extern':>7} {'loop nests':>11} {'GPU estimate':>13} {'compile s':>10}")
    for path in arguments.paths:
        for length in arguments.lengths:
            rows.append(measure(path, arguments.batch, length, arguments.labels))
            row = rows[-1]
            counts = f"{row['eager_kernels']:14d} {row['compiled_calls']:15d} {row['extern_calls']:7d} {row['loop_nests']:11d} {row['gpu_estimate']:13d}"
            print(f"{path:6} {length:4d} {counts} {row['compile_seconds']:10.1f}", flush=True)
            if arguments.json:
                Path(arguments.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
