"""Adversarial pretraining: the gradient-reversal layer, the domain loss term, a source run trained with it and fine-tuned."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import FIXTURES, TINY_MODEL, tiny_train_arguments
from safetensors.torch import load_file

from seqtransfer.cli import main
from seqtransfer.config import RunConfig, apply_overrides
from seqtransfer.data.batching import encode_sentences, make_batch
from seqtransfer.data.vocabulary import Vocabularies, Vocabulary
from seqtransfer.models.registry import build_model
from seqtransfer.transfer.adversarial import DomainLoss, ReverseGradient


def test_gradient_reversal_is_the_identity_forward_and_minus_lambda_backward():
    inputs = torch.tensor([1.0, -2.0], requires_grad=True)
    outputs = ReverseGradient.apply(inputs, 0.3)
    (outputs * torch.tensor([2.0, 5.0])).sum().backward()
    assert torch.equal(outputs, inputs) and torch.allclose(inputs.grad, torch.tensor([-0.6, -1.5]))


def test_the_feature_extractor_gets_the_discriminators_gradient_reversed():
    config = apply_overrides(RunConfig(), [*TINY_MODEL, "model.discriminator_hidden=5", "model.dropout=0.0"]).model
    tokens = [["a", "b", "c"], ["b", "a"]]
    vocabularies = Vocabularies(Vocabulary.build(["a", "b", "c"]), Vocabulary.build("abc"), Vocabulary(["X", "Y"]))
    torch.manual_seed(0)
    model = build_model(config, vocabularies)
    batch = make_batch(encode_sentences(tokens, vocabularies, labels=[["X", "Y", "X"], ["Y", "X"]]), np.arange(2))
    target = encode_sentences([["c", "c"]], vocabularies)  # the term's one target batch

    def gradients(weight: float) -> tuple[torch.Tensor, torch.Tensor]:
        model.zero_grad(set_to_none=True)
        term = DomainLoss(model, weight, target, 16, 1)
        model.train()
        model.loss(batch)  # the hook keeps the source states
        term(model, batch).backward()
        return model.feature_extractor.forward_lstm.weight_ih_l0.grad.clone(), model.domain_discriminator.layers[0].weight.grad.clone()

    extractor_small, discriminator_small = gradients(0.1)
    extractor_large, discriminator_large = gradients(0.2)
    assert discriminator_small.abs().sum() > 0 and torch.allclose(discriminator_small, discriminator_large)  # the discriminator learns unreversed
    assert torch.allclose(extractor_large, 2 * extractor_small, atol=1e-7)  # the extractor's gradient scales with lambda


def test_the_domain_term_counts_the_discriminators_decisions_per_epoch():
    """5 source tokens (domain 0), 2 target tokens (domain 1): the summary is the share of tokens
    whose logit has the right sign, against the majority guess (5 / 7), then starts over."""
    config = apply_overrides(RunConfig(), [*TINY_MODEL, "model.discriminator_hidden=5", "model.dropout=0.0"]).model
    vocabularies = Vocabularies(Vocabulary.build(["a", "b", "c"]), Vocabulary.build("abc"), Vocabulary(["X", "Y"]))
    model = build_model(config, vocabularies)
    batch = make_batch(encode_sentences([["a", "b", "c"], ["b", "a"]], vocabularies, labels=[["X", "Y", "X"], ["Y", "X"]]), np.arange(2))
    term = DomainLoss(model, 0.1, encode_sentences([["c", "c"]], vocabularies), 16, 1)
    model.train()
    with torch.no_grad():  # a discriminator that says "target" for every token: right on the 2 target tokens only
        model.domain_discriminator.layers[-1].weight.zero_()
        model.domain_discriminator.layers[-1].bias.fill_(1.0)
    model.loss(batch)
    term(model, batch)
    assert term.epoch_summary() == {"domain_accuracy": round(100 * 2 / 7, 2), "domain_majority": round(100 * 5 / 7, 2)}
    assert term.epoch_summary() == {}  # counted afresh each epoch


def test_adversarial_source_run_trains_saves_its_discriminator_and_fine_tunes_without_it(tmp_path):
    text = tmp_path / "tweets.txt"
    text.write_text("@mary loves NYC !\nlol this is fun\n", encoding="utf-8")
    source = tmp_path / "source"
    arguments = tiny_train_arguments(source, epochs=2)
    assert main([*arguments, f"train.adversarial_data={text}", "train.adversarial_weight=0.5"]) == 0
    assert "adversarial training against" in (source / "log.txt").read_text()
    history = json.loads((source / "metrics.json").read_text())["history"]
    assert len(history) == 2 and all(0 <= record["domain_accuracy"] <= 100 and 50 <= record["domain_majority"] <= 100 for record in history)
    assert "domain accuracy" in (source / "log.txt").read_text()
    assert any(name.startswith("domain_discriminator.") for name in load_file(str(source / "model.safetensors")))
    target = tmp_path / "target"
    assert (
        main(
            [
                "transfer",
                "--source",
                str(source),
                "--method",
                "finetune",
                "--train",
                str(FIXTURES / "tiny_pos_train.conll"),
                "--dev",
                str(FIXTURES / "tiny_pos_dev.conll"),
                "--columns",
                "word,pos",
                "--epochs",
                "1",
                "--output",
                str(target),
                "--quiet",
                *TINY_MODEL,
            ]
        )
        == 0
    )
    assert not any(name.startswith("domain_discriminator.") for name in load_file(str(target / "model.safetensors")))
    import seqtransfer

    assert len(seqtransfer.load(source, device="cpu").predict([["John", "lives", "here"]])[0]) == 3


def test_missing_adversarial_data_is_one_line(tmp_path, capsys):
    code = main([*tiny_train_arguments(tmp_path / "run"), "train.adversarial_data=nowhere:nothing"])
    error = capsys.readouterr().err
    assert code == 2 and "train.adversarial_data 'nowhere:nothing': unknown dataset" in error and len(error.strip().splitlines()) == 1


def test_adversarial_text_from_a_column_file_needs_its_word_column(tmp_path, capsys):
    columns = FIXTURES / "tiny_pos_train.conll"  # word TAB tag
    assert main([*tiny_train_arguments(tmp_path / "run", epochs=1), f"train.adversarial_data={columns}"]) == 2
    error = capsys.readouterr().err
    assert "looks like a column file" in error and "set train.adversarial_word_column N" in error and len(error.strip().splitlines()) == 1
    assert main([*tiny_train_arguments(tmp_path / "run", epochs=1), f"train.adversarial_data={columns}", "train.adversarial_word_column=1"]) == 0
    assert "unlabelled target sentences" in (tmp_path / "run" / "log.txt").read_text(encoding="utf-8")


def test_a_tagger_without_bilstm_passes_it_on_and_refuses_a_discriminator(tmp_path, capsys):
    import seqtransfer
    from seqtransfer.models.bilstm import NoFeatureExtractor

    source = tmp_path / "source"
    assert main([*tiny_train_arguments(source, epochs=1), "model.feature_extractor=none"]) == 0
    target = tmp_path / "target"
    assert (
        main(
            [
                "transfer",
                "--source",
                str(source),
                "--method",
                "finetune",
                "--train",
                str(FIXTURES / "tiny_pos_train.conll"),
                "--dev",
                str(FIXTURES / "tiny_pos_dev.conll"),
                "--columns",
                "word,pos",
                "--epochs",
                "1",
                "--output",
                str(target),
                "--quiet",
                *TINY_MODEL,
            ]
        )
        == 0
    )
    assert isinstance(seqtransfer.load(target).run.model.feature_extractor, NoFeatureExtractor)  # the source's layers, not a fresh BiLSTM
    text = tmp_path / "tweets.txt"
    text.write_text("lol this is fun\n", encoding="utf-8")
    assert main([*tiny_train_arguments(tmp_path / "bad", epochs=1), "model.feature_extractor=none", f"train.adversarial_data={text}"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "no BiLSTM for the domain discriminator" in line and "Traceback" not in capsys.readouterr().err


def test_an_adversarial_parser_source_trains_its_discriminator_on_the_parsers_states_and_fine_tunes_without_it(tmp_path):
    """Table 2's DP row: a parser source against unlabelled target sentences (a CoNLL-U file's words)."""
    from test_parser import parser_arguments

    source = tmp_path / "source"
    assert main([*parser_arguments(source, 2), f"train.adversarial_data={FIXTURES / 'tiny_dep_dev.conllu'}", "train.adversarial_weight=0.5"]) == 0
    assert "adversarial training against" in (source / "log.txt").read_text()
    history = json.loads((source / "metrics.json").read_text())["history"]
    assert len(history) == 2 and all(0 <= record["domain_accuracy"] <= 100 for record in history)
    weights = load_file(str(source / "model.safetensors"))
    assert weights["domain_discriminator.layers.0.weight"].shape[1] == 2 * weights["feature_extractor.lstm.layers.1.forward_lstm.weight_hh_l0"].shape[1]  # the parser's top BiLSTM states
    target = tmp_path / "target"
    assert main(["transfer", "--source", str(source), "--method", "finetune", *parser_arguments(target, 1)[1:]]) == 0
    assert not any(name.startswith("domain_discriminator.") for name in load_file(str(target / "model.safetensors")))


def test_ganins_lambda_ramps_from_zero_to_the_weight_over_the_epochs(tmp_path):
    """train.adversarial_schedule=ganin: 2 / (1 + exp(-10 p)) - 1 times the weight, p the share of
    epochs done (0 in the first epoch); each epoch's record carries the lambda it trained with."""
    from seqtransfer.transfer.adversarial import ramped_weight

    assert ramped_weight(0.5, "constant", 7, 10) == 0.5 and ramped_weight(0.5, "ganin", 1, 10) == 0.0
    assert ramped_weight(0.5, "ganin", 6, 10) == pytest.approx(0.5 * (2 / (1 + np.exp(-5.0)) - 1))
    assert [ramped_weight(1.0, "ganin", epoch, 4) for epoch in (1, 2, 3, 4)] == sorted(ramped_weight(1.0, "ganin", epoch, 4) for epoch in (1, 2, 3, 4))
    text = tmp_path / "tweets.txt"
    text.write_text("@mary loves NYC !\nlol this is fun\n", encoding="utf-8")
    assert main([*tiny_train_arguments(tmp_path / "ramp", epochs=3), f"train.adversarial_data={text}", "train.adversarial_schedule=ganin", "train.adversarial_weight=0.5"]) == 0
    history = json.loads((tmp_path / "ramp" / "metrics.json").read_text())["history"]
    assert [record["adversarial_lambda"] for record in history] == [round(ramped_weight(0.5, "ganin", epoch, 3), 4) for epoch in (1, 2, 3)]


def test_an_adversarial_setting_without_adversarial_data_is_a_warning(tmp_path):
    assert main([*tiny_train_arguments(tmp_path / "idle", epochs=1), "train.adversarial_schedule=ganin"]) == 0
    assert "train.adversarial_schedule" in (tmp_path / "idle" / "log.txt").read_text()
