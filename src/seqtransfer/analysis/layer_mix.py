"""Which encoder layers each task uses: the learned scalar-mix weights of runs that read an encoder's
layers (``analyze layers``; issue 54, point 5).

A run on frozen encoder features (``model.encoder``, ``encoder_mode=features``) or one fine-tuning
our recurrent LM mixes the encoder's layers, gamma * sum_l softmax(s)_l h_l (Peters et al. 2018).
softmax(s) says how much each layer contributes (0 = the embeddings or our LM's character CNN);
the weights come from the run's saved model, no data is read.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors import safe_open

from seqtransfer.config import RunConfig
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_json_lines
from seqtransfer.rundir import WEIGHTS, check_run_directory, read_saved_config

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MIX_SUFFIX = "encoder_mix.weights"


def task_label(config: RunConfig) -> str | None:
    """What a run was trained on, for a row of the table and figure: ``dataset:task`` (or the training file's name)."""
    data = config.data
    name = data.dataset or (Path(data.train).stem if data.train else None)
    return f"{name}:{data.task}" if name and data.task else name


def saved_mix(directory: Path, config: RunConfig | None = None) -> dict | None:
    """{encoder, mode, weights (softmax, per layer), gamma} of the scalar mix in a run's saved weights,
    or None where the run mixes no encoder layers. Reads the run's settings and only the mix's two
    tensors (a fine-tuned Transformer's file is hundreds of MB); ``config``: the run's, where already read."""
    try:
        with safe_open(str(directory / WEIGHTS), framework="pt") as tensors:
            names = set(tensors.keys())
            mixes = sorted(name for name in names if name.endswith(MIX_SUFFIX) and name.removesuffix("weights") + "gamma" in names)
            if not mixes:
                return None
            scores, gamma = tensors.get_tensor(mixes[0]), tensors.get_tensor(mixes[0].removesuffix("weights") + "gamma")
    except Exception as error:  # noqa: BLE001 - safetensors raises its own errors for a truncated or garbled file
        raise SeqTransferError(f"cannot read the run's weights ({str(error).splitlines()[0][:160]})", path=directory / WEIGHTS, hint="the run directory is damaged: train it again") from None
    model = (config or read_saved_config(directory)).model
    return {"encoder": model.encoder, "mode": model.encoder_mode, "weights": [round(weight, 4) for weight in torch.softmax(scores.float(), 0).tolist()], "gamma": round(float(gamma.float().item()), 4)}


def mix_weights(directory: str | Path, label: str | None = None) -> dict:
    """{run, label, encoder, encoder_weights (the fingerprint of the encoder folder the run read, so a
    row of an LM since pretrained again is told apart), mode, weights (softmax, per layer), gamma} of one run."""
    directory = Path(directory)
    check_run_directory(directory)
    config = read_saved_config(directory)
    mix = saved_mix(directory, config)
    if mix is None:
        raise SeqTransferError("this run mixes no encoder layers", path=directory, hint="pass runs trained with model.encoder (frozen features, or our recurrent LM fine-tuned)")
    return {"run": str(directory), "label": label or task_label(config) or directory.resolve().name, "encoder_weights": config.model.encoder_hash, **mix}


def recorded_mixes(path: Path) -> list[dict]:
    """The mix of every run of an experiment's records file (``RESULTS/records/NAME.jsonl`` or a
    committed ``docs/results/NAME.records.jsonl``) that kept one, labelled ``TARGET / METHOD, seed N``
    (a source's ``source NAME, seed N``; a multi-task run's targets joined in one row): read from the
    records, so a run whose folder is gone still has its row."""
    if not Path(path).is_file():
        raise SeqTransferError("no such records file", path=path, hint="give an experiment's records (RESULTS/records/NAME.jsonl, or the --records file its runs kept)")
    lines = read_json_lines(path, hint="each line is one run's record, as `seqtransfer experiment run` writes it")
    runs: dict[tuple, tuple[list[str], dict]] = {}  # (run folder, method, seed) -> (its targets, its first record)
    for _, record in lines:
        if isinstance(record, dict) and record.get("layer_mix"):
            runs.setdefault((record["run_directory"], record.get("method"), record.get("seed")), ([], record))[0].append(str(record.get("target")))
    if not runs:
        raise SeqTransferError("no run in the records kept a layer mix", path=path, hint="runs record their mix since 2026-11-30; read older runs' folders as RUN")
    return [
        {
            "run": record["run_directory"],
            "label": recorded_label(targets, record),
            "method": record.get("method") or f"source {record.get('source')}",
            "encoder_weights": record.get("encoder_weights"),
            **record["layer_mix"],
        }
        for targets, record in runs.values()
    ]


def recorded_label(targets: list[str], record: dict) -> str:
    """``TARGET / METHOD, seed N``, ``POS, DP / METHOD, seed N`` for a multi-task run, or ``source NAME, seed N``."""
    if not record.get("method"):
        return f"source {record.get('source')}, seed {record['seed']}"
    return f"{', '.join(targets)} / {record['method']}, seed {record['seed']}"


def markdown(results: list[dict]) -> str:
    """A table: a row per run, a column per layer (softmax weight), gamma, and the encoder's fingerprint."""
    layers = max(len(result["weights"]) for result in results)
    header = "| run | " + " | ".join(f"layer {layer}" for layer in range(layers)) + " | gamma | encoder weights |"
    rule = "| --- |" + " ---: |" * (layers + 1) + " --- |"
    rows = [
        "| "
        + " | ".join(
            [
                result["label"],
                *(f"{weight:.3f}" for weight in result["weights"]),
                *([""] * (layers - len(result["weights"]))),
                f"{result['gamma']:.3f}",
                f"`{result['encoder_weights']}`" if result.get("encoder_weights") else "",
            ]
        )
        + " |"
        for result in results
    ]
    return "\n".join([header, rule, *rows]) + "\n" + seeds_table(results)


def seeds_table(results: list[dict]) -> str:
    """Where one run's label recurs at several seeds (``TARGET / METHOD, seed N``): each layer's weight
    as mean ± sample std over those seeds, so that how far the mix moves between seeds is read, not
    guessed ("" where no label has two seeds)."""
    groups: dict[tuple, list[dict]] = {}  # (label without its seed, encoder): runs of one LM pretrained twice are not averaged
    for result in results:
        seedless = re.sub(r", seed \d+$", "", result["label"])
        if seedless != result["label"]:
            groups.setdefault((seedless, encoder_key(result)), []).append(result)
    groups = {key: runs for key, runs in groups.items() if len(runs) > 1 and len({len(run["weights"]) for run in runs}) == 1}
    if not groups:
        return ""
    layers = max(len(runs[0]["weights"]) for runs in groups.values())
    lines = [
        "",
        "Over the seeds (mean ± sample std of each layer's weight):",
        "",
        "| run | seeds | " + " | ".join(f"layer {layer}" for layer in range(layers)) + " | gamma |",
        "| --- | ---: |" + " ---: |" * (layers + 1),
    ]
    for (label, (_, fingerprint)), runs in groups.items():
        twice = sum(key[0] == label for key in groups) > 1  # one label read two pretrainings of the LM: say which
        shown = f"{label} ({fingerprint[:8] if fingerprint else 'not recorded'})" if twice else label
        columns = [[run["weights"][layer] for run in runs] for layer in range(len(runs[0]["weights"]))] + [[run["gamma"] for run in runs]]
        cells = [f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}" for values in columns]
        lines.append(f"| {shown} | {len(runs)} | " + " | ".join([*cells[:-1], *([""] * (layers + 1 - len(cells))), cells[-1]]) + " |")
    return "\n".join(lines) + "\n"


def encoder_key(result: dict) -> tuple[str, str | None]:
    """(encoder path, fingerprint): runs of one folder pretrained twice go to two panels."""
    return str(result["encoder"]), result.get("encoder_weights")


def panel_title(encoder: tuple[str, str | None], results: list[dict]) -> str:
    """ "encoder NAME", and which pretraining of it where the runs read more than one of the folder."""
    path, fingerprint = encoder
    if len({result.get("encoder_weights") for result in results if str(result["encoder"]) == path}) == 1:
        return f"encoder {Path(path).name}"
    return f"encoder {Path(path).name} ({fingerprint[:8] if fingerprint else 'not recorded'})"


def mix_figure(results: list[dict]) -> Figure:
    """A panel per encoder, a row per run, a column per layer (0 = embeddings / character CNN): each
    cell the layer's softmax weight, shaded and written. Grouped bars stop being readable beyond a
    few runs; a task's row beside another's shows at a glance which layers each one leans on."""
    from matplotlib.figure import Figure  # here, not at import: run records read saved_mix

    encoders = list(dict.fromkeys(encoder_key(result) for result in results))
    panels = [[result for result in results if encoder_key(result) == encoder] for encoder in encoders]
    widest = max(len(result["weights"]) for result in results)
    heights = [len(panel) for panel in panels]
    figure = Figure(figsize=(max(4.5, 0.75 * widest + 3.0), 0.9 + 0.32 * sum(heights) + 0.6 * len(panels)))
    grid = figure.add_gridspec(len(panels), 1, height_ratios=heights)
    for number, (encoder, panel) in enumerate(zip(encoders, panels)):
        axes = figure.add_subplot(grid[number])
        layers = max(len(result["weights"]) for result in panel)
        values = [[*result["weights"], *([float("nan")] * (layers - len(result["weights"])))] for result in panel]
        axes.imshow(values, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
        for row, result in enumerate(panel):
            for layer, weight in enumerate(result["weights"]):
                axes.text(layer, row, f"{weight:.2f}", ha="center", va="center", fontsize="small", color="white" if weight > 0.6 else "black")
        axes.set_yticks(range(len(panel)), [result["label"] for result in panel], fontsize="small")
        axes.set_xticks(range(layers))
        axes.set_title(panel_title(encoder, results), fontsize="medium")
    axes.set_xlabel("layer (0 = embeddings / character CNN)")
    figure.tight_layout()
    return figure
