"""`seqtransfer pretrain-lm`: our own tokenizer and small Transformer LM, saved as an encoder folder."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA_ROOT, FIXTURES, TINY_MODEL
from test_parser import error_line

import seqtransfer
from seqtransfer.cli import run
from seqtransfer.workflows.pretraining import LanguageModelSettings, masked_batch, train_tokenizer

LINES = [
    "I love this so much",
    "@user lol that was great",
    "what a day !!",
    "see you at the game tonight",
    "no way this is real",
    "good morning everyone",
    "the cat sleeps on the sofa",
    "we are going to the beach",
    "John lives in New York",
    "Mary works for Apple",
]
TINY_LM = ["--vocabulary-size", "120", "--hidden", "16", "--layers", "1", "--heads", "2", "--intermediate", "32", "--epochs", "2", "--held-out", "0.2", "--quiet"]


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    path = tmp_path_factory.mktemp("lm") / "tweets.txt"
    path.write_text("\n".join(LINES * 4) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("objective", ["masked", "causal"])
def test_a_pretrained_lm_is_an_encoder_for_features_and_fine_tuning(text, tmp_path, objective):
    summary = run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "lm"), "--objective", objective, *TINY_LM])
    folder = tmp_path / "lm"
    assert {"config.json", "model.safetensors", "tokenizer.json", "pretraining.json"} <= {path.name for path in folder.iterdir()}
    assert not (tmp_path / "lm.partial").exists()
    saved = json.loads((folder / "pretraining.json").read_text(encoding="utf-8"))
    assert saved["objective"] == objective and saved["held_out_perplexity"] == summary["held_out_perplexity"] > 1
    assert 0 < summary["parameters"] < 100_000 and len(saved["history"]) == 2 and saved["seconds"] >= 0 and saved["peak_rss_megabytes"] > 0
    assert saved["device"].startswith("cpu")
    for mode in ("features", "finetune"):
        run(
            [
                "train",
                "--train",
                str(FIXTURES / "tiny_ner_train.conll"),
                "--dev",
                str(FIXTURES / "tiny_ner_dev.conll"),
                "--columns",
                "word,ner",
                "--epochs",
                "1",
                "--output",
                str(tmp_path / mode),
                "--quiet",
                *TINY_MODEL,
                f"model.encoder={folder}",
                f"model.encoder_mode={mode}",
            ]
        )
        assert len(seqtransfer.load(tmp_path / mode).predict([["John", "loves", "Paris"]])[0]) == 3


def test_same_seed_same_language_model(text, tmp_path):
    first = run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "a"), *TINY_LM])
    second = run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "b"), *TINY_LM])
    assert first["held_out_perplexity"] == second["held_out_perplexity"]
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()


def test_a_conll_files_words_train_the_same_lm_as_its_text(text, tmp_path, capsys):
    conll = tmp_path / "tweets.conll"
    conll.write_text("".join("".join(f"{word}\tO\n" for word in line.split()) + "\n" for line in LINES * 4), encoding="utf-8")
    run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "from-text"), *TINY_LM])
    run(["pretrain-lm", "--text", str(conll), "--word-column", "1", "--output", str(tmp_path / "from-conll"), *TINY_LM])
    assert (tmp_path / "from-text" / "model.safetensors").read_bytes() == (tmp_path / "from-conll" / "model.safetensors").read_bytes()
    assert error_line(["pretrain-lm", "--text", str(conll), "--output", str(tmp_path / "lm"), *TINY_LM], capsys).count("set --word-column N") == 1


def test_an_interrupted_pretraining_resumes_from_its_partial_folder(text, tmp_path, monkeypatch, capsys):
    from seqtransfer.workflows import pretraining as module

    original = module.perplexity
    calls = {"count": 0}

    def failing(model, batches):
        calls["count"] += 1
        if calls["count"] == 3:  # after both epochs were scored and checkpointed: the final scoring
            raise KeyboardInterrupt
        return original(model, batches)

    monkeypatch.setattr(module, "perplexity", failing)
    with pytest.raises(KeyboardInterrupt):
        run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "lm"), *TINY_LM])
    assert (tmp_path / "lm.partial").is_dir() and not (tmp_path / "lm").exists()
    monkeypatch.setattr(module, "perplexity", original)
    capsys.readouterr()
    summary = run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "lm"), *TINY_LM])
    assert "resuming after epoch 2" in capsys.readouterr().out and summary["best_epoch"] >= 1 and (tmp_path / "lm" / "config.json").is_file()


def test_masking_follows_bert_and_skips_special_tokens():
    tokenizer = train_tokenizer(LINES, 120)
    sequences = [np.asarray(ids) for ids in tokenizer(LINES * 20)["input_ids"]]
    batch = masked_batch(sequences, np.random.default_rng(0), LanguageModelSettings(), tokenizer.mask_token_id, len(tokenizer), np.array(tokenizer.all_special_ids))
    chosen = batch.labels != -100
    share = chosen.sum().item() / (batch.attention_mask.sum().item() - 2 * len(sequences))
    assert 0.1 < share < 0.2
    assert not np.isin(batch.labels[chosen].numpy(), tokenizer.all_special_ids).any()
    masked = (batch.input_ids[chosen] == tokenizer.mask_token_id).float().mean().item()
    assert 0.7 < masked < 0.9


@pytest.mark.skipif(not (DATA_ROOT / "tweets_unlabeled").is_dir(), reason="shared datasets not found")
def test_the_test_tweets_stay_out_of_tweets_unlabeled():
    from seqtransfer.corpora.unlabeled import read_text_lines

    lines, left_out, repeats = read_text_lines("tweets_unlabeled")
    assert left_out and all(path.split("/")[-1].startswith("test") for path in left_out)
    kept, none, no_repeats = read_text_lines("tweets_unlabeled", keep_test=True)
    assert none == [] and no_repeats == 0 and len(kept) > len(lines) > 10_000


def test_a_test_tweet_that_recurs_in_a_training_file_stays_out_too(tmp_path):
    from seqtransfer.corpora.unlabeled import read_text_lines

    folder = tmp_path / "tweets_unlabeled" / "tweeteval" / "hate"
    folder.mkdir(parents=True)
    (folder / "train_text.txt").write_text("a training tweet\n  the same tweet in both  \nanother one\n", encoding="utf-8")
    (folder / "test_text.txt").write_text("the same tweet in both\na test tweet\n", encoding="utf-8")
    lines, left_out, repeats = read_text_lines("tweets_unlabeled", tmp_path)
    assert lines == ["a training tweet", "another one"] and repeats == 1 and len(left_out) == 1
    assert len(read_text_lines("tweets_unlabeled", tmp_path, keep_test=True)[0]) == 5


@pytest.mark.parametrize(
    "option, value, expected", [("--heads", "3", "--heads must be"), ("--held-out", "1.5", "--held-out: must be between 0 and 1"), ("--text", "missing.txt", "missing.txt: file not found")]
)
def test_bad_pretraining_settings_are_one_line(text, tmp_path, capsys, option, value, expected):
    arguments = ["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "lm"), *TINY_LM]
    arguments[arguments.index(option) + 1] = value
    assert expected in error_line(arguments, capsys) and not (tmp_path / "lm").exists()


def test_a_partial_folder_resumes_only_the_run_that_left_it(text, tmp_path, monkeypatch, capsys):
    """An interrupted run's OUTPUT.partial records its text and settings: the same command resumes it;
    other text or other settings are one line (resuming would train one tokenizer's weights under another's)."""

    def interrupted(*arguments, **keywords):  # as a Ctrl-C in the first epoch
        raise KeyboardInterrupt

    monkeypatch.setattr("seqtransfer.workflows.pretraining.fit", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "lm"), *TINY_LM])
    assert json.loads((tmp_path / "lm.partial" / "settings.json").read_text())["settings"]["objective"] == "masked"
    other = tmp_path / "other.txt"
    other.write_text("\n".join(line.upper() + " !" for line in LINES * 4) + "\n", encoding="utf-8")
    for arguments, differing in (([str(other)], "the text"), ([str(text), "--objective", "causal"], "settings.objective"), ([str(text), "--seed", "2"], "training.seed")):
        error = error_line(["pretrain-lm", "--text", *arguments, "--output", str(tmp_path / "lm"), *TINY_LM], capsys)
        assert "holds an interrupted run with other settings" in error and differing in error


def test_what_pretraining_cannot_learn_or_score_is_one_line_and_leaves_nothing(tmp_path, capsys):
    letters = tmp_path / "letters.txt"  # two one-letter lines: the held-out one's single sub-word is not masked at seed 1
    letters.write_text("a\nb\n", encoding="utf-8")
    older = tmp_path / "older.partial"  # an interrupted run of a version that kept no settings.json
    older.mkdir()
    (older / "tensors.safetensors").write_bytes(b"")
    cases = {
        "a held-out line with nothing to predict": ([str(letters)], "the held-out lines give no sub-word to predict"),
        "an unknown corpus name": (["mytweets"], "is neither a file, a raw corpus nor a registered dataset"),
        "a dataset's unknown split": (["tpos:devv"], "'devv' is neither a split nor a task of dataset 'tpos'"),
    }
    for arguments, message in cases.values():
        assert message in error_line(["pretrain-lm", "--text", *arguments, "--output", str(tmp_path / "lm"), *TINY_LM], capsys)
        assert not (tmp_path / "lm").exists() and not (tmp_path / "lm.partial").exists()
    text = tmp_path / "text.txt"
    text.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    assert "holds an interrupted run of an earlier version" in error_line(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "older"), *TINY_LM], capsys)


def test_the_output_must_be_a_new_folder(text, tmp_path, capsys):
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("x", encoding="utf-8")
    for output, message in (("a-file", "--output is a file"), ("full", "--output is a folder with files"), (" ", "--output is empty")):
        assert message in error_line(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / output) if output.strip() else output, *TINY_LM], capsys)


def test_a_high_held_out_share_keeps_a_training_line_and_the_log_shows_perplexity(text, tmp_path, capsys):
    summary = run(["pretrain-lm", "--text", str(text), "--output", str(tmp_path / "lm"), *[value if value != "0.2" else "0.99" for value in TINY_LM]])
    assert summary["training_lines"] >= 4 and summary["held_out_lines"] == len(LINES) - 1  # one distinct line (repeated 4 times) trains
    assert "held-out perplexity" in capsys.readouterr().out
    from seqtransfer.errors import SeqTransferError, SeqTransferWarning

    one_line = tmp_path / "one-line.txt"  # fails once read: the warning comes before
    one_line.write_text("just this\n", encoding="utf-8")
    with pytest.warns(SeqTransferWarning, match="--keep-test keeps a raw corpus's test files"), pytest.raises(SeqTransferError, match="fewer than two distinct lines"):
        run(["pretrain-lm", "--text", str(one_line), "--output", str(tmp_path / "kept"), "--keep-test", *TINY_LM])
