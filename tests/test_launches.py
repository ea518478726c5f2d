"""benchmarks/launches.py (issue 51 point 1) runs, and the CRF's GPU path (the scans) launches
fewer kernels than the loops, growing with log T rather than T."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "launches.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("launches_benchmark", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_crf_scans_launch_fewer_kernels_than_the_loops_and_grow_with_log_t():
    launches = load_benchmark()
    scan = {length: launches.measure("tagger-crf-gpu-path", 4, length) for length in (8, 32)}
    loop = {length: launches.measure("tagger-crf-gpu-loop", 4, length) for length in (8, 32)}
    for part in ("step", "inference"):
        assert scan[32][part]["kernels"] < loop[32][part]["kernels"]
        scan_growth = scan[32][part]["kernels"] - scan[8][part]["kernels"]
        loop_growth = loop[32][part]["kernels"] - loop[8][part]["kernels"]
        assert scan_growth <= 2 * 12 * 2 and loop_growth >= 24 * 4  # two more levels of about 12 (forward and backward) vs 24 more steps of at least 4
    assert scan[32]["inference"]["syncs"] == 1  # the labels the caller reads; no back-pointers copied


def test_a_training_step_as_a_gpu_runs_it_waits_for_the_device_at_most_at_the_form_lengths():
    """Issue 51's goal: no host synchronisation in a training step but the loss read (which the loop
    makes once per 25 batches, outside the step). What the count finds is the character encoder
    reading the batch's form lengths, host tensors on every device (one read, one copy), and a
    fine-tuned encoder's one copy: a new read in any model's step (an .item(), a branch on a tensor's
    value, a .tolist()) makes this fail. The step's kernels do not grow with the sentences' length."""
    launches = load_benchmark()
    for name in ("tagger-softmax", "tagger-crf-gpu-path", "pretrand", "parser", "multitask"):
        short, long = (launches.measure(name, 4, length) for length in (6, 12))
        assert short["step"]["syncs"] <= 2 and short["step"]["host_copies"] <= 1, (name, short["step"])
        if name != "tagger-crf-gpu-path":  # the scan grows with log T (the test above)
            assert short["step"]["kernels"] == long["step"]["kernels"], name
