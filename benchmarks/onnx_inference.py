"""Inference throughput: seqtransfer against onnxruntime on the same exported tagger (issue 57, point 2).

    SEQTRANSFER_DATA=../shared/datasets python benchmarks/onnx_inference.py --dataset wnut17
    python benchmarks/onnx_inference.py --run runs/my-tagger --json onnx.json      # a run of your own

Without ``--run`` it first trains the benchmark's tagger (the reference BiLSTM-CRF, GloVe 50d,
``--epochs`` epochs) with ``seqtransfer train`` into a temporary folder. It exports the run with
``seqtransfer export --format onnx``, encodes the test split once with the run's vocabularies,
checks that both predict the same labels, then times decoding the whole split (best of 2 passes)
at each batch size, each with ``--threads`` threads: seqtransfer's ``predict_labels`` (every
distinct form through the character encoder once per set) and ``OnnxModel.predict_encoded``
(onnxruntime runs the graph, seqtransfer's Viterbi decodes). Both exclude reading and encoding the
text. Prints tokens/s and the ratio onnxruntime / seqtransfer.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import encode_sentences
from seqtransfer.rundir import load_run
from seqtransfer.training.inference import predict_labels
from seqtransfer.workflows.onnx_export import export_onnx
from seqtransfer.workflows.onnx_model import OnnxModel


def trained_run(arguments: argparse.Namespace, folder: Path) -> Path:
    """The benchmark's tagger, trained by the command users run."""
    command = [
        str(Path(sys.executable).parent / "seqtransfer"),
        "train",
        "--dataset",
        arguments.dataset,
        "--classifier",
        "crf",
        "--epochs",
        str(arguments.epochs),
        "--output",
        str(folder),
        "--quiet",
        f"train.threads={arguments.threads}",
    ]
    subprocess.run(command, check=True, env={**os.environ, **({"SEQTRANSFER_DATA": arguments.data_dir} if arguments.data_dir else {})})
    return folder


def best_seconds(function, passes: int = 2) -> float:
    best = float("inf")
    for _ in range(passes):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="wnut17")
    parser.add_argument("--run", help="a tagger's run directory (default: train one)")
    parser.add_argument("--epochs", type=int, default=1, help="epochs of the tagger trained without --run (default 1)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 128, 512, 2048])
    parser.add_argument("--data-dir")
    parser.add_argument("--json", help="write the measurements here")
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    with tempfile.TemporaryDirectory() as work:
        run_directory = Path(arguments.run) if arguments.run else trained_run(arguments, Path(work) / "run")
        export_onnx(run_directory, Path(work) / "onnx")
        run = load_run(run_directory)
        exported = OnnxModel(Path(work) / "onnx", threads=arguments.threads)
        data = load_task_data(dataclasses.replace(run.config.data, data_dir=arguments.data_dir or run.config.data.data_dir), ("test",))
        encoded = encode_sentences(data.tokens("test"), run.vocabularies)
        tokens = int(encoded.lengths.sum())
        ours = predict_labels(run.model, encoded, run.vocabularies.labels, 512)
        theirs = exported.predict_encoded(encoded, 512)
        agree = sum(mine == other for mine, other in zip(ours, theirs))
        print(f"{arguments.dataset} test: {len(ours)} sentences, {tokens} tokens; same labels in {agree} of {len(ours)} sentences")
        rows = []
        for batch_size in arguments.batch_sizes:
            seconds = best_seconds(lambda size=batch_size: predict_labels(run.model, encoded, run.vocabularies.labels, size))
            onnx_seconds = best_seconds(lambda size=batch_size: exported.predict_encoded(encoded, size))
            rows.append({"batch_size": batch_size, "seqtransfer_tokens_per_second": tokens / seconds, "onnxruntime_tokens_per_second": tokens / onnx_seconds})
        print(f"{'batch':>6} {'seqtransfer tok/s':>18} {'onnxruntime tok/s':>18} {'onnxruntime / seqtransfer':>26}")
        for row in rows:
            ratio = row["onnxruntime_tokens_per_second"] / row["seqtransfer_tokens_per_second"]
            print(f"{row['batch_size']:>6} {row['seqtransfer_tokens_per_second']:>18,.0f} {row['onnxruntime_tokens_per_second']:>18,.0f} {ratio:>26.2f}")
    result = {
        "dataset": arguments.dataset,
        "threads": arguments.threads,
        "tokens": tokens,
        "sentences_with_same_labels": agree,
        "sentences": len(ours),
        "rows": rows,
        "torch": torch.__version__,
        "onnxruntime": __import__("onnxruntime").__version__,
    }
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
