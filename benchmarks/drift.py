"""How steady is this machine? Times one LSTM step with 1 and 2 threads, again and again.

    python benchmarks/drift.py [--seconds 200] [--every 10]

Each line is the forward + backward time of the character LSTM of a typical batch (210 forms
of 12 characters, 50 units) with 1 thread and with 2, and the speed-up of the second thread.
On a quiet, steady machine the lines agree; on a shared virtual machine they drift, and a
benchmark shorter than the drift (a 3-epoch WNUT-17 run trains for about 10 s) lands in one
phase of it. Run this before and after a comparison to see which kind of machine it ran on.
"""

from __future__ import annotations

import argparse
import time

import torch


def step_milliseconds(lstm: torch.nn.LSTM, inputs: torch.Tensor, threads: int, repetitions: int = 60) -> float:
    """Mean forward + backward time of ``lstm`` on ``inputs`` (U, C, D) with ``threads`` threads."""
    torch.set_num_threads(threads)
    for _ in range(5):
        lstm(inputs)[0].sum().backward()
    started = time.perf_counter()
    for _ in range(repetitions):
        lstm(inputs)[0].sum().backward()
    return (time.perf_counter() - started) / repetitions * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=200.0, help="how long to keep measuring")
    parser.add_argument("--every", type=float, default=10.0, help="pause between measurements (seconds)")
    arguments = parser.parse_args()
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(50, 50, batch_first=True)
    inputs = torch.randn(210, 12, 50, requires_grad=True)
    started = time.time()
    while time.time() - started < arguments.seconds:
        one, two = step_milliseconds(lstm, inputs, 1), step_milliseconds(lstm, inputs, 2)
        print(f"t={time.time() - started:5.0f} s   1 thread {one:5.2f} ms   2 threads {two:5.2f} ms   speed-up {one / two:.2f}", flush=True)
        time.sleep(arguments.every)


if __name__ == "__main__":
    main()
