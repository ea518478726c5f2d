"""seqtransfer word-vectors (issue 52): gensim's word2vec / fastText on the text seqtransfer reads,
written as a vector file a tagger loads with model.embeddings; reproducible; bad input is one line."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, TINY_MODEL

pytest.importorskip("gensim")

NER = FIXTURES / "tiny_ner_train.conll"


def test_vectors_of_our_own_are_reproducible_and_a_tagger_reads_them(tmp_path):
    from seqtransfer.cli import run

    text = tmp_path / "text.txt"
    text.write_text("".join(f"John lives in New York .\nMary lives in London {'.' * (line % 2 + 1)}\n" for line in range(30)), encoding="utf-8")
    arguments = ["--text", str(text), "--dimension", "8", "--min-count", "1", "--epochs", "2"]
    first = run(["word-vectors", *arguments, "--output", str(tmp_path / "a.txt")])
    second = run(["word-vectors", *arguments, "--output", str(tmp_path / "b.txt")])
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()  # one thread and a seed: the same vectors
    header, *rows = (tmp_path / "a.txt").read_text(encoding="utf-8").splitlines()
    assert header == f"{first['words']} 8" and first["words"] == second["words"] == 9 and len(rows) == 9
    assert {row.split(" ")[0] for row in rows} == {"john", "mary", "lives", "in", "new", "york", "london", ".", ".."}  # lower-cased by default
    assert json.loads((tmp_path / "a.txt.json").read_text())["tokens"] == 330
    dev = str(FIXTURES / "tiny_ner_dev.conll")
    metrics = run(
        ["train", "--train", str(NER), "--dev", dev, "--epochs", "1", "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL, f"model.embeddings={tmp_path / 'a.txt'}", "model.word_dimension=8"]
    )
    assert 0 <= metrics["dev"]["f1"] <= 100


def test_fasttext_vectors_and_several_texts(tmp_path):
    from seqtransfer.cli import run

    text = tmp_path / "text.txt"
    text.write_text("Some Words here\nSome more Words\n", encoding="utf-8")
    other = tmp_path / "other.txt"
    other.write_text("other words\nand more words\n", encoding="utf-8")
    record = run(["word-vectors", "--text", str(text), "--text", str(other), "--min-count", "1", "--method", "fasttext", "--dimension", "4", "--cased", "--output", str(tmp_path / "v.txt")])
    assert record["method"] == "fasttext" and record["sentences"] == 4 and record["words"] == 7  # Some, Words, here, more, other, words, and: the case kept and not record["lowercase"]


def test_fasttext_gives_unseen_words_their_sub_word_vectors(tmp_path):
    from gensim.models import FastText, KeyedVectors

    from seqtransfer.cli import run

    text = tmp_path / "text.txt"
    text.write_text("".join("the walking talking dogs\nwalked talked dog\n" for _ in range(5)), encoding="utf-8")
    unseen = tmp_path / "test.txt"
    unseen.write_text("Walker dogs\ndog\n", encoding="utf-8")
    arguments = ["--text", str(text), "--min-count", "1", "--method", "fasttext", "--dimension", "6", "--epochs", "2"]
    record = run(["word-vectors", *arguments, "--words-of", str(unseen), "--output", str(tmp_path / "v.txt")])
    plain = run(["word-vectors", *arguments, "--output", str(tmp_path / "plain.txt")])
    assert record["words"] == plain["words"] == 7 and record["words_from_subwords"] == 1  # "walker" (lower-cased) is new; "dogs" was trained
    vectors, trained = KeyedVectors.load_word2vec_format(tmp_path / "v.txt"), KeyedVectors.load_word2vec_format(tmp_path / "plain.txt")
    assert len(vectors) == 8 and "walker" in vectors and "walker" not in trained
    assert all((vectors[word] == trained[word]).all() for word in trained.index_to_key)  # the trained words' vectors unchanged
    model = FastText(vector_size=6, window=5, min_count=1, epochs=2, seed=1, workers=1, sg=1, negative=5)
    sentences = [line.split() for line in text.read_text(encoding="utf-8").lower().splitlines()]
    model.build_vocab(sentences)
    model.train(sentences, total_examples=model.corpus_count, epochs=2)
    assert abs(vectors["walker"] - model.wv["walker"]).max() < 1e-5  # what gensim's fastText gives the unseen word (text format: 6 digits)


def test_words_of_needs_fasttext(tmp_path, capsys):
    from seqtransfer.cli import main

    text = tmp_path / "text.txt"
    text.write_text("a b c\nd e f\n", encoding="utf-8")
    assert main(["word-vectors", "--text", str(text), "--words-of", str(text), "--output", str(tmp_path / "v.txt")]) != 0
    error = capsys.readouterr().err
    assert "--words-of needs --method fasttext" in error and "Traceback" not in error and not (tmp_path / "v.txt").exists()


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--output", "{tmp}"], "--output is a folder"),
        (["--output", "{tmp}/missing/v.txt"], "--output's folder does not exist"),
        (["--output", "{tmp}/v.txt", "--min-count", "1000"], "no word occurs 1000 times or more"),
        (["--output", "{tmp}/v.txt", "--dimension", "0"], "--dimension"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, arguments, message):
    from seqtransfer.cli import main

    text = tmp_path / "text.txt"
    text.write_text("a b c\nd e f\n", encoding="utf-8")
    assert main(["word-vectors", "--text", str(text), *(argument.replace("{tmp}", str(tmp_path)) for argument in arguments)]) != 0
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error and len(error.strip().splitlines()) == 1
    assert not (tmp_path / "v.txt").exists() and not list(tmp_path.glob("*.partial"))
