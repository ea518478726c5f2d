"""`seqtransfer datasets`: list the registered datasets with their sizes."""

from __future__ import annotations

import argparse

from seqtransfer.commands.base import Command


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", help="datasets to describe (default: all)")
    parser.add_argument("--data-dir", help="folder holding the dataset folders (default: $SEQTRANSFER_DATA)")


def run(arguments: argparse.Namespace) -> list[dict]:
    from seqtransfer.data.registry import DATASETS, get_dataset
    from seqtransfer.data.summary import format_table, summarize

    names = arguments.names or list(DATASETS)
    rows = []
    for name in names:
        spec = get_dataset(name)
        rows.extend(summarize(spec.name, arguments.data_dir))
    print(format_table(rows))
    return rows


COMMAND = Command("list the registered datasets: splits, sentences, tokens, label-set sizes", arguments, run)
