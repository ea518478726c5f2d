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

A method's runs on some targets may take settings of their own, after the method's overrides
(``target_overrides``; mono-task methods):

    Fine-tuning: {scheme: scratch, overrides: [model.encoder_mode=finetune],
                  target_overrides: {SST-2: ["transfer.adaptations=[discriminative, gradual_unfreezing]"]}}

A method may start from another method's run instead of a source (same seed), e.g. fine-tuning
on a few target labels the model a label-free method made (a self-labelling run: its first model):

    methods:
      SFT after tri-training: {scheme: finetune, targets: [10 % labels], start_from: {method: Tri-training, target: no labels}}

Published results that are not ours (shown above our rows by ``report``), each with its source,
the flags of the PretRand paper's Table 7 legend and ``n/a`` (or null) where it reports nothing:

    published:
      - {name: "ARK tagger (Owoputi et al., 2013)", source: "PretRand paper, Table 7", flags: [external],
         scores: {TPoS: 90.40, ArK: 93.2, TweeBank: 94.6, TChunk: n/a, WNUT: n/a}}

The file's dataclasses live in ``experiment_file.py`` and the checks of its references in
``reference_checks.py``; this module reads the file and imports their names back.

Nothing in the file is executed: it is read with YAML's safe loader and checked key by key.
"""

from __future__ import annotations

import difflib
from dataclasses import MISSING, fields
from pathlib import Path

from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.experiment_file import INTERNAL, PUBLISHED_FLAGS, ExperimentSpec, MethodSpec, PublishedSpec, SourceSpec, TargetSpec, booleans_read, reads_runs, split_member
from seqtransfer.experiments.reference_checks import (
    PSEUDO_KEYS,
    check_metrics_fit,
    check_pseudo_labels,
    check_pseudo_values,
    check_read_method,
    check_references,
    check_selflabel,
    check_start_from,
    check_teachers,
)
from seqtransfer.experiments.search_spec import SearchSpec, check_search
from seqtransfer.experiments.setting_checks import check_settings
from seqtransfer.experiments.shipped import experiment_file
from seqtransfer.files import read_yaml_mapping
from seqtransfer.transfer.schemes import get_scheme
from seqtransfer.workflows.sources import SOURCE_SIZES

# The public names, those of experiment_file.py and reference_checks.py included (imported back for callers).
__all__ = [
    "SourceSpec",
    "TargetSpec",
    "MethodSpec",
    "PUBLISHED_FLAGS",
    "PublishedSpec",
    "ExperimentSpec",
    "INTERNAL",
    "booleans_read",
    "check_selflabel",
    "split_member",
    "PSEUDO_KEYS",
    "reads_runs",
    "check_read_method",
    "check_pseudo_labels",
    "check_pseudo_values",
    "check_teachers",
    "check_start_from",
    "check_references",
    "check_metrics_fit",
    "check_not_fixed_by_source",
    "load_experiment",
]


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
    missing = [item.name for item in fields(kind) if item.name not in values and item.default is MISSING and item.default_factory is MISSING]
    if missing:
        example = "\n".join(f"{name}: ..." for name in missing)
        raise SeqTransferError(f"'{where}' lacks {', '.join(repr(name) for name in missing)}", path=path, hint=f"add {'them' if len(missing) > 1 else 'it'}:\n{example}")
    return kind(**booleans_read(kind, values, where, path))


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
    """A transfer method's model takes its source's sizes (workflows/sources.py ``SOURCE_SIZES``): a
    search over one would train the same model in every trial and report a setting never used."""
    if not get_scheme(method.scheme).uses_source:
        return
    fixed = [key for key in search.space if key.startswith("model.") and key.partition(".")[2] in SOURCE_SIZES]
    if fixed:
        raise SeqTransferError(
            f"{where}: {', '.join(fixed)} is the source run's: a {method.scheme} run takes it from its source, so every trial would train the same model",
            path=path,
            hint="search it on a method without a source (scratch), or train sources of each size",
        )


def checked_notes(notes, key: str, path: Path) -> str | list[str]:
    """A notes block: a string or a list of strings (one claim each)."""
    notes = notes or ""
    if not (isinstance(notes, str) or (isinstance(notes, list) and all(isinstance(item, str) for item in notes))):
        raise SeqTransferError(f"'{key}' must be a string or a list of strings", path=path, hint=f"{key}:\n  - One claim of the paper, ours vs the paper's.")
    return notes


def load_experiment(path: str | Path) -> ExperimentSpec:
    """Read and check an experiment file: a path, or the name of a shipped one (``pretrand-table4``)."""
    path = experiment_file(path)
    spec = _build(ExperimentSpec, read_yaml_mapping(path, "experiment file"), "experiment", path)
    spec.title = spec.title or spec.name
    spec.command = spec.command or f"seqtransfer experiment run {path}"
    for section in ("sources", "targets", "methods"):
        if not isinstance(getattr(spec, section) or {}, dict):
            raise SeqTransferError(f"'{section}' must be a mapping of names to entries", path=path, hint=f"{section}:\n  NAME: {{...}}")
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
            raise SeqTransferError(
                f"search names method '{method}', which reads other methods' runs (start_from, pseudo_labels, distill_from)",
                path=path,
                hint="search a method that reads only a source; these methods take the settings found",
            )
        if spec.methods[method].selflabel or spec.methods[method].unify_with:
            raise SeqTransferError(
                f"search names method '{method}', whose runs are rounds of self-labelling or unified data, which a search trial does not train",
                path=path,
                hint="search the method it labels with (its scheme alone) and give this method the settings found",
            )
    spec.path, spec.all_targets = str(path), dict(spec.targets)
    spec.notes, spec.selected_notes = checked_notes(spec.notes, "notes", path), checked_notes(spec.selected_notes, "selected_notes", path)
    if spec.paper_split not in ("dev", "test"):
        raise SeqTransferError(f"paper_split must be dev or test, got {spec.paper_split!r}", path=path, hint="paper_split: dev (the paper's numbers are dev scores) or test")
    if spec.paper_dev and spec.paper_split == "dev":
        raise SeqTransferError("paper_dev gives dev numbers beside test ones, and paper_split says 'paper' is dev already", path=path, hint="leave paper_dev out, or paper_split out")
    check_references(spec, path)
    check_settings(spec, path)
    return spec
