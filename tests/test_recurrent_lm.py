"""Our ELMo-style recurrent LM (issue 54): pretraining, its folder, and its use as an encoder,
frozen (features of its three layers) and fine-tuned (the ``bilstm_lm`` encoder family)."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
import torch
from conftest import FIXTURES, write_random_text

from seqtransfer.cli import main, run

TINY_LM = ["--architecture", "bilstm", "--size", "tiny", "--epochs", "2", "--batch-size", "16", "--threads", "1", "--quiet", "--device", "cpu"]
NER = ["--train", str(FIXTURES / "tiny_ner_train.conll"), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--test", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner", "--scheme", "iob2"]
TAGGER = ["--epochs", "2", "--quiet", "--device", "cpu", "model.embeddings=null", "model.hidden=8", "model.dropout=0.1", "train.threads=1"]


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    words = "the a cat dog sat on mat ran to house big small John Mary lives in New York loves sees @user #tag lol :) !"
    return write_random_text(tmp_path_factory.mktemp("text") / "text.txt", words, lines=200, longest=12, seed=1)


@pytest.fixture(scope="module")
def language_model(text, tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm") / "lm"
    summary = run(["pretrain-lm", "--text", str(text), "--output", str(folder), *TINY_LM])
    return folder, summary


def test_pretraining_writes_an_encoder_folder_with_its_perplexity_and_cost(language_model):
    folder, summary = language_model
    assert {path.name for path in folder.iterdir()} == {"config.json", "model.safetensors", "vocabulary.json", "pretraining.json"}
    config = json.loads((folder / "config.json").read_text())
    assert config["seqtransfer_architecture"] == "bilstm_lm" and config["projection"] == 16
    report = json.loads((folder / "pretraining.json").read_text())
    assert [record["epoch"] for record in report["history"]] == [1, 2]
    words = config["words"]
    assert 1 < report["held_out_perplexity"] < 2 * words  # a softmax over `words` words: near uniform at worst after 2 epochs
    # the epoch's training loss is a mean -log p per word, on the held-out perplexity's scale (random text: near uniform both)
    assert all(abs(record["loss"] - math.log(record["held_out_perplexity"])) < 1.0 for record in report["history"])
    assert report["training_tokens_per_second"] > 0 and report["encoder_parameters"] > 0 and summary["best_epoch"] in (1, 2)
    assert report["device"].startswith("cpu")  # the processor: a seed fixes the weights on one kind only


def test_the_same_seed_pretrains_the_same_lm(text, language_model, tmp_path):
    assert_pretrains_the_same(text, language_model[0], tmp_path / "again", TINY_LM)


def assert_pretrains_the_same(text, folder, again, options: list[str]) -> None:
    """Pretraining again with the same ``options`` (and seed) into ``again`` gives ``folder``'s weights to the bit."""
    from safetensors.torch import load_file

    run(["pretrain-lm", "--text", str(text), "--output", str(again), *options])
    first, second = load_file(str(folder / "model.safetensors")), load_file(str(again / "model.safetensors"))
    assert first.keys() == second.keys() and all(torch.equal(first[name], second[name]) for name in first)


def test_each_direction_reads_only_its_own_side():
    """The forward LSTM at t has read w_<=t, the backward one w_>=t: changing w_t+2 leaves the
    forward states up to t+1 unchanged, changing w_t-2 the backward states from t-1."""
    from seqtransfer.embeddings.recurrent_lm import DEFAULTS, FIRST_CHARACTER, SIZES, RecurrentLanguageModel, encode_batch

    torch.manual_seed(0)
    characters = {character: index + FIRST_CHARACTER for index, character in enumerate("abcdefghij")}
    model = RecurrentLanguageModel({**SIZES["tiny"], **DEFAULTS, "characters": 16, "words": 10}).eval()
    one, other = ["ab", "cd", "ef", "gh", "ij", "ab"], ["ab", "cd", "ef", "gh", "jj", "ab"]  # differ at token 5 (position 5 after <S>)
    padded = [["ab"]]  # a shorter sentence in the batch: its padding must not reach the others
    with torch.inference_mode():
        layers = [model.layers(**{key: value for key, value in encode_batch([sentence, *padded], characters, 50).items()}) for sentence in (one, other)]
    (_, forward_a, _, backward_a, _), (_, forward_b, _, backward_b, _) = layers
    assert torch.equal(forward_a[0, :5], forward_b[0, :5]) and not torch.equal(forward_a[0, 5], forward_b[0, 5])
    assert torch.equal(backward_a[0, 6:8], backward_b[0, 6:8]) and not torch.equal(backward_a[0, 5], backward_b[0, 5])


@pytest.mark.parametrize("mode", ["features", "finetune"])
def test_a_tagger_reads_the_lm_frozen_or_fine_tuned(language_model, tmp_path, monkeypatch, mode):
    import seqtransfer
    from seqtransfer.rundir import load_run
    from seqtransfer.transfer.adaptations import layer_groups

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    output = tmp_path / mode
    run(["train", *NER, "--output", str(output), *TAGGER, f"model.encoder={folder}", f"model.encoder_mode={mode}"])
    loaded = load_run(output)
    names = set(loaded.model.state_dict())
    if mode == "features":
        assert loaded.config.model.encoder_layers == 3 and loaded.config.model.encoder_dimension == 32
        assert "word_representation.encoder_mix.weights" in names
    else:
        assert type(loaded.model).encoder_family == "bilstm_lm" and "encoder_mix.weights" in names
        assert any(name.startswith("encoder.lstm_layers.1.backward_lstm.") for name in names) and not any(name.startswith("encoder.softmax") for name in names)
        assert [group for group, _ in layer_groups(loaded.model)] == ["encoder.tokens", "encoder.lstm_layers.0", "encoder.lstm_layers.1", "head"]
    sentences = [["John", "lives", "in", "New", "York"], ["Mary", "!"]]
    predictor = seqtransfer.load(output)
    predicted = predictor.predict(sentences)
    assert [len(labels) for labels in predicted] == [5, 2] and predictor.predict(sentences) == predicted


def test_the_frozen_lms_features_are_computed_once_and_read_from_the_cache_after(language_model, tmp_path, monkeypatch):
    """Frozen, the LM's features are cached as a Transformer's are: the same run trained again computes
    none, reads them from the cache, and trains to the same weights (the cached vectors are the LM's own)."""
    from safetensors.torch import load_file

    from seqtransfer.embeddings import feature_cache
    from seqtransfer.embeddings.recurrent_lm import recurrent_features

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    computed = []

    def counted(*arguments, **keywords):
        computed.append(len(arguments[1]))
        return recurrent_features(*arguments, **keywords)

    monkeypatch.setattr(feature_cache, "recurrent_features", counted)
    weights = []
    for attempt in ("first", "again"):
        run(["train", *NER, "--output", str(tmp_path / attempt), *TAGGER, f"model.encoder={folder}", "model.encoder_mode=features", "--seed", "1"])
        weights.append(load_file(str(tmp_path / attempt / "model.safetensors")))
        if attempt == "first":
            first, computed[:] = list(computed), []
    assert first and computed == [] and list((tmp_path / "cache").rglob("*.safetensors"))  # the second run computed nothing
    assert weights[0].keys() == weights[1].keys() and all(torch.equal(weights[0][name], weights[1][name]) for name in weights[0])


def test_the_fine_tuned_lm_takes_every_adaptation_of_a_fine_tuned_encoder(language_model, tmp_path, monkeypatch):
    """Discriminative rates over its groups (character CNN, LSTM 1, LSTM 2, head), gradual unfreezing
    (epoch 1 trains the head alone: the LM stays as pretrained) and L2-SP towards the pretrained LM."""
    from safetensors.torch import load_file

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    pretrained = load_file(str(folder / "model.safetensors"))
    tagger = ["train", *NER, *TAGGER, f"model.encoder={folder}", "model.encoder_mode=finetune"]

    def distance(output) -> float:
        saved = load_file(str(output / "model.safetensors"))
        return sum(float((tensor - pretrained[name.removeprefix("encoder.")]).pow(2).sum()) for name, tensor in saved.items() if name.startswith("encoder."))

    unfrozen = run([*tagger, "--output", str(tmp_path / "gradual"), "--epochs", "1", "transfer.adaptations=[discriminative, gradual_unfreezing]"])
    rates = unfrozen["history"][0]["learning_rates"]
    assert len(rates) == 4 and all(upper / lower == pytest.approx(2.6, rel=1e-3) for lower, upper in zip(rates, rates[1:]))
    assert distance(tmp_path / "gradual") == 0.0  # epoch 1: the head alone
    options = ["--epochs", "1", "train.learning_rate=0.05", "train.batch_size=1"]  # 5 steps: the pull acts from the second
    run([*tagger, "--output", str(tmp_path / "free"), *options])
    run([*tagger, "--output", str(tmp_path / "pulled"), *options, "transfer.adaptations=[l2sp]", "transfer.l2sp_weight=100"])
    assert 0.0 < distance(tmp_path / "pulled") < distance(tmp_path / "free")


def test_fine_tuning_starts_from_the_pretrained_weights(language_model, tmp_path):
    from safetensors.torch import load_file

    from seqtransfer.config import RunConfig, apply_overrides
    from seqtransfer.models.encoders import model_class

    folder, _ = language_model
    config = apply_overrides(RunConfig(), [f"model.encoder={folder}", "model.encoder_mode=finetune", "model.hidden=8"]).model
    model = model_class("bilstm_lm", "tagging")(config, 5, 12, 3)
    model.load_pretrained()
    pretrained = load_file(str(folder / "model.safetensors"))
    assert all(torch.equal(tensor, pretrained[name.removeprefix("encoder.")]) for name, tensor in model.state_dict().items() if name.startswith("encoder."))


def test_an_interrupted_pretraining_resumes(text, tmp_path, monkeypatch, capsys):
    resumes_after_an_interruption(text, tmp_path, monkeypatch, capsys, TINY_LM)


def resumes_after_an_interruption(text, tmp_path, monkeypatch, capsys, options: list[str]) -> dict:
    """A run of a word-level LM (``options``: the BiLSTM's, the AWD-LSTM's) stopped after both epochs
    were checkpointed resumes after epoch 2; -> the resumed run's summary."""
    from seqtransfer.workflows import recurrent_pretraining as module

    original = module.perplexity
    calls = {"count": 0}

    def failing(model, batches):
        calls["count"] += 1
        if calls["count"] == 3:  # both epochs scored and checkpointed: the final scoring
            raise KeyboardInterrupt
        return original(model, batches)

    monkeypatch.setattr(module, "perplexity", failing)
    with pytest.raises(KeyboardInterrupt):
        run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "lm"), *options])
    assert (tmp_path / "lm.partial").is_dir() and not (tmp_path / "lm").exists()
    monkeypatch.setattr(module, "perplexity", original)
    capsys.readouterr()
    summary = run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "lm"), *options])
    assert "resuming after epoch 2" in capsys.readouterr().out and math.isfinite(summary["held_out_perplexity"])
    return summary


def one_line_error(capsys, arguments) -> str:
    assert main(arguments) != 0
    error = capsys.readouterr().err
    assert "Traceback" not in error and error.strip().count("\n") <= 1, error
    return error


def test_bad_lm_input_is_one_line(language_model, text, tmp_path, capsys, monkeypatch):
    import shutil

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    assert "--objective causal is a Transformer LM's" in one_line_error(capsys, ["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "a"), *TINY_LM, "--objective", "causal"])
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    assert "holds no sentences" in one_line_error(capsys, ["pretrain-lm", "--text", str(empty), "--output", str(tmp_path / "b"), *TINY_LM])
    latin = tmp_path / "latin.txt"
    latin.write_bytes("café au lait\nnaïve\n".encode("latin-1"))
    assert "is not valid utf-8" in one_line_error(capsys, ["pretrain-lm", "--text", str(latin), "--output", str(tmp_path / "f"), *TINY_LM])
    assert "invalid choice: 'gru'" in one_line_error(capsys, ["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "c"), "--architecture", "gru"])
    no_weights = tmp_path / "no_weights"
    shutil.copytree(folder, no_weights)
    (no_weights / "model.safetensors").unlink()
    assert "has no model.safetensors" in one_line_error(capsys, ["train", *NER, "--output", str(tmp_path / "d"), *TAGGER, f"model.encoder={no_weights}"])
    mismatched = tmp_path / "mismatched"
    shutil.copytree(folder, mismatched)
    vocabulary = json.loads((mismatched / "vocabulary.json").read_text())
    (mismatched / "vocabulary.json").write_text(json.dumps({**vocabulary, "words": vocabulary["words"][:-1]}))
    for mode in ("features", "finetune"):
        assert "does not fit config.json" in one_line_error(capsys, ["train", *NER, "--output", str(tmp_path / f"e{mode}"), *TAGGER, f"model.encoder={mismatched}", f"model.encoder_mode={mode}"])
    assert not any((tmp_path / name / "metrics.json").exists() for name in ("d", "efeatures", "efinetune"))


def test_analyze_layers_reads_each_runs_scalar_mix_and_the_report_shows_it(language_model, tmp_path, monkeypatch, capsys):
    from safetensors.torch import load_file

    from seqtransfer.rundir import read_saved_config

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    features = tmp_path / "features"
    run(["train", *NER, "--output", str(features), *TAGGER, f"model.encoder={folder}"])
    plain = tmp_path / "plain"
    run(["train", *NER, "--output", str(plain), *TAGGER])
    capsys.readouterr()
    (result,) = run(["analyze", "layers", str(features), "--label", "frozen LM", "--output", str(tmp_path / "layers")])
    saved = load_file(str(features / "model.safetensors"))["word_representation.encoder_mix.weights"]
    assert result["weights"] == [round(value, 4) for value in torch.softmax(saved, 0).tolist()] and len(result["weights"]) == 3
    assert result["encoder_weights"] == read_saved_config(features).model.encoder_hash and len(result["encoder_weights"]) == 16  # which pretraining of the folder it read
    assert (
        "| frozen LM |" in (shown := capsys.readouterr().out)
        and f"`{result['encoder_weights']}` |" in shown
        and {path.name for path in (tmp_path / "layers").iterdir()} >= {"layers.json", "layers.md", "layers.png"}
    )
    (unnamed,) = run(["analyze", "layers", str(features), "--output", str(tmp_path / "unnamed")])
    assert unnamed["label"] == "tiny_ner_train"  # without --label: what the run trained on (a file: its name)
    shutil.copytree(features, tmp_path / "copy")
    labels = [result["label"] for result in run(["analyze", "layers", str(features), str(tmp_path / "copy")])]
    assert labels == ["features", "copy"]  # two runs of one task: their folders tell them apart
    run(["analyze", "report", "--layers", str(features), "--output", str(tmp_path / "report.html")])
    assert 'id="layers"' in (tmp_path / "report.html").read_text()
    assert "this run mixes no encoder layers" in one_line_error(capsys, ["analyze", "layers", str(plain)])
    assert_records_keep_the_mix(features, plain, result, tmp_path, capsys)


def assert_records_keep_the_mix(features, plain, result, tmp_path, capsys) -> None:
    """A grid's record keeps the run's mix (experiment run's run_fields), and `analyze layers --records`
    draws it after the run's folder is gone; a run without a mix records none."""
    from seqtransfer.experiments.run_records import run_fields
    from seqtransfer.files import read_json

    fields = run_fields(features, read_json(features / "metrics.json"))
    assert fields["layer_mix"] == {key: result[key] for key in ("encoder", "mode", "weights", "gamma")} and fields["layer_mix"]["mode"] == "features"
    assert "layer_mix" not in run_fields(plain, read_json(plain / "metrics.json"))
    records = tmp_path / "grid.records.jsonl"
    rows = [{"method": method, "target": "NER", "seed": 1, "encoder_weights": result["encoder_weights"], **fields, "run_directory": f"runs/{method}"} for method in ("D, our LM", "G, our LM")]
    rows += [{**rows[0], "method": "multi-task", "target": target, "run_directory": "runs/multi"} for target in ("POS", "NER")]  # one run, a record per task
    rows += [{**rows[0], "method": None, "target": None, "source": "ner_lm", "run_directory": "sources/ner"}]
    records.write_text("".join(json.dumps(row) + "\n" for row in [*rows, {"method": "C", "target": "NER", "seed": 1, "run_directory": str(plain)}]))
    shutil.rmtree(features)
    capsys.readouterr()
    (row,) = run(["analyze", "layers", "--records", str(records), "--only", "G, our LM", "--output", str(tmp_path / "recorded")])
    assert row["label"] == "NER / G, our LM, seed 1" and row["weights"] == result["weights"] and row["encoder_weights"] == result["encoder_weights"]
    assert "| NER / G, our LM, seed 1 |" in capsys.readouterr().out and (tmp_path / "recorded" / "layers.png").is_file()
    labels = ["NER / D, our LM, seed 1", "NER / G, our LM, seed 1", "POS, NER / multi-task, seed 1", "source ner_lm, seed 1"]
    assert [row["label"] for row in run(["analyze", "layers", "--records", str(records)])] == labels  # every run with a mix once; C kept none
    assert [row["label"] for row in run(["analyze", "layers", "--records", str(records), "--only", "source ner_lm"])] == labels[-1:]
    content = run(["analyze", "report", "--layers", str(records), "--output", str(tmp_path / "recorded.html")])
    assert [row["label"] for row in content.layer_mix] == labels and "NER / G, our LM, seed 1" in (tmp_path / "recorded.html").read_text()
    empty = tmp_path / "empty.records.jsonl"
    empty.write_text(json.dumps({"method": "C", "target": "NER", "seed": 1, "run_directory": str(plain)}) + "\n")
    for command in (["analyze", "layers", "--records", str(empty)], ["analyze", "report", "--layers", str(empty), "--output", str(tmp_path / "none.html")]):
        assert "no run in the records kept a layer mix" in one_line_error(capsys, command)
    assert "no run of 'C' kept a layer mix" in one_line_error(capsys, ["analyze", "layers", "--records", str(records), "--only", "C"])
    assert "no such records file" in one_line_error(capsys, ["analyze", "layers", "--records", str(tmp_path / "none.jsonl")])
    assert "no runs to read" in one_line_error(capsys, ["analyze", "layers"])


@pytest.mark.parametrize("mode", ["features", "finetune"])
def test_a_run_on_our_lm_refuses_another_lm_in_its_place(language_model, tmp_path, monkeypatch, capsys, mode):
    """The run records the LM folder's hash: a changed LM is one line, as a missing one is; a fine-tuned
    run too (it holds the LM's weights, but reads its character set from the folder)."""
    import shutil

    from safetensors.torch import load_file, save_file

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "lm"
    shutil.copytree(language_model[0], folder)
    output = tmp_path / "run"
    run(["train", *NER, "--output", str(output), *TAGGER, f"model.encoder={folder}", f"model.encoder_mode={mode}"])
    weights = load_file(str(folder / "model.safetensors"))
    weights["tokens.projection.bias"] += 1.0
    save_file(weights, str(folder / "model.safetensors"))
    sentence = ["John", "lives", "in", "York"]
    with pytest.raises(Exception, match="differs from the one this run was trained on"):
        import seqtransfer

        seqtransfer.load(output).predict([sentence])
    shutil.rmtree(folder)
    text = tmp_path / "input.txt"
    text.write_text("John lives in York\n", encoding="utf-8")
    error = one_line_error(capsys, ["predict", str(output), str(text)])
    assert "encoder folder" in error and "is not there" in error


def test_probes_read_the_lms_layers_before_and_after_fine_tuning(language_model, tmp_path, monkeypatch):
    from seqtransfer.analysis.probes import probe_layers

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    output = tmp_path / "finetuned"
    run(["train", *NER, "--output", str(output), *TAGGER, f"model.encoder={folder}", "model.encoder_mode=finetune", "train.learning_rate=0.01"])
    result = probe_layers(str(output))
    assert result["layers"] == 3 and len(result["before"]) == 3 and len(result["after"]) == 3
    assert all(0 <= score <= 100 for score in [*result["before"], *result["after"]])
    from seqtransfer.analysis.probes import layer_vectors
    from seqtransfer.rundir import load_run

    loaded, sentence = load_run(output), [["John", "lives", "in", "York"]]
    (before,), (after,) = layer_vectors(loaded, sentence, "before"), layer_vectors(loaded, sentence, "after")
    assert before.shape == after.shape == (4, 3, before.shape[2]) and not np.allclose(before, after)  # the LM's weights, then the run's


def test_probes_read_a_pair_as_the_run_read_it(language_model, tmp_path, monkeypatch):
    """A run that read each text of a pair alone (model.pair_encoding=separate) is probed so, before and after fine-tuning."""
    from seqtransfer.analysis.probes import layer_vectors
    from seqtransfer.rundir import load_run

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    similarity = ["--train", str(FIXTURES / "tiny_similarity.tsv"), "--dev", str(FIXTURES / "tiny_similarity.tsv"), "--columns", "text,text_b,score"]
    run(["train", *similarity, "--output", str(tmp_path / "run"), *TAGGER, f"model.encoder={folder}", "model.encoder_mode=finetune", "model.pair_encoding=separate"])
    loaded = load_run(tmp_path / "run")
    pairs = [["a", "man", "plays", "[SEP]", "a", "dog"], ["a", "man", "plays", "[SEP]", "two", "kids", "play"]]
    for which in ("before", "after"):
        first, second = layer_vectors(loaded, pairs, which)
        assert np.allclose(first[:3], second[:3], atol=2e-3) and not first[3].any()  # text A reads the same whatever B is


def test_finetune_lm_continues_the_lm_on_target_text_with_discriminative_rates(language_model, text, tmp_path, capsys):
    import json

    from seqtransfer.embeddings.recurrent_lm import load_recurrent_lm
    from seqtransfer.workflows.lm_finetuning import discriminative_groups

    folder, _ = language_model
    output = tmp_path / "continued"
    summary = run(["finetune-lm", str(folder), "--text", str(text), "--output", str(output), "--epochs", "2", "--batch-size", "16", "--threads", "1", "--quiet", "--device", "cpu"])
    report = json.loads((output / "pretraining.json").read_text())
    assert report["continued_from"] == str(folder) and report["held_out_perplexity_before"] > 0 and report["held_out_perplexity"] > 0
    assert summary["held_out_perplexity"] <= summary["held_out_perplexity_before"] * 1.5
    model, _, _ = load_recurrent_lm(output)
    rates = [group["lr"] for group in discriminative_groups(model, 0.026, 2.6)]
    assert rates == pytest.approx([0.026 / 2.6**3, 0.026 / 2.6**2, 0.026 / 2.6, 0.026])  # character CNN, LSTM 1, LSTM 2, softmax
    capsys.readouterr()
    assert main(["finetune-lm", str(FIXTURES / "runs" / "v1_tagger_softmax"), "--text", str(text), "--output", str(tmp_path / "other")]) != 0
    assert "continues our own LMs (pretrain-lm) and Hugging Face Transformer folders" in capsys.readouterr().err


def test_a_tokens_vector_does_not_depend_on_the_other_tokens_of_its_batch():
    """The character CNN pools each token over its own windows: "a" reads the same alone and beside a long word."""
    from seqtransfer.embeddings.recurrent_lm import DEFAULTS, FIRST_CHARACTER, SIZES, RecurrentLanguageModel, encode_batch

    torch.manual_seed(0)
    characters = {character: index + FIRST_CHARACTER for index, character in enumerate("abcdefghijklmnopqrstuvwxyz")}
    model = RecurrentLanguageModel({**SIZES["tiny"], **DEFAULTS, "characters": 40, "words": 10}).eval()
    with torch.inference_mode():
        alone = model.token_layers(**encode_batch([["a", "b"]], characters, 50))[0, 1:3]
        beside = model.token_layers(**encode_batch([["a", "b"], ["thisisaverylongwordindeed"]], characters, 50))[0, 1:3]
    assert torch.allclose(alone, beside, atol=1e-6)


def test_literal_sentence_marks_in_the_text_are_words_not_marks():
    """A "<S>" in the text is spelled out, as fine-tuning spells it; a literal "<unk>" is no second class."""
    from seqtransfer.embeddings.recurrent_lm import BEGIN_SENTENCE, BEGIN_WORD, END_WORD, FIRST_CHARACTER, SENTENCE_END, SENTENCE_START, SPECIAL_WORDS, UNKNOWN_WORD, encode_batch, softmax_word_ids
    from seqtransfer.workflows.recurrent_pretraining import vocabularies

    characters = {character: index + FIRST_CHARACTER for index, character in enumerate("<S>a")}
    batch = encode_batch([["<S>", "a"]], characters, 10)
    forms = batch["forms"][batch["form_index"][0]]  # (T + 2, C): <S> mark, "<S>", "a", </S> mark
    assert forms[0, :3].tolist() == [BEGIN_WORD, BEGIN_SENTENCE, END_WORD]
    assert forms[1, :5].tolist() == [BEGIN_WORD, *(characters[character] for character in "<S>"), END_WORD]
    words, _ = vocabularies([["<unk>", "a", "<S>"], ["<unk>", "a", "<S>"]], 10)
    assert words == [*SPECIAL_WORDS, "a"]
    ids = encode_batch([["<S>", "a", "</S>"]], characters, 10, softmax_word_ids(words))["words"][0].tolist()
    assert ids == [SENTENCE_START, UNKNOWN_WORD, 3, UNKNOWN_WORD, SENTENCE_END]  # the softmax predicts the literal marks as <unk>, not as the marks


def test_a_token_holding_a_space_stays_one_token_in_the_held_out_split():
    from seqtransfer.workflows.recurrent_pretraining import split_sentences

    sentences = [["it", "costs", "50 000", "kuna"], ["New York", "is", "big"], ["the", "cat"], ["the", "dog"]] * 5
    training, held_out = split_sentences(sentences, 0.25, 1)
    assert all(sentence in sentences for sentence in training + held_out) and {tuple(sentence) for sentence in training + held_out} == {tuple(sentence) for sentence in sentences}


def test_a_pair_read_apart_gives_each_text_the_vectors_it_has_alone(language_model):
    """Frozen features with model.pair_encoding=separate (the To-tune paper's ELMo features, A.1):
    each text of "A [SEP] B" reads as the sentence it is alone; the [SEP] reads zeros."""
    from seqtransfer.embeddings.recurrent_lm import load_recurrent_lm, texts_apart_arrays, token_layer_arrays

    folder, _ = language_model
    model, _, characters = load_recurrent_lm(folder)
    first, second = ["the", "cat", "sat"], ["a", "dog", "ran", "to", "house"]
    apart = texts_apart_arrays(model, characters, [[*first, "[SEP]", *second], first, [*first, "[SEP]"]])
    alone = token_layer_arrays(model, characters, [first, second])
    joint = token_layer_arrays(model, characters, [[*first, "[SEP]", *second]])[0]
    assert apart[0].shape == joint.shape and not apart[0][3].any()
    assert np.allclose(apart[0][:3], alone[0], atol=2e-3) and np.allclose(apart[0][4:], alone[1], atol=2e-3)
    assert not np.allclose(apart[0][:3, 1:], joint[:3, 1:], atol=2e-3)  # read jointly, the backward LSTM reads B into A's states
    assert np.allclose(apart[1], alone[0], atol=2e-3) and apart[2].shape == (4, *alone[0].shape[1:]) and not apart[2][3].any()
    # a second [SEP]: B is every other token after the first, as a fine-tuned LM's batch segments read it
    three = texts_apart_arrays(model, characters, [[*first, "[SEP]", "a", "dog", "[SEP]", "ran"]])[0]
    assert np.allclose(three[[4, 5, 7]], token_layer_arrays(model, characters, [["a", "dog", "ran"]])[0], atol=2e-3) and not three[[3, 6]].any()


def test_a_fine_tuned_lm_reading_a_pair_apart_keeps_each_texts_states_to_itself(language_model, tmp_path, monkeypatch):
    """Fine-tuned with model.pair_encoding=separate: changing text B leaves text A's states as they were
    (read jointly, A's backward states read B); the [SEP]'s states are zeros; both modes train and predict."""
    from seqtransfer.data.batching import encode_sentences, make_batch
    from seqtransfer.rundir import load_run

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    similarity = ["--train", str(FIXTURES / "tiny_similarity.tsv"), "--dev", str(FIXTURES / "tiny_similarity.tsv"), "--columns", "text,text_b,score"]
    for mode in ("features", "finetune"):
        run(["train", *similarity, "--output", str(tmp_path / mode), *TAGGER, f"model.encoder={folder}", f"model.encoder_mode={mode}", "model.pair_encoding=separate", "model.sentence_reader=esim"])
    loaded = load_run(tmp_path / "finetune")
    model = loaded.model.eval()
    pairs = [["a", "man", "plays", "[SEP]", "a", "dog"], ["a", "man", "plays", "[SEP]", "two", "kids", "play"]]
    with torch.inference_mode():
        apart = model.token_states(make_batch(encode_sentences(pairs, loaded.vocabularies), np.arange(2)))
        model.reads_texts_apart = False
        joint = model.token_states(make_batch(encode_sentences(pairs, loaded.vocabularies), np.arange(2)))
    assert torch.allclose(apart[0, :3], apart[1, :3], atol=1e-5) and not torch.allclose(joint[0, :3], joint[1, :3], atol=1e-5)
    assert not apart[:, 3].any() and apart[0, 6:].abs().sum() == 0


def test_an_auxiliary_lm_loss_on_our_fine_tuned_lm_is_one_line(language_model, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    error = one_line_error(capsys, ["train", *NER, "--output", str(tmp_path / "run"), *TAGGER, f"model.encoder={folder}", "model.encoder_mode=finetune", "transfer.auxiliary_lm_weight=0.1"])
    assert "our own recurrent LMs have no masked LM head" in error and not (tmp_path / "run").exists()


def test_a_fine_tuned_lm_spells_test_words_with_every_character_it_knows(language_model, tmp_path, monkeypatch):
    """The run's character vocabulary takes the LM's characters too: a character of the LM absent from the training data is not unknown."""
    from seqtransfer.embeddings.recurrent_lm import FIRST_CHARACTER, read_vocabulary
    from seqtransfer.rundir import load_run

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    folder, _ = language_model
    output = tmp_path / "finetuned"
    run(["train", *NER, "--output", str(output), *TAGGER, f"model.encoder={folder}", "model.encoder_mode=finetune"])
    loaded = load_run(output)
    lm_characters = read_vocabulary(folder)[1]
    assert set(lm_characters) <= set(loaded.vocabularies.characters.items)
    mapped = loaded.model.character_map[[loaded.vocabularies.characters.index[character] for character in lm_characters]]
    assert mapped.tolist() == [index + FIRST_CHARACTER for index in range(len(lm_characters))]


def test_a_forms_gradient_sums_in_one_order_whatever_the_threads():
    """The gradient of a form read at many positions is the same sum at 1 and 2 threads (with
    tokens[index] it was not: a 2-thread run that drops to 1 thread trained other weights)."""
    from seqtransfer.embeddings.recurrent_lm import at_positions

    generator = torch.Generator().manual_seed(0)
    vectors, index = torch.randn(768, 128, generator=generator), torch.randint(0, 768, (64, 33), generator=generator)
    upstream = torch.randn(64, 33, 128, generator=generator)
    threads, gradients = torch.get_num_threads(), []
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            leaf = vectors.clone().requires_grad_()
            at_positions(leaf, index).backward(upstream)
            gradients.append(leaf.grad)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(at_positions(vectors, index), vectors[index]) and torch.equal(gradients[0], gradients[1])


def test_the_layer_figure_puts_runs_of_one_lm_folder_pretrained_twice_in_two_panels():
    from seqtransfer.analysis.layer_mix import markdown, mix_figure

    def row(label, fingerprint):
        return {"label": label, "encoder": "lms/tweet", "encoder_weights": fingerprint, "mode": "features", "weights": [0.2, 0.3, 0.5], "gamma": 1.0}

    results = [row("old", "1fbc97c24263b133"), row("new", "ee52314b76cfadc3"), row("newer", "ee52314b76cfadc3")]
    titles = [axes.get_title() for axes in mix_figure(results).axes]
    assert titles == ["encoder tweet (1fbc97c2)", "encoder tweet (ee52314b)"]
    assert [axes.get_title() for axes in mix_figure(results[1:]).axes] == ["encoder tweet"]  # one pretraining: no fingerprint needed
    assert "| old | 0.200 | 0.300 | 0.500 | 1.000 | `1fbc97c24263b133` |" in markdown(results)


def test_the_layer_table_gives_each_layers_spread_over_the_seeds_of_one_run():
    from seqtransfer.analysis.layer_mix import markdown

    def row(label, weights, gamma):
        return {"label": label, "encoder": "lms/tweet", "encoder_weights": "ee52314b76cfadc3", "mode": "features", "weights": weights, "gamma": gamma}

    results = [row("WNUT / PretRand, seed 1", [0.1, 0.8, 0.1], 0.4), row("WNUT / PretRand, seed 2", [0.3, 0.6, 0.1], 0.6), row("source ner, seed 1", [0.2, 0.7, 0.1], 0.3)]
    table = markdown(results).split("Over the seeds", 1)[1]
    assert "| WNUT / PretRand | 2 | 0.200 ± 0.141 | 0.700 ± 0.141 | 0.100 ± 0.000 | 0.500 ± 0.141 |" in table
    assert "source ner" not in table  # one seed: no spread
    assert "Over the seeds" not in markdown(results[2:])
    rebuilt = [{**result, "encoder_weights": "1fbc97c24263b133"} for result in results[:2]]  # the same runs on the LM's earlier pretraining
    table = markdown([*results[:2], *rebuilt]).split("Over the seeds", 1)[1]
    assert "| WNUT / PretRand (ee52314b) | 2 |" in table and "| WNUT / PretRand (1fbc97c2) | 2 |" in table  # never averaged together
