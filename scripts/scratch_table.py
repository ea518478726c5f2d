"""Reproduce the From-scratch200 row of the PretRand paper's Table 4 (+ CoNLL-2003 with a CRF).

    SEQTRANSFER_DATA=../shared/datasets .venv/bin/python scripts/scratch_table.py --seeds 1 2 3 --jobs 2

Trains every (dataset, seed) run that is not finished yet under --runs (a finished run has a
metrics.json, so the script resumes after an interruption), two at a time with one thread
each, then prints a Markdown table of test scores (mean ± std over seeds) next to the paper's.
The grid runner of the experiments issue will supersede this script.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# (dataset, classifier, paper test score, reference)
ROWS = [
    ("tpos", "softmax", 86.82, "PretRand paper Table 4, From-scratch200 (acc.)"),
    ("ark", "softmax", 91.10, "PretRand paper Table 4, From-scratch200 (acc.)"),
    ("tweebank", "softmax", 91.66, "PretRand paper Table 4, From-scratch200 (acc.)"),
    ("tchunk", "softmax", 85.96, "PretRand paper Table 4, From-scratch200 (acc.)"),
    ("wnut17", "softmax", 36.75, "PretRand paper Table 4, From-scratch200 (entity F1)"),
    ("conll2003", "crf", 91.20, "NCRF++ CharLSTM+WordLSTM+CRF, GloVe 100d (entity F1)"),
]


def train(runs: Path, dataset: str, classifier: str, seed: int) -> Path:
    output = runs / f"{dataset}-{classifier}-seed{seed}"
    if not (output / "metrics.json").is_file():
        command = [sys.executable, "-m", "seqtransfer.cli", "train", "--dataset", dataset, "--classifier", classifier,
                   "--seed", str(seed), "--output", str(output), "--quiet", "train.threads=1"]
        started = time.perf_counter()
        with open(runs / f"{output.name}.out", "w", encoding="utf-8") as log:
            subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT)
        print(f"{output.name}: {time.perf_counter() - started:.0f} s", flush=True)
    return output


def main_score(metrics: dict) -> float:
    return metrics["test"]["f1" if metrics["metric"] == "span_f1" else "accuracy"]


def table(runs: Path, seeds: list[int]) -> str:
    lines = ["| dataset | output | metric | ours (mean ± std) | seeds | paper / reference | Δ | minutes per run |", "|---|---|---|---|---|---|---|---|"]
    for dataset, classifier, paper, _ in ROWS:
        found = [runs / f"{dataset}-{classifier}-seed{seed}" / "metrics.json" for seed in seeds]
        metrics = [json.loads(path.read_text()) for path in found if path.is_file()]
        if not metrics:
            continue
        scores = [main_score(item) for item in metrics]
        mean = statistics.mean(scores)
        spread = statistics.stdev(scores) if len(scores) > 1 else 0.0
        minutes = statistics.mean(item["seconds"] for item in metrics) / 60
        metric = "F1" if metrics[0]["metric"] == "span_f1" else "acc."
        lines.append(f"| {dataset} | {classifier} | {metric} | {mean:.2f} ± {spread:.2f} | {len(scores)} | {paper:.2f} | {mean - paper:+.2f} | {minutes:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default="runs/scratch", help="folder of the run directories")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--datasets", nargs="+", default=[row[0] for row in ROWS])
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (one thread each)")
    parser.add_argument("--table-only", action="store_true", help="only print the table of finished runs")
    arguments = parser.parse_args()
    runs = Path(arguments.runs)
    runs.mkdir(parents=True, exist_ok=True)
    if not arguments.table_only:
        grid = [(dataset, classifier, seed) for dataset, classifier, _, _ in ROWS if dataset in arguments.datasets for seed in arguments.seeds]
        with ThreadPoolExecutor(arguments.jobs) as pool:
            list(pool.map(lambda item: train(runs, *item), grid))
    print(table(runs, arguments.seeds))


if __name__ == "__main__":
    main()
