"""Absorption in PretRand (PretRand paper §5.2, Figure 5): do the pre-trained units drown the random ones?

For each PretRand run, on its dev split (eval mode, no dropout):

- the learnt weights of the pre-trained FC layer Psi_p (``classifier``) and of the random one
  Psi_r (``random_classifier``): their distributions (Figure 5) and mean |w|;
- their outputs, the raw branch scores y_p and y_r (B, T, L) per token: distributions, mean l2
  norm per token, and the random branch's share of the sum ||y_r|| / (||y_p|| + ||y_r||);
- what reaches the output layer: the combined scores (eq. 9, or eq. 10–11), their range, and the
  mean probability the softmax gives its arg-max label (bounded scores cannot make it confident);
- each branch alone: the accuracy of arg-max y_p and of arg-max y_r against the gold labels, and
  how often the model's prediction equals each branch's arg-max. A random branch whose scores are
  small and whose arg-max rarely decides has been absorbed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from seqtransfer.analysis.figures import new_figure
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.batching import evaluation_batches
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.pretrand import combine_branches
from seqtransfer.rundir import load_run

HISTOGRAM_BINS = 60
BRANCH_LETTER = {"pretrained": "u", "random": "v"}  # the per-class weighting vectors of equation 11


def branch_outputs(run, split: str, data_dir: str | None) -> dict[str, np.ndarray]:
    """Per dev token: raw scores of both branches, the combined scores, the model's decision (its
    output layer's: a CRF's Viterbi path, else the combined scores' argmax) and the gold label index."""
    data = load_task_data(replace(run.config.data, data_dir=data_dir or run.config.data.data_dir), (split,))
    encoded = data.encode(split, run.vocabularies)
    parts = {"pretrained": [], "random": [], "combined": [], "predicted": [], "gold": []}
    run.model.eval()
    with torch.inference_mode():
        for batch in evaluation_batches(encoded, 256):
            pretrained, random = run.model.branch_emissions(batch)
            combined = combine_branches(pretrained, random, run.model.weighting, run.model.normalize, run.model.scale)
            mask = batch.mask
            for name, values in (("pretrained", pretrained), ("random", random), ("combined", combined)):
                parts[name].append(values[mask].numpy())
            parts["predicted"].append(run.model.decode(batch)[mask].numpy())
            parts["gold"].append(batch.labels[mask].numpy())
    return {name: np.concatenate(values) for name, values in parts.items()}


def describe_setting(config) -> str:
    """A PretRand run's choices in a few words: normalisation (and its scale), u/v, random++ (and what
    its first phase trains), the random branch's own rate."""
    model, transfer = config.model, config.transfer
    scale = f" x{model.normalized_scale:g}" if model.normalized_scale != 1.0 else ""
    random_plus_plus = "on" if transfer.random_plus_plus else "off"
    if transfer.random_plus_plus and transfer.random_plus_plus_trains == "random_branch":
        random_plus_plus += " (random branch alone)"
    rate = f", random branch at rate {transfer.random_branch_learning_rate:g}" if transfer.random_branch_learning_rate is not None else ""
    return f"normalise {'on' if model.normalize_branches else 'off'}{scale}, learnable u/v {'on' if model.branch_weighting else 'off'}, random++ {random_plus_plus}{rate}"


def describe_run(directory: str | Path, split: str = "dev", data_dir: str | None = None) -> dict:
    """The measurements of the module docstring for one PretRand run."""
    run = load_run(directory)
    if not hasattr(run.model, "random_classifier"):
        raise SeqTransferError("not a PretRand run (no random branch)", path=directory, hint="pass runs trained with --method pretrand")
    outputs = branch_outputs(run, split, data_dir)
    pretrained, random, combined, gold = outputs["pretrained"], outputs["random"], outputs["combined"], outputs["gold"]
    weights = {"pretrained": run.model.classifier.weight.detach().numpy().ravel(), "random": run.model.random_classifier.weight.detach().numpy().ravel()}
    norms = {name: np.linalg.norm(values, axis=1) for name, values in (("pretrained", pretrained), ("random", random))}
    probabilities = torch.from_numpy(combined).softmax(-1).numpy()
    prediction = outputs["predicted"]
    known = gold >= 0
    return {
        "run": str(directory),
        "setting": describe_setting(run.config),
        "tokens": int(len(gold)),
        "weights": {name: {"mean_absolute": float(np.abs(values).mean()), "std": float(values.std())} for name, values in weights.items()},
        "outputs": {name: {"mean_norm": float(norms[name].mean()), "std": float(values.std())} for name, values in (("pretrained", pretrained), ("random", random))},
        "random_share": float((norms["random"] / (norms["pretrained"] + norms["random"] + 1e-12)).mean()),
        "combined": {"min": float(combined.min()), "max": float(combined.max()), "mean_top_probability": float(probabilities.max(1).mean())},
        "branch_accuracy": {name: float(100.0 * (values.argmax(1)[known] == gold[known]).mean()) for name, values in (("pretrained", pretrained), ("random", random))},
        "model_accuracy": float(100.0 * (prediction[known] == gold[known]).mean()),
        "decided_like": {name: float(100.0 * (values.argmax(1) == prediction).mean()) for name, values in (("pretrained", pretrained), ("random", random))},
        "u_v": weighting_spread(run.model.weighting),
        "_values": {"weights": weights, "outputs": {"pretrained": pretrained.ravel(), "random": random.ravel()}},
    }


def weighting_spread(weighting) -> dict[str, float]:
    """The mean and sample std over classes of u (the pre-trained branch's weights) and v (the random one's)."""
    spread = {}
    for branch, letter in BRANCH_LETTER.items():
        values = getattr(weighting, branch).detach().float()
        spread[f"{letter}_mean"] = float(values.mean())
        spread[f"{letter}_std"] = float(values.std()) if values.numel() > 1 else 0.0
    return spread


def absorption_figure(results: list[dict]):
    """Figure 5 per run: weights (top) and outputs (bottom) of the pre-trained (grey) and random (green) FC layers."""
    figure = new_figure(4.2 * len(results), 6.0)
    axes = figure.subplots(2, len(results), squeeze=False)
    for column, result in enumerate(results):
        for row, kind in enumerate(("weights", "outputs")):
            axis = axes[row][column]
            values = result["_values"][kind]
            low = min(float(np.percentile(part, 0.5)) for part in values.values())
            high = max(float(np.percentile(part, 99.5)) for part in values.values())
            bins = np.linspace(low, high, HISTOGRAM_BINS)
            for name, colour in (("pretrained", "#7f7f7f"), ("random", "#2ca02c")):
                axis.hist(values[name], bins=bins, density=True, alpha=0.55, color=colour, label=f"{name} FC")
            axis.set_title(f"{Path(result['run']).name}\n{result['setting']}" if row == 0 else "", fontsize=7)
            axis.set_xlabel("learnt weight value" if kind == "weights" else "branch score per label (dev tokens)", fontsize=8)
            axis.legend(fontsize=7)
    figure.tight_layout()
    return figure


def markdown(results: list[dict]) -> str:
    header = [
        "run",
        "setting",
        "mean abs w (pre / rand)",
        "mean score norm (pre / rand)",
        "random share",
        "combined range",
        "mean top prob",
        "acc. pre / rand / model",
        "decided like pre / rand",
        "u / v (mean ± std over classes)",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in results:
        lines.append(
            " | ".join(
                [
                    f"| {Path(r['run']).name}",
                    r["setting"],
                    f"{r['weights']['pretrained']['mean_absolute']:.3f} / {r['weights']['random']['mean_absolute']:.3f}",
                    f"{r['outputs']['pretrained']['mean_norm']:.2f} / {r['outputs']['random']['mean_norm']:.2f}",
                    f"{r['random_share']:.2f}",
                    f"[{r['combined']['min']:.2f}, {r['combined']['max']:.2f}]",
                    f"{r['combined']['mean_top_probability']:.3f}",
                    f"{r['branch_accuracy']['pretrained']:.2f} / {r['branch_accuracy']['random']:.2f} / {r['model_accuracy']:.2f}",
                    f"{r['decided_like']['pretrained']:.1f} / {r['decided_like']['random']:.1f}",
                    f"{r['u_v']['u_mean']:.2f} ± {r['u_v'].get('u_std', 0.0):.2f} / {r['u_v']['v_mean']:.2f} ± {r['u_v'].get('v_std', 0.0):.2f} |",
                ]
            )
        )
    return "\n".join(lines) + "\n"


def public(result: dict) -> dict:
    """A result without its raw value arrays (for JSON)."""
    return {key: value for key, value in result.items() if not key.startswith("_")}
