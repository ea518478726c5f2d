"""Column-file reader and writer: layouts, separators, -DOCSTART-, round trip, every error path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seqtransfer.data.conll import infer_columns, read_conll, write_conll
from seqtransfer.data.corpus import Sentence
from seqtransfer.errors import SeqTransferError, SeqTransferWarning

FIXTURES = Path(__file__).parent / "fixtures"


def test_space_separated_four_columns_with_docstart():
    sentences = read_conll(FIXTURES / "conll_docstart.txt", ["word", "pos", "chunk", "ner"])
    assert [sentence.tokens for sentence in sentences] == [["EU", "rejects", "German", "call"], ["Peter", "Blackburn"], ["BRUSSELS", "1996-08-22"]]
    assert sentences[0].columns["ner"] == ["I-ORG", "O", "I-MISC", "O"]
    assert sentences[2].columns["pos"] == ["NNP", "CD"]
    assert [sentence.line for sentence in sentences] == [3, 8, 13]
    assert sentences[0].source == str(FIXTURES / "conll_docstart.txt")


def test_inferred_column_names():
    sentences = read_conll(FIXTURES / "conll_docstart.txt")
    assert set(sentences[0].columns) == {"col1", "col2", "label"}
    assert infer_columns(2) == ["word", "label"]
    assert infer_columns(4) == ["word", "col1", "col2", "label"]


def test_ignored_column():
    sentences = read_conll(FIXTURES / "conll_docstart.txt", ["word", "_", "_", "ner"])
    assert list(sentences[1].columns) == ["ner"]


def test_tab_only_separator_lines_and_unicode_space_token():
    sentences = read_conll(FIXTURES / "conll_tabs.conll", ["word", "ner"])
    assert [len(sentence) for sentence in sentences] == [4, 2, 2]
    assert sentences[2].tokens == ["Building", "\u00a0"]  # U+00A0 is a token, not a separator
    assert sentences[2].columns["ner"] == ["B-creative-work", "O"]


def test_round_trip(tmp_path):
    original = read_conll(FIXTURES / "conll_docstart.txt", ["word", "pos", "chunk", "ner"])
    target = tmp_path / "out" / "copy.conll"
    write_conll(target, original, ["word", "pos", "chunk", "ner"])
    assert target.read_text(encoding="utf-8").startswith("EU\tNNP\tI-NP\tI-ORG\n")
    again = read_conll(target, ["word", "pos", "chunk", "ner"])
    assert [(s.tokens, s.columns) for s in again] == [(s.tokens, s.columns) for s in original]
    assert [path.name for path in target.parent.iterdir()] == ["copy.conll"]  # no temporary left


def test_writer_rejects_values_that_cannot_read_back(tmp_path):
    sentence = Sentence(tokens=["New York"], columns={"ner": ["B-LOC"]}, source="in.conll", line=7)
    with pytest.raises(SeqTransferError, match=r"in\.conll:7: .*'New York'"):
        write_conll(tmp_path / "out.conll", [sentence], ["word", "ner"])
    assert not (tmp_path / "out.conll").exists()


def test_writer_missing_column_is_user_error(tmp_path):
    sentence = Sentence(tokens=["a"], columns={"pos": ["X"]}, source="in.conll", line=3)
    with pytest.raises(SeqTransferError, match=r"in\.conll:3: sentence has no column 'ner'"):
        write_conll(tmp_path / "out.conll", [sentence], ["word", "ner"])


def assert_error(path: Path, line: int | None, text: str, **options) -> SeqTransferError:
    """Read ``path`` expecting a SeqTransferError that names the file, the line and ``text``."""
    with pytest.raises(SeqTransferError) as caught:
        read_conll(path, **options)
    message = str(caught.value)
    location = str(path) if line is None else f"{path}:{line}:"
    assert message.startswith(location), message
    assert text in message and "(fix: " in message, message
    return caught.value


def test_missing_file(tmp_path):
    assert_error(tmp_path / "nope.conll", None, "file not found")


def test_directory_instead_of_file(tmp_path):
    assert_error(tmp_path, None, "is a folder")


def test_empty_file():
    assert_error(FIXTURES / "empty.conll", None, "no sentences")


def test_only_docstart_is_empty(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("-DOCSTART- -X- O O\n\n\t\n", encoding="utf-8")
    assert_error(path, None, "no sentences")


def test_wrong_column_count():
    error = assert_error(FIXTURES / "wrong_columns.conll", 5, "found 3 columns but expected 2")
    assert error.line == 5


def test_wrong_column_count_against_declared_layout():
    assert_error(FIXTURES / "conll_docstart.txt", 3, "expected 2 (from the column layout word,ner)", columns=["word", "ner"])


def test_latin1_bytes_name_the_line():
    error = assert_error(FIXTURES / "latin1.conll", 1, "is not valid utf-8")
    assert "byte 0xe9" in str(error) and "re-encode" in str(error)


def test_latin1_with_encoding_option():
    sentences = read_conll(FIXTURES / "latin1.conll", encoding="latin-1")
    assert sentences[0].tokens == ["Café", "au", "lait"] and sentences[1].tokens == ["naïve"]


def test_bad_byte_on_a_later_line(tmp_path):
    path = tmp_path / "late.conll"
    path.write_bytes(b"a\tO\nb\tO\n\nc\xff\tO\n")
    assert_error(path, 4, "byte 0xff")


def test_bad_column_layouts():
    assert_error(FIXTURES / "conll_docstart.txt", None, "exactly one 'word'", columns=["pos", "ner"])
    assert_error(FIXTURES / "conll_docstart.txt", None, "repeats pos", columns=["word", "pos", "pos", "ner"])


def test_unknown_encoding():
    assert_error(FIXTURES / "latin1.conll", None, "unknown encoding", encoding="klingon")


def test_reads_conll2003_train():
    root = os.environ.get("SEQTRANSFER_DATA")
    path = Path(root or "/nonexistent") / "conll2003_en" / "train.txt"
    if not path.is_file():
        pytest.skip("SEQTRANSFER_DATA with conll2003_en not available")
    sentences = read_conll(path, ["word", "pos", "chunk", "ner"])
    assert len(sentences) == 14041


def test_comment_lines_before_sentences_are_left_out_and_a_hash_token_stays(tmp_path):
    """Tools that write column files often add CoNLL-U style comments; a tweet's '#' stays a token."""
    path = tmp_path / "commented.conll"
    path.write_text("# sent_id = 1\n# text = John loves #\nJohn\tB-PER\nloves\tO\n#\tO\n\n# a note\n#\tO\nMary\tB-PER\n", encoding="utf-8")
    with pytest.warns(SeqTransferWarning, match=r"3 comment lines before sentences \(lines 1, 2, 7"):
        sentences = read_conll(path)
    assert [sentence.tokens for sentence in sentences] == [["John", "loves", "#"], ["#", "Mary"]]
    spaced = tmp_path / "spaced.conll"
    spaced.write_text("# O\nlove O\n", encoding="utf-8")  # space-separated: '# O' is a token line
    assert [sentence.tokens for sentence in read_conll(spaced)] == [["#", "love"]]
    mixed = tmp_path / "mixed.conll"  # TABs on some lines: a line without one splits on spaces, '#love O' too
    mixed.write_text("#love O\nit\tO\n\n# O\nyes\tO\n", encoding="utf-8")
    assert [sentence.tokens for sentence in read_conll(mixed)] == [["#love", "it"], ["#", "yes"]]
    one_column = tmp_path / "words.conll"  # forced TABs, one column: every line is one token
    one_column.write_text("#hashtag\nwow\n\n# a note\nyes\n", encoding="utf-8")
    assert [sentence.tokens for sentence in read_conll(one_column, ["word"], separator="tab")] == [["#hashtag", "wow"], ["# a note", "yes"]]
    features = tmp_path / "features.conll"  # '#' TAB feature TAB label: a token whose feature holds '='
    features.write_text("#\tNumber=Sing\tO\nit\t_\tO\n", encoding="utf-8")
    assert [sentence.tokens for sentence in read_conll(features)] == [["#", "it"]]
