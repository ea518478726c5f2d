"""`seqtransfer evaluate`: re-score a saved model on a dataset split or a file."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from seqtransfer.commands.base import Command


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_directory", metavar="RUN_DIR", help="a run directory written by `seqtransfer train`")
    parser.add_argument("--dataset", help="registered dataset (default: the one the model was trained on)")
    parser.add_argument("--split", default="test", help="split to score (default test)")
    parser.add_argument("--file", help="score your own labelled CoNLL/CoNLL-U file instead")
    parser.add_argument("--columns", help="column names of --file, e.g. word,pos")
    parser.add_argument("--scheme", help="tag scheme of --file labels: none, iob1, iob2, bioes")
    parser.add_argument("--data-dir", help="folder holding the dataset folders (default: $SEQTRANSFER_DATA)")


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer import rundir
    from seqtransfer.data.batching import encode_sentences
    from seqtransfer.data.task_data import load_task_data
    from seqtransfer.training.loop import predict_labels
    from seqtransfer.training.metrics import evaluate
    from seqtransfer.training.report import format_split_scores

    run = rundir.load_run(arguments.run_directory)
    data_config = dataclasses.replace(run.config.data, max_train_sentences=None)
    if arguments.data_dir:
        data_config.data_dir = arguments.data_dir
    split = arguments.split
    if arguments.file:
        columns = arguments.columns.split(",") if arguments.columns else run.config.data.columns
        data_config = dataclasses.replace(data_config, dataset=None, train=arguments.file, dev=None, test=None, columns=columns)
        data_config.scheme = arguments.scheme or data_config.scheme
        split = "train"
    elif arguments.dataset:
        data_config = dataclasses.replace(data_config, dataset=arguments.dataset, train=None, dev=None, test=None)
    data = load_task_data(data_config, splits=(split,))
    encoded = encode_sentences(data.tokens(split), run.vocabularies)
    predicted = predict_labels(run.model, encoded, run.vocabularies.labels, run.config.train.evaluation_batch_size)
    scores = evaluate(data.labels(split), predicted, data.metric)
    name = Path(arguments.file).name if arguments.file else f"{data.dataset}-{split}"
    rundir.write_predictions(Path(arguments.run_directory) / "predictions" / f"evaluate-{name}.conll", data.tokens(split), data.labels(split), predicted)
    print(format_split_scores(name, scores))
    return scores


COMMAND = Command("re-score a saved model on a dataset split or a labelled file", arguments, run)
