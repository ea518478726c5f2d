"""Training sentences that are also evaluation sentences: a score that reads them is not a test.

A dataset's registry entry names the datasets whose dev and test splits hold sentences of its
training split (``DatasetSpec.shares_sentences_with``; MANIFEST.md §10c: 334 of SETimes.SR's
training sentences are UD Serbian-SET dev sentences, 361 test sentences). Scoring a run on such
a split, when the run or any source it was transferred from trained on that dataset, is warned
about.
"""

from __future__ import annotations

from pathlib import Path

from seqtransfer.config import RunConfig
from seqtransfer.data.registry import get_dataset
from seqtransfer.errors import SeqTransferError, warn
from seqtransfer.rundir import CONFIG, first_member, member_directories, read_run_config


def trained_on(config: RunConfig, depth: int = 8) -> list[str]:
    """The registered datasets a run's weights learnt from: its own (a multi-task run's, each
    task's), then those of its source and of its distillation teachers, followed through their run
    directories (a source that is a folder of models: its first model; a teacher that is one, an
    ensemble: each of its models)."""
    datasets = [config.data.dataset] if config.data.dataset else []
    datasets += [entry.partition(":")[0] for entry in (config.multitask.data or {}).values() if isinstance(entry, str)]
    if depth:
        teachers = [directory for teacher in config.transfer.distill_from if Path(teacher).is_dir() for directory in member_directories(teacher)]
        source = [first_member(config.transfer.source)] if config.transfer.source and Path(config.transfer.source).is_dir() else []
        for directory in source + teachers:
            if (directory / CONFIG).is_file():
                datasets += trained_on(read_run_config(directory), depth - 1)
    return datasets


def leak_warning(config: RunConfig, dataset: str | None, split: str) -> str | None:
    """A warning when ``split`` of ``dataset`` shares sentences with a training set the run learnt from."""
    if dataset is None or split == "train":
        return None
    for name in trained_on(config):
        try:
            spec = get_dataset(name)
        except SeqTransferError:  # a dataset this version no longer knows: nothing to say
            continue
        if dataset in spec.shares_sentences_with:
            return (
                f"the {split} split of {dataset} shares sentences with the training split of {name}, which this run (or its source) trained on: "
                f"the score is not a clean test (train on the deduplicated {dataset} instead)"
            )
    return None


def warn_of_leaks(config: RunConfig, dataset: str | None, split: str) -> None:
    message = leak_warning(config, dataset, split)
    if message:
        warn(message)
