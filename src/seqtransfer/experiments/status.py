"""`seqtransfer experiment list`: every cell of an experiment's grid and where it stands.

A cell is done (its run finished here, or a kept record of a run with the same settings holds
it), under way (a checkpoint after some epoch, or some self-labelling rounds finished), or still
to train. Nothing is trained, loaded or written: the grid is built as ``experiment run`` builds
it, and a checkpoint's progress is read from its metadata. Source runs (and runs that are only
read by other methods: teachers, labellers, runs started from) are listed apart: they train when a run needs them.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from safetensors import safe_open

from seqtransfer.experiments.grid import RunTask, ensemble_tasks, method_tasks, source_tasks
from seqtransfer.experiments.kept import cell_key, run_id_of
from seqtransfer.experiments.report_base import _duration
from seqtransfer.experiments.run_records import finish_records
from seqtransfer.experiments.runner import describe, is_finished, kept_records_of
from seqtransfer.experiments.spec import ExperimentSpec
from seqtransfer.experiments.store import ResultsStore
from seqtransfer.training.checkpoint import TENSORS_FILE, read_progress
from seqtransfer.workflows.selflabel import METHODS, SelfLabelSettings

STATES = ("done", "kept", "under way", "to train")


def read_checkpoint_epoch(path: Path) -> str | None:
    """ "after epoch E (best dev S at epoch B)" from a checkpoint's metadata, with ", N batches into epoch E + 1"
    when it was saved inside an epoch; or None."""
    with safe_open(str(path), framework="numpy") as handle:
        state = json.loads((handle.metadata() or {}).get("state", "{}"))
    if "epoch" not in state:
        return None
    try:
        progress = read_progress(state.get("progress"))
    except ValueError:  # a damaged checkpoint: training it again says so in one line
        progress = None
    inside = f", {progress.batches} batches into epoch {progress.epoch}" if progress else ""
    if not state["epoch"]:
        return f"{progress.batches} batches into epoch 1" if progress else None
    return f"after epoch {state['epoch']} (best dev {state['best_score']:.2f} at epoch {state['best_epoch']}){inside}"


def describe_checkpoint(directory: Path) -> str | None:
    """The newest checkpoint of a run (a phase's, or a self-labelling round's model's; not a jackknife
    fold tagger's): where it stands, and which phase or model it is."""
    checkpoints = [*directory.glob(f"checkpoint/*/{TENSORS_FILE}"), *directory.glob(f"round-*/model-*/checkpoint/*/{TENSORS_FILE}")]
    if not checkpoints:
        return None
    newest = max(checkpoints, key=lambda path: path.stat().st_mtime)
    epoch = read_checkpoint_epoch(newest)
    if epoch is None:
        return None
    owner = newest.parent.parent.parent.relative_to(directory)
    where = f"phase '{newest.parent.name}'" + (f" of {owner}" if str(owner) != "." else "")
    return f"{where} {epoch}"


def count_rounds(task: RunTask) -> str:
    """ "R of N rounds trained" of a self-labelling run: a round counts once all its models are."""
    settings = SelfLabelSettings(**task.selflabel)
    models = METHODS[settings.method].models
    directory = Path(task.directory)
    rounds = sum(1 for number in range(settings.rounds + 1) if len(list(directory.glob(f"round-{number}/model-*/metrics.json"))) == models)
    return f"{rounds} of {settings.rounds + 1} rounds trained"


def describe_progress(task: RunTask) -> str | None:
    """Where an unfinished run stands (its rounds, its newest checkpoint), or None when nothing of it is trained."""
    directory = Path(task.directory)
    checkpoint = describe_checkpoint(directory) if directory.is_dir() else None
    rounds = count_rounds(task) if task.selflabel and directory.is_dir() else None
    if checkpoint is None and (rounds is None or rounds.startswith("0 of")):
        return None
    return ", ".join(part for part in (rounds, checkpoint) if part)


def name_cell(task: RunTask) -> str:
    """A run's grid cell as the log names it: method / target(s) / seed, or the source's name."""
    record = task.record
    if record.get("source"):
        return f"source {record['source']}"
    targets = ", ".join(record["targets"]) if "targets" in record else record["target"]
    return f"{record['method']} / {targets} / seed {record['seed']}"


def cell_count(task: RunTask) -> int:
    """The grid cells a run fills: one, or one per target of a multi-task run."""
    return len(task.record.get("targets", [None]))


def describe_cells(task: RunTask, kept: dict[tuple, dict]) -> tuple[str, list[str], list[dict]]:
    """(state, lines, finished records) of one run: done | kept | under way | to train."""
    if is_finished(task):
        lines, records = [], finish_records(task, Path(task.directory), score=False)
        for record in records:
            unscored = record.get("test_on") and record["test"] is None
            lines.append(describe(record) + (f" [test on {record['test_on']} not scored yet]" if unscored else ""))
        return "done", lines, records
    records = kept_records_of(task, kept)
    if records is not None:
        return "kept", [f"{describe(record)} [kept record]" for record in records], records
    progress = describe_progress(task)
    if progress:
        return "under way", [f"{name_cell(task)}: under way, {progress}"], []
    stale = kept.get(cell_key(task.record)) if "targets" not in task.record else None
    note = f" (a kept record is of other settings: {run_id_of(stale)})" if stale else ""
    return "to train", [f"{name_cell(task)}: to train{note}"], []


def kind_of_cell(record: dict) -> tuple:
    """What a run's time is compared by: the same source, or the same method and target(s), at any seed."""
    return ("source", record["source"]) if record.get("source") else (record.get("method"), record.get("target"), tuple(record.get("targets", ())))


def time_left(waiting: list[RunTask], seconds: dict[tuple, list[float]]) -> str:
    """ "about 2h 05m for 5 of the 6 runs to train" from the wall times of finished runs of the same kind."""
    known = [statistics.fmean(seconds[kind]) for task in waiting if (kind := kind_of_cell(task.record)) in seconds]
    if not waiting:
        return "nothing left to train"
    if not known:
        return f"{len(waiting)} runs to train, none with a finished run of the same kind to time them by"
    return (
        f"about {_duration(sum(known))} for {len(known)} of the {len(waiting)} runs to train or under way, one after another "
        "(each timed as the finished runs of its method and target, or its source, at other seeds, on the device and beside whatever ran then; "
        "under way ones counted whole)"
    )


def grid_status(spec: ExperimentSpec, store: ResultsStore, seeds: list[int], data_dir: str | None, only: set[str], kept: list[dict]) -> list[str]:
    """One line per run (sources and runs only other methods read first, then the grid's cells, ensembles
    last), then a count of the cells in each state and of the sources, and an estimate of the time left."""
    kept_cells = {cell_key(record): record for record in kept if record["experiment"] == spec.name}
    sources = source_tasks(spec, store, data_dir)
    methods = method_tasks(spec, store, data_dir, seeds, sources, only)
    ensembles = [task for task, _ in ensemble_tasks(spec, store, data_dir, seeds, sources, only)]
    supporting = [*sources.values(), *(task for task in methods if task.when_needed)]
    lines, cells, support = [], dict.fromkeys(STATES, 0), dict.fromkeys(STATES, 0)
    seconds: dict[tuple, list[float]] = {}
    for record in kept_cells.values():  # finished runs at seeds this listing leaves out (--seeds 2-3): they time its runs too
        if record.get("seed") not in seeds and record.get("seconds") is not None:
            seconds.setdefault(kind_of_cell(record), []).append(float(record["seconds"]))
    unfinished: dict[str, RunTask] = {}  # directory -> a run still to train or under way

    def note(task: RunTask, state: str, records: list[dict]) -> None:
        for record in records[:1]:  # a multi-task run's records share its time
            seconds.setdefault(kind_of_cell(task.record), []).append(float(record["seconds"]))
        if state in ("to train", "under way"):
            unfinished[task.directory] = task

    for task in supporting:
        state, described, records = describe_cells(task, kept_cells)
        support[state] += 1
        lines += [line.replace(": to train", ": to train when a run needs it") for line in described]
        note(task, state, records)
    for task in [*(task for task in methods if not task.when_needed), *ensembles]:
        state, described, records = describe_cells(task, kept_cells)
        cells[state] += cell_count(task)
        lines += described
        note(task, state, records)
    waiting = {task.directory: task for task in methods if not task.when_needed and task.directory in unfinished}
    pending = [dependency for task in waiting.values() for dependency in task.dependencies]
    while pending:  # the unfinished sources and read runs they need (and those these need)
        directory = pending.pop()
        if directory in unfinished and directory not in waiting:
            waiting[directory] = unfinished[directory]
            pending += unfinished[directory].dependencies
    return [
        *lines,
        f"{spec.name}: cells {summarize(cells)}; sources and runs other methods read {summarize(support)} (seeds 1..{max(seeds)})",
        f"time left: {time_left(list(waiting.values()), seconds)}",
    ]


def summarize(counts: dict[str, int]) -> str:
    """ "3 done, 2 to train" (the states with a count)."""
    return ", ".join(f"{counts[state]} {state}" for state in STATES if counts[state]) or "none"
