"""Kept search trials: each trial is kept as it ends, read back by its run digest, and set aside
when it read a source or encoder other than the one here now; no Ray cluster needed."""

from __future__ import annotations

import contextlib
import json
import sys
from types import SimpleNamespace

import pytest

from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.search_records import keep_lines, kept_summaries, kept_trials, read_search_records, summary_record, trial_keeper
from seqtransfer.experiments.store import ResultsStore


def finished_run(store: ResultsStore, run_id: str, test: float) -> None:
    directory = store.run_directory(run_id)
    directory.mkdir(parents=True)
    metrics = {"metric": "span_f1", "test": {"f1": test}, "seconds": 12.5, "history": [], "source_weights": "s1"}
    (directory / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")


def test_a_trial_is_kept_as_it_ends_finished_or_stopped_and_a_failed_one_is_not(tmp_path):
    pytest.importorskip("ray")
    store, path = ResultsStore(tmp_path / "results"), tmp_path / "tiny.search.jsonl"
    finished_run(store, "WNUT-FT-0123456789ab", 41.5)
    keeper = trial_keeper(path, "tiny", "FT", "WNUT", store)
    for trial_id, run_id, devs in (("a", "WNUT-FT-0123456789ab", [30.0, 40.0]), ("b", "WNUT-FT-ba9876543210", [10.0])):
        trial = SimpleNamespace(trial_id=trial_id, config={"train.learning_rate": 0.001 if trial_id == "a" else 0.01})
        for epoch, dev in enumerate(devs, start=1):
            keeper.on_trial_result(0, [], trial, {"epoch": epoch, "dev": dev, "run_id": run_id})
        keeper.on_trial_complete(0, [], trial)
    keeper.on_trial_complete(0, [], SimpleNamespace(trial_id="c", config={}))  # failed before its first epoch: nothing to keep
    trials = {record["digest"]: record for record in read_search_records(path, "tiny")}
    assert set(trials) == {"0123456789ab", "ba9876543210"}
    finished, stopped = trials["0123456789ab"], trials["ba9876543210"]
    assert finished["status"] == "finished" and finished["test"] == 41.5 and finished["seconds"] == 12.5 and finished["source_weights"] == "s1"
    assert finished["history"] == [{"epoch": 1, "dev": 30.0}, {"epoch": 2, "dev": 40.0}] and finished["setting"] == {"train.learning_rate": 0.001}
    assert stopped["status"] == "stopped" and "test" not in stopped


def test_a_kept_trial_read_back_and_stopped_at_an_earlier_rung_keeps_its_line(tmp_path):
    """A finished trial read back on a fresh machine (its run not in the store) and stopped by the
    scheduler at rung 2 keeps its 3 epochs, test score and status; one that trained on is written."""
    pytest.importorskip("ray")
    store, path = ResultsStore(tmp_path / "results"), tmp_path / "tiny.search.jsonl"
    history = [{"epoch": 1, "dev": 30.0}, {"epoch": 2, "dev": 40.0}, {"epoch": 3, "dev": 45.0}]
    finished = {"kind": "trial", "experiment": "tiny", "method": "FT", "target": "WNUT", "digest": "0123456789ab", "history": history, "status": "finished", "test": 41.5}
    stopped = {**finished, "digest": "ba9876543210", "history": history[:1], "status": "stopped", "test": None}
    keep_lines(path, [finished, stopped])
    keeper = trial_keeper(path, "tiny", "FT", "WNUT", store, {"0123456789ab": finished, "ba9876543210": stopped})
    for trial_id, run_id, epochs in (("a", "WNUT-FT-0123456789ab", 2), ("b", "WNUT-FT-ba9876543210", 2)):
        trial = SimpleNamespace(trial_id=trial_id, config={"train.learning_rate": 0.001})
        for entry in history[:epochs]:
            keeper.on_trial_result(0, [], trial, {**entry, "run_id": run_id})
        keeper.on_trial_complete(0, [], trial)
    trials = {record["digest"]: record for record in read_search_records(path, "tiny")}
    assert trials["0123456789ab"] == finished
    assert trials["ba9876543210"]["history"] == history[:2] and trials["ba9876543210"]["status"] == "stopped"


def test_a_kept_stopped_trial_whose_run_finished_here_since_is_written_finished(tmp_path):
    """The grid's cell at the selected setting is the trial's own run: trained to its end here, the
    trial read back and stopped again at the same rung is kept as finished, with its test score."""
    pytest.importorskip("ray")
    store, path = ResultsStore(tmp_path / "results"), tmp_path / "tiny.search.jsonl"
    history = [{"epoch": 1, "dev": 30.0}, {"epoch": 2, "dev": 40.0}]
    stopped = {"kind": "trial", "experiment": "tiny", "method": "FT", "target": "WNUT", "digest": "0123456789ab", "history": history, "status": "stopped", "test": None}
    keep_lines(path, [stopped])
    finished_run(store, "WNUT-FT-0123456789ab", 41.5)
    keeper = trial_keeper(path, "tiny", "FT", "WNUT", store, {"0123456789ab": stopped})
    trial = SimpleNamespace(trial_id="a", config={"train.learning_rate": 0.001})
    for entry in history:
        keeper.on_trial_result(0, [], trial, {**entry, "run_id": "WNUT-FT-0123456789ab"})
    keeper.on_trial_complete(0, [], trial)
    (kept,) = read_search_records(path, "tiny")
    assert kept["status"] == "finished" and kept["test"] == 41.5


def test_kept_trials_stand_for_a_trial_only_where_they_read_the_weights_here_now(tmp_path):
    path = tmp_path / "tiny.search.jsonl"
    base = {"kind": "trial", "experiment": "tiny", "method": "FT", "target": "WNUT", "history": [], "status": "finished"}
    keep_lines(path, [{**base, "digest": "a", "source_weights": "s1"}, {**base, "digest": "b", "source_weights": "s2"}, {**base, "digest": "c"}, {**base, "digest": "d", "target": "TweeBank"}])
    keep_lines(path, [{**base, "digest": "a", "source_weights": "s1", "status": "stopped"}])  # the same trial again: replaced, not doubled
    records = read_search_records(path, "tiny")
    assert len(records) == 4
    assert sorted(kept_trials(records, "FT", "WNUT", {"source_weights": "s1"})) == ["a", "c"]
    assert sorted(kept_trials(records, "FT", "WNUT", {"source_weights": None})) == ["a", "b", "c"]  # the source is not here: the trials decide
    assert kept_trials(records, "FT", "WNUT", {})["a"]["status"] == "stopped"


def test_a_summary_is_kept_beside_the_trials_and_read_for_the_report(tmp_path):
    path = tmp_path / "tiny.search.jsonl"
    summary = {"experiment": "tiny", "method": "FT", "target": "WNUT", "trials": [], "selected": {"dev": 1.0}, "config": "FT--WNUT.yaml"}
    keep_lines(path, [summary_record(summary), summary_record({**summary, "experiment": "other"})])
    assert kept_summaries(path, "tiny") == [summary]


def test_a_line_that_is_not_a_kept_trial_gives_one_clear_error_naming_the_line(tmp_path):
    path = tmp_path / "tiny.search.jsonl"
    path.write_text('{"kind": "trial", "experiment": "tiny"}\n{"experiment": "tiny"}\n', encoding="utf-8")
    with pytest.raises(SeqTransferError) as raised:
        read_search_records(path)
    assert raised.value.line == 2 and "'kind'" in str(raised.value)
    path.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match="not a JSON record"):
        read_search_records(path)


class FakeTune:
    """``ray.tune``'s report as a trial sees it: each report returns only if the scheduler asks for
    more (``stop_after``: the epoch whose report Tune answers by stopping the trial)."""

    class Stopped(Exception):
        pass

    def __init__(self, stop_after: int | None) -> None:
        self.reports, self.stop_after = [], stop_after

    def report(self, metrics: dict) -> None:
        self.reports.append((metrics["epoch"], metrics["dev"]))
        if metrics["epoch"] == self.stop_after:
            raise FakeTune.Stopped


def run_trial(tmp_path, monkeypatch, kept_trial: dict | None, stop_after: int | None) -> tuple[FakeTune, list[str]]:
    """One trial of a search over train.learning_rate, its training a stand-in of three epochs of dev 10, 20, 30 in two phases."""
    from seqtransfer.config import RunConfig, config_to_dict
    from seqtransfer.experiments import search
    from seqtransfer.experiments.grid import identity_of
    from seqtransfer.experiments.store import content_id

    tune, trained = FakeTune(stop_after), []
    monkeypatch.setitem(sys.modules, "ray", SimpleNamespace(tune=tune))

    def train_tagger(config, directory, log, show_progress, epoch_reports):  # two phases (chain-thaw's are several): epochs 1, 2, then 1
        trained.append(str(directory))
        for step, epoch in ((1, 1), (2, 2), (3, 1)):
            for report in epoch_reports:
                report({"epoch": epoch, "step": step, "dev": 10.0 * step})

    monkeypatch.setattr(search, "train_tagger", train_tagger)
    base, values = config_to_dict(RunConfig()), {"train.learning_rate": 0.01}
    digest = content_id(identity_of(search.trial_config(base, values), None))
    kept = {digest: {**kept_trial, "digest": digest}} if kept_trial else {}
    trainable = search.make_trainable(base, str(tmp_path / "results"), "WNUT-", None, None, kept)
    with contextlib.suppress(FakeTune.Stopped):
        trainable(values)
    return tune, trained


def test_a_kept_finished_trial_is_read_back_and_trains_nothing(tmp_path, monkeypatch):
    kept = {"status": "finished", "history": [{"epoch": 1, "dev": 10.0}, {"epoch": 2, "dev": 20.0}, {"epoch": 3, "dev": 30.0}]}
    tune, trained = run_trial(tmp_path, monkeypatch, kept, stop_after=None)
    assert tune.reports == [(1, 10.0), (2, 20.0), (3, 30.0)] and trained == []


def test_a_kept_stopped_trial_trains_again_only_where_the_scheduler_lets_it_go_on(tmp_path, monkeypatch):
    kept = {"status": "stopped", "history": [{"epoch": 1, "dev": 10.0}]}
    tune, trained = run_trial(tmp_path, monkeypatch, kept, stop_after=1)  # stopped at the same rung again: no training
    assert tune.reports == [(1, 10.0)] and trained == []
    tune, trained = run_trial(tmp_path, monkeypatch, kept, stop_after=None)  # let go on: trained from its start, epoch 1 not reported twice
    assert tune.reports == [(1, 10.0), (2, 20.0), (3, 30.0)] and len(trained) == 1


def test_a_run_of_several_phases_reports_one_growing_epoch_count_and_keeps_it():
    """Chain-thaw numbers each phase's epochs from 1; a search (ASHA's rungs, a resumed trial's
    reported epochs) needs one count that only grows, read back the same from the run's history."""
    from seqtransfer.experiments.search_records import run_epochs
    from seqtransfer.workflows.run_path import numbered_across_phases

    reports = []
    second_phase = numbered_across_phases(reports.append, epochs_before=2)
    second_phase({"epoch": 1, "dev": 30.0})
    assert reports == [{"epoch": 1, "dev": 30.0, "step": 3}]
    history = [{"phase": "head", "epoch": 1, "dev": 10.0}, {"phase": "head", "epoch": 2, "dev": 20.0}, {"phase": "all", "epoch": 1, "dev": 30.0}]
    assert run_epochs(history) == [{"epoch": 1, "dev": 10.0}, {"epoch": 2, "dev": 20.0}, {"epoch": 3, "dev": 30.0}]


def test_a_trials_run_is_named_by_its_settings_as_given_not_by_where_the_checkout_lies(tmp_path, monkeypatch):
    """Tune trials read absolute paths (each trial starts in a folder of its own), but the trial's run is named
    by the settings as the experiment file gives them: another checkout, or the grid's cell, gives the same name."""
    from seqtransfer.config import RunConfig, config_to_dict
    from seqtransfer.experiments import search
    from seqtransfer.experiments.grid import identity_of
    from seqtransfer.experiments.store import content_id

    tune = FakeTune(None)
    monkeypatch.setitem(sys.modules, "ray", SimpleNamespace(tune=tune))
    monkeypatch.setattr(search, "train_tagger", lambda config, directory, log, show_progress, epoch_reports: None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "labels.yaml").write_text("NN: NOUN\n")
    given = config_to_dict(RunConfig())
    given["data"]["label_map"] = "labels.yaml"
    values = {"train.learning_rate": 0.01}
    trainable = search.make_trainable(search.absolute_paths(given), str(tmp_path / "results"), "WNUT-", None, None, {}, given)
    with contextlib.suppress(FakeTune.Stopped):
        trainable(values)
    (trial_run,) = (tmp_path / "results" / "runs").iterdir()
    assert trial_run.name == "WNUT-" + content_id(identity_of(search.trial_config(given, values), None))
    assert trial_run.name != "WNUT-" + content_id(identity_of(search.trial_config(search.absolute_paths(given), values), None))
