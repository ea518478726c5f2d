"""The configuration is resolved before training and frozen from then on (issue 49, point 4):
what config.yaml says is what trained, because nothing can assign into it afterwards."""

from __future__ import annotations

import copy
import dataclasses

import pytest
from conftest import tiny_train_arguments


def test_training_runs_on_a_frozen_configuration(tmp_path, monkeypatch):
    from seqtransfer.cli import run
    from seqtransfer.workflows import train

    seen = {}
    real = train.OneTaskRun.fit

    def watching(self, *arguments, **keywords):
        config = self.config
        seen["config"] = config
        with pytest.raises(AttributeError, match="resolved and frozen"):
            config.model.hidden = 8
        with pytest.raises(AttributeError, match="resolved and frozen"):
            config.train = None
        return real(self, *arguments, **keywords)

    monkeypatch.setattr(train.OneTaskRun, "fit", watching)
    run(tiny_train_arguments(tmp_path / "run", epochs=1))
    config = seen["config"]
    assert config.model.hidden == 16  # unchanged, and the run finished on it
    changed = dataclasses.replace(config.model, hidden=8)  # a copy is a new configuration, free to change
    changed.dropout = 0.2
    copied = copy.deepcopy(config)
    copied.train.seed = 9
    assert (changed.hidden, copied.train.seed, config.train.seed) == (8, 9, 1)


def test_the_model_is_built_from_the_configuration_resolve_run_froze(tmp_path, monkeypatch):
    """One function fills the configuration in (workflows/resolution.py resolve_run); the model is
    built after it, from the frozen configuration, for a transfer run too (the source's sizes taken)."""
    from seqtransfer.cli import run
    from seqtransfer.workflows import train

    source = tmp_path / "source"
    run(tiny_train_arguments(source, epochs=1))
    built = []
    real = train.build_target_model

    def watching(config, *arguments, **keywords):
        with pytest.raises(AttributeError, match="resolved and frozen"):
            config.model.hidden = 8
        built.append((config.model.hidden, config.data.metric, config.model.architecture))
        return real(config, *arguments, **keywords)

    monkeypatch.setattr(train, "build_target_model", watching)
    arguments = tiny_train_arguments(tmp_path / "target", epochs=1)
    run(["transfer", "--source", str(source), "--method", "finetune", *arguments[1:]])
    assert built == [(16, "span_f1", "tagger")]


def test_a_multitask_model_is_built_from_a_frozen_configuration(tmp_path, monkeypatch):
    from conftest import TINY_MODEL
    from test_multitask import NER, POS, write_config

    from seqtransfer.cli import run
    from seqtransfer.workflows import multitask

    built = []
    real = multitask.build_multitask_model

    def watching(config, *arguments, **keywords):
        with pytest.raises(AttributeError, match="resolved and frozen"):
            config.model.hidden = 8
        built.append(config.model.architecture)
        return real(config, *arguments, **keywords)

    monkeypatch.setattr(multitask, "build_multitask_model", watching)
    config = write_config(tmp_path, {"pos": [], "ner": ["pos"]}, {"pos": POS, "ner": NER})
    run(["train", "--config", str(config), "--output", str(tmp_path / "multi"), "--epochs", "1", "--quiet", *TINY_MODEL])
    assert built == ["multitask"]
