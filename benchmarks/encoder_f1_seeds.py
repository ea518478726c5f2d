"""Dev and test F1 of the fine-tuned encoder of ``compare_flair_encoder.py`` at several seeds, for one tool.

    SEQTRANSFER_DATA=../shared/datasets nice -n 10 python benchmarks/encoder_f1_seeds.py --seeds 2 3 --amp bf16 --output benchmarks/results/encoder-wnut17-minilm-bf16-f1-seeds.jsonl
    ... --checkout /path/to/another/checkout --label old   # the same with another commit's code
    ... --tool flair --label flair                          # flair's side (its venv, as compare_flair.py makes it)

One benchmark invocation trains each tool once (one seed); this trains seqtransfer's side alone
(``seqtransfer_runner.py``: the same model, data, settings and epochs; one inference batch size,
no timing kept) at each ``--seed`` and scores its predictions as the comparison does, to tell a
seed's noise from a change's effect. ``--checkout`` runs another checkout's runner and ``src``
(e.g. a ``git worktree`` of an older commit). ``--tool flair`` trains flair's side instead
(``flair_encoder_runner.py`` on the ``data.json`` the comparison writes for that seed), scored the
same way. Appends one JSON line per seed to ``--output``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from compare_flair import ensure_flair_venv
from compare_flair_encoder import export_for_flair
from seqtransfer_runner import benchmark_config, load_benchmark_data

from seqtransfer.data.metrics import evaluate
from seqtransfer.embeddings.transformer import encoder_path

HERE = Path(__file__).resolve().parent.parent


def train_flair(arguments: argparse.Namespace, encoder: str, seed: int, folder: Path, predictions: Path) -> None:
    """flair's side at ``seed``: the comparison's ``data.json`` for that seed, then its runner in the flair venv."""
    seed_folder = folder / f"flair-{seed}"
    seed_folder.mkdir()
    export_for_flair(argparse.Namespace(**{**vars(arguments), "seed": seed, "max_evaluation_sentences": None}), arguments.dataset, Path(encoder), seed_folder)
    subprocess.run(
        [
            arguments.flair_python,
            str(HERE / "benchmarks" / "flair_encoder_runner.py"),
            "--input",
            str(seed_folder),
            "--epochs",
            str(arguments.epochs),
            "--threads",
            str(arguments.threads),
            "--batch-sizes",
            "64",
            "--predictions",
            str(predictions),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def seed_scores(arguments: argparse.Namespace, encoder: str, seed: int, folder: Path) -> dict:
    """Train and predict at ``seed`` in a process of its own; score dev and test."""
    predictions = folder / f"predictions-{seed}.json"
    if arguments.tool == "flair":
        train_flair(arguments, encoder, seed, folder, predictions)
    else:
        checkout = Path(arguments.checkout).resolve()
        environment = {**os.environ, "PYTHONPATH": str(checkout / "src")}
        subprocess.run(
            [
                sys.executable,
                str(checkout / "benchmarks" / "seqtransfer_runner.py"),
                "--dataset",
                arguments.dataset,
                "--seed",
                str(seed),
                "--encoder",
                encoder,
                "--epochs",
                str(arguments.epochs),
                "--amp",
                arguments.amp,
                "--threads",
                str(arguments.threads),
                "--batch-sizes",
                "64",
                "--predictions",
                str(predictions),
                *(["--data-dir", arguments.data_dir] if arguments.data_dir else []),
                *(["--max-train-sentences", str(arguments.max_train_sentences)] if arguments.max_train_sentences else []),
                *(["--batching", arguments.batching] if arguments.batching else []),
            ],
            check=True,
            env=environment,
            stdout=subprocess.DEVNULL,
        )
    config = benchmark_config(arguments.dataset, arguments.threads, arguments.max_train_sentences, arguments.data_dir, seed, encoder=encoder, epochs=arguments.epochs)
    data = load_benchmark_data(config)
    predicted = json.loads(predictions.read_text(encoding="utf-8"))
    scores = {split: evaluate(data.labels(split), predicted[split], "span_f1")["f1"] for split in ("dev", "test")}
    setup = {"amp": arguments.amp, "batching": arguments.batching} if arguments.tool == "seqtransfer" else {"amp": "off", "batching": "random"}  # flair's own
    return {"label": arguments.label, "tool": arguments.tool, "dataset": arguments.dataset, **setup, "seed": seed, "dev_f1": scores["dev"], "test_f1": scores["test"]}


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", required=True)
    parser.add_argument("--dataset", default="wnut17")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--amp", default="off", choices=["off", "bf16"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--max-train-sentences", type=int, default=None, help="train on the first N sentences (a quick check; the numbers mean nothing)")
    parser.add_argument("--checkout", default=str(HERE), help="the checkout whose runner and src/ train (default: this one)")
    parser.add_argument("--batching", choices=["tokens", "subwords", "random"], help="the runner's train.batching (default: the checkout's own; older checkouts lack the option)")
    parser.add_argument("--tool", default="seqtransfer", choices=["seqtransfer", "flair"], help="whose side trains (flair: fp32, random batches, as in the comparison)")
    parser.add_argument("--flair-venv", default=str(HERE / "benchmarks" / ".flair-venv"))
    parser.add_argument("--label", default="current", help="names the code in the output lines")
    parser.add_argument("--output", required=True, help="JSON-lines file the seeds' scores are appended to")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[dict]:
    arguments = parse_arguments(argv)
    encoder = str(encoder_path(arguments.encoder).resolve())
    if arguments.tool == "flair":  # once, not per seed
        arguments.flair_python = str(ensure_flair_venv(Path(arguments.flair_venv)))
    rows = []
    with tempfile.TemporaryDirectory(prefix="encoder-f1-") as temporary:
        for seed in arguments.seeds:
            row = seed_scores(arguments, encoder, seed, Path(temporary))
            print(json.dumps(row), flush=True)
            with open(arguments.output, "a", encoding="utf-8") as output:
                output.write(json.dumps(row) + "\n")
            rows.append(row)
    return rows


if __name__ == "__main__":
    main()
