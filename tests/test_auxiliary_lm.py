"""The auxiliary language-model loss: next/previous word from the feature extractor's two halves."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import FIXTURES, TINY_MODEL
from test_parser import error_line, parser_arguments
from torch.nn import functional

import seqtransfer
from seqtransfer.cli import run
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import make_batch
from seqtransfer.models.language_model_heads import LanguageModelHead
from seqtransfer.transfer.auxiliary_lm import AuxiliaryLanguageModelLoss


def tagger_arguments(output, *extra: str) -> list[str]:
    return [
        "train",
        "--train",
        str(FIXTURES / "tiny_ner_train.conll"),
        "--dev",
        str(FIXTURES / "tiny_ner_dev.conll"),
        "--columns",
        "word,ner",
        "--scheme",
        "iob2",
        "--epochs",
        "2",
        "--seed",
        "4",
        "--output",
        str(output),
        "--quiet",
        *TINY_MODEL,
        *extra,
    ]


def test_word_classes_are_the_most_frequent_training_words():
    head = LanguageModelHead(4, 5, 10)  # 3 frequent words, unknown, padding
    head.set_word_classes([np.array([7, 7, 7, 3, 3, 9, 1]), np.array([9, 9, 2, 5])])
    assert head.word_classes.tolist() == [0, 1, 1, 4, 1, 1, 1, 2, 1, 3]  # 7 (x3), 9 (x3, higher index), 3 (x2); 2 and 5 (x1) unknown
    assert head.targets(torch.tensor([[7, 2, 0]])).tolist() == [[2, 1, -1]]


def test_the_loss_is_the_weighted_next_and_previous_word_cross_entropy(tmp_path):
    run(tagger_arguments(tmp_path / "aux", "transfer.auxiliary_lm_weight=0.5", "transfer.auxiliary_lm_words=7"))
    loaded = seqtransfer.load(tmp_path / "aux", device="cpu").run  # the batch below is built on the CPU
    model, vocabularies = loaded.model, loaded.vocabularies
    assert model.language_model.words == 7 == loaded.config.model.language_model_words
    assert sorted(model.language_model.word_classes.tolist())[-5:] == [2, 3, 4, 5, 6]  # 5 frequent training words, saved with the run
    data = load_task_data(loaded.config.data)
    batch = make_batch(data.encode("train", vocabularies), np.arange(2))
    term = AuxiliaryLanguageModelLoss(model, 0.5)
    model.train()
    torch.manual_seed(0)
    model.loss(batch)  # the hook keeps the states
    states = term.states[0]
    expected = 0.0
    half = states.size(-1) // 2
    for row, length in enumerate(batch.lengths.tolist()):
        targets = model.language_model.word_classes[batch.words[row, :length]].tolist()
        for position in range(length - 1):
            expected += functional.cross_entropy(model.language_model.next_word(states[row, position, :half]), torch.tensor(targets[position + 1]), reduction="sum")
            expected += functional.cross_entropy(model.language_model.previous_word(states[row, position + 1, half:]), torch.tensor(targets[position]), reduction="sum")
    assert term(model, batch).item() == pytest.approx(0.5 * expected.item(), rel=1e-5)


def test_auxiliary_lm_changes_training_reproducibly_and_predicts_as_a_tagger(tmp_path):
    first = run(tagger_arguments(tmp_path / "a", "transfer.auxiliary_lm_weight=0.1"))
    second = run(tagger_arguments(tmp_path / "b", "transfer.auxiliary_lm_weight=0.1"))
    plain = run(tagger_arguments(tmp_path / "c"))
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()
    losses = [[epoch["loss"] for epoch in metrics["history"]] for metrics in (first, second, plain)]
    assert losses[0] == losses[1] and losses[0] != losses[2]
    assert "auxiliary LM loss: weight 0.1, the" in (tmp_path / "a" / "log.txt").read_text(encoding="utf-8")
    predicted = seqtransfer.load(tmp_path / "a").predict([["John", "lives", "in", "Paris"]])
    assert len(predicted[0]) == 4


def test_a_parser_trains_with_an_auxiliary_lm_on_its_first_layer(tmp_path):
    from seqtransfer.models.language_model_heads import language_model_layer

    metrics = run(parser_arguments(tmp_path / "parser", 1, 1, "transfer.auxiliary_lm_weight=0.2"))
    model = seqtransfer.load(tmp_path / "parser").run.model
    assert "las" in metrics["test"] and hasattr(model, "language_model")
    # above the first layer a forward state has read the backward states, which saw the next word
    assert language_model_layer(model) is model.feature_extractor.lstm.layers[0] and len(model.feature_extractor.lstm.layers) == 2


def test_the_auxiliary_lm_reads_the_labelled_batch_beside_adversarial_training(tmp_path):
    text = tmp_path / "tweets.txt"
    text.write_text("a b c\nd e\nf g h i j k\n", encoding="utf-8")  # other lengths than the labelled batch
    both = run(tagger_arguments(tmp_path / "both", "transfer.auxiliary_lm_weight=0.2", f"train.adversarial_data={text}"))
    adversarial = run(tagger_arguments(tmp_path / "adversarial", f"train.adversarial_data={text}"))
    log = (tmp_path / "both" / "log.txt").read_text(encoding="utf-8")
    assert "adversarial training against" in log and "auxiliary LM loss: weight 0.2" in log
    assert all("domain_accuracy" in epoch for epoch in both["history"])  # the domain classifier trained in every epoch
    assert [epoch["loss"] for epoch in both["history"]] != [epoch["loss"] for epoch in adversarial["history"]]  # and the LM term with it


def test_a_negative_weight_is_one_line(tmp_path, capsys):
    line = error_line(tagger_arguments(tmp_path / "bad", "transfer.auxiliary_lm_weight=-1"), capsys)
    assert "transfer.auxiliary_lm_weight" in line and not (tmp_path / "bad").exists()


def test_a_multitask_model_has_an_lm_on_each_root_branch_and_a_batch_trains_those_it_runs(tmp_path):
    from test_multitask import NER, POS, write_config

    config = write_config(tmp_path, {"pos": [], "chunk": [], "ner": ["pos"]}, {"pos": POS, "chunk": POS, "ner": NER})
    metrics = run(["train", "--config", str(config), "--output", str(tmp_path / "multi"), "--epochs", "2", "--quiet", *TINY_MODEL, "transfer.auxiliary_lm_weight=0.2"])
    assert set(metrics["tasks"]) == {"pos", "chunk", "ner"}
    assert "(first layers of chunk, pos)" in (tmp_path / "multi" / "log.txt").read_text(encoding="utf-8")
    loaded = seqtransfer.load(tmp_path / "multi", device="cpu").run  # the batches below are built on the CPU
    model, vocabularies = loaded.model, loaded.vocabularies
    assert sorted(model.language_model) == ["chunk", "pos"]  # the roots; ner reads pos
    from seqtransfer.transfer.adaptations import layer_groups

    groups = dict(layer_groups(model))
    assert any(name.startswith("language_model.pos.") for name in groups["level 0 (chunk, pos)"])
    term = AuxiliaryLanguageModelLoss(model, 1.0)
    model.train()
    from seqtransfer.data.batching import encode_sentences
    from seqtransfer.models.multitask import target_name

    tokens = [["John", "lives", "in", "Paris"], ["Mary", "sings"]]
    encoded = encode_sentences(tokens, vocabularies, targets={target_name("ner", "labels"): [np.zeros(4, dtype=np.int64), np.zeros(2, dtype=np.int64)]})
    batch = make_batch(encoded, np.arange(2))
    model.loss(batch)  # a NER batch runs pos (below it) and ner, not chunk
    from seqtransfer.models.language_model_heads import root_tasks

    assert list(term.states) == [root_tasks(model).index("pos")] and term(model, batch).item() > 0 and term.states == {}
