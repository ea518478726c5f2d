"""CoNLL-U / CoNLL-U Plus reader and writer: ranges, empty nodes, comments, round trip, errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seqtransfer.data.conllu import UD_COLUMNS, read_conllu, write_conllu
from seqtransfer.data.corpus import Sentence
from seqtransfer.errors import SeqTransferError

FIXTURES = Path(__file__).parent / "fixtures"
TOKEN_LINE = "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t0:root\t_\n"


def test_tokens_columns_and_comments():
    first, second = read_conllu(FIXTURES / "sample.conllu")
    assert first.tokens == ["I", "do", "n't", "know", "."]
    assert first.columns["upos"] == ["PRON", "AUX", "PART", "VERB", "PUNCT"]
    assert first.columns["id"] == ["1", "2", "3", "4", "5"]
    assert set(first.columns) == set(UD_COLUMNS) - {"word"}
    assert first.comments == ["newdoc id = doc1", "sent_id = doc1-0001", "text = I don't know."]
    assert second.comments[0] == "sent_id = doc1-0002"  # '#sent_id' without a space
    assert (first.line, second.line) == (4, 13)


def test_ranges_and_empty_nodes_are_kept_aside():
    first, second = read_conllu(FIXTURES / "sample.conllu")
    assert first.extra_lines == [(1, "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_")]
    assert second.tokens == ["Sue", "likes", "coffee", "and", "Bill", "tea"]
    assert [position for position, _ in second.extra_lines] == [5]
    assert second.extra_lines[0][1].startswith("5.1\tlikes")


def test_round_trip_keeps_ranges_empty_nodes_and_comments(tmp_path):
    original = read_conllu(FIXTURES / "sample.conllu")
    target = tmp_path / "copy.conllu"
    write_conllu(target, original)
    expected = (FIXTURES / "sample.conllu").read_text(encoding="utf-8").replace("#sent_id", "# sent_id")
    assert target.read_text(encoding="utf-8") == expected
    again = read_conllu(target)
    assert [(s.tokens, s.columns, s.comments, s.extra_lines) for s in again] == [(s.tokens, s.columns, s.comments, s.extra_lines) for s in original]


def test_conllu_plus_header_and_trailing_tab(tmp_path):
    first, second = read_conllu(FIXTURES / "sample.conllup")
    assert first.tokens == ["jp", "res", ":D"]
    assert list(first.columns) == ["id", "norm", "lemma", "upos", "xpos", "feats"]
    assert first.columns["xpos"] == ["I", "Rgp", "Xe"]
    assert first.comments[0].startswith("global.columns = ")
    assert second.tokens == ["ok"]
    target = tmp_path / "copy.conllup"
    write_conllu(target, [first, second])
    written = target.read_text(encoding="utf-8")
    assert written.startswith("# global.columns = ID TOKEN NORM LEMMA UPOS XPOS FEATS\n# sent_id = s1\n")
    assert [s.columns for s in read_conllu(target)] == [first.columns, second.columns]


def test_writer_fills_missing_columns(tmp_path):
    target = tmp_path / "predicted.conllu"
    write_conllu(target, [Sentence(tokens=["Hi", "there"], columns={"upos": ["INTJ", "ADV"]})])
    assert target.read_text(encoding="utf-8") == "1\tHi\t_\tINTJ\t_\t_\t_\t_\t_\t_\n2\tthere\t_\tADV\t_\t_\t_\t_\t_\t_\n\n"


def test_writer_custom_layout_writes_header(tmp_path):
    target = tmp_path / "small.conllup"
    write_conllu(target, [Sentence(tokens=["Hi"], columns={"upos": ["INTJ"]})], columns=["id", "word", "upos"])
    assert target.read_text(encoding="utf-8") == "# global.columns = ID FORM UPOS\n1\tHi\tINTJ\n\n"


def test_writer_rejects_tab_in_value(tmp_path):
    sentence = Sentence(tokens=["a\tb"], source="x.conllu", line=2)
    with pytest.raises(SeqTransferError, match=r"x\.conllu:2: cannot write word"):
        write_conllu(tmp_path / "out.conllu", [sentence])


def read_error(tmp_path: Path, text: str) -> str:
    """Write ``text`` to a file, read it expecting an error and return the message."""
    path = tmp_path / "bad.conllu"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SeqTransferError) as caught:
        read_conllu(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and "(fix: " in message, message
    return message


def test_wrong_number_of_fields(tmp_path):
    message = read_error(tmp_path, "# text = Hi you\n" + TOKEN_LINE + "2 you you PRON PRP _ 1 obj 1:obj _\n")
    assert message.startswith(f"{tmp_path / 'bad.conllu'}:3: found 1 fields but expected 10")


def test_non_integer_id(tmp_path):
    message = read_error(tmp_path, TOKEN_LINE + TOKEN_LINE.replace("1\tHi", "two\tHi", 1))
    assert ":2: token ID 'two' is not an integer" in message


def test_missing_blank_line_between_sentences(tmp_path):
    message = read_error(tmp_path, TOKEN_LINE + TOKEN_LINE)
    assert ":2: token ID 1 inside a sentence" in message


def test_comment_inside_sentence(tmp_path):
    message = read_error(tmp_path, TOKEN_LINE + "# sent_id = 2\n")
    assert ":2: comment line inside a sentence" in message


def test_bad_global_columns_header(tmp_path):
    message = read_error(tmp_path, "# global.columns = ID LEMMA UPOS\n1\tx\tX\n")
    assert ":1: the global.columns header must name one FORM" in message


def test_empty_missing_folder_and_encoding(tmp_path):
    assert "no sentences found" in read_error(tmp_path, "# only a comment\n\n")
    for path, text in [(tmp_path / "absent.conllu", "file not found"), (tmp_path, "is a folder")]:
        with pytest.raises(SeqTransferError, match=text):
            read_conllu(path)
    latin = tmp_path / "latin.conllu"
    latin.write_bytes(TOKEN_LINE.encode() + b"\n" + TOKEN_LINE.replace("Hi", "Caf\xe9").encode("latin-1"))
    with pytest.raises(SeqTransferError, match=r"latin\.conllu:3: byte 0xe9 is not valid utf-8"):
        read_conllu(latin)


def test_real_ud_dev_file_round_trips_byte_for_byte(tmp_path):
    path = Path(os.environ.get("SEQTRANSFER_DATA", "/nonexistent")) / "ud_english_ewt" / "dev.conllu"
    if not path.is_file():
        pytest.skip("SEQTRANSFER_DATA with ud_english_ewt not available")
    target = tmp_path / "dev.conllu"
    write_conllu(target, read_conllu(path))
    assert target.read_bytes() == path.read_bytes()
