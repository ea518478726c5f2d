"""flair 0.15.1 trained to convergence on WNUT-17 with our tagger's architecture: is the gap to the paper ours or the resources'?

    SEQTRANSFER_DATA=../shared/datasets nice -n 10 python benchmarks/flair_converged.py --seeds 1 2 3 \
        --output benchmarks/results/flair_converged_wnut17.jsonl

The gaps issue (point 1): our From-scratch BiLSTM-CRF on WNUT-17 (GloVe 6B 50d, character BiLSTM,
one BiLSTM of 200, CRF: ``docs/results/wnut17_gap.md``'s "CRF output" row) scores well under the
PretRand paper's From-scratch. This trains flair's ``SequenceTagger`` of the same architecture, on
the same words, initial vectors and settings (``flair_runner.py``: SGD 0.015 with momentum 0.9 and
decay 0.05, batches of 16, dropout 0.5), stopped as our runs stop: dev entity F1 after each epoch,
at most ``--max-epochs`` (our 100), stop after ``--patience`` epochs without a better one (our 10),
the best epoch's weights kept. Each seed's test F1 (our scorer, on flair's raw Viterbi tags) is
appended to ``--output`` as it ends; a seed already there is not trained again. If flair lands near
our score, the gap is the resources (word vectors, data), not our code.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from compare_flair import BENCHMARKS, DEFAULT_DATA, FLAIR_VERSION, export_for_flair, flair_python_for, run_json, summarize

RESULTS = BENCHMARKS / "results"


def train_seed(arguments: argparse.Namespace, seed: int, flair_python: Path) -> dict:
    """One seed: flair's input written as compare_flair writes it, flair trained to convergence, scored here."""
    options = argparse.Namespace(**{**vars(arguments), "seed": seed, "train_batch_size": None, "embeddings": None})
    with tempfile.TemporaryDirectory(prefix="flair-converged-") as folder:
        data = export_for_flair(options, arguments.dataset, Path(folder))
        predictions = Path(folder) / "predictions.json"
        command = [str(flair_python), str(BENCHMARKS / "flair_runner.py"), "--input", folder, "--epochs", str(arguments.max_epochs), "--threads", str(arguments.threads)]
        command += ["--dev-patience", str(arguments.patience), "--batch-sizes", "128", "--predictions", str(predictions)]
        row = summarize(run_json(command, arguments.threads), data, predictions)
    keep = ("flair", "torch", "threads", "train_sentences", "epochs", "best_epoch", "dev_f1_by_epoch", "epoch_seconds_median", "dev_f1", "test_f1", "peak_rss_mb")
    return {"dataset": arguments.dataset, "seed": seed, "max_epochs": arguments.max_epochs, "patience": arguments.patience, **{key: row.get(key) for key in keep}}


def done_seeds(path: Path) -> dict[int, dict]:
    """The seeds ``path`` already holds (a run stopped between seeds goes on from there)."""
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["seed"]: row for row in rows}


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="wnut17")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--max-epochs", type=int, default=100, help="at most this many epochs (seqtransfer's train.max_epochs)")
    parser.add_argument("--patience", type=int, default=10, help="stop after this many epochs without a better dev F1 (seqtransfer's train.patience)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-train-sentences", type=int, default=None, help="the first N training sentences (a check of the set-up, not a measurement)")
    parser.add_argument("--max-evaluation-sentences", type=int, default=None)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--flair-venv", default=str(BENCHMARKS / ".flair-venv"))
    parser.add_argument("--no-install", action="store_true", help="use --flair-venv as it is")
    parser.add_argument("--output", default=str(RESULTS / "flair_converged_wnut17.jsonl"), help="JSON lines, one per seed, appended as each ends")
    arguments = parser.parse_args(argv)
    arguments.data_dir = arguments.data_dir or str(DEFAULT_DATA)
    return arguments


def main(argv: list[str] | None = None) -> list[dict]:
    arguments = parse_arguments(argv)
    output = Path(arguments.output)
    rows = done_seeds(output)
    flair_python = flair_python_for(arguments)
    for seed in arguments.seeds:
        if seed in rows:
            print(f"seed {seed}: kept ({output})", file=sys.stderr)
            continue
        rows[seed] = train_seed(arguments, seed, flair_python)
        with output.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(rows[seed]) + "\n")
        print(f"seed {seed}: flair {FLAIR_VERSION} test F1 {rows[seed]['test_f1']:.2f} (dev {rows[seed]['dev_f1']:.2f}, best epoch {rows[seed]['best_epoch']} of {rows[seed]['epochs']})", flush=True)
    scores = [rows[seed]["test_f1"] for seed in arguments.seeds]
    spread = f" ± {statistics.stdev(scores):.2f}" if len(scores) > 1 else ""
    print(f"flair {FLAIR_VERSION}, {arguments.dataset}, trained to convergence: test F1 {statistics.fmean(scores):.2f}{spread} over seeds {arguments.seeds}")
    return [rows[seed] for seed in arguments.seeds]


if __name__ == "__main__":
    main()
