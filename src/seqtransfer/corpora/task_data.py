"""The sentences and annotation one training run works on, checked before training starts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from seqtransfer.config import DataConfig, fold_of
from seqtransfer.data.batching import EncodedSentences, encode_sentences
from seqtransfer.data.corpus import Sentence
from seqtransfer.data.metrics import METRICS
from seqtransfer.data.registry import custom_dataset, get_dataset, load_split
from seqtransfer.data.schemes import CHUNK_SCHEMES, convert, split_tag
from seqtransfer.data.tag_feature import feature_tags
from seqtransfer.data.vocabulary import Vocabularies
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_yaml_mapping
from seqtransfer.tasks import TAGGING, get_task_kind

SPLITS = ("train", "dev", "test")


@dataclass
class TaskData:
    """Train/dev/test sentences of one dataset, the task's kind, label column, scheme and metric."""

    dataset: str
    task: str
    column: str
    scheme: str
    metric: str
    splits: dict[str, list[Sentence]]
    kind: object = field(default=TAGGING)  # a task kind of ``seqtransfer.tasks``
    notes: list[str] = field(default_factory=list)  # what was inferred or repaired while reading, for the user
    train_weights: object = None  # (N,) loss weight of each training sentence (soft selection, corpora/selection.py), or None
    target_count: int | None = None  # data annealing: the first N training sentences are the target's, the rest the source's (corpora/annealing.py)
    train_tags: list[list[str]] | None = None  # input tags of the training sentences when they are not the tagger's (jackknifed: data/tag_feature.py)

    def tokens(self, split: str) -> list[list[str]]:
        return [sentence.tokens for sentence in self.splits[split]]

    def gold(self, split: str) -> list:
        """The gold annotation of each sentence: label strings (tagging), a Tree (parsing)."""
        return self.kind.gold(self.splits[split], self.column)

    def labels(self, split: str) -> list:
        """Alias of :meth:`gold` (label strings for tagging tasks)."""
        return self.gold(split)

    def encode(self, split: str, vocabularies: Vocabularies, with_targets: bool = True) -> EncodedSentences:
        """Index arrays of a split, with the task's targets (labels unseen in training: -1)."""
        targets = self.kind.encode_targets(self.gold(split), vocabularies.labels) if with_targets else None
        tags = self.train_tags if split == "train" and self.train_tags is not None else feature_tags(vocabularies, self.tokens(split), self.splits[split])  # input tags, when the model reads them
        encoded = encode_sentences(self.tokens(split), vocabularies, targets=targets, tags=tags)
        if split == "train" and with_targets:
            encoded.weights = self.train_weights
        return encoded


def resolve_spec(config: DataConfig):
    """The registry entry of ``config.dataset``, or a spec built from the user's own files."""
    if config.train:
        return custom_dataset(train=config.train, dev=config.dev, test=config.test, columns=config.columns, task=config.task, scheme=config.scheme, separator=config.separator)
    if not config.dataset:
        raise SeqTransferError("no data given", hint="pass --dataset NAME or --train PATH (see `seqtransfer datasets`)")
    return get_dataset(config.dataset)


def resolve_task(spec, task: str | None) -> str:
    """The requested task, or the dataset's default (first) task."""
    tasks = list(spec.tasks)
    if task is None:
        return tasks[0]
    if task not in spec.tasks:
        raise SeqTransferError(f"dataset '{spec.name}' has no task '{task}'", hint=f"use one of: {', '.join(tasks)}")
    return task


# A part whose training tokens carry more than 5 % of labels no other part has uses another tag
# set (PTB tags against UPOS: about 100 %). A lossy map may leave a little to one part: UD's SCONJ,
# which PTB's IN does not split, is 1.9 % of UD-EWT's tokens.
UNSHARED_SHARE = 0.05


def combine(parts: list[TaskData], label_map: dict | None = None, map_path: str | None = None) -> TaskData:
    """Concatenate the splits of several datasets labelled with the same task and tag set (or relabel one).

    ``conll2000+ptb_sample`` with task ``pos`` is the PTB-tagset POS source of the PretRand
    experiments (the full WSJ is not available here). Parts whose tag sets differ (several
    sources at once) are mapped by ``label_map`` (dataset -> {label: shared label}; labels it
    does not name stay), else refused. The labels of each part go to the first part's task.
    """
    first = parts[0]
    if any((part.scheme, part.metric, part.kind) != (first.scheme, first.metric, first.kind) for part in parts):
        raise SeqTransferError("combined datasets must share task kind, tag scheme and metric", hint="pass --task with a task every part has, or name each part's task: a:upos+b:pos")
    splits: dict[str, list[Sentence]] = {}
    for part in parts:
        mapping = (label_map or {}).get(part.dataset, {})
        for split, sentences in part.splits.items():
            relabelled = [replace(s, columns={**s.columns, first.task: [mapping.get(label, label) for label in s.labels(part.column)]}) for s in sentences]
            splits.setdefault(split, []).extend(relabelled)
    if first.kind.name == "tagging" and len(parts) > 1:
        check_shared_labels(parts, label_map or {}, map_path)
    return TaskData("+".join(part.dataset for part in parts), first.task, first.task, first.scheme, first.metric, splits, first.kind)


def check_shared_labels(parts: list[TaskData], label_map: dict, map_path: str | None) -> None:
    """One line when a part's training labels (after the map) are mostly its own: another tag set."""
    counts = {}
    for part in parts:
        mapping = label_map.get(part.dataset, {})
        counts[part.dataset] = {}
        for sentence in part.splits.get("train", []):
            for label in sentence.labels(part.column):
                mapped = mapping.get(label, label)
                counts[part.dataset][mapped] = counts[part.dataset].get(mapped, 0) + 1
    for name, labels in counts.items():
        others = {label for other, values in counts.items() if other != name for label in values}
        unshared = {label: count for label, count in labels.items() if label not in others}
        total = sum(labels.values())
        if total and sum(unshared.values()) / total > UNSHARED_SHARE:
            shown = ", ".join(sorted(unshared, key=lambda label: -unshared[label])[:6])
            raise SeqTransferError(
                f"the labels of {name} differ from the other datasets' ({100 * sum(unshared.values()) / total:.0f} % of its tokens: {shown} ...)",
                path=map_path,
                hint="map them with data.label_map=FILE (YAML: DATASET: {its label: shared label}), or join datasets of one tag set",
            )


def read_label_map(path: str | None) -> dict | None:
    """The YAML mapping of ``data.label_map`` (dataset -> {label: shared label}), checked."""
    if not path:
        return None

    mapping = read_yaml_mapping(path, "label map")
    for dataset, labels in mapping.items():
        if not isinstance(labels, dict) or not all(isinstance(key, str) and isinstance(value, str) for key, value in labels.items()):
            raise SeqTransferError(f"label map entry '{dataset}' must map labels to labels (strings)", path=path, hint="e.g. ark: {N: NOUN, V: VERB}")
    return mapping


def part_config(config: DataConfig, part: str) -> DataConfig:
    """One part of ``a+b``: ``NAME`` (the config's task) or ``NAME:TASK`` (its own task, e.g. ud_ewt:upos+conll2000:pos)."""
    name, _, task = part.partition(":")
    # combine() maps the parts, in their own labels; the joined data is then converted once (data.convert_scheme)
    return replace(config, dataset=name, task=task or config.task, max_train_sentences=None, exclude_fold=None, label_map=None, max_sentence_length=None, convert_scheme=None)


def load_task_data(config: DataConfig, splits: tuple[str, ...] = SPLITS) -> TaskData:
    """Read and check the splits a run needs (``a+b`` datasets are concatenated split by split)."""
    if config.dataset and "+" in config.dataset and not config.train:
        parts = [load_task_data(part_config(config, part), splits) for part in config.dataset.split("+")]
        data = combine(parts, read_label_map(config.label_map), config.label_map)
        if config.max_train_sentences and "train" in data.splits:
            data.splits["train"] = data.splits["train"][: config.max_train_sentences]
        if config.exclude_fold and "train" in data.splits:
            data.splits["train"] = without_fold(data.splits["train"], config.exclude_fold)
        return converted_to(without_long_sentences(data, config.max_sentence_length), config.convert_scheme)
    spec = resolve_spec(config)
    if config.dev_from_train:  # the dataset's dev split set aside: dev is carved from train, as for datasets without one
        spec = replace(spec, dev_from_train=True, splits={split: path for split, path in spec.splits.items() if split != "dev"})
    task = resolve_task(spec, config.task)
    column = spec.tasks[task]
    kind = get_task_kind(spec.kinds.get(task, TAGGING.name))
    if "train" in splits and "train" not in spec.splits:
        raise SeqTransferError(
            f"dataset '{spec.name}' has no split 'train' (splits: {', '.join(spec.split_names())})",
            hint=f"it serves evaluation only: score a model trained elsewhere with `seqtransfer evaluate RUN --dataset {spec.name}`",
        )
    loaded = {}
    for split in splits:
        if split in spec.splits or (split == "dev" and getattr(spec, "dev_from_train", False)):
            loaded[split] = load_split(spec, split, config.data_dir)
    if "train" in splits and config.max_train_sentences:
        loaded["train"] = loaded["train"][: config.max_train_sentences]
    if "train" in splits and config.exclude_fold:
        loaded["train"] = without_fold(loaded["train"], config.exclude_fold)
    scheme, note = kind.resolve_scheme([sentence for sentences in loaded.values() for sentence in sentences], column, spec.schemes.get(column, "none"))
    notes = [note] if note else []
    metric = config.metric or (spec.metric.get(task) if not note else None) or default_metric(kind, scheme)
    if metric not in METRICS:
        raise SeqTransferError(f"unknown metric '{metric}'", hint=f"use data.metric={' or '.join(kind.metrics)}")
    if metric not in kind.metrics:
        raise SeqTransferError(f"metric '{metric}' does not score {kind.name} task '{task}'", hint=f"use data.metric={' or '.join(kind.metrics)}")
    for sentences in loaded.values():
        notes += kind.check(sentences, column, scheme, config.strict)
    data = TaskData(spec.name, task, column, scheme, metric, loaded, kind, notes)
    mapping = read_label_map(config.label_map)
    if mapping and spec.name in mapping:  # one dataset in another's tag set (a source scored on a target: label-free adaptation)
        data = replace(combine([data], mapping, config.label_map), notes=notes)
    return converted_to(without_long_sentences(data, config.max_sentence_length), config.convert_scheme)


def converted_to(data: TaskData, scheme: str | None) -> TaskData:
    """The data with every split's labels in ``scheme`` (``data.convert_scheme``; None or the data's own: unchanged)."""
    if not scheme or scheme == data.scheme:
        return data
    if data.scheme not in CHUNK_SCHEMES:
        raise SeqTransferError(
            f"data.convert_scheme={scheme} converts span labels, and the labels of {data.dataset} ({data.task}) have no span scheme ({data.scheme})", hint="leave data.convert_scheme out for this task"
        )
    splits = {
        split: [replace(sentence, columns={**sentence.columns, data.column: convert(sentence.labels(data.column), data.scheme, scheme)}) for sentence in sentences]
        for split, sentences in data.splits.items()
    }
    note = f"labels converted from {data.scheme} to {scheme} (data.convert_scheme): the model trains, predicts and is scored in {scheme}"
    return replace(data, splits=splits, scheme=scheme, notes=[*data.notes, note])


def without_long_sentences(data: TaskData, limit: int | None) -> TaskData:
    """The training split without its sentences of more than ``limit`` tokens (none: unchanged), and a note counting them."""
    if not limit or "train" not in data.splits:
        return data
    kept = [sentence for sentence in data.splits["train"] if len(sentence.tokens) <= limit]
    skipped = len(data.splits["train"]) - len(kept)
    if skipped:
        data.splits["train"] = kept
        data.notes.append(f"{skipped} training sentence(s) of more than {limit} tokens skipped (data.max_sentence_length)")
    return data


def in_fold(index: int, number: int, count: int) -> bool:
    """Whether sentence ``index`` is in fold ``number`` (1-based) of ``count`` interleaved folds."""
    return index % count == number - 1


def without_fold(sentences: list[Sentence], fold: str) -> list[Sentence]:
    """The sentences outside fold "k/K" (``data.exclude_fold``)."""
    number, count = fold_of(fold)
    return [sentence for index, sentence in enumerate(sentences) if not in_fold(index, number, count)]


def default_metric(kind, scheme: str) -> str:
    """Entity F1 for span labels, else the kind's first metric (token accuracy, LAS)."""
    return "span_f1" if scheme != "none" and "span_f1" in kind.metrics else kind.metrics[0]


# Label sets that train without error but most likely not as the user meant: one label only, labels
# of dev or test that training never shows, and "labels" that look like words (swapped columns).
# Each gives a note (a warning in the run's log) with counts; none stops the run.
WORD_LIKE_LABELS = 100  # more distinct labels than this, and at least half as many as distinct words: words, not labels


def label_counts(data: TaskData, split: str) -> Counter:
    """How often each label string occurs in ``split`` (tagging: per token; parsing: per relation; sentences: per sentence)."""
    return Counter(label for labels in data.kind.label_strings(data.gold(split)) for label in labels)


def label_notes(data: TaskData) -> list[str]:
    """Notes on the training labels and on the evaluation splits' labels, for the run's log."""
    if "train" not in data.splits:
        return []
    training = label_counts(data, "train")
    if not training:  # regression: scores, no labels
        return []
    notes = []
    if len(training) == 1:
        label, count = next(iter(training.items()))
        notes.append(f"every training label is '{label}' ({count} of them): the model can only learn to predict it; check --columns and the file")
    words = {token for tokens in data.tokens("train") for token in tokens}
    if len(training) > WORD_LIKE_LABELS and len(training) >= len(words) / 2:
        examples = ", ".join(repr(label) for label, _ in training.most_common(3))
        notes.append(f"the labels look like words ({len(training)} distinct labels for {len(words)} distinct tokens, e.g. {examples}): are --columns swapped?")
    notes += case_variant_notes(data)
    for split in data.splits:
        if split == "train":
            continue
        unseen = {label: count for label, count in label_counts(data, split).items() if label not in training}
        if unseen:
            shown = ", ".join(f"{label} ({count})" for label, count in sorted(unseen.items(), key=lambda item: -item[1])[:5])
            total = sum(unseen.values())
            notes.append(
                f"{split} has {total} label{'s' if total != 1 else ''} never seen in training ({len(unseen)} kind{'s' if len(unseen) != 1 else ''}: "
                f"{shown}): they are scored but can never be predicted"
            )
    return notes


def case_variant_notes(data: TaskData) -> list[str]:
    """A note where chunk types of a span scheme differ only in case (``I-PER`` and ``i-per``): two
    entity types to the model and to conlleval, most likely one meant (a prefix's case is free)."""
    if data.scheme not in CHUNK_SCHEMES:
        return []
    spellings: dict[str, Counter] = {}
    for split in data.splits:
        for label, count in label_counts(data, split).items():
            chunk_type = split_tag(label)[1]
            if chunk_type:
                spellings.setdefault(chunk_type.casefold(), Counter())[chunk_type] += count
    variants = [counts for counts in spellings.values() if len(counts) > 1]
    if not variants:
        return []
    shown = "; ".join(" and ".join(f"{chunk_type} ({count} labels)" for chunk_type, count in counts.most_common()) for counts in variants[:3])
    return [
        f"{len(variants)} entity type{'s differ' if len(variants) > 1 else ' differs'} only in case: {shown}; they are scored as different types, "
        "as conlleval does: if they are one, write them alike in the files"
    ]
