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
