"""The CRF's paths timed on this CPU: which one a CPU tensor should take (issue 51, point 1).

    python benchmarks/crf_paths.py                 # WNUT-17-sized batches: 13 labels
    python benchmarks/crf_paths.py --labels 45     # a PTB-sized tag set

Training (log partition, forward and backward): the numpy forward-backward (``ForwardBackward``,
the CPU path), the torch loop over time steps (``log_partition_torch``) and the log-semiring scan
(``log_partition_scan``, the GPU path). Decoding: the loop over time steps (``decode_loop``, the
CPU path) and the max-plus scan (``viterbi_scan``, the GPU path). Each is timed interleaved with
the others, on random batches of B sentences of T tokens (every sentence full length but the
last half of the batch, which is cut to T/2), and the median of the repeats is printed.
Time nothing while another job runs on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from seqtransfer.models.crf import CRF, ForwardBackward, log_partition_torch
from seqtransfer.models.crf_scan import log_partition_scan, viterbi_scan


def batch(batch_size: int, width: int, labels: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T, L) emissions, (B, T) mask: the second half of the sentences half as long."""
    lengths = torch.full((batch_size,), width)
    lengths[batch_size // 2 :] = max(width // 2, 1)
    return torch.randn(batch_size, width, labels, generator=generator) * 3, torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)


def training(log_partition, crf: CRF, emissions: torch.Tensor, mask: torch.Tensor) -> None:
    scores = emissions.clone().requires_grad_()
    log_partition(scores, mask, crf.transitions, crf.start, crf.end).sum().backward()


def timings(crf: CRF, emissions: torch.Tensor, mask: torch.Tensor, repeats: int) -> dict[str, float]:
    """Median milliseconds of each path, timed in turn ``repeats`` times."""
    paths = {
        "train: numpy forward-backward (CPU path)": lambda: training(ForwardBackward.apply, crf, emissions, mask),
        "train: torch loop over time steps": lambda: training(log_partition_torch, crf, emissions, mask),
        "train: log-semiring scan (GPU path)": lambda: training(log_partition_scan, crf, emissions, mask),
        "decode: loop over time steps (CPU path)": lambda: crf.decode_loop(emissions, mask),
        "decode: max-plus scan (GPU path)": lambda: viterbi_scan(emissions, mask, crf.transitions, crf.start, crf.end),
    }
    seconds: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, path in paths.items():
            started = time.perf_counter()
            path()
            seconds[name].append(time.perf_counter() - started)
    return {name: 1000 * statistics.median(values) for name, values in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=int, default=13)
    parser.add_argument("--sizes", nargs="+", default=["16x20", "16x40", "64x40", "256x40"], help="BxT batches (training at every size; decoding too)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    generator = torch.Generator().manual_seed(0)
    crf = CRF(arguments.labels)
    for parameter in crf.parameters():
        torch.nn.init.normal_(parameter, generator=generator)
    print(f"{torch.get_num_threads()} threads, {arguments.labels} labels; median ms of {arguments.repeats} interleaved repeats")
    for size in arguments.sizes:
        batch_size, width = (int(part) for part in size.split("x"))
        emissions, mask = batch(batch_size, width, arguments.labels, generator)
        for name, milliseconds in timings(crf, emissions, mask, arguments.repeats).items():
            print(f"B={batch_size:<4} T={width:<4} {name:<45} {milliseconds:8.2f}")


if __name__ == "__main__":
    main()
