"""A search's summaries when its trials fail (the failure itself is named, not a budget too small), and what a local Ray cluster is started with; no Ray needed."""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

import pytest

from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.backends import RayBackend
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
    page = render_searches([summary])
    assert "| FT | WNUT | asha | 3 (1 finished, 1 failed) | train.learning_rate=0.01 | 40.00 | 30.00 |" in page
    every = page[page.index("### FT / WNUT: every trial") :].splitlines()[4:]
    assert every == [
        "| train.learning_rate=0.01 | finished | 2 | 40.00 | 30.00 |",
        "| train.learning_rate=0.01 | failed | 2 |  | 30.00 |",
        "| train.learning_rate=0.01 | stopped | 2 | 40.00 | 30.00 |",
    ]
    summary["trials"] = summary["trials"][:1]
    assert "| 1 (1 finished) |" in render_searches([summary])


def test_a_local_ray_cluster_keeps_the_commands_priority_for_its_runs(monkeypatch):
    """Ray would start its workers 15 steps nicer than the command; a local cluster's runs keep the command's."""
    fake_ray = SimpleNamespace(is_initialized=lambda: True, remote=lambda **resources: lambda function: function)
    monkeypatch.setitem(sys.modules, "ray", fake_ray)
    monkeypatch.delenv("RAY_worker_niceness", raising=False)
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # restored after the test, as the variable below
    RayBackend("local")
    assert os.environ["RAY_worker_niceness"] == "0"
    monkeypatch.setenv("RAY_worker_niceness", "5")  # a user's own choice stays
    RayBackend("local")
    assert os.environ["RAY_worker_niceness"] == "5"


def test_a_finished_trial_read_back_and_stopped_at_a_rung_is_described_by_its_own_epochs(tmp_path):
    """Its run (here, or as a kept trial) trained 6 epochs and peaked at 3; Tune saw only its first 2."""
    import json

    import pandas

    from seqtransfer.experiments.store import ResultsStore

    store, run_id = ResultsStore(tmp_path / "results"), "WNUT-scratch-0123456789ab"
    history = [{"epoch": epoch, "dev": dev} for epoch, dev in enumerate([50.0, 52.0, 55.0, 53.0, 54.0, 53.5], start=1)]
    result = SimpleNamespace(metrics_dataframe=pandas.DataFrame(history[:2]), metrics={"run_id": run_id}, config={"train.learning_rate": 0.01}, error=None)
    search = SimpleNamespace(space={"train.learning_rate": [0.01]})
    kept = {"0123456789ab": {"status": "finished", "history": history, "test": 41.0}}
    assert {key: trial_row(result, search, store, kept)[key] for key in ("status", "epochs", "dev", "test")} == {"status": "finished", "epochs": 6, "dev": 55.0, "test": 41.0}
    store.run_directory(run_id).mkdir(parents=True)
    (store.run_directory(run_id) / "metrics.json").write_text(json.dumps({"metric": "span_f1", "test": {"f1": 42.0}, "history": history}), encoding="utf-8")
    assert {key: trial_row(result, search, store)[key] for key in ("status", "epochs", "dev", "test")} == {"status": "finished", "epochs": 6, "dev": 55.0, "test": 42.0}
    assert trial_row(result, search, ResultsStore(tmp_path / "elsewhere"))["epochs"] == 2  # stopped, as Tune saw it


def test_a_setting_reads_the_same_whatever_order_its_keys_came_in():
    """A search's live summary holds its space's order, its kept line sorted keys: a page rendered
    beside the search's folder and one from the kept file alone show the same line."""
    from seqtransfer.experiments.search_records import shown_setting

    live = {"train.learning_rate": 0.000740575922012801, "model.lora_rank": 16, "model.lora_alpha": 32}
    kept = json.loads(json.dumps(live, sort_keys=True))
    assert shown_setting(live) == shown_setting(kept) == "model.lora_alpha=32, model.lora_rank=16, train.learning_rate=0.0007406"


def test_a_page_of_kept_records_shows_the_kept_searches_alone_in_the_files_order(tmp_path, capsys):
    """Given --search-records, the searches come from it alone: a store's older summary of the same
    search (or a machine without the store) does not change the page; a page of the store alone
    shows the store's. Either way in the experiment file's order of methods, then targets."""
    from seqtransfer.commands.report import searches_section

    def summary(method: str, dev: float) -> dict:
        trial = {"setting": {"train.learning_rate": 0.01}, "run_id": "r", "dev": dev, "epochs": 2, "test": 30.0, "status": "finished"}
        return {"experiment": "tiny", "method": method, "target": "WNUT", "algorithm": "asha", "trials": [trial], "selected": trial, "config": f"{method}--WNUT.yaml"}

    kept = tmp_path / "tiny.search.jsonl"
    kept.write_text("".join(json.dumps({"kind": "summary", **summary(method, 50.0)}) + "\n" for method in ("LoRA", "FT")), encoding="utf-8")
    (tmp_path / "results" / "search" / "tiny").mkdir(parents=True)
    (tmp_path / "results" / "search" / "tiny" / "FT--WNUT.json").write_text(json.dumps(summary("FT", 44.0)), encoding="utf-8")
    experiment = SimpleNamespace(name="tiny", methods={"FT": None, "LoRA": None}, targets={"WNUT": None})
    arguments = SimpleNamespace(results=str(tmp_path / "results"), records="tiny.records.jsonl", search_records=str(kept))
    (tmp_path / "results" / "search" / "tiny" / "Adapters--WNUT.json").write_text(json.dumps(summary("Adapters", 40.0)), encoding="utf-8")
    page = searches_section(arguments, experiment)
    assert "44.00" not in page and page.index("| FT | WNUT |") < page.index("| LoRA | WNUT |") and "Adapters" not in page
    assert f"the store holds 1 search(es) {kept} lacks, left out (first: Adapters / WNUT)" in capsys.readouterr().err
    with pytest.raises(SeqTransferError, match="no such search records file"):
        searches_section(SimpleNamespace(**{**vars(arguments), "search_records": str(tmp_path / "typo.jsonl")}), experiment)
    assert page == searches_section(SimpleNamespace(**{**vars(arguments), "results": str(tmp_path / "elsewhere")}), experiment)
    assert searches_section(SimpleNamespace(**{**vars(arguments), "search_records": None}), experiment) == ""
    assert "the store holds 2 searches of tiny, left out: pass their kept file as --search-records" in capsys.readouterr().err
    assert page == searches_section(SimpleNamespace(**{**vars(arguments), "records": None}), experiment)  # the kept file named: it alone
    store_alone = SimpleNamespace(**{**vars(arguments), "records": None, "search_records": None})
    assert "| FT | WNUT | asha | 1 (1 finished) | train.learning_rate=0.01 | 44.00 |" in searches_section(store_alone, experiment)
