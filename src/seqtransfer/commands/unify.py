"""`seqtransfer unify`: label every sentence of several datasets for every task (MuTSPad, section 4.2.2).

    seqtransfer unify --preset tweetall --run POS=runs/pos --run CK=runs/ck --run NER=runs/ner --run DP=runs/dp --output unified/tweetall
    seqtransfer unify --data pos=tweebank:upos --data ner=wnut17:ner --run pos=runs/pos --run ner=runs/ner --output unified/mine

Train a multi-task model on the result with ``multitask.unified=unified/tweetall`` (the dev and
test sets stay each task's gold data of ``multitask.data``).
"""

from __future__ import annotations

import argparse

from seqtransfer.commands.base import Command
from seqtransfer.commands.numbers import whole
from seqtransfer.errors import SeqTransferError


def arguments(parser: argparse.ArgumentParser) -> None:
    from seqtransfer.data.unify_presets import PRESETS

    parser.add_argument(
        "--preset",
        choices=list(PRESETS),
        help="built-in task -> dataset mapping: " + "; ".join(f"{name}: {', '.join(f'{task}={entry}' for task, entry in entries.items())}" for name, entries in PRESETS.items()),
    )
    parser.add_argument("--data", action="append", default=[], metavar="TASK=DATASET[:TASK]", help="the dataset labelling a task (repeatable; adds to or replaces --preset's)")
    parser.add_argument("--run", action="append", default=[], metavar="TASK=RUN_DIR", help="mono-task run that predicts a task where its gold labels are missing (repeatable)")
    parser.add_argument("--output", required=True, help="folder to write SPLIT.conllu and summary.json into")
    parser.add_argument("--splits", default="train", help="comma-separated splits to unify (default train)")
    parser.add_argument("--data-dir", help="folder holding the dataset folders (default: $SEQTRANSFER_DATA)")
    parser.add_argument("--batch-size", type=whole(1), default=256, help="sentences per prediction batch")


def pairs(values: list[str], option: str) -> dict[str, str]:
    result = {}
    for value in values:
        task, separator, target = value.partition("=")
        if not separator or not task or not target:
            raise SeqTransferError(f"{option} {value!r} is not TASK=VALUE", hint=f"e.g. {option} POS=runs/pos")
        result[task] = target
    return result


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer.data.unify_presets import PRESETS
    from seqtransfer.workflows.unify import unify

    entries = {**(PRESETS[arguments.preset] if arguments.preset else {}), **pairs(arguments.data, "--data")}
    if not entries:
        raise SeqTransferError("no tasks to unify", hint="pass --preset tweetall|englishall or --data TASK=DATASET[:TASK]")
    if arguments.batch_size < 1:
        raise SeqTransferError(f"--batch-size must be at least 1, got {arguments.batch_size}", hint="pass --batch-size 1 or more")
    splits = tuple(split.strip() for split in arguments.splits.split(",") if split.strip())
    unknown = [split for split in splits if split not in ("train", "dev", "test")]
    if unknown:
        raise SeqTransferError(f"unknown split '{unknown[0]}'", hint="use train, dev and/or test")
    return unify(entries, pairs(arguments.run, "--run"), arguments.output, arguments.data_dir, splits, arguments.batch_size)


COMMAND = Command("label every sentence of several datasets for every task with mono-task runs (dataset unification)", arguments, run)
