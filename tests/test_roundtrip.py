"""Train -> save -> load -> predict on a 5-sentence fixture, through the CLI and the Python API."""

from __future__ import annotations

import json

import pytest
from conftest import tiny_train_arguments
from safetensors.torch import load_file

import seqtransfer
from seqtransfer.cli import main, run


def read_predictions(path):
    blocks = path.read_text(encoding="utf-8").strip("\n").split("\n\n")
    return [[line.split(" ") for line in block.split("\n")] for block in blocks]


def test_run_directory_holds_everything_needed(tiny_run):
    for name in ("config.yaml", "vocabulary.json", "model.safetensors", "metrics.json", "predictions/dev.conll", "predictions/test.conll", "log.txt"):
        assert (tiny_run / name).is_file(), name
    assert not (tiny_run / "checkpoint").exists()
    metrics = json.loads((tiny_run / "metrics.json").read_text())
    assert metrics["metric"] == "span_f1" and 0 <= metrics["test"]["f1"] <= 100
    assert len(metrics["history"]) >= 1
    assert set(load_file(str(tiny_run / "model.safetensors"))) >= {"output.crf.transitions", "classifier.weight"}


def test_loaded_model_reproduces_saved_test_predictions(tiny_run):
    saved = read_predictions(tiny_run / "predictions" / "test.conll")
    tokens = [[row[0] for row in sentence] for sentence in saved]
    predicted = seqtransfer.load(tiny_run).predict(tokens)
    assert predicted == [[row[2] for row in sentence] for sentence in saved]
    # The test set holds a label never seen in training (B-group): scored, never predicted.
    assert all(label != "B-group" for sentence in predicted for label in sentence)


def test_predict_accepts_raw_strings(tiny_run):
    predictor = seqtransfer.load(tiny_run, tokenizer="tweet")
    tags = predictor.predict(["John loves Paris!", "@bob watching Star Wars"])
    assert [len(sentence) for sentence in tags] == [4, 4]
    assert all(tag in predictor.labels for sentence in tags for tag in sentence)


def test_predict_command_writes_conll_atomically(tiny_run, tmp_path):
    text = tmp_path / "input.txt"
    text.write_text("John lives in Berlin\nMary loves Paris\n", encoding="utf-8")
    output = tmp_path / "tagged.conll"
    assert main(["predict", str(tiny_run), str(text), "--output", str(output)]) == 0
    blocks = output.read_text(encoding="utf-8").strip("\n").split("\n\n")
    assert [len(block.split("\n")) for block in blocks] == [4, 3]


def test_evaluate_command_rescored_test_equals_training_metrics(tiny_run, capsys):
    saved = json.loads((tiny_run / "metrics.json").read_text())["test"]
    from conftest import FIXTURES

    scores = run(["evaluate", str(tiny_run), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner", "--scheme", "iob2"])
    assert scores["f1"] == pytest.approx(saved["f1"])
    assert scores["accuracy"] == pytest.approx(saved["accuracy"])


def test_same_seed_gives_identical_numbers(tmp_path):
    first = run(tiny_train_arguments(tmp_path / "a", epochs=2, seed=7))
    second = run(tiny_train_arguments(tmp_path / "b", epochs=2, seed=7))
    assert first["history"][-1]["loss"] == second["history"][-1]["loss"]
    assert first["dev"] == second["dev"] and first["test"] == second["test"]
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()
