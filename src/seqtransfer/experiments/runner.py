"""Running an experiment grid: sources first, then methods × targets × seeds, then ensembles.

Every run is identified by a hash of its configuration (``store.content_id``): a finished run
is skipped, an interrupted one resumes from its last epoch. Runs execute in-process one after
the other, or as Ray tasks on a cluster (``backend=RayBackend(address)``).
"""

from __future__ import annotations

import copy
import fcntl
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from seqtransfer import rundir
from seqtransfer.config import RunConfig, apply_overrides, check_values, config_from_dict, config_to_dict
from seqtransfer.data.task_data import load_task_data
from seqtransfer.errors import SeqTransferError
from seqtransfer.training.metrics import get_metric
from seqtransfer.experiments.ensemble import build_ensemble
from seqtransfer.experiments.kept import cell_key, merge, run_id_of
from seqtransfer.experiments.spec import ExperimentSpec, split_member
from seqtransfer.experiments.store import ResultsStore, content_id, digest_of
from seqtransfer.files import read_json, write_json
from seqtransfer.transfer.schemes import get_scheme

Log = Callable[[str], None]


@dataclass
class RunTask:
    """One training run of the grid (a source run has method = target = None).

    A run that transfers from a source names the source's directory in ``config``; it can start
    once that source run is finished (``source_directory``).
    """

    run_id: str
    directory: str
    config: dict
    record: dict
    unify: dict | None = None  # {"entries": task -> data, "runs": task -> run directory}: unify into DIRECTORY/unified first
    selflabel: dict | None = None  # self-labelling settings: the run is rounds of models in DIRECTORY (transfer/selflabel.py)
    when_needed: bool = False  # trained only for a run that needs it, as a source is (a run a start_from method starts from, its cell not asked for)

    @property
    def source_directory(self) -> str | None:
        return self.config["transfer"]["source"]

    @property
    def dependencies(self) -> list[str]:
        """Run directories that must be finished before this run starts."""
        tagger = self.config["model"].get("tag_tagger")
        return [directory for directory in [self.source_directory, tagger, *(self.unify or {}).get("runs", {}).values()] if directory]


def non_default(values: dict, defaults: dict) -> dict:
    """The entries of nested ``values`` that differ from ``defaults``."""
    result = {}
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(defaults.get(key, {}), dict):  # a section (a mapping-valued setting with a null default is one value)
            nested = non_default(value, defaults.get(key, {}))
            if nested:
                result[key] = nested
        elif key not in defaults or defaults[key] != value:
            result[key] = value
    return result


def identity_of(config: RunConfig, source_id: str | None, unified: dict | None = None) -> dict:
    """What defines a run's result: the settings that differ from the defaults, without where the
    data lives or how many threads run it (so adding a config field keeps existing ids); for a
    run on unified data, the runs that filled it."""
    values = config_to_dict(config)
    if unified:
        values["multitask"]["unified"] = unified
    values["data"].pop("data_dir")
    values["train"].pop("threads")
    values["train"].pop("device")
    values["train"].pop("record_activations")  # recording for analysis does not change the run
    values["transfer"]["source"] = source_id
    if config.model.tasks:  # the listed order decides ties of the hierarchy (the round robin's order); ids sort keys
        values["model"]["task_order"] = list(config.model.tasks)
    return non_default(values, config_to_dict(RunConfig()))


def base_config(spec: ExperimentSpec, data_dir: str | None, dataset: str | None, task: str | None, overrides: list[str], multitask: dict[str, str] | None = None) -> RunConfig:
    """A run's config; with ``multitask`` (task -> "dataset:task") a multi-task model over ``spec.hierarchy``."""
    config = RunConfig()
    config.data.dataset, config.data.task, config.data.data_dir = dataset, task, data_dir
    if multitask:
        config.model.tasks = {name: list(inputs) for name, inputs in spec.hierarchy.items()}
        config.multitask.data = dict(multitask)
    return check_values(apply_overrides(config, [*spec.overrides, *overrides]))


def target_entries(spec: ExperimentSpec) -> dict[str, str | dict]:
    """task -> "dataset:task" of a multi-task method over the experiment's targets (a target of a
    user's files: the mapping its ``data.*`` overrides give; its other overrides do not apply)."""
    import yaml

    entries: dict[str, str | dict] = {}
    for name, target in spec.targets.items():
        if target.dataset:
            entries[name] = f"{target.dataset}:{target.task}" if target.task else target.dataset
            continue
        files = {}
        for override in target.overrides:
            key, _, value = override.partition("=")
            if key.startswith("data."):
                files[key.removeprefix("data.")] = yaml.safe_load(value)
        entries[name] = {**files, **({"task": target.task} if target.task else {})}
    return entries


def source_tasks(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None) -> dict[str, RunTask]:
    """One task per source of the experiment (seed 1), keyed by source name (fillers of unified sources first)."""
    tasks = {}
    for name, source in sorted(spec.sources.items(), key=lambda item: item[1].unify_with is not None):
        config = base_config(spec, data_dir, source.dataset, source.task, source.overrides, source.multitask)
        unify = None
        if source.unify_with:
            unify = {"entries": dict(source.multitask), "runs": {task: tasks[filler].directory for task, filler in source.unify_with.items()}}
        source_id = content_id(identity_of(config, None, unified_by(unify, tasks)), prefix=f"{source.name}-")
        record = {"experiment": spec.name, "method": None, "target": None, "source": name, "seed": config.train.seed}
        tasks[name] = with_unified(RunTask(source_id, str(store.source_directory(source_id)), config_to_dict(config), record, unify))
    return tasks


def unified_by(unify: dict | None, tasks) -> dict | None:
    """What identifies unified training data: the ids of the runs that filled it."""
    if unify is None:
        return None
    ids = {task.directory: task.run_id for task in (tasks.values() if isinstance(tasks, dict) else tasks)}
    return {task: ids.get(directory, directory) for task, directory in sorted(unify["runs"].items())}


def with_unified(task: RunTask) -> RunTask:
    """Point a run that trains on unified data at the folder it unifies into (its own ``unified/``)."""
    if task.unify:
        task.config["multitask"]["unified"] = str(Path(task.directory) / "unified")
    return task


def method_tasks(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, seeds: list[int], sources: dict[str, RunTask], only: set[str]) -> list[RunTask]:
    """One task per (method, target, seed) of the non-ensemble methods, plus ensemble members' extra
    seeds; multi-task methods on unified data after the mono-task runs that fill it."""
    wanted = {(name, 0) for name, method in spec.methods.items() if method.scheme and selected(name, only)}
    wanted |= {(method.unify_with, 0) for name, method in spec.methods.items() if method.unify_with and selected(name, only)}
    for name, method in spec.methods.items():
        if method.ensemble and selected(name, only):
            wanted |= {split_member(member) for member in method.ensemble}
    tasks = []
    for method_name, offset in sorted(wanted, key=lambda item: (stage_of(spec.methods[item[0]]), item)):
        if spec.methods[method_name].multitask:
            tasks += [multitask_method_task(spec, store, data_dir, method_name, seed, sources, tasks) for seed in seeds]
            continue
        for target_name, target in spec.targets.items():
            if spec.methods[method_name].targets is not None and target_name not in spec.methods[method_name].targets:
                continue
            for seed in seeds:
                task = method_task(spec, store, data_dir, method_name, target_name, seed + offset, sources)
                if offset:  # an extra ensemble member: its own grid cell, not a row of its method
                    task.record["method"] = f"{method_name}+{offset}"
                tasks.append(task)
    return [*start_tasks(spec, store, data_dir, tasks, sources), *tasks]


def stage_of(method) -> int:
    """The order of methods in the grid: a method's runs come after the runs they read (the run a
    ``start_from`` method starts from; the runs that fill a ``unify_with`` method's data)."""
    return 2 if method.unify_with is not None else 1 if method.start_from is not None else 0


def method_of(spec: ExperimentSpec, record: dict):
    """The method of a record: its name, or an extra ensemble member's "Name+OFFSET"."""
    return spec.methods.get(record["method"]) or spec.methods[split_member(record["method"])[0]]


def start_tasks(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, tasks: list[RunTask], sources: dict[str, RunTask]) -> list[RunTask]:
    """The runs that methods with ``start_from`` start from and that ``tasks`` lack (their method or
    target left out by --only or --targets): trained first, and only when a run still needs them."""
    have = {task.directory for task in tasks}
    extra = {}
    for task in tasks:
        start = method_of(spec, task.record).start_from if task.record.get("method") else None
        if start:
            first = method_task(spec, store, data_dir, start["method"], start["target"], task.record["seed"], sources)
            first.when_needed = True
            if first.directory not in have:
                extra.setdefault(first.directory, first)
    return list(extra.values())


TARGET_TEXT = "target"  # a method's data.select_like or selflabel unlabeled: the text of the target's test_on dataset


def target_spec(spec: ExperimentSpec, target_name: str):
    """A target of the file, also one the command left out (the run a method starts from may be on it)."""
    return spec.targets.get(target_name) or spec.all_targets[target_name]


def target_text(spec: ExperimentSpec, target_name: str) -> str:
    """The dataset whose (unlabelled) training text ``target`` stands for: the target's ``test_on``."""
    test_on = target_spec(spec, target_name).test_on
    if not test_on:
        raise SeqTransferError(f"target '{target_name}' has no test_on, so a method's '{TARGET_TEXT}' text names nothing", path=spec.path,
                               hint="give the target test_on: DATASET[:TASK], or name the text's dataset in the method")
    return test_on.partition(":")[0]


def method_task(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, method_name: str, target_name: str, seed: int, sources: dict[str, RunTask]) -> RunTask:
    method, target = spec.methods[method_name], target_spec(spec, target_name)
    config = base_config(spec, data_dir, target.dataset, target.task, [*target.overrides, f"transfer.scheme={method.scheme}", f"train.seed={seed}", *method.overrides])
    selflabel = dict(method.selflabel) if method.selflabel else None
    if config.data.select_like == TARGET_TEXT:
        config.data.select_like = target_text(spec, target_name)
    if selflabel and selflabel.get("unlabeled") == TARGET_TEXT:
        selflabel["unlabeled"] = target_text(spec, target_name)
    if method.anneal:  # data annealing from the target's source data (its training split)
        config.data.anneal_source = spec.sources[target.source].training_data
    source_name = method.source.get(target_name, target.source) if isinstance(method.source, dict) else method.source or target.source
    source = sources.get(source_name) if source_name and get_scheme(method.scheme).uses_source else None
    if method.start_from:  # another method's run of this seed (training/train.py starts from a self-labelling run's first model)
        source = method_task(spec, store, data_dir, method.start_from["method"], method.start_from["target"], seed, sources)
    config.transfer.source = source.directory if source else None
    # a method's run is named by its settings' digest alone: the folder's readable prefix depends on which file trained it first
    identity = identity_of(config, (digest_of(source.run_id) if method.start_from else source.run_id) if source else None)
    if method.tagger:  # a source run tags the input (model.tag_tagger): its id, not its folder, names the run
        config.model.tag_tagger = sources[method.tagger].directory
        identity.setdefault("model", {})["tag_tagger"] = sources[method.tagger].run_id
    if selflabel:
        identity["selflabel"] = selflabel
    kind = selflabel["method"] if selflabel else method.scheme
    run_id = store.run_id(f"{slug(target_name)}-{kind}-", content_id(identity))
    record = {"experiment": spec.name, "method": method_name, "target": target_name, "seed": seed}
    if target.test_on:
        record["test_on"] = target.test_on
    return RunTask(run_id, str(store.run_directory(run_id)), config_to_dict(config), record, selflabel=selflabel)


def multitask_method_task(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, method_name: str, seed: int, sources: dict[str, RunTask],
                          earlier: list[RunTask]) -> RunTask:
    """One multi-task run over every target; its record lists the targets it scores. With
    ``unify_with`` it trains on the targets unified by that method's runs of the same seed (in ``earlier``)."""
    method = spec.methods[method_name]
    overrides = [f"transfer.scheme={method.scheme}", f"train.seed={seed}", *method.overrides]
    config = base_config(spec, data_dir, None, None, overrides, target_entries(spec))
    source = sources.get(method.source) if method.source and get_scheme(method.scheme).uses_source else None
    config.transfer.source = source.directory if source else None
    unify = None
    if method.unify_with:
        fillers = {task.record["target"]: task.directory for task in earlier if task.record["method"] == method.unify_with and task.record["seed"] == seed}
        unify = {"entries": target_entries(spec), "runs": fillers}
    run_id = store.run_id(f"multitask-{method.scheme}-", content_id(identity_of(config, source.run_id if source else None, unified_by(unify, earlier))))
    record = {"experiment": spec.name, "method": method_name, "target": None, "targets": list(spec.targets), "seed": seed}
    return with_unified(RunTask(run_id, str(store.run_directory(run_id)), config_to_dict(config), record, unify))


def slug(name: str) -> str:
    """A target name as a folder-name prefix: "CoNLL-2003 (CRF)" -> "CoNLL-2003-CRF"."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


def selected(name: str, only: set[str]) -> bool:
    return not only or name in only


def execute_task(task: RunTask, echo: Log | None = None) -> list[dict]:
    """Train (or resume) one run and return its records (one per target of a multi-task run);
    safe to call in another process.

    The run's log goes to its log.txt and, with ``echo``, also to ``echo`` (progress on screen).
    """
    directory = Path(task.directory)
    config = config_from_dict(copy.deepcopy(task.config))
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:  # two grids sharing this run: the second waits, then reuses it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (directory / rundir.METRICS).is_file():
            if task.unify and not (directory / "unified" / "summary.json").is_file():  # summary.json is written last
                unify_logged(task, directory, echo)
            if task.selflabel:
                selflabel_logged(task, config, directory, echo)
            else:
                train_logged(config, directory, echo)
    return finish_records(task, directory)


def unify_logged(task: RunTask, directory: Path, echo: Log | None) -> None:
    """Unify the run's training data with its filler runs (``seqtransfer unify``) into DIRECTORY/unified."""
    from seqtransfer.data.unify import unify

    with open(directory / "log.txt", "a", encoding="utf-8") as log_file:

        def log(message: str) -> None:
            print(f"unify: {message}", file=log_file, flush=True)
            if echo:
                echo(f"  unify: {message}")

        unify(task.unify["entries"], task.unify["runs"], directory / "unified", task.config["data"]["data_dir"], log=log)


def selflabel_logged(task: RunTask, config: RunConfig, directory: Path, echo: Log | None) -> None:
    """Self-labelling rounds into ``directory`` (resumable), its progress in log.txt."""
    from seqtransfer.transfer.selflabel import SelfLabelling, SelfLabelSettings

    with open(directory / "log.txt", "a", encoding="utf-8") as log_file:

        def log(message: str) -> None:
            print(message, file=log_file, flush=True)
            if echo:
                echo(f"  {message}")

        SelfLabelling(config, SelfLabelSettings(**task.selflabel), directory, log).run()


def train_logged(config: RunConfig, directory: Path, echo: Log | None) -> None:
    """Train into ``directory``, appending the log to its log.txt (and to ``echo``)."""
    from seqtransfer.training.train import train_tagger

    with open(directory / "log.txt", "a", encoding="utf-8") as log_file:

        def log(message: str) -> None:
            print(message, file=log_file, flush=True)
            if echo:
                echo(f"  {message}")

        train_tagger(config, directory, log=log, show_progress=False)


def finish_records(task: RunTask, directory: Path, score: bool = True) -> list[dict]:
    """The grid cells' records: one, or one per target (task) of a multi-task run (``score``: see :func:`finish_record`)."""
    if "targets" not in task.record:
        return [finish_record(task, directory, score)]
    metrics = read_json(directory / rundir.METRICS)
    network = rundir.parameters_without_embeddings(directory)
    records = []
    for target in task.record["targets"]:
        scores = metrics["tasks"][target]
        main = get_metric(scores["metric"]).main
        record = {key: value for key, value in task.record.items() if key != "targets"}
        records.append({**record, "target": target, "network_parameters": network, "dataset": scores["dataset"], "task": scores["task"], "metric": scores["metric"],
                        "run_directory": str(directory), "dev": scores["dev"][main], "test": scores.get("test", {}).get(main), "parameters": metrics["parameters"],
                        "seconds": metrics["seconds"], "device": metrics.get("device", "cpu"), "best_epoch": scores.get("best_epoch"), "multitask": True, **cost_of(metrics),
                        "predictions": str(directory / "predictions" / target)})
    return records


def cost_of(metrics: dict) -> dict:
    """What a run cost beyond its time: trainable parameters and peak memory (those the metrics hold)."""
    keys = ("trainable_parameters", "peak_rss_megabytes", "gpu_peak_megabytes")
    return {key: metrics[key] for key in keys if metrics.get(key) is not None}


def finish_record(task: RunTask, directory: Path, score: bool = True) -> dict:
    """The grid cell's record, from the finished run's metrics (without ``score``, a test on another
    dataset not cached yet is left None: nothing is loaded or predicted)."""
    metrics = read_json(directory / rundir.METRICS)
    if "tasks" in metrics:  # a multi-task source run: its record holds the mean dev score
        return {**task.record, "network_parameters": rundir.parameters_without_embeddings(directory), "dataset": metrics["dataset"], "task": metrics["task"],
                "metric": metrics["metric"], "run_directory": str(directory), "dev": max(record["dev"] for record in metrics["history"]), "test": None,
                "parameters": metrics["parameters"], "seconds": metrics["seconds"], "device": metrics.get("device", "cpu")}
    main = get_metric(metrics["metric"]).main
    members = [Path(member) for member in metrics.get("members", [])] or [directory]
    network = sum(rundir.parameters_without_embeddings(member) for member in members)
    record = {**task.record, "network_parameters": network, "dataset": metrics["dataset"], "task": metrics["task"], "metric": metrics["metric"], "run_directory": str(directory),
              "dev": metrics["dev"][main], "test": metrics.get("test", {}).get(main), "parameters": metrics["parameters"], "seconds": metrics["seconds"],
              "device": metrics.get("device", "cpu"), **cost_of(metrics)}
    # did early stopping read labels of the data the test score is on? (not for a source model as it is, nor for a test set elsewhere)
    record["target_dev_labels"] = metrics.get("scheme") != "source_only" and not task.record.get("test_on")
    if task.record.get("test_on"):
        record["test"], record["predictions"] = score_elsewhere(directory, task.record["test_on"], task.config["data"]["data_dir"], score)
    return record


def score_elsewhere(directory: Path, entry: str, data_dir: str | None, score: bool = True) -> tuple[float | None, str]:
    """The run's main score on the test split of ``DATASET[:TASK]`` (cached in the run directory,
    predictions in ``test-on-DATASET/test.conll``): a model trained on one dataset, tested on another
    (not cached and not ``score``: None)."""
    from seqtransfer.config import DataConfig
    from seqtransfer.data.task_data import load_task_data
    from seqtransfer.training.metrics import evaluate

    folder = directory / f"test-on-{slug(entry)}"
    cached = folder / "score.json"
    if cached.is_file():
        return read_json(cached)["score"], str(folder)
    if not score:
        return None, str(folder)
    from seqtransfer.predictor import load

    name, _, task = entry.partition(":")
    data = load_task_data(DataConfig(dataset=name, task=task or None, data_dir=data_dir), ("test",))
    predicted = load(directory, device="cpu").predict_raw(data.tokens("test"))  # one run, or the models of a self-labelling run together
    gold = data.gold("test")
    score = evaluate(gold, predicted, data.metric)[get_metric(data.metric).main]
    data.kind.write_predictions(folder, "test", data.splits["test"], gold, predicted)
    write_json(cached, {"test_on": entry, "score": score})
    return score, str(folder)


def ensemble_tasks(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, seeds: list[int], sources: dict[str, RunTask], only: set[str]) -> list[tuple[RunTask, list[RunTask]]]:
    """(ensemble task, member tasks) for every ensemble method × target × seed."""
    result = []
    for name, method in spec.methods.items():
        if not method.ensemble or not selected(name, only):
            continue
        for target_name in spec.targets:
            for seed in seeds:
                members = [method_task(spec, store, data_dir, member, target_name, seed + offset, sources) for member, offset in map(split_member, method.ensemble)]
                run_id = store.run_id(f"{slug(target_name)}-ensemble-", content_id({"ensemble": [member.run_id for member in members]}))
                record = {"experiment": spec.name, "method": name, "target": target_name, "seed": seed}
                result.append((RunTask(run_id, str(store.run_directory(run_id)), members[0].config, record), members))
    return result


def execute_ensemble(task: RunTask, members: list[RunTask]) -> dict:
    directory = Path(task.directory)
    if not (directory / rundir.METRICS).is_file():
        data = load_task_data(config_from_dict(copy.deepcopy(task.config)).data)
        build_ensemble([Path(member.directory) for member in members], data, directory)
    return finish_record(task, directory)


def is_finished(task: RunTask) -> bool:
    return (Path(task.directory) / rundir.METRICS).is_file()


def kept_records_of(task: RunTask, kept: dict[tuple, dict]) -> list[dict] | None:
    """The kept records of a task's cells (one per target of a multi-task run), if a run of the
    same settings made every one of them; else None."""
    cells = [{**task.record, "target": target} for target in task.record["targets"]] if "targets" in task.record else [task.record]
    cells = [{key: value for key, value in cell.items() if key != "targets"} for cell in cells]
    records = [kept.get(cell_key(cell)) for cell in cells]
    if all(record is not None and run_id_of(record) == task.run_id for record in records):
        return records
    return None


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


def run_experiment(spec: ExperimentSpec, store: ResultsStore, seeds: list[int], backend, data_dir: str | None = None, only: set[str] = frozenset(), log: Log = print,
                   kept: list[dict] = (), on_record: Callable[[dict], None] | None = None) -> list[dict]:
    """Run whatever of the grid is not finished (or kept, see :mod:`~seqtransfer.experiments.kept`) yet;
    returns every record of the experiment."""
    kept_cells = {cell_key(record): record for record in kept if record["experiment"] == spec.name}
    sources = source_tasks(spec, store, data_dir)
    targets = method_tasks(spec, store, data_dir, seeds, sources, only)
    ensembles = ensemble_tasks(spec, store, data_dir, seeds, sources, only)
    kept_ensembles = [records for task, _ in ensembles if not is_finished(task) and (records := kept_records_of(task, kept_cells)) is not None]
    ensembles = [(task, members) for task, members in ensembles if is_finished(task) or kept_records_of(task, kept_cells) is None]
    members_needed = {member.directory for task, members in ensembles if not is_finished(task) for member in members}
    skipped = skippable(targets, kept_cells, members_needed)
    to_train = [task for task in targets if task.directory not in skipped]
    asked = {directory for task in to_train if not task.when_needed for directory in task.dependencies}
    to_train = [task for task in to_train if not task.when_needed or task.directory in asked or is_finished(task)]
    needed = {directory for task in to_train for directory in task.dependencies}
    needed |= {directory for task in sources.values() if task.directory in needed for directory in task.dependencies}
    source_stage = [task for task in sources.values() if task.directory in needed]
    todo = [[task for task in stage if not is_finished(task)] for stage in (source_stage, to_train, [task for task, _ in ensembles])]
    kept_note = f", {len(skipped) + len(kept_ensembles)} kept" if skipped or kept_ensembles else ""
    log(f"{spec.name}: {len(source_stage)} source runs, {len(targets)} target runs, {len(ensembles)} ensembles "
        f"({', '.join(str(len(stage)) for stage in todo)} to train{kept_note})")
    started = time.perf_counter()
    for records in [*skipped.values(), *kept_ensembles]:
        for record in records:
            store.save_record(record)
    for task in to_train:  # cells whose run already exists (trained by this or another experiment)
        if is_finished(task):
            for record in finish_records(task, Path(task.directory)):
                store.save_record(record)
    def save(record: dict) -> None:
        store.save_record(record)
        if on_record:
            on_record(record)

    # One pool of work: a target run starts as soon as its own source is finished.
    backend.run(todo[0] + todo[1], log, on_record=save)
    for task in source_stage:  # source records too, so that analyses can find the source runs
        store.save_record(finish_record(task, Path(task.directory)))
    for task, members in ensembles:
        record = execute_ensemble(task, members)
        save(record)
        if task in todo[2]:
            log(describe(record))
    log(f"{spec.name}: done in {time.perf_counter() - started:.0f} s")
    return merge(kept_cells.values(), store.records(spec.name))


def describe(record: dict) -> str:
    """One log line for a finished run."""
    if record.get("source"):
        what = f"source {record['source']}"
    else:
        what = f"{record['method']} / {record['target']} / seed {record['seed']}"
    test = "-" if record["test"] is None else f"{record['test']:.2f}"
    return f"{what}: dev {record['dev']:.2f}, test {test} ({record['seconds']:.0f} s)"
