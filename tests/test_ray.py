"""The grid runs on a real Ray cluster: a head started on loopback, two runs as Ray tasks."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from seqtransfer.cli import run
from test_experiments import tiny_experiment

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture()
def ray_head(monkeypatch):
    # A single-machine cluster advertised on loopback only (Ray otherwise picks the address of
    # the default network interface); must be set before Ray is imported.
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    # Head and driver agree on no token authentication (another local cluster on the machine
    # may have left a token in ~/.ray that the driver would otherwise not present).
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    pytest.importorskip("ray")
    ray_command = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    port = free_port()
    temporary = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's unix sockets live under it
    environment = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": os.pathsep.join(sys.path)}
    start = [ray_command, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
             "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temporary}"]
    subprocess.run(start, check=True, env=environment, capture_output=True, timeout=180)
    yield f"127.0.0.1:{port}"
    subprocess.run([ray_command, "stop", "--force"], env=environment, capture_output=True, timeout=120)
    shutil.rmtree(temporary, ignore_errors=True)


def test_two_run_grid_through_a_local_ray_head(tmp_path, ray_head):
    import ray

    experiment = tiny_experiment(tmp_path)
    results = tmp_path / "results"
    try:
        records = run(["experiment", "run", str(experiment), "--only", "scratch", "--seeds", "2", "--results", str(results), "--ray", ray_head])
        assert ray.is_initialized() and ray.get_runtime_context().gcs_address == ray_head
    finally:
        ray.shutdown()
    assert sorted((record["method"], record["seed"]) for record in records) == [("scratch", 1), ("scratch", 2)]
    assert all((Path(record["run_directory"]) / "model.safetensors").is_file() for record in records)
