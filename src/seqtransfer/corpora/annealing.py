"""Data annealing (Gu & Yu 2020): source sentences mixed into the target's training, fewer each epoch.

The passage from the source (news) to the target (tweets) is gradual: the training data is mostly
source data at first, and the source's share decays over training. With ``data.anneal_source``,
epoch ``e`` reads every target training sentence once plus source sentences whose share of the
epoch is

    r_e = anneal_start * anneal_decay ** (e - 1),

that is ``r_e / (1 - r_e)`` times as many as there are target sentences (at most the whole source
set; a share of 1 reads all of it), drawn anew each epoch with the run's seed. ``anneal_start``
and ``anneal_decay`` are the schedule's two settings (lambda and alpha); Gu & Yu tune them on dev,
and our defaults (0.9, 0.9) are our choice. It joins any scheme: from scratch (Gu & Yu's LSTM),
or fine-tuning a source model. Source labels must be the target's tag set, or be mapped to it
with ``data.label_map`` (after conversion to the target's span scheme: IOB1 -> IOB2). Dev and test
stay the target's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from seqtransfer.config import DataConfig
from seqtransfer.corpora.task_data import UNSHARED_SHARE, load_task_data, read_label_map
from seqtransfer.data.batching import Batch, EncodedSentences, training_batches
from seqtransfer.data.schemes import convert
from seqtransfer.errors import SeqTransferError


def add_annealing_sentences(config, data, log) -> int | None:
    """Append the source's training sentences (labels in the target's column) to ``data``'s training
    split; returns the number of target sentences, which come first (None without annealing)."""
    entry = config.data.anneal_source
    if not entry:
        return None

    source = load_task_data(source_data_config(entry, config.data), ("train",))
    if source.kind is not data.kind:
        raise SeqTransferError(f"data.anneal_source '{entry}' is a {source.kind.name} task, the target a {data.kind.name} task", hint="anneal from data of the target's task kind")
    label_map = read_label_map(config.data.label_map) or {}
    mapping = label_map.get(source.dataset, {})
    convert_scheme = "none" not in (source.scheme, data.scheme) and source.scheme != data.scheme  # e.g. CoNLL-2003's IOB1 -> WNUT-17's IOB2
    relabelled = []
    for sentence in source.splits["train"]:
        mapped = [mapping.get(label, label) for label in sentence.labels(source.column)]  # the map's keys are the source's own labels: mapped first, then converted
        relabelled.append(replace(sentence, columns={**sentence.columns, data.column: convert(mapped, source.scheme, data.scheme) if convert_scheme else mapped}))
    if data.kind.name == "tagging":
        check_source_labels(entry, source.dataset, relabelled, data, config.data.label_map)
    target_count = len(data.splits["train"])
    data.splits["train"] = data.splits["train"] + relabelled
    if data.train_weights is not None:
        data.train_weights = np.concatenate([data.train_weights, np.ones(len(relabelled), dtype=np.float32)])
    log(f"data annealing: {len(relabelled)} source sentences from {entry}; source share per epoch {config.data.anneal_start:g} x {config.data.anneal_decay:g}^(epoch - 1)")
    return target_count


def check_source_labels(entry: str, name: str, sentences: list, data, map_path: str | None) -> None:
    """One line when more than ``UNSHARED_SHARE`` (5 %) of the source's tokens carry labels the target never uses: another tag set."""
    from collections import Counter

    target_labels = {label for sentence in data.splits["train"] for label in sentence.labels(data.column)}
    counts = Counter(label for sentence in sentences for label in sentence.labels(data.column))
    foreign = {label: count for label, count in counts.items() if label not in target_labels}
    total = sum(counts.values())
    if total and sum(foreign.values()) / total > UNSHARED_SHARE:
        shown = ", ".join(sorted(foreign, key=lambda label: -foreign[label])[:6])
        raise SeqTransferError(
            f"the labels of data.anneal_source '{entry}' are not the target's ({100 * sum(foreign.values()) / total:.0f} % of its tokens: {shown} ...)",
            path=map_path,
            hint=f"map them with data.label_map=FILE (YAML: {name}: {{its label: the target's label}}), or anneal from data of the target's tag set",
        )


def source_data_config(entry: str, target: DataConfig) -> DataConfig:
    """``DATASET[:TASK]`` of the registry, or a file read with the target's columns (its training split)."""
    from pathlib import Path

    if Path(entry).is_file():
        return DataConfig(dataset=None, task=target.task, train=entry, columns=target.columns, scheme=target.scheme, separator=target.separator)
    if "+" in entry:  # joined datasets, each part NAME or NAME:TASK (task_data.part_config reads them)
        return DataConfig(dataset=entry, task=None, data_dir=target.data_dir, label_map=target.label_map)
    dataset, _, task = entry.partition(":")
    return DataConfig(dataset=dataset, task=task or None, data_dir=target.data_dir)


class AnnealedBatches:
    """Batches of one epoch: all target sentences (rows ``[0, target_count)`` of ``data``) and the
    epoch's share of source sentences (the rows after), mixed and shuffled by (seed, epoch).

    ``sentence_count`` and ``batch_count`` are those of the last epoch ``batches`` was asked for
    (the loop reads them after asking)."""

    mean_batch_loss = False

    def __init__(self, data: EncodedSentences, target_count: int, batch_size: int, seed: int, start: float, decay: float) -> None:
        self.data, self.target_count, self.batch_size, self.seed, self.start, self.decay = data, target_count, batch_size, seed, start, decay
        self.source_count = len(data.lengths) - target_count
        self.set_counts(1)

    def source_sentences(self, epoch: int) -> int:
        """How many source sentences epoch ``epoch`` (1-based) reads."""
        share = self.start * self.decay ** (epoch - 1)
        if share >= 1.0:
            return self.source_count
        return min(self.source_count, round(share / (1.0 - share) * self.target_count))

    def set_counts(self, epoch: int) -> None:
        self.sentence_count = self.target_count + self.source_sentences(epoch)
        self.batch_count = -(-self.sentence_count // self.batch_size)

    def batches(self, epoch: int) -> Iterator[Batch]:
        generator = np.random.default_rng([self.seed, epoch])
        drawn = generator.choice(self.source_count, self.source_sentences(epoch), replace=False)
        indices = np.concatenate([np.arange(self.target_count), self.target_count + np.sort(drawn)])
        self.set_counts(epoch)
        return training_batches(self.data, self.batch_size, generator, indices=indices)
