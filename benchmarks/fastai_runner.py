"""The fastai half of ``compare_fastai.py``: fastai 2.8's AWD-LSTM language model on the word ids
that ``compare_fastai.py`` wrote, run with the fastai venv's python (it imports nothing of seqtransfer).

    benchmarks/.fastai-venv/bin/python benchmarks/fastai_runner.py --input WORK

fastai's own pieces: ``get_language_model(AWD_LSTM, ...)`` (the tied ``LinearDecoder``),
``LMDataLoader`` (the training sentences shuffled per epoch, concatenated, laid out as B rows and
read in chunks of ``bptt``), ``LMLearner`` (``ModelResetter``, AR and TAR through
``RNNRegularizer``), fastai's ``Adam`` given torch's eps and no weight decay, ``GradientClip``,
``fit`` at a constant rate. Only the held-out perplexity is computed here, on the held-out rows
``compare_fastai.py`` laid out, read in chunks as seqtransfer reads them, so that both tools are
scored on the same words in the same way (fastai's own validation, skipped, weighs batches
rather than words). Prints one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import resource
import sys
import time
from functools import partial
from pathlib import Path

import fastai
import numpy as np
import torch
from fastai.text.all import AWD_LSTM, Adam, Callback, CancelValidException, CrossEntropyLossFlat, DataLoaders, GradientClip, LMDataLoader, LMLearner, awd_lstm_lm_config, get_language_model, set_seed
from torch.nn import functional


class TrainingTime(Callback):
    """Seconds of each epoch's training batches; fastai's validation pass is skipped (scored below instead)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def before_train(self) -> None:
        self.started = time.perf_counter()

    def after_train(self) -> None:
        self.seconds.append(time.perf_counter() - self.started)

    def before_validate(self) -> None:
        raise CancelValidException()


def fastai_config(model: dict) -> dict:
    """Our config.json's sizes and dropouts under fastai's ``awd_lstm_lm_config`` names."""
    names = {
        "embedding": "emb_sz",
        "hidden": "n_hid",
        "layers": "n_layers",
        "output_dropout": "output_p",
        "hidden_dropout": "hidden_p",
        "input_dropout": "input_p",
        "embedding_dropout": "embed_p",
        "weight_dropout": "weight_p",
    }
    return {**awd_lstm_lm_config, **{fastai_name: model[name] for name, fastai_name in names.items()}}


def held_out_perplexity(model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor, bptt: int) -> float:
    """exp(mean -log p) of every target of the (B, L) held-out rows, read left to right in chunks of ``bptt``."""
    model.eval()
    model.reset()
    total = 0.0
    with torch.no_grad():
        for start in range(0, inputs.size(1), bptt):
            logits = model(inputs[:, start : start + bptt])[0]  # (B, T, V): the decoder's scores
            total += functional.cross_entropy(logits.flatten(0, 1), targets[:, start : start + bptt].flatten(), reduction="sum").item()
    model.reset()
    return math.exp(total / targets.numel())


def train(folder: Path) -> dict:
    settings = json.loads((folder / "settings.json").read_text(encoding="utf-8"))
    model_settings, training = settings["model"], settings["training"]
    data = np.load(folder / "fastai.npz")
    set_seed(training["seed"])
    torch.set_num_threads(training["threads"])
    sentences = [torch.from_numpy(ids) for ids in np.split(data["training"], np.cumsum(data["lengths"])[:-1])]
    loader = LMDataLoader(sentences, bs=training["batch_size"], seq_len=training["bptt"], shuffle=True)
    dls = DataLoaders(loader, LMDataLoader(sentences, bs=training["batch_size"], seq_len=training["bptt"]), device=torch.device("cpu"))
    model = get_language_model(AWD_LSTM, model_settings["words"], config=fastai_config(model_settings))
    timer = TrainingTime()
    beta1, beta2 = training["betas"]
    learner = LMLearner(
        dls,
        model,
        loss_func=CrossEntropyLossFlat(),
        opt_func=partial(Adam, mom=beta1, sqr_mom=beta2, eps=1e-8, wd=0.0),
        cbs=[GradientClip(training["gradient_clip"]), timer],
        alpha=model_settings["activation_regularization"],
        beta=model_settings["temporal_regularization"],
    )
    inputs, targets = torch.from_numpy(data["held_out_inputs"]), torch.from_numpy(data["held_out_targets"])
    perplexities = []
    with learner.no_bar(), learner.no_logging():
        for _ in range(training["epochs"]):
            learner.fit(1, training["learning_rate"])
            perplexities.append(round(held_out_perplexity(learner.model, inputs, targets, training["bptt"]), 3))
            print(f"fastai: epoch {len(perplexities)}: {timer.seconds[-1]:.1f} s, held-out perplexity {perplexities[-1]:.2f}", file=sys.stderr, flush=True)
    tokens = int(data["lengths"].sum())
    return {
        "tool": "fastai",
        "version": fastai.__version__,
        "torch": torch.__version__,
        "machine": platform.processor() or platform.machine(),
        "threads": torch.get_num_threads(),
        "parameters": sum(parameter.numel() for parameter in model.parameters()),
        "training_tokens": tokens,
        "train_seconds": [round(seconds, 2) for seconds in timer.seconds],
        "tokens_per_second": round(tokens * len(timer.seconds) / sum(timer.seconds), 1),
        "held_out_perplexity": perplexities,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, required=True, help="the folder compare_fastai.py wrote (settings.json, fastai.npz)")
    print(json.dumps(train(parser.parse_args().input)))


if __name__ == "__main__":
    main()
