"""One run path (issue 49, point 3): a model of one task and a multi-task model are trained by the
same orchestration (workflows/run_path.py ``run``), each as a run kind; nothing else writes a
trained run directory."""

from __future__ import annotations

import json

from conftest import TINY_MODEL, tiny_train_arguments


def test_one_task_and_several_tasks_take_the_same_run_path(tmp_path, monkeypatch):
    from test_multitask import NER, POS, write_config

    from seqtransfer.cli import run as run_command
    from seqtransfer.workflows import run_path, train

    kinds = []
    real = run_path.run

    def watching(kind, directory, *arguments):
        kinds.append(type(kind).__name__)
        metrics = real(kind, directory, *arguments)
        assert json.loads((directory / "metrics.json").read_text(encoding="utf-8")) == metrics  # written by the run path, last
        return metrics

    monkeypatch.setattr(train, "run", watching)
    run_command(tiny_train_arguments(tmp_path / "one", epochs=1))
    config = write_config(tmp_path, {"pos": [], "ner": ["pos"]}, {"pos": POS, "ner": NER})
    run_command(["train", "--config", str(config), "--output", str(tmp_path / "several"), "--epochs", "1", "--quiet", *TINY_MODEL])
    assert kinds == ["OneTaskRun", "MultitaskRun"]
    one = json.loads((tmp_path / "one" / "metrics.json").read_text(encoding="utf-8"))
    several = json.loads((tmp_path / "several" / "metrics.json").read_text(encoding="utf-8"))
    shared = ("scheme", "best_epoch", "parameters", "trainable_parameters", "history", "seconds", "device", "peak_rss_megabytes")
    assert [key for key in shared if key in one] == [key for key in shared if key in several] == list(shared)  # the same cost figures, one function
    assert set(several["tasks"]) == {"pos", "ner"} and "test" in one


def test_a_run_kind_has_what_the_run_path_asks():
    from seqtransfer.workflows.multitask import MultitaskRun
    from seqtransfer.workflows.run_path import RunKind
    from seqtransfer.workflows.train import OneTaskRun

    asked = [name for name in vars(RunKind) if not name.startswith("_")]
    for kind in (OneTaskRun, MultitaskRun):
        assert [name for name in asked if not callable(getattr(kind, name, None))] == [], kind.__name__
