"""benchmarks/budget.py (issue 51, point 2): a runner with a time budget trains whole epochs while
another fits, cuts an epoch short where not even one does, and prints progress lines from which a
comparison that kills it keeps the training speed of what ended."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_benchmark", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


budget_module = load("budget")


class Clock:
    """A stand-in for time.perf_counter that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(budget_module.time, "perf_counter", fake)
    return fake


def train(budget, clock, batches: int, seconds_per_batch: float, tokens: int = 10) -> dict:
    """One epoch of ``batches`` batches through the budget, the clock moving per batch."""
    budget.start_epoch()
    started = clock.now
    for _ in range(batches):
        if not budget.take(2, tokens):
            break
        clock.now += seconds_per_batch
    return budget.end_epoch(clock.now - started)


def test_without_a_deadline_every_epoch_is_whole(clock, capsys):
    budget = budget_module.Budget("seqtransfer", None)
    for _ in range(3):
        assert budget.another_epoch_fits()
        epoch = train(budget, clock, batches=5, seconds_per_batch=100.0)
    assert epoch == {"epoch": 3, "sentences": 10, "tokens": 50, "batches": 5, "cut": False, "seconds": 500.0}
    assert budget.fields()["epoch_cut"] == [False, False, False]
    finished = [json.loads(line[len("PROGRESS ") :]) for line in capsys.readouterr().out.splitlines() if line.startswith("PROGRESS ")]
    assert [line["epoch"] for line in finished if line["finished"]] == [1, 2, 3]


def test_an_epoch_that_does_not_fit_is_cut_where_half_the_budget_is_spent(clock):
    budget = budget_module.Budget("flair", clock.now + 100.0)  # 100 s; an epoch would take 10 x 20 s
    epoch = train(budget, clock, batches=10, seconds_per_batch=20.0)
    assert epoch["cut"] and epoch["batches"] == 3 and epoch["tokens"] == 30  # at 60 s, past the 50 s kept for inference
    assert not budget.another_epoch_fits()  # nothing after a cut epoch
    assert budget.fields() == {"epoch_seconds": [60.0], "epoch_sentences": [6], "epoch_tokens": [30], "epoch_cut": [True]}


def test_whole_epochs_go_on_while_another_and_the_inference_fit(clock):
    budget = budget_module.Budget("seqtransfer", clock.now + 100.0)
    fits = []
    for _ in range(4):
        train(budget, clock, batches=5, seconds_per_batch=4.0)  # 20 s an epoch
        fits.append(budget.another_epoch_fits())
    assert fits == [True, True, True, False]  # at 80 s, a fifth epoch and the inference (20 s each) would end at 120 s
    assert budget.fields()["epoch_cut"] == [False] * 4
    budget.overhead = 5.0  # a peer's own scoring after each epoch is kept time for too
    assert budget.reserve() == 25.0


def test_a_killed_runner_keeps_the_speed_of_its_finished_epochs_or_of_the_one_it_was_in():
    lines = [
        'PROGRESS {"tool": "flair", "epoch": 1, "tokens": 1000, "seconds": 10.0, "cut": false, "finished": false}',
        'PROGRESS {"tool": "flair", "epoch": 1, "tokens": 2000, "seconds": 20.0, "cut": false, "finished": true}',
        "flair: some log line",
        'PROGRESS {"tool": "flair", "epoch": 2, "tokens": 500, "seconds": 10.0, "cut": false, "finished": false}',
        'PROGRESS {"tool": "flair", "epoch": 2, "tok',  # the line the kill cut in two
    ]
    partial = budget_module.partial_result("\n".join(lines))
    assert partial["killed"] and partial["epoch_seconds"] == [20.0] and partial["train_tokens_per_second"] == 100.0
    assert partial["unfinished_epoch"]["tokens"] == 500
    only_started = budget_module.partial_result("\n".join(lines[:1]))
    assert only_started["epoch_seconds"] == [] and only_started["train_tokens_per_second"] == 100.0
    assert budget_module.partial_result("no progress at all")["train_tokens_per_second"] is None


def test_the_training_speed_is_over_whole_epochs_else_over_the_cut_one():
    whole = {"epoch_seconds": [10.0, 30.0, 20.0], "train_tokens": 1000}
    assert budget_module.training_speed(whole) == (20.0, 50.0)
    cut = {"epoch_seconds": [4.0], "epoch_tokens": [200], "epoch_cut": [True], "train_tokens": 1000}
    assert budget_module.training_speed(cut) == (4.0, 50.0)
    assert budget_module.training_speed({"killed": True, "epoch_seconds": [], "train_tokens_per_second": 7.0}) == (None, 7.0)


def test_a_runner_past_its_limit_is_killed_and_its_printed_lines_are_kept(tmp_path):
    child = textwrap.dedent(
        """
        import sys, time
        print('PROGRESS {"tool": "x", "epoch": 1, "tokens": 50, "seconds": 1.0, "cut": false, "finished": true}', flush=True)
        print("x: a line of its own", file=sys.stderr, flush=True)
        time.sleep(60)
        """
    )
    script = tmp_path / "child.py"
    script.write_text(child, encoding="utf-8")
    output, killed = budget_module.run_runner([sys.executable, str(script)], {}, timeout=3.0, log=tmp_path / "child.log", echo=("x:",))
    assert killed and budget_module.partial_result(output)["train_tokens_per_second"] == 50.0
    assert "x: a line of its own" in (tmp_path / "child.log").read_text(encoding="utf-8")
    script.write_text("import sys; sys.exit(3)", encoding="utf-8")
    with pytest.raises(SystemExit, match="child.py failed with exit code 3"):
        budget_module.run_runner([sys.executable, str(script)], {}, timeout=30.0)


def test_a_progress_line_after_a_progress_bar_and_a_probe_are_read_as_such():
    """SuPar's bar writes no newline before a progress line; the parser's probe (an epoch on a prefix)
    gives a speed only where nothing else came, and is not one of the run's epochs."""
    bar = "  3%|#         | 2/60 00:01<00:40, 1.4it/s"
    probe = 'PROGRESS {"tool": "seqtransfer", "epoch": 0, "tokens": 300, "seconds": 3.0, "cut": true, "finished": true, "probe": true}'
    glued = bar + 'PROGRESS {"tool": "supar", "epoch": 1, "tokens": 90, "seconds": 3.0, "cut": false, "finished": false}'
    assert budget_module.partial_result(glued)["train_tokens_per_second"] == 30.0
    only_probe = budget_module.partial_result(probe)
    assert only_probe["epoch_seconds"] == [] and only_probe["train_tokens_per_second"] == 100.0
    after = budget_module.partial_result(probe + "\n" + glued)
    assert after["epoch_seconds"] == [] and after["train_tokens_per_second"] == 30.0


def test_a_budget_counts_from_when_the_comparison_started_the_process(monkeypatch):
    monkeypatch.setattr(budget_module.time, "time", lambda: 1000.0)
    monkeypatch.setattr(budget_module.time, "perf_counter", lambda: 50.0)
    assert budget_module.deadline_of(None) is None
    assert budget_module.deadline_of(30.0) == 80.0
    assert budget_module.deadline_of(30.0, started_at=992.0) == 72.0  # 8 s of imports already spent


def test_inference_is_timed_at_the_batch_sizes_that_fit(clock):
    """After the first batch size, each one only while its passes at the fastest pass so far still fit."""
    timings: dict[int, float] = {}
    timed = []
    for size in budget_module.sizes_that_fit("x", [16, 64, 256], timings, clock.now + 30.0, passes=4):
        timed.append(size)
        timings[size] = 5.0
        clock.now += 10.0  # two passes
    assert timed == [16, 64]  # at 20 s, four passes of 5 s would end at 40 s, past 30
    assert list(budget_module.sizes_that_fit("x", [16, 64], {16: 100.0}, None, passes=4)) == [16, 64]  # no deadline: every size
