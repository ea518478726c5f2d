"""`seqtransfer finetune-lm` on a Transformer (issue 56, points 2 and 4): domain-adaptive
pretraining continues its masked LM on target text, a missing MLM head is made (and said to be),
the rates are discriminative over embeddings, layers and head, and the folder it writes is an
encoder a tagger fine-tunes."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import FIXTURES, write_random_text

from seqtransfer.cli import main, run

TINY_BERT = FIXTURES / "runs" / "tiny_bert"  # a BertModel folder: no MLM head, as the packaged MiniLM
CONTINUE = ["--epochs", "2", "--batch-size", "16", "--threads", "1", "--quiet", "--device", "cpu"]


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    words = "the a cat dog sat on mat ran to house big small john mary lives in new york"
    return write_random_text(tmp_path_factory.mktemp("text") / "text.txt", words, lines=150, longest=9, seed=2)


@pytest.fixture(scope="module")
def continued(text, tmp_path_factory):
    output = tmp_path_factory.mktemp("continued") / "bert-continued"
    summary = run(["finetune-lm", str(TINY_BERT), "--text", str(text), "--output", str(output), *CONTINUE])
    return output, summary


def test_a_transformer_without_an_mlm_head_is_continued_with_a_new_one(continued):
    from safetensors import safe_open

    output, summary = continued
    report = json.loads((output / "pretraining.json").read_text(encoding="utf-8"))
    assert report["architecture"] == "transformer" and report["settings"]["head"] == "new" and report["settings"]["objective"] == "masked"
    assert report["held_out_perplexity_before"] > 0 and report["held_out_perplexity"] > 0 and len(report["history"]) == 2
    assert summary["held_out_perplexity"] == report["held_out_perplexity"] and report["device"].startswith("cpu")
    assert report["settings"]["max_subwords"] == 16  # the tiny encoder's 16 positions, not 128
    with safe_open(str(output / "model.safetensors"), framework="pt") as weights:
        assert any(name.startswith("cls.predictions.transform.") for name in weights.keys())  # the head is saved with the encoder


def test_a_continued_folder_with_its_head_continues_from_it(continued, text, tmp_path):
    output, _ = continued
    again = tmp_path / "again"
    run(["finetune-lm", str(output), "--text", str(text), "--output", str(again), *CONTINUE])
    assert json.loads((again / "pretraining.json").read_text(encoding="utf-8"))["settings"]["head"] == "pretrained"


def test_the_continued_folder_is_an_encoder_a_tagger_fine_tunes(continued, tmp_path):
    output, _ = continued
    data = ["--train", str(FIXTURES / "tiny_ner_train.conll"), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--columns", "word,ner", "--scheme", "iob2"]
    tagger = ["train", *data, "--epochs", "1", "--quiet", "model.encoder_mode=finetune"]
    metrics = run([*tagger, "--output", str(tmp_path / "tagger"), f"model.encoder={output}"])
    original = run([*tagger, "--output", str(tmp_path / "original"), f"model.encoder={TINY_BERT}"])
    assert str(output) in (tmp_path / "tagger" / "config.yaml").read_text(encoding="utf-8")
    # the same seed, data and settings: only the encoder's starting weights differ, so the losses do
    assert metrics["history"][0]["loss"] != original["history"][0]["loss"]


def test_rates_are_discriminative_over_embeddings_layers_and_head():
    from transformers import BertConfig, BertForMaskedLM

    from seqtransfer.workflows.transformer_continuation import transformer_groups

    model = BertForMaskedLM(BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=3, num_attention_heads=2, intermediate_size=16, max_position_embeddings=16))
    groups = transformer_groups(model, 1e-4, 2.0)
    assert [group["lr"] for group in groups] == pytest.approx([1e-4 / 8, 1e-4 / 4, 1e-4 / 2, 1e-4, 1e-4])  # embeddings, layers 0-2, head
    grouped = [id(parameter) for group in groups for parameter in group["params"]]
    assert sorted(grouped) == sorted(id(parameter) for parameter in model.parameters())  # each trained parameter once (the tied decoder is the embeddings')


def test_a_checkpoint_of_a_tied_model_saves_and_resumes(tmp_path):
    """safetensors refuses two names of one matrix; the checkpoint writes copies and resumes into the tie."""
    from transformers import BertConfig, BertForMaskedLM

    from seqtransfer.training.checkpoint import TrainingState, copy_state, resume, save

    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16, max_position_embeddings=16))
    optimizer = torch.optim.Adam(model.parameters())
    save(tmp_path, model, optimizer, TrainingState(copy_state(model), epoch=1, best_epoch=1, best_score=0.0, history=[{"epoch": 1}]))
    other = BertForMaskedLM(model.config)
    resume(tmp_path, other, torch.optim.Adam(other.parameters()))
    assert torch.equal(other.bert.embeddings.word_embeddings.weight, model.bert.embeddings.word_embeddings.weight)
    assert other.cls.predictions.decoder.weight.data_ptr() == other.bert.embeddings.word_embeddings.weight.data_ptr()  # still tied


def test_a_folder_that_is_no_lm_is_one_line(text, tmp_path, capsys):
    assert main(["finetune-lm", str(FIXTURES / "runs" / "v1_tagger_softmax"), "--text", str(text), "--output", str(tmp_path / "out")]) != 0
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) <= 2 and "holds neither" in error[0]


@pytest.mark.parametrize("content", ["", "\n \n\n"], ids=["empty", "blank lines"])
def test_empty_target_text_is_one_line_and_writes_nothing(tmp_path, capsys, content):
    empty = tmp_path / "empty.txt"
    empty.write_text(content, encoding="utf-8")
    assert main(["finetune-lm", str(TINY_BERT), "--text", str(empty), "--output", str(tmp_path / "out"), *CONTINUE]) != 0
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "holds no sentences" in error[0] and "empty.txt" in error[0]
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()
