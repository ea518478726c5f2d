"""Threads a run may use, and giving cores back while other programs use them (seqtransfer/threads.py)."""

from __future__ import annotations

import sys

import pytest
import torch

from seqtransfer import threads
from seqtransfer.config import RunConfig, result_settings


@pytest.fixture(autouse=True)
def restore_torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_cgroup_quota_in_cores(tmp_path):
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert threads.cgroup_cores(tmp_path) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert threads.cgroup_cores(tmp_path) is None


def test_cgroup_v1_quota(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("300000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert threads.cgroup_cores(tmp_path) == 3.0
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert threads.cgroup_cores(tmp_path) is None


def test_quota_caps_the_machine_cores(monkeypatch):
    monkeypatch.setattr(threads, "affinity", lambda: {0, 1, 2, 3})
    monkeypatch.setattr(threads, "cgroup_cores", lambda: 2.0)
    assert threads.machine_cores() == 2
    monkeypatch.setattr(threads, "cgroup_cores", lambda: None)
    assert threads.machine_cores() == 4


def test_granted_threads_stay_within_cores_and_omp_num_threads(monkeypatch):
    monkeypatch.setattr(threads, "machine_cores", lambda: 4)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert threads.granted_threads(100_000) == 4
    assert threads.granted_threads(2) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what Ray sets for a task asking for one CPU (or less)
    assert threads.granted_threads(2) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert threads.granted_threads(3) == 3


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_counters_see_this_process_work():
    cpus = threads.affinity()
    before = threads.cpu_counters(cpus)
    total = 0
    for value in range(3_000_000):
        total += value
    after = threads.cpu_counters(cpus)
    assert after[1] > before[1]  # this process's ticks
    assert after[0] >= before[0]


class ScriptedLoad:
    """cpu_counters and the clock of a machine where other programs keep ``others`` cores busy."""

    def __init__(self) -> None:
        self.now, self.busy, self.own, self.others = 0.0, 0.0, 0.0, 0.0

    def advance(self, seconds: float, own_cores: float) -> None:
        ticks = 100 * seconds
        self.now += seconds
        self.own += own_cores * ticks
        self.busy += (own_cores + self.others) * ticks


def test_core_share_gives_cores_back_and_takes_them_again(monkeypatch):
    load = ScriptedLoad()
    monkeypatch.setattr(threads, "machine_cores", lambda: 2)
    monkeypatch.setattr(threads, "affinity", lambda: {0, 1})
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "cpu_counters", lambda cpus: (load.busy, load.own))
    monkeypatch.setattr(threads.time, "monotonic", lambda: load.now)
    monkeypatch.setattr(threads.os, "sysconf", lambda name: 100)
    share = threads.CoreShare(2)
    assert torch.get_num_threads() == 2
    load.advance(0.1, 2.0)
    assert share.tick() == 2  # not time to look yet
    load.others = 1.0  # a second training starts
    load.advance(1.0, 1.0)
    assert share.tick() == 1 and torch.get_num_threads() == 1
    load.advance(1.0, 1.0)
    assert share.tick() == 1  # it is still there: stay at one thread
    load.others = 0.0
    load.advance(1.0, 1.0)
    assert share.tick() == 2 and torch.get_num_threads() == 2


def test_core_share_off_keeps_the_threads(monkeypatch):
    load = ScriptedLoad()
    monkeypatch.setattr(threads, "machine_cores", lambda: 2)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "cpu_counters", lambda cpus: (load.busy, load.own))
    monkeypatch.setattr(threads.time, "monotonic", lambda: load.now)
    share = threads.CoreShare(2, adapt=False)
    load.others = 2.0
    load.advance(1.0, 1.0)
    assert share.tick() == 2 and torch.get_num_threads() == 2


def test_sharing_cores_is_not_part_of_a_runs_identity():
    config = RunConfig()
    config.train.share_cores = False
    assert result_settings(config) == result_settings(RunConfig())


def test_a_model_whose_gradients_hang_on_the_thread_count_keeps_its_threads(monkeypatch):
    """LayerNorm's and Conv1d's weight gradients are sums split across threads: a model that trains
    one keeps its threads (the same command gives the same numbers on a busy machine), and says so."""
    from seqtransfer.training.loop import shared_cores

    monkeypatch.setattr(threads, "machine_cores", lambda: 2)
    monkeypatch.setattr(threads, "affinity", lambda: {0, 1})
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    config = RunConfig().train
    tagger = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.LSTM(4, 4), torch.nn.Linear(4, 3))
    normed = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    lines = []
    assert threads.thread_dependent_module(tagger) is None and shared_cores(tagger, config, lines.append).adapt and lines == []
    assert threads.thread_dependent_module(normed) == "LayerNorm" and not shared_cores(normed, config, lines.append).adapt
    assert len(lines) == 1 and "threads stay at 2" in lines[0] and "LayerNorm" in lines[0]
    normed[1].requires_grad_(False)  # frozen: its sums train nothing
    assert threads.thread_dependent_module(normed) is None
    torch.set_num_threads(before)


def test_a_scalar_mix_keeps_its_threads():
    """A feature-extraction model trains a scalar mix over frozen layers: its gamma's gradient sums a
    whole tensor in an order that depends on the thread count (measured on this project's CPU,
    32 x 60 tokens x 7 layers x 256: other last bits at 1 and 2 threads), so the model keeps its threads."""
    from seqtransfer.embeddings.transformer import ScalarMix

    features = torch.nn.Sequential(ScalarMix(7), torch.nn.LSTM(256, 8))
    assert threads.thread_dependent_module(features) == "ScalarMix"
    features[0].requires_grad_(False)
    assert threads.thread_dependent_module(features) is None


def test_a_run_at_fixed_threads_says_in_its_history_how_many_it_trained_with(tmp_path):
    from conftest import tiny_train_arguments

    from seqtransfer.cli import run

    before = torch.get_num_threads()
    metrics = run([*tiny_train_arguments(tmp_path / "run", epochs=2), "train.share_cores=false", "train.threads=1"])
    torch.set_num_threads(before)
    assert [record["threads"] for record in metrics["history"]] == [1, 1]
