"""`seqtransfer experiment list`: every cell of an experiment's grid and where it stands.

A cell is done (its run finished here, or a kept record of a run with the same settings holds
it), under way (a checkpoint after some epoch, or some self-labelling rounds finished), or still
to train. Nothing is trained or loaded: the grid is built as ``experiment run`` builds it, and a
checkpoint's progress is read from its metadata.
"""

from __future__ import annotations

import json
from pathlib import Path

from seqtransfer.experiments.kept import cell_key, run_id_of
from seqtransfer.experiments.runner import RunTask, describe, ensemble_tasks, finish_records, is_finished, kept_records_of, method_tasks, source_tasks
from seqtransfer.experiments.spec import ExperimentSpec
from seqtransfer.experiments.store import ResultsStore

CHECKPOINT_FILE = "tensors.safetensors"  # training/checkpoint.py: the epoch and scores are in its metadata


def checkpoint_progress(directory: Path) -> str | None:
    """"after epoch E (best dev S at epoch B)" of the newest checkpoint under ``directory``, or None."""
    from safetensors import safe_open

    checkpoints = sorted(directory.glob(f"**/checkpoint/**/{CHECKPOINT_FILE}"), key=lambda path: path.stat().st_mtime)
    if not checkpoints:
        return None
    with safe_open(str(checkpoints[-1]), framework="pt") as handle:
        state = json.loads((handle.metadata() or {}).get("state", "{}"))
    if "epoch" not in state:
        return None
    return f"after epoch {state['epoch']} (best dev {state['best_score']:.2f} at epoch {state['best_epoch']})"


def progress(task: RunTask) -> str | None:
    """Where an unfinished run stands: self-labelling rounds finished, and its newest checkpoint."""
    directory = Path(task.directory)
    if not directory.is_dir():
        return None
    parts = []
    if task.selflabel:
        rounds = {path.parent.parent.name for path in directory.glob("round-*/model-*/metrics.json")}
        parts.append(f"{len(rounds)} of {task.selflabel.get('rounds', 3) + 1} rounds trained")
    epoch = checkpoint_progress(directory)
    if epoch:
        parts.append(epoch)
    return ", ".join(parts) or None


def label(task: RunTask) -> str:
    record = task.record
    if record.get("source"):
        return f"source {record['source']}"
    targets = ", ".join(record["targets"]) if "targets" in record else record["target"]
    return f"{record['method']} / {targets} / seed {record['seed']}"


def cell_lines(task: RunTask, kept: dict[tuple, dict]) -> tuple[str, list[str]]:
    """(state, lines) of one run: done | kept | under way | to train."""
    if is_finished(task):
        return "done", [describe(record) for record in finish_records(task, Path(task.directory))]
    records = kept_records_of(task, kept)
    if records is not None:
        return "kept", [f"{describe(record)} [kept record]" for record in records]
    under_way = progress(task)
    if under_way:
        return "under way", [f"{label(task)}: under way, {under_way}"]
    stale = kept.get(cell_key(task.record)) if "targets" not in task.record else None
    note = f" (a kept record is of other settings: {run_id_of(stale)})" if stale else ""
    return "to train", [f"{label(task)}: to train{note}"]


def grid_status(spec: ExperimentSpec, store: ResultsStore, seeds: list[int], data_dir: str | None, only: set[str], kept: list[dict]) -> list[str]:
    """One line per grid cell (sources first, ensembles last), then a count of each state."""
    kept_cells = {cell_key(record): record for record in kept if record["experiment"] == spec.name}
    sources = source_tasks(spec, store, data_dir)
    tasks = [*sources.values(), *method_tasks(spec, store, data_dir, seeds, sources, only), *(task for task, _ in ensemble_tasks(spec, store, data_dir, seeds, sources, only))]
    lines, counts = [], {}
    for task in tasks:
        state, described = cell_lines(task, kept_cells)
        if state == "to train" and task.record.get("source"):
            described = [f"{label(task)}: to train when a run needs it"]
        counts[state] = counts.get(state, 0) + len(described)
        lines += described
    summary = ", ".join(f"{counts[state]} {state}" for state in ("done", "kept", "under way", "to train") if state in counts)
    return [*lines, f"{spec.name}: {summary} (seeds 1..{max(seeds)})"]
