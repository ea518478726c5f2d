"""`seqtransfer evaluate`: re-score a saved model on a dataset split or a file."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.commands.numbers import whole
from seqtransfer.commands.predict import add_amp_option


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_directory", metavar="RUN_DIR", help="a run directory written by `seqtransfer train` (or a folder of models that predict together: `seqtransfer ensemble`'s, a self-labelling run's)"
    )
    parser.add_argument("--dataset", help="registered dataset (default: the one the model was trained on)")
    parser.add_argument("--split", default="test", help="split to score (default test)")
    parser.add_argument("--file", help="score your own labelled file instead: CoNLL/CoNLL-U for a tagger or parser, .tsv (text and label fields) for a sentence model")
    parser.add_argument("--columns", help="column names of --file, e.g. word,pos")
    parser.add_argument("--scheme", help="tag scheme of --file labels: none, iob1, iob2, bioes")
    parser.add_argument("--task", help="task of the dataset or file to score (default: the run's task)")
    parser.add_argument("--separator", choices=["auto", "tab", "space"], help="field separator of --file (default auto)")
    parser.add_argument("--strict", action="store_true", help="tags out of their scheme's order are an error instead of a warning")
    parser.add_argument("--device", default="auto", help="auto (first GPU, else CPU), cpu, cuda, cuda:N or mps")
    parser.add_argument("--batch-size", type=whole(1), help="sentences per batch (default: the run's train.evaluation_batch_size)")
    add_amp_option(parser)
    parser.add_argument("--data-dir", help="folder holding the dataset folders (default: $SEQTRANSFER_DATA)")
    parser.add_argument("--model-task", help="a multi-task run: the model's task to score (default: every task on its own data)")


def warn_unknown_labels(gold: list, known: list[str]) -> int:
    """Warn (stderr) about gold labels the model never saw: it cannot predict them. Returns their count."""
    import sys

    labels = [label for sentence in gold for label in sentence]
    unknown = [label for label in labels if label not in set(known)]
    if unknown:
        distinct = sorted(set(unknown))
        shown = ", ".join(distinct[:8]) + (", ..." if len(distinct) > 8 else "")
        print(
            f"seqtransfer: warning: {len(unknown)} of {len(labels)} gold labels ({len(distinct)} distinct: {shown}) were never seen "
            "by the model in training, so they are always scored wrong; is this the model's task and label set?",
            file=sys.stderr,
        )
    return len(unknown)


def data_config_of(run, arguments: argparse.Namespace):
    """The data a single-task run is scored on, and its split: the run's own dataset, ``--dataset``
    or ``--file`` (scored as its ``train`` split), with ``--task``, ``--scheme`` and ``--strict``."""
    data_config = dataclasses.replace(run.config.data, max_train_sentences=None)
    if arguments.data_dir:
        data_config.data_dir = arguments.data_dir
    split = arguments.split
    if arguments.file:
        from seqtransfer.data.registry import CONLLU_EXTENSIONS

        check_file_kind(run, arguments.file)
        conllu = Path(arguments.file).suffix.lower() in CONLLU_EXTENSIONS  # fixed columns: the run's column names do not apply
        columns = arguments.columns.split(",") if arguments.columns else None if conllu else run.config.data.columns
        data_config = dataclasses.replace(data_config, dataset=None, train=arguments.file, dev=None, test=None, columns=columns)
        if arguments.scheme and arguments.scheme != data_config.scheme:
            data_config.scheme, data_config.metric = arguments.scheme, None  # scored as the declared scheme says

        data_config.separator = arguments.separator or data_config.separator
        split = "train"
    elif arguments.dataset:
        data_config = dataclasses.replace(data_config, dataset=arguments.dataset, train=None, dev=None, test=None)
    if arguments.task and arguments.task != data_config.task:
        data_config.task, data_config.metric = arguments.task, None  # the new task's own metric
    data_config.strict = arguments.strict or data_config.strict
    return data_config, split


SENTENCE_KINDS = ("sentence", "regression")  # the kinds a TSV file holds (one text, or a pair, per line)


def check_file_kind(run, path: str) -> None:
    """A ``--file`` of the run's kind: a TSV file (sentences) for a sentence or regression model, a
    CoNLL or CoNLL-U file (tokens) for the others; else one line saying which is which."""
    from seqtransfer.errors import SeqTransferError

    sentences = Path(path).suffix.lower() == ".tsv"
    if sentences != (run.model.task_kind in SENTENCE_KINDS):
        held = "sentences (a TSV file)" if sentences else "tokens (a CoNLL or CoNLL-U file)"
        needed = "a .tsv file of text and label fields" if run.model.task_kind in SENTENCE_KINDS else "a CoNLL or CoNLL-U file of the model's task"
        raise SeqTransferError(f"this run is a {run.model.task_kind} model and the file holds {held}", path=path, hint=f"score {needed}, or a run trained on such files")


def check_split_read(data, split: str, data_config) -> None:
    """The split to score was there to read: one line naming the splits the data has."""
    from seqtransfer.data.registry import get_dataset
    from seqtransfer.errors import SeqTransferError

    if split in data.splits:
        return
    if data_config.dataset:
        where, names = f"dataset {data_config.dataset} has", get_dataset(data_config.dataset).split_names()
    else:
        where, names = "the run's data files have", [name for name in ("train", "dev", "test") if getattr(data_config, name)]
    raise SeqTransferError(f"{where} no split '{split}' (splits: {', '.join(names)})", hint=f"pass --split {' or '.join(names)}, or --file FILE")


def predict_split(run, members, data, split: str, batch_size: int, arguments: argparse.Namespace) -> list:
    """The run's predictions for ``split`` of ``data`` (a folder's models together: an ensemble, a self-labelling run)."""
    from seqtransfer import rundir
    from seqtransfer.device import memory_errors_as_one_line
    from seqtransfer.training.inference import predict_labels
    from seqtransfer.workflows.combination import combine

    with memory_errors_as_one_line(batch_size, "while evaluating"):
        if members:
            paths, combination = members
            return combine(combination, [run, *(rundir.load_run(path, arguments.device) for path in paths[1:])], data.tokens(split), batch_size, arguments.amp)
        return predict_labels(run.model, data.encode(split, run.vocabularies, with_targets=False), run.vocabularies.labels, batch_size, arguments.amp)


def run(arguments: argparse.Namespace) -> dict:
    import sys

    from seqtransfer import rundir
    from seqtransfer.corpora.task_data import load_task_data
    from seqtransfer.errors import SeqTransferError
    from seqtransfer.training.inference import score_predictions
    from seqtransfer.training.report import format_split_scores

    members = rundir.read_members(arguments.run_directory)  # an ensemble's or a self-labelling run's models, predicting together
    run = rundir.load_run(members[0][0] if members else arguments.run_directory, arguments.device)
    batch_size = arguments.batch_size if arguments.batch_size is not None else run.config.train.evaluation_batch_size
    if batch_size < 1:
        raise SeqTransferError(f"batch size must be at least 1, got {batch_size}", hint="pass --batch-size 1 or more")
    if run.model.task_kind == "multitask":
        return evaluate_multitask(run, arguments, batch_size)
    if arguments.model_task:
        raise SeqTransferError("--model-task is for multi-task runs", path=arguments.run_directory, hint="leave it out for this single-task run")
    data_config, split = data_config_of(run, arguments)
    data = load_task_data(data_config, splits=(split,))
    check_split_read(data, split, data_config)
    for note in data.notes:
        print(f"seqtransfer: warning: {note}", file=sys.stderr)
    if not arguments.file:
        from seqtransfer.training.overlap import warn_of_leaks

        for configured in [run.config, *(rundir.read_run_config(member) for member in (members[0][1:] if members else []))]:  # each model's
            warn_of_leaks(configured, data_config.dataset, split)
    if data.kind.name != run.model.task_kind:
        raise SeqTransferError(
            f"this run is a {run.model.task_kind} model but task '{data.task}' of {data.dataset} is {data.kind.name}",
            path=arguments.run_directory,
            hint="pass --task with a task of the model's kind (e.g. dependency for a parser, upos for a tagger)",
        )
    predicted = predict_split(run, members, data, split, batch_size, arguments)
    known = {label for member in members[0] for label in rundir.read_vocabularies(member).labels.items} if members else run.vocabularies.labels.items
    warn_unknown_labels(data.kind.label_strings(data.gold(split)), sorted(known))  # a folder of models: the labels any of them knows
    name = Path(arguments.file).name if arguments.file else f"{data.dataset}-{split}"
    scores = score_predictions(data, split, predicted, Path(arguments.run_directory) / "predictions", f"evaluate-{name}")
    print(format_split_scores(name, scores))
    return scores


def evaluate_multitask(run, arguments: argparse.Namespace, batch_size: int) -> dict:
    """Score each task of a multi-task run (or ``--model-task``) on its own data's split, or on
    ``--dataset`` / ``--file`` when one task is chosen."""
    from seqtransfer.corpora.task_data import load_task_data
    from seqtransfer.errors import SeqTransferError
    from seqtransfer.models.multitask import TaskView
    from seqtransfer.training.inference import score_split
    from seqtransfer.training.report import format_split_scores
    from seqtransfer.workflows.multitask import data_config_of

    tasks = run.model.order
    if arguments.model_task and arguments.model_task not in tasks:
        raise SeqTransferError(f"the run has no task '{arguments.model_task}'", path=arguments.run_directory, hint=f"its tasks: {', '.join(tasks)}")
    if (arguments.file or arguments.dataset) and not arguments.model_task:
        raise SeqTransferError("a multi-task run scores one task on other data", hint=f"pass --model-task with one of: {', '.join(tasks)}")
    results = {}
    for task in [arguments.model_task] if arguments.model_task else tasks:
        data_config = data_config_of(run.config, run.config.multitask.data[task], task)
        data_config.data_dir = arguments.data_dir or run.config.data.data_dir
        split = arguments.split
        if arguments.file:
            columns = arguments.columns.split(",") if arguments.columns else None
            data_config = dataclasses.replace(
                data_config, dataset=None, train=arguments.file, dev=None, test=None, columns=columns, task=arguments.task, scheme=arguments.scheme or "auto", separator=arguments.separator or "auto"
            )
            split = "train"
        elif arguments.dataset:
            data_config = dataclasses.replace(data_config, dataset=arguments.dataset, task=arguments.task, train=None, dev=None, test=None)
        data_config.strict = arguments.strict
        data = load_task_data(data_config, splits=(split,))
        check_split_read(data, split, data_config)
        if data.kind.name != run.model.kinds[task]:
            raise SeqTransferError(
                f"task {task} of this run is {run.model.kinds[task]}, but {data.dataset}/{data.task} is {data.kind.name}", path=arguments.run_directory, hint="pass --task with a task of the same kind"
            )
        warn_unknown_labels(data.kind.label_strings(data.gold(split)), run.vocabularies.task_labels[task].items)
        name = Path(arguments.file).name if arguments.file else f"{data.dataset}-{split}"
        results[task] = score_split(
            TaskView(run.model, task),
            data,
            split,
            run.vocabularies,
            run.vocabularies.task_labels[task],
            batch_size,
            Path(arguments.run_directory) / "predictions" / task,
            f"evaluate-{name}",
            arguments.amp,
        )
        print(format_split_scores(f"{task} {name}", results[task]))
    return results


COMMAND = Command("re-score a saved model on a dataset split or a labelled file", arguments, run)
