"""Checks of an experiment file's datasets and override lists, each error naming the file and the
entry it is in: told when the file is read, not when a cell reaches its training (after hours of
other cells), and not as a bare "unknown config key" that names no method."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from seqtransfer.config import RunConfig, apply_overrides
from seqtransfer.data.registry import get_dataset
from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.experiment_file import ExperimentSpec


def check_settings(spec: ExperimentSpec, path: Path) -> None:
    """Every dataset a target or source names is registered, and every override list parses
    (known keys, values of their type); the combinations are checked per cell when it is planned."""
    for where, dataset in named_datasets(spec):
        for part in dataset.split("+"):  # ud_ewt:upos+conll2000:pos: each part may name its own task
            try:
                get_dataset(part.partition(":")[0])
            except SeqTransferError as error:
                raise SeqTransferError(f"{where}: {error.message}", path=path, hint=error.hint) from None
    for where, overrides in override_lists(spec):
        try:
            apply_overrides(RunConfig(), list(overrides))
        except SeqTransferError as error:
            raise SeqTransferError(f"{where}: {error.message}", path=path, hint=error.hint) from None


def named_datasets(spec: ExperimentSpec) -> Iterator[tuple[str, str]]:
    """(entry, ``dataset[:task][+dataset[:task]]``) of every target and source that names one, and
    of every target's ``test_on``."""
    for name, target in spec.targets.items():
        if target.dataset:
            yield f"target '{name}'", str(target.dataset)
        if target.test_on:
            yield f"target '{name}', test_on", str(target.test_on)
    for name, source in spec.sources.items():
        if source.dataset:
            yield f"source '{name}'", str(source.dataset)
        for task, entry in (source.multitask or {}).items():
            if isinstance(entry, str):
                yield f"source '{name}', task '{task}'", entry


def override_lists(spec: ExperimentSpec) -> Iterator[tuple[str, list[str]]]:
    """(entry, its overrides) of the file, its targets, sources and methods."""
    yield "overrides", spec.overrides or []
    for kind, entries in (("target", spec.targets), ("source", spec.sources), ("method", spec.methods)):
        for name, entry in entries.items():
            yield f"{kind} '{name}'", getattr(entry, "overrides", None) or []
            for target, values in (getattr(entry, "target_overrides", None) or {}).items():  # a method's runs on one target
                yield f"{kind} '{name}', target '{target}'", values
