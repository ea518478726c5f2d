"""Kept records: an experiment's finished cells in one small JSON-lines file that can be committed.

A results store holds run directories (models, hundreds of MB) and is never committed; a grid
of 3 seeds over several sessions, each on a fresh machine, would start again every time. The
kept file holds only the records (scores, seconds, parameter counts: one line per cell):

    seqtransfer experiment run FILE --seeds 3 --records docs/results/FILE.records.jsonl
    seqtransfer report FILE --records docs/results/FILE.records.jsonl

``experiment run`` skips a cell whose kept record was made by a run of the same settings (the
digest that ends its run id, a hash of the settings and of its source's, matches; the folder's
readable prefix may differ, as it names the target of whichever file trained the run first), unless a run still to train needs
that run's directory (an ensemble member, the filler of a unified dataset), or its record names
source weights other than those of the source now in the store (``source_weights``: a source
trained again, in another session, to other weights; see ``runner.from_another_source``); it trains only the
sources that the remaining runs need, and writes every record of the experiment back to the file.
``report`` shows kept cells beside the store's; a kept cell's significance test needs its
predictions, which stay with the run directory ("no predictions" where they are gone).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from seqtransfer.errors import SeqTransferError
from seqtransfer.files import atomic_write, read_json_lines

CELL_KEYS = ("method", "target", "seed", "source")
SCORE_KEYS = ("dev", "test")


def is_score(value: object) -> bool:
    """A finite score: a number, not a bool, not NaN or infinite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def made_with_other_weights(recorded: str | None, current: str | None) -> bool:
    """Whether a record that names the weights it read (a source run's, a pretrained encoder's
    fingerprint) was made with other weights than those here now: trained again, in another
    session, to other weights. A record naming none (kept before records named their weights),
    and weights not found here, are taken as they are: the run that needs them will say so."""
    return bool(recorded) and bool(current) and recorded != current


def cell_key(record: dict) -> tuple:
    """What makes a record one grid cell: method, target, seed (and the source name of a source run)."""
    return tuple(str(record.get(key)) for key in CELL_KEYS)


def record_order(record: dict) -> tuple:
    return (str(record.get("method")), str(record.get("target")), record.get("seed") or 0, str(record.get("source")))


def run_id_of(record: dict) -> str:
    """The id of the run that made a record (its run directory's name)."""
    return Path(record["run_directory"]).name


def read_kept(path: str | Path, experiment: str | None = None) -> list[dict]:
    """The records of a kept file (of one experiment); a missing file holds none."""
    hint = "each line is one record written by `experiment run --records`"
    records = []
    for number, record in read_json_lines(path, hint):
        if not isinstance(record, dict) or "experiment" not in record or "run_directory" not in record:
            raise SeqTransferError("a record needs 'experiment' and 'run_directory'", path=path, line=number, hint=hint)
        for split in SCORE_KEYS:
            if record.get(split) is not None and not is_score(record[split]):  # None: a split with no labels
                raise SeqTransferError(f"the record's {split!r} score is {record[split]!r}, not a finite number", path=path, line=number, hint="drop the line to train that cell again")
        if experiment is None or record["experiment"] == experiment:
            records.append(record)
    return records


def merge(kept: Iterable[dict], stored: Iterable[dict]) -> list[dict]:
    """One record per cell: ``stored``'s where it has one, else the kept one (``experiment run``: the
    store's runs are the newer; ``report`` passes only the store's records of the file's own runs)."""
    cells = {cell_key(record): record for record in kept}
    cells.update({cell_key(record): record for record in stored})
    return sorted(cells.values(), key=record_order)


def at_selection(records: Iterable[dict], selected: dict[tuple[str, str], dict]) -> list[dict]:
    """The records of cells run at the settings a command runs them: at the setting ``selected``
    holds for their method and target (``experiment run --selected``), else at the file's own."""
    return [record for record in records if record.get("selected_setting") == selected.get((record.get("method"), record.get("target")))]


def selection_of(records: Iterable[dict]) -> dict[tuple[str, str], dict]:
    """(method, target) -> the searched setting the records' cells ran at (none for a file of the experiment file's own settings)."""
    return {(record["method"], record["target"]): record["selected_setting"] for record in records if record.get("selected_setting") is not None}


def write_kept(path: str | Path, records: Sequence[dict]) -> None:
    """Write records as sorted JSON lines (atomically): the kept records of other experiments stay."""
    path = Path(path)
    experiments = {record["experiment"] for record in records}
    others = [record for record in read_kept(path) if record["experiment"] not in experiments]
    lines = [line_of(record) for record in sorted([*others, *records], key=lambda record: (record["experiment"], *record_order(record)))]
    with atomic_write(path) as handle:
        handle.write("".join(f"{line}\n" for line in lines))


@contextlib.contextmanager
def records_lock(path: str | Path) -> Iterator[None]:
    """Hold the records file's folder locked while this process reads, changes and writes the file, so
    that two grids writing one file (other seeds, another --only) keep each other's cells. The folder,
    not the file: a write replaces the file (``atomic_write``), and no lock file is left beside it.
    A local file system's lock: on NFS, flock on a folder may not be supported."""
    folder = Path(path).resolve().parent
    folder.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def add_kept(path: str | Path, experiment: str, records: Sequence[dict], read_at_start: Sequence[dict] | None = None) -> None:
    """Write ``records`` into the file as it is now, under :func:`records_lock`: they replace their cells.
    With ``read_at_start`` (the experiment's records this command read first), the experiment's lines
    become ``records`` and what other processes wrote since: a line of theirs replaces one of ``records``
    read at the start, and a line read at the start that ``records`` left out (dropped) is gone;
    without it, every other line stays."""
    with records_lock(path):
        now = read_kept(path, experiment)
        if read_at_start is None:
            write_kept(path, merge(now, records))
            return
        seen = {line_of(record) for record in read_at_start}
        others = [record for record in now if line_of(record) not in seen]
        unchanged, made_here = [], []
        for record in records:
            (unchanged if line_of(record) in seen else made_here).append(record)
        write_kept(path, merge(merge(unchanged, others), made_here))


def line_of(record: dict) -> str:
    """A record as its line in the file (to compare records read at two times)."""
    return json.dumps(record, sort_keys=True, ensure_ascii=False)
