"""Does training cost grow linearly with data? CoNLL-2003 and WNUT-17 tokens/s, epochs alternating.

    SEQTRANSFER_DATA=../shared/datasets python benchmarks/linear_cost.py [--epochs 5]

Builds the reference tagger (CRF) for both datasets in one process and trains them in turn, one
epoch of each: WNUT-17 epoch 1, CoNLL-2003 epoch 1, WNUT-17 epoch 2, ... Run one after the other
(as ``speed.py`` does), the two datasets' timings fall in different phases of this machine's
speed drift (20-30% over tens of seconds), which decides the ratio more than the code does.
Alternating epochs puts each pair in nearly the same conditions. Prints training tokens/s of
every pair, their ratio, and the median ratio (1.0 = cost exactly linear in tokens).
"""

from __future__ import annotations

import argparse
import statistics
import time

from seqtransfer_runner import benchmark_config  # benchmarks/ is on sys.path when run as a script

from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import encode_sentences
from seqtransfer.models.registry import build_model
from seqtransfer.training.loop import ShuffledBatches, train_epoch
from seqtransfer.training.optimizers import make_optimizer
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies

DATASETS = ("wnut17", "conll2003")


def prepare(dataset: str, threads: int):
    """(config, model, optimizer, encoded training sentences) of the reference tagger on ``dataset``."""
    config = benchmark_config(dataset, threads, max_train_sentences=None, data_dir=None)
    seed_everything(config.train.seed, threads)
    data = load_task_data(config.data, splits=("train",))
    vocabularies, matrix = prepare_vocabularies(config, data, log=lambda message: None)
    model = build_model(config.model, vocabularies)
    model.load_word_vectors(matrix)
    train = encode_sentences(data.tokens("train"), vocabularies, data.labels("train"))
    return config, model, make_optimizer([{"params": list(model.parameters())}], config.train), train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    arguments = parser.parse_args()
    runs = {dataset: prepare(dataset, arguments.threads) for dataset in DATASETS}
    print(f"{'epoch':>5} {'WNUT-17 tok/s':>14} {'CoNLL-2003 tok/s':>17} {'ratio':>6}")
    ratios = []
    for epoch in range(1, arguments.epochs + 1):
        speeds = []
        for dataset in DATASETS:
            config, model, optimizer, train = runs[dataset]
            started = time.perf_counter()
            train_epoch(model, optimizer, ShuffledBatches(train, config.train.batch_size, config.train.seed), config.train, epoch, show_progress=False)
            speeds.append(int(train.lengths.sum()) / (time.perf_counter() - started))
        ratios.append(speeds[1] / speeds[0])
        print(f"{epoch:5d} {speeds[0]:14,.0f} {speeds[1]:17,.0f} {ratios[-1]:6.2f}", flush=True)
    print(f"median CoNLL-2003 / WNUT-17 tokens/s: {statistics.median(ratios):.2f} (range {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
