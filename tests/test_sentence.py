"""Sentence classification: TSV datasets, the sentence kind, a BiLSTM classifier and a fine-tuned encoder's [CLS]."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import DATA_ROOT, FIXTURES, TINY_MODEL

from seqtransfer.cli import main, run
from seqtransfer.errors import SeqTransferError

TRAIN, DEV = str(FIXTURES / "tiny_sentiment_train.tsv"), str(FIXTURES / "tiny_sentiment_dev.tsv")


def test_a_sentence_classifier_trains_evaluates_and_predicts(tmp_path, capsys):
    output = tmp_path / "run"
    metrics = run(["train", "--train", TRAIN, "--dev", DEV, "--test", DEV, "--epochs", "3", "--output", str(output), "--quiet", *TINY_MODEL])
    assert metrics["task"] == "label" and metrics["metric"] == "accuracy" and 0 <= metrics["test"]["accuracy"] <= 100
    assert "architecture: sentence_classifier" in (output / "config.yaml").read_text()
    assert (output / "predictions" / "test.conll").read_text().splitlines()[0] == "sentence-1 pos " + lines_predicted(output)
    lines = (output / "predictions" / "test.tsv").read_text().splitlines()
    assert len(lines) == 2 and lines[0].split("\t")[0] == "pos" and lines[0].split("\t")[2] == "great acting"
    scores = run(["evaluate", str(output), "--file", DEV])
    assert scores["accuracy"] == metrics["test"]["accuracy"]
    import seqtransfer

    assert seqtransfer.load(output, device="cpu").predict(["what a movie", ["so", "bad"]])[0] in ("pos", "neg")
    text = tmp_path / "in.txt"
    text.write_text("what a movie\n")
    capsys.readouterr()
    assert main(["predict", str(output), str(text)]) == 0
    assert capsys.readouterr().out.split("\t")[1] == "what a movie\n"


def test_tsv_files_with_a_wrong_field_count_or_no_text_field_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("text\tlabel\nfine line\tpos\nno label here\n")
    assert main(["train", "--train", str(bad), "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL]) == 2
    error = capsys.readouterr().err
    assert "bad.tsv:3" in error and "1 TAB-separated fields, expected 2" in error and len(error.strip().splitlines()) == 1
    unnamed = tmp_path / "unnamed.tsv"
    unnamed.write_text("sentence\tlabel\nfine\tpos\n")
    assert main(["train", "--train", str(unnamed), "--output", str(tmp_path / "run2"), "--quiet", *TINY_MODEL]) == 2
    assert "need a 'text' field" in capsys.readouterr().err
    from seqtransfer.data.tsv import read_tsv_sentences

    pairs = tmp_path / "pairs.tsv"
    fields = ("text", "text_b", "label")
    for lines, message in (
        ("a cat sits\ta cat is sitting\t1\na dog runs\t0\n", "pairs.tsv:2: 2 TAB-separated fields, expected 3 (text, text_b, label)"),
        ("a cat sits\ta cat is sitting\t1\na dog runs\t \t0\n", "pairs.tsv:2: empty second text of a pair"),
        ("\ta dog runs\t0\n", "pairs.tsv:1: empty text"),
    ):
        pairs.write_text(lines, encoding="utf-8")
        with pytest.raises(SeqTransferError) as caught:
            read_tsv_sentences(pairs, fields)
        assert message in str(caught.value)


def test_a_users_files_are_read_by_their_headers_and_a_bad_score_among_scores_is_named(tmp_path, capsys):
    """Each of a user's TSV files is read by the field names of its own header (a dev file that
    writes label before text reads right); other names are one error line; a score column with
    one "n/a" is a regression whose bad line is named, not a classification of 40 classes."""
    dev = tmp_path / "dev.tsv"
    dev.write_text("label\ttext\n" + "".join(f"{label}\t{text}\n" for text, label in (line.split("\t") for line in (FIXTURES / "tiny_sentiment_dev.tsv").read_text().splitlines()[1:])))
    metrics = run(["train", "--train", TRAIN, "--dev", str(dev), "--test", DEV, "--epochs", "1", "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL])
    assert metrics["dev"]["accuracy"] == metrics["test"]["accuracy"]  # the same sentences and labels, fields in another order
    dev.write_text("text\tscore\ngreat acting\t4.5\n")
    assert main(["train", "--train", TRAIN, "--dev", str(dev), "--output", str(tmp_path / "run2"), "--quiet", *TINY_MODEL]) == 2
    assert "dev.tsv:1: the header names the fields text, score, the training file's are text, label" in capsys.readouterr().err
    scores = tmp_path / "scores.tsv"
    scores.write_text("text\tscore\n" + "".join(f"sentence {index}\t{'n/a' if index == 7 else index / 10 + 0.05}\n" for index in range(20)))
    assert main(["train", "--train", str(scores), "--output", str(tmp_path / "run3"), "--quiet", *TINY_MODEL]) == 2
    assert "scores.tsv:9: score 'n/a' is not a number" in capsys.readouterr().err
    scores.write_text(scores.read_text().replace("n/a", "nan"))  # a score float() reads but no loss can train on
    assert main(["train", "--train", str(scores), "--output", str(tmp_path / "run4"), "--quiet", *TINY_MODEL]) == 2
    assert "scores.tsv:9: score 'nan' is not a number" in capsys.readouterr().err
    from seqtransfer.data.user_files import are_scores

    assert are_scores(["0.5", "1.5"] * 10 + ["nan"]) and not are_scores(["0", "1", "1"]) and not are_scores(["pos", "neg", "0.5"])


def test_a_users_pair_file_with_a_header_is_a_pair_task_and_scores_are_a_regression(tmp_path):
    """text_b is a pair's second text and _id is ignored, not taken for the label; real-valued labels are scores."""
    from seqtransfer.data.registry import custom_dataset

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("_id\ttext\ttext_b\tlabel\n1\ta cat sits\ta cat is sitting\t1\n2\ta dog runs\tthe sky is blue\t0\n", encoding="utf-8")
    spec = custom_dataset(train=pairs)
    assert spec.tasks == {"label": "label"} and spec.kinds == {"label": "sentence"} and spec.metric == {"label": "accuracy"}
    from seqtransfer.config import RunConfig, apply_overrides
    from seqtransfer.corpora.task_data import load_task_data

    data = load_task_data(apply_overrides(RunConfig(), [f"data.train={pairs}"]).data)
    first = data.splits["train"][0]
    assert first.tokens == ["a", "cat", "sits", "[SEP]", "a", "cat", "is", "sitting"] and set(first.columns) == {"label"}  # one pair, _id dropped
    scores = tmp_path / "scores.tsv"
    scores.write_text("text\ttext_b\tscore\na cat sits\ta cat is sitting\t4.6\na dog runs\tthe sky is blue\t0\n", encoding="utf-8")
    spec = custom_dataset(train=scores)
    assert spec.kinds == {"score": "regression"} and spec.metric == {"score": "correlation"}
    metrics = run(["train", "--train", str(scores), "--dev", str(scores), "--epochs", "1", "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL])
    assert metrics["metric"] == "correlation"


def test_a_fine_tuned_encoder_classifies_sentences_from_its_cls_vector(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from test_encoders import save_tiny_encoder

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    encoder = save_tiny_encoder(tmp_path / "encoder")
    output = tmp_path / "run"
    metrics = run(
        [
            "train",
            "--train",
            TRAIN,
            "--dev",
            DEV,
            "--epochs",
            "2",
            "--output",
            str(output),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={encoder}",
            "model.encoder_mode=finetune",
            "train.learning_rate=0.001",
        ]
    )
    assert "architecture: encoder_classifier" in (output / "config.yaml").read_text() and 0 <= metrics["dev"]["accuracy"] <= 100
    import seqtransfer

    assert seqtransfer.load(output, device="cpu").predict(["abc " * 20])[0] in ("pos", "neg")  # a sentence longer than the encoder: windows
    pooled = tmp_path / "mean"  # the mean of the token vectors instead of [CLS]: another sentence vector, the same weights to start from
    run(
        [
            "train",
            "--train",
            TRAIN,
            "--dev",
            DEV,
            "--epochs",
            "2",
            "--output",
            str(pooled),
            "--quiet",
            *TINY_MODEL,
            f"model.encoder={encoder}",
            "model.encoder_mode=finetune",
            "train.learning_rate=0.001",
            "model.sentence_pooling=mean",
        ]
    )
    assert (pooled / "model.safetensors").read_bytes() != (output / "model.safetensors").read_bytes()
    assert seqtransfer.load(pooled, device="cpu").predict(["abc " * 20])[0] in ("pos", "neg")
    from seqtransfer.data.batching import encode_sentences, make_batch
    from seqtransfer.models.sentence import mean_over

    loaded = seqtransfer.load(pooled, device="cpu").run
    batch = make_batch(encode_sentences([["abc", "de"], ["f"]], loaded.vocabularies), __import__("numpy").array([0, 1]))
    with torch.no_grad():
        expected = loaded.model.classifier(mean_over(loaded.model.token_states(batch), batch.mask))
        assert torch.allclose(loaded.model.sentence_scores(batch), expected)


@pytest.mark.skipif(not (DATA_ROOT / "trec6").is_dir(), reason="shared datasets not found")
def test_trec6_and_sst2_counts_are_the_manifests():
    from seqtransfer.data.summary import summarize

    trec = {row["split"]: row for row in summarize("trec6")}
    assert (trec["train"]["sentences"] + trec["dev"]["sentences"], trec["test"]["sentences"]) == (5452, 500)
    assert (trec["train"]["coarse labels"], trec["test"]["coarse labels"], trec["test"]["fine labels"]) == (6, 6, 42)
    sst = {row["split"]: row["sentences"] for row in summarize("sst2")}
    assert sst == {"train": 67349, "dev": 872, "test": 1821}


def test_sentence_pairs_are_one_sequence_joined_by_the_encoders_separator(tmp_path):
    from seqtransfer.data.tsv import PAIR_SEPARATOR, read_tsv_sentences

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("\ufefflabel\t_id\ttext\ttext_b\r\n1\t7\tA man plays .\tSomeone plays .\r\n")
    (sentence,) = read_tsv_sentences(pairs, ("label", "_id", "text", "text_b"), header=True)
    assert sentence.tokens == ["A", "man", "plays", ".", PAIR_SEPARATOR, "Someone", "plays", "."] and sentence.columns == {"label": ["1"]}
    pytest.importorskip("transformers")
    from test_encoders import VOCAB, save_tiny_encoder

    from seqtransfer.embeddings.tokenization import subword_pieces
    from seqtransfer.embeddings.transformer import load_encoder

    tokenizer, _ = load_encoder(str(save_tiny_encoder(tmp_path / "encoder")))
    assert subword_pieces(tokenizer, ["john", PAIR_SEPARATOR, "john"]) == [[VOCAB.index("john")], [VOCAB.index("[SEP]")], [VOCAB.index("john")]]
    from seqtransfer.embeddings.transformer import subword_windows

    windows, _, types = subword_windows(str(tmp_path / "encoder"), [["john", PAIR_SEPARATOR, "abc"]])
    assert windows[0][0].tolist() == [2, VOCAB.index("john"), 3, 5, VOCAB.index("##b"), VOCAB.index("##c"), 3]  # [CLS] A [SEP] B [SEP]
    assert types[0][0].tolist() == [0, 0, 0, 1, 1, 1, 1]  # BERT's token types


@pytest.mark.skipif(not (DATA_ROOT / "mrpc").is_dir(), reason="shared datasets not found")
def test_mrpc_and_sick_counts_are_the_manifests():
    from seqtransfer.data.summary import summarize

    assert {row["split"]: row["sentences"] for row in summarize("mrpc")} == {"train": 3668, "dev": 408, "test": 1725}
    assert {row["split"]: row["sentences"] for row in summarize("sick")} == {"train": 4500, "dev": 500, "test": 4927}


def test_pearson_and_spearman_equal_scipys():
    scipy_stats = pytest.importorskip("scipy.stats")
    import numpy as np

    from seqtransfer.data.metrics import correlation_scores

    generator = np.random.default_rng(0)
    gold = np.round(generator.uniform(0, 5, 200), 1)  # many ties, as STS-B scores
    predicted = gold + generator.normal(0, 1, 200)
    scores = correlation_scores([[value] for value in gold], [[value] for value in predicted])
    assert abs(scores["pearson"] - 100 * scipy_stats.pearsonr(gold, predicted)[0]) < 1e-9
    assert abs(scores["spearman"] - 100 * scipy_stats.spearmanr(gold, predicted)[0]) < 1e-9


def test_mrpc_f1_is_the_positive_classs_and_spearman_may_be_the_one_number():
    from seqtransfer.data.metrics import evaluate, get_metric, main_score

    gold, predicted = [["1"], ["1"], ["1"], ["0"], ["0"]], [["1"], ["0"], ["1"], ["1"], ["0"]]
    scores = evaluate(gold, predicted, "positive_f1")  # precision 2/3, recall 2/3
    assert abs(scores["f1"] - 100 * 2 / 3) < 1e-9 and scores["accuracy"] == 60.0 and get_metric("positive_f1").main == "f1"
    with pytest.raises(SeqTransferError, match="positive-class F1 needs a class '1'"):
        evaluate([["pos"]], [["neg"]], "positive_f1")
    gold, predicted = [[1.0], [2.0], [3.0]], [[1.0], [3.0], [2.5]]
    assert main_score("spearman", evaluate(gold, predicted, "spearman")) == evaluate(gold, predicted, "correlation")["spearman"] == 50.0


def test_a_sentence_pair_regressor_trains_and_scores_correlation(tmp_path, monkeypatch):
    from dataclasses import replace

    from seqtransfer.data import registry

    spec = replace(
        registry.STSB, name="tiny_sts", folder="", columns=("text", "text_b", "score"), extra_fields=False, splits={split: str(FIXTURES / "tiny_similarity.tsv") for split in ("train", "dev", "test")}
    )
    monkeypatch.setitem(registry.DATASETS, "tiny_sts", spec)
    output = tmp_path / "run"
    metrics = run(["train", "--dataset", "tiny_sts", "--epochs", "3", "--output", str(output), "--quiet", *TINY_MODEL])
    assert metrics["metric"] == "correlation" and -100 <= metrics["test"]["pearson"] <= 100 and "spearman" in metrics["test"]
    assert "architecture: sentence_regressor" in (output / "config.yaml").read_text()
    gold, predicted, text = (output / "predictions" / "test.tsv").read_text().splitlines()[0].split("\t")
    assert gold == "4.5" and math.isfinite(float(predicted)) and text == "a man plays a guitar [SEP] a man plays music"
    import seqtransfer

    assert isinstance(seqtransfer.load(output, device="cpu").predict(["a man plays [SEP] a man sings"])[0], float)


def test_center_scores_starts_a_regressors_bias_at_the_training_mean_and_is_refused_for_labels(tmp_path, monkeypatch, capsys):
    from dataclasses import replace

    from seqtransfer.config import ModelConfig
    from seqtransfer.data import registry
    from seqtransfer.models.sentence import SentenceRegressor

    spec = replace(
        registry.STSB, name="tiny_sts", folder="", columns=("text", "text_b", "score"), extra_fields=False, splits={split: str(FIXTURES / "tiny_similarity.tsv") for split in ("train", "dev", "test")}
    )
    monkeypatch.setitem(registry.DATASETS, "tiny_sts", spec)
    output = tmp_path / "run"
    run(["train", "--dataset", "tiny_sts", "--epochs", "1", "--output", str(output), "--quiet", *TINY_MODEL, "model.center_scores=true"])
    mean = (4.5 + 0.5 + 4.0 + 0.2 + 3.6 + 4.2) / 6
    assert f"bias starts at {mean:.4f}" in (output / "log.txt").read_text()
    import yaml

    saved = yaml.safe_load((output / "config.yaml").read_text())["model"]
    assert saved["center_scores"] is True and saved["score_mean"] == pytest.approx(mean)
    assert SentenceRegressor(ModelConfig(**{**saved, "tasks": None}), 10, 10, 0).classifier.bias.item() == pytest.approx(mean)
    assert SentenceRegressor(ModelConfig(score_mean=mean), 10, 10, 0).classifier.bias.item() != pytest.approx(mean)  # not asked: PyTorch's init
    assert main(["train", "--train", TRAIN, "--dev", DEV, "--output", str(tmp_path / "labels"), "--quiet", *TINY_MODEL, "model.center_scores=true"]) == 2
    error = capsys.readouterr().err
    assert "model.center_scores" in error and "the sentence task predicts labels, not a score" in error and len(error.strip().splitlines()) == 1


@pytest.mark.skipif(not (DATA_ROOT / "stsb").is_dir(), reason="shared datasets not found")
def test_stsb_counts_and_scores():
    from seqtransfer.data.registry import load_split
    from seqtransfer.tasks import REGRESSION

    sentences = {split: load_split("stsb", split) for split in ("train", "dev", "test")}
    assert {split: len(values) for split, values in sentences.items()} == {"train": 5749, "dev": 1500, "test": 1379}
    scores = [score for (score,) in REGRESSION.gold(sentences["train"], "score")]
    assert min(scores) == 0.0 and max(scores) == 5.0


def test_the_bilstm_pools_the_two_texts_of_a_pair_apart():
    import numpy as np

    from seqtransfer.data.batching import encode_sentences, make_batch
    from seqtransfer.data.tsv import PAIR_SEPARATOR
    from seqtransfer.data.vocabulary import Vocabularies, Vocabulary

    vocabularies = Vocabularies(Vocabulary.build(["a", "b"]), Vocabulary.build("ab"), Vocabulary([]))
    batch = make_batch(encode_sentences([["a", "a", PAIR_SEPARATOR, "b"], ["a"]], vocabularies), np.arange(2))
    assert batch.segments.tolist() == [[0, 0, 2, 1], [0, 2, 2, 2]]
    assert encode_sentences([["a"]], vocabularies).segments is None  # no pair, no segments
    import torch

    from seqtransfer.models.sentence import mean_over

    states = torch.arange(8, dtype=torch.float32).view(1, 4, 2)
    assert mean_over(states, batch.segments[:1] == 0).tolist() == [[1.0, 2.0]] and mean_over(states, batch.segments[:1] == 1).tolist() == [[6.0, 7.0]]


def lines_predicted(output) -> str:
    return (output / "predictions" / "test.tsv").read_text().splitlines()[0].split("\t")[1]


def test_sentence_classifiers_distil_into_one_per_sentence(tmp_path):
    from seqtransfer.rundir import load_run
    from seqtransfer.transfer.distillation import teacher_distributions

    common = ["train", "--train", TRAIN, "--dev", DEV, "--epochs", "2", "--quiet", *TINY_MODEL]
    teachers = [tmp_path / "a", tmp_path / "b"]
    for seed, teacher in enumerate(teachers, start=1):
        assert main([*common, "--output", str(teacher), f"train.seed={seed}"]) == 0
    loaded = load_run(teachers[0])
    tokens = [["great", "acting"], ["so", "bad", "really"]]
    distributions = teacher_distributions(loaded, tokens, loaded.vocabularies.labels, temperature=2.0)
    assert [d.shape for d in distributions] == [(1, len(loaded.vocabularies.labels))] * 2  # one distribution per sentence
    assert all(abs(float(d.sum()) - 1.0) < 1e-5 for d in distributions)
    student = tmp_path / "student"
    assert main([*common, "--output", str(student), f"transfer.distill_from=[{teachers[0]}, {teachers[1]}]"]) == 0
    assert "distilling 2 teacher run(s)" in (student / "log.txt").read_text(encoding="utf-8")


def test_an_ensemble_of_sentence_classifiers_averages_their_sentence_distributions(tmp_path, tiny_run, capsys):
    """One distribution per sentence (not per token): the ensemble's label is the arg-max of its members'
    averaged softmax, scored and written like a classifier's predictions."""
    from seqtransfer.config import DataConfig
    from seqtransfer.corpora.task_data import load_task_data
    from seqtransfer.rundir import load_run
    from seqtransfer.workflows.ensemble import build_ensemble

    members = [tmp_path / f"member-{seed}" for seed in (1, 2)]
    for seed, output in zip((1, 2), members):
        run(["train", "--train", TRAIN, "--dev", DEV, "--test", DEV, "--epochs", "2", "--seed", str(seed), "--output", str(output), "--quiet", *TINY_MODEL])
    data = load_task_data(DataConfig(train=TRAIN, dev=DEV, test=DEV))
    metrics = build_ensemble(members, data, tmp_path / "ensemble")
    from seqtransfer.data.batching import encode_sentences, make_batch

    runs = [load_run(member) for member in members]
    by_hand = []
    for loaded in runs:
        batch = make_batch(encode_sentences(data.tokens("dev"), loaded.vocabularies), torch.arange(len(data.tokens("dev"))).numpy())
        with torch.no_grad():
            probabilities = loaded.model.eval().sentence_scores(batch).softmax(-1)  # (B, L)
        order = [sorted(loaded.vocabularies.labels.items).index(label) for label in loaded.vocabularies.labels.items]
        by_hand.append(probabilities[:, torch.tensor(order).argsort()])
    labels = sorted(runs[0].vocabularies.labels.items)
    expected = [[labels[index]] for index in torch.stack(by_hand).mean(0).argmax(-1).tolist()]
    gold = data.labels("dev")
    assert metrics["dev"]["accuracy"] == pytest.approx(100 * sum(p == g for p, g in zip(expected, gold)) / len(gold))
    written = (tmp_path / "ensemble" / "predictions" / "dev.conll").read_text().split()
    assert written[0] == "sentence-1" and written[2] == expected[0][0]
    with pytest.raises(SeqTransferError, match="an ensemble of sentence runs has a tagging member"):
        build_ensemble([members[0], tiny_run], data, tmp_path / "mixed")
    from seqtransfer.predictor import load  # the grid's ensemble folder is one model: it predicts and scores as above

    assert load(tmp_path / "ensemble").predict(data.tokens("dev")[:3]) == [labels[0] for labels in expected[:3]]
    assert main(["evaluate", str(tmp_path / "ensemble"), "--file", DEV]) == 0
    assert f"accuracy {metrics['dev']['accuracy']:.2f}" in capsys.readouterr().out


def test_predict_reads_a_tsv_file_by_its_text_field(tmp_path, capsys):
    """A sentence model given a .tsv file labels its text field (the label field, if any, is not read);
    a header without a text field is one error line."""
    output = tmp_path / "run"
    run(["train", "--train", TRAIN, "--dev", DEV, "--epochs", "1", "--output", str(output), "--quiet", *TINY_MODEL])
    capsys.readouterr()
    assert main(["predict", str(output), DEV]) == 0
    lines = capsys.readouterr().out.splitlines()
    texts = [line.split("\t")[0] for line in (FIXTURES / "tiny_sentiment_dev.tsv").read_text().splitlines()[1:]]
    assert [line.split("\t")[1] for line in lines] == texts and {line.split("\t")[0] for line in lines} <= {"pos", "neg"}
    unnamed = tmp_path / "unnamed.tsv"
    unnamed.write_text("sentence\tlabel\nfine\tpos\n", encoding="utf-8")
    assert main(["predict", str(output), str(unnamed)]) == 2
    assert "unnamed.tsv:1: the header names the fields sentence, label, none of them 'text'" in capsys.readouterr().err
