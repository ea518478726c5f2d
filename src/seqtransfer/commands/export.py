"""`seqtransfer export RUN --format hf|onnx --output DIR`: a run as a Hugging Face model folder or an ONNX graph."""

from __future__ import annotations

import argparse
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.errors import SeqTransferError


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_directory", metavar="RUN", help="a run directory (hf: a fine-tuned Transformer tagger with a softmax head; onnx: a BiLSTM(-CRF) tagger, PretRand or a parser)")
    parser.add_argument(
        "--format",
        choices=["hf", "onnx"],
        default="hf",
        help="hf: an AutoModelForTokenClassification folder that transformers.pipeline reads (default); "
        "onnx: model.onnx for onnxruntime, with the vocabularies and the decoding's settings (extra 'onnx')",
    )
    parser.add_argument("--output", required=True, help="the folder to write (new, or empty)")


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer.workflows.export import export_huggingface

    output = Path(arguments.output)
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise SeqTransferError("--output exists and is not an empty folder", path=output, hint="give a new folder")
    if arguments.format == "onnx":
        from seqtransfer.workflows.onnx_export import export_onnx

        note = export_onnx(arguments.run_directory, output)
        print(
            f"exported {arguments.run_directory} to {output}/model.onnx (largest difference to torch on the traced sentences: "
            f"{note['largest_difference_to_torch']:.1e}): seqtransfer.workflows.onnx_model.OnnxModel('{output}').predict(sentences)"
        )
        return note
    note = export_huggingface(arguments.run_directory, output)
    if "TokenClassification" in note["class"]:
        usage = f"transformers.pipeline('token-classification', model='{output}', aggregation_strategy='first')"
    else:
        usage = f"transformers.pipeline('text-classification', model='{output}')"
    print(f"exported {arguments.run_directory} as {note['class']} to {output}: {usage}")
    return note


COMMAND = Command("export a run for the wider ecosystem (a Hugging Face token- or sequence-classification folder, or ONNX)", arguments, run)
