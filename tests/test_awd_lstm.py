"""Our AWD-LSTM language model (issue 56, point 1): the network's parts (weight dropout, tying,
causality, truncated BPTT over a stream), pretraining, its folder, resuming and bad input; the
folder fine-tuned as an encoder under ULMFiT's classifier and a tagger."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import test_recurrent_lm
import torch
from conftest import FIXTURES, tiny_train_arguments
from test_recurrent_lm import assert_pretrains_the_same, one_line_error, resumes_after_an_interruption
from torch.nn import functional

from seqtransfer.cli import run
from seqtransfer.embeddings.awd_lstm import DEFAULTS, SIZES, AwdLstmLanguageModel, WeightDroppedLSTM, load_awd_lstm
from seqtransfer.workflows.awd_pretraining import StreamPretraining, stream_chunks

text = test_recurrent_lm.text  # the same text fixture: 200 random lines of 25 words

TINY_LM = ["--architecture", "awd-lstm", "--size", "tiny", "--epochs", "2", "--batch-size", "8", "--bptt", "10", "--threads", "1", "--quiet", "--device", "cpu"]


def tiny_model(words: int = 20, **overrides) -> AwdLstmLanguageModel:
    torch.manual_seed(0)
    return AwdLstmLanguageModel({**SIZES["tiny"], **DEFAULTS, "words": words, **overrides})


@pytest.fixture(scope="module")
def language_model(text, tmp_path_factory):
    """The tiny AWD-LSTM LM pretrained on ``text``: (its folder, the run's summary)."""
    folder = tmp_path_factory.mktemp("awd") / "lm"
    return folder, run(["pretrain-lm", "--text", str(text), "--output", str(folder), *TINY_LM])


def test_pretraining_writes_a_folder_with_its_perplexity_and_cost(language_model):
    from safetensors.torch import load_file

    folder, summary = language_model
    config = json.loads((folder / "config.json").read_text())
    assert config["seqtransfer_architecture"] == "awd_lstm" and (config["embedding"], config["hidden"], config["layers"]) == (16, 32, 3)
    assert {path.name for path in folder.iterdir()} == {"config.json", "model.safetensors", "vocabulary.json", "pretraining.json"}
    report = json.loads((folder / "pretraining.json").read_text())
    assert [record["epoch"] for record in report["history"]] == [1, 2] and all(record["held_out_perplexity"] > 1 for record in report["history"])
    assert 1 < report["held_out_perplexity"] < 2 * config["words"] and report["bptt"] == 10
    assert all(abs(record["loss"] - math.log(record["held_out_perplexity"])) < 1.0 for record in report["history"])  # a mean -log p per word
    assert report["training_tokens_per_second"] > 0 and report["seconds"] >= 0 and summary["best_epoch"] in (1, 2) and report["device"].startswith("cpu")
    model, words = load_awd_lstm(folder)
    saved = load_file(str(folder / "model.safetensors"))
    assert words[:3] == ["<unk>", "<S>", "</S>"] and len(words) == config["words"] and not model.training
    assert saved.keys() == model.state_dict().keys() and all(torch.equal(saved[name], tensor) for name, tensor in model.state_dict().items())


def test_the_same_seed_pretrains_the_same_lm(text, language_model, tmp_path):
    assert_pretrains_the_same(text, language_model[0], tmp_path / "again", TINY_LM)


def test_the_decoder_is_the_embedding_table():
    model = tiny_model()
    assert model.decoder_weight is model.embedding.weight
    same_shape = [name for name, parameter in model.named_parameters() if parameter.shape == model.embedding.weight.shape]
    assert same_shape == ["embedding.weight"]  # one tensor, saved once
    states = torch.randn(2, 5, 16)
    assert torch.allclose(model.logits(states), functional.linear(states, model.embedding.weight, model.decoder_bias))
    with torch.no_grad():
        model.embedding.weight[3] += 1.0
    assert torch.allclose(model.logits(states)[..., 3], states @ model.embedding.weight[3] + model.decoder_bias[3])


def test_the_weight_dropout_changes_weight_hh_only_in_training_and_follows_the_seed():
    layer = WeightDroppedLSTM(4, 6, rate=0.5)
    stored = layer.lstm.weight_hh_l0.detach().clone()
    inputs = torch.randn(2, 3, 4)
    torch.manual_seed(1)
    first, (first_hidden, _) = layer(inputs, None)
    torch.manual_seed(1)
    dropped = layer.recurrent_weight()
    torch.manual_seed(1)
    again, _ = layer(inputs, None)
    torch.manual_seed(1)
    assert torch.equal(first, again) and torch.equal(dropped, layer.recurrent_weight())  # a seed fixes the mask
    assert 0.2 < (dropped == 0).float().mean() < 0.8 and torch.equal(dropped[dropped != 0], 2 * stored[dropped != 0])  # kept: scaled by 1 / (1 - rate)
    assert torch.equal(layer.lstm.weight_hh_l0, stored)  # the stored weight never changes
    first.sum().backward()
    assert layer.lstm.weight_hh_l0.grad is not None and layer.lstm.weight_ih_l0.grad is not None
    layer.eval()
    assert layer.recurrent_weight() is layer.lstm.weight_hh_l0
    plain, _ = layer.lstm(inputs)
    assert torch.equal(layer(inputs, None)[0], plain) and not torch.allclose(first, plain)


def test_the_model_reads_left_to_right_only():
    """Changing word t leaves every output before t unchanged (in training too, under the same masks)."""
    model = tiny_model()
    words = torch.randint(0, 20, (2, 12))
    changed = words.clone()
    changed[:, 8] = (words[:, 8] + 1) % 20
    for training in (False, True):
        model.train(training)
        torch.manual_seed(3)
        outputs, dropped, _ = model(words)
        torch.manual_seed(3)
        other_outputs, other_dropped, _ = model(changed)
        assert torch.equal(outputs[:, :8], other_outputs[:, :8]) and torch.equal(dropped[:, :8], other_dropped[:, :8])
        assert not torch.allclose(outputs[:, 8], other_outputs[:, 8])


def test_a_stream_read_in_chunks_scores_as_read_whole():
    """Truncated BPTT: each chunk starts from the states the previous chunk of its stream ended with."""
    stream = np.random.default_rng(0).integers(0, 20, 61)
    chunks = stream_chunks(stream, rows=3, bptt=7)
    assert [chunk.starts for chunk in chunks] == [True] + [False] * 2 and [chunk.inputs.size(1) for chunk in chunks] == [7, 7, 6]
    rows = torch.cat([chunk.inputs for chunk in chunks], 1)
    assert torch.equal(torch.cat([chunk.targets for chunk in chunks], 1)[:, :-1], rows[:, 1:]) and torch.equal(rows.flatten(), torch.from_numpy(stream[:60]))
    reader = StreamPretraining(tiny_model()).eval()
    with torch.no_grad():
        pieces = sum(reader.losses(chunk)[0] for chunk in chunks)
        whole = reader.losses(stream_chunks(stream, rows=3, bptt=100)[0])[0]
        reader.losses(chunks[0])
        after_first = reader.losses(chunks[1])[0]
        after_itself = reader.losses(chunks[1])[0]  # now from the states chunk 1 itself ended with
        reader.losses(chunks[0])
        assert torch.equal(reader.losses(chunks[1])[0], after_first)  # a starting chunk resets the states
    assert torch.allclose(pieces, whole, rtol=1e-5) and not torch.equal(after_first, after_itself)


def test_an_interrupted_pretraining_resumes(text, tmp_path, monkeypatch, capsys):
    summary = resumes_after_an_interruption(text, tmp_path, monkeypatch, capsys, TINY_LM)
    assert [record["epoch"] for record in summary["history"]] == [1, 2] and summary["architecture"] == "awd-lstm"
    assert not (tmp_path / "lm.partial").exists()


def test_bad_input_is_one_line(language_model, text, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    lm = ["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "a"), *TINY_LM]
    assert "--objective causal is a Transformer LM's option; the AWD-LSTM LM does not read it" in one_line_error(capsys, [*lm, "--objective", "causal"])
    assert "--softmax full is a BiLSTM LM's option" in one_line_error(capsys, [*lm, "--softmax", "full"])
    assert "--heads 2 is a Transformer LM's option" in one_line_error(capsys, [*lm, "--heads", "2"])
    assert "--bptt must be at least 2" in one_line_error(capsys, [*lm, "--bptt", "1"])
    assert "--bptt 20 is an AWD-LSTM LM's option; the BiLSTM LM does not read it" in one_line_error(
        capsys, ["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "b"), "--architecture", "bilstm", "--bptt", "20"]
    )
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    assert "holds no sentences" in one_line_error(capsys, ["pretrain-lm", "--text", str(empty), "--output", str(tmp_path / "c"), *TINY_LM])
    assert not any((tmp_path / name).exists() for name in ("a", "b", "c", "a.partial", "c.partial"))
    folder, _ = language_model
    ner = [
        "--train",
        str(FIXTURES / "tiny_ner_train.conll"),
        "--dev",
        str(FIXTURES / "tiny_ner_dev.conll"),
        "--columns",
        "word,ner",
        "--scheme",
        "iob2",
        "--epochs",
        "1",
        "--quiet",
        "--device",
        "cpu",
        "model.embeddings=null",
        "model.hidden=8",
        "train.threads=1",
        f"model.encoder={folder}",
    ]
    error = one_line_error(capsys, ["train", *ner, "--output", str(tmp_path / "features"), "model.encoder_mode=features"])
    assert "read as a fine-tuned encoder, not as frozen features" in error and "model.encoder_mode=finetune" in error
    assert not (tmp_path / "features" / "metrics.json").exists()


def test_the_lm_fine_tuned_as_an_encoder_trains_saves_loads_and_predicts(language_model, tmp_path, monkeypatch):
    """ULMFiT's third stage on our AWD-LSTM: the classifier (concat pooling) over the LM's last
    layer, with gradual unfreezing over its groups (embedding, then each LSTM layer) and
    discriminative rates; the weights start from the LM's; the run loads and predicts as trained."""
    import seqtransfer
    from seqtransfer.models.awd_encoder import word_map
    from seqtransfer.transfer.adaptations import layer_groups

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    output = tmp_path / "classifier"
    data = ["--train", str(FIXTURES / "tiny_sentiment_train.tsv"), "--dev", str(FIXTURES / "tiny_sentiment_dev.tsv")]
    encoder = [f"model.encoder={folder}", "model.encoder_mode=finetune", "model.embeddings=null", "train.threads=1"]
    metrics = run(
        ["train", *data, "--epochs", "5", "--output", str(output), "--quiet", "--device", "cpu", *encoder, "model.sentence_reader=ulmfit", "transfer.adaptations=[discriminative,gradual_unfreezing]"]
    )
    assert "architecture: encoder_classifier" in (output / "config.yaml").read_text() and 0 <= metrics["dev"]["accuracy"] <= 100
    predictor = seqtransfer.load(output, device="cpu")
    groups = [name for name, _ in layer_groups(predictor.run.model)]
    assert groups == ["encoder.embedding", "encoder.lstm_layers.0", "encoder.lstm_layers.1", "encoder.lstm_layers.2", "head"]
    pretrained, words = load_awd_lstm(folder)
    saved, fresh = predictor.run.model.encoder.embedding.weight, tiny_model(len(words)).embedding.weight
    assert torch.allclose(saved, pretrained.embedding.weight, atol=1e-2) and not torch.allclose(saved, fresh, atol=1e-2)  # it started from the LM (and its lowest group opens last)
    labels = predictor.predict(["what a great movie", "not good at all"])
    assert labels == seqtransfer.load(output, device="cpu").predict(["what a great movie", "not good at all"]) and set(labels) <= {"pos", "neg"}
    assert word_map(["<pad>", "<unk>", words[5], words[5].upper(), "never-seen", "<S>", "</s>"], words).tolist() == [0, 0, 5, 5, 0, 0, 0]  # no text word reads as a sentence mark
    tagger = run([*tiny_train_arguments(tmp_path / "tagger", epochs=1, classifier="crf"), "--device", "cpu", *encoder])
    assert 0 <= tagger["dev"]["f1"] <= 100


def test_last_layer_trains_the_classifier_alone_and_keeps_the_lm_as_pretrained(language_model, tmp_path, monkeypatch):
    """ULMFiT's "Last" (transfer.adaptations=[last_layer]): the AWD-LSTM is read fine-tuned only, so its
    frozen reading is a fine-tuned encoder whose groups below the head never train."""
    from safetensors.torch import load_file

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    data = ["--train", str(FIXTURES / "tiny_sentiment_train.tsv"), "--dev", str(FIXTURES / "tiny_sentiment_dev.tsv")]
    encoder = [f"model.encoder={folder}", "model.encoder_mode=finetune", "model.embeddings=null", "train.threads=1", "model.sentence_reader=ulmfit"]
    metrics = run(["train", *data, "--epochs", "2", "--output", str(tmp_path / "last"), "--quiet", "--device", "cpu", *encoder, "transfer.adaptations=[last_layer]"])
    assert [record["phase"] for record in metrics["history"]] == ["head", "head"]
    saved, pretrained = load_file(str(tmp_path / "last" / "model.safetensors")), load_file(str(folder / "model.safetensors"))
    lm = {name.removeprefix("encoder."): tensor for name, tensor in saved.items() if name.startswith("encoder.")}
    assert "embedding.weight" in lm and all(torch.equal(tensor, pretrained[name]) for name, tensor in lm.items())
    head = [name for name in saved if not name.startswith("encoder.") and not name.endswith(("running_mean", "running_var", "num_batches_tracked"))]
    assert head and metrics["trainable_parameters"] == sum(saved[name].numel() for name in head)


@pytest.mark.parametrize("given", ["word vectors", "a run directory", "an unfinished LM"])
def test_a_classifier_asked_of_something_without_states_is_one_line(tmp_path, capsys, given):
    """ULMFiT's classifier pools an LM's states: word vectors, a trained tagger's run and an unfinished
    pretrain-lm folder have none. One line naming what was given and what to pass; nothing written."""
    from seqtransfer.cli import main

    if given == "word vectors":
        encoder = tmp_path / "vectors.txt"
        encoder.write_text("movie 0.1 0.2\ngreat 0.3 0.4\n", encoding="utf-8")
        expected = "model.encoder is a file, not an LM folder"
    elif given == "a run directory":
        encoder = tmp_path / "tagger"
        run(tiny_train_arguments(encoder, epochs=1))
        expected = "model.encoder is a seqtransfer run directory (a trained tagger or classifier), not a language model"
    else:
        encoder = tmp_path / "lm.partial"
        encoder.mkdir()
        (encoder / "settings.json").write_text("{}", encoding="utf-8")
        expected = "model.encoder is an unfinished LM folder"
    data = ["--train", str(FIXTURES / "tiny_sentiment_train.tsv"), "--dev", str(FIXTURES / "tiny_sentiment_dev.tsv")]
    arguments = ["train", *data, "--output", str(tmp_path / "classifier"), "--quiet", f"model.encoder={encoder}", "model.encoder_mode=finetune", "model.sentence_reader=ulmfit"]
    capsys.readouterr()
    assert main(arguments) != 0
    error = capsys.readouterr().err
    assert expected in error and len(error.strip().splitlines()) == 1 and "Traceback" not in error and not (tmp_path / "classifier").exists()


def test_finetune_lm_continues_the_awd_lstm_on_target_text(language_model, text, tmp_path):
    """ULMFiT's second stage on our AWD-LSTM: the stream of the target text, discriminative rates
    (embedding, LSTM 1, LSTM 2, LSTM 3 with the decoder's bias), perplexity before and after; the
    result is an AWD-LSTM folder again, usable as an encoder."""
    from seqtransfer.workflows.lm_finetuning import AWD_LAYER_GROUPS, discriminative_groups

    folder, _ = language_model
    target = tmp_path / "target.txt"
    target.write_text("".join(line + "\n" for line in text.read_text(encoding="utf-8").splitlines()[:80]), encoding="utf-8")
    output = tmp_path / "continued"
    summary = run(["finetune-lm", str(folder), "--text", str(target), "--output", str(output), "--epochs", "2", "--batch-size", "8", "--threads", "1", "--quiet", "--device", "cpu"])
    report = json.loads((output / "pretraining.json").read_text())
    assert report["architecture"] == "awd-lstm" and report["continued_from"] == str(folder) and report["bptt"] == 70
    assert summary["held_out_perplexity_before"] > 0 and 0 < summary["held_out_perplexity"] <= summary["held_out_perplexity_before"] * 1.5
    continued, words = load_awd_lstm(output)
    assert words == load_awd_lstm(folder)[1]  # the LM keeps its words
    rates = [group["lr"] for group in discriminative_groups(continued, 0.026, 2.6, AWD_LAYER_GROUPS)]
    assert rates == pytest.approx([0.026 / 2.6**3, 0.026 / 2.6**2, 0.026 / 2.6, 0.026])
    assert sum(len(group["params"]) for group in discriminative_groups(continued, 0.026, 2.6, AWD_LAYER_GROUPS)) == len(list(continued.parameters()))
