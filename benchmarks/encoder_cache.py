"""Frozen encoder features: an epoch on cached features against one that recomputes them.

    SEQTRANSFER_DATA=../shared/datasets python benchmarks/encoder_cache.py --dataset wnut17 --encoder minilm

Times, in one process: (1) computing the encoder's token vectors of every layer for the training
set (what an epoch without the cache must do), (2) reading them back from the disk cache, (3)
one training epoch of the BiLSTM tagger on the cached features. Prints the ratio
(compute + epoch) / (read + epoch): how much faster an epoch is with the cache (target >= 5).
Run nothing else meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from seqtransfer.config import RunConfig, apply_overrides
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.embeddings import transformer
from seqtransfer.models.registry import build_model
from seqtransfer.training.loop import ShuffledBatches, train_epoch
from seqtransfer.training.optimizers import fill_optimizer, make_optimizer
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="wnut17")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", help="also write the result as JSON here")
    arguments = parser.parse_args()
    os.environ["SEQTRANSFER_CACHE"] = tempfile.mkdtemp(prefix="encoder-cache-")  # an empty cache: the first encode computes
    config = apply_overrides(RunConfig(), [f"data.dataset={arguments.dataset}", f"model.encoder={arguments.encoder}", f"train.threads={arguments.threads}"])
    seed_everything(config.train.seed, config.train.threads)
    data = load_task_data(config.data)
    fill_optimizer(config.train, data.kind.optimizer)
    vocabularies, matrix = prepare_vocabularies(config, data, lambda message: None)
    tokens = data.tokens("train")
    started = time.perf_counter()
    transformer.cached_features(arguments.encoder, tokens, config.model.encoder_pooling)
    compute = time.perf_counter() - started
    started = time.perf_counter()
    train = data.encode("train", vocabularies)  # reads the cache
    read = time.perf_counter() - started
    model = build_model(config.model, vocabularies)
    model.word_representation.load_vectors(matrix)
    optimizer = make_optimizer([{"params": [parameter for parameter in model.parameters() if parameter.requires_grad]}], config.train)
    started = time.perf_counter()
    train_epoch(model, optimizer, ShuffledBatches(train, config.train.batch_size, config.train.seed), config.train, 1, show_progress=False)
    epoch = time.perf_counter() - started
    ratio = (compute + epoch) / (read + epoch)
    result = {
        "dataset": arguments.dataset,
        "encoder": arguments.encoder,
        "threads": arguments.threads,
        "train_sentences": len(tokens),
        "compute_seconds": round(compute, 2),
        "read_seconds": round(read, 2),
        "epoch_seconds": round(epoch, 2),
        "speedup": round(ratio, 2),
    }
    print(json.dumps(result, indent=2))
    if arguments.output:
        with open(arguments.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
