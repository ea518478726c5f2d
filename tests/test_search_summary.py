"""A search's summary when its trials fail: the failure itself is named, not a budget too small (no Ray needed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.search import render_searches, search_summary, trial_row


def failed_result(message: str) -> SimpleNamespace:
    """A Tune result of a trial that raised before its first epoch report."""
    error = RuntimeError(f"Traceback (most recent call last):\n  File 'train.py', line 3\n{message}\n")
    return SimpleNamespace(metrics_dataframe=None, metrics={}, config={"train.learning_rate": 0.01}, error=error)


def test_a_search_whose_trials_all_fail_names_the_first_error_and_where_the_error_files_are(tmp_path):
    search = SimpleNamespace(space={"train.learning_rate": {"loguniform": [0.001, 0.1]}}, algorithm="asha", trials=2)
    rows = [trial_row(failed_result("SeqTransferError: vectors.txt: vector file not found"), search, store=None) for _ in range(2)]
    assert rows[0]["status"] == "failed" and rows[0]["error"] == "SeqTransferError: vectors.txt: vector file not found"
    task = SimpleNamespace(record={"experiment": "tiny", "method": "FT", "target": "WNUT"})
    with pytest.raises(SeqTransferError) as raised:
        search_summary(task, search, rows, tmp_path)
    message = str(raised.value)
    assert "2 of 2 trials failed, the first with: SeqTransferError: vectors.txt: vector file not found" in message
    assert str(tmp_path / "tune") in message and "raise the budget" not in message


def test_a_search_whose_trials_were_all_stopped_early_asks_for_a_larger_budget(tmp_path):
    search = SimpleNamespace(space={"train.learning_rate": [0.01]}, algorithm="asha", trials=1)
    stopped = SimpleNamespace(metrics_dataframe=None, metrics={}, config={"train.learning_rate": 0.01}, error=None)
    rows = [trial_row(stopped, search, store=None)]
    assert rows[0]["status"] == "stopped" and "error" not in rows[0]
    task = SimpleNamespace(record={"experiment": "tiny", "method": "FT", "target": "WNUT"})
    with pytest.raises(SeqTransferError, match="no trial finished"):
        search_summary(task, search, rows, tmp_path)


def test_the_report_counts_the_failed_trials_beside_the_finished_ones():
    trial = {"setting": {"train.learning_rate": 0.01}, "run_id": "r", "dev": 40.0, "epochs": 2, "test": 30.0}
    summary = {
        "method": "FT",
        "target": "WNUT",
        "algorithm": "asha",
        "trials": [{**trial, "status": "finished"}, {**trial, "status": "failed", "dev": None, "error": "boom"}, {**trial, "status": "stopped"}],
        "selected": {**trial, "status": "finished"},
        "config": "FT--WNUT.yaml",
    }
    assert "| FT | WNUT | asha | 3 (1 finished, 1 failed) | train.learning_rate=0.01 | 40.00 | 30.00 |" in render_searches([summary])
    summary["trials"] = summary["trials"][:1]
    assert "| 1 (1 finished) |" in render_searches([summary])
