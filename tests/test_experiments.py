"""Experiment files load; a tiny grid runs, resumes without retraining, and builds ensembles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA_ROOT, FIXTURES, TINY_MODEL

from seqtransfer.cli import run
from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.spec import load_experiment

EXPERIMENTS = sorted((Path(__file__).parents[1] / "experiments").glob("*.yaml"))


@pytest.mark.parametrize("path", EXPERIMENTS, ids=[path.stem for path in EXPERIMENTS])
def test_every_experiment_file_loads(path):
    spec = load_experiment(path)
    assert spec.name == path.stem and spec.methods and spec.targets
    assert spec.command.startswith("seqtransfer experiment run")
    for method, cells in spec.paper.items():
        assert method in spec.methods and set(cells) <= set(spec.targets)


def tiny_experiment(tmp_path: Path) -> Path:
    """Source = the tiny NER fixture; target = the tiny POS fixture; four methods."""
    overrides = [*TINY_MODEL, "model.random_hidden=6", "train.max_epochs=2"]
    ner = [f"data.train={FIXTURES / 'tiny_ner_train.conll'}", f"data.dev={FIXTURES / 'tiny_ner_dev.conll'}", "data.columns=[word, ner]", "data.scheme=iob2"]
    pos = [f"data.train={FIXTURES / 'tiny_pos_train.conll'}", f"data.dev={FIXTURES / 'tiny_pos_dev.conll'}", f"data.test={FIXTURES / 'tiny_pos_dev.conll'}", "data.columns=[word, pos]"]
    text = f"""
name: tiny
title: tiny grid
command: seqtransfer experiment run tiny.yaml
overrides: {overrides}
sources:
  ner: {{dataset: null, overrides: {ner}}}
targets:
  pos: {{dataset: null, source: ner, overrides: {pos}}}
methods:
  scratch: {{scheme: scratch}}
  finetune: {{scheme: finetune}}
  pretrand: {{scheme: pretrand}}
  ensemble: {{ensemble: [finetune, scratch+1000]}}
reference: scratch
paper: {{scratch: {{pos: 50.0}}}}
"""
    path = tmp_path / "tiny.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def unlabeled_text(tmp_path: Path) -> Path:
    """Three unlabelled sentences, one per line: a method's target text."""
    path = tmp_path / "target.txt"
    path.write_text("Peter lives in Berlin\nMary visited Paris today\nJohn works for Google\n", encoding="utf-8")
    return path


def test_tiny_grid_runs_resumes_and_ensembles(tmp_path, capsys):
    experiment = tiny_experiment(tmp_path)
    results = tmp_path / "results"
    records = run(["experiment", "run", str(experiment), "--seeds", "2", "--results", str(results)])
    methods = {(record["method"], record["seed"]) for record in records}
    assert {("scratch", 1), ("scratch", 2), ("finetune", 1), ("pretrand", 2), ("ensemble", 1), ("scratch+1000", 1001)} <= methods
    assert len(list((results / "sources").iterdir())) == 1
    trained = sorted(path.name for path in (results / "runs").iterdir())
    capsys.readouterr()
    again = run(["experiment", "run", str(experiment), "--seeds", "2", "--results", str(results)])
    assert "(0, 0, 0 to train)" in capsys.readouterr().out
    assert sorted(path.name for path in (results / "runs").iterdir()) == trained
    assert [record["test"] for record in again] == [record["test"] for record in records]
    ensemble = next(record for record in records if record["method"] == "ensemble")
    finetune = next(record for record in records if record["method"] == "finetune" and record["seed"] == 1)
    assert ensemble["parameters"] > finetune["parameters"]
    scratch = next(record for record in records if record["method"] == "scratch" and record["seed"] == 1)
    # Same network, but the transferred model's word table also holds the source's words.
    assert finetune["parameters"] > scratch["parameters"]
    assert finetune["network_parameters"] == scratch["network_parameters"]
    assert ensemble["network_parameters"] == finetune["network_parameters"] + scratch["network_parameters"]
    folder = Path(ensemble["run_directory"])
    built = json.loads((folder / "metrics.json").read_text())
    assert len(built["member_runs"]) == 2 and all(built["member_runs"])
    member = Path(built["members"][0]) / "metrics.json"  # a member trained again in its folder (its LM pretrained again, say)
    member.write_text(member.read_text().replace('"seconds": ', '"seconds": 1', 1))
    capsys.readouterr()
    run(["experiment", "run", str(experiment), "--seeds", "2", "--results", str(results)])
    rebuilt = json.loads((folder / "metrics.json").read_text())
    assert rebuilt["member_runs"][0] != built["member_runs"][0] and rebuilt["member_runs"][1] == built["member_runs"][1]  # built again from it


def test_list_shows_every_cell_of_the_grid_and_where_it_stands(tmp_path, capsys):
    import torch

    from seqtransfer.experiments.status import describe_checkpoint
    from seqtransfer.training import checkpoint

    experiment = tiny_experiment(tmp_path)
    results, kept = tmp_path / "results", tmp_path / "kept.jsonl"
    run(["experiment", "list", str(experiment), "--results", str(results)])
    before = capsys.readouterr().out.splitlines()
    assert "scratch / pos / seed 1: to train" in before and "source ner: to train when a run needs it" in before
    assert before[-2] == "tiny: cells 5 to train; sources and runs other methods read 1 to train (seeds 1..1)"  # scratch, finetune, pretrand, the ensemble's extra member, the ensemble
    assert before[-1] == "time left: 5 runs to train, none with a finished run of the same kind to time them by"  # and the source two of them need
    run(["experiment", "run", str(experiment), "--only", "scratch", "--results", str(results), "--records", str(kept)])
    capsys.readouterr()
    run(["experiment", "list", str(experiment), "--results", str(results), "--seeds", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("scratch / pos / seed 1: dev ") for line in lines) and "scratch / pos / seed 2: to train" in lines
    assert lines[-1].startswith("time left: about ") and " for 1 of the 8 runs to train" in lines[-1]  # seed 2 of scratch, timed by seed 1
    run(["experiment", "list", str(experiment), "--results", str(tmp_path / "fresh"), "--records", str(kept)])  # another machine: the kept record holds the cell
    assert any(line.startswith("scratch / pos / seed 1: dev ") and line.endswith("[kept record]") for line in capsys.readouterr().out.splitlines())
    model = torch.nn.Linear(2, 2)
    for folder, epoch in (("jackknife/fold-1/checkpoint/train", 9), ("checkpoint/train", 3)):  # a fold tagger's checkpoint is not the run's
        (tmp_path / "run" / folder).mkdir(parents=True)
        checkpoint.save(tmp_path / "run" / folder, model, torch.optim.SGD(model.parameters(), lr=0.1), checkpoint.TrainingState({}, epoch=epoch, best_epoch=2, best_score=71.5))
    assert describe_checkpoint(tmp_path / "run") == "phase 'train' after epoch 3 (best dev 71.50 at epoch 2)"
    inside = checkpoint.TrainingState({}, epoch=3, best_epoch=2, best_score=71.5, progress=checkpoint.EpochProgress(4, batches=120))
    checkpoint.save(tmp_path / "run" / "checkpoint/train", model, torch.optim.SGD(model.parameters(), lr=0.1), inside)  # saved inside epoch 4
    assert describe_checkpoint(tmp_path / "run") == "phase 'train' after epoch 3 (best dev 71.50 at epoch 2), 120 batches into epoch 4"
    assert describe_checkpoint(tmp_path / "nothing") is None
    with pytest.raises(SeqTransferError, match="--seeds must be at least 1"):
        run(["experiment", "list", str(experiment), "--seeds", "0"])
    run(["experiment", "list", str(experiment), "--results", str(results), "--seeds", "2-3", "--only", "scratch"])  # other seeds only: a second grid beside the first
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("scratch / pos")] == ["scratch / pos / seed 2: to train", "scratch / pos / seed 3: to train"]
    run(["experiment", "list", str(experiment), "--results", str(tmp_path / "fresh"), "--seeds", "2-3", "--only", "scratch", "--records", str(kept)])
    assert " for 2 of the 2 runs to train" in capsys.readouterr().out.splitlines()[-1]  # timed by seed 1's kept record, a seed the listing leaves out
    experiment.write_text(experiment.read_text(encoding="utf-8").replace("  scratch: {scheme: scratch}", "  scratch: {scheme: scratch}\n  -noisy: {scheme: scratch}"), encoding="utf-8")
    run(["experiment", "list", str(experiment), "--results", str(results), "--only", "-noisy", "--targets", "pos"])  # a method named like an option
    cells = [line for line in capsys.readouterr().out.splitlines() if " / pos / " in line]
    assert len(cells) == 1 and cells[0].startswith("-noisy / pos / seed 1: ")  # the scratch run's settings: done already
    from seqtransfer.commands.experiment import seed_list

    assert seed_list("3") == [1, 2, 3] and seed_list("2-3") == [2, 3] and seed_list("3,1") == [1, 3]
    with pytest.raises(SeqTransferError, match="is not a number, a range or a list"):
        seed_list("two")


def test_unknown_key_in_experiment_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ntitle: t\ncommand: c\ntargets: {}\nmethods: {}\nmethod: {}\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match="did you mean 'methods'"):
        load_experiment(path)


@pytest.mark.parametrize(
    "hierarchy, message", [("{pos: [dp], dp: [pos]}", "hierarchy: model.tasks has a cycle among pos, dp"), ("{pos: [], dp: [chunk]}", "hierarchy: task 'dp' reads unknown task 'chunk'")]
)
def test_a_hierarchy_with_a_cycle_or_an_unknown_input_is_one_line_when_the_file_loads(tmp_path, hierarchy, message):
    path = tmp_path / "cycle.yaml"
    path.write_text(
        f"name: c\ntitle: t\ncommand: c\nhierarchy: {hierarchy}\ntargets: {{pos: {{dataset: tweebank}}, dp: {{dataset: tweebank}}}}\nmethods: {{Multi-task: {{scheme: scratch, multitask: true}}}}\n",
        encoding="utf-8",
    )
    with pytest.raises(SeqTransferError, match=message):
        load_experiment(path)


def test_report_command_renders_markdown_and_csv(tmp_path):
    experiment = tiny_experiment(tmp_path)
    results = tmp_path / "results"
    run(["experiment", "run", str(experiment), "--results", str(results)])
    output = tmp_path / "report.md"
    text = run(["report", str(experiment), "--results", str(results), "--output", str(output), "--dev", "--trials", "200"])
    assert output.read_text(encoding="utf-8") == text
    for method in ("scratch", "finetune", "pretrand", "ensemble"):
        assert method in text
    assert "dev split" in text
    assert "| ner | " in text.split("## Source runs")[1].split("## ")[0]
    assert output.with_suffix(".csv").read_text(encoding="utf-8").startswith("method,target")
    cost = text.split("## Cost")[1].split("## ")[0]
    rows = {line.split(" | ")[0].strip("| "): line for line in cost.splitlines() if line.startswith("| ") and " | pos | " in line}
    assert {"scratch", "finetune", "pretrand"} <= set(rows)
    trainable = {method: int(row.split(" | ")[3].replace(",", "")) for method, row in rows.items()}
    assert trainable["pretrand"] > trainable["finetune"] > 0  # PretRand adds a random branch
    assert (tmp_path / "report.cost.svg").is_file() and (tmp_path / "report.cost.png").is_file() and "report.cost.svg" in cost
    experiment.write_text(experiment.read_text(encoding="utf-8") + "notes: [A finding on test.]\n", encoding="utf-8")
    noted = run(["report", str(experiment), "--results", str(results), "--dev", "--trials", "200"])
    assert noted.count("- A finding on test.") == 1 and "A finding" not in noted.split("dev split")[1]  # the notes read the main split
    experiment.write_text(experiment.read_text(encoding="utf-8").replace("paper: {", "paper_split: dev\npaper: {"), encoding="utf-8")
    records = {record["method"]: record for record in run(["experiment", "list", str(experiment), "--results", str(results)]) if record.get("target") == "pos"}
    dev_first = run(["report", str(experiment), "--results", str(results), "--trials", "200"])  # the paper's numbers are dev scores
    ours, rest = dev_first.split("## Our results (dev)")[1].split("## Our results (test)")
    assert f"{records['scratch']['dev']:.2f}" in ours.split("## ")[0] and "50.00" in ours and "50.00" not in rest  # the paper beside the dev table only
    experiment.write_text(experiment.read_text(encoding="utf-8").replace("paper_split: dev", "paper_split: train"), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="paper_split must be dev or test"):
        load_experiment(experiment)
    # a paper that gives dev numbers beside its test ones (PretRand Table 2): the dev tables compare them
    experiment.write_text(experiment.read_text(encoding="utf-8").replace("paper_split: train\n", "paper_dev: {scratch: {pos: 47.5}}\n"), encoding="utf-8")
    both = run(["report", str(experiment), "--results", str(results), "--dev", "--trials", "200"])
    test_part, dev_part = both.split("dev split")[0], both.split("dev split")[1]
    assert "50.00" in test_part and "47.50" not in test_part and "47.50" in dev_part and "50.00" not in dev_part
    experiment.write_text(experiment.read_text(encoding="utf-8").replace("paper: {", "paper_split: dev\npaper: {"), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="paper_dev gives dev numbers beside test ones"):
        load_experiment(experiment)


def test_same_settings_under_another_target_name_reuse_the_run(tmp_path, capsys):
    experiment = tiny_experiment(tmp_path)
    results = tmp_path / "results"
    run(["experiment", "run", str(experiment), "--only", "scratch", "--results", str(results)])
    renamed = tmp_path / "renamed.yaml"
    renamed.write_text(experiment.read_text(encoding="utf-8").replace("name: tiny", "name: renamed").replace("  pos: {", "  POS again: {"), encoding="utf-8")
    capsys.readouterr()
    records = run(["experiment", "run", str(renamed), "--only", "scratch", "--results", str(results)])
    assert "(0, 0, 0 to train)" in capsys.readouterr().out
    assert [record["target"] for record in records] == ["POS again"]
    assert len(list((results / "runs").iterdir())) == 1


def test_multitask_methods_train_one_model_per_seed_and_record_every_target(tmp_path, capsys):
    """A multi-task source (pretraining) and a multi-task method fine-tuned from it, beside mono-task runs."""
    overrides = [*TINY_MODEL, "train.max_epochs=2"]
    ner = {"train": str(FIXTURES / "tiny_ner_train.conll"), "dev": str(FIXTURES / "tiny_ner_dev.conll"), "columns": ["word", "ner"], "scheme": "iob2"}
    pos = [f"data.train={FIXTURES / 'tiny_pos_train.conll'}", f"data.dev={FIXTURES / 'tiny_pos_dev.conll'}", f"data.test={FIXTURES / 'tiny_pos_dev.conll'}", "data.columns=[word, pos]"]
    ner_target = [
        f"data.train={FIXTURES / 'tiny_ner_train.conll'}",
        f"data.dev={FIXTURES / 'tiny_ner_dev.conll'}",
        f"data.test={FIXTURES / 'tiny_ner_test.conll'}",
        "data.columns=[word, ner]",
        "data.scheme=iob2",
    ]
    text = f"""
name: tiny_mtl
title: tiny multi-task grid
command: seqtransfer experiment run tiny_mtl.yaml
overrides: {overrides}
hierarchy: {{pos: [], ner: [pos]}}
sources:
  both: {{multitask: {{pos: {{train: {FIXTURES / "tiny_pos_dev.conll"}, dev: {FIXTURES / "tiny_pos_dev.conll"}, columns: [word, pos]}}, ner: {ner}}}}}
targets:
  pos: {{dataset: null, overrides: {pos}}}
  ner: {{dataset: null, overrides: {ner_target}}}
methods:
  Mono-task: {{scheme: scratch}}
  Multi-task: {{scheme: scratch, multitask: true}}
  MuTSPad: {{scheme: finetune, multitask: true, source: both}}
reference: Mono-task
significance: [[MuTSPad, Multi-task]]
"""
    experiment = tmp_path / "tiny_mtl.yaml"
    experiment.write_text(text, encoding="utf-8")
    results = tmp_path / "results"
    records = run(["experiment", "run", str(experiment), "--results", str(results)])
    cells = {(record["method"], record["target"]) for record in records if record["method"]}
    assert cells == {(method, target) for method in ("Mono-task", "Multi-task", "MuTSPad") for target in ("pos", "ner")}
    multitask = [record for record in records if record["method"] == "Multi-task"]
    assert len({record["run_directory"] for record in multitask}) == 1  # one model scores both targets
    assert {record["metric"] for record in multitask} == {"accuracy", "span_f1"}
    assert len(list((results / "runs").iterdir())) == 4 and len(list((results / "sources").iterdir())) == 1
    capsys.readouterr()
    run(["experiment", "run", str(experiment), "--results", str(results)])
    assert "(0, 0, 0 to train)" in capsys.readouterr().out
    report = run(["report", str(experiment), "--results", str(results), "--trials", "100"])
    assert "| MuTSPad |" in report and "| ner | MuTSPad | Multi-task |" in report
    mono = sum(record["network_parameters"] for record in records if record["method"] == "Mono-task")
    row = next(line for line in report.splitlines() if line.startswith("| Multi-task |"))
    from seqtransfer.experiments.report_base import _ratio

    assert f"| {_ratio(multitask[0]['network_parameters'] / mono)} |" in row  # one model against the mono-task models together


def test_unified_sources_and_methods_unify_with_finished_runs_first(tmp_path, capsys):
    """Table 3 of the MuTSPad paper as a grid: pretraining on unified source data (filled by the
    mono-task sources), fine-tuning on unified target data (filled by the Mono-task runs)."""
    overrides = [*TINY_MODEL, "train.max_epochs=1"]
    pos = {"train": str(FIXTURES / "tiny_pos_train.conll"), "dev": str(FIXTURES / "tiny_pos_dev.conll"), "columns": ["word", "pos"], "scheme": "none"}
    ner = {"train": str(FIXTURES / "tiny_ner_train.conll"), "dev": str(FIXTURES / "tiny_ner_dev.conll"), "columns": ["word", "ner"], "scheme": "iob2"}
    as_overrides = lambda files: [f"data.{key}={value}" for key, value in files.items()]  # noqa: E731
    text = f"""
name: tiny_unified
title: tiny unified grid
command: seqtransfer experiment run tiny_unified.yaml
overrides: {overrides}
hierarchy: {{pos: [], ner: [pos]}}
sources:
  pos_mono: {{dataset: null, overrides: {as_overrides(pos)}}}
  ner_mono: {{dataset: null, overrides: {as_overrides(ner)}}}
  both: {{multitask: {{pos: {pos}, ner: {ner}}}, unify_with: {{pos: pos_mono, ner: ner_mono}}}}
targets:
  pos: {{dataset: null, overrides: {as_overrides({**pos, "test": pos["dev"]})}}}
  ner: {{dataset: null, overrides: {as_overrides({**ner, "test": str(FIXTURES / "tiny_ner_test.conll")})}}}
methods:
  Mono-task: {{scheme: scratch}}
  Unified: {{scheme: finetune, multitask: true, source: both, unify_with: Mono-task}}
"""
    experiment = tmp_path / "tiny_unified.yaml"
    experiment.write_text(text, encoding="utf-8")
    results = tmp_path / "results"
    records = run(["experiment", "run", str(experiment), "--only", "Unified", "--results", str(results)])
    assert {(record["method"], record["target"]) for record in records if record["method"]} == {("Unified", "pos"), ("Unified", "ner"), ("Mono-task", "pos"), ("Mono-task", "ner")}
    unified = next(record for record in records if record["method"] == "Unified")
    summary = json.loads((Path(unified["run_directory"]) / "unified" / "summary.json").read_text())
    assert summary["splits"]["train"]["sentences"] == 3 + 5
    source = next(path for path in (results / "sources").iterdir() if path.name.startswith("multitask-"))
    assert (source / "unified" / "train.conllu").is_file() and "multitask.unified" not in (source / "log.txt").read_text()
    capsys.readouterr()
    run(["experiment", "run", str(experiment), "--only", "Unified", "--results", str(results)])
    assert "(0, 0, 0 to train)" in capsys.readouterr().out


def test_a_method_may_name_a_source_per_target(tmp_path):
    text = tiny_experiment(tmp_path).read_text(encoding="utf-8")
    with_map = text.replace("  finetune: {scheme: finetune}", "  finetune: {scheme: finetune, source: {pos: ner}}")
    (tmp_path / "map.yaml").write_text(with_map, encoding="utf-8")
    assert load_experiment(tmp_path / "map.yaml").methods["finetune"].source == {"pos": "ner"}
    (tmp_path / "bad.yaml").write_text(text.replace("  finetune: {scheme: finetune}", "  finetune: {scheme: finetune, source: {pos: nowhere}}"), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="unknown source 'nowhere'"):
        load_experiment(tmp_path / "bad.yaml")


def test_kept_records_let_a_fresh_store_go_on_with_the_next_seed(tmp_path, capsys):
    """Seed 1 on one machine, its records committed; seed 2 on a fresh store trains only what seed 2 needs."""
    experiment = tiny_experiment(tmp_path)
    kept = tmp_path / "tiny.records.jsonl"
    first = run(["experiment", "run", str(experiment), "--only", "scratch,finetune", "--results", str(tmp_path / "first"), "--records", str(kept)])
    lines = kept.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(first) == 3  # scratch, finetune, the source
    capsys.readouterr()
    fresh = tmp_path / "fresh"
    second = run(["experiment", "run", str(experiment), "--only", "scratch,finetune", "--seeds", "2", "--results", str(fresh), "--records", str(kept)])
    out = capsys.readouterr().out
    assert "(1, 2, 0 to train, 2 kept)" in out  # seed 2's fine-tuning needs the source again
    assert len(list((fresh / "runs").iterdir())) == 2
    assert sorted((record["method"], record["seed"]) for record in second if record["method"]) == [("finetune", 1), ("finetune", 2), ("scratch", 1), ("scratch", 2)]
    by_cell = {(record["method"], record["seed"]): record["test"] for record in second}
    assert all(by_cell[("scratch", 1)] == record["test"] for record in first if record["method"] == "scratch")
    assert len(kept.read_text(encoding="utf-8").splitlines()) == 5
    report = run(["report", str(experiment), "--results", str(tmp_path / "empty"), "--records", str(kept), "--trials", "10"])
    assert "(2) |" in report and "\n| ner | " in report


def test_a_page_of_a_records_file_shows_its_cells_whatever_other_runs_the_store_holds(tmp_path, capsys):
    """The store can hold another run of a cell the records file has (the cell trained again without
    --records, or a machine's older run): the page shows the file's cell and says so in one line;
    cells only the store has are added as before."""
    experiment = tiny_experiment(tmp_path)
    kept = tmp_path / "kept.jsonl"
    run(["experiment", "run", str(experiment), "--only", "scratch", "--results", str(tmp_path / "store"), "--records", str(kept)])
    records = [json.loads(line) for line in kept.read_text(encoding="utf-8").splitlines()]
    target = next(record["target"] for record in records if record["method"] == "scratch")
    for record in records:
        if record["method"] == "scratch":
            record["test"] = 12.345  # the file's run of the cell, another than the store's
    kept.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    capsys.readouterr()
    report = run(["report", str(experiment), "--results", str(tmp_path / "store"), "--records", str(kept), "--trials", "10"])
    assert "12.35" in report
    assert f"the store holds other runs of 1 cell of {kept} (first: scratch / {target} / seed 1): the page shows the file's" in capsys.readouterr().err
    run(["experiment", "run", str(experiment), "--only", "finetune", "--results", str(tmp_path / "store")])  # a cell the file lacks
    assert "| finetune |" in run(["report", str(experiment), "--results", str(tmp_path / "store"), "--records", str(kept), "--trials", "10"])


def test_a_report_from_kept_records_alone_tests_significance_as_the_store_does(tmp_path):
    """Kept records carry their test predictions' per-sentence counts and a digest of the gold labels,
    so a fresh machine's report gives the p-values the store's runs give."""
    experiment = tiny_experiment(tmp_path)
    experiment.write_text(experiment.read_text(encoding="utf-8") + "significance:\n  - [finetune, scratch]\n", encoding="utf-8")
    kept = tmp_path / "kept.jsonl"
    run(["experiment", "run", str(experiment), "--only", "scratch,finetune", "--seeds", "2", "--results", str(tmp_path / "store"), "--records", str(kept)])
    records = [json.loads(line) for line in kept.read_text(encoding="utf-8").splitlines()]
    evidence = next(record["evidence"] for record in records if record["method"] == "scratch")
    assert evidence["metric"] == "accuracy" and evidence["shape"][1] == 2 and len(json.dumps(evidence)) < 2000
    with_store = run(["report", str(experiment), "--results", str(tmp_path / "store"), "--records", str(kept), "--trials", "200"])
    import shutil

    shutil.rmtree(tmp_path / "store")  # another machine: the run directories and their predictions are gone
    from_records = run(["report", str(experiment), "--results", str(tmp_path / "empty"), "--records", str(kept), "--trials", "200"])
    row = next(line for line in with_store.splitlines() if line.startswith("| pos | finetune | scratch |"))
    assert row in from_records.splitlines() and "no predictions" not in row
    assert row.startswith("| pos | finetune | scratch | 1 |")
    for record in records:
        if record["seed"] == 1:
            record.pop("evidence", None)  # seed 1 kept before records carried evidence: the test pairs seed 2's runs
    kept.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    row = next(
        line
        for line in run(["report", str(experiment), "--results", str(tmp_path / "empty"), "--records", str(kept), "--trials", "200"]).splitlines()
        if line.startswith("| pos | finetune | scratch |")
    )
    assert row.startswith("| pos | finetune | scratch | 2 |") and "no predictions" not in row
    for record in records:
        record.pop("evidence", None)
    kept.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    assert "| pos | finetune | scratch | 1 |" in run(["report", str(experiment), "--results", str(tmp_path / "empty"), "--records", str(kept), "--trials", "200"])
    assert "no predictions" in run(["report", str(experiment), "--results", str(tmp_path / "empty"), "--records", str(kept), "--trials", "200"])


def test_a_kept_record_of_other_settings_is_trained_again(tmp_path, capsys):
    experiment = tiny_experiment(tmp_path)
    kept = tmp_path / "kept.jsonl"
    run(["experiment", "run", str(experiment), "--only", "scratch", "--results", str(tmp_path / "first"), "--records", str(kept)])
    changed = experiment.read_text(encoding="utf-8").replace("train.max_epochs=2", "train.max_epochs=1")
    experiment.write_text(changed, encoding="utf-8")
    capsys.readouterr()
    run(["experiment", "run", str(experiment), "--only", "scratch", "--results", str(tmp_path / "second"), "--records", str(kept)])
    assert "(0, 1, 0 to train)" in capsys.readouterr().out


def test_kept_cells_of_settings_since_changed_are_named_when_a_run_leaves_them_out(tmp_path, capsys):
    """Seeds 1-2 kept; the file's settings change; --seeds 1 trains seed 1 again, and seed 2, left out of this
    run, is of the old settings: a report would average the two, so the run says which cells and how to mend it."""
    experiment = tiny_experiment(tmp_path)
    kept = tmp_path / "kept.jsonl"
    run(["experiment", "run", str(experiment), "--only", "scratch", "--seeds", "2", "--results", str(tmp_path / "store"), "--records", str(kept)])
    capsys.readouterr()
    run(["experiment", "run", str(experiment), "--only", "scratch", "--seeds", "1", "--results", str(tmp_path / "store"), "--records", str(kept)])
    assert "other settings" not in capsys.readouterr().out  # unchanged: nothing to say
    experiment.write_text(experiment.read_text(encoding="utf-8").replace("train.max_epochs=2", "train.max_epochs=1"), encoding="utf-8")
    run(["experiment", "run", str(experiment), "--only", "scratch", "--seeds", "1", "--results", str(tmp_path / "store"), "--records", str(kept)])
    out = capsys.readouterr().out
    assert "warning: 1 kept cells outside this run of other settings than the file gives now" in out and "seed 2" in out and "--seeds 2" in out


def test_a_kept_cell_trained_from_another_instance_of_its_source_trains_again(tmp_path, capsys):
    """A source trained again on another machine has other weights: a kept fine-tuning cell that read
    the old instance is said to, and trained again from the new one, so that no grid compares runs
    of two sources."""
    from seqtransfer import rundir

    experiment = tiny_experiment(tmp_path)
    kept = tmp_path / "kept.jsonl"
    first = run(["experiment", "run", str(experiment), "--only", "finetune", "--results", str(tmp_path / "first"), "--records", str(kept)])
    source = next(Path(record["run_directory"]) for record in first if record.get("source"))
    finetuned = next(record for record in first if record["method"] == "finetune")
    assert finetuned["source_weights"] == rundir.weights_fingerprint(source) and len(finetuned["source_weights"]) == 16
    records = [json.loads(line) for line in kept.read_text(encoding="utf-8").splitlines()]
    for record in records:
        if record.get("method") == "finetune":
            record["source_weights"] = "0123456789abcdef"  # made from the source as another machine trained it
    kept.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    capsys.readouterr()
    second = tmp_path / "second"
    run(["experiment", "run", str(experiment), "--only", "finetune", "--seeds", "2", "--results", str(second), "--records", str(kept)])
    out = capsys.readouterr().out
    assert "(1, 1, 0 to train, 1 kept)" in out  # seed 1 is taken before the source is trained again
    assert "warning: 1 kept cells were trained from another instance of their source" in out and "finetune / pos / seed 1" in out
    run(["experiment", "run", str(experiment), "--only", "finetune", "--seeds", "2", "--results", str(second), "--records", str(kept)])
    assert "(0, 1, 0 to train)" in capsys.readouterr().out  # now seed 1 trains from the store's source
    renewed = [json.loads(line) for line in kept.read_text(encoding="utf-8").splitlines()]
    assert {record["source_weights"] for record in renewed if record.get("method") == "finetune"} == {rundir.weights_fingerprint(second / "sources" / source.name)}
    for record in renewed:
        record.pop("source_weights", None)  # kept before records named their source's weights: taken as they are
    kept.write_text("".join(json.dumps(record) + "\n" for record in renewed), encoding="utf-8")
    run(["experiment", "run", str(experiment), "--only", "finetune", "--seeds", "2", "--results", str(tmp_path / "third"), "--records", str(kept)])
    assert "(0, 0, 0 to train, 2 kept)" in capsys.readouterr().out


def test_a_kept_cell_that_read_another_encoder_trains_again(tmp_path, capsys, monkeypatch):
    """Our own LM trained again (other text, other weights) in the folder a grid names: a kept cell
    that read the old one trains again, as one whose source was trained again; the same encoder
    keeps it."""
    from safetensors.torch import load_file, save_file
    from test_encoders import save_tiny_encoder

    from seqtransfer.embeddings.transformer import encoder_fingerprint

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    encoder = save_tiny_encoder(tmp_path / "lm")
    pos = [f"data.train={FIXTURES / 'tiny_pos_train.conll'}", f"data.dev={FIXTURES / 'tiny_pos_dev.conll'}", f"data.test={FIXTURES / 'tiny_pos_dev.conll'}", "data.columns=[word, pos]"]
    experiment = tmp_path / "lm.yaml"
    experiment.write_text(
        f"""
name: lm
title: our LM's features
command: seqtransfer experiment run lm.yaml
overrides: {[*TINY_MODEL, "train.max_epochs=1", f"model.encoder={encoder}"]}
targets:
  pos: {{dataset: null, overrides: {pos}}}
methods:
  features: {{scheme: scratch}}
reference: features
""",
        encoding="utf-8",
    )
    kept = tmp_path / "kept.jsonl"
    (first,) = run(["experiment", "run", str(experiment), "--results", str(tmp_path / "first"), "--records", str(kept)])
    assert first["encoder_weights"] == encoder_fingerprint(str(encoder))
    capsys.readouterr()
    run(["experiment", "run", str(experiment), "--results", str(tmp_path / "second"), "--records", str(kept)])
    assert "(0, 0, 0 to train, 1 kept)" in capsys.readouterr().out
    (encoder / "pretraining.json").write_text('{"seconds": 12.3}', encoding="utf-8")  # our LM trained again, as it was: only its report differs
    run(["experiment", "run", str(experiment), "--results", str(tmp_path / "again"), "--records", str(kept)])
    assert "(0, 0, 0 to train, 1 kept)" in capsys.readouterr().out
    weights = load_file(str(encoder / "model.safetensors"))
    save_file({name: tensor + 0.01 for name, tensor in weights.items()}, str(encoder / "model.safetensors"), metadata={"format": "pt"})
    run(["experiment", "run", str(experiment), "--seeds", "2-2", "--results", str(tmp_path / "other-seed"), "--records", str(kept)])
    assert "warning: 1 kept cells outside this run read another encoder than the one its folder holds now (features / pos / seed 1)" in capsys.readouterr().out
    run(["experiment", "run", str(experiment), "--results", str(tmp_path / "third"), "--records", str(kept)])
    assert "(0, 1, 0 to train)" in capsys.readouterr().out
    (renewed, _) = [json.loads(line) for line in kept.read_text(encoding="utf-8").splitlines()]
    assert renewed["seed"] == 1 and renewed["encoder_weights"] == encoder_fingerprint(str(encoder)) != first["encoder_weights"]


def test_a_broken_kept_file_is_one_line(tmp_path):
    experiment = tiny_experiment(tmp_path)
    kept = tmp_path / "kept.jsonl"
    kept.write_text('{"experiment": "tiny", "run_directory": "x"}\nnot json\n', encoding="utf-8")
    with pytest.raises(SeqTransferError, match=r"kept.jsonl:2: not a JSON record"):
        run(["report", str(experiment), "--results", str(tmp_path / "r"), "--records", str(kept)])


def test_published_rows_render_above_ours_with_our_best_per_column(tmp_path):
    experiment = tiny_experiment(tmp_path)
    text = experiment.read_text(encoding="utf-8") + 'published:\n  - {name: "Big model (X, 2020)", source: "X 2020, Table 1", flags: [bert, crf], scores: {pos: 99.5}}\n'
    experiment.write_text(text, encoding="utf-8")
    results = tmp_path / "results"
    run(["experiment", "run", str(experiment), "--only", "scratch", "--results", str(results)])
    report = run(["report", str(experiment), "--results", str(results), "--trials", "10"])
    published, ours = report.split("## Published results (not ours) and our best")[1].split("## Our results")
    assert "| Big model (X, 2020) | X 2020, Table 1 | bert, crf | 99.50 |" in published
    assert "(scratch) |" in published.split("Ours: best mean per column")[1]
    # a column whose published numbers use another metric (paper_metric): our best by that metric, named
    experiment.write_text(text.replace("  pos: {dataset: null, source: ner, overrides:", "  pos: {dataset: null, source: ner, also: [span_f1], paper_metric: span_f1, overrides:"), encoding="utf-8")
    records = run(["experiment", "run", str(experiment), "--only", "scratch", "--results", str(tmp_path / "again")])
    f1 = next(record for record in records if record["method"] == "scratch")["other_scores"]["span_f1"]["test"]
    report = run(["report", str(experiment), "--results", str(tmp_path / "again"), "--trials", "10"])
    assert f"**{f1:.2f}** (scratch, F1) |" in report.split("## Published results (not ours) and our best")[1].split("## Our results")[0]


@pytest.mark.parametrize(
    "row, message",
    [
        ("{name: A, source: S, scores: {POS: 1.0}}", "published row 'A' names column 'POS', which the table does not have"),
        ("{name: A, source: S, flags: [elmo], scores: {pos: 1.0}}", "unknown flag"),
        ("{name: A, source: S, scores: {pos: high}}", "must be a number or n/a"),
        ("{name: A, scores: {pos: 1.0}}", "'published\\[0\\]' lacks 'source'"),
    ],
)
def test_a_bad_published_row_is_one_line(tmp_path, row, message):
    experiment = tiny_experiment(tmp_path)
    experiment.write_text(experiment.read_text(encoding="utf-8") + f"published:\n  - {row}\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match=message):
        load_experiment(experiment)


def test_a_method_may_run_on_some_targets_only(tmp_path):
    experiment = tiny_experiment(tmp_path)
    text = experiment.read_text(encoding="utf-8").replace(
        "  pos: {dataset: null, source: ner, overrides: ", "  other: {dataset: null, source: ner, overrides: PLACEHOLDER}\n  pos: {dataset: null, source: ner, overrides: "
    )
    pos_overrides = text.split("  pos: {dataset: null, source: ner, overrides: ")[1].split("}\n")[0]
    text = text.replace("PLACEHOLDER", pos_overrides).replace("  scratch: {scheme: scratch}", "  scratch: {scheme: scratch, targets: [pos]}")
    experiment.write_text(text, encoding="utf-8")
    records = run(["experiment", "run", str(experiment), "--only", "scratch", "--results", str(tmp_path / "results")])
    assert [record["target"] for record in records] == ["pos"]
    experiment.write_text(text.replace("targets: [pos]", "targets: [nothing]"), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="unknown target"):
        load_experiment(experiment)


def test_a_methods_runs_on_one_target_may_take_settings_of_their_own(tmp_path):
    """``target_overrides``: the method's runs on that target alone take them, after the method's own."""
    from seqtransfer.experiments.grid import method_tasks, source_tasks
    from seqtransfer.experiments.store import ResultsStore

    experiment = tiny_experiment(tmp_path)
    text = experiment.read_text(encoding="utf-8").replace(
        "  pos: {dataset: null, source: ner, overrides: ", "  other: {dataset: null, source: ner, overrides: PLACEHOLDER}\n  pos: {dataset: null, source: ner, overrides: "
    )
    pos_overrides = text.split("  pos: {dataset: null, source: ner, overrides: ")[1].split("}\n")[0]
    text = text.replace("PLACEHOLDER", pos_overrides)

    def epochs(method: str) -> dict[str, int]:
        experiment.write_text(text.replace("  scratch: {scheme: scratch}", f"  scratch: {method}"), encoding="utf-8")
        spec, store = load_experiment(experiment), ResultsStore(tmp_path / "results")
        tasks = method_tasks(spec, store, None, [1], source_tasks(spec, store, None), {"scratch"})
        return {task.record["target"]: task.config["train"]["max_epochs"] for task in tasks if task.record["method"] == "scratch"}

    assert epochs("{scheme: scratch}") == {"other": 2, "pos": 2}
    assert epochs('{scheme: scratch, overrides: [train.max_epochs=3], target_overrides: {pos: ["train.max_epochs=1"]}}') == {"other": 3, "pos": 1}
    for method, message in (
        ('{scheme: scratch, target_overrides: {nothing: ["train.max_epochs=1"]}}', "unknown target"),
        ("{scheme: scratch, target_overrides: {pos: train.max_epochs=1}}", "must map targets to lists of overrides"),
        ('{scheme: scratch, targets: [other], target_overrides: {pos: ["train.max_epochs=1"]}}', "has target_overrides for pos, where it does not run"),
        ('{scheme: scratch, target_overrides: {pos: ["train.max_epoch=1"]}}', "unknown config key 'train.max_epoch'"),  # parsed when the file loads
        ('{scheme: scratch, target_overrides: {pos: ["data.pseudo_train=x.conll"]}, pseudo_labels: {from: [finetune], unlabeled: target}}', "cannot also be set"),
    ):
        experiment.write_text(text.replace("  scratch: {scheme: scratch}", f"  scratch: {method}"), encoding="utf-8")
        with pytest.raises(SeqTransferError, match=message):
            load_experiment(experiment)
    ensemble = '  ensemble: {ensemble: [finetune, scratch+1000], target_overrides: {pos: ["train.max_epochs=1"]}}'
    experiment.write_text(text.replace("  ensemble: {ensemble: [finetune, scratch+1000]}", ensemble), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="ensemble 'ensemble' trains nothing"):
        load_experiment(experiment)


@pytest.mark.parametrize(
    "search, message",
    [
        ("{space: {train.learnig_rate: [0.1]}}", "unknown config key 'train.learnig_rate'"),
        ("{space: {}}", "the search space is empty"),
        ("{trials: 0, space: {train.learning_rate: [0.1]}}", "the trial budget must be a positive integer"),
        ("{algorithm: grid, trials: 2, space: {train.learning_rate: [0.1, 0.2], model.dropout: [0.1, 0.5]}}", "the grid has 4 points, more than the budget of 2"),
        ("{algorithm: grid, space: {train.learning_rate: {uniform: [0.1, 0.2]}}}", "a grid takes lists of values"),
        ("{space: {model.hidden: [big]}}", "must be int"),
        ("{space: {train.learning_rate: {loguniform: [0.05, 0.005]}}}", r"\[0.05, 0.005\] is an empty range"),
        ("{space: {train.learning_rate: {loguniform: [0, 0.1]}}}", "needs bounds above 0"),
        ("{space: {train.batch_size: {randint: [8, 8]}}}", "is an empty range"),
        ("{space: {train.batch_size: {randint: [8, 16.5]}}}", "bounds must be whole numbers"),
        ("{space: {model.dropout: {uniform: [a, b]}}}", "bounds must be numbers"),
        ("{space: {model.dropout: [1.5]}}", "model.dropout"),  # a value no run can train with, as train would say
        ("{space: {model.dropout: {uniform: [0.1, 2.0]}}}", "model.dropout"),
        ("{max_epochs: 0, space: {model.dropout: [0.1]}}", "max_epochs must be a positive whole number"),
        ("{max_epochs: ten, space: {model.dropout: [0.1]}}", "max_epochs must be a positive whole number"),
        ("{algorithm: asha, grace_epochs: 0, space: {model.dropout: [0.1]}}", "grace_epochs must be a positive whole number"),
        ("{algorithm: asha, max_epochs: 2, grace_epochs: 3, space: {model.dropout: [0.1]}}", "grace_epochs 3 is more than max_epochs 2"),
        ("{space: {model.hidden: [10, 20]}, method: finetune}", "model.hidden is the source run's"),
        ("{space: {model.hidden: {randint: [100, 301]}}}", "model.hidden"),  # both ends even, odd sizes between: no run trains with those
    ],
)
def test_a_bad_search_is_one_line(tmp_path, search, message):
    experiment = tiny_experiment(tmp_path)
    method = "finetune" if ", method: finetune}" in search else "scratch"
    search = search.replace(", method: finetune}", "}")
    experiment.write_text(experiment.read_text(encoding="utf-8") + f"search:\n  {method}:\n    pos: {search}\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match=message):
        load_experiment(experiment)


def test_an_asha_rung_past_the_trials_last_epoch_is_refused_before_ray_runs(tmp_path):
    """The file's runs train 2 epochs (train.max_epochs=2): a first rung at 3 could stop no trial."""
    pytest.importorskip("ray")
    from seqtransfer.experiments.grid import method_tasks, source_tasks
    from seqtransfer.experiments.search import run_search
    from seqtransfer.experiments.store import ResultsStore

    experiment = tiny_experiment(tmp_path)
    experiment.write_text(experiment.read_text(encoding="utf-8") + "search:\n  scratch:\n    pos: {algorithm: asha, grace_epochs: 3, space: {model.dropout: [0.1, 0.3]}}\n", encoding="utf-8")
    spec = load_experiment(experiment)
    store = ResultsStore(tmp_path / "results")
    task = next(task for task in method_tasks(spec, store, None, [1], source_tasks(spec, store, None), {"scratch"}) if task.record["method"] == "scratch")
    with pytest.raises(SeqTransferError, match="grace_epochs 3 is more than the 2 epochs a trial trains"):
        run_search(task, spec.search["scratch"]["pos"], store, None, 1, print)
    assert not (tmp_path / "results" / "search").exists()


def test_a_targets_other_metrics_must_score_its_kind(tmp_path):
    experiment = tiny_experiment(tmp_path)
    text = experiment.read_text(encoding="utf-8")
    experiment.write_text(text.replace("targets:\n", "targets:\n  tweets: {dataset: wnut17, also: [spearman]}\n"), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="target 'tweets': spearman does not score a tagging task"):
        load_experiment(experiment)
    experiment.write_text(text.replace("targets:\n", "targets:\n  similarity: {dataset: stsb, also: [spearman]}\n  paraphrase: {dataset: mrpc, also: [positive_f1]}\n"), encoding="utf-8")
    assert load_experiment(experiment).targets["similarity"].also == ["spearman"]


def test_other_scores_read_a_regressions_predictions(tmp_path):
    from seqtransfer.data.metrics import evaluate
    from seqtransfer.experiments.run_records import other_scores

    (tmp_path / "test.tsv").write_text("1\t1.5\ta b\n2\t1.0\tc d\n3\t3.5\te f\n", encoding="utf-8")
    scores = other_scores(tmp_path, tmp_path, ["spearman"])
    assert scores == {"spearman": {"test": evaluate([[1.0], [2.0], [3.0]], [[1.5], [1.0], [3.5]], "spearman")["spearman"]}} and scores["spearman"]["test"] == 50.0


def test_a_search_names_known_methods_and_targets(tmp_path):
    experiment = tiny_experiment(tmp_path)
    base = experiment.read_text(encoding="utf-8")
    for block, message in (
        ("  nothing:\n    pos: {space: {model.dropout: [0.1]}}\n", "search names method 'nothing'"),
        ("  scratch:\n    tweets: {space: {model.dropout: [0.1]}}\n", "names target 'tweets'"),
    ):
        experiment.write_text(base + "search:\n" + block, encoding="utf-8")
        with pytest.raises(SeqTransferError, match=message):
            load_experiment(experiment)
    experiment.write_text(base + "search:\n  scratch:\n    '*': {algorithm: random, trials: 4, space: {model.dropout: {uniform: [0.1, 0.5]}}}\n", encoding="utf-8")
    assert load_experiment(experiment).search["scratch"]["*"].trials == 4


def test_a_target_may_be_tested_on_another_dataset(tmp_path):
    experiment = tiny_experiment(tmp_path)
    other = tmp_path / "other.conll"
    other.write_text((FIXTURES / "tiny_pos_dev.conll").read_text(encoding="utf-8").replace("NN", "VB"), encoding="utf-8")
    from seqtransfer.experiments import run_records

    calls = []
    original = run_records.score_elsewhere
    run_records.score_elsewhere = lambda directory, entry, data_dir, score=True: calls.append(entry) or (12.5, str(directory))
    try:
        experiment.write_text(experiment.read_text(encoding="utf-8").replace("  pos: {dataset: null, source: ner,", "  pos: {dataset: null, source: ner, test_on: 'tweebank:upos',"), encoding="utf-8")
        records = run(["experiment", "run", str(experiment), "--only", "scratch", "--results", str(tmp_path / "results")])
    finally:
        run_records.score_elsewhere = original
    assert calls == ["tweebank:upos"] and records[0]["test"] == 12.5 and records[0]["test_on"] == "tweebank:upos"


def test_report_marks_cells_that_read_the_test_datas_dev_labels(tmp_path):
    experiment = tiny_experiment(tmp_path)
    experiment.write_text(experiment.read_text(encoding="utf-8").replace("  scratch: {scheme: scratch}", "  scratch: {scheme: scratch}\n  as_is: {scheme: source_only}"), encoding="utf-8")
    results = tmp_path / "results"
    records = run(["experiment", "run", str(experiment), "--only", "scratch,as_is", "--results", str(results)])
    assert {record["method"]: record["target_dev_labels"] for record in records if record["method"]} == {"scratch": True, "as_is": False}
    report = run(["report", str(experiment), "--results", str(results), "--trials", "10"])
    ours = report.split("## Our results")[1].split("## ")[0]
    rows = {line.split(" | ")[0]: line for line in ours.splitlines() if line.startswith("| scratch") or line.startswith("| as_is")}
    assert "(1)°" in rows["| scratch"] and "°" not in rows["| as_is"] and "° early stopping read the labels" in report


def test_a_self_labelling_method_runs_in_the_grid_and_is_tested_on_the_target(tmp_path):
    experiment = tiny_experiment(tmp_path)
    unlabeled = unlabeled_text(tmp_path)
    text = experiment.read_text(encoding="utf-8")
    text = text.replace(
        "  scratch: {scheme: scratch}", f"  scratch: {{scheme: scratch}}\n  selftrained: {{scheme: scratch, selflabel: {{method: self_training, unlabeled: '{unlabeled}', rounds: 1, top_n: 2}}}}"
    )
    experiment.write_text(text, encoding="utf-8")
    results = tmp_path / "results"
    records = run(["experiment", "run", str(experiment), "--only", "selftrained", "--results", str(results)])
    record = next(record for record in records if record["method"] == "selftrained")
    directory = Path(record["run_directory"])
    assert (directory / "members.json").is_file() and (directory / "round-1" / "model-1" / "metrics.json").is_file()
    assert record["test"] is not None and record["network_parameters"] > 0
    experiment.write_text(text.replace("top_n: 2", "top_n: 0"), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="method 'selftrained': --top-n must be at least 1"):
        load_experiment(experiment)


def test_a_method_starts_from_another_methods_run_even_when_the_command_leaves_it_out(tmp_path, capsys):
    """Label-free first, then a few labels: fine-tuning starts from a self-labelling run's first model, same seed."""
    from seqtransfer.files import read_yaml_mapping

    experiment = tiny_experiment(tmp_path)
    unlabeled = unlabeled_text(tmp_path)
    text = experiment.read_text(encoding="utf-8")
    text = text.replace(
        "  pos: {dataset: null,",
        "  few: {dataset: null, source: ner, overrides: [data.train_fraction=0.5, " + text.split("  pos: {dataset: null, source: ner, overrides: [")[1].split("\n")[0] + "\n  pos: {dataset: null,",
    )
    text = text.replace(
        "  scratch: {scheme: scratch}",
        f"  scratch: {{scheme: scratch}}\n  selftrained: {{scheme: scratch, targets: [pos], selflabel: {{method: self_training, unlabeled: '{unlabeled}', rounds: 1, top_n: 2}}}}\n"
        "  after: {scheme: finetune, targets: [few], start_from: {method: selftrained, target: pos}}",
    )
    experiment.write_text(text, encoding="utf-8")
    results = tmp_path / "results"
    records = run(["experiment", "run", str(experiment), "--only", "after", "--targets", "few", "--seeds", "2", "--results", str(results)])
    cells = [("after", "few", 1), ("after", "few", 2), ("selftrained", "pos", 1), ("selftrained", "pos", 2)]  # the runs started from are cells too
    assert sorted((record["method"], record["target"], record["seed"]) for record in records) == cells
    started = {}
    for seed in (1, 2):
        record = next(record for record in records if record["seed"] == seed and record["method"] == "after")
        source = Path(read_yaml_mapping(Path(record["run_directory"]) / "config.yaml", "config")["transfer"]["source"])
        assert source.parts[-2:] == ("round-1", "model-1") and (source.parents[1] / "members.json").is_file()
        assert read_yaml_mapping(source / "config.yaml", "config")["train"]["seed"] == seed  # the self-labelling run of the same seed
        started[seed] = source.parents[1]
    assert started[1] != started[2]
    capsys.readouterr()
    run(["experiment", "list", str(experiment), "--only", "after", "--targets", "few", "--results", str(results)])
    assert capsys.readouterr().out.splitlines()[-2] == "tiny: cells 1 done; sources and runs other methods read 1 done, 1 to train (seeds 1..1)"  # the run started from; the source nothing here needs
    kept = tmp_path / "kept.jsonl"  # kept cells of the method: on a fresh store the runs it started from are not trained again
    run(["experiment", "run", str(experiment), "--only", "after", "--targets", "few", "--results", str(results), "--records", str(kept)])
    lines = kept.read_text(encoding="utf-8").splitlines()
    kept.write_text("".join(f"{line}\n" for line in lines if '"method": "after"' in line), encoding="utf-8")  # the runs started from are not kept
    capsys.readouterr()
    run(["experiment", "run", str(experiment), "--only", "after", "--targets", "few", "--results", str(tmp_path / "fresh"), "--records", str(kept)])
    assert "(0, 0, 0 to train, 1 kept)" in capsys.readouterr().out and not (tmp_path / "fresh" / "runs").exists()
    for start, message in (
        ("{method: nothing, target: pos}", "start_from must name another mono-task method"),
        ("{method: selftrained, target: few}", "has no run on target 'few'"),
        ("{method: selftrained}", "names a 'method' and a 'target'"),
    ):
        experiment.write_text(text.replace("{method: selftrained, target: pos}", start), encoding="utf-8")
        with pytest.raises(SeqTransferError, match=message):
            load_experiment(experiment)
    experiment.write_text(text.replace("after: {scheme: finetune,", "after: {scheme: scratch,"), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="replaces the source of a mono-task scheme that transfers"):
        load_experiment(experiment)
    experiment.write_text(text + "search: {after: {few: {space: {train.learning_rate: [0.01, 0.1]}}}}\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match="reads other methods' runs"):
        load_experiment(experiment)
    experiment.write_text(text + "search: {selftrained: {pos: {space: {train.learning_rate: [0.01, 0.1]}}}}\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match="rounds of self-labelling"):  # a trial would train its scheme alone
        load_experiment(experiment)
    from seqtransfer.experiments import grid
    from seqtransfer.experiments.store import ResultsStore

    # the run started from reads its target's test_on text although --targets left that target out
    experiment.write_text(
        text.replace("  pos: {dataset: null, source: ner,", "  pos: {dataset: null, source: ner, test_on: 'tweebank:upos',").replace(f"unlabeled: '{unlabeled}'", "unlabeled: target"), encoding="utf-8"
    )
    spec = load_experiment(experiment)
    spec.targets = {"few": spec.targets["few"]}
    after = grid.method_task(spec, ResultsStore(tmp_path / "other"), None, "after", "few", 1, {})
    assert "/runs/pos-self_training-" in after.config["transfer"]["source"]


def test_target_text_in_a_method_is_the_targets_test_on_dataset(tmp_path):
    from seqtransfer.experiments import grid
    from seqtransfer.experiments.store import ResultsStore

    experiment = tiny_experiment(tmp_path)
    text = experiment.read_text(encoding="utf-8").replace(
        "  scratch: {scheme: scratch}",
        "  scratch: {scheme: scratch}\n"
        "  selected: {scheme: scratch, overrides: [data.select_like=target, data.select_top=50]}\n"
        "  selftrained: {scheme: scratch, selflabel: {method: self_training, unlabeled: target, rounds: 1}}",
    )
    experiment.write_text(text, encoding="utf-8")
    with pytest.raises(SeqTransferError, match="target 'pos' has no test_on"):
        grid.method_task(load_experiment(experiment), ResultsStore(tmp_path / "results"), None, "selected", "pos", 1, {})
    experiment.write_text(text.replace("  pos: {dataset: null, source: ner,", "  pos: {dataset: null, source: ner, test_on: 'tweebank:upos',"), encoding="utf-8")
    spec = load_experiment(experiment)
    selected = grid.method_task(spec, ResultsStore(tmp_path / "results"), None, "selected", "pos", 1, {})
    selftrained = grid.method_task(spec, ResultsStore(tmp_path / "results"), None, "selftrained", "pos", 1, {})
    assert selected.config["data"]["select_like"] == "tweebank" and selftrained.selflabel["unlabeled"] == "tweebank"
    explicit = load_experiment(experiment)  # the same settings named outright: the same run (finished cells are not trained again)
    explicit.methods["selected"].overrides = ["data.select_like=tweebank", "data.select_top=50"]
    assert grid.method_task(explicit, ResultsStore(tmp_path / "results"), None, "selected", "pos", 1, {}).run_id == selected.run_id


def test_names_given_on_the_command_line_may_hold_commas():
    from seqtransfer.commands.experiment import named

    known = ["Mono-task", "Mono-task + UPOS (predicted, jackknifed)", "TweeBank, no labels"]
    assert named("Mono-task + UPOS (predicted, jackknifed),Mono-task", known) == ["Mono-task + UPOS (predicted, jackknifed)", "Mono-task"]
    assert named("TweeBank, no labels", known) == ["TweeBank, no labels"]
    assert named("Mono-task,nothing", known) == ["Mono-task", "nothing"]  # the unknown name is reported as given


def test_a_significance_pair_that_yaml_split_at_a_comma_is_one_line(tmp_path):
    text = tiny_experiment(tmp_path).read_text(encoding="utf-8").replace("  scratch: {scheme: scratch}", '  scratch: {scheme: scratch}\n  "a (b, c)": {scheme: scratch}')
    (tmp_path / "bad.yaml").write_text(text + "significance:\n  - [a (b, c), scratch]\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match="must name two methods.*quote a name"):
        load_experiment(tmp_path / "bad.yaml")
    (tmp_path / "good.yaml").write_text(text + 'significance:\n  - ["a (b, c)", scratch]\n', encoding="utf-8")
    assert load_experiment(tmp_path / "good.yaml").significance == [["a (b, c)", "scratch"]]


def test_self_labelling_progress_counts_whole_rounds_and_a_bad_members_file_is_one_line(tmp_path):
    from seqtransfer.experiments.grid import RunTask
    from seqtransfer.experiments.status import count_rounds, describe_progress
    from seqtransfer.rundir import first_member

    task = RunTask("run", str(tmp_path / "run"), {}, {"method": "tri", "target": "t", "seed": 1}, selflabel={"method": "tri_training", "unlabeled": "x", "rounds": 2})
    (tmp_path / "run").mkdir()
    assert describe_progress(task) is None  # a folder with nothing trained in it
    for model in (1, 2, 3):
        (tmp_path / "run" / "round-0" / f"model-{model}").mkdir(parents=True)
        (tmp_path / "run" / "round-0" / f"model-{model}" / "metrics.json").write_text("{}", encoding="utf-8")
    (tmp_path / "run" / "round-1" / "model-1").mkdir(parents=True)
    (tmp_path / "run" / "round-1" / "model-1" / "metrics.json").write_text("{}", encoding="utf-8")
    assert count_rounds(task) == "1 of 3 rounds trained"  # round 1 has one model of three
    (tmp_path / "run" / "members.json").write_text('{"members": []}', encoding="utf-8")
    with pytest.raises(SeqTransferError, match="members.json must list .members. and a .combination."):
        first_member(tmp_path / "run")
    assert first_member(tmp_path / "round-0") == tmp_path / "round-0"  # a plain run is itself


def test_a_target_may_ask_for_other_metrics_scored_from_each_runs_predictions(tmp_path):
    from seqtransfer.analysis.predictions import read_predictions
    from seqtransfer.data.metrics import evaluate

    experiment = tiny_experiment(tmp_path)
    text = experiment.read_text(encoding="utf-8").replace("  pos: {dataset: null, source: ner,", "  pos: {dataset: null, source: ner, also: [span_f1],")
    experiment.write_text(text, encoding="utf-8")
    results = tmp_path / "results"
    records = run(["experiment", "run", str(experiment), "--only", "scratch", "--results", str(results)])
    record = next(record for record in records if record["method"] == "scratch")
    predictions = read_predictions(Path(record["run_directory"]) / "predictions" / "test.conll")
    assert record["other_scores"]["span_f1"]["test"] == evaluate(predictions.gold, predictions.predicted, "span_f1")["f1"]
    report = run(["report", str(experiment), "--results", str(results), "--trials", "10"])
    assert f"| scratch | {record['other_scores']['span_f1']['test']:.2f} ± 0.00 (1) |" in report.split("## Other metrics (test)")[1]
    paper = report.split("## Paper")[1]
    assert f"| scratch | 50.00 ({record['test'] - 50.0:+.2f}" in paper.replace("−", "-")  # the paper's number against our main metric
    experiment.write_text(text.replace("also: [span_f1],", "also: [span_f1], paper_metric: span_f1,"), encoding="utf-8")
    paper = run(["report", str(experiment), "--results", str(results), "--trials", "10"]).split("## Paper")[1]
    assert "| Method | pos (" in paper and f"| scratch | 50.00 ({record['other_scores']['span_f1']['test'] - 50.0:+.2f}" in paper.replace("−", "-")  # against our F1
    experiment.write_text(text.replace("also: [span_f1],", "also: [span_f1], paper_metric: accuracy,"), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="paper_metric 'accuracy' is not one of its 'also' metrics"):
        load_experiment(experiment)
    experiment.write_text(text.replace("also: [span_f1]", "also: [bleu]"), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="'also' must list metrics, got bleu"):
        load_experiment(experiment)


def test_other_methods_runs_label_text_that_a_pseudo_labels_method_trains_on(tmp_path, capsys):
    from seqtransfer.experiments import grid
    from seqtransfer.experiments.store import ResultsStore

    experiment = tiny_experiment(tmp_path)
    unlabeled = unlabeled_text(tmp_path)
    text = experiment.read_text(encoding="utf-8").replace(
        "  scratch: {scheme: scratch}", f"  scratch: {{scheme: scratch}}\n  mixed: {{scheme: scratch, pseudo_labels: {{from: [scratch, finetune], unlabeled: '{unlabeled}', top_n: 2}}}}"
    )
    experiment.write_text(text, encoding="utf-8")
    results = tmp_path / "results"
    records = run(["experiment", "run", str(experiment), "--only", "mixed", "--results", str(results)])
    mixed = next(record for record in records if record["method"] == "mixed")
    folder = Path(mixed["run_directory"])
    pseudo = [block for block in (folder / "pseudo.conll").read_text(encoding="utf-8").split("\n\n") if block.strip()]
    assert len(pseudo) == 2  # the two sentences the averaged labellers are surest of
    log = (folder / "log.txt").read_text(encoding="utf-8")
    assert "pseudo labels: 2 of 3 sentences" in log and "labelled by 2 run(s) (average)" in log and "pseudo-labelled: 2 sentences" in log
    assert {record["method"] for record in records} >= {"scratch", "finetune"}  # the labellers of the same seed, trained first
    spec = load_experiment(experiment)
    sources = grid.source_tasks(spec, ResultsStore(results), None)
    assert grid.method_task(spec, ResultsStore(results), None, "mixed", "pos", 1, sources).run_id == folder.name  # the grid's own run
    spec.methods["mixed"].pseudo_labels["top_n"] = 1
    assert grid.method_task(spec, ResultsStore(results), None, "mixed", "pos", 1, sources).run_id != folder.name  # other labels, another run
    for labels, message in (
        ("{from: [nothing], unlabeled: x}", "pseudo_labels.from must name other mono-task methods"),
        ("{from: [scratch], unlabeled: x, top_n: 2.5}", "top_n must be a whole number"),
        ("{from: [scratch], unlabeled: x, tokenizer: bpe}", "tokenizer must be one of"),
        ("{from: [scratch]}", "needs 'from' .a list of methods. and 'unlabeled'"),
        ("{from: [scratch], unlabeled: x, top_n: 0}", "top_n must be a whole number of at least 1"),
    ):
        experiment.write_text(text.replace(text.split("pseudo_labels: ")[1].split("}}")[0] + "}", labels), encoding="utf-8")
        with pytest.raises(SeqTransferError, match=message):
            load_experiment(experiment)


@pytest.mark.skipif(not (DATA_ROOT / "tweebank_v2").is_dir(), reason="shared datasets not found")  # its test_on reads TweeBank
def test_an_ensemble_scores_a_targets_test_on_data_and_only_where_all_its_members_run(tmp_path):
    from seqtransfer.experiments import grid
    from seqtransfer.experiments.store import ResultsStore

    experiment = tiny_experiment(tmp_path)
    text = experiment.read_text(encoding="utf-8").replace("  pos: {dataset: null, source: ner,", "  pos: {dataset: null, source: ner, test_on: 'tweebank:upos',")
    experiment.write_text(text, encoding="utf-8")
    records = run(["experiment", "run", str(experiment), "--only", "ensemble", "--results", str(tmp_path / "results")])
    ensemble = next(record for record in records if record["method"] == "ensemble")
    folder = Path(ensemble["predictions"])
    assert folder.name == "test-on-tweebank-upos" and json.loads((folder / "score.json").read_text())["score"] == ensemble["test"]
    built = json.loads((Path(ensemble["run_directory"]) / "metrics.json").read_text())
    from seqtransfer import rundir

    assert ensemble["network_parameters"] == built["network_parameters"] == sum(rundir.parameters_without_embeddings(Path(member)) for member in built["members"])
    assert len((folder / "test.conll").read_text(encoding="utf-8").split("\n\n")) > 1000  # TweeBank's test tweets, labelled by the members averaged
    narrowed = text.replace("  ensemble: {ensemble: [finetune, scratch+1000]}", "  narrow: {scheme: scratch, targets: [other]}\n  ensemble: {ensemble: [narrow, scratch]}")
    narrowed = narrowed.replace(
        "  pos: {dataset: null,",
        "  other: {dataset: null, overrides: " + text.split("  pos: {dataset: null, source: ner, test_on: 'tweebank:upos', overrides: ")[1].split("\n")[0] + "\n  pos: {dataset: null,",
    )
    experiment.write_text(narrowed, encoding="utf-8")
    spec = load_experiment(experiment)
    cells = grid.ensemble_tasks(spec, ResultsStore(tmp_path / "results"), None, [1], {}, set())
    assert [task.record["target"] for task, _ in cells] == ["other"]  # narrow runs on "other" only: no ensemble on pos


def test_a_method_distils_other_methods_runs_of_its_target_and_seed(tmp_path):
    experiment = tiny_experiment(tmp_path)
    text = experiment.read_text(encoding="utf-8").replace("  scratch: {scheme: scratch}", "  scratch: {scheme: scratch}\n  distilled: {scheme: scratch, distill_from: [finetune, scratch+1000]}")
    experiment.write_text(text, encoding="utf-8")
    records = run(["experiment", "run", str(experiment), "--only", "distilled", "--results", str(tmp_path / "results")])
    distilled = next(record for record in records if record["method"] == "distilled")
    config = (Path(distilled["run_directory"]) / "config.yaml").read_text(encoding="utf-8")
    teachers = {record["method"]: record["run_directory"] for record in records if record["method"] in ("finetune", "scratch+1000")}
    assert len(teachers) == 2 and all(Path(directory).name in config for directory in teachers.values())  # same target; seed 1 and 1001
    assert "distilling 2 teacher run(s)" in (Path(distilled["run_directory"]) / "log.txt").read_text(encoding="utf-8")
    experiment.write_text(text.replace("distill_from: [finetune, scratch+1000]", "distill_from: [nobody]"), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="distill_from must name other mono-task methods"):
        load_experiment(experiment)


def test_methods_read_only_methods_that_read_no_runs_and_a_teacher_of_another_seed_keeps_its_cell(tmp_path):
    experiment = tiny_experiment(tmp_path)
    base = experiment.read_text(encoding="utf-8")
    chained = base.replace("  scratch: {scheme: scratch}", "  scratch: {scheme: scratch}\n  taught: {scheme: scratch, distill_from: [scratch]}\n  chain: {scheme: scratch, distill_from: [taught]}")
    experiment.write_text(chained, encoding="utf-8")
    with pytest.raises(SeqTransferError, match="distill_from 'taught' reads other runs or self-labels"):
        load_experiment(experiment)
    text = base.replace("  scratch: {scheme: scratch}", "  scratch: {scheme: scratch}\n  distilled: {scheme: scratch, distill_from: [scratch, scratch+1]}")
    experiment.write_text(text, encoding="utf-8")
    records = run(["experiment", "run", str(experiment), "--only", "distilled", "--seeds", "2", "--results", str(tmp_path / "results")])
    cells = {(record["method"], record["seed"]) for record in records}
    assert ("scratch", 2) in cells and ("scratch+1", 2) not in cells  # seed 2's scratch run is its method's cell, though it also teaches seed 1
    assert ("scratch+1", 3) in cells  # seed 3's teaches seed 2 only: a cell of its own


RECORDED = sorted(path.name.removesuffix(".records.jsonl") for path in (Path(__file__).resolve().parent.parent / "docs" / "results").glob("*.records.jsonl"))


@pytest.mark.parametrize("name", RECORDED)
def test_committed_records_still_name_their_grid_cells_runs(name, tmp_path, monkeypatch):
    """Every committed record is the record of its cell's run on a fresh store: run ids depend only on
    the settings that decide results, so a refactor or a new config field that changed them would
    make kept cells train again. A run first trained under another target's name keeps that folder
    name in its record (same digest); an ensemble recorded before ensembles were named by their
    members' digests matches through its members' records."""
    from seqtransfer.experiments.grid import ensemble_tasks, method_tasks, source_tasks
    from seqtransfer.experiments.kept import cell_key, read_kept, selection_of
    from seqtransfer.experiments.runner import kept_records_of
    from seqtransfer.experiments.search_records import selected_epoch_caps
    from seqtransfer.experiments.store import ResultsStore, digest_of

    repository = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(tmp_path)  # an LM of this checkout's results/ trained again to other weights would set its cells aside
    experiment = name.removesuffix(".selected")  # NAME.selected: the cells `experiment run --selected` ran at searched settings
    spec = load_experiment(repository / "experiments" / f"{experiment}.yaml")
    kept = read_kept(repository / "docs" / "results" / f"{name}.records.jsonl", spec.name)
    if experiment != name:  # at the settings the records ran at, capped as their searches were
        spec.selected = selection_of(kept)
        spec.selected_epochs = selected_epoch_caps(repository / "docs" / "results" / f"{experiment}.search.jsonl", spec.name)
    cells = {cell_key(record): record for record in kept}
    seeds = sorted({record["seed"] for record in kept if record.get("method") and record["seed"] < 1000})
    store = ResultsStore(tmp_path / "results")
    sources = source_tasks(spec, store, None)
    tasks = [*method_tasks(spec, store, None, seeds, sources, set()), *(task for task, _ in ensemble_tasks(spec, store, None, seeds, sources, set()))]
    matched = [record for task in tasks for record in kept_records_of(task, cells) or []]
    source_digests = {digest_of(task.run_id) for task in sources.values()}
    matched += [record for record in kept if record.get("source") and digest_of(Path(record["run_directory"]).name) in source_digests]
    assert kept and sorted(map(cell_key, matched)) == sorted(map(cell_key, kept))


def test_a_run_first_trained_under_another_targets_name_is_kept_and_ensembled_by_digest(tmp_path, capsys):
    """A fresh store names a run by its own target; a kept record names the folder a first file gave
    it. Both are the same run, and an ensemble of it has one id whatever its members' folders."""
    experiment = tiny_experiment(tmp_path)
    kept = tmp_path / "kept.jsonl"
    results = tmp_path / "first"
    run(["experiment", "run", str(experiment), "--only", "scratch", "--results", str(results)])
    renamed = tmp_path / "renamed.yaml"
    renamed.write_text(experiment.read_text(encoding="utf-8").replace("  pos: {", "  POS again: {"), encoding="utf-8")
    first = run(["experiment", "run", str(renamed), "--results", str(results), "--records", str(kept)])
    assert {Path(record["run_directory"]).name.split("-")[0] for record in first if record["method"] == "scratch"} == {"pos"}  # the first file's folder
    ensemble = next(record for record in first if record["method"] == "ensemble")
    capsys.readouterr()
    second = run(["experiment", "run", str(renamed), "--results", str(tmp_path / "fresh"), "--records", str(kept)])
    assert "(0, 0, 0 to train, 5 kept)" in capsys.readouterr().out
    assert [record["test"] for record in second] == [record["test"] for record in first]
    fresh = run(["experiment", "run", str(renamed), "--only", "ensemble", "--results", str(tmp_path / "other")])
    assert Path(next(record for record in fresh if record["method"] == "ensemble")["run_directory"]).name == Path(ensemble["run_directory"]).name


def test_an_experiment_files_yes_no_on_off_are_booleans_where_a_boolean_is_asked_and_text_elsewhere(tmp_path):
    """Files are read with YAML 1.2's true / false, so that `train.amp=off` is text; a boolean key of
    an experiment file still takes no / Off (YAML 1.1's booleans), and anything else is one line."""
    text = """name: x
title: "x: no"
command: x
overrides: [train.amp=off]
targets:
  T: {dataset: tweebank, task: upos}
methods:
  A: {scheme: scratch, anneal: no}
  B: {scheme: scratch, multitask: Off}
reference: A
"""
    path = tmp_path / "e.yaml"
    path.write_text(text, encoding="utf-8")
    spec = load_experiment(path)
    assert spec.methods["A"].anneal is False and spec.methods["B"].multitask is False and spec.overrides == ["train.amp=off"]
    path.write_text(text.replace("anneal: no", "anneal: maybe"), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="'methods.A.anneal' must be true or false, got 'maybe'"):
        load_experiment(path)


def test_a_finished_run_on_an_encoder_since_replaced_trains_again(tmp_path, monkeypatch):
    """A grid names our own LM by its folder: a run trained on the LM that folder held before (the LM
    pretrained again at the same path) is not finished for the grid; it is moved aside and retrained."""
    import shutil

    from seqtransfer.experiments.grid import RunTask
    from seqtransfer.experiments.runner import is_finished
    from seqtransfer.experiments.stale_runs import set_stale_run_aside, stale_encoder

    monkeypatch.chdir(tmp_path)
    shutil.copytree(FIXTURES / "runs" / "tiny_bert", tmp_path / "encoder")
    run = tmp_path / "results" / "runs" / "cell"
    shutil.copytree(FIXTURES / "runs" / "v1_encoder_features", run)
    saved = (run / "config.yaml").read_text()
    task = RunTask(run_id="cell", directory=str(run), config={"model": {"encoder": "encoder"}}, record={})
    from seqtransfer.embeddings.transformer import encoder_fingerprint

    (run / "config.yaml").write_text(saved.replace("encoder: runs/tiny_bert", "encoder: encoder"))
    assert stale_encoder(task.directory, task.config["model"]["encoder"]) is None and is_finished(task)  # the fixture's hash is the tiny encoder's: the same folder content
    assert encoder_fingerprint("encoder") in saved
    (tmp_path / "encoder" / "config.json").write_text((tmp_path / "encoder" / "config.json").read_text().replace("}", ', "retrained": true}', 1))
    assert stale_encoder(task.directory, task.config["model"]["encoder"]) is not None and not is_finished(task)
    lines = []
    set_stale_run_aside(task.directory, task.config["model"]["encoder"], lines.append)
    assert not run.exists() and len(list(run.parent.glob("cell.encoder-*"))) == 1 and "training again" in lines[0]
    set_stale_run_aside(task.directory, task.config["model"]["encoder"], lines.append)  # another grid moved it first: nothing to do
    assert len(lines) == 1


def test_an_unfinished_run_on_an_encoder_since_replaced_is_moved_aside_too(tmp_path, monkeypatch):
    """Resumed, a run started on the LM its folder held before would refuse its settings' other encoder
    hash at every run of the grid: it is moved aside like a finished one, and the cell starts afresh."""
    import fcntl
    import shutil

    from seqtransfer.experiments.stale_runs import set_stale_run_aside

    monkeypatch.chdir(tmp_path)
    shutil.copytree(FIXTURES / "runs" / "tiny_bert", tmp_path / "encoder")
    run = tmp_path / "results" / "runs" / "cell"
    shutil.copytree(FIXTURES / "runs" / "v1_encoder_features", run)
    (run / "config.yaml").write_text((run / "config.yaml").read_text().replace("encoder: runs/tiny_bert", "encoder: encoder"))
    (run / "metrics.json").unlink()  # stopped before its end
    lines = []
    set_stale_run_aside(run, "encoder", lines.append)
    assert run.exists() and not lines  # the same encoder: it resumes where it stopped
    (tmp_path / "encoder" / "config.json").write_text((tmp_path / "encoder" / "config.json").read_text().replace("}", ', "retrained": true}', 1))
    with open(run / ".lock", "w") as lock:  # another grid is training it: left where it is
        fcntl.flock(lock, fcntl.LOCK_EX)
        set_stale_run_aside(run, "encoder", lines.append)
        assert run.exists() and not lines
    set_stale_run_aside(run, "encoder", lines.append)
    assert not run.exists() and len(list(run.parent.glob("cell.encoder-*"))) == 1 and "started (unfinished)" in lines[0]
    shutil.copytree(run.parent / next(run.parent.glob("cell.encoder-*")).name, run)  # the same old run again: set aside beside the first
    set_stale_run_aside(run, "encoder", lines.append)
    assert len(list(run.parent.glob("cell.encoder-*"))) == 2 and not run.exists()


def test_a_search_trial_on_an_encoder_since_replaced_trains_again(tmp_path, monkeypatch):
    """A search trial's run is named by its settings as a grid cell's is: a finished run trained on the
    LM its encoder folder held before is not read back as the trial's, it is moved aside."""
    import shutil

    from seqtransfer.experiments.search import finished_trial

    monkeypatch.chdir(tmp_path)
    shutil.copytree(FIXTURES / "runs" / "tiny_bert", tmp_path / "encoder")
    run = tmp_path / "results" / "runs" / "trial"
    shutil.copytree(FIXTURES / "runs" / "v1_encoder_features", run)
    (run / "config.yaml").write_text((run / "config.yaml").read_text().replace("encoder: runs/tiny_bert", "encoder: encoder"))
    assert finished_trial(run, "encoder") and run.exists()  # the same encoder: read back
    (tmp_path / "encoder" / "config.json").write_text((tmp_path / "encoder" / "config.json").read_text().replace("}", ', "retrained": true}', 1))
    assert not finished_trial(run, "encoder") and not run.exists() and len(list(run.parent.glob("trial.encoder-*"))) == 1


def test_a_cached_score_elsewhere_is_read_only_for_the_run_that_made_it(tmp_path):
    """A run folder trained again (another experiment's cell of the same settings) holds another
    run: the score.json of a test on other data made from the earlier one is not read again."""
    import os

    from seqtransfer.experiments.run_records import run_digest, score_elsewhere

    directory = tmp_path / "run"
    (directory / "test-on-tweebank-upos").mkdir(parents=True)
    (directory / "metrics.json").write_text('{"seconds": 10.0}', encoding="utf-8")
    cached = directory / "test-on-tweebank-upos" / "score.json"
    cached.write_text(json.dumps({"test_on": "tweebank:upos", "score": 80.0, "run": run_digest(directory)}), encoding="utf-8")
    assert score_elsewhere(directory, "tweebank:upos", None, score=False) == (80.0, str(cached.parent))
    (directory / "metrics.json").write_text('{"seconds": 12.5}', encoding="utf-8")  # trained again
    assert score_elsewhere(directory, "tweebank:upos", None, score=False) == (None, str(cached.parent))
    cached.write_text('{"test_on": "tweebank:upos", "score": 80.0}', encoding="utf-8")  # a cache from before caches named their run
    os.utime(directory / "metrics.json", (cached.stat().st_mtime + 5,) * 2)
    assert score_elsewhere(directory, "tweebank:upos", None, score=False)[0] is None  # older than the run
    os.utime(cached, (cached.stat().st_mtime + 10,) * 2)
    assert score_elsewhere(directory, "tweebank:upos", None, score=False)[0] == 80.0


@pytest.mark.parametrize(
    "body, message",
    [
        ("targets: {a: {dataset: nosuch}}\nmethods: {m: {scheme: scratch}}", "x.yaml: target 'a': unknown dataset 'nosuch'"),
        ("targets: {a: {dataset: wnut17+nosuch}}\nmethods: {m: {scheme: scratch}}", "x.yaml: target 'a': unknown dataset 'nosuch'"),
        ("targets: {a: {dataset: 'ud_ewt:upos+nosuch:pos'}}\nmethods: {m: {scheme: scratch}}", "x.yaml: target 'a': unknown dataset 'nosuch'"),
        ("targets: {a: {dataset: wnut17, test_on: 'nosuch:ner'}}\nmethods: {m: {scheme: scratch}}", "x.yaml: target 'a', test_on: unknown dataset 'nosuch'"),
        ("targets: {a: {dataset: wnut17}}\nmethods: {m: {scheme: scratch, overrides: [model.nonexistent=3]}}", "x.yaml: method 'm': unknown config key 'model.nonexistent'"),
        ("targets: {a: {dataset: wnut17}}\nmethods: {m: {scheme: scratch, overrides: [train.learning_rate=abc]}}", "x.yaml: method 'm': config key 'train.learning_rate' must be float"),
        ("targets: {a: {dataset: wnut17, overrides: [model.hidden]}}\nmethods: {m: {scheme: scratch}}", "x.yaml: target 'a': override 'model.hidden' is not of the form"),
        ("targets: {a: {dataset: wnut17}}", "x.yaml: 'experiment' lacks 'methods' (fix: add it: methods: ...)"),
    ],
)
def test_an_experiment_files_datasets_and_overrides_are_checked_when_it_is_read_naming_the_entry(tmp_path, body, message):
    """Before any cell trains (not when a cell reaches its training, after hours of others), and
    naming the file and the target or method the bad setting is in."""
    experiment = tmp_path / "x.yaml"
    experiment.write_text(f"name: x\n{body}\n", encoding="utf-8")
    with pytest.raises(SeqTransferError) as caught:
        load_experiment(experiment)
    assert message in str(caught.value)


def test_an_experiment_without_title_or_command_is_titled_by_its_name(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\ntargets: {a: {dataset: wnut17}}\nmethods: {m: {scheme: scratch}}\n", encoding="utf-8")
    spec = load_experiment(path)
    assert spec.title == "mine" and spec.command == f"seqtransfer experiment run {path}"


def test_an_ensembles_size_is_the_one_counted_when_it_was_built(tiny_run, tmp_path):
    """Recorded at build time, its members' folders may be trained again later; an ensemble built
    before sizes were recorded sums its members' weights and counts a shared frozen encoder once."""
    from seqtransfer import rundir
    from seqtransfer.experiments.run_records import network_parameters

    assert network_parameters(tmp_path, {"members": [str(tiny_run)], "network_parameters": 1234}) == 1234
    members = {"members": [str(tiny_run), str(tiny_run)], "frozen_encoder_parameters": 5}
    assert network_parameters(tmp_path, members) == 2 * rundir.parameters_without_embeddings(tiny_run) + 5


def test_a_grid_writing_a_records_file_keeps_the_cells_another_grid_wrote_meanwhile(tmp_path):
    """Two grids on one records file (other seeds, another --only): the second's closing write keeps the first's
    cells written since it started; a cell it dropped at the start stays dropped; another grid's newer run of a
    cell it only read wins; the experiment file's other experiments are untouched."""
    from seqtransfer.experiments.kept import add_kept, read_kept

    def cell(method, seed, test, experiment="tiny"):
        return {"experiment": experiment, "method": method, "target": "pos", "seed": seed, "run_directory": f"runs/{method}-{seed}-{test}", "test": test}

    path = tmp_path / "kept.jsonl"
    add_kept(path, "other", [cell("scratch", 1, 1.0, experiment="other")])
    add_kept(path, "tiny", [cell("scratch", 1, 50.0), cell("old", 1, 10.0)])
    read_at_start = read_kept(path, "tiny")
    add_kept(path, "tiny", [cell("scratch", 2, 60.0), cell("scratch", 1, 55.0)])  # another grid, meanwhile: a new seed, and the cell trained again
    add_kept(path, "tiny", [cell("scratch", 1, 50.0), cell("finetune", 1, 70.0)], read_at_start)  # this grid: "old" dropped, scratch 1 only read
    cells = {(record["experiment"], record["method"], record["seed"]): record["test"] for record in read_kept(path)}
    assert cells == {("tiny", "scratch", 1): 55.0, ("tiny", "scratch", 2): 60.0, ("tiny", "finetune", 1): 70.0, ("other", "scratch", 1): 1.0}


def test_a_self_labelling_run_on_an_encoder_since_replaced_is_stale(tmp_path, monkeypatch):
    """A self-labelling run's top folder holds its rounds, not a config: its first model says which encoder it read."""
    import shutil

    from seqtransfer.experiments.stale_runs import stale_encoder

    monkeypatch.chdir(tmp_path)
    shutil.copytree(FIXTURES / "runs" / "tiny_bert", tmp_path / "encoder")
    run = tmp_path / "results" / "runs" / "selflabel"
    shutil.copytree(FIXTURES / "runs" / "v1_encoder_features", run / "round-0" / "model-1")
    config = run / "round-0" / "model-1" / "config.yaml"
    config.write_text(config.read_text().replace("encoder: runs/tiny_bert", "encoder: encoder"))
    (run / "metrics.json").write_text("{}")
    assert stale_encoder(run, "encoder") is None
    (tmp_path / "encoder" / "config.json").write_text((tmp_path / "encoder" / "config.json").read_text().replace("}", ', "retrained": true}', 1))
    assert stale_encoder(run, "encoder") is not None


def test_the_records_lock_keeps_out_another_writer_while_held(tmp_path):
    import fcntl
    import os

    from seqtransfer.experiments.kept import records_lock

    path = tmp_path / "kept.jsonl"
    with records_lock(path):
        descriptor = os.open(tmp_path, os.O_RDONLY)  # what another grid's records_lock opens
        with pytest.raises(BlockingIOError):
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(descriptor)
    descriptor = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released at the end of the block
    os.close(descriptor)


def test_an_ensemble_folder_that_cannot_tell_which_member_runs_it_read_is_left_as_built(tmp_path):
    """Built before it recorded its members' fingerprints, or with a member not on this machine: no grid
    trains members again for an ensemble it cannot check; a member it recorded and finds changed: built again."""
    from seqtransfer.run_members import members_changed, run_fingerprint

    runs = tmp_path / "store" / "runs"
    for name in ("a", "b"):
        (runs / name).mkdir(parents=True)
        (runs / name / "metrics.json").write_text(json.dumps({"seconds": 1.0, "name": name}))
    ensemble = runs / "ensemble"
    ensemble.mkdir()
    (ensemble / "metrics.json").write_text(json.dumps({"members": ["elsewhere/runs/a", "elsewhere/runs/b"]}))  # recorded from another working folder
    assert not members_changed(ensemble)
    fingerprints = [run_fingerprint(runs / "a"), run_fingerprint(runs / "b")]
    (ensemble / "metrics.json").write_text(json.dumps({"members": ["elsewhere/runs/a", "elsewhere/runs/b"], "member_runs": fingerprints}))
    assert not members_changed(ensemble)
    (runs / "b" / "metrics.json").write_text(json.dumps({"seconds": 2.0, "name": "b"}))  # b trained again: found beside the ensemble
    assert members_changed(ensemble)
    (runs / "b" / "metrics.json").unlink()  # b set aside to train again: cannot tell yet
    assert not members_changed(ensemble)


@pytest.mark.parametrize("score", [float("nan"), float("inf"), "93.1", True])
def test_a_kept_record_whose_score_is_not_a_finite_number_is_refused_naming_its_line(tmp_path, score):
    """A hand-mended records file with a NaN, an infinity or a quoted score would make every mean of its
    cell NaN (or crash the std); reading it names the file and line instead."""
    from seqtransfer.experiments.kept import read_kept

    kept = tmp_path / "kept.jsonl"
    good = {"experiment": "tiny", "run_directory": "runs/a", "method": "scratch", "target": "pos", "seed": 1, "dev": 90.0, "test": 89.5}
    kept.write_text(json.dumps(good) + "\n" + json.dumps(good | {"seed": 2, "test": score}) + "\n" + json.dumps(good | {"seed": 3, "test": None}) + "\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match=r"kept\.jsonl:2: the record's 'test' score is .*, not a finite number"):
        read_kept(kept)
    kept.write_text(json.dumps(good) + "\n" + json.dumps(good | {"seed": 3, "test": None}) + "\n", encoding="utf-8")
    assert [record["test"] for record in read_kept(kept)] == [89.5, None]
