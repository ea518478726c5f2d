"""`seqtransfer ensemble RUN RUN ... --output DIR`: make several runs one model.

The folder holds only ``members.json`` (the runs, by their paths relative to it, and how they
combine); ``evaluate``, ``predict``, ``seqtransfer.load`` and ``transfer.distill_from`` take it as a
run (see :mod:`seqtransfer.workflows.ensemble`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.errors import SeqTransferError


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN", help="two or more tagging or sentence-classification run directories of one task and tag set")
    parser.add_argument("--output", required=True, help="the ensemble's folder (new, or empty)")
    parser.add_argument(
        "--combination",
        choices=["average", "vote"],
        default="average",
        help="average: the arg-max of their averaged label distributions (default); vote: per token (or sentence) the label most runs give",
    )


def check_runs(runs: list[str]) -> list[Path]:
    """Two or more distinct run directories, none of them a folder of models itself."""
    from seqtransfer import rundir

    if len(runs) < 2:
        raise SeqTransferError("an ensemble needs at least two runs", hint="pass two or more run directories")
    directories = [Path(run) for run in runs]
    resolved = [directory.resolve() for directory in directories]
    for index, directory in enumerate(directories):
        if resolved[index] in resolved[:index]:
            raise SeqTransferError("this run is listed twice", path=directory, hint="list each run once")
        if rundir.read_members(directory):
            raise SeqTransferError("this is already a folder of models that predict together", path=directory, hint="list its runs (they are named in its members.json) instead")
    return directories


def check_output(output: Path, members: list[Path]) -> None:
    """A new or empty folder, not one of the members."""
    if output.resolve() in [member.resolve() for member in members]:
        raise SeqTransferError("--output is one of the runs", path=output, hint="give a new folder for the ensemble")
    if output.exists() and not output.is_dir():
        raise SeqTransferError("--output is a file", path=output, hint="give a new folder for the ensemble")
    if output.is_dir() and any(output.iterdir()):
        raise SeqTransferError("--output is not empty", path=output, hint="give a new folder for the ensemble, or remove this one")


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer import rundir
    from seqtransfer.workflows.ensemble import check_members

    members = check_runs(arguments.runs)
    output = Path(arguments.output)
    check_output(output, members)
    loaded = [rundir.load_run(member, "cpu") for member in members]
    check_members(loaded)
    rundir.write_members(output, members, arguments.combination, method="ensemble")
    kind, labels = loaded[0].model.task_kind, sorted({label for run in loaded for label in run.vocabularies.labels.items})
    print(
        f"ensemble of {len(members)} {kind} runs ({len(labels)} labels, {arguments.combination}) -> {output}\n"
        f"  score it: seqtransfer evaluate {output}   use it: seqtransfer predict {output} FILE   distil it: transfer.distill_from=[{output}]"
    )
    return {"members": [str(member) for member in members], "combination": arguments.combination, "output": str(output)}


COMMAND = Command("make several runs one model: their averaged label distributions (or votes), for evaluate, predict and distillation", arguments, run)
