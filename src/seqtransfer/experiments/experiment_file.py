"""The dataclasses an experiment file is read into (its sources, targets, methods, published rows
and the whole file), with the helpers the reading and the checks share: boolean fields read as
YAML 1.1 did, ensemble members' seed offsets, and whether a method reads other methods' runs.

``spec.py`` reads and checks the file and imports these names back, so they can be imported from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from seqtransfer.config import YAML11_BOOLEANS
from seqtransfer.errors import SeqTransferError


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
    target_overrides: dict[str, list[str]] = field(default_factory=dict)  # target -> overrides of this method's runs on it alone, after the method's own
    selflabel: dict | None = None  # rounds of self-labelling around the scheme (workflows/selflabel.py): {method, unlabeled, rounds, pool, top_n, ...}
    tagger: str | None = None  # a key of ``sources``: a tagging run whose predicted tags the model reads as input (model.tag_tagger)
    anneal: bool = False  # data annealing: mix the training data of each target's source into its training (data.anneal_source)
    start_from: dict[str, str] | None = None  # {method: NAME, target: TARGET}: transfer from that method's run on that target, same seed (a label-free model, then a few labels)
    distill_from: list[str] | None = None  # teacher methods ("Name" or "Name+OFFSET"): their runs of the same target and seed (+ offset), distilled into this one (transfer.distill_from)
    pseudo_labels: dict | None = (
        None  # {from: [METHOD, ...], unlabeled: TEXT, combination, threshold, top_n, tokenizer}: those methods' runs (same target, seed) label TEXT, added to the training data
    )

    def every_override(self) -> list[str]:
        """The method's overrides and those of its runs on single targets (``target_overrides``)."""
        return [*self.overrides, *(override for values in self.target_overrides.values() for override in values)]


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
    targets: dict[str, TargetSpec]
    methods: dict[str, MethodSpec]
    title: str = ""  # the report's heading (none given: the name)
    command: str = ""  # how to run it, for the reader of the file (none given: `seqtransfer experiment run FILE`)
    sources: dict[str, SourceSpec] = field(default_factory=dict)
    reference: str | None = None
    overrides: list[str] = field(default_factory=list)
    significance: list[list[str]] = field(default_factory=list)
    paper: dict[str, dict[str, float]] = field(default_factory=dict)
    paper_split: str = "test"  # the split the paper's numbers are of (the To-tune paper's Table 5: dev): the report's main tables show it
    paper_dev: dict[str, dict[str, float]] = field(default_factory=dict)  # the paper's dev numbers beside its test ones (PretRand Table 2): `report --dev` compares them
    published: list[PublishedSpec] = field(default_factory=list)
    search: dict = field(default_factory=dict)  # method -> target (or "*") -> SearchSpec (experiments/search_spec.py)
    selected: dict = field(default_factory=dict)  # (method, target) -> setting a kept search selected on dev (`experiment run --selected`)
    selected_epochs: dict = field(default_factory=dict)  # (method, target) -> that search's epoch cap, as its summary kept it
    notes: str = ""
    selected_notes: str = ""  # the same for the page of its cells at searched settings (a records file of `experiment run --selected`)
    cost: str = ""  # what running it took here (measured), shown by `seqtransfer experiment list`
    hierarchy: dict[str, list[str]] = field(default_factory=dict)  # target -> targets it reads (multi-task methods)
    path: str = ""
    all_targets: dict[str, TargetSpec] = field(default_factory=dict)  # every target of the file (``targets`` may be narrowed to those one command runs)

    def targets_of(self, name: str) -> list[str]:
        """The targets a method has cells on, in the file's order: its own ``targets`` (none listed:
        all); an ensemble's, only those where every member runs too."""
        method = self.methods[name]
        kinds = [method, *(self.methods[split_member(member)[0]] for member in method.ensemble or [])]
        return [target for target in self.targets if all(kind.targets is None or target in kind.targets for kind in kinds)]

    def target(self, name: str) -> TargetSpec:
        """A target of the file, also one the command left out (the run a method starts from may be on it)."""
        return self.targets.get(name) or self.all_targets[name]

    def source_of(self, method_name: str, target_name: str) -> str | None:
        """The name of the source a method's runs on a target transfer from: the method's own
        ``source`` (or its entry for this target), else the target's; None where neither names one."""
        method, target = self.methods[method_name], self.target(target_name)
        return method.source.get(target_name, target.source) if isinstance(method.source, dict) else method.source or target.source


INTERNAL = ("path", "all_targets")  # ExperimentSpec fields the file does not set


def booleans_read(kind: type, values: dict, where: str, path: Path) -> dict:
    """``values`` with each of ``kind``'s boolean fields a boolean: YAML files are read with YAML
    1.2's true / false (files.load_yaml), and yes / no / on / off, which YAML 1.1 read as
    booleans, still are; anything else is one error line."""
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


def split_member(member: str) -> tuple[str, int]:
    """An ensemble member: "Name+1000" -> ("Name", 1000); "Name" or "A + B" -> (itself, 0)."""
    name, _, offset = member.rpartition("+")
    return (name, int(offset)) if name and offset.isdigit() else (member, 0)


def reads_runs(method: MethodSpec) -> bool:
    """Whether a method's runs read other methods' runs (start_from, pseudo_labels, distill_from)."""
    return any(value is not None for value in (method.start_from, method.pseudo_labels, method.distill_from))
