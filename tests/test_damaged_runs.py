"""A truncated, edited or hostile run directory gives one clear line from load, predict and evaluate:
never a traceback, and never a model built before the weights' shapes are checked."""

from __future__ import annotations

import shutil
import struct

import pytest
from conftest import FIXTURES

import seqtransfer
from seqtransfer.cli import main
from seqtransfer.errors import SeqTransferError


def damaged_copy(tiny_run, tmp_path, name: str, content: bytes | str):
    copy = tmp_path / "run"
    shutil.copytree(tiny_run, copy)
    target = copy / name
    target.write_bytes(content if isinstance(content, bytes) else content.encode())
    return copy


def header_only(size: int) -> bytes:
    return struct.pack("<Q", size) + b"{"


CASES = {
    "truncated weights": ("model.safetensors", lambda original: original[:40]),
    "oversized header": ("model.safetensors", lambda original: struct.pack("<Q", 2**40) + original[8:]),
    "bad offsets": ("model.safetensors", lambda original: original.replace(b'"data_offsets":[0,', b'"data_offsets":[9999999,', 1)),
    "corrupt vocabulary": ("vocabulary.json", lambda original: b'{"words": [1, 2'),
    "vocabulary not an object": ("vocabulary.json", lambda original: b"[1, 2, 3]"),
    "yaml not a mapping": ("config.yaml", lambda original: b"- just\n- a list\n"),
    "yaml object tag": ("config.yaml", lambda original: b"!!python/object/apply:os.system ['echo hacked']\n"),
    "sizes that do not match": ("config.yaml", lambda original: original.replace(b"hidden: 16", b"hidden: 32", 1)),
    "a huge size": ("config.yaml", lambda original: original.replace(b"hidden: 16", b"hidden: 2000000", 1)),
    "an odd size": ("config.yaml", lambda original: original.replace(b"hidden: 16", b"hidden: 15", 1)),
    "metrics not json": ("metrics.json", lambda original: b"{oops"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_damaged_run_is_one_clear_line(case, tiny_run, tmp_path, capsys):
    name, damage = CASES[case]
    copy = damaged_copy(tiny_run, tmp_path, name, damage((tiny_run / name).read_bytes()))
    with pytest.raises(SeqTransferError, match=r"damaged|does not hold a mapping|not readable YAML|do not match|must be"):
        seqtransfer.load(copy)
    text = tmp_path / "in.txt"
    text.write_text("John loves Paris\n")
    for arguments in (["predict", str(copy), str(text)], ["evaluate", str(copy), "--file", str(FIXTURES / "tiny_ner_test.conll"), "--columns", "word,ner"]):
        code = main(arguments)
        error = capsys.readouterr().err
        lines = [line for line in error.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and "Traceback" not in error, (case, arguments[0], error)


def test_predict_output_or_input_folder_is_one_line(tiny_run, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("John loves Paris\n")
    for arguments in (
        ["predict", str(tiny_run), str(text), "--output", str(tmp_path)],
        ["predict", str(tiny_run), str(tmp_path)],
        ["predict", str(tiny_run), str(text), "--output", str(text / "under-a-file.txt")],
    ):
        code = main(arguments)
        error = capsys.readouterr().err
        assert code == 2 and len(error.strip().splitlines()) == 1 and "Traceback" not in error, (arguments, error)


def test_train_output_under_a_file_is_one_line(tmp_path, capsys):
    from conftest import tiny_train_arguments

    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    code = main(tiny_train_arguments(blocker / "run", epochs=1))
    error = capsys.readouterr().err
    assert code == 2 and len(error.strip().splitlines()) == 1 and "Traceback" not in error, error
    assert blocker.read_text() == "not a folder"
