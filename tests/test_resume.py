"""A training run killed after an epoch resumes from its checkpoint and ends exactly as an uninterrupted one."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, TINY_MODEL, tiny_train_arguments

from seqtransfer.cli import run
from seqtransfer.training import checkpoint


class Crash(Exception):
    pass


def crash_after(monkeypatch, epoch: int):
    """Make checkpoint.save write epoch ``epoch``'s checkpoint, then raise Crash; returns the real save."""
    real_save = checkpoint.save

    def save_then_crash(directory, model, optimizer, state):
        real_save(directory, model, optimizer, state)
        if state.epoch == epoch:
            raise Crash(f"killed after epoch {epoch}")

    monkeypatch.setattr(checkpoint, "save", save_then_crash)
    return real_save


@pytest.mark.parametrize("optimizer, adversarial", [("sgd", False), ("adam", False), ("sgd", True)])
def test_interrupted_run_resumes_to_identical_weights(tmp_path, monkeypatch, optimizer, adversarial):
    extra = ["train.patience=100", f"train.optimizer={optimizer}"]
    if adversarial:  # the target batches the discriminator reads come in the same order after a resume
        extra.append(f"train.adversarial_data={FIXTURES / 'tiny_pos_dev.conll'}")
        extra.append("train.adversarial_word_column=1")
    uninterrupted = run(tiny_train_arguments(tmp_path / "straight", epochs=4, seed=3) + extra)

    real_save = crash_after(monkeypatch, 2)
    arguments = tiny_train_arguments(tmp_path / "resumed", epochs=4, seed=3) + extra
    with pytest.raises(Crash):
        run(arguments)
    assert not (tmp_path / "resumed" / "metrics.json").exists()
    monkeypatch.setattr(checkpoint, "save", real_save)
    resumed = run(arguments)

    assert [record["loss"] for record in resumed["history"]] == [record["loss"] for record in uninterrupted["history"]]
    assert resumed["test"] == uninterrupted["test"]
    weights = (tmp_path / "straight" / "model.safetensors").read_bytes()
    assert (tmp_path / "resumed" / "model.safetensors").read_bytes() == weights


def test_resumed_fit_reports_the_time_of_restored_epochs(tmp_path):
    """The epochs run before a crash count in the run's total time (metrics.json 'seconds'), and
    a tuning service is told every epoch: the restored ones first, marked, then the new one."""
    from seqtransfer.config import RunConfig, apply_overrides
    from seqtransfer.corpora.task_data import load_task_data
    from seqtransfer.data.batching import encode_sentences
    from seqtransfer.models.registry import build_model
    from seqtransfer.training.inference import EvaluationSet
    from seqtransfer.training.loop import ShuffledBatches, dev_evaluation, fit
    from seqtransfer.training.vocabularies import prepare_vocabularies

    config = apply_overrides(RunConfig(), TINY_MODEL)
    config.data.dataset, config.data.columns = None, ["word", "ner"]
    config.data.train, config.data.dev = str(FIXTURES / "tiny_ner_train.conll"), str(FIXTURES / "tiny_ner_dev.conll")
    data = load_task_data(config.data)
    vocabularies, _ = prepare_vocabularies(config, data, lambda message: None)
    model = build_model(config.model, vocabularies)
    train = encode_sentences(data.tokens("train"), vocabularies, data.labels("train"))
    dev = EvaluationSet(encode_sentences(data.tokens("dev"), vocabularies), data.labels("dev"))
    config.train.max_epochs, config.train.patience = 2, 100
    first = fit(
        model,
        ShuffledBatches(train, config.train.batch_size, config.train.seed),
        dev_evaluation(dev, vocabularies.labels, "accuracy", 512),
        config.train,
        checkpoint_dir=tmp_path,
        log=lambda message: None,
        show_progress=False,
    )
    config.train.max_epochs = 3
    reports = []
    second = fit(
        model,
        ShuffledBatches(train, config.train.batch_size, config.train.seed),
        dev_evaluation(dev, vocabularies.labels, "accuracy", 512),
        config.train,
        checkpoint_dir=tmp_path,
        log=lambda message: None,
        show_progress=False,
        epoch_reports=(reports.append,),
    )
    assert first.restored_seconds == 0.0 and len(second.history) == 3
    assert [(record["epoch"], record["dev"], record.get("restored", False)) for record in reports] == [
        (1, first.history[0]["dev"], True),
        (2, first.history[1]["dev"], True),
        (3, second.history[2]["dev"], False),
    ]
    assert second.restored_seconds == sum(record["epoch_seconds"] for record in first.history) > 0


@pytest.mark.parametrize("damage", ["truncated", "forged epoch", "other weights"])
def test_a_damaged_checkpoint_is_one_line_naming_restart_and_rewrites_nothing(tmp_path, monkeypatch, capsys, damage):
    """A checkpoint that is cut short, whose metadata does not describe its epochs, or whose weights
    are not the model's: one line naming --restart, before config.yaml or vocabulary.json is rewritten."""
    import json

    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    from seqtransfer.cli import main

    real_save = crash_after(monkeypatch, 2)
    arguments = tiny_train_arguments(tmp_path / "run", epochs=4) + ["train.patience=100"]
    with pytest.raises(Crash):
        run(arguments)
    monkeypatch.setattr(checkpoint, "save", real_save)
    (path,) = (tmp_path / "run" / "checkpoint").glob("*/tensors.safetensors")
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:-1000])
    else:
        with safe_open(str(path), "pt") as handle:
            metadata = handle.metadata()
        tensors = load_file(str(path))
        if damage == "forged epoch":
            state = json.loads(metadata["state"])
            metadata["state"] = json.dumps({**state, "epoch": 7})
        else:
            name = next(name for name in tensors if name.startswith("model.classifier.weight"))
            tensors[name] = tensors[name][:, :2].contiguous()
        save_file(tensors, str(path), metadata=metadata)
    written = {name: (tmp_path / "run" / name).stat().st_mtime_ns for name in ("config.yaml", "vocabulary.json")}
    assert main(arguments) != 0
    error = capsys.readouterr().err
    assert "checkpoint of this unfinished run is damaged" in error and "--restart" in error and "Traceback" not in error
    assert {name: (tmp_path / "run" / name).stat().st_mtime_ns for name in written} == written
    assert main([*arguments, "--restart"]) == 0


def test_a_changed_setting_is_named_before_the_checkpoint_is_read(tmp_path, monkeypatch, capsys):
    """Re-running an interrupted run with another model size: the setting is named (the same command resumes), not a 'damaged' checkpoint."""
    from seqtransfer.cli import main

    real_save = crash_after(monkeypatch, 1)
    arguments = tiny_train_arguments(tmp_path / "run", epochs=3)
    with pytest.raises(Crash):
        run(arguments)
    monkeypatch.setattr(checkpoint, "save", real_save)
    assert main([*arguments, "model.hidden=20"]) != 0
    error = capsys.readouterr().err
    assert "other settings (model.hidden)" in error and "damaged" not in error
