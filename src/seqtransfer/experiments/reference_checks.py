"""The checks of an experiment file's references, run when it loads: every name the file uses is
defined (sources, targets, methods, metrics) and every combination can run (multi-task methods and
sources, ensembles, methods that read other methods' runs, self-labelling, the hierarchy).

``spec.py`` calls :func:`check_references` and imports the public checks back.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from seqtransfer.corpora.task_data import resolve_task
from seqtransfer.data.metrics import METRICS
from seqtransfer.data.registry import DATASETS
from seqtransfer.data.tokenize import TOKENIZERS
from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.experiment_file import ExperimentSpec, MethodSpec, TargetSpec, booleans_read, reads_runs, split_member
from seqtransfer.models.multitask import task_order
from seqtransfer.tasks import get_task_kind
from seqtransfer.transfer.schemes import get_scheme
from seqtransfer.workflows.pseudolabels import COMBINATIONS
from seqtransfer.workflows.selflabel import SelfLabelSettings, check_settings


def check_selflabel(name: str, values: object, path: Path) -> None:
    """A method's ``selflabel`` block: the settings of :class:`~seqtransfer.workflows.selflabel.SelfLabelSettings` (target aside)."""
    if not isinstance(values, dict) or "method" not in values or "unlabeled" not in values:
        raise SeqTransferError(f"method '{name}': selflabel needs 'method' and 'unlabeled'", path=path, hint="e.g. selflabel: {method: self_training, unlabeled: tweebank, top_n: 500}")
    allowed = [item.name for item in fields(SelfLabelSettings) if item.name != "target"]
    unknown = [key for key in values if key not in allowed]
    if unknown:
        raise SeqTransferError(f"method '{name}': unknown selflabel key(s) {', '.join(map(str, unknown))}", path=path, hint=f"keys: {', '.join(allowed)}")
    values.update(booleans_read(SelfLabelSettings, values, f"methods.{name}.selflabel", path))
    try:
        check_settings(SelfLabelSettings(**values))
    except SeqTransferError as error:
        raise SeqTransferError(f"method '{name}': {error.message}", path=path, hint=error.hint) from None


PSEUDO_KEYS = ("from", "unlabeled", "combination", "threshold", "top_n", "tokenizer", "word_column")


def check_read_method(spec: ExperimentSpec, name: str, method: MethodSpec, read: str, role: str, path: Path, example: str) -> None:
    """A method whose runs another method reads (a labeller, a teacher): another mono-task method of
    the file that reads no method's runs itself (the grid trains such runs first, one level deep), is
    not self-labelling (its folder holds several models), and runs on each of the reader's targets."""
    first = spec.methods.get(split_member(read)[0]) if isinstance(read, str) else None
    if first is None or not first.scheme or first.multitask or split_member(read)[0] == name:
        raise SeqTransferError(f"method '{name}': {role} must name other mono-task methods of the file, got '{read}'", path=path, hint=example)
    if reads_runs(first) or first.selflabel is not None:
        raise SeqTransferError(f"method '{name}': {role} '{read}' reads other runs or self-labels; name a method trained from its data or a source", path=path, hint=example)
    missing = [target for target in (method.targets or spec.targets) if first.targets is not None and target not in first.targets]
    if missing:
        raise SeqTransferError(f"method '{name}': {role} '{read}' has no run on target '{missing[0]}'", path=path, hint="give both methods the same targets")


def check_pseudo_labels(spec: ExperimentSpec, name: str, method: MethodSpec, path: Path) -> None:
    """A method's ``pseudo_labels``: mono-task methods of the file with runs on each of its targets label the text."""
    values = method.pseudo_labels
    example = "e.g. pseudo_labels: {from: [Source only, Source only (PTB)], unlabeled: target, top_n: 1000}"
    if not isinstance(values, dict) or not {"from", "unlabeled"} <= set(values) or not set(values) <= set(PSEUDO_KEYS) or not isinstance(values["from"], list) or not values["from"]:
        raise SeqTransferError(f"method '{name}': pseudo_labels needs 'from' (a list of methods) and 'unlabeled'", path=path, hint=f"{example}; keys: {', '.join(PSEUDO_KEYS)}")
    for labeller in values["from"]:
        check_read_method(spec, name, method, labeller, "pseudo_labels.from", path, example)
    wrong = check_pseudo_values(values, COMBINATIONS, TOKENIZERS)
    if wrong:
        raise SeqTransferError(f"method '{name}': pseudo_labels.{wrong}", path=path, hint=example)
    if method.multitask or method.selflabel is not None:
        raise SeqTransferError(f"method '{name}': pseudo_labels trains one mono-task model on the labelled text", path=path, hint="drop multitask: or selflabel:")
    if any(override.startswith("data.pseudo_train=") for override in method.every_override()):
        raise SeqTransferError(f"method '{name}': pseudo_labels writes the run's data.pseudo_train; it cannot also be set", path=path, hint="drop the data.pseudo_train override")


def check_pseudo_values(values: dict, combinations, tokenizers) -> str | None:
    """What is wrong with a ``pseudo_labels`` block's settings ("top_n must be ..."), or None."""
    number = (int, float)
    if values.get("combination", "average") not in combinations:
        return f"combination must be one of {', '.join(combinations)}"
    if values.get("tokenizer", "whitespace") not in tokenizers:
        return f"tokenizer must be one of {', '.join(tokenizers)}"
    threshold, top_n, column = values.get("threshold"), values.get("top_n"), values.get("word_column")
    if threshold is not None and (not isinstance(threshold, number) or isinstance(threshold, bool) or not 0 < threshold <= 1):
        return f"threshold must be a probability in (0, 1], got {threshold!r}"
    for key, value in (("top_n", top_n), ("word_column", column)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            return f"{key} must be a whole number of at least 1, got {value!r}"
    return None


def check_teachers(spec: ExperimentSpec, name: str, method: MethodSpec, path: Path) -> None:
    """A method's ``distill_from``: other mono-task methods of the file with runs on each of its targets."""
    example = "e.g. distill_from: [Fine-tuning, From-scratch200+1000]"
    if not isinstance(method.distill_from, list) or not method.distill_from or method.multitask or not method.scheme:
        raise SeqTransferError(f"method '{name}': distill_from lists the teacher methods of a mono-task method", path=path, hint=example)
    for teacher in method.distill_from:
        check_read_method(spec, name, method, teacher, "distill_from", path, example)
    if any(override.startswith("transfer.distill_from=") for override in method.every_override()):
        raise SeqTransferError(f"method '{name}': distill_from sets the run's transfer.distill_from; it cannot also be set", path=path, hint="drop the transfer.distill_from override")


def check_start_from(spec: ExperimentSpec, name: str, method: MethodSpec, path: Path) -> None:
    """A method's ``start_from``: a mono-task method's run on one of the file's targets, which a
    transferring scheme of this mono-task method starts from instead of a source."""
    start = method.start_from
    example = 'e.g. start_from: {method: Tri-training, target: "TweeBank, no labels"}'
    if not isinstance(start, dict) or set(start) != {"method", "target"} or not all(isinstance(value, str) for value in start.values()):
        raise SeqTransferError(f"method '{name}': start_from names a 'method' and a 'target'", path=path, hint=example)
    first = spec.methods.get(start["method"])
    if first is None or not first.scheme or first.multitask or reads_runs(first) or start["method"] == name:
        raise SeqTransferError(f"method '{name}': start_from must name another mono-task method of the file that starts from a source, got '{start['method']}'", path=path, hint=example)
    if start["target"] not in spec.targets or (first.targets is not None and start["target"] not in first.targets):
        raise SeqTransferError(f"method '{name}': method '{start['method']}' has no run on target '{start['target']}'", path=path, hint=f"its targets: {', '.join(first.targets or spec.targets)}")
    if method.multitask or method.source is not None or method.anneal or not method.scheme or not get_scheme(method.scheme).uses_source:
        raise SeqTransferError(
            f"method '{name}': start_from replaces the source of a mono-task scheme that transfers (finetune, pretrand, ...)",
            path=path,
            hint="give the method such a scheme, and no source:, anneal: or multitask:",
        )


def check_references(spec: ExperimentSpec, path: Path) -> None:
    """Every name the file uses is defined and every combination can run, told when the file loads.
    Three passes over the methods: a later check may read another method that an earlier pass checked."""
    _check_targets(spec, path)
    for name, method in spec.methods.items():
        _check_method_kind(spec, name, method, path)
    _check_hierarchy(spec, path)
    _check_sources(spec, path)
    _check_dataset_tasks(spec, path)
    for name, method in spec.methods.items():
        _check_method_sources(spec, name, method, path)
    for name, method in spec.methods.items():
        _check_method_links(spec, name, method, path)
    _check_comparisons(spec, path)


def check_metrics_fit(name: str, target: TargetSpec, path: Path) -> None:
    """A registered target's ``also`` metrics score its task's kind (span F1 a tagging task,
    Spearman a regression, the positive class's F1 a sentence task): refused before any run
    trains, not after it. Targets of user files are checked when their data is read."""
    dataset = DATASETS.get(str(target.dataset).partition("+")[0]) if target.dataset else None
    if dataset is None or not target.also:
        return
    kind = get_task_kind(dataset.kinds.get(resolve_task(dataset, target.task), "tagging"))
    unfit = [metric for metric in target.also if metric not in kind.metrics]
    if unfit:
        raise SeqTransferError(f"target '{name}': {', '.join(unfit)} does not score a {kind.name} task", path=path, hint=f"also: any of {', '.join(kind.metrics)}")


def _check_targets(spec: ExperimentSpec, path: Path) -> None:
    """A target's extra metrics exist and its source is defined."""
    for name, target in spec.targets.items():
        unknown = [metric for metric in target.also if metric not in METRICS] if isinstance(target.also, list) else [target.also]
        if unknown:
            raise SeqTransferError(f"target '{name}': 'also' must list metrics, got {', '.join(map(str, unknown))}", path=path, hint=f"metrics: {', '.join(METRICS)}")
        check_metrics_fit(name, target, path)
        if target.paper_metric is not None and target.paper_metric not in target.also:
            raise SeqTransferError(f"target '{name}': paper_metric '{target.paper_metric}' is not one of its 'also' metrics", path=path, hint=f"add also: [{target.paper_metric}]")
        if target.source is not None and target.source not in spec.sources:
            raise SeqTransferError(f"target '{name}' names unknown source '{target.source}'", path=path, hint=f"sources: {', '.join(spec.sources)}")


def _check_method_kind(spec: ExperimentSpec, name: str, method: MethodSpec, path: Path) -> None:
    """A scheme or an ensemble of known methods."""
    if bool(method.scheme) == bool(method.ensemble):
        raise SeqTransferError(f"method '{name}' needs exactly one of 'scheme' or 'ensemble'", path=path)
    for member in method.ensemble:
        if split_member(member)[0] not in spec.methods:
            raise SeqTransferError(f"ensemble '{name}' names unknown method '{member}'", path=path)
        if spec.methods[split_member(member)[0]].ensemble:  # an ensemble of ensembles (or two naming each other) has no run to build on
            raise SeqTransferError(
                f"ensemble '{name}' names ensemble '{member}': an ensemble's members are trained methods", path=path, hint=f"list the trained methods of '{member}' in '{name}' instead"
            )


def _check_hierarchy(spec: ExperimentSpec, path: Path) -> None:
    """A cycle or an unknown input, told before hours of source training."""
    if spec.hierarchy:
        try:
            task_order(spec.hierarchy)
        except SeqTransferError as error:
            raise SeqTransferError(f"hierarchy: {error.message}", path=path, hint=error.hint) from None


def _check_sources(spec: ExperimentSpec, path: Path) -> None:
    """A source is one dataset or a multi-task set over the hierarchy, unified by mono-task sources."""
    for name, source in spec.sources.items():
        if source.dataset and source.multitask:
            raise SeqTransferError(f"source '{name}' has both 'dataset' and 'multitask'", path=path, hint="a multi-task source names its datasets under 'multitask'")
        if source.multitask and set(source.multitask) != set(spec.hierarchy):
            raise SeqTransferError(f"multi-task source '{name}' must name the tasks of 'hierarchy' ({', '.join(spec.hierarchy)})", path=path)
        if source.unify_with is not None:
            if not source.multitask or set(source.unify_with) != set(spec.hierarchy):
                raise SeqTransferError(f"source '{name}': unify_with needs a multi-task source and one mono-task source per task of 'hierarchy'", path=path)
            for task, filler in source.unify_with.items():
                if filler not in spec.sources or spec.sources[filler].multitask:
                    raise SeqTransferError(f"source '{name}': unify_with.{task} must name a mono-task source, got '{filler}'", path=path)


def _check_dataset_tasks(spec: ExperimentSpec, path: Path) -> None:
    """Each registered dataset a source or target names has the task it asks for (each part of
    ``a+b``, its own ``a:task`` or the entry's task): a misspelt task is told before any run
    directory is made, not by the first run that reads it."""
    entries = [(f"source '{name}'", source.dataset, source.task) for name, source in spec.sources.items()]
    entries += [(f"target '{name}'", target.dataset, target.task) for name, target in spec.targets.items()]
    entries += [(f"source '{name}', task {task}", dataset, None) for name, source in spec.sources.items() for task, dataset in (source.multitask or {}).items() if isinstance(dataset, str)]
    for where, dataset, task in entries:
        for part in str(dataset or "").split("+"):
            name, _, own_task = part.partition(":")
            if name in DATASETS and (own_task or task):
                try:
                    resolve_task(DATASETS[name], own_task or task)
                except SeqTransferError as error:
                    raise SeqTransferError(f"{where}: {error.message}", path=path, hint=error.hint) from None


def _check_method_sources(spec: ExperimentSpec, name: str, method: MethodSpec, path: Path) -> None:
    """The sources, taggers and annealing data a method reads, and whether it is multi-task where they are."""
    for target_name in (method.targets or spec.targets) if method.anneal else ():
        if target_name not in spec.targets:
            raise SeqTransferError(f"method '{name}' names unknown target '{target_name}'", path=path, hint=f"targets: {', '.join(spec.targets)}")
        source = spec.sources.get(spec.targets[target_name].source or "")
        if source is None or not source.training_data:
            raise SeqTransferError(
                f"method '{name}' anneals from each target's source data; target '{target_name}' has no mono-task source",
                path=path,
                hint="give the target a source: NAME with a dataset, or list the method's targets:",
            )
    if method.tagger is not None and method.tagger not in spec.sources:
        raise SeqTransferError(f"method '{name}' names unknown tagger source '{method.tagger}'", path=path, hint=f"sources: {', '.join(spec.sources)}")
    named = list(method.source.values()) if isinstance(method.source, dict) else [method.source] if method.source else []
    for source in named:
        if source not in spec.sources:
            raise SeqTransferError(f"method '{name}' names unknown source '{source}'", path=path, hint=f"sources: {', '.join(spec.sources)}")
    if isinstance(method.source, dict) and (method.multitask or not set(method.source) <= set(spec.targets)):
        raise SeqTransferError(f"method '{name}': a mapping of sources names targets of a mono-task method", path=path, hint=f"targets: {', '.join(spec.targets)}")
    if method.multitask:
        if set(spec.hierarchy) != set(spec.targets):
            raise SeqTransferError(f"multi-task method '{name}' needs a 'hierarchy' over the targets ({', '.join(spec.targets)})", path=path)
        if method.source is not None and not spec.sources[method.source].multitask:
            raise SeqTransferError(f"multi-task method '{name}' needs a multi-task source, '{method.source}' is not", path=path)
    if method.multitask and method.scheme and method.scheme != "scratch" and not method.source:
        raise SeqTransferError(f"multi-task method '{name}' transfers ({method.scheme}) but names no multi-task source", path=path, hint="add source: NAME of a source with 'multitask:'")
    if not method.multitask and isinstance(method.source, str) and spec.sources.get(method.source) and spec.sources[method.source].multitask:
        raise SeqTransferError(f"mono-task method '{name}' names multi-task source '{method.source}'", path=path, hint="add multitask: true, or name a mono-task source")
    for member in method.ensemble:
        member_method = spec.methods.get(split_member(member)[0])
        if member_method is not None and member_method.multitask:
            raise SeqTransferError(f"ensemble '{name}' names multi-task method '{member}'", path=path, hint="ensembles average mono-task runs")
    if method.unify_with is not None:
        filler = spec.methods.get(method.unify_with)
        if not method.multitask or filler is None or not filler.scheme or filler.multitask:
            raise SeqTransferError(f"method '{name}': unify_with needs a multi-task method and names a mono-task method, got '{method.unify_with}'", path=path)


def _check_method_links(spec: ExperimentSpec, name: str, method: MethodSpec, path: Path) -> None:
    """What a method reads of other methods (start, pseudo-labels, teachers, self-labelling) and its targets."""
    if not isinstance(method.target_overrides, dict) or not all(isinstance(values, list) and all(isinstance(value, str) for value in values) for values in method.target_overrides.values()):
        raise SeqTransferError(f"method '{name}': 'target_overrides' must map targets to lists of overrides", path=path, hint='e.g. target_overrides: {SST-2: ["train.max_epochs=3"]}')
    if method.start_from is not None:
        check_start_from(spec, name, method, path)
    if method.pseudo_labels is not None:
        check_pseudo_labels(spec, name, method, path)
    if method.distill_from is not None:
        check_teachers(spec, name, method, path)
    if method.selflabel is not None:
        check_selflabel(name, method.selflabel, path)
    unknown = [target for target in [*(method.targets or []), *method.target_overrides] if target not in spec.targets]
    if unknown:
        raise SeqTransferError(f"method '{name}' names unknown target(s) {', '.join(map(str, unknown))}", path=path, hint=f"targets: {', '.join(spec.targets)}")
    for option in ("targets", "target_overrides"):
        if getattr(method, option) and method.multitask:
            raise SeqTransferError(f"multi-task method '{name}' trains one model over every target: it takes no '{option}'", path=path)
    if method.target_overrides and method.ensemble:
        raise SeqTransferError(f"ensemble '{name}' trains nothing: its members' runs take their own settings", path=path, hint="give target_overrides to a member method")
    outside = [target for target in method.target_overrides if method.targets is not None and target not in method.targets]
    if outside:
        raise SeqTransferError(f"method '{name}' has target_overrides for {', '.join(outside)}, where it does not run", path=path, hint=f"its targets: {', '.join(method.targets)}")


def _check_comparisons(spec: ExperimentSpec, path: Path) -> None:
    """The reference method and the significance pairs name methods of the file."""
    if spec.reference is not None and spec.reference not in spec.methods:
        raise SeqTransferError(f"reference method '{spec.reference}' is not among the methods", path=path)
    for pair in spec.significance:
        if not isinstance(pair, list) or len(pair) != 2 or any(method not in spec.methods for method in pair):
            raise SeqTransferError(
                f"significance pair {pair!r} must name two methods of the file", path=path, hint='e.g. - [PretRand, Fine-tuning]; quote a name that holds a comma: - ["A (b, c)", D]'
            )
