"""Hyper-parameter search on Ray Tune (To-tune paper, Appendix A: settings chosen on dev).

An experiment file may hold, per method and target (``"*"``: every target), a search::

    search:
      From-scratch200:
        WNUT:
          algorithm: asha            # grid | random | asha (random sampling, ASHA early stopping)
          trials: 20                 # the budget (default 20; a grid runs each of its points once)
          max_epochs: 30             # optional: caps train.max_epochs of every trial
          space:
            train.learning_rate: {loguniform: [0.005, 0.05]}
            model.dropout: [0.3, 0.5]            # a list: choose among these
            model.hidden: {choice: [200, 400]}
            train.batch_size: {randint: [8, 33]} # upper bound excluded

``seqtransfer experiment search FILE`` runs every search of the file on Ray Tune (``--ray local``
or a cluster's address) with no scheduler of its own. Each trial is an ordinary run of the
results store, identified by its settings: a trial with settings already trained (by the grid,
or by an earlier, interrupted search) is read back, an interrupted one resumes from its last
epoch, and random draws are seeded, so a search rerun after a crash goes on where it stopped. A
transfer method's source run is trained once, before the trials, and shared by all of them.
Selection reads the dev score only (the best epoch of each trial); the selected trial's
``config.yaml`` is written as ``RESULTS/search/EXPERIMENT/METHOD--TARGET.yaml`` (pass it to
``seqtransfer train --config``), and the summary (every trial's setting, dev score and status)
beside it as ``.json``; ``seqtransfer report`` shows it. With ``--records FILE`` each trial is also kept in a file to
commit as it ends, and read back from it on another machine (``search_records.py``). The search as the file states it, and
its checks, are ``search_spec.py``'s (read when the experiment file is loaded).
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seqtransfer import rundir
from seqtransfer.config import check_values, config_from_dict, dump_config
from seqtransfer.data.metrics import get_metric
from seqtransfer.embeddings.transformer import encoder_fingerprint
from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.backends import RayBackend
from seqtransfer.experiments.grid import identity_of, method_task, source_tasks
from seqtransfer.experiments.runner import execute_task, is_finished
from seqtransfer.experiments.search_progress import trial_progress
from seqtransfer.experiments.search_records import keep_lines, kept_trials, read_search_records, run_epochs, shown_setting, summary_record, trial_keeper
from seqtransfer.experiments.search_spec import SearchSpec, extremes, trial_count
from seqtransfer.experiments.stale_runs import set_stale_run_aside
from seqtransfer.experiments.store import ResultsStore, content_id, digest_of
from seqtransfer.files import read_json, shipped_or_given, write_json, write_text
from seqtransfer.workflows.train import train_tagger

Log = Callable[[str], None]


def tune_space(search: SearchSpec) -> dict:
    """The Ray Tune search space of a spec."""
    from ray import tune

    space = {}
    for key, values in search.space.items():
        if isinstance(values, list) or "choice" in values:
            choices = values if isinstance(values, list) else values["choice"]
            space[key] = tune.grid_search(choices) if search.algorithm == "grid" else tune.choice(choices)
        else:
            ((kind, (low, high)),) = values.items()
            space[key] = {"uniform": tune.uniform, "loguniform": tune.loguniform, "randint": tune.randint}[kind](low, high)
    return space


def trial_config(base: dict, values: dict[str, Any], max_epochs: int | None = None):
    """The run config of one trial: the base config with the trial's values (its epochs capped at the search's ``max_epochs``)."""
    merged = copy.deepcopy(base)
    for key, value in values.items():
        section, name = key.split(".")
        merged[section][name] = value.item() if hasattr(value, "item") else value  # numpy scalars from Tune
    config = check_values(config_from_dict(merged))
    if max_epochs is not None:
        config.train.max_epochs = min(config.train.max_epochs, max_epochs)
    return config


def make_trainable(base: dict, store_root: str, prefix: str, source_id: str | None, max_epochs: int | None, kept: dict[str, dict] | None = None, as_given: dict | None = None):
    """The Tune function trainable: train (or read back) the run of a trial's settings, reporting each epoch's dev score.

    Tune starts each trial in a folder of its own; the trial goes back to the folder the search was
    started from (where it exists on the trial's machine), so that every setting naming a file or
    folder relative to it (``model.encoder=results/lms/...``, a relative ``$SEQTRANSFER_DATA``,
    a vector file) reads as it does in ``experiment run``. A trial of the settings of a kept trial
    (``kept``, by run digest: see :mod:`~seqtransfer.experiments.search_records`) reports the kept
    dev scores, and trains only if it was stopped early and the scheduler now lets it go on.
    A trial's run is named by its settings as the grid's cells are (``as_given``: the base config with
    its paths as the experiment file gives them), so that the name does not depend on where the
    checkout lies and a trial's run is the grid's run of the same settings.
    """
    working_folder = str(Path.cwd().resolve())

    def trainable(values: dict) -> None:
        from ray import tune

        if Path(working_folder).is_dir():
            os.chdir(working_folder)
        config = trial_config(base, values, max_epochs)
        store = ResultsStore(store_root)
        digest = content_id(identity_of(trial_config(as_given or base, values, max_epochs), source_id))
        run_id = store.run_id(prefix, digest)
        directory = store.run_directory(run_id)
        finished = finished_trial(directory, config.model.encoder)
        kept_trial = None if finished else (kept or {}).get(digest)
        history = run_epochs(read_json(directory / rundir.METRICS)["history"] if finished else kept_trial["history"] if kept_trial else [])
        for record in history:
            tune.report({"dev": record["dev"], "epoch": record["epoch"], "run_id": run_id, "read_back": True})
        if finished or (kept_trial and kept_trial["status"] == "finished"):
            return
        # Here only if Tune asks for more (a report blocks until it does): a kept trial stopped early goes on where the
        # scheduler now lets it, trained again from its start (the same seed: the same epochs), its kept epochs not reported twice.
        reported = history[-1]["epoch"] if history else 0
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / "log.txt", "a", encoding="utf-8") as handle:
            report = lambda record: record["step"] > reported and tune.report({"dev": record["dev"], "epoch": record["step"], "run_id": run_id})  # noqa: E731
            train_tagger(config, directory, log=lambda line: print(line, file=handle, flush=True), show_progress=False, epoch_reports=(report,))

    return trainable


def finished_trial(directory: Path, encoder: str | None) -> bool:
    """Whether a trial's run directory holds a finished run to read back: not one trained on the
    encoder its settings name as that folder was before (our own LM pretrained again at the same
    path), which is moved aside so that the trial trains again, as a grid's cell does."""
    set_stale_run_aside(directory, encoder, echo=print)
    return (directory / rundir.METRICS).is_file()


PATH_SETTINGS = (("transfer", "source"), ("data", "train"), ("data", "dev"), ("data", "test"), ("data", "data_dir"), ("data", "label_map"), ("data", "pseudo_train"))


def absolute_paths(config: dict) -> dict:
    """A config dict whose file and folder settings (source run, data files, data root) are absolute."""
    config = copy.deepcopy(config)
    for section, key in PATH_SETTINGS:
        value = config.get(section, {}).get(key)
        if isinstance(value, str) and value and not Path(value).is_absolute():
            config[section][key] = str(shipped_or_given(Path(value)).resolve())
    return config


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


def portable_config(config) -> str:
    """A trial's config as the selected config file: its source run and data files named relative
    to the working folder where they lie below it (``results/sources/...``), so that the file
    serves in another checkout of the same project, not only on the machine that ran the search."""
    here = Path.cwd().resolve()
    for section, key in PATH_SETTINGS:
        value = getattr(getattr(config, section), key)
        if isinstance(value, str) and value and Path(value).is_absolute() and Path(value).resolve().is_relative_to(here):
            setattr(getattr(config, section), key, str(Path(value).resolve().relative_to(here)))
    return dump_config(config)


def run_search(task, search: SearchSpec, store, source_id: str | None, cpus_per_trial: float, log: Log, gpus_per_trial: float = 0.0, records: str | None = None) -> dict:
    """Run one search (a RunTask of the grid as its base) on Ray Tune; returns and writes its summary
    (and, with ``records``, keeps each trial there as it ends, and reads back the trials kept)."""
    from ray import tune

    method, target, experiment = task.record["method"], task.record["target"], task.record["experiment"]
    prefix = re.sub(r"[0-9a-f]{12}$", "", Path(task.directory).name)
    base = absolute_paths(task.config)  # Tune runs each trial in its own working folder
    kept = kept_trials(read_search_records(records, experiment), method, target, weights_read(task)) if records else {}
    trainable = tune.with_resources(
        make_trainable(base, str(Path(store.root).resolve()), prefix, source_id, search.max_epochs, kept, task.config), {"cpu": cpus_per_trial, **({"gpu": gpus_per_trial} if gpus_per_trial else {})}
    )
    tune_config = tune_settings(task, search)
    folder = Path(store.root).resolve() / "search" / experiment
    callbacks = [trial_progress(f"search {method} / {target}", trial_count(search), log)]
    callbacks += [trial_keeper(records, experiment, method, target, store, kept)] if records else []
    run_config = tune.RunConfig(name=f"{slug(method)}--{slug(target)}", storage_path=str(folder / "tune"), verbose=0, callbacks=callbacks)
    log(f"search {method} / {target}: {search.algorithm}, {search.trials} trials, keys {', '.join(search.space)}" + (f"; {len(kept)} kept trials in {records}" if records else ""))
    results = tune.Tuner(trainable, param_space=tune_space(search), tune_config=tune_config, run_config=run_config).fit()
    trials = [trial_row(result, search, store, kept) for result in results]
    summary = search_summary(task, search, trials, folder)
    write_selection(summary, base, search, folder)
    if records:
        keep_lines(records, [summary_record(summary)])
    chosen = summary["selected"]
    log(f"search {method} / {target}: selected {chosen['setting']} (dev {score(chosen['dev'])}, test {score(chosen.get('test'))}) of {len(trials)} trials; config {summary['config']}")
    return summary


def weights_read(task) -> dict:
    """The fingerprints of the source run and pretrained encoder a search's trials read, where they are here."""
    source, encoder = task.source_directory, task.config["model"].get("encoder")
    weights = {"source_weights": rundir.weights_fingerprint(source) if source and (Path(source) / rundir.METRICS).is_file() else None}
    try:
        weights["encoder_weights"] = encoder_fingerprint(encoder) if encoder else None
    except (SeqTransferError, OSError):  # not found here: the trials will say so
        weights["encoder_weights"] = None
    return weights


MOST_PHASES = 64  # more than any scheme trains: chain-thaw's head, layer groups and all


def tune_settings(task, search: SearchSpec):
    """Ray Tune's settings of one search: the best dev score wins; ASHA stops trials at its rungs."""
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search import BasicVariantGenerator

    # max_t past the last epoch: ASHA stops trials at its rungs only, never at the last epoch (the run must finish: score and save)
    searched_epochs = max(extremes(search.space["train.max_epochs"])) if "train.max_epochs" in search.space else task.config["train"]["max_epochs"]
    last_epoch = min(search.max_epochs or searched_epochs, searched_epochs)
    if search.algorithm == "asha" and search.grace_epochs > last_epoch:
        raise SeqTransferError(
            f"search {task.record['method']} / {task.record['target']}: grace_epochs {search.grace_epochs} is more than the {last_epoch} epochs a trial trains: no trial could be stopped early",
            hint=f"set grace_epochs below {last_epoch}, or algorithm: random",
        )
    # a trial counts its epochs across its phases (chain-thaw trains up to last_epoch in each of its phases, one per layer
    # group): max_t is past any count it can reach. Below last_epoch the rungs are those of max_t = last_epoch + 1.
    scheduler = ASHAScheduler(time_attr="epoch", grace_period=search.grace_epochs, max_t=last_epoch * MOST_PHASES + 1) if search.algorithm == "asha" else None
    return tune.TuneConfig(metric="dev", mode="max", num_samples=1 if search.algorithm == "grid" else search.trials, scheduler=scheduler, search_alg=BasicVariantGenerator(random_state=search.seed))


def trial_row(result, search: SearchSpec, store, kept: dict[str, dict] | None = None) -> dict:
    """One trial of a search's summary (a Tune result): its setting, run, status, best dev score,
    epochs trained and, if its run finished (here, or as a kept trial), test score."""
    history = result.metrics_dataframe
    run_id = result.metrics.get("run_id") if result.metrics else None
    directory = store.run_directory(run_id) if run_id else None
    kept_trial = (kept or {}).get(digest_of(run_id)) if run_id else None
    epochs = [(int(epoch), float(dev)) for epoch, dev in zip(history["epoch"], history["dev"])] if history is not None and "dev" in history else []
    if directory and (directory / rundir.METRICS).is_file():
        metrics = read_json(directory / rundir.METRICS)
        finished, test = True, metrics.get("test", {}).get(main_score(metrics))
        epochs = [(entry["epoch"], entry["dev"]) for entry in run_epochs(metrics.get("history", []))] or epochs
    else:
        finished = bool(kept_trial and kept_trial["status"] == "finished")
        test = kept_trial.get("test") if finished else None
        kept_epochs = [(entry["epoch"], entry["dev"]) for entry in run_epochs(kept_trial["history"])] if kept_trial else []
        epochs = kept_epochs if finished or len(kept_epochs) > len(epochs) else epochs
    # a run is described by the most epochs known of it (read back here and stopped at a rung, it reported only its first ones)
    return {
        "setting": {key: result.config[key] for key in search.space},
        "run_id": run_id,
        "status": "finished" if finished else "failed" if result.error else "stopped",
        **({"error": last_line(result.error)} if result.error and not finished else {}),
        "dev": max(dev for _, dev in epochs) if epochs else None,
        "epochs": max(epoch for epoch, _ in epochs) if epochs else 0,
        "test": test,
    }


def last_line(error: BaseException) -> str:
    """The last non-empty line of a trial's error (Ray wraps the trial's own exception in its traceback)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def search_summary(task, search: SearchSpec, trials: list[dict], folder: Path) -> dict:
    """A search's summary: every trial, best dev first, and the finished trial of the best dev score as the selected one."""
    method, target = task.record["method"], task.record["target"]
    chosen = max((trial for trial in trials if trial["status"] == "finished" and trial["dev"] is not None), key=lambda trial: trial["dev"], default=None)
    if chosen is None:
        failed = [trial for trial in trials if trial["status"] == "failed"]
        if failed:
            raise SeqTransferError(
                f"search {method} / {target}: {len(failed)} of {len(trials)} trials failed, the first with: {failed[0]['error']}", hint=f"the trials' error files are under {folder / 'tune'}"
            )
        raise SeqTransferError(f"search {method} / {target}: no trial finished", hint="raise the budget or max_epochs")
    return {
        "experiment": task.record["experiment"],
        "method": method,
        "target": target,
        "algorithm": search.algorithm,
        "budget": search.trials,
        "max_epochs": search.max_epochs,
        "space": search.space,
        "trials": sorted(trials, key=lambda trial: -(trial["dev"] or 0.0)),
        "selected": chosen,
        "config": str(folder / f"{slug(method)}--{slug(target)}.yaml"),
    }


def write_selection(summary: dict, base: dict, search: SearchSpec, folder: Path) -> None:
    """Write the selected trial's config file (see :func:`portable_config`: built from the search's base
    and the trial's setting, so a kept trial whose run is not here has one too) and the summary beside it."""
    method, target, chosen = summary["method"], summary["target"], summary["selected"]
    config_text = portable_config(trial_config(base, chosen["setting"], search.max_epochs))
    write_text(summary["config"], f"# selected by `seqtransfer experiment search` on dev: {method} / {target}, trial {chosen['run_id']}\n{config_text}")
    write_json(folder / f"{slug(method)}--{slug(target)}.json", json.loads(json.dumps(summary, default=float)))


def run_searches(spec, store, data_dir: str | None, only: set[str], address: str, cpus_per_trial: float, log: Log, gpus_per_trial: float = 0.0, records: str | None = None) -> list[dict]:
    """Every search of an experiment file (of the ``only`` methods), seed 1 of the grid as the base;
    each transfer method's source is trained first (in this process) and fixed for every trial."""
    RayBackend(address)  # starts or joins the Ray cluster
    sources = source_tasks(spec, store, data_dir)
    by_directory = {task.directory: task for task in sources.values()}
    summaries = []
    for method, targets in spec.search.items():
        if only and method not in only:
            continue
        for target in spec.targets:
            search = targets.get(target) or targets.get("*")
            allowed = spec.methods[method].targets
            if search is None or (allowed is not None and target not in allowed):
                continue
            task = method_task(spec, store, data_dir, method, target, 1, sources)
            source = by_directory.get(task.source_directory)
            if source is not None and not is_finished(source):
                log(f"training source {source.record['source']} for the search of {method} / {target}")
                execute_task(source, echo=log)
            summaries.append(run_search(task, search, store, source.run_id if source else None, cpus_per_trial, log, gpus_per_trial, records))
    if not summaries:
        raise SeqTransferError(f"{spec.path}: no search to run", hint="add a search: block (method -> target -> space), or check --only / --targets")
    return summaries


def main_score(metrics: dict) -> str:
    return get_metric(metrics["metric"]).main


def stored_summaries(store_root: str | Path, experiment: str) -> list[dict]:
    """The search summaries written for an experiment (for its report)."""
    folder = Path(store_root) / "search" / experiment
    return [read_json(path) for path in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def render_searches(summaries: list[dict]) -> str:
    """The report's section: per search, the trials, the selected setting and its dev and test scores."""
    rows = []
    for summary in summaries:
        chosen = summary["selected"]
        finished = sum(trial["status"] == "finished" for trial in summary["trials"])
        failed = sum(trial["status"] == "failed" for trial in summary["trials"])
        counts = f"{finished} finished" + (f", {failed} failed" if failed else "")
        setting = shown_setting(chosen["setting"])
        rows.append(
            f"| {summary['method']} | {summary['target']} | {summary['algorithm']} | {len(summary['trials'])} ({counts}) | {setting} | "
            f"{score(chosen['dev'])} | {score(chosen.get('test'))} | `{Path(summary['config']).name}` |"
        )
    intro = (
        "Settings chosen on the dev set by `seqtransfer experiment search` (Ray Tune; seed 1 of the grid as the base); test scores are of "
        "the selected trial only. The selected config files lie in the results store's `search/` folder."
    )
    header = "| Method | Target | algorithm | trials | selected setting | dev | test | config |\n|:---|:---|:---|---:|:---|---:|---:|:---|"
    trials = [line for summary in summaries for line in trials_table(summary)]
    return "\n".join(["## Hyper-parameter search", "", intro, "", header, *rows, *trials]) + "\n"


def trials_table(summary: dict) -> list[str]:
    """Every trial of one search, best dev first: setting, how it ended, epochs trained, best dev, test where it finished."""
    lines = ["", f"### {summary['method']} / {summary['target']}: every trial", "", "| setting | ended | epochs | best dev | test |", "|:---|:---|---:|---:|---:|"]
    for trial in summary["trials"]:
        lines.append(f"| {shown_setting(trial['setting'])} | {trial['status']} | {trial['epochs']} | {score(trial['dev'], '')} | {score(trial.get('test'), '')} |")
    return lines


def score(value: float | None, missing: str = "–") -> str:
    """A dev or test score to two decimals (a run without a test set has none)."""
    return f"{value:.2f}" if value is not None else missing
