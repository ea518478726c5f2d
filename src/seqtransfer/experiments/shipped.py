"""The paper experiments that ship with seqtransfer: found by name, listed with what they cost.

``seqtransfer experiment run pretrand-table4`` runs the shipped ``pretrand_table4.yaml`` from an
installed wheel; a path (``experiments/pretrand_table4.yaml`` in a clone, or a user's own file)
still works, and a file in the working folder wins over a shipped one of the same name.
"""

from __future__ import annotations

import re
from pathlib import Path

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


def recorded_cost(records: list[dict]) -> tuple[int, float]:
    """(cells, hours) of a records file, as an experiment's ``cost`` states them: a cell is one
    method's record on one target at one seed; the hours sum each run's training once (the
    four records of one multi-task run share its time), source runs not counted."""
    cells = [record for record in records if record.get("method")]
    seconds = {record.get("run_directory") or str(index): float(record.get("seconds") or 0.0) for index, record in enumerate(cells)}
    return len(cells), sum(seconds.values()) / 3600


STATED_COST = re.compile(r'^cost: "(\d+) cells recorded (\(.*?\)) trained in ([\d.]+) h(.*)\((docs/results/\S+\.records\.jsonl)\)"$', re.MULTILINE)


def stated_and_recorded_cost(experiment: Path, root: Path) -> tuple[tuple[int, float], tuple[int, float], str] | None:
    """((cells, hours) the experiment file states, (cells, hours) its records give, the cost line as the
    records give it), where its ``cost`` names a records file under ``root`` in the stated format; else None."""
    match = STATED_COST.search(experiment.read_text(encoding="utf-8"))
    if not match:
        return None
    cells, hours = recorded_cost(read_kept(root / match.group(5)))
    line = f'cost: "{cells} cells recorded {match.group(2)} trained in {hours:.1f} h{match.group(4)}({match.group(5)})"'
    return (int(match.group(1)), float(match.group(3))), (cells, round(hours, 1)), line
