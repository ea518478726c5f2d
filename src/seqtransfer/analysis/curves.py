"""Score against target training-set size for several methods (PretRand paper §7.2.5, Figure 13).

Each run directory gives one point: its method (``metrics.json`` ``scheme``), its training-set
size in sentences and its score (accuracy, or F1 for span metrics) on a split. The size is the
count ``train`` logged ("N sentences"); without a log it is ``data.max_train_sentences`` of
``config.yaml`` (the override the experiment runner uses to subsample the target training set).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from seqtransfer.analysis.negative_transfer import compare_runs
from seqtransfer.data.metrics import get_metric
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_json

_LOGGED_SIZE = re.compile(r"^training \S+ on \S+: (\d+) sentences", re.MULTILINE)


@dataclass
class CurvePoint:
    """One run: method, training sentences, score (percent); its dataset and seed pair it with others."""

    method: str
    size: int
    score: float
    run: str
    dataset: str = ""
    seed: int = 0


def training_size(run_directory: Path) -> int:
    """Training sentences of a run: from its log, else from ``data.max_train_sentences``."""
    log = run_directory / "log.txt"
    found = _LOGGED_SIZE.findall(log.read_text(encoding="utf-8")) if log.is_file() else []
    if found:
        return int(found[-1])
    config = yaml.safe_load((run_directory / "config.yaml").read_text(encoding="utf-8")) or {}
    size = (config.get("data") or {}).get("max_train_sentences")
    if size is None:
        raise SeqTransferError("cannot tell this run's training-set size (no log.txt, no data.max_train_sentences)", path=run_directory)
    return int(size)


def curve_point(run_directory: str | Path, split: str = "dev", method: str | None = None) -> CurvePoint:
    """The (method, size, score) point of one finished run; the method is ``method`` (a grid record's
    name) or the run's scheme."""
    run_directory = Path(run_directory)
    metrics_path = run_directory / "metrics.json"
    if not metrics_path.is_file():
        raise SeqTransferError("not a finished run (no metrics.json)", path=run_directory, hint="pass run directories written by `seqtransfer train/transfer`")
    metrics = read_json(metrics_path)
    if split not in metrics:
        raise SeqTransferError(f"the run has no {split} scores", path=metrics_path, hint="use --split dev or test")
    score_name = get_metric(metrics.get("metric", "accuracy")).main
    config = yaml.safe_load((run_directory / "config.yaml").read_text(encoding="utf-8")) or {} if (run_directory / "config.yaml").is_file() else {}
    seed = int(((config.get("train") or {}).get("seed")) or 0)
    return CurvePoint(method or str(metrics.get("scheme", "?")), training_size(run_directory), float(metrics[split][score_name]), str(run_directory), str(metrics.get("dataset", "")), seed)


def expand_runs(paths: list[str | Path]) -> list[tuple[Path, str | None]]:
    """(run directory, method name or None) pairs, with an experiment's records folder
    (``RESULTS/records/NAME``) replaced by the run directories of its method records, named by
    their grid methods (its source runs are left out); a run given directly is named by its scheme."""
    runs = []
    for path in map(Path, paths):
        records = sorted(path.glob("*.json")) if path.is_dir() and not (path / "metrics.json").exists() else []
        if not records:
            runs.append((path, None))
            continue
        for record_path in records:
            record = read_json(record_path)
            if record.get("method") and "run_directory" in record and record.get("selected_setting") is None:  # the file's own settings (a cell at a searched one sits beside it)
                runs.append((Path(record["run_directory"]), str(record["method"])))
    return runs


def curve_points(paths: list[str | Path], split: str = "dev") -> list[CurvePoint]:
    """One point per finished run (records folders expanded, see :func:`expand_runs`)."""
    return [curve_point(directory, split, method) for directory, method in expand_runs(paths)]


def sample_std(values: np.ndarray) -> float:
    """The sample standard deviation over seeds (ddof 1, as every other ± of the reports); 0 for one seed."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def mean_curves(points: list[CurvePoint]) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """method -> (sizes, mean scores, standard deviations), sizes increasing (seeds averaged)."""
    grouped: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for point in points:
        grouped[point.method][point.size].append(point.score)
    curves = {}
    for method, by_size in grouped.items():
        sizes = np.array(sorted(by_size))
        scores = [np.asarray(by_size[size]) for size in sizes]
        curves[method] = (sizes, np.array([values.mean() for values in scores]), np.array([sample_std(values) for values in scores]))
    return curves


def transfer_by_size(points: list[CurvePoint], reference: str, split: str = "dev") -> list[dict]:
    """PT, NT and gain of every other method against ``reference`` at each (dataset, size), pairing
    the runs of one seed (same subset of training sentences), then averaged over the seeds."""
    by_key = {(point.dataset, point.size, point.seed, point.method): point for point in points}
    rows: dict[tuple[str, int, str], list] = defaultdict(list)
    for (dataset, size, seed, method), point in sorted(by_key.items()):
        partner = by_key.get((dataset, size, seed, reference))
        if method == reference or partner is None:
            continue
        counts = compare_runs(partner.run, point.run, split).overall
        rows[dataset, size, method].append((counts.positive_transfer, counts.negative_transfer, counts.gain))
    result = []
    for (dataset, size, method), values in sorted(rows.items()):
        array = np.array(values)
        result.append(
            {
                "dataset": dataset,
                "size": size,
                "method": method,
                "reference": reference,
                "seeds": len(values),
                "positive_transfer": float(array[:, 0].mean()),
                "negative_transfer": float(array[:, 1].mean()),
                "gain": float(array[:, 2].mean()),
                "positive_transfer_std": sample_std(array[:, 0]),
                "negative_transfer_std": sample_std(array[:, 1]),
                "gain_std": sample_std(array[:, 2]),
            }
        )
    return result


def transfer_markdown(rows: list[dict]) -> str:
    """One row per (dataset, size, method): PT, NT and gain, mean ± sample std over the seeds."""
    lines = ["| dataset | training sentences | method | vs | seeds | PT % | NT % | gain % |", "|:---|---:|:---|:---|---:|---:|---:|---:|"]
    lines += [
        f"| {row['dataset']} | {row['size']} | {row['method']} | {row['reference']} | {row['seeds']} | {row['positive_transfer']:.2f} ± {row['positive_transfer_std']:.2f} | "
        f"{row['negative_transfer']:.2f} ± {row['negative_transfer_std']:.2f} | {row['gain']:+.2f} ± {row['gain_std']:.2f} |"
        for row in rows
    ]
    return "\n".join(lines) + "\n"
