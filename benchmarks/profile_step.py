"""Where the time of one training step goes, component by component (not part of the tests).

    SEQTRANSFER_DATA=../shared/datasets python benchmarks/profile_step.py --dataset wnut17 [--operators 15] [--nan-fill]

Builds the reference model (GloVe 50d, char BiLSTM 50/100, word BiLSTM 200, CRF) on the
dataset's training batches and, over every batch of one epoch, times each component in
isolation, forward and backward, on its real inputs:

    data        assembling the padded batch from encoded sentences (numpy)
    words       word embedding lookup
    characters  character embedding + character BiLSTM over the distinct forms of the batch
    bilstm      the word-level BiLSTM
    output      dropout + linear classifier + CRF negative log-likelihood (or softmax loss)
    optimizer   gradient clipping + SGD momentum step over all parameters

and the whole step as the training loop runs it. Milliseconds per batch and share of the step.

``--device cuda`` times the same on a GPU (scripts/gpu_bench.sh's ``profile`` tool): the batch is
moved to the device (``data (to device)``), and every timed part waits for the device before and
after (``torch.cuda.synchronize``), so each figure is the part's own wall-clock time, launches and
host work included; ``--operators N`` then lists the operators by their own host time, with their
device time beside it. ``--json FILE`` writes the table.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

import numpy as np
import torch

from seqtransfer.config import RunConfig
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import encode_sentences, make_batch, training_batches
from seqtransfer.models.tagger import Tagger
from seqtransfer.training.optimizer import clip_gradient_norm
from seqtransfer.training.optimizers import make_optimizer
from seqtransfer.training.placement import place_for_training
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies


def wait(device: torch.device) -> None:
    """Let the device finish its queue (a GPU), so that the clock reads the work done."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


DEVICE = torch.device("cpu")  # set by main: where the model and batches are


def timed(totals: dict, name: str, function, *arguments):
    wait(DEVICE)
    started = time.perf_counter()
    result = function(*arguments)
    wait(DEVICE)
    totals[name] += time.perf_counter() - started
    return result


def backward_of(output: torch.Tensor) -> None:
    output.backward(torch.ones_like(output)) if output.dim() else output.backward()


def profile_batch(model: Tagger, batch, totals: dict) -> None:
    """Time each component's forward+backward on detached inputs that require grad."""
    representation = model.word_representation
    words = timed(totals, "words forward", representation.word_embedding, batch.words)
    timed(totals, "words backward", backward_of, words.sum())
    forms = timed(totals, "characters forward", representation.character_encoder, batch.characters, batch.character_lengths)
    timed(totals, "characters backward", backward_of, forms.sum())
    inputs = torch.cat([words.detach(), forms.detach()[batch.form_index]], dim=-1).requires_grad_()
    states = timed(totals, "bilstm forward", model.feature_extractor, inputs, batch.lengths)
    timed(totals, "bilstm backward", backward_of, states.sum())
    features = states.detach().requires_grad_()
    loss = timed(totals, "output forward", lambda: model.output.loss(model.classifier(model.dropout(features)), batch.labels, batch.mask))
    timed(totals, "output backward", backward_of, loss)


def full_step(model: Tagger, optimizer, batch, clip: float, totals: dict) -> None:
    wait(DEVICE)
    started = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    loss = model.loss(batch)
    loss.backward()
    wait(DEVICE)
    totals["step forward+backward"] += time.perf_counter() - started
    parameters = [p for group in optimizer.param_groups for p in group["params"]]
    timed(totals, "optimizer (clip + SGD step)", lambda: (clip_gradient_norm(parameters, clip), optimizer.step()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="wnut17")
    parser.add_argument("--classifier", default="crf", choices=["crf", "softmax"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (a GPU: each timed part waits for the device)")
    parser.add_argument("--data-dir", help="folder holding the dataset folders (default: $SEQTRANSFER_DATA)")
    parser.add_argument("--embeddings", help="word vectors: a registry name or a text file (default: the run's, GloVe 6B 50d)")
    parser.add_argument("--json", help="also write the table (milliseconds per batch) to this file")
    parser.add_argument("--nan-fill", action="store_true", help="re-enable deterministic mode's NaN fill of new tensors (the state before it was switched off)")
    parser.add_argument("--operators", type=int, default=0, metavar="N", help="also print torch.profiler's N most expensive operators over 100 full steps")
    parser.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="seconds for this process: the epoch stops at the batch where its share is spent (half of it with --operators), the table over the batches timed",
    )
    arguments = parser.parse_args()
    deadline = time.perf_counter() + arguments.time_budget * (0.5 if arguments.operators else 0.9) if arguments.time_budget else None
    config = RunConfig()
    config.data.dataset, config.model.classifier, config.train.threads = arguments.dataset, arguments.classifier, arguments.threads
    config.data.data_dir = arguments.data_dir
    if arguments.embeddings:
        config.model.embeddings = arguments.embeddings
    global DEVICE
    DEVICE = torch.device(arguments.device)
    seed_everything(1, arguments.threads)
    torch.utils.deterministic.fill_uninitialized_memory = arguments.nan_fill
    data = load_task_data(config.data, splits=("train", "dev"))
    vocabularies, matrix = prepare_vocabularies(config, data, log=lambda message: None)
    model = Tagger(config.model, len(vocabularies.words), len(vocabularies.characters), len(vocabularies.labels))
    model.load_word_vectors(matrix)
    place_for_training(model, DEVICE)  # as `seqtransfer train` does: cuBLAS's workspace, dense embedding gradients off the CPU
    model.train()
    encoded = encode_sentences(data.tokens("train"), vocabularies, data.labels("train"))
    optimizer = make_optimizer([{"params": list(model.parameters())}], config.train)
    groups = [batch.indices for batch in training_batches(encoded, 16, np.random.default_rng(0))]
    totals: dict[str, float] = defaultdict(float)
    with optimizer.track_rows(model):  # as train_epoch: embedding rows caught up when read
        for number, indices in enumerate(groups):  # one epoch, the loop's own way, plus component timings
            if deadline is not None and number and time.perf_counter() > deadline:
                print(f"time budget: {number} of {len(groups)} batches timed", flush=True)
                groups = groups[:number]
                break
            batch = timed(totals, "data (make_batch)", make_batch, encoded, indices)
            if DEVICE.type != "cpu":
                batch = timed(totals, "data (to device)", batch.to, DEVICE)
            full_step(model, optimizer, batch, config.train.gradient_clip, totals)
            profile_batch(model, batch, totals)
    model.zero_grad(set_to_none=True)
    count = len(groups)
    step = totals["data (make_batch)"] + totals.get("data (to device)", 0.0) + totals["step forward+backward"] + totals["optimizer (clip + SGD step)"]
    where = torch.cuda.get_device_name(DEVICE) if DEVICE.type == "cuda" else f"{arguments.threads} threads"
    print(f"{arguments.dataset}: {count} batches, {int(encoded.lengths.sum())} tokens, {where}, {arguments.classifier}")
    print(f"{'component':32} {'ms/batch':>9} {'share of step':>14}")
    for name, seconds in totals.items():
        print(f"{name:32} {1000 * seconds / count:9.2f} {100 * seconds / step:13.1f}%")
    print(f"{'training step (data+fwd+bwd+opt)':32} {1000 * step / count:9.2f} -> {step:.2f} s per epoch")
    if arguments.json:
        table = {name: round(1000 * seconds / count, 3) for name, seconds in totals.items()}
        document = {"dataset": arguments.dataset, "device": str(DEVICE), "where": where, "classifier": arguments.classifier, "batches": count, "milliseconds_per_batch": table}
        with open(arguments.json, "w", encoding="utf-8") as handle:
            json.dump({**document, "step_milliseconds": round(1000 * step / count, 3), "torch": torch.__version__}, handle, indent=1)
    if arguments.operators:
        print_operators(model, optimizer, encoded, groups[:100], config.train.gradient_clip, arguments.operators)


def print_operators(model: Tagger, optimizer, encoded, groups, clip: float, rows: int) -> None:
    """torch.profiler's table of the operators that take the most time over full training steps."""
    from torch.profiler import ProfilerActivity, profile

    totals: dict[str, float] = defaultdict(float)
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if DEVICE.type == "cuda" else [])]
    with profile(activities=activities) as profiler, optimizer.track_rows(model):
        for indices in groups:
            full_step(model, optimizer, make_batch(encoded, indices).to(DEVICE), clip, totals)
    print(profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows))


if __name__ == "__main__":
    main()
