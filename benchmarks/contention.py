"""Training speed when the cores are shared: one run alone, 2 and 3 at once, and one beside a busy loop.

    nice -n 10 python benchmarks/contention.py                       # seqtransfer before/after, and flair
    python benchmarks/contention.py --tools after --situations solo two

For each tool and situation it starts the runs at the same moment, each a process of its own
training the BiLSTM-CRF tagger on WNUT-17 (the first ``--max-train-sentences``, 2 torch threads
asked for), and prints the median training-epoch seconds of each run, that time against the
tool's time alone, and the total throughput (training tokens per second summed over the runs).
Tools:

- ``after``: ``seqtransfer train`` as users run it (``train.share_cores=true``, the default: the
  run drops to the cores other programs leave free, ``src/seqtransfer/threads.py``);
- ``before``: the same command with ``train.share_cores=false`` (2 threads throughout, as before);
- ``flair``: flair 0.15.1's same model (``flair_runner.py``, in ``benchmarks/.flair-venv``, made
  by ``compare_flair.py``), with torch's 2 threads throughout.

A fair share of the machine is 2x the time alone for two runs and 3x for three; beside a busy loop
of normal priority, 2x ("x fair share" is the slowdown over that). Each run's log and JSON go to ``--work-dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compare_flair import DEFAULT_DATA, ensure_flair_venv, export_for_flair

BENCHMARKS = Path(__file__).resolve().parent
SITUATIONS = {"solo": (1, False), "two": (2, False), "three": (3, False), "busy": (1, True)}


def seqtransfer_command(arguments: argparse.Namespace, share_cores: bool, output: Path) -> list[str]:
    """`seqtransfer train` of the tagger on the subset, ``arguments.epochs`` epochs."""
    return [
        str(Path(sys.executable).parent / "seqtransfer"),
        "train",
        "--dataset",
        arguments.dataset,
        "--classifier",
        "crf",
        "--data-dir",
        arguments.data_dir,
        "--epochs",
        str(arguments.epochs),
        "--output",
        str(output),
        "--quiet",
        f"train.threads={arguments.threads}",
        f"train.share_cores={'true' if share_cores else 'false'}",
        f"data.max_train_sentences={arguments.max_train_sentences}",
    ]


def seqtransfer_epochs(output: Path) -> list[float]:
    history = json.loads((output / "metrics.json").read_text())["history"]
    return [record["train_seconds"] for record in history]


def flair_command(arguments: argparse.Namespace, flair_input: Path, output: Path) -> list[str]:
    return [
        str(arguments.flair_python),
        str(BENCHMARKS / "flair_runner.py"),
        "--input",
        str(flair_input),
        "--epochs",
        str(arguments.epochs),
        "--threads",
        str(arguments.threads),
        "--batch-sizes",
        "512",
        "--predictions",
        str(output / "predictions.json"),
    ]


def start(command: list[str], log: Path) -> subprocess.Popen:
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(BENCHMARKS)}
    return subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, env=environment)


def run_situation(arguments: argparse.Namespace, tool: str, situation: str, flair_input: Path | None) -> dict:
    """Start the situation's runs together; the median epoch seconds of each."""
    count, busy = SITUATIONS[situation]
    folder = Path(arguments.work_dir) / tool / situation
    folder.mkdir(parents=True, exist_ok=True)
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        processes, outputs = [], []
        for number in range(count):
            output = folder / f"run{number + 1}"
            if tool == "flair":
                output.mkdir(exist_ok=True)
                command = flair_command(arguments, flair_input, output)
            else:
                command = seqtransfer_command(arguments, tool == "after", output)
            processes.append(start(command, folder / f"run{number + 1}.log"))
            outputs.append(output)
        for process, output in zip(processes, outputs):
            if process.wait() != 0:
                raise SystemExit(f"{tool} / {situation}: a run failed, see {output}.log")
    finally:
        if loop:
            loop.kill()
    if tool == "flair":
        epochs = [json.loads((output.parent / f"{output.name}.log").read_text().strip().splitlines()[-1])["epoch_seconds"] for output in outputs]
    else:
        epochs = [seqtransfer_epochs(output) for output in outputs]
    return {"tool": tool, "situation": situation, "runs": count, "busy_loop": busy, "epoch_seconds": epochs, "median_epoch_seconds": [round(statistics.median(seconds), 2) for seconds in epochs]}


def training_tokens(arguments: argparse.Namespace, folder: Path) -> int:
    """Tokens of the training subset (written with flair's input)."""
    data = json.loads((folder / "data.json").read_text())
    return sum(len(tokens) for tokens in data["splits"]["train"]["tokens"])


def print_rows(rows: list[dict], tokens: int) -> None:
    solo = {row["tool"]: statistics.mean(row["median_epoch_seconds"]) for row in rows if row["situation"] == "solo"}
    print(f"{'tool':12} {'situation':10} {'epoch s per run':>22} {'x alone':>8} {'x fair share':>13} {'total tok/s':>12}")
    for row in rows:
        seconds = row["median_epoch_seconds"]
        alone = solo.get(row["tool"])
        fair_share = row["runs"] + (1 if row["busy_loop"] else 0)  # each of the programs fairly gets that share of the machine
        slowdown = statistics.mean(seconds) / alone if alone else float("nan")
        throughput = sum(tokens / value for value in seconds)
        row.update(slowdown=round(slowdown, 2), slowdown_over_fair_share=round(slowdown / fair_share, 2), total_tokens_per_second=round(throughput))
        print(f"{row['tool']:12} {row['situation']:10} {' '.join(f'{value:.1f}' for value in seconds):>22} {slowdown:8.2f} {slowdown / fair_share:13.2f} {throughput:12.0f}")


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", nargs="+", default=["after", "before", "flair"], choices=["after", "before", "flair"])
    parser.add_argument("--situations", nargs="+", default=list(SITUATIONS), choices=list(SITUATIONS))
    parser.add_argument("--dataset", default="wnut17")
    parser.add_argument("--max-train-sentences", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", default=os.environ.get("SEQTRANSFER_DATA") or str(DEFAULT_DATA))
    parser.add_argument("--flair-venv", default=str(BENCHMARKS / ".flair-venv"))
    parser.add_argument("--work-dir", default=None, help="keep every run's folder and log here (default: a temporary folder)")
    parser.add_argument("--json", default=None, help="write every measurement to this JSON file")
    arguments = parser.parse_args(argv)
    arguments.work_dir = arguments.work_dir or tempfile.mkdtemp(prefix="contention-")
    # What export_for_flair reads: the flair input is the same subset, IOB2 tags and vectors.
    arguments.max_evaluation_sentences, arguments.embeddings, arguments.train_batch_size = None, None, None
    flair_input = Path(arguments.work_dir) / "flair-input"
    flair_input.mkdir(parents=True, exist_ok=True)
    export_for_flair(arguments, arguments.dataset, flair_input)
    if "flair" in arguments.tools:
        arguments.flair_python = ensure_flair_venv(Path(arguments.flair_venv))
    rows = []
    for tool in arguments.tools:
        for situation in arguments.situations:
            started = time.perf_counter()
            rows.append(run_situation(arguments, tool, situation, flair_input))
            print(f"{tool} / {situation}: {rows[-1]['median_epoch_seconds']} s per epoch ({time.perf_counter() - started:.0f} s)", flush=True)
    print()
    print_rows(rows, training_tokens(arguments, flair_input))
    if arguments.json:
        Path(arguments.json).write_text(json.dumps({"arguments": {key: str(value) for key, value in vars(arguments).items()}, "rows": rows}, indent=1))
    return rows


if __name__ == "__main__":
    main()
