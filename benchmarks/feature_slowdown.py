"""What frozen contextual features cost the BiLSTM tagger: training and inference, with and without them.

    SEQTRANSFER_DATA=../shared/datasets python benchmarks/feature_slowdown.py --dataset wnut17 \
        --encoders results/lms/tweet-bilstm-small minilm --output benchmarks/results/feature_slowdown.json

The PretRand paper (its Table 6 discussion) finds that ELMo's features make training about 10x
slower. For setting C (words + characters, no features) and, per ``--encoders``, setting G
(words + characters + the encoder's scalar mix of frozen layers), in one process on an empty
feature cache, this times:

- ``features_seconds``: computing the encoder's token vectors of every layer for the training set
  (what every epoch would pay without the cache, and what the first epoch pays with it);
- ``epoch_seconds``: one training epoch on the (cached) features: the BiLSTM-CRF, the scalar mix and
  the vectors read from memory (the median of ``--epochs`` epochs);
- ``inference_seconds``: labelling the test set from raw tokens: its features computed (new
  sentences are not in the cache) and the model's forward pass and decoding.

The slowdowns are against C: an epoch with the cache, an epoch without it (features + epoch), and
inference. Run nothing else meanwhile (a contended run measures the contention).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from seqtransfer.config import RunConfig, apply_overrides
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.models.registry import build_model
from seqtransfer.training.inference import predict_labels
from seqtransfer.training.loop import ShuffledBatches, train_epoch
from seqtransfer.training.optimizers import fill_optimizer, make_optimizer
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies


def timed(function):
    """(the function's result, its wall-clock seconds)."""
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def measure(dataset: str, encoder: str | None, threads: int, epochs: int, max_train_sentences: int | None = None) -> dict:
    """The three times of one setting (C when ``encoder`` is None, else G with that encoder)."""
    overrides = [f"data.dataset={dataset}", f"train.threads={threads}", *([f"model.encoder={encoder}"] if encoder else [])]
    overrides += [f"data.max_train_sentences={max_train_sentences}"] if max_train_sentences else []
    config = apply_overrides(RunConfig(), overrides)
    seed_everything(config.train.seed, config.train.threads)
    data = load_task_data(config.data)
    fill_optimizer(config.train, data.kind.optimizer)
    vocabularies, matrix = prepare_vocabularies(config, data, lambda message: None)
    train, features = timed(lambda: data.encode("train", vocabularies))  # computes the features once (an empty cache)
    model = build_model(config.model, vocabularies)
    model.word_representation.load_vectors(matrix)
    optimizer = make_optimizer([{"params": [parameter for parameter in model.parameters() if parameter.requires_grad]}], config.train)
    batches = ShuffledBatches(train, config.train.batch_size, config.train.seed)
    epoch_times = [timed(lambda epoch=epoch: train_epoch(model, optimizer, batches, config.train, epoch, show_progress=False))[1] for epoch in range(1, epochs + 1)]

    def label_test():
        test = data.encode("test", vocabularies)  # new sentences: their features are computed
        return predict_labels(model, test, vocabularies.labels, config.train.evaluation_batch_size)

    _, inference = timed(label_test)
    return {
        "setting": "G" if encoder else "C",
        "encoder": encoder,
        "parameters": sum(parameter.numel() for parameter in model.parameters()),
        "features_seconds": round(features, 2),
        "epoch_seconds": round(statistics.median(epoch_times), 2),
        "inference_seconds": round(inference, 2),
        "train_sentences": len(data.tokens("train")),
        "test_sentences": len(data.tokens("test")),
    }


def slowdowns(base: dict, row: dict) -> dict:
    """Ratios of ``row`` to C: an epoch with the cache, an epoch without it, and inference."""
    return {
        "epoch_with_cache": round(row["epoch_seconds"] / base["epoch_seconds"], 2),
        "epoch_without_cache": round((row["features_seconds"] + row["epoch_seconds"]) / base["epoch_seconds"], 2),
        "inference": round(row["inference_seconds"] / base["inference_seconds"], 2),
    }


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="wnut17")
    parser.add_argument("--encoders", nargs="+", default=["results/lms/tweet-bilstm-small"], help="encoder folders (our LMs) or minilm: one G setting each")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2, help="training epochs timed per setting (the median is reported)")
    parser.add_argument("--max-train-sentences", type=int, help="the first N training sentences only (a check of the set-up, not a measurement)")
    parser.add_argument("--output", help="also write the result as JSON here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    arguments = parse_arguments(argv)
    os.environ["SEQTRANSFER_CACHE"] = tempfile.mkdtemp(prefix="feature-slowdown-")  # an empty cache: the features are computed here
    base = measure(arguments.dataset, None, arguments.threads, arguments.epochs, arguments.max_train_sentences)
    rows = [base]
    for encoder in arguments.encoders:
        row = measure(arguments.dataset, encoder, arguments.threads, arguments.epochs, arguments.max_train_sentences)
        rows.append({**row, "slowdown_against_C": slowdowns(base, row)})
    result = {"dataset": arguments.dataset, "threads": arguments.threads, "epochs_timed": arguments.epochs, "max_train_sentences": arguments.max_train_sentences, "rows": rows}
    for row in rows:
        ratios = row.get("slowdown_against_C")
        text = f", slowdown: epoch {ratios['epoch_with_cache']}x with the cache, {ratios['epoch_without_cache']}x without, inference {ratios['inference']}x" if ratios else ""
        print(f"{row['setting']} {row['encoder'] or '(no features)'}: features {row['features_seconds']} s, epoch {row['epoch_seconds']} s, test labelled in {row['inference_seconds']} s{text}")
    if arguments.output:
        Path(arguments.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
