"""MSD tagging of the MTT substitutes (MANIFEST §10): hundreds of labels, merged tags, evaluation-only data."""

from __future__ import annotations

import pytest

from conftest import TINY_MODEL
from seqtransfer.analysis.predictions import read_predictions
from seqtransfer.cli import run


@pytest.mark.slow
def test_an_msd_tagger_trains_on_social_media_and_scores_serbian_zero_shot(tmp_path, data_root):
    output = tmp_path / "sl-sm"
    metrics = run(["train", "--dataset", "mtt_sl_sm", "--task", "msd", "--epochs", "1", "--output", str(output), "--quiet", *TINY_MODEL, "data.max_train_sentences=300"])
    assert 0 <= metrics["test"]["accuracy"] <= 100
    predictions = read_predictions(output / "predictions" / "test.conll")  # merged tags such as "Q Vmpr1s" stay one field ("Q_Vmpr1s")
    assert any("_" in label for sentence in predictions.gold for label in sentence)
    scores = run(["evaluate", str(output), "--dataset", "mtt_sr_sm", "--split", "test"])
    assert 0 <= scores["accuracy"] <= 100
