"""Operators dispatched and host synchronisations in one training step and one inference batch.

    python benchmarks/launches.py                       # every model, batch 16 and 64, lengths 10, 40, 100
    python benchmarks/launches.py --models tagger-crf --batches 16 --lengths 40

On a GPU every dispatched operator is (at least) one kernel launch of about 5-10 us, and every
host synchronisation waits for the queue to drain; a small BiLSTM step is bound by these, not by
arithmetic (issue 51). This script counts them on the CPU with a ``TorchDispatchMode``, which
sees every ATen operator the step runs:

- ``operators``: ATen operators dispatched (forward, backward, gradient clipping, optimiser step);
- ``kernels``: the same without operators that only make a view (``detach``, ``view``,
  ``transpose``, ``slice``, ...: metadata, no kernel on a GPU), i.e. the launches;
- ``syncs``: operators that make a GPU wait for the host: ``aten._local_scalar_dense``
  (``.item()``, ``float(t)``, ``bool(t)``, Python branching on a tensor), ``nonzero``,
  ``masked_select``, ``unique``; plus calls of ``Tensor.tolist``/``Tensor.numpy`` (counted by
  wrapping them), which copy to the host.

Counted as a GPU runs the step: the embedding tables with dense gradients (on a CPU sparse ones,
which the lazy momentum SGD updates row by row; on a GPU their coalescing and ``unique`` make the
host wait), and the character encoder's forms in one LSTM call (on a CPU, in the length groups
that cost least there). Two reads stay
in the count that are no GPU sync: the character encoder's form lengths (``bool`` and
``tolist`` on ``Batch.character_lengths``, which a batch keeps on the host on every device).

The data are synthetic: B sentences of exactly T tokens drawn from a 2,000-word vocabulary,
random labels (tagging: 20 labels; parsing: random projective heads). The counts do not depend
on the values, only on B, T and the code path. On a CPU the CRF's training loss takes a numpy
forward-backward (``tagger-crf``: its copies to the host are the syncs); ``tagger-crf-gpu-path``
counts what a GPU runs instead, the log-semiring scan (``models/crf.py``, ``log_partition_scan``),
and ``tagger-crf-gpu-loop`` the loop over time steps the GPU ran before it (and still runs where
the scan's matrices would not fit).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from seqtransfer.config import RunConfig
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import make_batch
from seqtransfer.models.crf import CRF, log_partition_scan, log_partition_torch, viterbi_scan
from seqtransfer.models.registry import build_model
from seqtransfer.models.representation import CharacterEncoder
from seqtransfer.training.optimizer import clip_gradient_norm, dense_gradients_off_the_cpu
from seqtransfer.training.optimizers import fill_optimizer, make_optimizer
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies
from seqtransfer.transfer.schemes import get_scheme
from seqtransfer.workflows.multitask import build_multitask_model, encode_streams, load_multitask_data, prepare_multitask_vocabularies, resolve_multitask_settings
from seqtransfer.workflows.resolution import resolve_model_settings

# Operators that only make a new view of a tensor's memory (metadata on the host, no kernel).
VIEW_OPERATORS = {
    "detach",
    "view",
    "_unsafe_view",
    "transpose",
    "t",
    "permute",
    "slice",
    "select",
    "unsqueeze",
    "squeeze",
    "expand",
    "as_strided",
    "alias",
    "reshape",
    "unbind",
    "split",
    "split_with_sizes",
    "chunk",
    "narrow",
    "unfold",
    "diagonal",
    "_reshape_alias",
    "lift_fresh",
}
SYNC_OPERATORS = {"_local_scalar_dense", "nonzero", "masked_select", "unique", "_unique2", "unique_dim", "unique_consecutive"}
MODELS = {
    "tagger-softmax": {"classifier": "softmax"},
    "tagger-crf": {"classifier": "crf"},
    "tagger-crf-gpu-path": {"classifier": "crf", "gpu_path": (log_partition_scan, viterbi_scan)},
    "tagger-crf-gpu-loop": {"classifier": "crf", "gpu_path": (log_partition_torch, None)},
    "pretrand": {"classifier": "softmax", "architecture": "pretrand"},
    "parser": {"task": "dependency"},
    "multitask": {"multitask": True},  # POS below NER (MuTSPad's hierarchy, two levels); the batch is NER's, through both
    "encoder-finetune": {"encoder": "minilm"},  # MiniLM-L6 (random weights of its shape) fine-tuned under a softmax head
}


class Counting(TorchDispatchMode):
    """Counts every ATen operator dispatched while active, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.operators: Counter = Counter()

    def __torch_dispatch__(self, function, types, arguments=(), keyword_arguments=None):
        self.operators[function.overloadpacket.__name__] += 1
        return function(*arguments, **(keyword_arguments or {}))


class HostCopies:
    """Counts ``Tensor.tolist`` and ``Tensor.numpy`` calls while active (they dispatch no operator)."""

    def __enter__(self):
        self.count, self.originals = 0, {name: getattr(torch.Tensor, name) for name in ("tolist", "numpy")}
        for name, original in self.originals.items():
            setattr(torch.Tensor, name, self.wrapped(original))
        return self

    def wrapped(self, original):
        def counted(tensor, *arguments, **keyword_arguments):
            self.count += 1
            return original(tensor, *arguments, **keyword_arguments)

        return counted

    def __exit__(self, *exception):
        for name, original in self.originals.items():
            setattr(torch.Tensor, name, original)


def write_data(folder: Path, task: str, sentences: int, length: int, seed: int) -> dict:
    """Synthetic train/dev files of ``sentences`` sentences of ``length`` tokens; the data settings."""
    generator = random.Random(seed)
    words = [f"w{index}" for index in range(2000)]
    for split in ("train", "dev"):
        lines = []
        for _ in range(sentences):
            for position in range(1, length + 1):
                word = generator.choice(words)
                if task == "dependency":
                    head = 0 if position == 1 else generator.randint(1, position - 1)
                    relation = "root" if head == 0 else generator.choice(["nsubj", "obj", "det", "amod", "case"])
                    lines.append(f"{position}\t{word}\t_\tX\t_\t_\t{head}\t{relation}\t_\t_")
                else:
                    lines.append(f"{word} {generator.choice(['O'] + [f'{p}-T{n}' for p in 'BI' for n in range(10)])}")
            lines.append("")
        (folder / f"{split}.{'conllu' if task == 'dependency' else 'conll'}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    suffix = "conllu" if task == "dependency" else "conll"
    data = {"dataset": None, "train": str(folder / f"train.{suffix}"), "dev": str(folder / f"dev.{suffix}"), "task": task}
    if task != "dependency":
        data.update(columns=["word", "ner"], scheme="iob2")
    return data


def build_multitask(batch_size: int, length: int, folder: Path):
    """A two-level multi-task tagger (POS, then NER reading it), its optimiser and one NER batch."""
    config = RunConfig()
    entries = {}
    for task, seed in (("pos", 1), ("ner", 2)):
        (folder / task).mkdir()
        data = write_data(folder / task, "ner", batch_size, length, seed)  # random labels: the task's kind is what counts
        entries[task] = {"train": data["train"], "dev": data["dev"], "columns": ["word", task], "scheme": "none" if task == "pos" else "iob2"}
    config.model.tasks, config.multitask.data, config.model.embeddings = {"pos": [], "ner": ["pos"]}, entries, None
    seed_everything(1, 1)
    quiet = lambda message: None  # noqa: E731
    tasks = load_multitask_data(config)
    resolve_multitask_settings(config, tasks, quiet)
    vocabularies, matrix = prepare_multitask_vocabularies(config, tasks, quiet)
    model = build_multitask_model(config, vocabularies, matrix, None, quiet)
    batch = make_batch(encode_streams(tasks, vocabularies, unified=False)[1], np.arange(batch_size))
    optimizer = make_optimizer([{"params": [p for p in model.parameters() if p.requires_grad]}], config.train)
    return model, optimizer, batch, config


def build(name: str, batch_size: int, length: int, folder: Path):
    """The model, its optimiser and one batch of ``batch_size`` sentences of ``length`` tokens."""
    settings = MODELS[name]
    if settings.get("multitask"):
        return build_multitask(batch_size, length, folder)
    config = RunConfig()
    for key, value in write_data(folder, "dependency" if settings.get("task") == "dependency" else "ner", batch_size, length, 1).items():
        setattr(config.data, key, value)
    config.model.embeddings = None
    config.model.classifier = settings.get("classifier", "softmax")
    if settings.get("task") == "dependency":
        config.model.architecture = "parser"
    elif settings.get("architecture"):
        config.model.architecture = settings["architecture"]
    fill_optimizer(config.train, "sgd" if settings.get("task") != "dependency" else "adam")
    seed_everything(1, 1)
    data = load_task_data(config.data, ("train", "dev"))
    if settings.get("encoder"):  # a fine-tuned encoder: its architecture, AdamW and schedule, as a run resolves them
        config.model.encoder, config.model.encoder_mode, config.train.optimizer, config.train.learning_rate = settings["encoder"], "finetune", None, None
        resolve_model_settings(config, get_scheme("scratch"), data, lambda message: None)
    vocabularies, _ = prepare_vocabularies(config, data, log=lambda message: None)
    model = build_model(config.model, vocabularies)
    encoded = data.encode("train", vocabularies)
    batch = make_batch(encoded, np.arange(batch_size))
    optimizer = make_optimizer([{"params": [p for p in model.parameters() if p.requires_grad]}], config.train)
    return model, optimizer, batch, config


def training_step(model, optimizer, batch, clip: float) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss = model.loss(batch)
    loss.backward()
    clip_gradient_norm([p for group in optimizer.param_groups for p in group["params"]], clip)
    optimizer.step()
    loss.detach()  # the loop keeps the loss on the device; on a GPU it reads the losses once per 25 batches (LossTotal), so no read is counted per step


def count(function) -> dict:
    with Counting() as counting, HostCopies() as copies:
        function()
    syncs = sum(number for operator, number in counting.operators.items() if operator in SYNC_OPERATORS)
    kernels = sum(number for operator, number in counting.operators.items() if operator not in VIEW_OPERATORS)
    return {"operators": sum(counting.operators.values()), "kernels": kernels, "syncs": syncs + copies.count, "host_copies": copies.count, "top": counting.operators.most_common(6)}


def gpu_crf_path(model, log_partition, viterbi) -> None:
    """Make the CRF take a torch log partition function (and Viterbi scan) as GPU tensors do (CPU
    ones take numpy for training and the loop over time steps for decoding)."""
    crf = next(module for module in model.modules() if isinstance(module, CRF))
    crf.log_partition = lambda emissions, mask: log_partition(emissions, mask, crf.transitions, crf.start, crf.end)
    if viterbi is not None:
        crf.decode = lambda emissions, mask: viterbi(emissions, mask, crf.transitions, crf.start, crf.end)


def measure(name: str, batch_size: int, length: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        model, optimizer, batch, config = build(name, batch_size, length, Path(folder))
    dense_gradients_off_the_cpu(model, torch.device("cuda"))  # as run_path places a model on a GPU: dense embedding gradients (no device is used)
    if MODELS[name].get("gpu_path"):
        gpu_crf_path(model, *MODELS[name]["gpu_path"])
    model.train()
    training_step(model, optimizer, batch, config.train.gradient_clip)  # warm-up: lazy state, caches
    step = count(lambda: training_step(model, optimizer, batch, config.train.gradient_clip))
    model.eval()
    with torch.inference_mode():
        inference = count(lambda: model.decode(batch))
    return {"model": name, "batch": batch_size, "length": length, "step": step, "inference": inference}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--batches", nargs="+", type=int, default=[16, 64])
    parser.add_argument("--lengths", nargs="+", type=int, default=[10, 40, 100])
    parser.add_argument("--json", help="write every count (with the 6 most frequent operators) to this file")
    arguments = parser.parse_args(argv)
    torch.set_num_threads(1)
    CharacterEncoder.one_call = True  # the character encoder as a GPU runs it: every form in one LSTM call
    rows = []
    print(f"{'model':16} {'batch':>5} {'length':>6} {'step ops':>9} {'kernels':>8} {'syncs':>6} {'infer ops':>9} {'kernels':>8} {'syncs':>6}")
    for name in arguments.models:
        for batch_size in arguments.batches:
            for length in arguments.lengths:
                row = measure(name, batch_size, length)
                rows.append(row)
                step, inference = row["step"], row["inference"]
                print(
                    f"{name:16} {batch_size:5d} {length:6d} {step['operators']:9d} {step['kernels']:8d} {step['syncs']:6d} "
                    f"{inference['operators']:9d} {inference['kernels']:8d} {inference['syncs']:6d}",
                    flush=True,
                )
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
