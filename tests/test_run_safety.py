"""Run directories are never silently corrupted (issue: checkpoint atomicity, resume checks, one writer),
the command line takes overrides anywhere, and the Python API validates its input."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, tiny_train_arguments

import seqtransfer
from seqtransfer.cli import main, run
from seqtransfer.errors import SeqTransferError
from seqtransfer.training import checkpoint


def one_error_line(arguments, capsys) -> str:
    code = main(arguments)
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in captured.err, captured
    return lines[0]


class Crash(Exception):
    pass


def test_checkpoint_is_one_file_with_its_epoch(tmp_path, monkeypatch):
    """The epoch lives in the tensors file: no moment exists where weights and state disagree."""
    real_save = checkpoint.save

    def save_then_crash(directory, model, optimizer, state):
        real_save(directory, model, optimizer, state)
        if state.epoch == 2:
            raise Crash

    monkeypatch.setattr(checkpoint, "save", save_then_crash)
    with pytest.raises(Crash):
        run(tiny_train_arguments(tmp_path / "run", epochs=4) + ["train.patience=100"])
    files = sorted(path.name for path in (tmp_path / "run" / "checkpoint" / "train").iterdir())
    assert files == [checkpoint.TENSORS_FILE]
    from safetensors import safe_open

    with safe_open(str(tmp_path / "run" / "checkpoint" / "train" / checkpoint.TENSORS_FILE), framework="pt") as handle:
        assert json.loads(handle.metadata()["state"])["epoch"] == 2


def test_resume_with_other_settings_is_refused(tmp_path, monkeypatch, capsys):
    real_save = checkpoint.save

    def save_then_crash(directory, model, optimizer, state):
        real_save(directory, model, optimizer, state)
        raise Crash

    monkeypatch.setattr(checkpoint, "save", save_then_crash)
    with pytest.raises(Crash):
        run(tiny_train_arguments(tmp_path / "run", epochs=3))
    monkeypatch.setattr(checkpoint, "save", real_save)
    config_before = (tmp_path / "run" / "config.yaml").read_text()
    message = one_error_line(tiny_train_arguments(tmp_path / "run", epochs=3, seed=9), capsys)
    assert "other settings" in message and "train.seed" in message and "--restart" in message
    assert (tmp_path / "run" / "config.yaml").read_text() == config_before
    metrics = run(tiny_train_arguments(tmp_path / "run", epochs=3, seed=9) + ["--restart"])
    assert metrics["history"][0]["epoch"] == 1 and (tmp_path / "run" / "metrics.json").is_file()


def test_restart_refuses_a_folder_that_is_not_a_run(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    message = one_error_line(tiny_train_arguments(tmp_path / "mine") + ["--restart"], capsys)
    assert "not one" in message and (tmp_path / "mine" / "notes.txt").is_file()


def test_restart_empties_a_run_stopped_while_its_fold_taggers_trained(tmp_path):
    from seqtransfer.commands.train import restart

    folds = tmp_path / "run" / "jackknife" / "fold-1"
    folds.mkdir(parents=True)
    (folds / "log.txt").write_text("epoch 1")
    restart(tmp_path / "run")  # only the jackknife's scratch folder: still a run of ours
    assert (tmp_path / "run").is_dir() and [path.name for path in (tmp_path / "run").iterdir()] in ([], ["train.lock"])


def test_second_writer_is_refused(tmp_path, capsys):
    from seqtransfer import rundir

    with rundir.writer_lock(tmp_path / "run"):
        message = one_error_line(tiny_train_arguments(tmp_path / "run"), capsys)
    assert "another seqtransfer process" in message
    assert not (tmp_path / "run" / rundir.LOCK).exists()


def test_leftover_temporary_files_are_removed(tmp_path):
    (tmp_path / "run").mkdir()
    leftover = tmp_path / "run" / ".model.safetensors.abc123.tmp"
    leftover.write_bytes(b"half")
    run(tiny_train_arguments(tmp_path / "run", epochs=1))
    assert not leftover.exists() and not list((tmp_path / "run").rglob("*.tmp"))


def test_bad_record_activations_fail_before_anything_is_written(tmp_path, capsys):
    message = one_error_line(tiny_train_arguments(tmp_path / "run") + ["train.record_activations=[a]"], capsys)
    assert "record_activations" in message and not (tmp_path / "run").exists()


def test_overrides_anywhere_on_the_line(tmp_path):
    arguments = tiny_train_arguments(tmp_path / "run", epochs=1)
    output_at = arguments.index("--output")
    arguments[output_at + 2 : output_at + 2] = ["train.batch_size=4"]  # right after --output DIR
    run(arguments)
    assert "batch_size: 4" in (tmp_path / "run" / "config.yaml").read_text()


def test_off_on_yes_and_no_are_words_for_a_text_setting_and_booleans_for_a_boolean_one(tmp_path):
    """YAML 1.1 reads off / on / yes / no as booleans, so `train.amp=off` was refused as "must be
    str, got False"; they are text for a text setting and booleans for a boolean one, in
    overrides and in config files alike."""
    from seqtransfer.config import RunConfig, apply_overrides, load_config

    config = apply_overrides(RunConfig(), ["train.amp=off", "model.lowercase_words=no"])
    assert config.train.amp == "off" and config.model.lowercase_words is False
    (tmp_path / "run.yaml").write_text("train:\n  amp: off\nmodel:\n  lowercase_words: No\n", encoding="utf-8")
    loaded = load_config(tmp_path / "run.yaml")
    assert loaded.train.amp == "off" and loaded.model.lowercase_words is False
    run(tiny_train_arguments(tmp_path / "run", epochs=1) + ["train.amp=off"])
    assert "amp: 'off'" in (tmp_path / "run" / "config.yaml").read_text() and seqtransfer.load(tmp_path / "run").run.config.train.amp == "off"


def test_epochs_option_and_override_must_agree(tmp_path, capsys):
    message = one_error_line(tiny_train_arguments(tmp_path / "run", epochs=2) + ["train.max_epochs=5"], capsys)
    assert "train.max_epochs" in message and not (tmp_path / "run").exists()


def test_cr_only_line_endings_are_read(tmp_path):
    from seqtransfer.data.conll import read_conll

    text = (FIXTURES / "tiny_ner_train.conll").read_text().replace("\n", "\r")
    (tmp_path / "mac.conll").write_bytes(text.encode())
    assert [s.tokens for s in read_conll(tmp_path / "mac.conll", ["word", "ner"])] == [s.tokens for s in read_conll(FIXTURES / "tiny_ner_train.conll", ["word", "ner"])]


@pytest.mark.parametrize(
    "bad,expected",
    [
        ({"a": 1}, "expected a list of sentences"),
        (None, "expected a list of sentences"),
        ([["I", ""]], "token 2 of sentence 1"),
        ([["I", 3]], "token 2 of sentence 1"),
        ([5], "sentence 1 is a int"),
        ([[]], "sentence 1 is empty"),
    ],
)
def test_predict_validates_its_input(tiny_run, bad, expected):
    with pytest.raises(SeqTransferError, match=expected):
        seqtransfer.load(tiny_run).predict(bad)


def test_predict_takes_one_string_as_one_sentence(tiny_run):
    assert len(seqtransfer.load(tiny_run).predict("John loves Paris")) == 1


def test_evaluate_warns_about_labels_the_model_never_saw(tiny_run, capsys):
    run(["evaluate", str(tiny_run), "--file", str(FIXTURES / "tiny_pos_dev.conll"), "--columns", "word,pos", "--task", "pos", "--scheme", "none"])
    assert "were never seen by the model" in capsys.readouterr().err


def test_kill_inside_a_checkpoint_write_resumes_from_the_previous_epoch(tmp_path, monkeypatch):
    """A kill around the checkpoint's rename leaves one consistent checkpoint (before: the tensors and
    state.json were renamed one after the other, and a kill between them resumed epoch-2 weights as epoch 1)."""
    import os

    straight = run(tiny_train_arguments(tmp_path / "straight", epochs=3, seed=3) + ["train.patience=100"])
    real_replace, calls = os.replace, []

    def replace_then_die(source, target):
        real_replace(source, target)
        if str(target).endswith(checkpoint.TENSORS_FILE):
            calls.append(target)
            if len(calls) == 2:  # killed right after the second epoch's tensors are in place
                raise Crash

    monkeypatch.setattr(os, "replace", replace_then_die)
    with pytest.raises(Crash):
        run(tiny_train_arguments(tmp_path / "run", epochs=3, seed=3) + ["train.patience=100"])
    monkeypatch.setattr(os, "replace", real_replace)
    resumed = run(tiny_train_arguments(tmp_path / "run", epochs=3, seed=3) + ["train.patience=100"])
    assert [record["loss"] for record in resumed["history"]] == [record["loss"] for record in straight["history"]]
    assert (tmp_path / "run" / "model.safetensors").read_bytes() == (tmp_path / "straight" / "model.safetensors").read_bytes()


def test_bad_betas_are_one_line(tmp_path, capsys):
    message = one_error_line(tiny_train_arguments(tmp_path / "run") + ["train.betas=[a, b]"], capsys)
    assert "train.betas" in message and not (tmp_path / "run").exists()


def test_a_run_saved_by_the_previous_version_resumes_with_the_same_command():
    """Settings the previous version did not save (optimizer, metric) must not look changed."""
    from seqtransfer.rundir import read_saved_config
    from seqtransfer.training.optimizers import fill_optimizer
    from seqtransfer.workflows.checks import config_differences

    saved = read_saved_config(FIXTURES / "runs" / "v0_tagger_crf")
    new = read_saved_config(FIXTURES / "runs" / "v0_tagger_crf")
    fill_optimizer(new.train, "sgd")
    new.data.metric = "span_f1"
    assert saved.train.optimizer is None and config_differences(saved, new) == []
    new.train.learning_rate = 0.1
    assert config_differences(saved, new) == ["train.learning_rate"]


def test_restart_is_refused_while_another_process_trains(tmp_path, capsys):
    from seqtransfer import rundir

    run(tiny_train_arguments(tmp_path / "run", epochs=1))
    with rundir.writer_lock(tmp_path / "run"):
        message = one_error_line(tiny_train_arguments(tmp_path / "run", epochs=1) + ["--restart"], capsys)
    assert "another seqtransfer process" in message and (tmp_path / "run" / "metrics.json").is_file()


def test_evaluate_batch_size_zero_is_one_line(tiny_run, capsys):
    message = one_error_line(["evaluate", str(tiny_run), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner", "--batch-size", "0"], capsys)
    assert "--batch-size: must be at least 1" in message


def test_evaluating_a_file_of_the_other_kind_says_which_is_which(tiny_run, tmp_path, capsys):
    """A tagger scored on a sentence TSV file (or a sentence model on a CoNLL file): one line naming
    the model's kind and what the file holds, not a metric that does not fit."""
    sentences = tmp_path / "reviews.tsv"
    sentences.write_text("text\tlabel\ngreat acting\tpos\n", encoding="utf-8")
    message = one_error_line(["evaluate", str(tiny_run), "--file", str(sentences)], capsys)
    assert "reviews.tsv: this run is a tagging model and the file holds sentences (a TSV file)" in message
