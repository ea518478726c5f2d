"""Datasets of a user's own files (``--train/--dev/--test/--columns``): :func:`custom_dataset`
builds their :class:`~seqtransfer.data.dataset_spec.DatasetSpec`, for column, CoNLL-U or TSV files.

``registry.py`` imports these names back, so they can be imported from there.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from seqtransfer.data.conll import check_columns
from seqtransfer.data.corpus import read_lines
from seqtransfer.data.dataset_spec import CONLLU_EXTENSIONS, DEPENDENCY, SCHEMES, DatasetSpec
from seqtransfer.data.tsv import TEXT, TEXT_B, as_number
from seqtransfer.errors import SeqTransferError


def existing_paths(given: dict[str, str | Path | None]) -> dict[str, Path]:
    """The given splits' files as absolute paths; a missing file or a folder is one error line."""
    paths = {split: Path(path).expanduser().resolve() for split, path in given.items() if path is not None}
    for split, path in paths.items():
        if not path.is_file():
            problem = "is a folder, not a file" if path.is_dir() else "not found"
            raise SeqTransferError(f"{split} file {problem}", path=path, hint=f"pass an existing file with --{split} PATH")
    return paths


def custom_dataset(
    train: str | Path, dev: str | Path | None = None, test: str | Path | None = None, columns: Sequence[str] | str | None = None, task: str | None = None, scheme: str = "none", separator: str = "auto"
) -> DatasetSpec:
    """A spec for a user's own files (``--train/--dev/--test/--columns``); paths become absolute.

    The format follows the train file's extension (``.conllu``/``.conllup`` -> CoNLL-U, else
    column file). The task's label column is ``task`` if it names a column, else the last named
    column (``label`` when columns are inferred, ``upos`` for CoNLL-U). Without ``dev``, dev is
    carved from train like the registered datasets (every 10th sentence).
    """
    paths = existing_paths({"train": train, "dev": dev, "test": test})
    if paths["train"].suffix.lower() == ".tsv":
        return custom_tsv_dataset(paths, columns, task, dev is None)
    file_format = "conllu" if paths["train"].suffix.lower() in CONLLU_EXTENSIONS else "conll"
    names = custom_columns(columns, file_format)
    label_column = choose_label_column(names, task, file_format)
    if scheme not in (*SCHEMES, "auto"):
        known = ", ".join((*SCHEMES, "auto"))
        raise SeqTransferError(f"unknown tag scheme '{scheme}' (known: {known})", hint="pass one of the known schemes")
    task_name = task or label_column
    parsing = task_name == DEPENDENCY
    if parsing and file_format != "conllu":
        raise SeqTransferError("--task dependency needs CoNLL-U files (HEAD and DEPREL columns)", path=paths["train"], hint="give .conllu files, or a tagging task")
    metric = "attachment" if parsing else "accuracy" if scheme in ("none", "auto") else "span_f1"  # auto: decided from the labels
    return DatasetSpec(
        name="custom",
        folder="",
        format=file_format,
        splits={split: str(path) for split, path in paths.items()},
        columns=names,
        tasks={task_name: label_column},
        schemes={label_column: scheme},
        metric={task_name: metric},
        url="",
        downloads={},
        license="user files",
        description="user files: " + ", ".join(f"{split}={path}" for split, path in paths.items()),
        dev_from_train=dev is None,
        kinds={DEPENDENCY: DEPENDENCY} if parsing else {},
        separator=separator,
    )


def custom_tsv_dataset(paths: dict[str, Path], columns: Sequence[str] | str | None, task: str | None, carve_dev: bool) -> DatasetSpec:
    """A user's sentence or sentence-pair TSV files: fields named by ``columns`` (one of them ``text``;
    ``text_b``, a pair's second text; ``_...``, ignored), else by the train file's first line (a
    header); the task is ``task`` or the first label field. Labels that are all numbers, some not
    whole, are scores: a regression task scored by correlation (STS-B's kind)."""
    header = columns is None
    if header:
        first = (read_lines(paths["train"]) or [""])[0]  # a UTF-16/32 file read by its byte-order mark
        names = tuple(name.strip() for name in first.split("\t"))
    else:
        names = tuple(columns.split(",") if isinstance(columns, str) else columns)
    labels = [name for name in names if name not in (TEXT, TEXT_B) and not name.startswith("_")]
    if TEXT not in names or not labels:
        raise SeqTransferError(
            f"TSV fields {', '.join(names)} need a 'text' field and a label field",
            path=paths["train"],
            hint="name them in a header line (e.g. text<TAB>label, or text<TAB>text_b<TAB>label for pairs) or with --columns text,label",
        )
    column = task if task in labels else labels[0]
    if task is not None and task not in labels:
        raise SeqTransferError(f"no field '{task}' in the TSV files", path=paths["train"], hint=f"use --task with one of: {', '.join(labels)}")
    regression = are_scores(tsv_field_values(paths["train"], names, column, header))
    return DatasetSpec(
        name="custom",
        folder="",
        format="tsv",
        splits={split: str(path) for split, path in paths.items()},
        columns=names,
        header=header,
        tasks={column: column},
        schemes={},
        metric={column: "correlation" if regression else "accuracy"},
        url="",
        downloads={},
        license="user files",
        description="user files: " + ", ".join(f"{split}={path}" for split, path in paths.items()),
        dev_from_train=carve_dev,
        kinds={column: "regression" if regression else "sentence"},
        named_fields=header,
    )


def tsv_field_values(path: Path, names: tuple[str, ...], field: str, header: bool) -> list[str]:
    """One field's values in a TSV file (lines with another field count are left to the reader's error)."""
    index = names.index(field)
    lines = read_lines(path)[1 if header else 0 :]
    return [values[index].strip() for values in (line.split("\t") for line in lines if line.strip()) if len(values) == len(names)]


SCORE_SHARE = 0.9  # labels this share of which are numbers (some not whole) are scores: the others are errors to name, not classes


def are_scores(values: list[str]) -> bool:
    """Whether labels are real-valued scores (numbers, some not whole: "3.8"), not classes ("0",
    "1"): all of them numbers, or all but a few (an "n/a" among 3.8s is a bad score, which the
    reader names with its line, not a class)."""
    numbers = [number for number in map(as_number, values) if number is not None]
    return bool(numbers) and len(numbers) >= SCORE_SHARE * len(values) and any(not number.is_integer() for number in numbers)


def custom_columns(columns: Sequence[str] | str | None, file_format: str) -> tuple[str, ...] | None:
    """Validated column names (a comma-separated string is accepted) for a column file."""
    if columns is None:
        return None
    if file_format == "conllu":
        raise SeqTransferError("--columns applies to column files only; CoNLL-U columns are fixed", hint="drop --columns and pick the label column with --task (e.g. upos)")
    names = columns.split(",") if isinstance(columns, str) else list(columns)
    return tuple(check_columns(names))


def choose_label_column(names: tuple[str, ...] | None, task: str | None, file_format: str) -> str:
    """The column holding the task's labels (see :func:`custom_dataset`)."""
    if file_format == "conllu":
        return "deprel" if task == DEPENDENCY else task or "upos"
    if names is None:
        return "label"
    labelled = [name for name in names if name not in ("word", "_")]
    if not labelled:
        layout = ",".join(names)
        hint = "name the label column, e.g. --columns word,pos"
        raise SeqTransferError(f"column layout '{layout}' has no label column", hint=hint)
    return task if task in labelled else labelled[-1]
