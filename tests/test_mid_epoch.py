"""Checkpoints inside an epoch (``train.checkpoint_minutes``, ``pretrain-lm --checkpoint-minutes``):
a run killed in the middle of an epoch resumes at the batch it reached and trains the same weights,
to the bit, as a run never stopped."""

from __future__ import annotations

import json
import time

import pytest
import test_awd_lstm
import test_recurrent_lm
import torch
from conftest import tiny_train_arguments

from seqtransfer.cli import main, run
from seqtransfer.training import checkpoint

text = test_recurrent_lm.text  # the text fixture of the LM tests
ALWAYS = "1e-9"  # minutes between checkpoints: one before every batch but an epoch's first


class Crash(Exception):
    pass


def crash_inside(monkeypatch, epoch: int, batches: int, pause_after: tuple[int, int] | None = None) -> list:
    """Make checkpoint.save raise Crash right after writing the checkpoint of ``batches`` batches
    into ``epoch``; -> the progress of every save (None: an epoch's end), the real save restored by the caller.
    ``pause_after`` (epoch, batches): sleep 0.3 s after that checkpoint, inside that epoch's time."""
    real_save, saved = checkpoint.save, []

    def save_then_crash(directory, model, optimizer, state):
        real_save(directory, model, optimizer, state)
        saved.append(None if state.progress is None else (state.progress.epoch, state.progress.batches))
        if saved[-1] == pause_after:
            time.sleep(0.3)
        if saved[-1] == (epoch, batches):
            raise Crash(f"killed after batch {batches} of epoch {epoch}")

    monkeypatch.setattr(checkpoint, "save", save_then_crash)
    return saved


@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
def test_a_run_killed_inside_an_epoch_resumes_there_to_identical_weights(tmp_path, monkeypatch, capsys, optimizer):
    settings = ["train.patience=100", f"train.optimizer={optimizer}", "train.batch_size=1"]  # 5 sentences: 5 batches an epoch
    straight = run(tiny_train_arguments(tmp_path / "straight", epochs=3, seed=2) + settings + ["train.checkpoint_minutes=0"])
    arguments = tiny_train_arguments(tmp_path / "resumed", epochs=3, seed=2) + settings + [f"train.checkpoint_minutes={ALWAYS}"]
    saved = crash_inside(monkeypatch, 2, 3, pause_after=(1, 2))  # the killed process's epoch 1 lasts 0.3 s at least
    with pytest.raises(Crash):
        run(arguments)
    assert saved == [(1, 1), (1, 2), (1, 3), (1, 4), None, (2, 1), (2, 2), (2, 3)]
    monkeypatch.undo()
    capsys.readouterr()
    resumed = run(arguments)
    assert "resuming in epoch 2 after batch 3" in capsys.readouterr().out
    assert [record["loss"] for record in resumed["history"]] == [record["loss"] for record in straight["history"]]
    assert (tmp_path / "resumed" / "model.safetensors").read_bytes() == (tmp_path / "straight" / "model.safetensors").read_bytes()
    # the epochs of both processes count: the killed one's 0.3 s and more are in the run's seconds (rounded to 0.1)
    assert resumed["history"][0]["epoch_seconds"] >= 0.3
    assert resumed["seconds"] >= sum(record["epoch_seconds"] for record in resumed["history"]) - 0.05


@pytest.mark.parametrize("module", [test_recurrent_lm, test_awd_lstm], ids=["bilstm", "awd-lstm"])
def test_a_language_model_killed_inside_an_epoch_resumes_there_to_identical_weights(text, tmp_path, monkeypatch, capsys, module):
    """The AWD-LSTM carries its LSTM states from one chunk of the stream to the next: the checkpoint keeps them."""
    from safetensors.torch import load_file

    options = [*module.TINY_LM]
    run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "straight"), *options, "--checkpoint-minutes", "0"])
    arguments = ["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "lm"), *options, "--checkpoint-minutes", ALWAYS]
    saved = crash_inside(monkeypatch, 2, 4)
    with pytest.raises(Crash):
        run(arguments)
    monkeypatch.undo()
    if module is test_awd_lstm:
        held = load_file(str(next((tmp_path / "lm.partial").rglob("tensors.safetensors"))))
        assert any(name.startswith("carried.") for name in held)
    capsys.readouterr()
    summary = run(arguments)
    assert saved[-1] == (2, 4) and "resuming in epoch 2 after batch 4" in capsys.readouterr().out
    first, second = load_file(str(tmp_path / "straight" / "model.safetensors")), load_file(str(tmp_path / "lm" / "model.safetensors"))
    assert first.keys() == second.keys() and all(torch.equal(first[name], second[name]) for name in first)
    straight = json.loads((tmp_path / "straight" / "pretraining.json").read_text())
    assert [record["held_out_perplexity"] for record in summary["history"]] == [record["held_out_perplexity"] for record in straight["history"]]


def test_lazy_momentum_sgd_checkpoints_at_epoch_ends_only(tmp_path, monkeypatch):
    saved = crash_inside(monkeypatch, 0, 0)  # never crashes: counts the saves
    run(tiny_train_arguments(tmp_path / "run", epochs=2) + ["train.optimizer=sgd", "train.batch_size=1", f"train.checkpoint_minutes={ALWAYS}"])
    assert saved == [None, None]


def test_recorded_activations_survive_a_resume_inside_an_epoch(tmp_path, monkeypatch):
    """A resumed epoch runs its epoch hooks again, on weights part-way through it: the activations
    recorded before its first batch stay as an uninterrupted run wrote them."""
    from safetensors.torch import load_file

    settings = ["train.patience=100", "train.optimizer=adam", "train.batch_size=1", "train.record_activations=[0,1,2]", f"train.checkpoint_minutes={ALWAYS}"]
    run(tiny_train_arguments(tmp_path / "straight", epochs=3, seed=2) + settings)
    arguments = tiny_train_arguments(tmp_path / "resumed", epochs=3, seed=2) + settings
    crash_inside(monkeypatch, 2, 3)
    with pytest.raises(Crash):
        run(arguments)
    monkeypatch.undo()
    run(arguments)
    straight = sorted((tmp_path / "straight").rglob("*.safetensors"))
    assert {path.name for path in straight} >= {"epoch-000.safetensors", "epoch-001.safetensors", "epoch-002.safetensors", "final.safetensors"}
    for path in straight:  # the values (safetensors may order a header's metadata differently from one process to the next)
        first, second = load_file(str(path)), load_file(str(tmp_path / "resumed" / path.relative_to(tmp_path / "straight")))
        assert first.keys() == second.keys() and all(torch.equal(first[name], second[name]) for name in first), path.name


FORGED = {
    "another epoch": ({"epoch": 5}, "its progress is in epoch 5, after epoch 1"),
    "a fractional batch": ({"batches": 2.5}, "its progress inside an epoch is malformed"),
    "a batch count as text": ({"batches": "2"}, "its progress inside an epoch is malformed"),
    "a loss that is not a number": ({"loss": float("nan")}, "loss nan"),
    "a scaler that is not one": ({"scaler": [1, 2]}, "its progress inside an epoch is malformed"),
}


@pytest.mark.parametrize("forged", list(FORGED))
def test_a_forged_progress_is_one_line_naming_restart(tmp_path, monkeypatch, capsys, forged):
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    arguments = tiny_train_arguments(tmp_path / "run", epochs=3) + ["train.optimizer=adam", "train.batch_size=1", f"train.checkpoint_minutes={ALWAYS}"]
    crash_inside(monkeypatch, 2, 2)
    with pytest.raises(Crash):
        run(arguments)
    monkeypatch.undo()
    (path,) = (tmp_path / "run" / "checkpoint").glob("*/tensors.safetensors")
    with safe_open(str(path), "pt") as handle:
        metadata = handle.metadata()
    state = json.loads(metadata["state"])
    assert state["progress"]["epoch"] == 2 and state["progress"]["batches"] == 2
    change, expected = FORGED[forged]
    metadata["state"] = json.dumps({**state, "progress": {**state["progress"], **change}})
    save_file(load_file(str(path)), str(path), metadata=metadata)
    assert main(arguments) != 0
    error = capsys.readouterr().err
    assert expected in error and "--restart" in error and "Traceback" not in error and len(error.strip().splitlines()) == 1


def test_a_checkpoint_inside_the_first_epoch_is_strict_json(tmp_path, monkeypatch):
    """Before epoch 1 ends there is no best score: the metadata says null, not -Infinity (which JSON lacks)."""
    from safetensors import safe_open

    crash_inside(monkeypatch, 1, 2)
    with pytest.raises(Crash):
        run(tiny_train_arguments(tmp_path / "run", epochs=2) + ["train.optimizer=adam", "train.batch_size=1", f"train.checkpoint_minutes={ALWAYS}"])
    monkeypatch.undo()
    (path,) = (tmp_path / "run" / "checkpoint").glob("*/tensors.safetensors")
    with safe_open(str(path), "pt") as handle:
        text = handle.metadata()["state"]
    state = json.loads(text, parse_constant=lambda name: pytest.fail(f"not JSON: {name}"))
    assert state["best_score"] is None and state["epoch"] == 0 and state["progress"]["batches"] == 2
    run(tiny_train_arguments(tmp_path / "run", epochs=2) + ["train.optimizer=adam", "train.batch_size=1", f"train.checkpoint_minutes={ALWAYS}"])


def test_checkpoint_minutes_is_not_part_of_a_runs_identity():
    from seqtransfer.config import RunConfig, result_settings

    config = RunConfig()
    config.train.checkpoint_minutes = 3
    assert result_settings(config) == result_settings(RunConfig())
