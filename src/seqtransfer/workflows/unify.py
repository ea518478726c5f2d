"""Dataset unification (MuTSPad paper, section 4.2.2): every sentence labelled for every task.

Each task names the dataset that labels it (``tweebank:upos``) and a mono-task run directory.
The training sentences of all these datasets are gathered (a sentence found in several of them,
same tokens, is kept once with every gold annotation it has); each task column a sentence has
no gold annotation for is filled with the predictions of that task's run. The result is one
CoNLL-U Plus file per split, with the columns ``ID FORM <tagging tasks> HEAD DEPREL`` and two
comments per sentence saying which columns are gold and which were predicted:

    # global.columns = ID FORM POS CK NER HEAD DEPREL
    # source = tweebank
    # gold = POS DP
    # predicted = CK NER

``summary.json`` counts, per dataset and task, the sentences and tokens filled by prediction, and
gives each filling run's test score on its own data (``filler_score``): about how right the labels
it fills are on text like its own (less on another domain's). Where a filled sentence's own file
has gold labels of the same tag set in another column (EnglishAll: CoNLL-2003's POS and chunk
columns, UD-EWT's XPOS), the filled labels are also scored against them (``checks``), with the
filler's metric, and the share of those tokens whose label the filler does not know is given:
a measured quality of the automatic labels on that dataset. (It is agreement, not accuracy, where
that column is itself automatic, as CoNLL-2003's POS and chunk tags are.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from seqtransfer.config import DataConfig
from seqtransfer.corpora.task_data import TaskData, load_task_data
from seqtransfer.data.batching import encode_sentences
from seqtransfer.data.conllu import read_conllu, write_conllu
from seqtransfer.data.corpus import Sentence
from seqtransfer.data.metrics import evaluate, get_metric, main_score
from seqtransfer.data.trees import HEAD, RELATION, Tree
from seqtransfer.data.vocabulary import one_tag_set
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_json, write_json
from seqtransfer.rundir import METRICS, load_run
from seqtransfer.training.inference import predict_labels

GOLD, PREDICTED, SOURCE = "gold", "predicted", "source"
# Task names that name the same column (the presets write ck and pos; a config may say chunk or upos)
COLUMN_SYNONYMS = {"chunk": ("ck",), "ck": ("chunk",), "pos": ("upos",), "upos": ("pos",)}
Log = Callable[[str], None]


def column_of(task: str) -> str:
    """The column a task's labels are written in (read back lower-cased from global.columns)."""
    return task.lower()


@dataclass
class UnifiedSentence:
    tokens: list[str]
    source: str
    annotation: dict[str, object] = field(default_factory=dict)  # task -> label list or Tree
    gold: list[str] = field(default_factory=list)
    columns: dict[str, list[str]] = field(default_factory=dict)  # every column of its files (what the checks read)


def load_task(entry: str | dict, data_dir: str | None, splits: tuple[str, ...]) -> TaskData:
    """A task's data: ``"dataset:task"`` or a mapping of a user's files (as ``multitask.data``)."""
    if isinstance(entry, dict):
        return load_task_data(DataConfig(dataset=None, data_dir=data_dir, **entry), splits)
    dataset, _, task = entry.partition(":")
    return load_task_data(DataConfig(dataset=dataset, task=task or None, data_dir=data_dir), splits)


def check_run(task: str, run, data: TaskData) -> None:
    """A run predicts ``task`` only if it is a mono-task run of the same kind sharing labels with the gold data."""
    where = str(run.directory)
    if run.model.task_kind == "multitask":
        raise SeqTransferError(f"the run for task {task} is a multi-task model", path=where, hint="give a mono-task run of each task (trained with `seqtransfer train`)")
    if run.model.task_kind != data.kind.name:
        raise SeqTransferError(
            f"the run for task {task} is a {run.model.task_kind} model, but {data.dataset}/{data.task} is a {data.kind.name} task", path=where, hint=f"give a run trained on {data.task}"
        )
    gold_labels = {label for sentence in data.kind.label_strings(data.gold("train")) for label in sentence}
    run_labels = set(run.vocabularies.labels.items) - {"<pad>", "<unk>"}
    if not one_tag_set(gold_labels, run_labels):  # sharing "O" alone (chunks and entities) is not one tag set
        sample = ", ".join(sorted(run_labels - gold_labels)[:4])
        raise SeqTransferError(
            f"the run for task {task} predicts labels ({sample}, ...) that {data.dataset}/{data.task} never uses: {len(gold_labels & run_labels)} of its {len(run_labels)} labels are this task's",
            path=where,
            hint=f"give a run trained on {data.task} labels",
        )


def gather(tasks: dict[str, TaskData], split: str) -> list[UnifiedSentence]:
    """The split's sentences of every task's dataset, once each, with their gold annotations."""
    unified: list[UnifiedSentence] = []
    index: dict[tuple[str, ...], UnifiedSentence] = {}
    for task, data in tasks.items():
        if split not in data.splits:
            continue
        for sentence, gold in zip(data.splits[split], data.gold(split)):
            key = tuple(sentence.tokens)
            if key not in index:
                index[key] = UnifiedSentence(list(sentence.tokens), data.dataset)
                unified.append(index[key])
            if task not in index[key].annotation:
                index[key].annotation[task] = gold
                index[key].gold.append(task)
            for name, values in sentence.columns.items():
                index[key].columns.setdefault(name, list(values))
    return unified


def fill(sentences: list[UnifiedSentence], task: str, run, batch_size: int) -> int:
    """Predict ``task`` for every sentence lacking it; returns how many sentences were filled."""

    missing = [sentence for sentence in sentences if task not in sentence.annotation]
    if missing:
        encoded = encode_sentences([sentence.tokens for sentence in missing], run.vocabularies)
        for sentence, prediction in zip(missing, predict_labels(run.model, encoded, run.vocabularies.labels, batch_size)):
            sentence.annotation[task] = prediction
    return len(missing)


def as_conllu(sentence: UnifiedSentence, order: list[str]) -> Sentence:
    columns: dict[str, list[str]] = {}
    for task in order:
        value = sentence.annotation[task]
        if isinstance(value, Tree):
            columns.update({HEAD: [str(head) for head in value.heads], RELATION: list(value.relations)})
        else:
            columns[column_of(task)] = list(value)
    predicted = [task for task in order if task not in sentence.gold]
    comments = [f"{SOURCE} = {sentence.source}", f"{GOLD} = {' '.join(sentence.gold)}", f"{PREDICTED} = {' '.join(predicted) or '-'}"]
    return Sentence(sentence.tokens, columns=columns, comments=comments)


def check_paired(entries: dict[str, str | dict], runs: dict[str, str | Path]) -> None:
    """Every task has both a dataset and a run, else one line."""
    if set(entries) != set(runs):
        missing = sorted(set(entries) - set(runs)) or sorted(set(runs) - set(entries))
        raise SeqTransferError(f"every task needs a dataset and a run; task {missing[0]} has only one", hint="pass --run TASK=RUN_DIR for each task of --data")


def load_fillers(runs: dict[str, str | Path], tasks: dict[str, TaskData]) -> dict:
    """Each task's run, loaded and checked against the task's data (``check_run``)."""
    loaded = {}
    for task, directory in runs.items():
        loaded[task] = load_run(directory)
        check_run(task, loaded[task], tasks[task])
    return loaded


def dependency_tasks(tasks: dict[str, TaskData]) -> list[str]:
    """The parsing task, if any: at most one, since the tree has one pair of columns."""
    dependency = [task for task, data in tasks.items() if data.kind.name == "dependency"]
    if len(dependency) > 1:
        raise SeqTransferError(f"several dependency tasks ({', '.join(dependency)}) cannot share the HEAD and DEPREL columns", hint="unify one parsing task")
    return dependency


def task_summaries(entries: dict[str, str | dict], runs: dict[str, str | Path], tasks: dict[str, TaskData], tagging: list[str]) -> dict[str, dict]:
    """Per task (in ``entries``' order): its data, its run, its column and the run's own test score."""
    return {
        task: {
            "data": entries[task] if isinstance(entries[task], str) else tasks[task].splits["train"][0].source,
            "run": str(runs[task]),
            "column": column_of(task) if task in tagging else "head+deprel",
            "filler_score": filler_score(runs[task]),
        }
        for task in entries
    }


def log_filled(split: str, sentences: list[UnifiedSentence], filled: dict[str, int], summary: dict, log: Log) -> None:
    """The split's log line: per task, the sentences and tokens whose labels were filled by prediction."""
    log(f"{split}: {len(sentences)} sentences; predicted labels filled: " + ", ".join(f"{task} {filled[task]} sentences ({summary['predicted_tokens'][task]} tokens)" for task in filled))


def log_checks(checks: list[dict], log: Log) -> None:
    """One log line per check of the filled labels against a gold column of their own files."""
    for check in checks:
        log(
            f"  {check['task']} filled on {check['dataset']}, against its '{check['column']}' column: {check['score']:.2f} {check['metric']} ({check['sentences']} sentences; "
            f"{check['unknown_labels']:.1f} % of their tokens have a label the filler does not know)"
        )


def unify(
    entries: dict[str, str | dict], runs: dict[str, str | Path], output: str | Path, data_dir: str | None = None, splits: tuple[str, ...] = ("train",), batch_size: int = 256, log: Log = print
) -> dict:
    """Write ``output/SPLIT.conllu`` for each split and ``output/summary.json``; returns the summary."""
    check_paired(entries, runs)
    tasks = {task: load_task(entry, data_dir, ("train", "dev", "test")) for task, entry in entries.items()}
    loaded = load_fillers(runs, tasks)
    dependency = dependency_tasks(tasks)
    order = list(entries)
    tagging = [task for task in order if task not in dependency]
    columns = ("id", "word", *(column_of(task) for task in tagging), *((HEAD, RELATION) if dependency else ()))
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    summary = {"tasks": task_summaries(entries, runs, tasks, tagging), "splits": {}}
    log(
        "fillers (their test score on their own data: about how right the labels they fill are, on text like it): "
        + ", ".join(f"{task} {describe_score(summary['tasks'][task]['filler_score'])}" for task in order)
    )
    for split in splits:
        sentences = gather(tasks, split)
        filled = {task: fill(sentences, task, loaded[task], batch_size) for task in order}
        write_conllu(output / f"{split}.conllu", [as_conllu(sentence, tagging + dependency) for sentence in sentences], columns=columns)
        summary["splits"][split] = split_summary(sentences, order, filled)
        log_filled(split, sentences, filled, summary["splits"][split], log)
        checks = [check for task in tagging for check in gold_checks(sentences, task, loaded[task])]
        summary["splits"][split]["checks"] = checks
        log_checks(checks, log)
    write_json(output / "summary.json", summary)
    return summary


def gold_checks(sentences: list[UnifiedSentence], task: str, run) -> list[dict]:
    """The labels filled for ``task``, scored per dataset against each column of the sentences' own
    files that holds the filler's tag set (:func:`one_tag_set`), with the filler's metric."""

    metric = run.metrics.get("metric") or "accuracy"
    run_labels = set(run.vocabularies.labels.items) - {"<pad>", "<unk>"}
    by_dataset: dict[str, list[UnifiedSentence]] = {}
    for sentence in sentences:
        if task not in sentence.gold:
            by_dataset.setdefault(sentence.source, []).append(sentence)
    checks = []
    for dataset, filled in by_dataset.items():
        names = [name for name in filled[0].columns if all(len(sentence.columns.get(name, ())) == len(sentence.tokens) for sentence in filled)]
        for name in names:
            gold = [sentence.columns[name] for sentence in filled]
            labels = [label for labels in gold for label in labels]
            if not one_tag_set(set(labels), run_labels):
                continue
            scores = evaluate(gold, [list(sentence.annotation[task]) for sentence in filled], metric)
            unknown = 100.0 * sum(label not in run_labels for label in labels) / max(len(labels), 1)
            checks.append({"task": task, "dataset": dataset, "column": name, "sentences": len(filled), "metric": metric, "score": main_score(metric, scores), "unknown_labels": unknown})
    return checks


def filler_score(run: str | Path) -> dict | None:
    """{metric, test} of a filling run's metrics.json: its main score on its own test split (None when it has none)."""

    metrics = read_json(Path(run) / METRICS)
    test = metrics.get("test") or {}
    main = get_metric(metrics["metric"]).main if metrics.get("metric") else None
    return {"metric": metrics["metric"], "test": test[main]} if main in test else None


def describe_score(score: dict | None) -> str:
    """ "71.60 (span_f1)", or that the run has no test score."""
    return f"{score['test']:.2f} ({score['metric']})" if score else "(no test score)"


def split_summary(sentences: list[UnifiedSentence], order: list[str], filled: dict[str, int]) -> dict:
    by_source: dict[str, int] = {}
    for sentence in sentences:
        by_source[sentence.source] = by_source.get(sentence.source, 0) + 1
    predicted_tokens = {task: sum(len(sentence.tokens) for sentence in sentences if task not in sentence.gold) for task in order}
    return {
        "sentences": len(sentences),
        "tokens": sum(len(sentence.tokens) for sentence in sentences),
        "sentences_by_source": by_source,
        "predicted_sentences": filled,
        "predicted_tokens": predicted_tokens,
    }


def unified_columns(task: str, kind_name: str) -> str:
    """The column of ``task`` in a unified file (the tree's for a dependency task)."""
    return HEAD if kind_name == "dependency" else column_of(task)


def unified_sentences(folder: str | Path, split: str = "train") -> list[Sentence]:
    """The sentences of a unified split written by :func:`unify`."""

    path = Path(folder) / f"{split}.conllu"
    if not path.is_file():
        raise SeqTransferError(f"no unified {split} file in the folder", path=folder, hint="pass a folder written by `seqtransfer unify`")
    return read_conllu(path)


def with_task_columns(sentences: list[Sentence], tasks: dict[str, TaskData], folder: str | Path) -> dict[str, TaskData]:
    """Each task's training data read from the unified sentences (its column; the tree for parsing);
    dev and test stay the task's own gold data."""
    result = {}
    for task, data in tasks.items():
        column = unified_columns(task, data.kind.name)
        if sentences and column not in sentences[0].columns:  # the presets' CK for a model's chunk task, or the other way round
            column = next((synonym for synonym in COLUMN_SYNONYMS.get(column, ()) if synonym in sentences[0].columns), column)
        if sentences and column not in sentences[0].columns:
            raise SeqTransferError(f"the unified file has no column for task {task}", path=Path(folder) / "train.conllu", hint="unify with the same task names as model.tasks")
        # dev and test stay the task's gold files: the unified values go into the task's own column
        train = sentences if data.kind.name == "dependency" else [dataclasses.replace(sentence, columns={**sentence.columns, data.column: sentence.columns[column]}) for sentence in sentences]
        result[task] = dataclasses.replace(data, splits={**data.splits, "train": train})
    return result
