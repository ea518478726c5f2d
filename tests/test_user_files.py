"""A user's own messy column files just work, with a warning that says what was repaired or inferred."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import FIXTURES, TINY_MODEL

from seqtransfer.cli import main, run
from seqtransfer.data.conll import EMPTY_TOKEN, read_conll
from seqtransfer.errors import SeqTransferError, SeqTransferWarning

TABBED = "John\tB-person\nke s\tO\n\tO\nloves\tO\n\nParis\tB-location\n😀 \tO\n"


def train_arguments(train, output, *extra):
    return ["train", "--train", str(train), "--dev", str(FIXTURES / "tiny_ner_dev.conll"), "--output", str(output), "--quiet", "--epochs", "1", *TINY_MODEL, *extra]


def test_tab_separated_tokens_keep_their_spaces_and_empty_tokens_are_placeholders(tmp_path):
    path = tmp_path / "tabbed.conll"
    path.write_text(TABBED, encoding="utf-8")
    with pytest.warns(SeqTransferWarning, match=r"1 empty tokens \(lines 3\)"):
        sentences = read_conll(path, ["word", "ner"])
    assert sentences[0].tokens == ["John", "ke s", EMPTY_TOKEN, "loves"] and sentences[1].tokens == ["Paris", "😀"]
    with pytest.raises(SeqTransferError, match=r"tabbed\.conll:2: found 3 columns"):
        read_conll(path, ["word", "ner"], separator="space")


def test_training_logs_the_repair_as_one_warning_line(tmp_path, capsys):
    path = tmp_path / "tabbed.conll"
    path.write_text(TABBED, encoding="utf-8")
    assert main(train_arguments(path, tmp_path / "run", "--columns", "word,ner")) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if "empty tokens" in line]
    logged = [line for line in (tmp_path / "run" / "log.txt").read_text().splitlines() if "empty tokens" in line]
    assert len(printed) == 1 and printed[0].startswith("warning: ") and logged == printed


def test_predict_prints_the_repair_as_one_warning_line(tiny_run, tmp_path, capsys):
    path = tmp_path / "tabbed.conll"
    path.write_text(TABBED, encoding="utf-8")
    assert main(["predict", str(tiny_run), str(path), "--format", "conll", "--columns", "word,ner"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "empty tokens" in line]
    assert len(warnings) == 1 and warnings[0].startswith("seqtransfer: warning: ")


@pytest.mark.parametrize(
    "text,expected",
    [
        ("\tEU\tB-ORG\nrejects\tO\n", [["EU", "rejects"]]),  # a leading TAB that is indentation
        ("EU\tB-ORG\n\tO\n", [["EU", EMPTY_TOKEN]]),  # a leading TAB that is an empty token
    ],
)
def test_leading_tabs_are_told_apart_by_the_column_count(tmp_path, text, expected):
    path = tmp_path / "file.conll"
    path.write_text(text, encoding="utf-8")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeqTransferWarning)
        assert [s.tokens for s in read_conll(path, ["word", "ner"])] == expected


def test_forced_tab_separator_does_not_split_spaces(tmp_path):
    path = tmp_path / "file.conll"
    path.write_text("EU\tB-ORG\nrejects O\n", encoding="utf-8")
    with pytest.raises(SeqTransferError, match="found 1 columns"):
        read_conll(path, ["word", "ner"], separator="tab")


@pytest.mark.parametrize(
    "tags,scheme,metric",
    [
        (["B-person", "I-person", "O", "B-location"], "iob2", "span_f1"),
        (["I-person", "I-person", "O", "I-location"], "iob1", "span_f1"),
        (["S-person", "O", "B-location", "E-location"], "bioes", "span_f1"),
        (["NNP", "VBZ", "NNP", "."], "none", "accuracy"),
    ],
)
def test_scheme_is_inferred_printed_and_saved(tmp_path, capsys, tags, scheme, metric):
    path = tmp_path / "train.conll"
    path.write_text("".join(f"w{index}\t{tag}\n" for index, tag in enumerate(tags)) + "\n" + "".join(f"v{index}\t{tag}\n" for index, tag in enumerate(tags)), encoding="utf-8")
    metrics = run(["train", "--train", str(path), "--columns", "word,ner", "--output", str(tmp_path / "run"), "--quiet", "--epochs", "1", *TINY_MODEL])
    assert f"look like {scheme}" in capsys.readouterr().out
    assert metrics["metric"] == metric and (("f1" in metrics["dev"]) == (metric == "span_f1"))
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["data"]
    assert saved["scheme"] == scheme and saved["metric"] == metric


def test_broken_tags_are_read_as_conlleval_reads_them_with_one_warning(tmp_path, capsys):
    path = tmp_path / "broken.conll"
    path.write_text("John\tB-person\nlives\tO\nin\tI-location\nYork\tI-location\n\nMary\tI-person\nsleeps\tO\n", encoding="utf-8")
    assert main(train_arguments(path, tmp_path / "run", "--columns", "word,ner", "--scheme", "iob2")) == 0
    output = capsys.readouterr().out
    warnings = [line for line in output.splitlines() if "break the iob2 order" in line]
    assert len(warnings) == 1 and "2 tags" in warnings[0] and f"{path}:3" in warnings[0]
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["metric"] == "span_f1"


def test_evaluate_scores_broken_tags_like_conlleval(tiny_run, tmp_path, capsys):
    """Gold with an I- chunk start: the chunk counts (conlleval), and the score equals the file's own chunks."""
    from seqtransfer.data.schemes import chunks

    path = tmp_path / "gold.conll"
    path.write_text("John\tI-person\nloves\tO\nParis\tI-location\n", encoding="utf-8")
    scores = run(["evaluate", str(tiny_run), "--file", str(path), "--columns", "word,ner", "--scheme", "iob2"])
    assert scores["gold_count"] == len(chunks(["I-person", "O", "I-location"])) == 2
    assert "break the iob2 order" in capsys.readouterr().err
