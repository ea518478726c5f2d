"""The grid runs on a real Ray cluster: a head started on loopback, runs as Ray tasks (a source
run, a run that waits for it, and two independent runs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_experiments import tiny_experiment

from seqtransfer.cli import run

pytestmark = pytest.mark.slow

# Starts a head (GCS, raylet) in a child process and prints its address; the cluster lives until
# the test closes the child's standard input. Unlike `ray stop`, this never touches other
# clusters running on the machine.
HEAD_SCRIPT = """
import sys, ray
ray.init(num_cpus=2, include_dashboard=False, _temp_dir=sys.argv[1])
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()
ray.shutdown()
"""


@pytest.fixture()
def ray_head(monkeypatch):
    # A one-machine cluster advertised on loopback only (Ray otherwise picks the address of the
    # default network interface), without token authentication; set before Ray is imported.
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    pytest.importorskip("ray")
    # The variable above is read when Ray is first imported; a test before this one in the same
    # worker may have imported it already, and the driver would then look for the head at the
    # machine's network address (CI: a ten-minute hang, then ConnectionError).
    from ray._private import ray_constants

    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
    temporary = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's unix sockets live under it
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    head = subprocess.Popen([sys.executable, "-c", HEAD_SCRIPT, temporary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment)
    address = head.stdout.readline().strip()
    try:
        assert address.startswith("127.0.0.1:"), address
        yield address
    finally:
        head.stdin.close()
        head.wait(timeout=120)
        shutil.rmtree(temporary, ignore_errors=True)


def test_two_run_grid_through_a_local_ray_head(tmp_path, ray_head):
    import ray

    experiment = tiny_experiment(tmp_path)
    results = tmp_path / "results"
    try:
        records = run(["experiment", "run", str(experiment), "--only", "scratch,finetune", "--seeds", "2", "--results", str(results), "--ray", ray_head])
        assert ray.is_initialized() and ray.get_runtime_context().gcs_address == ray_head
    finally:
        ray.shutdown()
    assert sorted((record["method"], record["seed"]) for record in records if not record.get("source")) == [("finetune", 1), ("finetune", 2), ("scratch", 1), ("scratch", 2)]
    assert [record["source"] for record in records if record.get("source")] == ["ner"]
    assert len(list((results / "sources").iterdir())) == 1
    assert all((Path(record["run_directory"]) / "model.safetensors").is_file() for record in records)


def test_a_search_runs_on_ray_tune_resumes_and_writes_the_selected_config(tmp_path, ray_head, monkeypatch, capsys):
    import ray

    experiment = tiny_experiment(tmp_path)
    search = "search:\n  finetune:\n    pos: {algorithm: asha, trials: 3, grace_epochs: 1, space: {train.learning_rate: {loguniform: [0.005, 0.05]}, model.dropout: [0.1, 0.3]}}\n"
    # a word-vector file named relative to the working folder, as `model.encoder=results/lms/...` or a relative
    # $SEQTRANSFER_DATA are: Tune starts each trial in a folder of its own, and the trial must still find it
    (tmp_path / "vectors.txt").write_text("".join(f"{word} {' '.join(['0.1'] * 8)}\n" for word in ("loves", "nyc", "the")), encoding="utf-8")
    text = experiment.read_text(encoding="utf-8").replace("model.embeddings=null", "model.embeddings=vectors.txt")
    experiment.write_text(text + search, encoding="utf-8")
    results = tmp_path / "results"
    monkeypatch.chdir(tmp_path)  # a relative results folder: every trial (Tune runs it elsewhere) must still find the source run
    try:
        summaries = run(["experiment", "search", str(experiment), "--results", "results", "--ray", ray_head])
        progress = capsys.readouterr().out  # a line per trial epoch and one as each trial ends
        assert re.search(r"search finetune / pos: trial model\.dropout=0\.[13], train\.learning_rate=[0-9.e-]+: epoch 1 dev \d+\.\d\d \(best", progress)
        assert "3 of 3 trials ended" in progress and "read back" not in progress
        again = run(["experiment", "search", str(experiment), "--results", "results", "--ray", ray_head])  # every trial read back from the store
        # finished trials are read back; one ASHA stopped may go on, trained again, where the scheduler now lets it
        assert "dev" in (replayed := capsys.readouterr().out) and "(best" in replayed and "read back)" in replayed and "3 of 3 trials ended" in replayed
        # a crash that left one trial unfinished: the search run again trains that trial only
        finished = {trial["run_id"]: results / "runs" / trial["run_id"] / "metrics.json" for trial in summaries[0]["trials"] if trial["status"] == "finished"}
        lost = summaries[0]["selected"]["run_id"]
        finished[lost].unlink()
        kept_times = {run_id: path.stat().st_mtime_ns for run_id, path in finished.items() if run_id != lost}
        resumed = run(["experiment", "search", str(experiment), "--results", "results", "--ray", ray_head])
    finally:
        ray.shutdown()
    assert finished[lost].is_file() and all(finished[run_id].stat().st_mtime_ns == time for run_id, time in kept_times.items())
    assert resumed[0]["selected"] == summaries[0]["selected"]  # the trial trained again to the same weights and scores
    summary = summaries[0]
    assert summary["method"] == "finetune" and len(summary["trials"]) == 3
    assert len(list((results / "sources").iterdir())) == 1  # the source, trained once for every trial
    assert again[0]["selected"]["run_id"] == summary["selected"]["run_id"]
    selected = Path(summary["config"])
    assert "  source: results/sources/" in selected.read_text(encoding="utf-8")  # relative: the file serves in another checkout too
    metrics = run(["train", "--config", str(selected), "--output", str(tmp_path / "again"), "--quiet"])
    assert metrics["dev"] is not None
    report = run(["report", str(experiment), "--results", "results", "--trials", "10"])
    assert "## Hyper-parameter search" in report and "finetune | pos | asha | 3" in report


def test_a_search_with_kept_trials_goes_on_from_the_file_on_a_machine_without_its_runs(tmp_path, ray_head, monkeypatch):
    import ray

    experiment = tiny_experiment(tmp_path)
    # random, not ASHA: every trial finishes, so none may train again (a kept trial ASHA stopped may go on where the
    # trials now reach its rung in another order: tests/test_search_records.py)
    search = "search:\n  finetune:\n    pos: {algorithm: random, trials: 3, space: {train.learning_rate: {loguniform: [0.005, 0.05]}}}\n"
    experiment.write_text(experiment.read_text(encoding="utf-8") + search, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    records = tmp_path / "tiny.search.jsonl"
    command = ["experiment", "search", str(experiment), "--results", "results", "--ray", ray_head, "--records", str(records)]
    try:
        first = run(command)
        kept = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
        # a fresh machine: the trials' runs and the search folder are gone, the kept file (committed) is not
        shutil.rmtree(tmp_path / "results" / "runs")
        shutil.rmtree(tmp_path / "results" / "search")
        again = run(command)
    finally:
        ray.shutdown()
    assert sum(record["kind"] == "trial" for record in kept) == 3 and sum(record["kind"] == "summary" for record in kept) == 1
    assert not (tmp_path / "results" / "runs").exists()  # every trial read back from the file: none trained
    assert again[0]["selected"] == first[0]["selected"] and Path(again[0]["config"]).is_file()
    assert [trial["status"] for trial in again[0]["trials"]] == [trial["status"] for trial in first[0]["trials"]]
    shutil.rmtree(tmp_path / "results" / "search")
    report = run(["report", str(experiment), "--results", "results", "--search-records", str(records), "--trials", "10"])
    assert "## Hyper-parameter search" in report and "finetune | pos | random | 3 (3 finished) |" in report


def test_a_search_of_a_scheme_of_two_phases_counts_its_epochs_across_them(tmp_path, ray_head, monkeypatch):
    """PretRand trains two phases, random then joint (chain-thaw one per layer group), each numbering its epochs from 1:
    ASHA sees one growing count, so a trial is not stopped as if past its last epoch, and its kept
    history holds every epoch once."""
    import ray

    from seqtransfer.experiments.search_records import read_search_records

    experiment = tiny_experiment(tmp_path)
    search = "search:\n  pretrand:\n    pos: {algorithm: asha, trials: 2, grace_epochs: 1, space: {train.learning_rate: [0.01, 0.02]}}\n"
    experiment.write_text(experiment.read_text(encoding="utf-8") + search, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    try:
        (summary,) = run(["experiment", "search", str(experiment), "--results", "results", "--ray", ray_head, "--only", "pretrand", "--records", "tiny.search.jsonl"])
    finally:
        ray.shutdown()
    finished = [trial for trial in summary["trials"] if trial["status"] == "finished"]
    assert finished and summary["selected"]["test"] is not None
    for trial in finished:
        history = json.loads((tmp_path / "results" / "runs" / trial["run_id"] / "metrics.json").read_text(encoding="utf-8"))["history"]
        assert {record["phase"] for record in history} == {"random", "joint"}
        assert trial["epochs"] == len(history) > 2
    kept = [record for record in read_search_records(tmp_path / "tiny.search.jsonl", "tiny") if record["kind"] == "trial" and record["status"] == "finished"]
    assert kept and all(len(record["history"]) > 2 for record in kept)  # both phases' epochs kept (the per-phase count kept 2)
