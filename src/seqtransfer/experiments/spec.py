"""Experiment files: the YAML that describes a grid reproducing one paper table.

    name: pretrand_table4
    title: "PretRand paper, Table 4: ..."
    command: seqtransfer experiment run experiments/pretrand_table4.yaml --seeds 3
    overrides: [train.threads=1]                 # applied to every run
    sources:                                     # trained once, shared by every method and seed
      ner: {dataset: conll2003, task: ner}
    targets:
      wnut: {dataset: wnut17, source: ner}
    methods:
      From-scratch200: {scheme: scratch}
      Fine-tuning: {scheme: finetune}
      Ensemble (1p+1r): {ensemble: [Fine-tuning, From-scratch200]}   # "Name+1000": seed offset
    reference: From-scratch200
    significance: [[Fine-tuning, From-scratch200]]
    paper: {Fine-tuning: {wnut: 41.25}, ...}

Multi-task methods (MuTSPad paper): ``hierarchy`` names the targets as tasks of one hierarchical
model; a method with ``multitask: true`` trains one model on every target per seed (one record
per target); a source with ``multitask:`` (task -> "dataset:task") is a multi-task source run,
chosen by a method's ``source:``.

    hierarchy: {POS: [], CK: [POS], NER: [POS, CK], DP: [POS, CK]}
    sources:
      EnglishAll: {multitask: {POS: "conll2000+ptb_sample:pos", CK: "conll2000:chunk", ...}}
    methods:
      Multi-task: {scheme: scratch, multitask: true}
      MuTSPad: {scheme: finetune, multitask: true, source: EnglishAll}

Dataset unification (``seqtransfer unify``) as part of a grid: a multi-task source with
``unify_with: {POS: pos_news, ...}`` trains on its datasets unified by those mono-task sources;
a multi-task method with ``unify_with: Mono-task`` trains on the targets unified by that method's
runs of the same seed.

A method may add to its training data text that other methods' runs (same target and seed) label
together (``seqtransfer pseudolabel`` inside the grid):

    Multi-source pseudo-labels: {scheme: scratch, pseudo_labels: {from: [Source only, Source only (PTB)], unlabeled: target, top_n: 1000}}

A target may ask for other metrics than its own, scored from each run's predictions and reported
in a table of their own: ``CK: {dataset: tchunk, source: chunk_news, also: [span_f1]}``; with
``paper_metric: span_f1`` (one of ``also``) the paper table compares that score with the paper's.

A method may start from another method's run instead of a source (same seed), e.g. fine-tuning
on a few target labels the model a label-free method made (a self-labelling run: its first model):

    methods:
      SFT after tri-training: {scheme: finetune, targets: [10 % labels], start_from: {method: Tri-training, target: no labels}}

Published results that are not ours (shown above our rows by ``report``), each with its source,
the flags of the PretRand paper's Table 7 legend and ``n/a`` (or null) where it reports nothing:

    published:
      - {name: "ARK tagger (Owoputi et al., 2013)", source: "PretRand paper, Table 7", flags: [external],
         scores: {TPoS: 90.40, ArK: 93.2, TweeBank: 94.6, TChunk: n/a, WNUT: n/a}}

Nothing in the file is executed: it is read with YAML's safe loader and checked key by key.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields
from pathlib import Path

from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_yaml_mapping


@dataclass
class SourceSpec:
    dataset: str | None = None
    task: str | None = None
    overrides: list[str] = field(default_factory=list)
    multitask: dict[str, str | dict] | None = None  # a multi-task source: task of ``hierarchy`` -> "dataset:task" (or a mapping of files)
    unify_with: dict[str, str] | None = None  # a multi-task source trained on unified data: task -> the mono-task source that fills it

    @property
    def training_data(self) -> str | None:
        """``dataset[:task]`` of the registry, or the training file a ``data.train=`` override names (data annealing reads it)."""
        if self.dataset:
            return f"{self.dataset}:{self.task}" if self.task else self.dataset
        return next((override.split("=", 1)[1] for override in self.overrides if override.startswith("data.train=")), None)

    @property
    def name(self) -> str:
        """What names the source's run folder."""
        return self.dataset or ("multitask" if self.multitask else "custom")


@dataclass
class TargetSpec:
    dataset: str
    task: str | None = None
    source: str | None = None  # a key of ``sources``
    overrides: list[str] = field(default_factory=list)
    test_on: str | None = None  # "DATASET[:TASK]": the test split scored instead of the target's own (cross-lingual, cross-domain)
    also: list[str] = field(default_factory=list)  # other metrics scored from each run's predictions and reported beside the main one (MuTSPad's chunk F1)
    paper_metric: str | None = None  # the metric of the paper's numbers, if not the main one (one of ``also``): the paper table and NRGs compare it


@dataclass
class MethodSpec:
    scheme: str | None = None
    overrides: list[str] = field(default_factory=list)
    ensemble: list[str] = field(default_factory=list)  # member methods, "Name" or "Name+OFFSET"
    multitask: bool = False  # one hierarchical model over every target (``hierarchy``)
    source: str | dict[str, str] | None = None  # a key of ``sources`` used instead of each target's own (a multi-task source), or target -> source
    unify_with: str | None = None  # a multi-task method trained on unified target data, filled by this method's runs (same seed)
    targets: list[str] | None = None  # only these targets (e.g. where the source's labels are the target's); None = all
    selflabel: dict | None = None  # rounds of self-labelling around the scheme (workflows/selflabel.py): {method, unlabeled, rounds, pool, top_n, ...}
    tagger: str | None = None  # a key of ``sources``: a tagging run whose predicted tags the model reads as input (model.tag_tagger)
    anneal: bool = False  # data annealing: mix the training data of each target's source into its training (data.anneal_source)
    start_from: dict[str, str] | None = None  # {method: NAME, target: TARGET}: transfer from that method's run on that target, same seed (a label-free model, then a few labels)
    distill_from: list[str] | None = None  # teacher methods ("Name" or "Name+OFFSET"): their runs of the same target and seed (+ offset), distilled into this one (transfer.distill_from)
    pseudo_labels: dict | None = None  # {from: [METHOD, ...], unlabeled: TEXT, combination, threshold, top_n, tokenizer}: those methods' runs (same target, seed) label TEXT, added to the training data


PUBLISHED_FLAGS = {  # the legend of the PretRand paper's Table 7
    "contextual": "contextualised representations",
    "bert": "a pretrained BERT",
    "crf": "a CRF classifier",
    "external": "normalisation dictionaries, regular expressions or external knowledge",
}


@dataclass
class PublishedSpec:
    """A published result row (not ours): score per target, None where the publication has none."""

    name: str
    source: str
    scores: dict[str, float | str | None]
    flags: list[str] = field(default_factory=list)
    note: str = ""


@dataclass
class ExperimentSpec:
    name: str
    title: str
    command: str
    targets: dict[str, TargetSpec]
    methods: dict[str, MethodSpec]
    sources: dict[str, SourceSpec] = field(default_factory=dict)
    reference: str | None = None
    overrides: list[str] = field(default_factory=list)
    significance: list[list[str]] = field(default_factory=list)
    paper: dict[str, dict[str, float]] = field(default_factory=dict)
    paper_split: str = "test"  # the split the paper's numbers are of (the To-tune paper's Table 5: dev): the report's main tables show it
    published: list[PublishedSpec] = field(default_factory=list)
    search: dict = field(default_factory=dict)  # method -> target (or "*") -> SearchSpec (experiments/search.py)
    notes: str = ""
    hierarchy: dict[str, list[str]] = field(default_factory=dict)  # target -> targets it reads (multi-task methods)
    path: str = ""
    all_targets: dict[str, TargetSpec] = field(default_factory=dict)  # every target of the file (``targets`` may be narrowed to those one command runs)

    def targets_of(self, name: str) -> list[str]:
        """The targets a method has cells on, in the file's order: its own ``targets`` (none listed:
        all); an ensemble's, only those where every member runs too."""
        method = self.methods[name]
        kinds = [method, *(self.methods[split_member(member)[0]] for member in method.ensemble or [])]
        return [target for target in self.targets if all(kind.targets is None or target in kind.targets for kind in kinds)]


INTERNAL = ("path", "all_targets")  # ExperimentSpec fields the file does not set


def _build(kind: type, values: object, where: str, path: Path):
    """Instantiate a spec dataclass from a mapping, naming unknown keys and missing ones."""
    if not isinstance(values, dict):
        raise SeqTransferError(f"'{where}' must be a mapping", path=path)
    names = [item.name for item in fields(kind) if item.name not in INTERNAL]
    for key in values:
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            suggestion = f"did you mean '{close[0]}'? " if close else ""
            raise SeqTransferError(f"unknown key '{key}' in '{where}'", path=path, hint=f"{suggestion}valid keys: {', '.join(names)}")
    try:
        return kind(**booleans_read(kind, values, where, path))
    except TypeError as error:
        raise SeqTransferError(f"'{where}' is incomplete ({error})", path=path) from None


def booleans_read(kind: type, values: dict, where: str, path: Path) -> dict:
    """``values`` with each of ``kind``'s boolean fields a boolean: YAML files are read with YAML
    1.2's true / false (files.load_yaml), and yes / no / on / off, which YAML 1.1 read as
    booleans, still are; anything else is one error line."""
    from seqtransfer.config import YAML11_BOOLEANS

    read = dict(values)
    for item in fields(kind):
        value = read.get(item.name)
        if item.type not in ("bool", bool) or value is None or isinstance(value, bool):
            continue
        if isinstance(value, str) and value.lower() in YAML11_BOOLEANS:
            read[item.name] = YAML11_BOOLEANS[value.lower()]
        else:
            raise SeqTransferError(f"'{where}.{item.name}' must be true or false, got {value!r}", path=path)
    return read


def check_selflabel(name: str, values: object, path: Path) -> None:
    """A method's ``selflabel`` block: the settings of :class:`~seqtransfer.workflows.selflabel.SelfLabelSettings` (target aside)."""
    from seqtransfer.workflows.selflabel import SelfLabelSettings, check_settings

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


def split_member(member: str) -> tuple[str, int]:
    """An ensemble member: "Name+1000" -> ("Name", 1000); "Name" or "A + B" -> (itself, 0)."""
    name, _, offset = member.rpartition("+")
    return (name, int(offset)) if name and offset.isdigit() else (member, 0)


PSEUDO_KEYS = ("from", "unlabeled", "combination", "threshold", "top_n", "tokenizer", "word_column")


def reads_runs(method: MethodSpec) -> bool:
    """Whether a method's runs read other methods' runs (start_from, pseudo_labels, distill_from)."""
    return any(value is not None for value in (method.start_from, method.pseudo_labels, method.distill_from))


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
    from seqtransfer.data.tokenize import TOKENIZERS
    from seqtransfer.workflows.pseudolabels import COMBINATIONS

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
    if any(override.startswith("data.pseudo_train=") for override in method.overrides):
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
    if any(override.startswith("transfer.distill_from=") for override in method.overrides):
        raise SeqTransferError(f"method '{name}': distill_from sets the run's transfer.distill_from; it cannot also be set", path=path, hint="drop the transfer.distill_from override")


def check_start_from(spec: ExperimentSpec, name: str, method: MethodSpec, path: Path) -> None:
    """A method's ``start_from``: a mono-task method's run on one of the file's targets, which a
    transferring scheme of this mono-task method starts from instead of a source."""
    from seqtransfer.transfer.schemes import get_scheme

    start = method.start_from
    example = 'e.g. start_from: {method: Tri-training, target: "TweeBank, no labels"}'
    if not isinstance(start, dict) or set(start) != {"method", "target"} or not all(isinstance(value, str) for value in start.values()):
        raise SeqTransferError(f"method '{name}': start_from names a 'method' and a 'target'", path=path, hint=example)
    first = spec.methods.get(start["method"])
    if first is None or not first.scheme or first.multitask or reads_runs(first) or start["method"] == name:
        raise SeqTransferError(f"method '{name}': start_from must name another mono-task method of the file that starts from a source, got '{start['method']}'", path=path, hint=example)
    if start["target"] not in spec.targets or (first.targets is not None and start["target"] not in first.targets):
        raise SeqTransferError(f"method '{name}': method '{start['method']}' has no run on target '{start['target']}'", path=path,
                               hint=f"its targets: {', '.join(first.targets or spec.targets)}")
    if method.multitask or method.source is not None or method.anneal or not method.scheme or not get_scheme(method.scheme).uses_source:
        raise SeqTransferError(f"method '{name}': start_from replaces the source of a mono-task scheme that transfers (finetune, pretrand, ...)", path=path,
                               hint="give the method such a scheme, and no source:, anneal: or multitask:")


def _check_references(spec: ExperimentSpec, path: Path) -> None:
    """Every name the file uses is defined and every combination can run, told when the file loads.
    Three passes over the methods: a later check may read another method that an earlier pass checked."""
    _check_targets(spec, path)
    for name, method in spec.methods.items():
        _check_method_kind(spec, name, method, path)
    _check_hierarchy(spec, path)
    _check_sources(spec, path)
    for name, method in spec.methods.items():
        _check_method_sources(spec, name, method, path)
    for name, method in spec.methods.items():
        _check_method_links(spec, name, method, path)
    _check_comparisons(spec, path)


def check_metrics_fit(name: str, target: TargetSpec, path: Path) -> None:
    """A registered target's ``also`` metrics score its task's kind (span F1 a tagging task,
    Spearman a regression, the positive class's F1 a sentence task): refused before any run
    trains, not after it. Targets of user files are checked when their data is read."""
    from seqtransfer.data.registry import DATASETS
    from seqtransfer.data.task_data import resolve_task
    from seqtransfer.tasks import get_task_kind

    dataset = DATASETS.get(str(target.dataset).partition("+")[0]) if target.dataset else None
    if dataset is None or not target.also:
        return
    kind = get_task_kind(dataset.kinds.get(resolve_task(dataset, target.task), "tagging"))
    unfit = [metric for metric in target.also if metric not in kind.metrics]
    if unfit:
        raise SeqTransferError(f"target '{name}': {', '.join(unfit)} does not score a {kind.name} task", path=path, hint=f"also: any of {', '.join(kind.metrics)}")


def _check_targets(spec: ExperimentSpec, path: Path) -> None:
    """A target's extra metrics exist and its source is defined."""
    from seqtransfer.data.metrics import METRICS

    for name, target in spec.targets.items():
        unknown = [metric for metric in target.also if metric not in METRICS] if isinstance(target.also, list) else [target.also]
        if unknown:
            raise SeqTransferError(f"target '{name}': 'also' must list metrics, got {', '.join(map(str, unknown))}", path=path, hint=f"metrics: {', '.join(METRICS)}")
        check_metrics_fit(name, target, path)
        if target.paper_metric is not None and target.paper_metric not in target.also:
            raise SeqTransferError(f"target '{name}': paper_metric '{target.paper_metric}' is not one of its 'also' metrics", path=path,
                                   hint=f"add also: [{target.paper_metric}]")
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
            raise SeqTransferError(f"ensemble '{name}' names ensemble '{member}': an ensemble's members are trained methods", path=path,
                                   hint=f"list the trained methods of '{member}' in '{name}' instead")


def _check_hierarchy(spec: ExperimentSpec, path: Path) -> None:
    """A cycle or an unknown input, told before hours of source training."""
    if spec.hierarchy:
        from seqtransfer.models.multitask import task_order

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


def _check_method_sources(spec: ExperimentSpec, name: str, method: MethodSpec, path: Path) -> None:
    """The sources, taggers and annealing data a method reads, and whether it is multi-task where they are."""
    for target_name in (method.targets or spec.targets) if method.anneal else ():
        if target_name not in spec.targets:
            raise SeqTransferError(f"method '{name}' names unknown target '{target_name}'", path=path, hint=f"targets: {', '.join(spec.targets)}")
        source = spec.sources.get(spec.targets[target_name].source or "")
        if source is None or not source.training_data:
            raise SeqTransferError(f"method '{name}' anneals from each target's source data; target '{target_name}' has no mono-task source", path=path,
                                   hint="give the target a source: NAME with a dataset, or list the method's targets:")
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
    if method.start_from is not None:
        check_start_from(spec, name, method, path)
    if method.pseudo_labels is not None:
        check_pseudo_labels(spec, name, method, path)
    if method.distill_from is not None:
        check_teachers(spec, name, method, path)
    if method.selflabel is not None:
        check_selflabel(name, method.selflabel, path)
    unknown = [target for target in method.targets or [] if target not in spec.targets]
    if unknown:
        raise SeqTransferError(f"method '{name}' names unknown target(s) {', '.join(map(str, unknown))}", path=path, hint=f"targets: {', '.join(spec.targets)}")
    if method.targets is not None and method.multitask:
        raise SeqTransferError(f"multi-task method '{name}' trains one model over every target: it takes no 'targets'", path=path)


def _check_comparisons(spec: ExperimentSpec, path: Path) -> None:
    """The reference method and the significance pairs name methods of the file."""
    if spec.reference is not None and spec.reference not in spec.methods:
        raise SeqTransferError(f"reference method '{spec.reference}' is not among the methods", path=path)
    for pair in spec.significance:
        if not isinstance(pair, list) or len(pair) != 2 or any(method not in spec.methods for method in pair):
            raise SeqTransferError(f"significance pair {pair!r} must name two methods of the file", path=path,
                                   hint="e.g. - [PretRand, Fine-tuning]; quote a name that holds a comma: - [\"A (b, c)\", D]")


def _published(values: object, index: int, targets: dict, path: Path) -> PublishedSpec:
    """One ``published`` row, checked: known columns and flags, numbers or n/a."""
    row = _build(PublishedSpec, values, f"published[{index}]", path)
    if not isinstance(row.scores, dict) or not isinstance(row.flags, list):
        raise SeqTransferError(f"published row '{row.name}': 'scores' must map columns to numbers and 'flags' be a list", path=path)
    for target, score in row.scores.items():
        if target not in targets:
            raise SeqTransferError(f"published row '{row.name}' names column '{target}', which the table does not have", path=path, hint=f"columns: {', '.join(targets)}")
        if not (score is None or score == "n/a" or (isinstance(score, (int, float)) and not isinstance(score, bool))):
            raise SeqTransferError(f"published row '{row.name}': score of '{target}' must be a number or n/a, got {score!r}", path=path)
    unknown = [flag for flag in row.flags if flag not in PUBLISHED_FLAGS]
    if unknown:
        raise SeqTransferError(f"published row '{row.name}': unknown flag(s) {', '.join(map(str, unknown))}", path=path, hint=f"flags: {', '.join(PUBLISHED_FLAGS)}")
    row.scores = {target: None if score in (None, "n/a") else float(score) for target, score in row.scores.items()}
    return row


def _searches(values: object, spec: ExperimentSpec, path: Path) -> dict:
    """``search``: method -> target (or "*") -> a checked SearchSpec."""
    from seqtransfer.experiments.search import SearchSpec, check_search

    if not isinstance(values, dict):
        raise SeqTransferError("'search' must map methods to targets to searches", path=path)
    searches = {}
    for method, targets in values.items():
        if method not in spec.methods or not spec.methods[method].scheme or spec.methods[method].multitask:
            raise SeqTransferError(f"search names method '{method}', which is not a mono-task method of the file", path=path, hint=f"methods: {', '.join(spec.methods)}")
        if not isinstance(targets, dict) or not targets:
            raise SeqTransferError(f"search.{method} must map targets (or '*') to a search", path=path)
        for target, search in targets.items():
            if target != "*" and target not in spec.targets:
                raise SeqTransferError(f"search.{method} names target '{target}', which the file does not have", path=path, hint=f"targets: {', '.join(spec.targets)} or '*'")
            built = _build(SearchSpec, search, f"search.{method}.{target}", path)
            searches.setdefault(method, {})[target] = check_search(built, f"search.{method}.{target}", path)
            check_not_fixed_by_source(spec.methods[method], built, f"search.{method}.{target}", path)
    return searches


def check_not_fixed_by_source(method: MethodSpec, search, where: str, path: Path) -> None:
    """A transfer method's model takes its source's sizes (workflows/train.py ``SOURCE_SIZES``): a
    search over one would train the same model in every trial and report a setting never used."""
    from seqtransfer.workflows.train import SOURCE_SIZES
    from seqtransfer.transfer.schemes import get_scheme

    if not get_scheme(method.scheme).uses_source:
        return
    fixed = [key for key in search.space if key.startswith("model.") and key.partition(".")[2] in SOURCE_SIZES]
    if fixed:
        raise SeqTransferError(f"{where}: {', '.join(fixed)} is the source run's: a {method.scheme} run takes it from its source, so every trial would train the same model",
                               path=path, hint="search it on a method without a source (scratch), or train sources of each size")


def load_experiment(path: str | Path) -> ExperimentSpec:
    """Read and check an experiment file."""
    path = Path(path)
    spec = _build(ExperimentSpec, read_yaml_mapping(path, "experiment file"), "experiment", path)
    spec.sources = {name: _build(SourceSpec, item, f"sources.{name}", path) for name, item in (spec.sources or {}).items()}
    spec.targets = {name: _build(TargetSpec, item, f"targets.{name}", path) for name, item in spec.targets.items()}
    spec.methods = {name: _build(MethodSpec, item, f"methods.{name}", path) for name, item in spec.methods.items()}
    spec.published = spec.published or []
    if not isinstance(spec.published, list):
        raise SeqTransferError("'published' must be a list of rows", path=path, hint="- {name: ..., source: ..., flags: [...], scores: {TARGET: number or n/a}}")
    spec.published = [_published(row, index, spec.targets, path) for index, row in enumerate(spec.published)]
    spec.search = _searches(spec.search or {}, spec, path)
    for method in spec.search:
        if reads_runs(spec.methods[method]):
            raise SeqTransferError(f"search names method '{method}', which reads other methods' runs (start_from, pseudo_labels, distill_from)", path=path,
                                   hint="search a method that reads only a source; these methods take the settings found")
    spec.path, spec.all_targets = str(path), dict(spec.targets)
    if spec.paper_split not in ("dev", "test"):
        raise SeqTransferError(f"paper_split must be dev or test, got {spec.paper_split!r}", path=path, hint="paper_split: dev (the paper's numbers are dev scores) or test")
    _check_references(spec, path)
    return spec
