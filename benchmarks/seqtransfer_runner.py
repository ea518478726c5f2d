"""The seqtransfer side of ``compare_flair.py``: train, time and predict in a process of its own.

    python benchmarks/seqtransfer_runner.py --dataset wnut17 --epochs 3 --predictions PATH
    python benchmarks/seqtransfer_runner.py --dataset wnut17 --epochs 3 --encoder FOLDER --predictions PATH

Builds the base tagger with library functions (as ``speed.py`` does) with the CRF output, or,
with ``--encoder`` (for ``compare_flair_encoder.py``), the fine-tuned encoder tagger with a
softmax output on each token's first sub-word, trained as ``train_tagger`` trains it (AdamW,
linear warm-up then decay over the ``--epochs`` epochs). Trains ``--epochs`` epochs with the
learning-rate schedule of ``fit`` and no dev evaluation in between, times decoding of the test
set at several batch sizes, writes dev and test predictions (IOB2 tags) to ``--predictions``
and prints one JSON line of measurements.
Labels are converted to IOB2 first (CoNLL-2003 files are IOB1) so that seqtransfer and flair
learn exactly the same tags. ``compare_flair.py`` imports :func:`load_benchmark_data` so that
the data it hands to flair is the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import resource
import sys
import time
from pathlib import Path

import torch
from budget import Budget, deadline_of, sizes_that_fit

from seqtransfer.config import RunConfig
from seqtransfer.corpora.task_data import TaskData, load_task_data
from seqtransfer.data.batching import encode_sentences
from seqtransfer.data.corpus import Sentence
from seqtransfer.data.schemes import convert
from seqtransfer.device import peak_memory_megabytes, resolve_device
from seqtransfer.models.registry import build_model
from seqtransfer.models.tagger import Tagger, count_parameters
from seqtransfer.tasks import TAGGING
from seqtransfer.training.inference import predict_labels
from seqtransfer.training.loop import ShuffledBatches, train_epoch
from seqtransfer.training.optimizers import fill_optimizer, make_optimizer
from seqtransfer.training.placement import place_for_training
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies
from seqtransfer.workflows.resolution import fill_fine_tuning

INFERENCE_BATCH_SIZES = [32, 128, 512, 2048]


def benchmark_config(
    dataset: str,
    threads: int,
    max_train_sentences: int | None,
    data_dir: str | None,
    seed: int = 1,
    encoder: str | None = None,
    epochs: int | None = None,
    amp: str = "off",
    embeddings: str | None = None,
    batch_size: int | None = None,
) -> RunConfig:
    """The reference configuration with a CRF output, or with ``encoder`` the fine-tuned encoder's
    (``fine_tuned_encoder``); the flair side copies these numbers. ``embeddings``: another vector file
    than GloVe 6B 50d's package (the GPU bundle's rows of it); ``batch_size``: training sentences per batch."""
    config = RunConfig()
    config.train.seed = seed
    config.data.dataset, config.data.data_dir = dataset, data_dir
    config.data.max_train_sentences = max_train_sentences
    config.train.threads = threads
    if encoder:
        fine_tuned_encoder(config, encoder, epochs or config.train.max_epochs)
        config.train.amp = amp  # training only: prediction stays fp32, as in train_tagger
    else:
        config.model.classifier = "crf"
        fill_optimizer(config.train, "sgd")
        config.model.embeddings = embeddings or config.model.embeddings
    config.train.batch_size = batch_size or config.train.batch_size
    return config


def fine_tuned_encoder(config: RunConfig, encoder: str, epochs: int) -> None:
    """What ``train_tagger`` sets for ``model.encoder_mode=finetune`` (AdamW at its default rate,
    linear warm-up then decay), with a softmax on each token's first sub-word. The schedule runs
    over the ``epochs`` the benchmark trains (``train.max_epochs``), so it reaches 0 at its last step."""
    model = config.model
    model.encoder, model.encoder_mode, model.encoder_pooling, model.classifier = encoder, "finetune", "first", "softmax"
    model.embeddings = None  # the encoder tagger has no word table: no GloVe to read
    fill_fine_tuning(config, TAGGING)
    config.train.max_epochs = epochs


def load_benchmark_data(config: RunConfig, max_evaluation_sentences: int | None = None) -> TaskData:
    """The task data with labels in IOB2 (CoNLL-2003 is IOB1), dev and test optionally cut for quick checks."""
    data = load_task_data(config.data)
    splits = {split: sentences[:max_evaluation_sentences] if split != "train" else sentences for split, sentences in data.splits.items()}
    if data.scheme in ("iob1", "bioes"):
        splits = {split: [to_iob2(sentence, data.column, data.scheme) for sentence in sentences] for split, sentences in splits.items()}
    return dataclasses.replace(data, scheme="iob2" if data.scheme in ("iob1", "bioes") else data.scheme, splits=splits)


def to_iob2(sentence: Sentence, column: str, scheme: str) -> Sentence:
    return dataclasses.replace(sentence, columns={**sentence.columns, column: convert(sentence.labels(column), scheme, "iob2")})


def peak_rss_megabytes() -> float:
    """Peak resident memory of this process since it started."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_rss() -> bool:
    """Reset the kernel's high-water mark (VmHWM) so that later peaks exclude the setup (Linux only)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_since_reset() -> float | None:
    """VmHWM in MB (the peak since :func:`reset_peak_rss`), or None where /proc is unavailable."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def synchronize(model) -> None:
    """Wait for a GPU's queued work before reading the clock."""
    device = next(model.parameters()).device
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class BudgetedBatches:
    """A training set's batches, counted by a :class:`~budget.Budget`, which may end an epoch early."""

    def __init__(self, source: ShuffledBatches, budget: Budget) -> None:
        self.source, self.budget = source, budget
        self.sentence_count, self.batch_count, self.mean_batch_loss = source.sentence_count, source.batch_count, source.mean_batch_loss

    def batches(self, epoch: int):
        for batch in self.source.batches(epoch):
            if not self.budget.take(len(batch.lengths), int(batch.lengths.sum())):  # lengths: on the host, no synchronisation
                return
            yield batch


def train_timed(model: Tagger, train, config: RunConfig, epochs: int, deadline: float | None = None) -> Budget:
    """Train up to ``epochs`` epochs (train_epoch applies the learning-rate schedule, as in ``fit``),
    timing each; with a ``deadline``, fewer (at least one, or a part of one) when the time is spent
    (``budget.Budget``). Returns the budget, which holds each epoch's seconds, sentences and tokens."""
    optimizer = make_optimizer([{"params": list(model.parameters())}], config.train)
    budget = Budget("seqtransfer", deadline)
    batches = BudgetedBatches(ShuffledBatches(train, config.train.batch_size, config.train.seed, config.train.batching), budget)
    for epoch in range(1, epochs + 1):
        if not budget.another_epoch_fits():
            print(f"seqtransfer: time budget: stopping after {len(budget.epochs)} of {epochs} epochs", file=sys.stderr, flush=True)
            break
        budget.start_epoch()
        started = time.perf_counter()
        train_epoch(model, optimizer, batches, config.train, epoch, show_progress=False)
        synchronize(model)
        done = budget.end_epoch(time.perf_counter() - started)
        print(f"seqtransfer: epoch {epoch} trained in {done['seconds']:.2f} s", file=sys.stderr, flush=True)  # seen even if the run is cut off later
    return budget


def build_benchmark_model(config: RunConfig, vocabularies, matrix) -> torch.nn.Module:
    """The reference tagger with its initial word vectors, or the encoder tagger with the encoder's pretrained weights."""
    if config.model.encoder:
        model = build_model(config.model, vocabularies)
        model.load_pretrained()
        return model
    model = Tagger(config.model, len(vocabularies.words), len(vocabularies.characters), len(vocabularies.labels))
    model.load_word_vectors(matrix)
    return model


def time_inference(model: Tagger, encoded, labels, batch_sizes: list[int], amp: str = "off", deadline: float | None = None) -> dict[int, float]:
    """Seconds of decoding ``encoded`` at each batch size (best of 2 passes) in precision ``amp``; with a
    ``deadline``, the batch sizes after the first stop where their passes would not fit."""
    timings = {}
    for batch_size in sizes_that_fit("seqtransfer", batch_sizes, timings, deadline, passes=4):  # two timed passes, then dev and test
        best = float("inf")
        for _ in range(2):
            started = time.perf_counter()
            predict_labels(model, encoded, labels, batch_size, amp)
            best = min(best, time.perf_counter() - started)
        timings[batch_size] = best
    return timings


def run(arguments: argparse.Namespace) -> dict:
    """Train and time one dataset; write predictions; return the measurements."""
    deadline = deadline_of(arguments.time_budget, arguments.started_at)
    config = benchmark_config(
        arguments.dataset,
        arguments.threads,
        arguments.max_train_sentences,
        arguments.data_dir,
        arguments.seed,
        encoder=arguments.encoder,
        epochs=arguments.epochs,
        amp=arguments.amp,
        embeddings=arguments.embeddings,
        batch_size=arguments.train_batch_size,
    )
    config.train.batching = arguments.batching
    seed_everything(config.train.seed, config.train.threads)
    data = load_benchmark_data(config, arguments.max_evaluation_sentences)
    vocabularies, matrix = prepare_vocabularies(config, data, log=lambda message: None)
    model = build_benchmark_model(config, vocabularies, matrix)
    device = resolve_device(arguments.device)
    place_for_training(model, device)  # as `seqtransfer train` does: cuBLAS's workspace, dense embedding gradients off the CPU
    train = encode_sentences(data.tokens("train"), vocabularies, data.labels("train"))
    dev, test = (encode_sentences(data.tokens(split), vocabularies) for split in ("dev", "test"))
    del matrix
    gc.collect()
    peak_reset = reset_peak_rss()
    budget = train_timed(model, train, config, arguments.epochs, deadline)
    train_peak_rss = peak_rss_since_reset() if peak_reset else None
    inference = time_inference(model, test, vocabularies.labels, arguments.batch_sizes, arguments.predict_amp, deadline)
    best_batch = min(inference, key=inference.get)
    predictions = {split: predict_labels(model, encoded, vocabularies.labels, best_batch, arguments.predict_amp) for split, encoded in (("dev", dev), ("test", test))}
    Path(arguments.predictions).write_text(json.dumps(predictions), encoding="utf-8")
    return {
        "tool": "seqtransfer",
        "dataset": arguments.dataset,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "device": str(next(model.parameters()).device),
        "gpu_peak_mb": peak_memory_megabytes(device),
        **(encoder_details(model) if config.model.encoder else {}),
        "amp": config.train.amp,
        "predict_amp": arguments.predict_amp,
        "batching": config.train.batching,
        "train_batch_size": config.train.batch_size,
        "train_sentences": len(train.lengths),
        "train_tokens": int(train.lengths.sum()),
        "test_tokens": int(test.lengths.sum()),
        "words": len(vocabularies.words),
        "characters": len(vocabularies.characters),
        "labels": vocabularies.labels.items,
        "parameters": count_parameters(model),
        "epochs": len(budget.epochs),
        "epochs_asked": arguments.epochs,
        "time_budget": arguments.time_budget,
        **budget.fields(),
        "inference_seconds": {str(size): seconds for size, seconds in inference.items()},
        "peak_rss_mb": peak_rss_megabytes(),
        "train_peak_rss_mb": train_peak_rss,
    }


def encoder_details(model) -> dict:
    """Which transformers and attention kernel ran the encoder (the flair venv has another transformers)."""
    import transformers

    return {"transformers": transformers.__version__, "attention": model.encoder.config._attn_implementation}


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-train-sentences", type=int, default=None)
    parser.add_argument("--max-evaluation-sentences", type=int, default=None, help="keep the first N dev and test sentences")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=INFERENCE_BATCH_SIZES)
    parser.add_argument("--encoder", default=None, help="fine-tune this encoder (a Hugging Face folder or minilm) with a softmax head instead of the BiLSTM-CRF tagger")
    parser.add_argument("--amp", default="off", choices=["off", "bf16"], help="with --encoder: train.amp (bf16 autocast in training; the CPU needs bf16 instructions to gain)")
    parser.add_argument("--batching", default="tokens", choices=["tokens", "subwords", "random"], help="train.batching: what sentences share a training batch")
    parser.add_argument("--predict-amp", default="off", choices=["off", "bf16"], help="with --encoder: the precision of the timed and written predictions (seqtransfer predict --amp)")
    parser.add_argument("--embeddings", default=None, help="a word-vector text file instead of the GloVe 6B 50d package (the GPU bundle's rows of it)")
    parser.add_argument("--train-batch-size", type=int, default=None, help="training sentences per batch (default: train.batch_size)")
    parser.add_argument("--time-budget", type=float, default=None, help="seconds for this process from its start: whole epochs while another and the inference fit, else part of one (budget.py)")
    parser.add_argument("--started-at", type=float, default=None, help="when the comparison started this process (time.time()): a --time-budget counts from then")
    parser.add_argument("--predictions", required=True, help="JSON file for the dev and test predictions")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    result = run(parse_arguments(argv))
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
