"""An encoder family is one class and one registry line (issue 49, point 2).

A toy encoder (a word table and a tanh layer: no characters, no BiLSTM) is registered here by
monkeypatching ``ENCODERS``, and nothing else in the package is touched. With it, every task kind's
head (softmax and CRF tagging, dependency parsing, sentence classification, regression) trains,
saves its run, loads it back and predicts what the training wrote.
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import FIXTURES, TINY_MODEL
from torch import nn

from seqtransfer.errors import SeqTransferError


class ToyEncoder:
    """x_t = tanh(W e(w_t)): (B, T) word ids -> (B, T, 12)."""

    word_representation = None  # no word vectors to load, no character table to precompute
    feature_extractors = ()

    def build_encoder(self, config, word_count: int, character_count: int, task_kind: str, vocabularies) -> int:
        self.toy_embedding = nn.Embedding(word_count, 10, padding_idx=0)
        self.toy_layer = nn.Linear(10, 12)
        return 12

    def features(self, batch) -> torch.Tensor:
        return torch.tanh(self.toy_layer(self.toy_embedding(batch.words)))

    def layer_prefixes(self, names: list[str]) -> tuple[list[str], tuple[str, ...]]:
        return ["toy_embedding.", "toy_layer."], ()


@pytest.fixture
def toy_encoder(monkeypatch):
    from seqtransfer.models import encoders

    monkeypatch.setitem(encoders.ENCODERS, "toy", ToyEncoder)
    encoders.model_class.cache_clear()
    yield
    encoders.model_class.cache_clear()


NER = ["--train", "tiny_ner_train.conll", "--dev", "tiny_ner_dev.conll", "--test", "tiny_ner_test.conll", "--columns", "word,ner", "--scheme", "iob2"]
KINDS = {
    "softmax": [*NER, "--classifier", "softmax"],
    "crf": [*NER, "--classifier", "crf"],
    "dependency": ["--train", "tiny_dep_train.conllu", "--dev", "tiny_dep_dev.conllu", "--test", "tiny_dep_test.conllu", "--task", "dependency", "model.arc_hidden=8", "model.relation_hidden=4"],
    "sentence": ["--train", "tiny_sentiment_train.tsv", "--dev", "tiny_sentiment_dev.tsv", "--test", "tiny_sentiment_dev.tsv"],
    "regression": ["--train", "tiny_similarity.tsv", "--dev", "tiny_similarity.tsv", "--test", "tiny_similarity.tsv", "--columns", "text,text_b,score"],
}


def with_fixture_paths(arguments: list[str]) -> list[str]:
    return [str(FIXTURES / argument) if argument.startswith("tiny_") else argument for argument in arguments]


def test_every_task_kind_trains_saves_loads_and_predicts_with_a_toy_encoder(toy_encoder, tmp_path):
    import seqtransfer
    from seqtransfer.cli import run
    from seqtransfer.rundir import load_run

    for kind, arguments in KINDS.items():
        output = tmp_path / kind
        run(["train", *with_fixture_paths(arguments), "--seed", "1", "--epochs", "2", "--output", str(output), "--quiet", "--device", "cpu", *TINY_MODEL, "model.encoder_family=toy"])
        loaded = load_run(output)
        task_kind = {"softmax": "tagging", "crf": "tagging"}.get(kind, kind)
        assert type(loaded.model).encoder_family == "toy" and loaded.model.task_kind == task_kind, kind
        names = set(loaded.model.state_dict())
        head = {"root_state", "classifier.arc_scorer.weight"} if kind == "dependency" else {"classifier.weight"}  # the head's own ROOT state
        assert {"toy_embedding.weight", "toy_layer.weight", *head} <= names, (kind, names)
        assert not any(name.startswith(("word_representation.", "feature_extractor.")) for name in names), kind  # the toy replaced the word encoder
        assert json.loads((output / "metrics.json").read_text())["best_epoch"] >= 1
        saved = (output / "predictions").iterdir()
        assert any(saved), kind
        sentences = [["John", "lives", "in", "New", "York"], ["fine", "."]]
        if task_kind == "regression":  # the similarity fixture's sentences are pairs
            sentences = [["John", "lives", "[SEP]", "in", "York"], ["fine", "[SEP]", "."]]
            with pytest.raises(SeqTransferError, match=r"pairs.*\[SEP\]"):
                seqtransfer.load(output).predict([["no", "separator"]])
        predictions = seqtransfer.load(output).predict(sentences)
        assert len(predictions) == 2, kind
        if task_kind in ("tagging", "dependency"):
            assert [len(sentence) for sentence in predictions] == [5, 2], kind


def test_the_toy_encoders_layers_are_the_adaptation_schemes_groups(toy_encoder):
    from seqtransfer.config import RunConfig, apply_overrides
    from seqtransfer.models.encoders import model_class
    from seqtransfer.transfer.adaptations import layer_groups

    config = apply_overrides(RunConfig(), [*TINY_MODEL, "model.encoder_family=toy"]).model
    model = model_class("toy", "tagging")(config, 20, 5, 3)
    assert [name for name, _ in layer_groups(model)] == ["toy_embedding", "toy_layer", "head"]


def test_an_unknown_encoder_family_is_one_line(tmp_path, capsys):
    from seqtransfer.cli import main

    code = main(["train", *with_fixture_paths(KINDS["softmax"]), "--epochs", "1", "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL, "model.encoder_family=nosuch"])
    error = capsys.readouterr().err
    assert code != 0 and "unknown encoder family 'nosuch'" in error and "words" in error and "Traceback" not in error
    assert not (tmp_path / "run" / "metrics.json").exists()
