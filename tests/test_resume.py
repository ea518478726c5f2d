"""A training run killed after an epoch resumes from its checkpoint and ends exactly as an uninterrupted one."""

from __future__ import annotations

import pytest

from conftest import tiny_train_arguments
from seqtransfer.cli import run
from seqtransfer.training import checkpoint


class Crash(Exception):
    pass


def test_interrupted_run_resumes_to_identical_weights(tmp_path, monkeypatch):
    uninterrupted = run(tiny_train_arguments(tmp_path / "straight", epochs=4, seed=3) + ["train.patience=100"])

    real_save = checkpoint.save

    def save_then_crash(directory, model, optimizer, state):
        real_save(directory, model, optimizer, state)
        if state.epoch == 2:
            raise Crash("killed after epoch 2")

    monkeypatch.setattr(checkpoint, "save", save_then_crash)
    arguments = tiny_train_arguments(tmp_path / "resumed", epochs=4, seed=3) + ["train.patience=100"]
    with pytest.raises(Crash):
        run(arguments)
    assert not (tmp_path / "resumed" / "metrics.json").exists()
    monkeypatch.setattr(checkpoint, "save", real_save)
    resumed = run(arguments)

    assert [record["loss"] for record in resumed["history"]] == [record["loss"] for record in uninterrupted["history"]]
    assert resumed["test"] == uninterrupted["test"]
    weights = (tmp_path / "straight" / "model.safetensors").read_bytes()
    assert (tmp_path / "resumed" / "model.safetensors").read_bytes() == weights
