"""The results store: run directories shared by all experiments, and per-experiment records.

    ROOT/runs/<run id>/                      a run directory (config.yaml, model.safetensors, ...)
    ROOT/sources/<source id>/                source runs, shared by every experiment that needs them
    ROOT/records/<experiment>/<cell id>.json what the reports read: one record per grid cell (and searched setting)

A run id is a readable prefix (target, scheme) plus a hash of the run's settings; a run is found by
its hash whatever the prefix, so the same run is never trained
twice (Table 2's scratch runs are Table 4's) and a grid interrupted at any point (even by
kill -9) resumes where it stopped: a run is finished once its metrics.json exists.

A record holds: experiment, method, target, seed, dataset, task, metric, run_directory,
dev and test (the main score: accuracy or F1), parameters (count), seconds.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from seqtransfer.files import read_json, write_json


def content_id(values: dict, prefix: str = "") -> str:
    """A short stable id for a configuration dict."""
    digest = hashlib.sha256(json.dumps(values, sort_keys=True).encode("utf-8")).hexdigest()[:12]
    return f"{prefix}{digest}"


def slug(name: str) -> str:
    """A target name as a folder-name prefix: "CoNLL-2003 (CRF)" -> "CoNLL-2003-CRF"."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-")


def digest_of(run_id: str) -> str:
    """The settings' digest that ends a run id ("TweeBank-tri_training-0123456789ab" -> "0123456789ab")."""
    return run_id.rpartition("-")[2]


class ResultsStore:
    """Finished runs of every experiment under one root folder."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def run_directory(self, run_id: str) -> Path:
        return self.root / "runs" / run_id

    def run_id(self, readable_prefix: str, digest: str) -> str:
        """``<prefix><digest>``, or the name of a run already stored with that digest under another
        prefix (the same settings reached through a differently named target are the same run)."""
        existing = sorted(path.name for path in (self.root / "runs").glob(f"*-{digest}"))
        return existing[0] if existing else f"{readable_prefix}{digest}"

    def source_directory(self, source_id: str) -> Path:
        return self.root / "sources" / source_id

    def record_path(self, record: dict) -> Path:
        """One record per grid cell and setting: a cell run at a searched setting (``experiment run
        --selected``) is kept beside the same cell at the experiment file's own settings, not over it."""
        cell = {key: record.get(key) for key in ("method", "target", "seed", "source")}
        if record.get("selected_setting") is not None:
            cell["selected_setting"] = record["selected_setting"]
        cell = content_id(cell)
        return self.root / "records" / record["experiment"] / f"{cell}.json"

    def has_record(self, record: dict) -> bool:
        return self.record_path(record).is_file()

    def save_record(self, record: dict) -> None:
        write_json(self.record_path(record), record)

    def records(self, experiment: str) -> list[dict]:
        """Every finished record of one experiment, in a stable order."""
        paths = sorted((self.root / "records" / experiment).glob("*.json"))
        return sorted((read_json(path) for path in paths), key=lambda record: (str(record["method"]), str(record["target"]), record["seed"], str(record.get("source"))))
