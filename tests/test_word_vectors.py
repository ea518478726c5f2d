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
