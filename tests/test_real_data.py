"""Smoke runs on real data (marked slow: CI runs them, the default `pytest` does not)."""

from __future__ import annotations

import json

import pytest

from seqtransfer.cli import run

pytestmark = pytest.mark.slow


def test_tpos_from_scratch_learns_and_rescores_identically(tmp_path, data_root):
    """Six epochs of the paper's base model on T-POS with GloVe 50d: far above chance (NN is ~15%)."""
    output = tmp_path / "tpos"
    metrics = run(["train", "--dataset", "tpos", "--data-dir", str(data_root), "--epochs", "6", "--output", str(output), "--quiet"])
    assert metrics["test"]["accuracy"] > 50.0, metrics["test"]
    rescored = run(["evaluate", str(output), "--dataset", "tpos", "--split", "test", "--data-dir", str(data_root)])
    assert rescored["accuracy"] == pytest.approx(metrics["test"]["accuracy"])
    saved = json.loads((output / "metrics.json").read_text())
    assert saved["test"]["accuracy"] == pytest.approx(metrics["test"]["accuracy"])


def test_wnut17_crf_one_epoch_finds_entities(tmp_path, data_root):
    """One epoch with the CRF on WNUT-17: the entity F1 path runs end to end on real tweets."""
    metrics = run(["train", "--dataset", "wnut17", "--data-dir", str(data_root), "--classifier", "crf", "--epochs", "1", "--output", str(tmp_path / "wnut"), "--quiet"])
    assert metrics["metric"] == "span_f1"
    assert metrics["dev"]["predicted_count"] > 0 and metrics["dev"]["correct_count"] > 0
