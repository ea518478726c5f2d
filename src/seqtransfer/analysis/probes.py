"""Diagnostic probes of an encoder's layers (To-tune-or-not-to-tune paper, Figure 1).

For a run with a Transformer encoder (``model.encoder``): for every layer (the embeddings and each
of the L layers), a logistic-regression probe (one linear layer, full-batch L-BFGS) learns the
run's token labels from that layer's token vectors on the training set and is scored (token
accuracy) on a split. "before" probes the pretrained encoder; for a fine-tuned run, "after"
probes the run's own encoder: how fine-tuning changed what each layer holds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from seqtransfer.errors import SeqTransferError


def layer_vectors(run, tokens: list[list[str]], which: str) -> list[np.ndarray]:
    """Per sentence (T, L + 1, H): the pretrained encoder's vectors, or the fine-tuned run's."""
    from seqtransfer.embeddings.transformer import cached_features, encode_sentences_with, tokenizer_of

    config = run.config.model
    if which == "before":
        return cached_features(config.encoder, tokens, config.encoder_pooling)
    encoder = run.model.encoder
    encoder.config.output_hidden_states = True
    encoder.eval()
    return encode_sentences_with(tokenizer_of(config.encoder), encoder, tokens, "first")


def probe_accuracy(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor, classes: int, steps: int = 100) -> float:
    """Token accuracy (percent) of a logistic regression trained with L-BFGS (a little l2)."""
    torch.manual_seed(0)
    mean, scale = train_x.mean(0), train_x.std(0) + 1e-6
    train_x, test_x = (train_x - mean) / scale, (test_x - mean) / scale
    probe = torch.nn.Linear(train_x.size(1), classes)
    optimizer = torch.optim.LBFGS(probe.parameters(), max_iter=steps, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(probe(train_x), train_y) + 1e-4 * probe.weight.pow(2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    with torch.no_grad():
        return 100.0 * float((probe(test_x).argmax(-1) == test_y).float().mean())


def probe_layers(run_directory: str | Path, split: str = "dev", max_train_sentences: int | None = None, data_dir: str | None = None) -> dict:
    """{"layers": L + 1, "before": [accuracy per layer], "after": [...] for a fine-tuned run}."""
    from dataclasses import replace

    from seqtransfer.data.task_data import load_task_data
    from seqtransfer.rundir import load_run

    run = load_run(run_directory)
    if not run.config.model.encoder:
        raise SeqTransferError("probes read a Transformer encoder's layers; this run has none", path=run_directory, hint="pass a run trained with model.encoder")
    if run.model.task_kind != "tagging":
        raise SeqTransferError("probes learn token labels: pass a tagging run", path=run_directory)
    data = load_task_data(replace(run.config.data, data_dir=data_dir or run.config.data.data_dir, max_train_sentences=max_train_sentences), ("train", split))
    if split not in data.splits:
        raise SeqTransferError(f"the run's data has no {split} split", hint="pass --split dev or test")
    labels = {label: index for index, label in enumerate(sorted({label for sentence in data.gold("train") for label in sentence}))}
    train_y = torch.tensor([labels[label] for sentence in data.gold("train") for label in sentence])
    test_gold = [label for sentence in data.gold(split) for label in sentence]
    test_y = torch.tensor([labels.get(label, -1) for label in test_gold])
    result = {"run": str(run_directory), "split": split, "labels": len(labels)}
    for which in ("before", "after") if run.config.model.encoder_mode == "finetune" else ("before",):
        train_vectors = np.concatenate(layer_vectors(run, data.tokens("train"), which)).astype(np.float32)  # (N, L + 1, H)
        test_vectors = np.concatenate(layer_vectors(run, data.tokens(split), which)).astype(np.float32)
        result["layers"] = train_vectors.shape[1]
        result[which] = [round(probe_accuracy(torch.from_numpy(train_vectors[:, layer]), train_y, torch.from_numpy(test_vectors[:, layer]), test_y, len(labels)), 2)
                         for layer in range(train_vectors.shape[1])]
    return result


def draw_probes(result: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    figure = probes_figure(result)
    for suffix in (".png", ".svg"):
        figure.savefig(path.with_suffix(suffix), dpi=120)
    plt.close(figure)


def probes_figure(result: dict):
    """Probe accuracy per layer, before (and after) fine-tuning (the To-tune paper's Figure 1)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 3.5))
    for which, style in (("before", "o-"), ("after", "s--")):
        if which in result:
            axis.plot(range(result["layers"]), result[which], style, label=f"{which} fine-tuning" if "after" in result else "pretrained encoder")
    axis.set_xlabel("layer (0 = embeddings)")
    axis.set_ylabel(f"probe accuracy on {result['split']} (%)")
    axis.legend()
    figure.tight_layout()
    return figure
