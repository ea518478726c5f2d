"""The records of finished runs: a grid cell's scores, size and cost read from its run directory,
with the scores by a target's other metrics and on another dataset's test split (``test_on``).

:mod:`~seqtransfer.experiments.runner` saves them to the results store once a run finishes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from seqtransfer import predictor, rundir
from seqtransfer.analysis.layer_mix import saved_mix
from seqtransfer.analysis.predictions import read_predictions, read_scores
from seqtransfer.config import DataConfig
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.metrics import evaluate, get_metric
from seqtransfer.experiments.evidence import evidence_of
from seqtransfer.experiments.store import slug
from seqtransfer.files import read_json, write_json
from seqtransfer.run_members import run_fingerprint
from seqtransfer.training.inference import score_predictions
from seqtransfer.training.overlap import warn_of_leaks
from seqtransfer.workflows.ensemble import ensemble_predict

if TYPE_CHECKING:
    from seqtransfer.experiments.grid import RunTask


def finish_records(task: RunTask, directory: Path, score: bool = True) -> list[dict]:
    """The grid cells' records: one, or one per target (task) of a multi-task run (``score``: see :func:`finish_record`)."""
    if "targets" not in task.record:
        return [finish_record(task, directory, score)]
    metrics = read_json(directory / rundir.METRICS)
    records = []
    for target in task.record["targets"]:
        scores = metrics["tasks"][target]
        predictions = directory / "predictions" / target
        record = {key: value for key, value in task.record.items() if key not in ("targets", "also")}
        if target in task.record.get("also", {}):
            record["also"] = task.record["also"][target]
            record["other_scores"] = other_scores(predictions, predictions, record["also"])
        records.append(
            {
                **record,
                "target": target,
                **run_fields(directory, metrics),
                **scored_fields(scores),
                "best_epoch": scores.get("best_epoch"),
                "multitask": True,
                "predictions": str(predictions),
                **with_evidence(predictions, scores["metric"]),
            }
        )
    return records


def with_evidence(folder: Path, metric: str) -> dict:
    """{"evidence": ...} of the test predictions in ``folder`` (a kept record's significance tests), or {}."""
    evidence = evidence_of(folder, metric)
    return {"evidence": evidence} if evidence else {}


def network_parameters(directory: Path, metrics: dict | None = None) -> int:
    """A model's size for the reports: its weights without the word and character tables, plus the
    frozen encoder its features come from (feature extraction), which it needs as much
    (``metrics``: the run's, when already read)."""
    if metrics is None:
        metrics = read_json(directory / rundir.METRICS) if (directory / rundir.METRICS).is_file() else {}
    if "network_parameters" in metrics:  # an ensemble's, counted from its members when it was built
        return metrics["network_parameters"]
    members = [Path(member) for member in metrics.get("members", [])]
    if members:  # an ensemble built before it counted them: its members' folders as they are now, and the frozen encoder they share once
        return sum(rundir.parameters_without_embeddings(member) for member in members) + metrics.get("frozen_encoder_parameters", 0)
    return rundir.parameters_without_embeddings(directory) + metrics.get("frozen_encoder_parameters", 0)


def cost_of(metrics: dict) -> dict:
    """What a run cost beyond its time (trainable parameters, peak memory), and which instances of its
    source and of its pretrained encoder it read (those the metrics hold)."""
    keys = ("trainable_parameters", "peak_rss_megabytes", "gpu_peak_megabytes", "source_weights", "encoder_weights")
    return {key: metrics[key] for key in keys if metrics.get(key) is not None}


def run_fields(directory: Path, metrics: dict) -> dict:
    """What every record of a finished run holds of the run itself: where it is, its size and its cost."""
    return {
        "network_parameters": network_parameters(directory, metrics),
        "run_directory": str(directory),
        "parameters": metrics["parameters"],
        "seconds": metrics["seconds"],
        "device": metrics.get("device", "cpu"),
        **cost_of(metrics),
        **layer_mix_of(directory),
    }


def layer_mix_of(directory: Path) -> dict:
    """{"layer_mix": {encoder, mode, weights, gamma}} of a run that mixes an encoder's layers (its row
    of ``analyze layers``, kept in the record so that the figure outlives the run's folder), or {}."""
    if not (directory / rundir.WEIGHTS).is_file() or not (directory / rundir.CONFIG).is_file():  # an ensemble, a folder of self-labelled models
        return {}
    mix = saved_mix(directory)
    return {"layer_mix": mix} if mix else {}


def scored_fields(scores: dict) -> dict:
    """A record's data, metric and main dev and test scores, from ``scores``: a run's metrics, or one task's of a multi-task run."""
    main = get_metric(scores["metric"]).main
    return {"dataset": scores["dataset"], "task": scores["task"], "metric": scores["metric"], "dev": scores["dev"][main], "test": scores.get("test", {}).get(main)}


def finish_record(task: RunTask, directory: Path, score: bool = True) -> dict:
    """The grid cell's record, from the finished run's metrics (without ``score``, a test on another
    dataset not cached yet is left None: nothing is loaded or predicted)."""
    metrics = read_json(directory / rundir.METRICS)
    if "tasks" in metrics:  # a multi-task source run: its record holds the mean dev score
        best_dev = max(record["dev"] for record in metrics["history"])
        return {**task.record, **run_fields(directory, metrics), "dataset": metrics["dataset"], "task": metrics["task"], "metric": metrics["metric"], "dev": best_dev, "test": None}
    record = {**task.record, **run_fields(directory, metrics), **scored_fields(metrics)}
    # did early stopping read labels of the data the test score is on? (not for a source model as it is, nor for a test set elsewhere)
    record["target_dev_labels"] = metrics.get("scheme") != "source_only" and not task.record.get("test_on")
    if task.record.get("test_on"):
        record["test"], record["predictions"] = score_elsewhere(directory, task.record["test_on"], task.config["data"]["data_dir"], score)
    if task.record.get("also"):
        record["other_scores"] = other_scores(directory / "predictions", Path(record.get("predictions", directory / "predictions")), task.record["also"])
    if task.record.get("method") and record["test"] is not None:
        record.update(with_evidence(Path(record.get("predictions", directory / "predictions")), metrics["metric"]))
    return record


def other_scores(dev_folder: Path, test_folder: Path, metrics: list[str]) -> dict[str, dict[str, float]]:
    """metric -> split -> main score of the run's dev and test predictions (``token gold predicted``
    files, or a regression's ``gold predicted text`` lines) by other metrics than its own: a
    target's ``also`` (MuTSPad's chunk F1 beside accuracy, STS-B's Spearman beside Pearson)."""
    scores: dict[str, dict[str, float]] = {}
    for split, folder in (("dev", dev_folder), ("test", test_folder)):
        if (folder / f"{split}.conll").is_file():
            predictions = read_predictions(folder / f"{split}.conll")
            gold, predicted = predictions.gold, predictions.predicted
        elif (folder / f"{split}.tsv").is_file():  # a regression writes only gold TAB predicted TAB text per sentence
            gold_scores, predicted_scores = read_scores(folder / f"{split}.tsv")
            gold, predicted = [[value] for value in gold_scores], [[value] for value in predicted_scores]
        else:
            continue
        for metric in metrics:
            scores.setdefault(metric, {})[split] = evaluate(gold, predicted, metric)[get_metric(metric).main]
    return scores


def predict_elsewhere(directory: Path, tokens: list[list[str]]) -> list[list[str]]:
    """Labels of a run (one, the models of a self-labelling run together, or an ensemble's members averaged) for ``tokens``."""
    metrics = read_json(directory / rundir.METRICS)
    if metrics.get("scheme") == "ensemble":
        members = rundir.member_directories(directory) if rundir.is_ensemble(directory) else metrics["members"]  # cells older than members.json: paths from the working folder
        return ensemble_predict([rundir.load_run(member) for member in members], tokens)
    return predictor.load(directory, device="cpu").predict_raw(tokens, cache_features=True)  # a dataset's split: scored again by other runs


def score_elsewhere(directory: Path, entry: str, data_dir: str | None, score: bool = True) -> tuple[float | None, str]:
    """The run's main score on the test split of ``DATASET[:TASK]`` (cached in the run directory,
    predictions in ``test-on-DATASET/test.conll``): a model trained on one dataset, tested on another
    (not cached and not ``score``: None). A cache of the run the folder held before (trained again
    since) is not read: its score is made again."""
    folder = directory / f"test-on-{slug(entry)}"
    cached = folder / "score.json"
    if cached.is_file() and cache_is_of_this_run(cached, directory):
        return read_json(cached)["score"], str(folder)
    if not score:
        return None, str(folder)
    name, _, task = entry.partition(":")
    for configured in rundir.member_directories(directory):  # a folder of models (self-labelling, an ensemble): each model's settings
        if (configured / rundir.CONFIG).is_file():
            warn_of_leaks(rundir.read_run_config(configured), name, "test")
    data = load_task_data(DataConfig(dataset=name, task=task or None, data_dir=data_dir), ("test",))
    score = score_predictions(data, "test", predict_elsewhere(directory, data.tokens("test")), folder)[get_metric(data.metric).main]
    write_json(cached, {"test_on": entry, "score": score, "run": run_digest(directory)})
    return score, str(folder)


def run_digest(directory: Path) -> str:
    """A digest of the run's metrics file: another training in the same folder writes another one (its seconds, its history)."""
    return run_fingerprint(directory)


def cache_is_of_this_run(cached: Path, directory: Path) -> bool:
    """Whether a ``score.json`` was made from the run ``directory`` holds now: by the digest it names,
    or, for a cache written before caches named one, by being newer than the run's metrics."""
    recorded = read_json(cached).get("run")
    if recorded is not None:
        return recorded == run_digest(directory)
    return cached.stat().st_mtime >= (directory / rundir.METRICS).stat().st_mtime
