"""Accuracy and share of the errors by kind of token (Twitter markup, numbers, symbols, words)."""

from __future__ import annotations

import pytest

from seqtransfer.analysis.token_kinds import checked_pseudo_labels, token_kind
from seqtransfer.cli import main, run
from seqtransfer.errors import SeqTransferError


@pytest.mark.parametrize(
    "token, kind",
    [
        ("https://t.co/x", "url"),
        ("WWW.example.com", "url"),
        ("@user_1", "mention"),
        ("＠ana", "mention"),
        ("@", "symbol"),
        ("#tbt", "hashtag"),
        ("#1", "hashtag"),
        ("RT", "retweet"),
        ("rt", "retweet"),
        ("RT:", "retweet"),
        ("rtx", "word"),
        ("1,000.50", "number"),
        ("12:30", "number"),
        ("-5", "number"),
        ("$5", "number"),
        ("1/2", "number"),
        ("5%", "number"),
        (".5", "number"),
        ("12-15", "number"),
        ("3rd", "word"),
        ("-", "symbol"),
        (":-)", "symbol"),
        ("😀", "symbol"),
        ("...", "symbol"),
        ("don't", "word"),
    ],
)
def test_each_token_gets_the_first_kind_whose_rule_matches(token, kind):
    assert token_kind(token) == kind


def write_predictions(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(" ".join(row) for row in rows) + "\n\n", encoding="utf-8")
    return path


def test_a_run_scored_on_other_data_is_read_from_its_test_on_folder(tmp_path, capsys):
    rows = [("RT", "X", "NOUN"), ("@ana", "PROPN", "NOUN"), ("I", "PRON", "PRON"), ("love", "VERB", "VERB"), ("#tbt", "X", "X"), ("!", "PUNCT", "NOUN")]
    write_predictions(tmp_path / "run" / "predictions" / "test.conll", [("a", "X", "X")])  # the source data's test set
    write_predictions(tmp_path / "run" / "test-on-tweets" / "test.conll", rows)
    results = run(["analyze", "tokens", str(tmp_path / "run"), "--output", str(tmp_path / "out")])
    kinds = results["run"]["kinds"]
    assert results["run"]["accuracy"] == pytest.approx(50.0) and kinds["word"]["accuracy"] == 100.0
    assert kinds["retweet"]["share_of_errors"] == kinds["mention"]["share_of_errors"] == kinds["symbol"]["share_of_errors"] == pytest.approx(100 / 3)
    assert kinds["hashtag"] == {"tokens": 1, "share_of_tokens": pytest.approx(100 / 6), "accuracy": 100.0, "share_of_errors": 0.0}
    assert "| retweet | 16.7 % | 0.0 / 33.3 % |" in (tmp_path / "out" / "tokens.md").read_text(encoding="utf-8")
    write_predictions(tmp_path / "run" / "test-on-more" / "test.conll", rows)
    capsys.readouterr()
    assert main(["analyze", "tokens", str(tmp_path / "run")]) == 2
    assert "scored on 2 other datasets" in capsys.readouterr().err
    assert main(["analyze", "tokens", str(tmp_path / "nothing")]) == 2
    assert "prediction file not found" in capsys.readouterr().err
    empty = write_predictions(tmp_path / "empty.conll", [])
    assert main(["analyze", "tokens", str(empty)]) == 2 and "no tokens" in capsys.readouterr().err


def test_pseudo_labels_are_checked_against_the_gold_labels_of_their_sentences(tmp_path):
    gold_tokens = [["RT", "@ana", "hi"], ["good", "day"], ["good", "day"]]
    gold_labels = [["X", "PROPN", "INTJ"], ["ADJ", "NOUN"], ["NOUN", "NOUN"]]  # a repeated sentence: the first one's labels
    pseudo = tmp_path / "pseudo-1.conll"
    pseudo.write_text("good\tADJ\nday\tNOUN\n\nRT\tNOUN\n@ana\tNOUN\nhi\tINTJ\n\nnot\tADV\nthere\tADV\n\n", encoding="utf-8")
    with pytest.warns(UserWarning, match="1 of 3 pseudo-labelled sentences are not in the gold data"):
        checked = checked_pseudo_labels(pseudo, gold_tokens, gold_labels)
    assert checked.tokens == [["good", "day"], ["RT", "@ana", "hi"]]
    assert checked.gold == [["ADJ", "NOUN"], ["X", "PROPN", "INTJ"]] and checked.predicted == [["ADJ", "NOUN"], ["NOUN", "NOUN", "INTJ"]]
    pseudo.write_text("a\tX\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match="none of the 1 pseudo-labelled sentences"):
        checked_pseudo_labels(pseudo, [["other"]], [["X"]])
    pseudo.write_text("a X\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match="expected 'word TAB label', found 1 fields"):
        checked_pseudo_labels(pseudo, gold_tokens, gold_labels)
