"""`seqtransfer export RUN --format hf --output DIR`: a run as a Hugging Face model folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.errors import SeqTransferError


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_directory", metavar="RUN", help="a run directory: a fine-tuned Transformer tagger with a softmax head")
    parser.add_argument("--format", choices=["hf"], default="hf",
                        help="hf: an AutoModelForTokenClassification folder that transformers.pipeline reads (default)")
    parser.add_argument("--output", required=True, help="the folder to write (new, or empty)")


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer.workflows.export import export_huggingface

    output = Path(arguments.output)
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise SeqTransferError("--output exists and is not an empty folder", path=output, hint="give a new folder")
    note = export_huggingface(arguments.run_directory, output)
    print(f"exported {arguments.run_directory} as {note['class']} to {output}: "
          f"transformers.pipeline('token-classification', model='{output}', aggregation_strategy='first')")
    return note


COMMAND = Command("export a run for the wider ecosystem (a Hugging Face token-classification folder)", arguments, run)
