"""Resident memory of the process while the reference tagger trains (not part of the tests).

    SEQTRANSFER_DATA=../shared/datasets python benchmarks/memory.py --dataset wnut17 --epochs 2
    ONEDNN_PRIMITIVE_CACHE_CAPACITY=64 SEQTRANSFER_DATA=../shared/datasets python benchmarks/memory.py --dataset wnut17

Prints the resident set size (VmRSS) after loading data and vectors, then after every epoch
with the epoch's seconds. oneDNN caches one LSTM primitive per input shape (1,024 by default);
the variable above bounds that cache, which is where most of the growth during training goes.
"""

from __future__ import annotations

import argparse
import time

from seqtransfer.config import RunConfig
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import encode_sentences
from seqtransfer.models.tagger import Tagger
from seqtransfer.training.loop import ShuffledBatches, train_epoch
from seqtransfer.training.optimizers import make_optimizer
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies


def resident_megabytes() -> int:
    """Current VmRSS of this process in MB (Linux)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    return -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="wnut17")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    arguments = parser.parse_args()
    config = RunConfig()
    config.data.dataset, config.model.classifier, config.train.threads = arguments.dataset, "crf", arguments.threads
    seed_everything(config.train.seed, arguments.threads)
    data = load_task_data(config.data, splits=("train", "dev"))
    vocabularies, matrix = prepare_vocabularies(config, data, log=lambda message: None)
    model = Tagger(config.model, len(vocabularies.words), len(vocabularies.characters), len(vocabularies.labels))
    model.load_word_vectors(matrix)
    train = encode_sentences(data.tokens("train"), vocabularies, data.labels("train"))
    optimizer = make_optimizer([{"params": list(model.parameters())}], config.train)
    print(f"{arguments.dataset}: after setup {resident_megabytes()} MB")
    for epoch in range(1, arguments.epochs + 1):
        started = time.perf_counter()
        train_epoch(model, optimizer, ShuffledBatches(train, config.train.batch_size, config.train.seed), config.train, epoch, show_progress=False)
        print(f"epoch {epoch}: {time.perf_counter() - started:.2f} s, {resident_megabytes()} MB")


if __name__ == "__main__":
    main()
