"""Folders of models that predict together: a self-labelling run's final models or an ensemble,
named in the folder's ``members.json`` (by their paths relative to it) with how they combine.
``rundir`` imports these back, so ``rundir.read_members`` and the rest still work."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_json, write_json

MEMBERS = "members.json"  # a folder of models that predict together (a self-labelling run, workflows/selflabel.py; an ensemble, commands/ensemble.py)
COMBINATIONS = ("single", "vote", "confident", "average")  # how a folder's models predict together (workflows/selflabel.py combine)
MEMBERS_HINT = "it is written by `seqtransfer selflabel` or `seqtransfer ensemble`: run it again"


def read_members(directory: str | Path) -> tuple[list[Path], str] | None:
    """The models of a folder that predict together (a self-labelling run's or an ensemble's
    ``members.json``) and how they combine (``COMBINATIONS``); None for a plain run directory."""
    described = read_members_file(directory)
    if described is None:
        return None
    path = Path(directory) / MEMBERS
    members = described.get("members")
    if not isinstance(members, list) or not members or not all(isinstance(member, str) for member in members) or described.get("combination") not in COMBINATIONS:
        raise SeqTransferError(f"members.json must list 'members' and a 'combination' ({', '.join(COMBINATIONS)})", path=path, hint=MEMBERS_HINT)
    for member in members:
        if not (path.parent / member).is_dir():
            raise SeqTransferError(f"its model {member} is not there", path=path, hint="keep the folder and its runs together (members.json names them relative to it), or make it again")
    return [path.parent / member for member in members], described["combination"]


def read_members_file(directory: str | Path) -> dict | None:
    """A folder's ``members.json`` as a dict; None when there is none; one line when it is not a JSON object."""
    path = Path(directory) / MEMBERS
    if not path.is_file():
        return None
    try:
        described = read_json(path)
    except (ValueError, UnicodeDecodeError) as error:
        raise SeqTransferError(f"members.json is not readable JSON ({error})", path=path, hint=MEMBERS_HINT) from None
    if not isinstance(described, dict):
        raise SeqTransferError("members.json must hold a JSON object", path=path, hint=MEMBERS_HINT)
    return described


def write_members(directory: Path, members: list[Path], combination: str, **described) -> None:
    """Make ``directory`` a folder of models that predict together: ``members.json`` names them by
    their paths relative to it (the folder and its members move together) and how they combine."""
    relative = [os.path.relpath(Path(member).resolve(), Path(directory).resolve()) for member in members]
    write_json(Path(directory) / MEMBERS, {**described, "combination": combination, "members": relative})


def is_ensemble(directory: str | Path) -> bool:
    """Whether ``directory`` is an ensemble's folder (``seqtransfer ensemble``, a grid's ensemble cell)."""
    described = read_members_file(directory)
    return described is not None and described.get("method") == "ensemble"


def member_directories(directory: str | Path) -> list[Path]:
    """Every model of a folder that predicts together, or the run directory itself."""
    members = read_members(directory)
    return members[0] if members else [Path(directory)]


def first_member(directory: str | Path) -> Path:
    """What a transfer from ``directory`` starts from: the run itself or, for a folder of models that
    predict together (a self-labelling run), its first final model (tri-training's first of three;
    self-training's only one)."""
    members = read_members(directory)
    return members[0][0] if members else Path(directory)


def run_fingerprint(directory: str | Path) -> str | None:
    """A hash of a finished run's metrics.json (None: not finished): a run trained again in the same folder,
    even with the same settings, writes another (its scores and time), so a folder built from it can tell."""
    try:
        return hashlib.sha256((Path(directory) / "metrics.json").read_bytes()).hexdigest()[:16]
    except FileNotFoundError:
        return None


def members_changed(directory: str | Path) -> bool:
    """Whether a member of an ensemble folder was trained again since the folder was built: its fingerprint
    differs from the one the folder recorded (``member_runs`` in its metrics). A member not here (a store
    pruned, or a member set aside to train again) and a folder built before it recorded them cannot
    tell: unchanged, so that no grid trains members again for an ensemble it cannot check."""
    directory = Path(directory)
    metrics = read_json(directory / "metrics.json")
    members = [sibling_or_path(directory, Path(path)) for path in metrics.get("members", [])]
    recorded = metrics.get("member_runs") or [None] * len(members)
    return any(before is not None and (now := run_fingerprint(path)) is not None and now != before for path, before in zip(members, recorded))


def sibling_or_path(directory: Path, member: Path) -> Path:
    """A member's folder as recorded, or its namesake beside ``directory`` (a grid's runs are siblings)
    where the recorded path does not reach it from here (recorded relative to another working folder)."""
    return directory.parent / member.name if not member.exists() and (directory.parent / member.name).exists() else member
