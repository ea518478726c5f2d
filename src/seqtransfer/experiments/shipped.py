"""The paper experiments that ship with seqtransfer: found by name, listed with what they cost.

``seqtransfer experiment run pretrand-table4`` runs the shipped ``pretrand_table4.yaml`` from an
installed wheel; a path (``experiments/pretrand_table4.yaml`` in a clone, or a user's own file)
still works, and a file in the working folder wins over a shipped one of the same name.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import NamedTuple

from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.kept import read_kept
from seqtransfer.files import SHIPPED_EXPERIMENTS, load_yaml


def shipped_names() -> list[str]:
    """The shipped experiments' names, as the command line takes them (``pretrand-table4``)."""
    return sorted(path.stem.replace("_", "-") for path in SHIPPED_EXPERIMENTS.glob("*.yaml"))


def experiment_file(name_or_path: str | Path) -> Path:
    """The file ``name_or_path`` names: an existing path, else a shipped experiment of that name
    (``pretrand-table4``, ``pretrand_table4`` or ``pretrand_table4.yaml``)."""
    path = Path(name_or_path)
    if path.exists() or len(path.parts) > 1:
        return path
    shipped = SHIPPED_EXPERIMENTS / (path.name.removesuffix(".yaml").replace("-", "_") + ".yaml")
    if shipped.is_file():
        return shipped
    raise SeqTransferError(f"no experiment file or shipped experiment named '{name_or_path}'", path=path, hint=f"give a path, or one of: {', '.join(shipped_names())} (seqtransfer experiment list)")


def shipped_table() -> list[dict[str, str]]:
    """Name, title and measured cost of each shipped experiment (read without checking the grid)."""
    rows = []
    for name in shipped_names():
        values = load_yaml((SHIPPED_EXPERIMENTS / (name.replace("-", "_") + ".yaml")).read_text(encoding="utf-8")) or {}
        rows.append({"name": name, "title": str(values.get("title", "")), "cost": str(values.get("cost", ""))})
    return rows


# An experiment file's stated cost where it names its records file: "N cells recorded (...) trained in H h ... (FILE)".
STATED_COST = re.compile(r'^cost: "(\d+) cells recorded (\(.*?\)) trained in ([\d.]+) h(.*)\((docs/results/\S+\.records\.jsonl)\)"$', re.MULTILINE)
NAMES_RECORDS = re.compile(r'^cost: ".*docs/results/\S+\.records\.jsonl', re.MULTILINE)


class StatedCost(NamedTuple):
    stated: tuple[int, float]  # (cells, hours) the experiment file states
    recorded: tuple[int, float]  # (cells, hours) its records give
    line: str  # the cost line as the records give it


def recorded_cost(records: list[dict], ensembles: Collection[str] = ()) -> tuple[int, float]:
    """(cells, hours) of a records file, as an experiment's ``cost`` states them: a cell is one
    method's record on one target at one seed; the hours sum each run's training once (the
    four records of one multi-task run share its time), source runs not counted, nor the cells of
    ``ensembles`` (methods whose time is their members', each counted in its own cell)."""
    cells = [record for record in records if record.get("method")]
    seconds = {record.get("run_directory") or str(index): 0.0 if record["method"] in ensembles else float(record.get("seconds") or 0.0) for index, record in enumerate(cells)}
    return len(cells), sum(seconds.values()) / 3600


def stated_and_recorded_cost(experiment: Path, root: Path) -> StatedCost | None:
    """The cost an experiment file states and the one its records give, where its ``cost`` names a
    records file under ``root`` in the stated format; else None."""
    text = experiment.read_text(encoding="utf-8")
    match = STATED_COST.search(text)
    if not match:
        return None
    methods = (load_yaml(text) or {}).get("methods") or {}
    ensembles = {name for name, method in methods.items() if isinstance(method, dict) and method.get("ensemble")}
    cells, hours = recorded_cost(read_kept(root / match.group(5)), ensembles)
    line = f'cost: "{cells} cells recorded {match.group(2)} trained in {hours:.1f} h{match.group(4)}({match.group(5)})"'
    return StatedCost((int(match.group(1)), float(match.group(3))), (cells, round(hours, 1)), line)
