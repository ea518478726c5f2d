"""Data annealing (Gu & Yu 2020): source sentences mixed into each epoch, their share decaying."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import FIXTURES, TINY_MODEL
from test_parser import error_line

from seqtransfer.cli import run
from seqtransfer.corpora.annealing import AnnealedBatches
from seqtransfer.data.batching import encode_sentences
from seqtransfer.data.vocabulary import Vocabularies, Vocabulary


def encoded(count: int):
    vocabularies = Vocabularies(Vocabulary(["<pad>", "<unk>", "a"]), Vocabulary(["<pad>", "<unk>", "a"]), Vocabulary(["X"]))
    return encode_sentences([["a"] * (1 + index % 5) for index in range(count)], vocabularies)


def test_each_epoch_reads_every_target_sentence_and_a_decaying_share_of_source_sentences():
    data = encoded(110)  # rows 0-9 target, 10-109 source
    batches = AnnealedBatches(data, 10, 4, seed=3, start=0.9, decay=0.5)
    expected = {1: 90, 2: 8, 3: 3, 4: 1}  # r/(1-r) x 10 for r = 0.9, 0.45, 0.225, 0.1125 (at most the 100 source sentences)
    for epoch, source_count in expected.items():
        rows = np.concatenate([batch.indices for batch in batches.batches(epoch)])
        assert batches.sentence_count == len(rows) == 10 + source_count and batches.batch_count == -(-len(rows) // 4)
        assert sorted(rows[rows < 10]) == list(range(10)) and len(set(rows[rows >= 10])) == source_count
    again = AnnealedBatches(data, 10, 4, seed=3, start=0.9, decay=0.5)
    assert [list(batch.indices) for batch in again.batches(2)] == [list(batch.indices) for batch in batches.batches(2)]
    everything = AnnealedBatches(data, 10, 4, seed=3, start=1.0, decay=0.5)
    assert everything.source_sentences(1) == 100 and everything.source_sentences(2) == 10


def annealed_arguments(output, *extra: str) -> list[str]:
    return [
        "train",
        "--train",
        str(FIXTURES / "tiny_pos_train.conll"),
        "--dev",
        str(FIXTURES / "tiny_pos_dev.conll"),
        "--columns",
        "word,pos",
        "--epochs",
        "3",
        "--seed",
        "2",
        "--output",
        str(output),
        "--quiet",
        *TINY_MODEL,
        *extra,
    ]


def test_an_annealed_run_trains_on_both_and_is_reproducible(tmp_path):
    source = tmp_path / "source.conll"
    source.write_text(((FIXTURES / "tiny_pos_train.conll").read_text(encoding="utf-8").rstrip("\n") + "\n\n") * 2, encoding="utf-8")
    first = run(annealed_arguments(tmp_path / "a", f"data.anneal_source={source}", "data.anneal_decay=0.5"))
    second = run(annealed_arguments(tmp_path / "b", f"data.anneal_source={source}", "data.anneal_decay=0.5"))
    run(annealed_arguments(tmp_path / "c"))
    assert first["dev"] == second["dev"] and (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()
    assert (tmp_path / "a" / "model.safetensors").read_bytes() != (tmp_path / "c" / "model.safetensors").read_bytes()
    assert "data annealing: 6 source sentences" in (tmp_path / "a" / "log.txt").read_text(encoding="utf-8")
    words = json.loads((tmp_path / "a" / "vocabulary.json").read_text(encoding="utf-8"))["words"]
    assert words == json.loads((tmp_path / "c" / "vocabulary.json").read_text(encoding="utf-8"))["words"]  # the source repeats the target's words


@pytest.mark.parametrize(
    "extra, expected",
    [(["data.anneal_start=0"], "data.anneal_start"), (["data.anneal_decay=1.5"], "data.anneal_decay"), ([f"data.anneal_source={FIXTURES / 'tiny_ner_train.conll'}"], "are not the target's")],
)
def test_bad_annealing_settings_are_one_line(extra, expected, tmp_path, capsys):
    line = error_line(annealed_arguments(tmp_path / "bad", *extra), capsys)
    assert expected in line and not (tmp_path / "bad").exists()


def test_a_grid_method_anneals_from_each_targets_source(tmp_path):
    from seqtransfer.errors import SeqTransferError
    from seqtransfer.experiments.spec import load_experiment

    pos = [f"data.train={FIXTURES / 'tiny_pos_train.conll'}", f"data.dev={FIXTURES / 'tiny_pos_dev.conll'}", f"data.test={FIXTURES / 'tiny_pos_dev.conll'}", "data.columns=[word, pos]"]
    text = f"""
name: anneal
title: annealing
command: seqtransfer experiment run anneal.yaml
overrides: {[*TINY_MODEL, "train.max_epochs=2"]}
sources:
  news: {{dataset: null, overrides: {pos}}}
targets:
  tweets: {{dataset: null, source: news, overrides: {pos}}}
methods:
  scratch: {{scheme: scratch}}
  annealed: {{scheme: scratch, anneal: true}}
reference: scratch
"""
    (tmp_path / "anneal.yaml").write_text(text, encoding="utf-8")
    records = run(["experiment", "run", str(tmp_path / "anneal.yaml"), "--results", str(tmp_path / "results")])
    annealed = next(record for record in records if record["method"] == "annealed")
    log = (tmp_path / "results" / "runs" / annealed["run_directory"].split("/")[-1] / "log.txt").read_text(encoding="utf-8")
    assert f"data annealing: 3 source sentences from {FIXTURES / 'tiny_pos_train.conll'}" in log
    assert not (tmp_path / "results" / "sources").exists() or not any((tmp_path / "results" / "sources").iterdir())  # no source model needed
    (tmp_path / "anneal.yaml").write_text(text.replace("source: news, ", ""), encoding="utf-8")
    with pytest.raises(SeqTransferError, match="has no mono-task source"):
        load_experiment(tmp_path / "anneal.yaml")


def test_early_stopping_waits_for_min_epochs(tmp_path):
    short = run(annealed_arguments(tmp_path / "short", "train.patience=1", "--epochs", "6"))
    waited = run(annealed_arguments(tmp_path / "long", "train.patience=1", "train.min_epochs=5", "--epochs", "6"))
    assert len(short["history"]) < 5 <= len(waited["history"])
