"""`experiment run --selected FILE`: each method on each target at the setting its kept search
selected on dev, the other cells at the file's own settings, kept in a records file of their own."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_experiments import tiny_experiment

from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.grid import method_tasks, source_tasks
from seqtransfer.experiments.search_records import keep_lines, kept_at_selection, selected_settings, summary_record
from seqtransfer.experiments.spec import load_experiment
from seqtransfer.experiments.store import ResultsStore

SETTING = {"train.learning_rate": 0.0123, "model.dropout": 0.25}


def searched_experiment(tmp_path):
    """The tiny grid with a search for scratch on pos (cap 1 epoch), and its kept summary."""
    experiment = tiny_experiment(tmp_path)
    search = "search:\n  scratch:\n    pos: {algorithm: random, trials: 2, max_epochs: 1, space: {train.learning_rate: [0.01, 0.0123], model.dropout: [0.25]}}\n"
    experiment.write_text(experiment.read_text(encoding="utf-8") + search, encoding="utf-8")
    path = tmp_path / "tiny.search.jsonl"
    keep_lines(path, [summary_record({"experiment": "tiny", "method": "scratch", "target": "pos", "selected": {"setting": SETTING, "dev": 50.0}})])
    return experiment, path


def cells(spec, store):
    tasks = method_tasks(spec, store, None, [1], source_tasks(spec, store, None), {"scratch", "finetune"})
    return {task.record["method"]: task for task in tasks if task.record["target"] == "pos"}


def test_a_selected_cell_runs_at_its_searched_setting_and_epochs_and_the_others_as_the_file_says(tmp_path):
    experiment, path = searched_experiment(tmp_path)
    store = ResultsStore(tmp_path / "results")
    spec = load_experiment(experiment)
    own = cells(spec, store)
    spec.selected = selected_settings(path, "tiny")
    searched = cells(spec, store)
    config = searched["scratch"].config
    assert config["train"]["learning_rate"] == 0.0123 and config["model"]["dropout"] == 0.25 and config["train"]["max_epochs"] == 1
    assert searched["scratch"].record["selected_setting"] == SETTING and searched["scratch"].run_id != own["scratch"].run_id
    assert own["scratch"].config["train"]["max_epochs"] == 2 and "selected_setting" not in own["scratch"].record
    assert searched["finetune"].run_id == own["finetune"].run_id and "selected_setting" not in searched["finetune"].record


def test_a_selected_cell_keeps_its_search_s_epoch_cap_when_the_file_s_search_block_changed(tmp_path):
    from seqtransfer.experiments.search_records import selected_epoch_caps

    experiment, path = searched_experiment(tmp_path)
    keep_lines(path, [summary_record({"experiment": "tiny", "method": "scratch", "target": "pos", "max_epochs": 1, "selected": {"setting": SETTING, "dev": 50.0}})])
    experiment.write_text(experiment.read_text(encoding="utf-8").split("search:")[0], encoding="utf-8")  # the search block removed since
    spec = load_experiment(experiment)
    spec.selected, spec.selected_epochs = selected_settings(path, "tiny"), selected_epoch_caps(path, "tiny")
    assert spec.selected_epochs == {("scratch", "pos"): 1}
    assert cells(spec, ResultsStore(tmp_path / "results"))["scratch"].config["train"]["max_epochs"] == 1


def test_records_of_other_settings_than_the_command_runs_are_refused_in_one_line(tmp_path):
    own = {"experiment": "tiny", "method": "scratch", "target": "pos", "seed": 1}
    searched = {**own, "selected_setting": SETTING}
    other_method = {**own, "method": "finetune"}
    selection = {("scratch", "pos"): SETTING}
    assert kept_at_selection([searched, other_method], selection, "kept.jsonl") == [searched, other_method]
    assert kept_at_selection([own], {}, "kept.jsonl") == [own]
    assert kept_at_selection([other_method], selection, "kept.jsonl") == [other_method]  # a selected file's first cells: no search of theirs
    with pytest.raises(SeqTransferError, match="scratch / pos at the experiment file's own settings") as error:
        kept_at_selection([own, other_method], selection, "kept.jsonl")
    assert "records file of their own" in str(error.value)
    with pytest.raises(SeqTransferError, match="scratch / pos at a searched setting") as error:
        kept_at_selection([searched], {}, "kept.jsonl")
    assert "--selected" in str(error.value)


def test_a_selected_file_drops_cells_kept_at_another_setting_than_the_one_selected_now():
    """Its search went on and selected another setting, or the cell ran at the file's own setting
    before its search ended: the record is dropped (the grid runs the cell again), and it is said."""
    searched = {"experiment": "tiny", "method": "scratch", "target": "pos", "seed": 1, "selected_setting": SETTING}
    before_the_search = {**searched, "method": "finetune", "selected_setting": None}
    lines = []
    now = {("scratch", "pos"): {**SETTING, "train.learning_rate": 0.01}, ("finetune", "pos"): SETTING}
    assert kept_at_selection([searched, before_the_search], now, "kept.jsonl", log=lines.append) == []
    assert len(lines) == 2 and lines[0].startswith("scratch / pos / seed 1: kept at other settings") and lines[1].startswith("finetune / pos")


def test_a_cell_at_a_searched_setting_and_at_the_file_s_own_are_two_records_and_each_command_reads_its_own(tmp_path):
    """The store keeps both (one would replace the other, and the next --records file would get the
    wrong one); `experiment run` and `report` each take the one at the settings they run or show."""
    from seqtransfer.experiments.kept import at_selection, merge, selection_of

    store = ResultsStore(tmp_path / "results")
    own = {"experiment": "tiny", "method": "scratch", "target": "pos", "seed": 1, "run_directory": "results/runs/pos-scratch-0123456789ab", "test": 50.0}
    searched = {**own, "run_directory": "results/runs/pos-scratch-ba9876543210", "test": 60.0, "selected_setting": SETTING}
    store.save_record(own)
    store.save_record(searched)
    assert [record["test"] for record in store.records("tiny")] == [50.0, 60.0]
    assert merge([own], at_selection(store.records("tiny"), selection_of([own]))) == [own]
    assert merge([searched], at_selection(store.records("tiny"), selection_of([searched]))) == [searched]
    assert at_selection(store.records("tiny"), {}) == [own]


def test_a_search_file_without_a_selection_is_one_line(tmp_path):
    path = tmp_path / "tiny.search.jsonl"
    keep_lines(path, [{"kind": "trial", "experiment": "tiny", "method": "scratch", "target": "pos", "digest": "0123456789ab", "history": [], "status": "stopped"}])
    with pytest.raises(SeqTransferError, match="no search of 'tiny' has a selected setting"):
        selected_settings(path, "tiny")
    with pytest.raises(SeqTransferError, match="no such search records file"):
        selected_settings(tmp_path / "tiny.serach.jsonl", "tiny")


def test_the_command_refuses_a_records_file_of_the_file_s_own_settings_in_one_line(tmp_path):
    experiment, path = searched_experiment(tmp_path)
    records = tmp_path / "tiny.records.jsonl"
    run_id = "pos-scratch-0123456789ab"
    record = {"experiment": "tiny", "method": "scratch", "target": "pos", "seed": 1, "run_id": run_id, "run_directory": f"results/runs/{run_id}", "test": 50.0}
    records.write_text(json.dumps(record) + "\n", encoding="utf-8")
    command = [sys.executable, "-m", "seqtransfer.cli", "experiment", "list", str(experiment), "--selected", str(path), "--records", str(records), "--results", str(tmp_path / "results")]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "scratch / pos at the experiment file's own settings" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_report_names_the_cells_at_a_searched_setting():
    from seqtransfer.experiments.report import selected_settings_note

    records = [{"method": "scratch", "target": "pos", "selected_setting": SETTING}, {"method": "finetune", "target": "pos"}]
    lines = selected_settings_note(records)
    assert lines[-1] == "- scratch / pos: `model.dropout=0.25, train.learning_rate=0.0123`" and len(lines) == 4
    assert selected_settings_note(records[1:]) == []


def test_the_page_of_cells_at_searched_settings_has_its_own_title_and_notes(tmp_path):
    from seqtransfer.cli import run

    experiment, _ = searched_experiment(tmp_path)
    text = experiment.read_text(encoding="utf-8").replace("reference: scratch", "reference: scratch\nnotes: [At the file's settings.]\nselected_notes: [At searched settings.]")
    experiment.write_text(text, encoding="utf-8")
    own = {"experiment": "tiny", "method": "scratch", "target": "pos", "seed": 1, "run_directory": "results/runs/pos-scratch-0123456789ab", "metric": "accuracy"}
    own.update(dev=40.0, test=50.0, seconds=1.0, parameters=100)
    pages = {}
    for name, record in (("own", own), ("searched", {**own, "run_directory": "results/runs/pos-scratch-ba9876543210", "selected_setting": SETTING})):
        records = tmp_path / f"{name}.records.jsonl"
        records.write_text(json.dumps(record) + "\n", encoding="utf-8")
        pages[name] = run(["report", str(experiment), "--records", str(records), "--results", str(tmp_path / "results"), "--trials", "10"])
    assert "- At the file's settings." in pages["own"] and "At searched settings" not in pages["own"] and "each searched method" not in pages["own"]
    assert pages["searched"].startswith("# tiny grid: each searched method at the setting its search selected") and "- At searched settings." in pages["searched"]
    assert "- scratch / pos: `model.dropout=0.25, train.learning_rate=0.0123`" in pages["searched"]


def test_an_ensemble_of_a_searched_method_is_a_cell_at_searched_settings_too(tmp_path):
    """Its members run at the searched setting, so its runs differ from the file's own: the store keeps
    the two apart, and each command reads the one of its settings."""
    from seqtransfer.experiments.grid import cell_record, spec_selection
    from seqtransfer.experiments.kept import at_selection

    experiment, path = searched_experiment(tmp_path)
    spec = load_experiment(experiment)
    own = {**cell_record(spec, "ensemble", "pos", 1), "run_directory": "results/runs/a"}
    spec.selected = selected_settings(path, "tiny")
    searched = {**cell_record(spec, "ensemble", "pos", 1), "run_directory": "results/runs/b"}
    assert searched["selected_setting"] == {"read": {"scratch / pos": SETTING}} and "selected_setting" not in own
    assert spec_selection(spec) == {("scratch", "pos"): SETTING, ("ensemble", "pos"): {"read": {"scratch / pos": SETTING}}}
    store = ResultsStore(tmp_path / "results")
    assert store.record_path(own) != store.record_path(searched)
    assert at_selection([own, searched], spec_selection(spec)) == [searched] and at_selection([own, searched], {}) == [own]


def test_a_search_without_an_epoch_cap_keeps_none_and_the_file_s_later_cap_does_not_apply(tmp_path):
    from seqtransfer.experiments.search_records import selected_epoch_caps

    experiment, path = searched_experiment(tmp_path)
    keep_lines(path, [summary_record({"experiment": "tiny", "method": "scratch", "target": "pos", "max_epochs": None, "selected": {"setting": SETTING, "dev": 50.0}})])
    spec = load_experiment(experiment)  # its search block caps at 1 epoch
    spec.selected, spec.selected_epochs = selected_settings(path, "tiny"), selected_epoch_caps(path, "tiny")
    assert spec.selected_epochs == {("scratch", "pos"): None}
    assert cells(spec, ResultsStore(tmp_path / "results"))["scratch"].config["train"]["max_epochs"] == 2


def test_notes_only_on_the_page_of_searched_cells_needs_its_records_file(tmp_path):

    experiment, _ = searched_experiment(tmp_path)
    page = tmp_path / "page.md"
    page.write_text("# tiny grid: each searched method at the setting its search selected\n\nExperiment `tiny`, 1 finished run.\n\n## Our results (test)\n", encoding="utf-8")
    before = page.read_text(encoding="utf-8")
    command = [sys.executable, "-m", "seqtransfer.cli", "report", str(experiment), "--output", str(page), "--notes-only", "--results", str(tmp_path / "results")]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2 and "selected_notes" in result.stderr and "--records" in result.stderr and "Traceback" not in result.stderr
    assert page.read_text(encoding="utf-8") == before
