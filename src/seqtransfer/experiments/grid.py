"""An experiment file's grid as runs: one :class:`RunTask` per source, per method x target x seed
(and the runs a ``start_from`` method starts from), per multi-task method x seed, and per ensemble.

Every run is identified by a hash of its settings (``store.content_id``) and of the runs it reads,
so the same settings reached from two files are one run. Nothing here trains: see
:mod:`~seqtransfer.experiments.runner`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from seqtransfer.config import RunConfig, apply_overrides, check_values, config_to_dict, result_settings
from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.spec import ExperimentSpec, MethodSpec, split_member
from seqtransfer.experiments.store import ResultsStore, content_id, digest_of, slug
from seqtransfer.files import load_yaml
from seqtransfer.transfer.schemes import get_scheme


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
    selflabel: dict | None = None  # self-labelling settings: the run is rounds of models in DIRECTORY (workflows/selflabel.py)
    when_needed: bool = False  # trained only for a run that needs it, as a source is (a run another method reads, its cell not asked for)
    pseudo: dict | None = None  # {"runs": labelling run directories, "unlabeled", "combination", "threshold", "top_n", "tokenizer"}: label PSEUDO_FILE first
    ensemble_of: list[RunTask] | None = None  # an ensemble's member runs (it trains nothing itself)

    @property
    def source_directory(self) -> str | None:
        return self.config["transfer"]["source"]

    @property
    def dependencies(self) -> list[str]:
        """Run directories that must be finished before this run starts."""
        tagger = self.config["model"].get("tag_tagger")
        read = [*(self.unify or {}).get("runs", {}).values(), *(self.pseudo or {}).get("runs", []), *self.config["transfer"].get("distill_from", [])]
        return [directory for directory in [self.source_directory, tagger, *read] if directory]


def identity_of(config: RunConfig, source_id: str | None, unified: dict | None = None) -> dict:
    """What defines a run's result: the settings that differ from the defaults, without where the
    data lives or how many threads run it (so adding a config field keeps existing ids); for a
    run on unified data, the runs that filled it."""
    values = result_settings(config)
    if unified:
        values.setdefault("multitask", {})["unified"] = unified
    transfer = values.pop("transfer", {})
    transfer.pop("source", None)
    if source_id is not None:
        transfer["source"] = source_id
    if transfer:
        values["transfer"] = transfer
    if config.model.tasks:  # the listed order decides ties of the hierarchy (the round robin's order); ids sort keys
        values.setdefault("model", {})["task_order"] = list(config.model.tasks)
    return values


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
    entries: dict[str, str | dict] = {}
    for name, target in spec.targets.items():
        if target.dataset:
            entries[name] = f"{target.dataset}:{target.task}" if target.task else target.dataset
            continue
        files = {}
        for override in target.overrides:
            key, _, value = override.partition("=")
            if key.startswith("data."):
                files[key.removeprefix("data.")] = load_yaml(value)
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
    """What identifies unified training data: the ids of the sources that filled it, or the digests
    of the method runs that did (a method run's folder prefix depends on which file trained it first)."""
    if unify is None:
        return None
    if isinstance(tasks, dict):  # sources: their ids are the experiment file's names and digests
        ids = {task.directory: task.run_id for task in tasks.values()}
    else:
        ids = {task.directory: digest_of(task.run_id) for task in tasks}
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
        for target_name in spec.targets:
            if target_name not in spec.targets_of(method_name):
                continue
            tasks += [offset_task(spec, store, data_dir, method_name, target_name, seed, offset, sources) for seed in seeds]
    return [*read_tasks(spec, store, data_dir, tasks, sources), *tasks]


def stage_of(method) -> int:
    """The order of methods in the grid: a method's runs come after the runs they read (the run a
    ``start_from`` method starts from, those that give a ``pseudo_labels`` method its labels, a
    ``distill_from`` method's teachers; the runs that fill a ``unify_with`` method's data)."""
    reads = method.start_from is not None or method.pseudo_labels is not None or method.distill_from is not None
    return 2 if method.unify_with is not None else 1 if reads else 0


def method_of(spec: ExperimentSpec, record: dict):
    """The method of a record: its name, or an extra ensemble member's "Name+OFFSET"."""
    return spec.methods.get(record["method"]) or spec.methods[split_member(record["method"])[0]]


def read_tasks(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, tasks: list[RunTask], sources: dict[str, RunTask]) -> list[RunTask]:
    """The runs of other methods that ``tasks`` read (the run a ``start_from`` method starts from; the
    labellers of a ``pseudo_labels`` method; the teachers of a ``distill_from`` one) and lack, their method or target left out by --only or
    --targets: trained first, and only when a run still needs them."""
    have = {task.directory for task in tasks}
    extra: dict[str, RunTask] = {}
    for task in tasks:
        for first in runs_read(spec, store, data_dir, task, sources):
            if first.directory in have:
                continue
            first.when_needed = True
            # a run reached as a method's own seed and as another's seed + offset is recorded as its method's own cell
            if first.directory not in extra or "+" in extra[first.directory].record["method"] and split_member(extra[first.directory].record["method"])[1]:
                extra[first.directory] = first
    return list(extra.values())


def runs_read(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, task: RunTask, sources: dict[str, RunTask]) -> list[RunTask]:
    """The runs of other methods one run reads (same seed, or a teacher's seed + offset)."""
    if not task.record.get("method") or "targets" in task.record:
        return []
    method, seed = method_of(spec, task.record), task.record["seed"]
    read = [(method.start_from["method"], method.start_from["target"], seed)] if method.start_from else []
    read += [(labeller, task.record["target"], seed) for labeller in (method.pseudo_labels or {}).get("from", [])]
    read += [(name, task.record["target"], seed + offset) for name, offset in map(split_member, method.distill_from or [])]
    return [offset_task(spec, store, data_dir, name, target, seed, run_seed - seed, sources) for name, target, run_seed in read]


TARGET_TEXT = "target"  # a method's data.select_like or selflabel unlabeled: the text of the target's test_on dataset


def target_text(spec: ExperimentSpec, target_name: str) -> str:
    """The dataset whose (unlabelled) training text ``target`` stands for: the target's ``test_on``."""
    test_on = spec.target(target_name).test_on
    if not test_on:
        raise SeqTransferError(
            f"target '{target_name}' has no test_on, so a method's '{TARGET_TEXT}' text names nothing",
            path=spec.path,
            hint="give the target test_on: DATASET[:TASK], or name the text's dataset in the method",
        )
    return test_on.partition(":")[0]


def method_task(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, method_name: str, target_name: str, seed: int, sources: dict[str, RunTask]) -> RunTask:
    """One run of a mono-task method on a target with a seed, and what it reads (source, tagger,
    teachers, labellers), each named in its identity by id or digest, never by folder."""
    method = spec.methods[method_name]
    config = method_config(spec, data_dir, method_name, target_name, seed)
    selflabel = dict(method.selflabel) if method.selflabel else None
    if selflabel and selflabel.get("unlabeled") == TARGET_TEXT:
        selflabel["unlabeled"] = target_text(spec, target_name)
    source = method_source(spec, store, data_dir, method_name, target_name, seed, sources)
    config.transfer.source = source.directory if source else None
    # a method's run is named by its settings' digest alone: the folder's readable prefix depends on which file trained it first
    identity = identity_of(config, (digest_of(source.run_id) if method.start_from else source.run_id) if source else None)
    if method.tagger:  # a source run tags the input (model.tag_tagger): its id, not its folder, names the run
        config.model.tag_tagger = sources[method.tagger].directory
        identity.setdefault("model", {})["tag_tagger"] = sources[method.tagger].run_id
    if selflabel:
        identity["selflabel"] = selflabel
    teachers = [method_task(spec, store, data_dir, name, target_name, seed + offset, sources) for name, offset in map(split_member, method.distill_from or [])]
    if teachers:
        identity.setdefault("transfer", {})["distill_from"] = [digest_of(teacher.run_id) for teacher in teachers]
    pseudo = pseudo_settings(spec, store, data_dir, method, target_name, seed, sources)
    if pseudo:
        identity["pseudo_labels"] = {**pseudo, "runs": [digest_of(Path(directory).name) for directory in pseudo["runs"]]}
    run_id = store.run_id(f"{slug(target_name)}-{selflabel['method'] if selflabel else method.scheme}-", content_id(identity))
    if pseudo:
        config.data.pseudo_train = str(store.run_directory(run_id) / PSEUDO_FILE)
    if teachers:
        config.transfer.distill_from = [teacher.directory for teacher in teachers]
    return RunTask(run_id, str(store.run_directory(run_id)), config_to_dict(config), cell_record(spec, method_name, target_name, seed), selflabel=selflabel, pseudo=pseudo)


def method_config(spec: ExperimentSpec, data_dir: str | None, method_name: str, target_name: str, seed: int) -> RunConfig:
    """The config of a method's run on a target: the file's, the target's and the method's overrides,
    then the setting a search selected for them (``spec.selected``); ``target`` text resolved; data annealing's source data."""
    method, target = spec.methods[method_name], spec.target(target_name)
    overrides = [
        *target.overrides,
        f"transfer.scheme={method.scheme}",
        f"train.seed={seed}",
        *method.overrides,
        *method.target_overrides.get(target_name, []),
        *selected_overrides(spec, method_name, target_name),
    ]
    config = base_config(spec, data_dir, target.dataset, target.task, overrides)
    cap = searched_epochs(spec, method_name, target_name)
    if cap is not None:  # as in the search's trials
        config.train.max_epochs = min(config.train.max_epochs, cap)
    if config.data.select_like == TARGET_TEXT:
        config.data.select_like = target_text(spec, target_name)
    if method.anneal:  # data annealing from the target's source data (its training split)
        config.data.anneal_source = spec.sources[target.source].training_data
    return config


def selected_overrides(spec: ExperimentSpec, method_name: str, target_name: str) -> list[str]:
    """The overrides of the setting a search selected for a method and target (none where it has none)."""
    setting = spec.selected.get((method_name, target_name))
    if setting is None:
        return []
    return [f"{key}={json.dumps(value)}" for key, value in setting.items()]


def searched_epochs(spec: ExperimentSpec, method_name: str, target_name: str) -> int | None:
    """The epoch cap of the search that selected a method's setting on a target (its trials' cap, as
    its summary kept it, None for none; the experiment file's for a summary kept before summaries held it), or None."""
    if (method_name, target_name) in spec.selected_epochs:
        return spec.selected_epochs[(method_name, target_name)]
    searches = spec.search.get(method_name, {}) if (method_name, target_name) in spec.selected else {}
    search = searches.get(target_name) or searches.get("*")
    return search.max_epochs if search is not None else None


def method_source(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, method_name: str, target_name: str, seed: int, sources: dict[str, RunTask]) -> RunTask | None:
    """The run a method's run transfers from: another method's run of this seed (``start_from``;
    workflows/train.py starts from a self-labelling run's first model), the method's or the target's source, or none."""
    method = spec.methods[method_name]
    if method.start_from:
        return method_task(spec, store, data_dir, method.start_from["method"], method.start_from["target"], seed, sources)
    name = spec.source_of(method_name, target_name)
    return sources.get(name) if name and get_scheme(method.scheme).uses_source else None


def cell_selection(spec: ExperimentSpec, method_name: str, target_name: str) -> dict | None:
    """The searched settings a cell runs at (``experiment run --selected``): its own selected setting;
    for a cell that reads other cells' runs at searched settings (an ensemble's members, a distilled
    model's teachers, a run it starts from), ``{"read": {"METHOD / TARGET": setting}}``; else None."""
    own = spec.selected.get((method_name, target_name))
    if own is not None or method_name not in spec.methods:
        return own
    read = {f"{method} / {target}": setting for method, target in read_cells(spec.methods[method_name], target_name) if (setting := cell_selection(spec, method, target)) is not None}
    return {"read": read} if read else None


def spec_selection(spec: ExperimentSpec) -> dict[tuple[str, str], dict]:
    """(method, target) -> :func:`cell_selection` of every cell of the file that runs at searched settings."""
    cells = {(method, target): cell_selection(spec, method, target) for method in spec.methods for target in spec.all_targets or spec.targets}
    return {cell: setting for cell, setting in cells.items() if setting is not None}


def read_cells(method: MethodSpec, target_name: str) -> list[tuple[str, str]]:
    """The (method, target) cells whose runs a method's run on a target reads."""
    names = [*method.ensemble, *(method.distill_from or []), *((method.pseudo_labels or {}).get("from") or [])]
    cells = [(split_member(name)[0], target_name) for name in names]
    return cells + ([(method.start_from["method"], method.start_from["target"])] if method.start_from else [])


def cell_record(spec: ExperimentSpec, method_name: str, target_name: str, seed: int) -> dict:
    """The record of a grid cell, before its run's scores: what it is, where its test is, what else to score."""
    target = spec.target(target_name)
    record = {"experiment": spec.name, "method": method_name, "target": target_name, "seed": seed}
    setting = cell_selection(spec, method_name, target_name)
    if setting is not None:
        record["selected_setting"] = setting
    if target.test_on:
        record["test_on"] = target.test_on
    if target.also:
        record["also"] = list(target.also)
    return record


PSEUDO_FILE = "pseudo.conll"  # a pseudo_labels run's labelled target text, in its own folder


def pseudo_settings(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, method, target_name: str, seed: int, sources: dict[str, RunTask]) -> dict | None:
    """What a ``pseudo_labels`` method's run labels its extra training text with: the labelling runs
    of this target and seed, the unlabelled text (``target``: the target's test_on text), the selection."""
    if not method.pseudo_labels:
        return None
    settings = {"combination": "average", "threshold": None, "top_n": None, "tokenizer": "whitespace", "word_column": None, **method.pseudo_labels}
    labellers = settings.pop("from")
    if settings["unlabeled"] == TARGET_TEXT:
        settings["unlabeled"] = target_text(spec, target_name)
    settings["runs"] = [method_task(spec, store, data_dir, name, target_name, seed, sources).directory for name in labellers]
    return settings


def multitask_method_task(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, method_name: str, seed: int, sources: dict[str, RunTask], earlier: list[RunTask]) -> RunTask:
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
    also = {name: list(target.also) for name, target in spec.targets.items() if target.also}
    if also:
        record["also"] = also  # target -> other metrics
    return with_unified(RunTask(run_id, str(store.run_directory(run_id)), config_to_dict(config), record, unify))


def offset_task(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, name: str, target_name: str, seed: int, offset: int, sources: dict[str, RunTask]) -> RunTask:
    """A method's run at ``seed + offset``; another seed's run (an ensemble's extra member, a
    teacher) is its own grid cell "Name+OFFSET", not a row of its method."""
    task = method_task(spec, store, data_dir, name, target_name, seed + offset, sources)
    if offset:
        task.record["method"] = f"{name}+{offset}"
    return task


def selected(name: str, only: set[str]) -> bool:
    return not only or name in only


def ensemble_tasks(spec: ExperimentSpec, store: ResultsStore, data_dir: str | None, seeds: list[int], sources: dict[str, RunTask], only: set[str]) -> list[tuple[RunTask, list[RunTask]]]:
    """(ensemble task, member tasks) for every ensemble method × target × seed (the targets the
    ensemble and all its members run on)."""
    result = []
    for name, method in spec.methods.items():
        if not method.ensemble or not selected(name, only):
            continue
        for target_name in spec.targets_of(name):
            for seed in seeds:
                members = [offset_task(spec, store, data_dir, member, target_name, seed, offset, sources) for member, offset in map(split_member, method.ensemble)]
                # named by its members' digests: their folders' prefixes depend on which file trained them first
                run_id = store.run_id(f"{slug(target_name)}-ensemble-", content_id({"ensemble": [digest_of(member.run_id) for member in members]}))
                task = RunTask(run_id, str(store.run_directory(run_id)), members[0].config, cell_record(spec, name, target_name, seed), ensemble_of=members)
                result.append((task, members))
    return result
