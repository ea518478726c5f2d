"""Running an experiment grid (:mod:`~seqtransfer.experiments.grid`): sources first, then methods ×
targets × seeds, then ensembles.

A finished run is skipped, an interrupted one resumes from its last epoch. Runs execute in-process
one after the other, or as Ray tasks on a cluster (``backend=RayBackend(address)``).
"""

from __future__ import annotations

import copy
import fcntl
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from seqtransfer import rundir
from seqtransfer.config import RunConfig, config_from_dict
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.corpora.unlabeled import read_unlabeled
from seqtransfer.embeddings.transformer import encoder_fingerprint
from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.grid import PSEUDO_FILE, RunTask, ensemble_tasks, method_tasks, source_tasks, spec_selection
from seqtransfer.experiments.kept import at_selection, cell_key, made_with_other_weights, merge, run_id_of
from seqtransfer.experiments.run_records import finish_record, finish_records
from seqtransfer.experiments.spec import ExperimentSpec
from seqtransfer.experiments.stale_runs import RUN_LOCK, set_stale_run_aside, stale_encoder
from seqtransfer.experiments.store import ResultsStore, content_id, digest_of
from seqtransfer.run_members import members_changed
from seqtransfer.workflows.ensemble import build_ensemble
from seqtransfer.workflows.pseudolabels import write_pseudo_labels
from seqtransfer.workflows.selflabel import SelfLabelling, SelfLabelSettings
from seqtransfer.workflows.train import train_tagger
from seqtransfer.workflows.unify import unify

Log = Callable[[str], None]


def execute_task(task: RunTask, echo: Log | None = None) -> list[dict]:
    """Train (or resume) one run and return its records (one per target of a multi-task run);
    safe to call in another process.

    The run's log goes to its log.txt and, with ``echo``, also to ``echo`` (progress on screen).
    """
    directory = Path(task.directory)
    config = config_from_dict(copy.deepcopy(task.config))
    set_stale_run_aside(task.directory, encoder_of(task), echo)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / RUN_LOCK, "w") as lock:  # two grids sharing this run: the second waits, then reuses it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (directory / rundir.METRICS).is_file():
            if task.unify and not (directory / "unified" / "summary.json").is_file():  # summary.json is written last
                unify_logged(task, directory, echo)
            if task.pseudo and not (directory / PSEUDO_FILE).is_file():  # written whole or not at all
                pseudo_label_logged(task, directory, echo)
            if task.selflabel:
                selflabel_logged(task, config, directory, echo)
            else:
                train_logged(config, directory, echo)
    return finish_records(task, directory)


def unify_logged(task: RunTask, directory: Path, echo: Log | None) -> None:
    """Unify the run's training data with its filler runs (``seqtransfer unify``) into DIRECTORY/unified."""
    with open(directory / "log.txt", "a", encoding="utf-8") as log_file:

        def log(message: str) -> None:
            print(f"unify: {message}", file=log_file, flush=True)
            if echo:
                echo(f"  unify: {message}")

        unify(task.unify["entries"], task.unify["runs"], directory / "unified", task.config["data"]["data_dir"], log=log)


def pseudo_label_logged(task: RunTask, directory: Path, echo: Log | None) -> None:
    """Label the run's unlabelled text with its labelling runs together into DIRECTORY/pseudo.conll."""
    settings = task.pseudo
    tokens = read_unlabeled(settings["unlabeled"], task.config["data"]["data_dir"], settings["tokenizer"], settings.get("word_column"), "pseudo_labels.word_column")
    written = write_pseudo_labels(directory / PSEUDO_FILE, settings["runs"], tokens, settings["combination"], settings["threshold"], settings["top_n"])
    message = (
        f"pseudo labels: {written['sentences']} of {written['of']} sentences of {settings['unlabeled']} ({written['tokens']} tokens) "
        f"labelled by {len(settings['runs'])} run(s) ({settings['combination']})"
    )
    with open(directory / "log.txt", "a", encoding="utf-8") as log_file:
        print(message, file=log_file, flush=True)
    if echo:
        echo(f"  {message}")


def selflabel_logged(task: RunTask, config: RunConfig, directory: Path, echo: Log | None) -> None:
    """Self-labelling rounds into ``directory`` (resumable), its progress in log.txt."""
    with open(directory / "log.txt", "a", encoding="utf-8") as log_file:

        def log(message: str) -> None:
            print(message, file=log_file, flush=True)
            if echo:
                echo(f"  {message}")

        SelfLabelling(config, SelfLabelSettings(**task.selflabel), directory, log).run()


def train_logged(config: RunConfig, directory: Path, echo: Log | None) -> None:
    """Train into ``directory``, appending the log to its log.txt (and to ``echo``)."""
    with open(directory / "log.txt", "a", encoding="utf-8") as log_file:

        def log(message: str) -> None:
            print(message, file=log_file, flush=True)
            if echo:
                echo(f"  {message}")

        train_tagger(config, directory, log=log, show_progress=False)


def execute_ensemble(task: RunTask, members: list[RunTask]) -> dict:
    directory = Path(task.directory)
    if not (directory / rundir.METRICS).is_file() or members_changed(directory):  # built again in place: it trains nothing
        data = load_task_data(config_from_dict(copy.deepcopy(task.config)).data)
        build_ensemble([Path(member.directory) for member in members], data, directory)
    return finish_record(task, directory)


def encoder_of(task: RunTask) -> str | None:
    """The encoder folder a task's settings name (None: it reads none)."""
    return task.config.get("model", {}).get("encoder")


def is_built(task: RunTask) -> bool:
    """The task's folder holds a finished run (of whatever encoder or members)."""
    return (Path(task.directory) / rundir.METRICS).is_file()


def is_finished(task: RunTask) -> bool:
    """The task's run finished, on the encoder folder its settings name as that folder is now (an
    ensemble: from its members as they are now)."""
    directory = Path(task.directory)
    if not (directory / rundir.METRICS).is_file():
        return False
    return not members_changed(directory) if task.ensemble_of else stale_encoder(directory, encoder_of(task)) is None


def kept_records_of(task: RunTask, kept: dict[tuple, dict]) -> list[dict] | None:
    """The kept records of a task's cells (one per target of a multi-task run), if a run of the
    same settings made every one of them; else None."""
    records = [kept.get(cell_key(cell)) for cell in cells_of(task)]
    if all(record is not None and made_by(record, task, kept) for record in records):
        return records
    return None


def cells_of(task: RunTask) -> list[dict]:
    """The grid cells one run makes: one per target of a multi-task run."""
    cells = [{**task.record, "target": target} for target in task.record["targets"]] if "targets" in task.record else [task.record]
    return [{key: value for key, value in cell.items() if key != "targets"} for cell in cells]


def kept_of_other_settings(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, kept_cells: dict[tuple, dict], planned: list[RunTask]) -> dict[str, list[dict]]:
    """The kept records this session did not plan (other seeds, methods left out by --only) that no run of
    the file's settings, source and encoder as they are here made, by why: a report would average them
    with the cells trained here. "settings": the file's settings for the cell changed; "encoder" and
    "source": the cell read weights that its encoder folder or source run no longer holds."""
    planned_cells = {cell_key(cell) for task in planned for cell in cells_of(task)}
    outside = [record for key, record in kept_cells.items() if key not in planned_cells and record.get("method")]
    methods = {record["method"] for record in outside if record["method"] in spec.methods}  # an extra member ("Name+1000") is its ensemble's
    if not methods:
        return {}
    tasks = method_tasks(spec, store, data_dir, sorted({int(record["seed"]) for record in outside}), source_tasks(spec, store, data_dir), methods)
    by_cell = {cell_key(cell): task for task in tasks for cell in cells_of(task)}
    stale: dict[str, list[dict]] = {}
    for record in outside:
        task = by_cell.get(cell_key(record))
        if task is None:
            continue
        why = "encoder" if from_another_encoder(record, task) else "source" if from_another_source(record, task) else None
        if why is None and not made_by(record, task, kept_cells):  # made_by checks the two weights first: here they agree
            why = "settings"
        if why:
            stale.setdefault(why, []).append(record)
    return stale


def made_by(record: dict, task: RunTask, kept: dict[tuple, dict]) -> bool:
    """Whether a kept record was made by a run of the task's settings: the same digest, whatever the
    folder's prefix (it depends on which file trained the run first). An ensemble recorded before
    ensembles were named by their members' digests was named by its members' folders: those of the
    members' kept records, or the names the members have now."""
    if from_another_source(record, task) or from_another_encoder(record, task):
        return False
    digest = digest_of(run_id_of(record))
    if digest == digest_of(task.run_id):
        return True
    if not task.ensemble_of:
        return False
    names = []
    for member in task.ensemble_of:
        member_record = kept.get(cell_key(member.record))
        names.append(run_id_of(member_record) if member_record is not None and made_by(member_record, member, kept) else member.run_id)
    return digest == content_id({"ensemble": names})


def from_another_source(record: dict, task: RunTask) -> bool:
    """Whether a kept record names the weights of its source run and the source in the store now
    has others (it was trained again, in another session, to other weights): its cell would
    compare runs of two sources, so it trains again. Records kept before they named their source's
    weights, and cells whose source is not in the store, are taken as they are."""
    recorded = record.get("source_weights")
    source = task.source_directory
    if not recorded or not source or not (Path(source) / rundir.METRICS).is_file():
        return False
    return made_with_other_weights(recorded, rundir.weights_fingerprint(source))


def from_another_encoder(record: dict, task: RunTask) -> bool:
    """Whether a kept record names the encoder folder it read (``encoder_weights``) and the folder its
    settings name holds another encoder now (our own LM trained again, with other text or
    weights): the cell trains again, as one whose source changed. Records kept before they named
    their encoder, and encoders not found here, are taken as they are."""
    recorded = record.get("encoder_weights")
    encoder = task.config["model"].get("encoder")
    if not recorded or not encoder:
        return False
    try:
        return made_with_other_weights(recorded, encoder_fingerprint(encoder))
    except (SeqTransferError, OSError):  # not found or unreadable here: the run that needs it will say so
        return False


def skippable(tasks: list[RunTask], kept: dict[tuple, dict], needed: set[str]) -> dict[str, list[dict]]:
    """directory -> kept records of the unfinished tasks that need no training: their cells are kept
    and no run still to train depends on their directory (a filler of unified data)."""
    skip = {task.directory: records for task in tasks if not is_finished(task) and (records := kept_records_of(task, kept)) is not None}
    while True:
        dependencies = {directory for task in tasks if task.directory not in skip and not is_finished(task) for directory in task.dependencies}
        blocked = (dependencies | needed) & set(skip)
        if not blocked:
            return skip
        for directory in blocked:
            del skip[directory]


@dataclass(frozen=True)
class ExperimentPlan:
    """What a run of the grid does, decided before anything trains: the runs of each stage to
    train, and the cells kept or whose run already exists."""

    targets: list[RunTask]  # every target run of the grid (of the ``only`` methods)
    ensembles: list[tuple[RunTask, list[RunTask]]]  # the ensembles not kept, each with its members
    kept_ensembles: list[list[dict]]  # kept records of the ensembles that need no building
    skipped: dict[str, list[dict]]  # directory -> kept records of target runs that need no training
    to_train: list[RunTask]  # the target runs of this session, finished ones included
    source_stage: list[RunTask]  # the source runs that a target run of this session reads
    todo: list[list[RunTask]]  # the unfinished runs of each stage: sources, targets, ensembles

    def describe(self, name: str) -> str:
        """One log line: how many runs of each stage, how many still to train and how many kept."""
        kept_note = f", {len(self.skipped) + len(self.kept_ensembles)} kept" if self.skipped or self.kept_ensembles else ""
        counts = ", ".join(str(len(stage)) for stage in self.todo)
        return f"{name}: {len(self.source_stage)} source runs, {len(self.targets)} target runs, {len(self.ensembles)} ensembles ({counts} to train{kept_note})"


def plan_experiment(spec: ExperimentSpec, store: ResultsStore, seeds: list[int], data_dir: str | None, only: set[str], kept_cells: dict[tuple, dict]) -> ExperimentPlan:
    """The grid's runs, less the cells kept (``kept_cells``) and the runs no cell of this session needs."""
    sources = source_tasks(spec, store, data_dir)
    targets = method_tasks(spec, store, data_dir, seeds, sources, only)
    ensembles = ensemble_tasks(spec, store, data_dir, seeds, sources, only)
    # a kept record stands in for an ensemble not built here; one built here is built again if a member was trained again
    kept_ensembles = [records for task, _ in ensembles if not is_built(task) and (records := kept_records_of(task, kept_cells)) is not None]
    ensembles = [(task, members) for task, members in ensembles if is_built(task) or kept_records_of(task, kept_cells) is None]
    members_needed = {member.directory for task, members in ensembles if not is_finished(task) for member in members}
    skipped = skippable(targets, kept_cells, members_needed)
    to_train = runs_to_train(targets, skipped)
    source_stage = sources_needed(sources, to_train)
    todo = [[task for task in stage if not is_finished(task)] for stage in (source_stage, to_train, [task for task, _ in ensembles])]
    return ExperimentPlan(targets, ensembles, kept_ensembles, skipped, to_train, source_stage, todo)


def runs_to_train(targets: list[RunTask], skipped: dict[str, list[dict]]) -> list[RunTask]:
    """The target runs not skipped, less those trained only when needed that no other of them reads
    (finished ones stay: their records are saved)."""
    to_train = [task for task in targets if task.directory not in skipped]
    asked = {directory for task in to_train if not task.when_needed for directory in task.dependencies}
    return [task for task in to_train if not task.when_needed or task.directory in asked or is_finished(task)]


def sources_needed(sources: dict[str, RunTask], to_train: list[RunTask]) -> list[RunTask]:
    """The source runs that ``to_train`` reads, directly or through another source run."""
    needed = {directory for task in to_train for directory in task.dependencies}
    needed |= {directory for task in sources.values() if task.directory in needed for directory in task.dependencies}
    return [task for task in sources.values() if task.directory in needed]


def save_kept_and_finished(plan: ExperimentPlan, store: ResultsStore) -> None:
    """Save the records of the kept cells and of the cells whose run already exists."""
    for records in [*plan.skipped.values(), *plan.kept_ensembles]:
        for record in records:
            store.save_record(record)
    for task in plan.to_train:  # cells whose run already exists (trained by this or another experiment)
        if is_finished(task):
            for record in finish_records(task, Path(task.directory)):
                store.save_record(record)


def run_experiment(
    spec: ExperimentSpec,
    store: ResultsStore,
    seeds: list[int],
    backend,
    data_dir: str | None = None,
    only: set[str] = frozenset(),
    log: Log = print,
    kept: list[dict] = (),
    on_record: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Run whatever of the grid is not finished (or kept, see :mod:`~seqtransfer.experiments.kept`) yet;
    returns every record of the experiment."""
    kept_cells = {cell_key(record): record for record in kept if record["experiment"] == spec.name}
    plan = plan_experiment(spec, store, seeds, data_dir, only, kept_cells)
    log(plan.describe(spec.name))
    warn_of_other_settings(kept_of_other_settings(spec, store, data_dir, kept_cells, plan.targets), log)
    started = time.perf_counter()
    save_kept_and_finished(plan, store)

    def save(record: dict) -> None:
        store.save_record(record)
        if on_record:
            on_record(record)

    # One pool of work: a target run starts as soon as its own source is finished.
    backend.run(plan.todo[0] + plan.todo[1], log, on_record=save)
    warn_of_other_sources(plan.targets, plan.skipped, log)
    for task in plan.source_stage:  # source records too, so that analyses can find the source runs
        store.save_record(finish_record(task, Path(task.directory)))
    for task, members in plan.ensembles:
        record = execute_ensemble(task, members)
        save(record)
        if task in plan.todo[2]:
            log(describe(record))
    log(f"{spec.name}: done in {time.perf_counter() - started:.0f} s")
    return merge(kept_cells.values(), at_selection(store.records(spec.name), spec_selection(spec)))


def warn_of_other_sources(tasks: list[RunTask], skipped: dict[str, list[dict]], log: Log) -> None:
    """Kept cells were taken before their source was trained again here: say which of them read
    another instance of it (the next run trains them again, see :func:`from_another_source`)."""
    stale = [describe_cell(record) for task in tasks for record in skipped.get(task.directory, []) if from_another_source(record, task) or from_another_encoder(record, task)]
    if stale:
        log(
            f"warning: {len(stale)} kept cells were trained from another instance of their source or encoder, trained again here "
            f"({', '.join(stale[:4])}{', ...' if len(stale) > 4 else ''}): run the command again to train them from this one"
        )


STALE_REASONS = {
    "settings": "of other settings than the file gives now",
    "encoder": "read another encoder than the one its folder holds now",
    "source": "read another instance of its source than the one in the store now",
}


def warn_of_other_settings(stale: dict[str, list[dict]], log: Log) -> None:
    """Say which kept cells outside this session no run of the file's settings, encoder and source made."""
    for why, records in stale.items():
        seeds = max(int(record["seed"]) for record in records)
        cells = ", ".join(describe_cell(record) for record in records[:4]) + (", ..." if len(records) > 4 else "")
        log(
            f"warning: {len(records)} kept cells outside this run {STALE_REASONS[why]} ({cells}); a report averages them "
            f"with the cells trained here: run their methods again with --seeds {seeds} to train them anew"
        )


def describe_cell(record: dict) -> str:
    return f"{record['method']} / {record['target']} / seed {record['seed']}"


def describe(record: dict) -> str:
    """One log line for a finished run."""
    if record.get("source"):
        what = f"source {record['source']}"
    else:
        what = describe_cell(record)
    test = "-" if record["test"] is None else f"{record['test']:.2f}"
    return f"{what}: dev {record['dev']:.2f}, test {test} ({record['seconds']:.0f} s)"
