"""Finished runs a grid must not keep: those trained on an encoder folder whose content has changed
since (our own LM pretrained again at the same path). A run's identity is its settings, which name
the folder, not its content; the hash the run recorded tells the two apart."""

from __future__ import annotations

import contextlib
import fcntl
import functools
from collections.abc import Callable, Iterator
from pathlib import Path

from seqtransfer import rundir
from seqtransfer.embeddings.transformer import encoder_fingerprint
from seqtransfer.errors import SeqTransferError


def stale_encoder(directory: str | Path, encoder: str | None) -> str | None:
    """The encoder hash the run in ``directory`` recorded, where the folder its settings name
    (``encoder``) holds another encoder now. None where the run reads no encoder, recorded no hash,
    or its encoder is not found here."""
    directory = first_model(Path(directory))
    if not encoder or not (directory / rundir.CONFIG).is_file():
        return None
    try:
        now = {encoder_fingerprint(encoder), encoder_fingerprint(encoder, with_training_report=True)}  # runs before 2026-11-26 hashed the report too
        recorded = recorded_hash(str(directory), (directory / rundir.CONFIG).stat().st_mtime_ns)
    except (SeqTransferError, OSError):  # not found or unreadable here: the run that needs it will say so
        return None
    return recorded if recorded and recorded not in now else None


RUN_LOCK = ".lock"  # a run directory's lock: the grid trains the run holding it (runner.execute_task)


def first_model(directory: Path) -> Path:
    """The folder whose settings say which encoder a run read: the run's own, or a self-labelling run's
    first model (its top folder holds the rounds, not a config). Not ``run_members.first_member``: a
    self-labelling run names its members only once its rounds are done, and an unfinished one counts too."""
    first = directory / "round-0" / "model-1"
    return first if not (directory / rundir.CONFIG).is_file() and (first / rundir.CONFIG).is_file() else directory


@functools.lru_cache(maxsize=4096)
def recorded_hash(directory: str, config_time: int) -> str | None:
    """The encoder hash a run's config.yaml holds, read once per state of the file (a grid asks for each run several times)."""
    return rundir.read_saved_config(Path(directory)).model.encoder_hash


def set_stale_run_aside(directory: str | Path, encoder: str | None, echo: Callable[[str], None] | None) -> None:
    """Move a run trained on another encoder (``stale_encoder``) beside its folder, so that the cell
    (or search trial) trains again in its place; the old run stays readable there. An unfinished one
    too: resumed, it would stop on its settings' other encoder hash, on every run of the grid; but not
    one another grid is training now (it holds the run's lock). Another grid may move it first: then
    there is nothing left to move."""
    directory = Path(directory)
    recorded = stale_encoder(directory, encoder)
    if not recorded:
        return
    finished = (directory / rundir.METRICS).is_file()
    with contextlib.ExitStack() as held:
        if not finished and not held.enter_context(run_not_in_use(directory)):
            return
        aside = free_name(directory.with_name(f"{directory.name}.encoder-{recorded[:12]}"))
        try:
            directory.rename(aside)
        except FileNotFoundError:
            return
    if echo:
        echo(f"{directory} was {'trained' if finished else 'started (unfinished)'} on another encoder at {encoder} (hash {recorded[:12]}): moved to {aside}, training again")


@contextlib.contextmanager
def run_not_in_use(directory: Path) -> Iterator[bool]:
    """Whether no other process holds the run's lock (``runner.execute_task`` trains under it); held while in the block."""
    lock_path = directory / RUN_LOCK
    if not lock_path.is_file():
        yield True
        return
    with open(lock_path) as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


def free_name(path: Path) -> Path:
    """``path``, or ``path.2``, ``path.3``, ... where it is taken (the same old encoder set aside twice)."""
    candidate, number = path, 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}.{number}")
    return candidate
