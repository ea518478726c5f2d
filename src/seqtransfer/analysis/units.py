"""Importance of a lower task's units for every task of a multi-task model (MuTSPad paper, §5.5).

Individual ablation: for each unit k of ``h_lower`` (the lower task's BiLSTM states, h_pos in the
paper), its outgoing weights are set to zero (column k of the lower task's classifier and of its
projection T_lower, which feeds every task above) and every task is scored on its dev set. A
unit's importance for a task is the **maximum drop of a class score** (per-class F1: a POS tag,
a chunk or entity type, a relation for LAS) against the intact model (Figure 2). For the most
important unit of each task, the words of the dev set that activate it most (Table 4).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from seqtransfer.analysis.figures import new_figure, save_figure
from seqtransfer.corpora.task_data import TaskData, load_task_data
from seqtransfer.data.batching import evaluation_batches
from seqtransfer.data.metrics import evaluate
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.multitask import HierarchicalMultiTask, TaskView
from seqtransfer.rundir import load_run
from seqtransfer.training.inference import predict_labels
from seqtransfer.workflows.multitask import data_config_of

if TYPE_CHECKING:  # annotations only: matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure

Log = Callable[[str], None]


def class_scores(scores: dict, min_support: int = 1) -> dict[str, float]:
    """Per-class F1 of the classes with at least ``min_support`` gold tokens (1: every class present,
    as the paper; more keeps a class of one or two tokens from deciding a unit's drop on a small split)."""
    return {name: values["f1"] for name, values in scores["per_class"].items() if values["gold_count"] >= max(min_support, 1)}


def max_drop(before: dict[str, float], after: dict[str, float]) -> tuple[float, str]:
    """(largest fall of a class score, that class)."""
    drop, name = max((before[name] - after.get(name, 0.0), name) for name in before)
    return drop, name


def outgoing_weights(model: HierarchicalMultiTask, task: str) -> list[torch.Tensor]:
    """Weight matrices whose column k reads unit k of ``task``'s states: its classifier (tagging) and its projection."""
    branch = model.branches[task]
    weights = [model.projections[task].weight] if task in model.projections else []
    if model.kinds[task] == "tagging":
        weights.append(branch.classifier.weight)
    return weights


def load_evaluation(run, split: str, max_sentences: int | None, data_dir: str | None) -> dict[str, TaskData]:
    tasks = {}
    for task in run.model.order:
        data_config = data_config_of(run.config, run.config.multitask.data[task], task)
        data = load_task_data(replace(data_config, data_dir=data_dir or data_config.data_dir), ("train", split))
        if split not in data.splits:
            raise SeqTransferError(f"task {task}'s data has no {split} split", hint="pass --split dev or test")
        data.splits = {split: data.splits[split][:max_sentences] if max_sentences else data.splits[split]}
        tasks[task] = data
    return tasks


def load_multitask_run(run_directory: str | Path, lower: str | None):
    """(the run, its lower task): a multi-task run and one of its tasks (default the lowest), else one line."""
    run = load_run(run_directory)
    model = run.model
    if not isinstance(model, HierarchicalMultiTask):
        raise SeqTransferError("unit ablation needs a multi-task run", path=run_directory, hint="pass a run trained with model.tasks set")
    lower = lower or model.order[0]
    if lower not in model.branches:
        raise SeqTransferError(f"the run has no task '{lower}'", hint=f"its tasks: {', '.join(model.order)}")
    return run, lower


def task_evaluations(model: HierarchicalMultiTask, tasks: dict[str, TaskData], encoded: dict, gold: dict, task_labels: dict, batch_size: int) -> dict[str, dict]:
    """Per task, the scores (per class too) of the model's predictions on its encoded split."""
    return {task: evaluate(gold[task], predict_labels(TaskView(model, task), encoded[task], task_labels[task], batch_size), data.metric) for task, data in tasks.items()}


def task_class_scores(model: HierarchicalMultiTask, tasks: dict[str, TaskData], encoded: dict, gold: dict, task_labels: dict, batch_size: int, min_support: int = 1) -> dict[str, dict[str, float]]:
    """Per task, the per-class F1 of the model's predictions on its encoded split (classes of ``min_support`` gold tokens or more)."""
    return {task: class_scores(scores, min_support) for task, scores in task_evaluations(model, tasks, encoded, gold, task_labels, batch_size).items()}


def checked_units(units: list[int] | None, size: int) -> list[int]:
    """The units to ablate (default all ``size`` of them), each in 0..size - 1, else one line."""
    units = list(range(size)) if units is None else units
    if any(unit < 0 or unit >= size for unit in units):
        raise SeqTransferError(f"units must be in 0..{size - 1}", hint="pass --units 0,5,17 or leave it out for all")
    return units


def scores_without_unit(model: HierarchicalMultiTask, lower: str, unit: int, scores: Callable[[], dict]) -> dict:
    """``scores()`` with ``unit``'s outgoing weights set to zero; the weights are restored after."""
    weights = outgoing_weights(model, lower)
    saved = [weight[:, unit].clone() for weight in weights]
    with torch.no_grad():
        for weight in weights:
            weight[:, unit] = 0.0
    ablated = scores()
    with torch.no_grad():
        for weight, column in zip(weights, saved):
            weight[:, unit] = column
    return ablated


def unit_drops(model: HierarchicalMultiTask, lower: str, units: list[int], baseline: dict, scores: Callable[[], dict], log: Log) -> tuple[dict[str, list[float]], dict[str, list[str]]]:
    """(per task the max class-score drop of ablating each unit, per task the class of that drop)."""
    drops: dict[str, list[float]] = {task: [] for task in baseline}
    classes: dict[str, list[str]] = {task: [] for task in baseline}
    for number, unit in enumerate(units, start=1):
        ablated = scores_without_unit(model, lower, unit, scores)
        for task in baseline:
            drop, name = max_drop(baseline[task], ablated[task])
            drops[task].append(round(drop, 2))
            classes[task].append(name)
        if number % 10 == 0 or number == len(units):
            log(f"ablated {number}/{len(units)} units")
    return drops, classes


def ablate_units(
    run_directory: str | Path,
    lower: str | None = None,
    split: str = "dev",
    units: list[int] | None = None,
    max_sentences: int | None = None,
    top_k: int = 10,
    data_dir: str | None = None,
    log: Log = print,
    min_support: int = 1,
) -> dict:
    """Per task, the max class-score drop of ablating each unit of ``lower`` (default the lowest task)."""
    run, lower = load_multitask_run(run_directory, lower)
    model, batch_size = run.model, run.config.train.evaluation_batch_size
    tasks = load_evaluation(run, split, max_sentences, data_dir)
    encoded = {task: data.encode(split, run.vocabularies, with_targets=False) for task, data in tasks.items()}
    gold = {task: data.gold(split) for task, data in tasks.items()}
    evaluations = task_evaluations(model, tasks, encoded, gold, run.vocabularies.task_labels, batch_size)
    baseline = {task: class_scores(scores, min_support) for task, scores in evaluations.items()}
    support = {task: {name: values["gold_count"] for name, values in scores["per_class"].items()} for task, scores in evaluations.items()}
    if scarce := [task for task, classes in baseline.items() if not classes]:
        raise SeqTransferError(f"no class of task {', '.join(scarce)} has {min_support} gold tokens in the {split} split", hint="lower --min-support (or score on more sentences)")
    scores = functools.partial(task_class_scores, model, tasks, encoded, gold, run.vocabularies.task_labels, batch_size, min_support)
    units = checked_units(units, model.branches[lower].output_size)
    drops, classes = unit_drops(model, lower, units, baseline, scores, log)
    most = {task: units[int(np.argmax(values))] for task, values in drops.items()}
    words, negative = top_words(model, lower, tasks[lower], encoded[lower], sorted(set(most.values())), top_k, batch_size)
    return {
        "run": str(run_directory),
        "lower_task": lower,
        "split": split,
        "units": units,
        "max_sentences": max_sentences,
        "min_support": min_support,
        "drops": drops,
        "classes": classes,
        "most_important": {
            task: {
                "unit": unit,
                "drop": drops[task][units.index(unit)],
                "class": classes[task][units.index(unit)],
                "support": support[task].get(classes[task][units.index(unit)], 0),  # the class's gold tokens in the split
                "top_words": words[unit],
                "negative_words": negative[unit],
            }
            for task, unit in most.items()
        },
    }


def top_words(model: HierarchicalMultiTask, lower: str, data: TaskData, encoded, units: list[int], top_k: int, batch_size: int) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    """The ``top_k`` distinct words of the split that fire each unit most positively (highest
    activation) and most negatively (lowest): the paper's Table 4 lists both (red and blue)."""
    highest: dict[int, dict[str, float]] = {unit: {} for unit in units}
    lowest: dict[int, dict[str, float]] = {unit: {} for unit in units}
    tokens = data.tokens(next(iter(data.splits)))
    model.eval()
    with torch.inference_mode():
        for batch in evaluation_batches(encoded, batch_size):
            states = model.features(batch, lower)[:, :, units].numpy()  # (B, T, U)
            for row, sentence_index in enumerate(batch.indices):
                for position, word in enumerate(tokens[sentence_index]):
                    for column, unit in enumerate(units):
                        value = float(states[row, position, column])
                        highest[unit][word] = max(value, highest[unit].get(word, -np.inf))
                        lowest[unit][word] = min(value, lowest[unit].get(word, np.inf))
    positive = {unit: [word for word, _ in sorted(values.items(), key=lambda item: -item[1])[:top_k]] for unit, values in highest.items()}
    negative = {unit: [word for word, _ in sorted(values.items(), key=lambda item: item[1])[:top_k]] for unit, values in lowest.items()}
    return positive, negative


def draw_drops(result: dict, path: Path) -> None:
    """Figure 2 as ``path`` .png and .svg."""
    save_figure(drops_figure(result), path.with_suffix(""))


def drops_figure(result: dict) -> Figure:
    """Figure 2: tasks x units, colour = max class-score drop."""
    tasks = list(result["drops"])
    matrix = np.array([result["drops"][task] for task in tasks])
    figure = new_figure(max(6, len(result["units"]) / 12), 0.6 * len(tasks) + 1.2)
    axis = figure.subplots()
    image = axis.imshow(matrix, aspect="auto", cmap="Blues", interpolation="nearest")
    axis.set_yticks(range(len(tasks)), tasks)
    axis.set_xlabel(f"unit of h_{result['lower_task']}")
    axis.set_title(f"max class-score drop when ablating one unit of h_{result['lower_task']} ({result['split']})")
    figure.colorbar(image, ax=axis, label="drop (F1 points)")
    figure.tight_layout()
    return figure


def markdown(result: dict) -> str:
    """Table 4: the most important unit of h_lower per task and the words that activate it most."""
    lines = [
        f"Most important units of h_{result['lower_task']} ({result['split']}, {len(result['units'])} units ablated one at a time)",
        "",
        "| Task | unit | max class drop | class (gold tokens) | top words (positive) | top words (negative) |",
        "|:---|---:|---:|:---|:---|:---|",
    ]
    for task, item in result["most_important"].items():  # results written before 2026-11-30 hold no support nor negative words
        negative, support = ", ".join(item.get("negative_words", ["–"])), item.get("support", "–")
        lines.append(f"| {task} | {item['unit']} | {item['drop']:.2f} | {item['class']} ({support}) | {', '.join(item['top_words'])} | {negative} |")
    return "\n".join(lines) + "\n"
