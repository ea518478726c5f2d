"""Selecting and weighting source training sentences by their likeness to unlabelled target text."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from conftest import FIXTURES, tiny_train_arguments

from seqtransfer.analysis.similarity import js_divergence
from seqtransfer.cli import main, run
from seqtransfer.corpora.selection import js_scores, kept_indices, moore_lewis_scores, rank_weights
from seqtransfer.data.trigram_lm import unigram_counts
from seqtransfer.files import read_json
from seqtransfer.models.outputs import CRFOutput, SoftmaxOutput

NEWS = [["shares", "fell", "in", "london", "today"], ["the", "bank", "raised", "its", "rates"], ["profits", "rose", "in", "the", "quarter"]] * 4
TWEETS = [["lol", "omg", "this", "is", "crazy"], ["omg", "lol", "u", "are", "crazy"]] * 4


def test_sentence_js_equals_the_divergence_of_its_counts():
    scores = js_scores(NEWS[:3] + TWEETS[:1], TWEETS)
    for sentence, score in zip(NEWS[:3] + TWEETS[:1], scores):
        assert score == pytest.approx(js_divergence(Counter(sentence), unigram_counts(TWEETS)))
    assert scores[3] < scores[0]


def test_moore_lewis_prefers_target_like_sentences():
    mixed = NEWS + [["lol", "omg", "u", "is", "crazy"]]
    scores = moore_lewis_scores(mixed, TWEETS, seed=1)
    assert scores.argmin() == len(mixed) - 1


def test_rank_weights_and_kept_indices():
    weights = rank_weights(np.array([0.3, 0.1, 0.2, 0.9]))
    assert weights.mean() == pytest.approx(1.0) and list(np.argsort(-weights)) == [1, 2, 0, 3]
    assert list(kept_indices(np.array([0.3, 0.1, 0.2, 0.9]), 50)) == [1, 2]
    assert list(kept_indices(np.array([0.3, 0.1, 0.2, 0.9]), 1)) == [1]


@pytest.mark.parametrize("output", [SoftmaxOutput(4), CRFOutput(4)])
def test_unit_weights_leave_the_loss_unchanged_and_weights_scale_sentences(output):
    generator = torch.Generator().manual_seed(0)
    emissions = torch.randn(2, 3, 4, generator=generator)
    labels = torch.tensor([[0, 1, 2], [3, 0, 0]])
    mask = torch.tensor([[True, True, True], [True, True, False]])
    plain = output.loss(emissions, labels, mask)
    assert output.loss(emissions, labels, mask, torch.ones(2)).item() == pytest.approx(plain.item(), rel=1e-6)
    first_only = output.loss(emissions[:1], labels[:1], mask[:1])
    assert output.loss(emissions, labels, mask, torch.tensor([2.0, 0.0])).item() == pytest.approx(2 * first_only.item(), rel=1e-6)


def target_text(tmp_path):
    path = tmp_path / "target.txt"
    path.write_text("Peter lives in Berlin\nMary visited Paris today\n", encoding="utf-8")
    return path


def test_hard_and_soft_selection_train(tmp_path):
    text = target_text(tmp_path)
    hard = tmp_path / "hard"
    run([*tiny_train_arguments(hard, epochs=2), f"data.select_like={text}", "data.select_top=50"])
    log = (hard / "log.txt").read_text(encoding="utf-8")
    assert "selection: kept" in log and "(50 %)" in log
    soft = tmp_path / "soft"
    metrics = run([*tiny_train_arguments(soft, epochs=2, classifier="crf"), f"data.select_like={text}", "data.select_weighting=true", "data.select_by=js"])
    assert "weighted by likeness" in (soft / "log.txt").read_text(encoding="utf-8")
    assert read_json(soft / "metrics.json")["dev"] == metrics["dev"]
    columns = tmp_path / "columns"  # the target text as a column file's words
    run([*tiny_train_arguments(columns, epochs=1), f"data.select_like={FIXTURES / 'tiny_pos_train.conll'}", "data.select_word_column=1", "data.select_top=50"])
    assert "selection: kept" in (columns / "log.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "settings, message",
    [
        (["data.select_top=0"], "data.select_top' must be a percentage in (0, 100]"),
        (["data.select_top=150"], "data.select_top' must be a percentage in (0, 100]"),
        (["data.select_top=50"], "need target text to compare with"),
        (["data.select_like=TARGET"], "neither data.select_top nor data.select_weighting"),
        (["data.select_like=missing.txt", "data.select_top=50"], "missing.txt: file not found"),
        (["data.select_like=COLUMNS", "data.select_top=50"], "set data.select_word_column N"),
    ],
)
def test_bad_selection_settings_are_one_line(tmp_path, capsys, settings, message):
    settings = [setting.replace("TARGET", str(target_text(tmp_path))).replace("COLUMNS", str(FIXTURES / "tiny_pos_train.conll")) for setting in settings]
    output = tmp_path / "run"
    code = main([*tiny_train_arguments(output, epochs=1), *settings])
    error = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(error) == 1 and message in error[0], error
    assert not (output / "metrics.json").exists()


def test_a_training_fraction_is_the_same_subset_for_every_method_of_a_seed(tmp_path):
    from seqtransfer.corpora.selection import random_subset

    sentences = list(range(100))
    first, again, other = random_subset(sentences, 0.25, 1), random_subset(sentences, 0.25, 1), random_subset(sentences, 0.25, 2)
    assert len(first) == 25 and first == again and first != other and first == sorted(first)
    output = tmp_path / "quarter"
    run([*tiny_train_arguments(output, epochs=1), "data.train_fraction=0.5"])
    assert "training subset: 2 sentences (50%" in (output / "log.txt").read_text(encoding="utf-8")
