"""What a registered dataset is: :class:`DatasetSpec` and the names every registry file shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SCHEMES = ("iob1", "iob2", "bioes", "none")
DEPENDENCY = "dependency"  # the task name (and kind) of HEAD + DEPREL in CoNLL-U files
CONLLU_EXTENSIONS = (".conllu", ".conllup")
CARVE_NOTE = " No official dev split: dev = every 10th train sentence (index % 10 == 9), train = the rest."


@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset lives, how to read it and which tasks/metrics it serves."""

    name: str  # short name used on the CLI
    folder: str  # folder under the data root, e.g. "wnut17"; "" for a user's own files
    format: str  # "conll" | "conllu" | "tsv" (one sentence per line: a text field and label fields, data/tsv.py)
    splits: Mapping[str, str]  # split -> file path relative to folder (absolute for user files)
    columns: tuple[str, ...] | None  # column names for conll files (None: conllu, or inferred)
    tasks: Mapping[str, str]  # task name -> column holding its labels; first = default task
    schemes: Mapping[str, str]  # column -> tag scheme: "iob1" | "iob2" | "bioes" | "none"
    metric: Mapping[str, str]  # task -> "accuracy" | "span_f1" (what the paper reports)
    url: str  # canonical page / download URL
    downloads: Mapping[str, str]  # relative file -> direct URL; empty when not downloadable
    license: str
    description: str
    dev_from_train: bool = False  # no official dev split: carve one from train
    kinds: Mapping[str, str] = field(default_factory=dict)  # task -> kind (seqtransfer.tasks); default tagging
    separator: str = "auto"  # column files: auto | tab | space (see conll.py)
    header: bool = False  # tsv: the first line names the fields
    extra_fields: bool = False  # tsv: lines may carry more fields than ``columns`` (ignored)
    named_fields: bool = False  # tsv: each file's header names its fields, read by name (a user's files, whose order may differ)
    relabel_train: str | None = None  # a mapping of data/mtt_mapping.RELABELLINGS applied to the training split's tags
    shares_sentences_with: tuple[str, ...] = ()  # datasets whose dev/test splits hold sentences of this training split (scoring there leaks)

    @property
    def default_task(self) -> str:
        """The first task, used when none is asked for."""
        return next(iter(self.tasks))

    def split_names(self) -> list[str]:
        """The splits that can be loaded, including a carved dev split."""
        names = list(self.splits)
        if self.dev_from_train and "dev" not in names:
            names.insert(1, "dev")
        return names


TRAIN_DEV_TEST = {"train": "train", "dev": "dev", "test": "test"}


def standard_splits(extension: str) -> dict[str, str]:
    """``{"train": "train.EXT", "dev": "dev.EXT", "test": "test.EXT"}``."""
    return {split: f"{stem}.{extension}" for split, stem in TRAIN_DEV_TEST.items()}
