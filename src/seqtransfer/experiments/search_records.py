"""Kept search trials: a search's finished and early-stopped trials in one small JSON-lines file to commit.

A search's trials are runs of the results store, which is never committed: a search of 8
trials x 1-3 h, cut by the end of a session on a fresh machine, would start again every time.
With ``experiment search FILE --records FILE.search.jsonl`` each trial is kept the moment it
ends (a Tune callback in the driver, the file's only writer): its setting, its dev score per
epoch, its test score if it finished, its cost, and the weights of the source run and pretrained
encoder it read. Run again, a trial whose settings a kept trial had (the digest of its run id
matches) is read back from the file instead of trained, unless it read another source or
encoder than the ones here now (trained again to other weights); a kept early-stopped trial reports
its kept epochs and, where the scheduler now lets it go on (another order of arrival at a rung, a
larger budget), trains again from its start. One line per search holds its summary (``"kind": "summary"``), which ``seqtransfer report
FILE --search-records FILE.search.jsonl`` shows in place of the store's.
"""

from __future__ import annotations

import json
from pathlib import Path

from seqtransfer import rundir
from seqtransfer.data.metrics import get_metric
from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.kept import at_selection, made_with_other_weights
from seqtransfer.experiments.store import digest_of
from seqtransfer.files import atomic_write, read_json, read_json_lines

WEIGHT_KEYS = ("source_weights", "encoder_weights")
HINT = "each line is a trial or a summary written by `experiment search --records`"


def read_search_records(path: str | Path, experiment: str | None = None) -> list[dict]:
    """The lines of a kept search file (of one experiment); a missing file holds none."""
    lines = []
    for number, record in read_json_lines(path, HINT):
        if not isinstance(record, dict) or record.get("kind") not in ("trial", "summary") or "experiment" not in record:
            message = "a line needs 'kind' (trial or summary) and 'experiment' (a grid's records file? a search keeps its trials in a file of its own)"
            raise SeqTransferError(message, path=path, line=number, hint=HINT)
        if experiment is None or record["experiment"] == experiment:
            lines.append(record)
    return lines


def line_key(record: dict) -> tuple:
    """What makes a line one entry: a trial is its search's run digest, a summary its search."""
    return (record["kind"], record["experiment"], str(record.get("method")), str(record.get("target")), record.get("digest", ""))


def keep_lines(path: str | Path, new: list[dict]) -> None:
    """Add or replace lines of a kept search file (atomically, sorted): the others stay."""
    entries = {line_key(record): record for record in read_search_records(path)}
    entries.update({line_key(record): record for record in new})
    with atomic_write(path) as handle:
        for key in sorted(entries):
            handle.write(json.dumps(entries[key], sort_keys=True, ensure_ascii=False, default=float) + "\n")


def kept_trials(records: list[dict], method: str, target: str, weights: dict) -> dict[str, dict]:
    """The kept trials of one search that may stand for a trial now, by run digest: those that read
    the source and encoder weights there are now (or that name none)."""
    usable = {}
    for record in records:
        if record["kind"] != "trial" or record.get("method") != method or record.get("target") != target:
            continue
        if any(made_with_other_weights(record.get(key), weights.get(key)) for key in WEIGHT_KEYS):
            continue
        usable[record["digest"]] = record
    return usable


def run_epochs(history: list[dict]) -> list[dict]:
    """A run's dev history as a search counts it, ``{"epoch": n, "dev": score}``, n the run's epochs
    so far across its phases (a scheme of several phases, chain-thaw's, numbers each phase's from 1)."""
    return [{"epoch": step, "dev": float(entry["dev"])} for step, entry in enumerate(history, start=1)]


def trial_record(experiment: str, method: str, target: str, run_id: str, setting: dict, history: list[dict], directory: Path) -> dict:
    """The kept line of one trial that ended: its run's test score and cost where it finished, and
    then the run's own dev history (a finished run read back and stopped by the scheduler at a rung
    reported only its first epochs)."""
    metrics = read_json(directory / rundir.METRICS) if (directory / rundir.METRICS).is_file() else None
    history = (metrics or {}).get("history") or history
    record = {
        "kind": "trial",
        "experiment": experiment,
        "method": method,
        "target": target,
        "digest": digest_of(run_id),
        "run_id": run_id,
        "setting": setting,
        "history": run_epochs(history),
        "status": "finished" if metrics else "stopped",
    }
    if metrics:
        record["test"] = metrics.get("test", {}).get(get_metric(metrics["metric"]).main)
        record["seconds"] = metrics.get("seconds")
        record.update({key: metrics[key] for key in WEIGHT_KEYS if metrics.get(key)})
    return record


def summary_record(summary: dict) -> dict:
    """The kept line of a search's summary."""
    return {"kind": "summary", **json.loads(json.dumps(summary, default=float))}


def kept_summaries(path: str | Path, experiment: str) -> list[dict]:
    """The search summaries a kept file holds for an experiment (for its report)."""
    return [{key: value for key, value in record.items() if key != "kind"} for record in read_search_records(path, experiment) if record["kind"] == "summary"]


def shown_setting(setting: dict) -> str:
    """A trial's setting on one line (``key=value, ...``, keys sorted as the kept lines hold them, so
    that a page reads the same from a search's own folder or from its kept file alone), floats to
    4 significant digits."""
    return ", ".join(f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}" for key, value in sorted(setting.items()))


def selected_settings(path: str | Path, experiment: str) -> dict[tuple[str, str], dict]:
    """(method, target) -> the setting each kept search of an experiment selected on dev, for
    ``experiment run --selected``: the grid's cells at each method's own searched setting."""
    if not Path(path).is_file():
        raise SeqTransferError("no such search records file", path=path, hint="give --selected the --records file of `seqtransfer experiment search` (e.g. NAME.search.jsonl)")
    settings = {(summary["method"], summary["target"]): summary["selected"]["setting"] for summary in kept_summaries(path, experiment) if summary.get("selected")}
    if not settings:
        raise SeqTransferError(f"no search of '{experiment}' has a selected setting kept here", path=path, hint=f"run `seqtransfer experiment search FILE --records {path}` until a search ends")
    return settings


def selected_epoch_caps(path: str | Path, experiment: str) -> dict[tuple[str, str], int]:
    """(method, target) -> the epoch cap of the search that selected its setting (its trials' cap; None: none), where its summary kept it."""
    return {(summary["method"], summary["target"]): summary["max_epochs"] for summary in kept_summaries(path, experiment) if summary.get("selected") and "max_epochs" in summary}


def kept_at_selection(kept: list[dict], selected: dict[tuple[str, str], dict], path: str | Path, log=print) -> list[dict]:
    """A ``--records`` file's records at the settings this command runs its cells (``kept.at_selection``).

    A file holding a selected cell at the experiment file's own settings (and none at a searched
    one) is refused under ``--selected``, and a file of searched cells without it, in one line: the
    grid would train their cells again and replace them. In a file of searched cells, a cell kept
    at another setting than the one selected now (its search went on since, or it ran at the file's
    own setting before its search ended) is dropped, to run again, and the command says which."""
    searched = [record for record in kept if record.get("selected_setting") is not None]
    if searched and not selected:
        record = searched[0]
        raise SeqTransferError(
            f"the records hold {record.get('method')} / {record.get('target')} at a searched setting, which this command would train again and replace",
            path=path,
            hint="run it with the same --selected FILE",
        )
    clash = next((record for record in kept if (record.get("method"), record.get("target")) in selected), None) if not searched else None
    if clash:
        raise SeqTransferError(
            f"the records hold {clash['method']} / {clash['target']} at the experiment file's own settings, which this command would train again and replace",
            path=path,
            hint="keep the cells at searched settings in a records file of their own (e.g. NAME.selected.records.jsonl)",
        )
    current = at_selection(kept, selected)
    for record in kept:
        if record not in current:
            log(f"{record.get('method')} / {record.get('target')} / seed {record.get('seed')}: kept at other settings than this command runs it at: its record is dropped, to run again")
    return current


def trained_here(history: list[dict], kept_trial: dict | None, run_directory: Path | None = None) -> bool:
    """Whether a trial that ended trained in this search: it was not kept, or it reported epochs
    beyond its kept ones, or it was kept unfinished and its run has finished here since (the grid's
    cell at the selected setting is the same run). A kept trial only read back is not written again:
    stopped by the scheduler at an earlier rung than before, it would lose its later epochs, its test
    score and its finished status (its run is not in this machine's store)."""
    if kept_trial is None or history[-1]["epoch"] > len(run_epochs(kept_trial["history"])):
        return True
    return kept_trial.get("status") != "finished" and run_directory is not None and (run_directory / rundir.METRICS).is_file()


def trial_keeper(path: str | Path, experiment: str, method: str, target: str, store, kept: dict[str, dict] | None = None):
    """A Ray Tune callback that keeps each trial of one search in ``path`` as it ends (finished,
    or stopped by the scheduler; a failed trial is not kept: it runs again). ``kept``: the kept
    trials read back in this search, by run digest; they are written again only if they trained."""
    from ray.tune import Callback

    class TrialKeeper(Callback):
        def __init__(self) -> None:
            self.histories: dict[str, list[dict]] = {}

        def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
            self.histories.setdefault(trial.trial_id, []).append({"epoch": result["epoch"], "dev": result["dev"], "run_id": result["run_id"]})

        def on_trial_complete(self, iteration, trials, trial, **info) -> None:
            history = self.histories.get(trial.trial_id)
            if not history:
                return
            run_id = history[-1]["run_id"]
            if not trained_here(history, (kept or {}).get(digest_of(run_id)), store.run_directory(run_id)):
                return
            setting = {key: value.item() if hasattr(value, "item") else value for key, value in trial.config.items()}
            keep_lines(path, [trial_record(experiment, method, target, run_id, setting, history, store.run_directory(run_id))])

    return TrialKeeper()
