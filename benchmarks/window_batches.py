"""A Transformer encoder's frozen features: windows in padded batches against one forward call per window.

    SEQTRANSFER_DATA=../shared/datasets python benchmarks/window_batches.py --dataset sst2 --encoder minilm --sentences 2000

Times `encode_sentences_with` (what the feature cache and the probes of a fine-tuned encoder
call) on the first N training sentences, with windows batched (`window_batches.py`) and with one
window per call (`BATCH_WINDOWS = 1`: the code before), alternating, and prints sentences per
second, the ratio, and the largest difference between the two sets of float16 vectors. Run
nothing else meanwhile.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from seqtransfer.config import RunConfig, apply_overrides
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.embeddings import window_batches
from seqtransfer.embeddings.transformer import encode_sentences_with, load_encoder


def timed(tokenizer, model, sentences, windows_per_call: int) -> tuple[float, list[np.ndarray]]:
    window_batches.BATCH_WINDOWS = windows_per_call
    start = time.perf_counter()
    vectors = encode_sentences_with(tokenizer, model, sentences, "first")
    return time.perf_counter() - start, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="sst2")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", help="also write the result as JSON here")
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    config = apply_overrides(RunConfig(), [f"data.dataset={arguments.dataset}"])
    sentences = load_task_data(config.data).tokens("train")[: arguments.sentences]
    tokenizer, model = load_encoder(arguments.encoder)
    batched_windows = window_batches.BATCH_WINDOWS
    times: dict[str, list[float]] = {"batched": [], "one window per call": []}
    for _ in range(arguments.repeats):  # alternating, so that a drift in the machine's speed hits both
        seconds, batched = timed(tokenizer, model, sentences, batched_windows)
        times["batched"].append(seconds)
        seconds, alone = timed(tokenizer, model, sentences, 1)
        times["one window per call"].append(seconds)
    difference = max(float(np.abs(first.astype(np.float32) - second.astype(np.float32)).max()) for first, second in zip(batched, alone))
    result = {
        "dataset": arguments.dataset,
        "encoder": arguments.encoder,
        "sentences": len(sentences),
        "threads": arguments.threads,
        "sentences_per_second": {name: round(len(sentences) / min(values), 1) for name, values in times.items()},
        "speed_up": round(min(times["one window per call"]) / min(times["batched"]), 2),
        "largest_difference": difference,
    }
    print(json.dumps(result, indent=2))
    if arguments.output:
        with open(arguments.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
