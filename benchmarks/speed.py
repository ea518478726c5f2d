"""Training and inference speed of the base tagger on real data (not part of the test suite).

    SEQTRANSFER_DATA=../shared/datasets python benchmarks/speed.py --datasets wnut17 conll2003

Prints, per dataset: median training epoch seconds and training tokens/s over --epochs epochs
(dev evaluation excluded), inference tokens/s on the test set for several batch sizes, the
dev score after those epochs, and the peak resident memory of the process. The model is the
reference architecture of the issues: lower-cased GloVe 50d fine-tuned, char BiLSTM 50/100,
word BiLSTM 200, CRF, SGD with momentum, batches of 16 sentences.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from seqtransfer_runner import peak_rss_megabytes, time_inference  # benchmarks/ is on sys.path when run as a script

from seqtransfer.config import RunConfig
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import encode_sentences
from seqtransfer.data.metrics import evaluate
from seqtransfer.device import peak_memory_megabytes, resolve_device
from seqtransfer.models.tagger import Tagger
from seqtransfer.training.inference import predict_labels
from seqtransfer.training.loop import ShuffledBatches, train_epoch
from seqtransfer.training.optimizers import make_optimizer
from seqtransfer.training.placement import place_for_training
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies


def benchmark(dataset: str, epochs: int, classifier: str, threads: int, device: str = "cpu", batch_size: int = 16) -> dict:
    config = RunConfig()
    config.data.dataset, config.model.classifier, config.train.threads = dataset, classifier, threads
    config.train.batch_size = batch_size
    seed_everything(config.train.seed, threads)
    data = load_task_data(config.data)
    vocabularies, matrix = prepare_vocabularies(config, data, log=lambda message: None)
    model = Tagger(config.model, len(vocabularies.words), len(vocabularies.characters), len(vocabularies.labels))
    model.load_word_vectors(matrix)
    target = resolve_device(device)
    place_for_training(model, target)  # as `seqtransfer train` does
    train = encode_sentences(data.tokens("train"), vocabularies, data.labels("train"))
    optimizer = make_optimizer([{"params": list(model.parameters())}], config.train)
    epoch_seconds = []
    for epoch in range(1, epochs + 1):
        started = time.perf_counter()
        train_epoch(model, optimizer, ShuffledBatches(train, config.train.batch_size, config.train.seed), config.train, epoch, show_progress=False)
        if target.type == "cuda":
            torch.cuda.synchronize(target)
        epoch_seconds.append(time.perf_counter() - started)
    dev = encode_sentences(data.tokens("dev"), vocabularies)
    dev_scores = evaluate(data.labels("dev"), predict_labels(model, dev, vocabularies.labels, 512), data.metric)
    test = encode_sentences(data.tokens("test"), vocabularies)
    tokens = int(test.lengths.sum())
    inference = {size: tokens / seconds for size, seconds in time_inference(model, test, vocabularies.labels, [32, 128, 512, 2048]).items()}
    median = statistics.median(epoch_seconds)
    return {
        "dataset": dataset,
        "train_tokens": int(train.lengths.sum()),
        "epoch_seconds": median,
        "train_tokens_per_second": int(train.lengths.sum()) / median,
        "inference_tokens_per_second": max(inference.values()),
        "best_inference_batch": max(inference, key=inference.get),
        "dev_score": dev_scores["f1" if data.metric == "span_f1" else "accuracy"],
        "peak_rss_mb": peak_rss_megabytes(),
        "gpu_peak_mb": peak_memory_megabytes(target),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["wnut17", "conll2003"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--classifier", default="crf", choices=["crf", "softmax"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N, auto (GPU timings: run on a machine with one)")
    parser.add_argument("--batch-size", type=int, default=16, help="training batch size in sentences (the paper's 16; try 64+ on a GPU)")
    arguments = parser.parse_args()
    print(f"torch {torch.__version__}, device {arguments.device}, {arguments.threads} threads, classifier {arguments.classifier}, {arguments.epochs} epochs, batches of {arguments.batch_size}")
    header = f"{'dataset':10} {'tokens':>8} {'epoch s':>8} {'train tok/s':>12} {'infer tok/s':>12} {'batch':>6} {'dev':>6} {'peak MB':>8}"
    print(header)
    for dataset in arguments.datasets:
        row = benchmark(dataset, arguments.epochs, arguments.classifier, arguments.threads, arguments.device, arguments.batch_size)
        print(
            f"{row['dataset']:10} {row['train_tokens']:8d} {row['epoch_seconds']:8.2f} {row['train_tokens_per_second']:12,.0f} "
            f"{row['inference_tokens_per_second']:12,.0f} {row['best_inference_batch']:6d} {row['dev_score']:6.2f} {row['peak_rss_mb']:8.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
