"""Running an experiment grid (:mod:`~seqtransfer.experiments.grid`): sources first, then methods ×
targets × seeds, then ensembles.

A finished run is skipped, an interrupted one resumes from its last epoch. Runs execute in-process
one after the other, or as Ray tasks on a cluster (``backend=RayBackend(address)``).
"""

from __future__ import annotations

import copy
import fcntl
import time
from collections.abc import Callable
from pathlib import Path

from seqtransfer import rundir
from seqtransfer.config import RunConfig, config_from_dict
from seqtransfer.data.metrics import get_metric
from seqtransfer.data.task_data import load_task_data
from seqtransfer.embeddings.transformer import encoder_fingerprint
from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.grid import PSEUDO_FILE, RunTask, ensemble_tasks, method_tasks, slug, source_tasks
from seqtransfer.experiments.kept import cell_key, merge, run_id_of
from seqtransfer.experiments.spec import ExperimentSpec
from seqtransfer.experiments.stale_runs import set_stale_run_aside, stale_encoder
from seqtransfer.experiments.store import ResultsStore, content_id, digest_of
from seqtransfer.files import read_json, write_json
from seqtransfer.training.inference import score_predictions
from seqtransfer.workflows.ensemble import build_ensemble

Log = Callable[[str], None]


def execute_task(task: RunTask, echo: Log | None = None) -> list[dict]:
    """Train (or resume) one run and return its records (one per target of a multi-task run);
    safe to call in another process.

    The run's log goes to its log.txt and, with ``echo``, also to ``echo`` (progress on screen).
    """
    directory = Path(task.directory)
    config = config_from_dict(copy.deepcopy(task.config))
    set_stale_run_aside(task, echo)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:  # two grids sharing this run: the second waits, then reuses it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (directory / rundir.METRICS).is_file():
            if task.unify and not (directory / "unified" / "summary.json").is_file():  # summary.json is written last
                unify_logged(task, directory, echo)
            if task.pseudo and not (directory / PSEUDO_FILE).is_file():  # written whole or not at all
                pseudo_label_logged(task, directory, echo)
            if task.selflabel:
                selflabel_logged(task, config, directory, echo)
            else:
                train_logged(config, directory, echo)
    return finish_records(task, directory)


def unify_logged(task: RunTask, directory: Path, echo: Log | None) -> None:
    """Unify the run's training data with its filler runs (``seqtransfer unify``) into DIRECTORY/unified."""
    from seqtransfer.workflows.unify import unify

    with open(directory / "log.txt", "a", encoding="utf-8") as log_file:

        def log(message: str) -> None:
            print(f"unify: {message}", file=log_file, flush=True)
            if echo:
                echo(f"  unify: {message}")

        unify(task.unify["entries"], task.unify["runs"], directory / "unified", task.config["data"]["data_dir"], log=log)


def pseudo_label_logged(task: RunTask, directory: Path, echo: Log | None) -> None:
    """Label the run's unlabelled text with its labelling runs together into DIRECTORY/pseudo.conll."""
    from seqtransfer.data.unlabeled import read_unlabeled
    from seqtransfer.workflows.pseudolabels import write_pseudo_labels

    settings = task.pseudo
    tokens = read_unlabeled(settings["unlabeled"], task.config["data"]["data_dir"], settings["tokenizer"], settings.get("word_column"), "pseudo_labels.word_column")
    written = write_pseudo_labels(directory / PSEUDO_FILE, settings["runs"], tokens, settings["combination"], settings["threshold"], settings["top_n"])
    message = (
        f"pseudo labels: {written['sentences']} of {written['of']} sentences of {settings['unlabeled']} ({written['tokens']} tokens) "
        f"labelled by {len(settings['runs'])} run(s) ({settings['combination']})"
    )
    with open(directory / "log.txt", "a", encoding="utf-8") as log_file:
        print(message, file=log_file, flush=True)
    if echo:
        echo(f"  {message}")


def selflabel_logged(task: RunTask, config: RunConfig, directory: Path, echo: Log | None) -> None:
    """Self-labelling rounds into ``directory`` (resumable), its progress in log.txt."""
    from seqtransfer.workflows.selflabel import SelfLabelling, SelfLabelSettings

    with open(directory / "log.txt", "a", encoding="utf-8") as log_file:

        def log(message: str) -> None:
            print(message, file=log_file, flush=True)
            if echo:
                echo(f"  {message}")

        SelfLabelling(config, SelfLabelSettings(**task.selflabel), directory, log).run()


def train_logged(config: RunConfig, directory: Path, echo: Log | None) -> None:
    """Train into ``directory``, appending the log to its log.txt (and to ``echo``)."""
    from seqtransfer.workflows.train import train_tagger

    with open(directory / "log.txt", "a", encoding="utf-8") as log_file:

        def log(message: str) -> None:
            print(message, file=log_file, flush=True)
            if echo:
                echo(f"  {message}")

        train_tagger(config, directory, log=log, show_progress=False)


def finish_records(task: RunTask, directory: Path, score: bool = True) -> list[dict]:
    """The grid cells' records: one, or one per target (task) of a multi-task run (``score``: see :func:`finish_record`)."""
    if "targets" not in task.record:
        return [finish_record(task, directory, score)]
    metrics = read_json(directory / rundir.METRICS)
    network = network_parameters(directory, metrics)
    records = []
    for target in task.record["targets"]:
        scores = metrics["tasks"][target]
        main = get_metric(scores["metric"]).main
        record = {key: value for key, value in task.record.items() if key not in ("targets", "also")}
        if target in task.record.get("also", {}):
            record["also"] = task.record["also"][target]
            record["other_scores"] = other_scores(directory / "predictions" / target, directory / "predictions" / target, record["also"])
        records.append(
            {
                **record,
                "target": target,
                "network_parameters": network,
                "dataset": scores["dataset"],
                "task": scores["task"],
                "metric": scores["metric"],
                "run_directory": str(directory),
                "dev": scores["dev"][main],
                "test": scores.get("test", {}).get(main),
                "parameters": metrics["parameters"],
                "seconds": metrics["seconds"],
                "device": metrics.get("device", "cpu"),
                "best_epoch": scores.get("best_epoch"),
                "multitask": True,
                **cost_of(metrics),
                "predictions": str(directory / "predictions" / target),
                **with_evidence(directory / "predictions" / target, scores["metric"]),
            }
        )
    return records


def with_evidence(folder: Path, metric: str) -> dict:
    """{"evidence": ...} of the test predictions in ``folder`` (a kept record's significance tests), or {}."""
    from seqtransfer.experiments.evidence import evidence_of

    evidence = evidence_of(folder, metric)
    return {"evidence": evidence} if evidence else {}


def network_parameters(directory: Path, metrics: dict | None = None) -> int:
    """A model's size for the reports: its weights without the word and character tables, plus the
    frozen encoder its features come from (feature extraction), which it needs as much
    (``metrics``: the run's, when already read)."""
    if metrics is None:
        metrics = read_json(directory / rundir.METRICS) if (directory / rundir.METRICS).is_file() else {}
    return rundir.parameters_without_embeddings(directory) + metrics.get("frozen_encoder_parameters", 0)


def cost_of(metrics: dict) -> dict:
    """What a run cost beyond its time (trainable parameters, peak memory), and which instances of its
    source and of its pretrained encoder it read (those the metrics hold)."""
    keys = ("trainable_parameters", "peak_rss_megabytes", "gpu_peak_megabytes", "source_weights", "encoder_weights")
    return {key: metrics[key] for key in keys if metrics.get(key) is not None}


def finish_record(task: RunTask, directory: Path, score: bool = True) -> dict:
    """The grid cell's record, from the finished run's metrics (without ``score``, a test on another
    dataset not cached yet is left None: nothing is loaded or predicted)."""
    metrics = read_json(directory / rundir.METRICS)
    if "tasks" in metrics:  # a multi-task source run: its record holds the mean dev score
        return {
            **task.record,
            "network_parameters": network_parameters(directory, metrics),
            "dataset": metrics["dataset"],
            "task": metrics["task"],
            "metric": metrics["metric"],
            "run_directory": str(directory),
            "dev": max(record["dev"] for record in metrics["history"]),
            "test": None,
            "parameters": metrics["parameters"],
            "seconds": metrics["seconds"],
            "device": metrics.get("device", "cpu"),
        }
    main = get_metric(metrics["metric"]).main
    members = [Path(member) for member in metrics.get("members", [])] or [directory]
    network = sum(network_parameters(member, metrics if member == directory else None) for member in members)
    record = {
        **task.record,
        "network_parameters": network,
        "dataset": metrics["dataset"],
        "task": metrics["task"],
        "metric": metrics["metric"],
        "run_directory": str(directory),
        "dev": metrics["dev"][main],
        "test": metrics.get("test", {}).get(main),
        "parameters": metrics["parameters"],
        "seconds": metrics["seconds"],
        "device": metrics.get("device", "cpu"),
        **cost_of(metrics),
    }
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
    from seqtransfer.analysis.predictions import read_predictions, read_scores
    from seqtransfer.data.metrics import evaluate

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
        from seqtransfer.workflows.ensemble import ensemble_predict

        members = rundir.member_directories(directory) if rundir.is_ensemble(directory) else metrics["members"]  # cells older than members.json: paths from the working folder
        return ensemble_predict([rundir.load_run(member) for member in members], tokens)
    from seqtransfer.predictor import load

    return load(directory, device="cpu").predict_raw(tokens, cache_features=True)  # a dataset's split: scored again by other runs


def score_elsewhere(directory: Path, entry: str, data_dir: str | None, score: bool = True) -> tuple[float | None, str]:
    """The run's main score on the test split of ``DATASET[:TASK]`` (cached in the run directory,
    predictions in ``test-on-DATASET/test.conll``): a model trained on one dataset, tested on another
    (not cached and not ``score``: None)."""
    from seqtransfer.config import DataConfig
    from seqtransfer.data.task_data import load_task_data

    folder = directory / f"test-on-{slug(entry)}"
    cached = folder / "score.json"
    if cached.is_file():
        return read_json(cached)["score"], str(folder)
    if not score:
        return None, str(folder)
    name, _, task = entry.partition(":")
    from seqtransfer.data.overlap import warn_of_leaks

    for configured in rundir.member_directories(directory):  # a folder of models (self-labelling, an ensemble): each model's settings
        if (configured / rundir.CONFIG).is_file():
            warn_of_leaks(rundir.read_run_config(configured), name, "test")
    data = load_task_data(DataConfig(dataset=name, task=task or None, data_dir=data_dir), ("test",))
    score = score_predictions(data, "test", predict_elsewhere(directory, data.tokens("test")), folder)[get_metric(data.metric).main]
    write_json(cached, {"test_on": entry, "score": score})
    return score, str(folder)


def execute_ensemble(task: RunTask, members: list[RunTask]) -> dict:
    directory = Path(task.directory)
    if not (directory / rundir.METRICS).is_file():
        data = load_task_data(config_from_dict(copy.deepcopy(task.config)).data)
        build_ensemble([Path(member.directory) for member in members], data, directory)
    return finish_record(task, directory)


def is_finished(task: RunTask) -> bool:
    """The task's run finished, on the encoder folder its settings name as that folder is now."""
    return (Path(task.directory) / rundir.METRICS).is_file() and stale_encoder(task) is None


def kept_records_of(task: RunTask, kept: dict[tuple, dict]) -> list[dict] | None:
    """The kept records of a task's cells (one per target of a multi-task run), if a run of the
    same settings made every one of them; else None."""
    cells = [{**task.record, "target": target} for target in task.record["targets"]] if "targets" in task.record else [task.record]
    cells = [{key: value for key, value in cell.items() if key != "targets"} for cell in cells]
    records = [kept.get(cell_key(cell)) for cell in cells]
    if all(record is not None and made_by(record, task, kept) for record in records):
        return records
    return None


def made_by(record: dict, task: RunTask, kept: dict[tuple, dict]) -> bool:
    """Whether a kept record was made by a run of the task's settings: the same digest, whatever the
    folder's prefix (it depends on which file trained the run first). An ensemble recorded before
    ensembles were named by their members' digests was named by its members' folders: those of the
    members' kept records, or the names the members have now."""
    if from_another_source(record, task) or from_another_encoder(record, task):
        return False
    digest = digest_of(run_id_of(record))
    if digest == digest_of(task.run_id):
        return True
    if not task.ensemble_of:
        return False
    names = []
    for member in task.ensemble_of:
        member_record = kept.get(cell_key(member.record))
        names.append(run_id_of(member_record) if member_record is not None and made_by(member_record, member, kept) else member.run_id)
    return digest == content_id({"ensemble": names})


def from_another_source(record: dict, task: RunTask) -> bool:
    """Whether a kept record names the weights of its source run and the source in the store now
    has others (it was trained again, in another session, to other weights): its cell would
    compare runs of two sources, so it trains again. Records kept before they named their source's
    weights, and cells whose source is not in the store, are taken as they are."""
    recorded = record.get("source_weights")
    source = task.source_directory
    if not recorded or not source or not (Path(source) / rundir.METRICS).is_file():
        return False
    return rundir.weights_fingerprint(source) not in (None, recorded)


def from_another_encoder(record: dict, task: RunTask) -> bool:
    """Whether a kept record names the encoder folder it read (``encoder_weights``) and the folder its
    settings name holds another encoder now (our own LM trained again, with other text or
    weights): the cell trains again, as one whose source changed. Records kept before they named
    their encoder, and encoders not found here, are taken as they are."""
    recorded = record.get("encoder_weights")
    encoder = task.config["model"].get("encoder")
    if not recorded or not encoder:
        return False
    try:
        return encoder_fingerprint(encoder) != recorded
    except (SeqTransferError, OSError):  # not found or unreadable here: the run that needs it will say so
        return False


def skippable(tasks: list[RunTask], kept: dict[tuple, dict], needed: set[str]) -> dict[str, list[dict]]:
    """directory -> kept records of the unfinished tasks that need no training: their cells are kept
    and no run still to train depends on their directory (a filler of unified data)."""
    skip = {task.directory: records for task in tasks if not is_finished(task) and (records := kept_records_of(task, kept)) is not None}
    while True:
        dependencies = {directory for task in tasks if task.directory not in skip and not is_finished(task) for directory in task.dependencies}
        blocked = (dependencies | needed) & set(skip)
        if not blocked:
            return skip
        for directory in blocked:
            del skip[directory]


def run_experiment(
    spec: ExperimentSpec,
    store: ResultsStore,
    seeds: list[int],
    backend,
    data_dir: str | None = None,
    only: set[str] = frozenset(),
    log: Log = print,
    kept: list[dict] = (),
    on_record: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Run whatever of the grid is not finished (or kept, see :mod:`~seqtransfer.experiments.kept`) yet;
    returns every record of the experiment."""
    kept_cells = {cell_key(record): record for record in kept if record["experiment"] == spec.name}
    sources = source_tasks(spec, store, data_dir)
    targets = method_tasks(spec, store, data_dir, seeds, sources, only)
    ensembles = ensemble_tasks(spec, store, data_dir, seeds, sources, only)
    kept_ensembles = [records for task, _ in ensembles if not is_finished(task) and (records := kept_records_of(task, kept_cells)) is not None]
    ensembles = [(task, members) for task, members in ensembles if is_finished(task) or kept_records_of(task, kept_cells) is None]
    members_needed = {member.directory for task, members in ensembles if not is_finished(task) for member in members}
    skipped = skippable(targets, kept_cells, members_needed)
    to_train = [task for task in targets if task.directory not in skipped]
    asked = {directory for task in to_train if not task.when_needed for directory in task.dependencies}
    to_train = [task for task in to_train if not task.when_needed or task.directory in asked or is_finished(task)]
    needed = {directory for task in to_train for directory in task.dependencies}
    needed |= {directory for task in sources.values() if task.directory in needed for directory in task.dependencies}
    source_stage = [task for task in sources.values() if task.directory in needed]
    todo = [[task for task in stage if not is_finished(task)] for stage in (source_stage, to_train, [task for task, _ in ensembles])]
    kept_note = f", {len(skipped) + len(kept_ensembles)} kept" if skipped or kept_ensembles else ""
    log(f"{spec.name}: {len(source_stage)} source runs, {len(targets)} target runs, {len(ensembles)} ensembles ({', '.join(str(len(stage)) for stage in todo)} to train{kept_note})")
    started = time.perf_counter()
    for records in [*skipped.values(), *kept_ensembles]:
        for record in records:
            store.save_record(record)
    for task in to_train:  # cells whose run already exists (trained by this or another experiment)
        if is_finished(task):
            for record in finish_records(task, Path(task.directory)):
                store.save_record(record)

    def save(record: dict) -> None:
        store.save_record(record)
        if on_record:
            on_record(record)

    # One pool of work: a target run starts as soon as its own source is finished.
    backend.run(todo[0] + todo[1], log, on_record=save)
    warn_of_other_sources(targets, skipped, log)
    for task in source_stage:  # source records too, so that analyses can find the source runs
        store.save_record(finish_record(task, Path(task.directory)))
    for task, members in ensembles:
        record = execute_ensemble(task, members)
        save(record)
        if task in todo[2]:
            log(describe(record))
    log(f"{spec.name}: done in {time.perf_counter() - started:.0f} s")
    return merge(kept_cells.values(), store.records(spec.name))


def warn_of_other_sources(tasks: list[RunTask], skipped: dict[str, list[dict]], log: Log) -> None:
    """Kept cells were taken before their source was trained again here: say which of them read
    another instance of it (the next run trains them again, see :func:`from_another_source`)."""
    stale = [describe_cell(record) for task in tasks for record in skipped.get(task.directory, []) if from_another_source(record, task) or from_another_encoder(record, task)]
    if stale:
        log(
            f"warning: {len(stale)} kept cells were trained from another instance of their source or encoder, trained again here "
            f"({', '.join(stale[:4])}{', ...' if len(stale) > 4 else ''}): run the command again to train them from this one"
        )


def describe_cell(record: dict) -> str:
    return f"{record['method']} / {record['target']} / seed {record['seed']}"


def describe(record: dict) -> str:
    """One log line for a finished run."""
    if record.get("source"):
        what = f"source {record['source']}"
    else:
        what = describe_cell(record)
    test = "-" if record["test"] is None else f"{record['test']:.2f}"
    return f"{what}: dev {record['dev']:.2f}, test {test} ({record['seconds']:.0f} s)"
