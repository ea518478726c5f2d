"""Self-labelling on unlabelled target text: rounds of training around the one training loop.

Each round draws a pool of unlabelled target sentences (default 5,000; seeded per round), labels
it with the current model(s), keeps the sentences a method trusts, and trains the next round's
model(s) on the gold training data plus those pseudo-labelled sentences (``data.pseudo_train``,
weighted by ``data.pseudo_weight``), warm-started from the previous round (``transfer.scheme=
finetune`` from the previous round's run). Registered methods (:data:`METHODS`):

- ``self_training``: one model; a sentence joins when its confidence — the lowest probability
  the model gives one of its predicted labels — reaches ``threshold``, or it is among the
  ``top_n`` most confident of the pool. Pseudo-labelled sentences accumulate over rounds and
  leave the unlabelled set.
- ``tri_training`` (Zhou & Li 2005): three models, each first trained on its own bootstrap
  sample of the gold data; in a round, model i learns the pool sentences on which the other two
  agree (every token), with their labels. As Zhou & Li, each round's set replaces the last.
- ``tri_training_disagreement`` (Søgaard 2010): as tri-training, but only the sentences on which
  model i disagrees with the two others.
- ``co_training`` (Blum & Mitchell 1998, two views of a word): a model that sees only the word
  vectors and one that sees only the character BiLSTM (``model.inputs``); each learns the pool
  sentences the other is surest of (``threshold`` / ``top_n`` as self-training), accumulating.
  Together they predict each sentence with the model surer of it.

Model selection reads no target label: early stopping uses the gold (source) dev set and the
number of rounds is fixed (self- and co-training stop earlier once no unlabelled sentence is left). Where the unlabelled text is a registered dataset's split, the
accuracy of the pseudo labels is measured against its gold labels and recorded (never used),
and ``target`` scores every round's combined prediction on a labelled target split (recorded,
never used).

Layout of the output folder (resumable: a finished round is never trained again):

    selflabel.json                       the method and settings (a rerun must use the same)
    round-0/model-1/ ...                 run directories (tri-training: model-1..3)
    round-R/pseudo-I.conll               the sentences model I learned in round R (word TAB label)
    rounds.json                          per round: pool, sentences and tokens added, pseudo-label accuracy, scores
    members.json                         the final models and how they combine (load() predicts with it)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seqtransfer import rundir
from seqtransfer.config import DataConfig, RunConfig, config_to_dict, result_settings
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.corpora.unlabeled import RAW_CORPORA, read_unlabeled
from seqtransfer.data.metrics import evaluate, get_metric
from seqtransfer.data.registry import get_dataset
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_json, write_json, write_text
from seqtransfer.rundir import METRICS, write_members
from seqtransfer.workflows.combination import combine, model_predictions
from seqtransfer.workflows.train import train_tagger

Log = Callable[[str], None]


@dataclass(frozen=True)
class SelfLabelSettings:
    method: str
    unlabeled: str
    rounds: int = 3
    pool: int = 5000
    threshold: float | None = 0.9  # self-training: minimum sentence confidence
    top_n: int | None = None  # self-training: instead of a threshold, the N most confident pool sentences
    pseudo_weight: float = 1.0
    tokenizer: str = "whitespace"
    word_column: int | None = None
    target: str | None = None  # DATASET[:TASK] scored after every round (recorded, never used)


@dataclass(frozen=True)
class Method:
    models: int
    combination: str  # how the final models predict together: single | vote | confident (see predictor.VotingPredictor)
    choose: Callable  # (settings, labels of every model, confidences of every model, model, its teacher) -> chosen pool positions
    teacher: Callable[[int], int]  # the model whose labels model i learns
    accumulates: bool  # pseudo-labelled sentences stay from round to round (and leave the unlabelled set)
    bootstrap: bool = False  # each model starts from its own bootstrap sample of the gold data
    views: tuple[str, ...] = ()  # model.inputs of each model (co-training)


def choose_confident(settings: SelfLabelSettings, labels: list, confidences: list[np.ndarray], model: int, teacher: int) -> list[int]:
    """Self- and co-training: the pool positions whose teacher's confidence reaches the threshold, or its top n."""
    confidence = confidences[teacher]
    if settings.top_n is not None:
        return sorted(np.argsort(-confidence, kind="stable")[: settings.top_n].tolist())
    return [position for position, value in enumerate(confidence) if value >= settings.threshold]


def choose_agreed(settings: SelfLabelSettings, labels: list, confidences: list, model: int, teacher: int, disagreement: bool = False) -> list[int]:
    """Tri-training: positions where the two other models agree (and, with disagreement, model ``model`` does not)."""
    first, second = [other for other in range(3) if other != model]
    return [position for position in range(len(labels[model])) if labels[first][position] == labels[second][position] and (not disagreement or labels[model][position] != labels[first][position])]


def first_other(model: int) -> int:
    return 1 if model == 0 else 0


METHODS = {
    "self_training": Method(1, "single", choose_confident, teacher=lambda model: model, accumulates=True),
    "tri_training": Method(3, "vote", choose_agreed, teacher=first_other, accumulates=False, bootstrap=True),
    "tri_training_disagreement": Method(3, "vote", lambda *arguments: choose_agreed(*arguments, disagreement=True), teacher=first_other, accumulates=False, bootstrap=True),
    "co_training": Method(2, "confident", choose_confident, teacher=first_other, accumulates=True, views=("words", "characters")),
}


def check_settings(settings: SelfLabelSettings) -> None:
    if settings.method not in METHODS:
        raise SeqTransferError(f"unknown self-labelling method '{settings.method}'", hint=f"methods: {', '.join(METHODS)}")
    if settings.rounds < 0 or settings.pool < 1:
        raise SeqTransferError("--rounds must be 0 or more and --pool at least 1")
    if settings.top_n is not None and settings.top_n < 1:
        raise SeqTransferError(f"--top-n must be at least 1, got {settings.top_n}")
    if settings.top_n is not None and METHODS[settings.method].choose is not choose_confident:
        raise SeqTransferError(f"{settings.method} adds every sentence the other two models agree on: top_n does not apply", hint="leave it out")
    if settings.threshold is not None and not 0.0 < settings.threshold <= 1.0:
        raise SeqTransferError(f"--threshold must be in (0, 1], got {settings.threshold}")
    if settings.pseudo_weight <= 0:
        raise SeqTransferError(f"--pseudo-weight must be positive, got {settings.pseudo_weight}")


def token_accuracy(predicted: Sequence[Sequence[str]], gold: Sequence[Sequence[str]]) -> float | None:
    total = sum(map(len, gold))
    return None if not total else 100.0 * sum(p == g for ps, gs in zip(predicted, gold) for p, g in zip(ps, gs)) / total


def unlabeled_gold(entry: str, data_dir: str | None, task: str) -> list[list[str]] | None:
    """Gold labels of the unlabelled sentences when they are a registered dataset's split annotated
    for a task of the same name as the model's (``ud_ewt`` upos → ``tweebank:upos``); else None."""
    if Path(entry).is_file() or entry in RAW_CORPORA or "+" in entry:
        return None
    name, _, part = entry.partition(":")
    try:
        spec = get_dataset(name)
        entry_task = part if part and part not in spec.split_names() else spec.default_task
        if entry_task != task:  # another task's labels (or tag set): nothing to compare with
            return None
        return labelled_split(f"{name}:{entry_task}", data_dir, part if part in spec.split_names() else "train")[1]
    except SeqTransferError:
        return None


def labelled_split(entry: str, data_dir: str | None, split: str = "train") -> tuple[list[list[str]], list[list[str]]]:
    """(tokens, gold labels) of ``DATASET[:TASK]``'s split."""
    name, _, task = entry.partition(":")
    data = load_task_data(DataConfig(dataset=name, task=task or None, data_dir=data_dir), (split,))
    return data.tokens(split), data.gold(split)


def write_pseudo(path: Path, tokens: Sequence[Sequence[str]], labels: Sequence[Sequence[str]]) -> None:
    """``word TAB label`` lines, a blank line after each sentence."""
    write_text(path, "".join("".join(f"{word}\t{label}\n" for word, label in zip(sentence, tags)) + "\n" for sentence, tags in zip(tokens, labels)))


class SelfLabelling:
    """The rounds of one method in one output folder."""

    def __init__(self, base: RunConfig, settings: SelfLabelSettings, output: Path, log: Log) -> None:
        check_settings(settings)
        if METHODS[settings.method].views and base.transfer.source:
            raise SeqTransferError(
                f"{settings.method} trains one model per view (words only, characters only) from scratch; a source run reads both",
                path=base.transfer.source,
                hint="drop the source (its views start from the labelled data), or use self_training or tri_training",
            )
        self.base, self.settings, self.output, self.log = base, settings, Path(output), log
        self.method = METHODS[settings.method]
        self.check_resumable()

    def check_resumable(self) -> None:
        saved_path = self.output / "selflabel.json"
        if saved_path.is_file() and not self.same_settings(read_json(saved_path)):
            raise SeqTransferError("this folder holds self-labelling rounds with other settings", path=saved_path, hint="run the same command to resume, or choose another --output")
        self.saved = {"settings": dataclasses.asdict(self.settings), "config": config_to_dict(self.base)}
        self.saved["config"]["data"].pop("data_dir")

    def same_settings(self, saved: dict) -> bool:
        """Whether saved rounds were made with these settings (fields added since then at their
        defaults; where the data lives, threads and device do not count)."""
        try:
            return SelfLabelSettings(**saved["settings"]) == self.settings and result_settings(saved["config"]) == result_settings(self.base)
        except (TypeError, KeyError, AttributeError):  # a field since removed, or a damaged file: not these settings
            return False

    def model_directory(self, round_number: int, model: int) -> Path:
        return self.output / f"round-{round_number}" / f"model-{model + 1}"

    def round_config(self, round_number: int, model: int, pseudo: Path | None) -> RunConfig:
        config = RunConfig(**{section.name: dataclasses.replace(getattr(self.base, section.name)) for section in dataclasses.fields(RunConfig)})
        if self.method.bootstrap:
            config.data.bootstrap = config.train.seed * 100 + model
        if self.method.views:
            config.model.inputs = self.method.views[model]
        if round_number > 0:
            config.transfer.scheme, config.transfer.source = "finetune", str(self.model_directory(round_number - 1, model))
            config.data.pseudo_train, config.data.pseudo_weight = (str(pseudo), self.settings.pseudo_weight) if pseudo else (None, 1.0)
        return config

    def train(self, round_number: int, model: int, pseudo: Path | None) -> None:
        directory = self.model_directory(round_number, model)
        if (directory / rundir.METRICS).is_file():
            return
        self.log(f"round {round_number}, model {model + 1}: training {directory}")
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / "log.txt", "a", encoding="utf-8") as handle:
            train_tagger(self.round_config(round_number, model, pseudo), directory, log=lambda line: print(line, file=handle, flush=True), show_progress=False)

    def run(self) -> list[dict]:
        """Train every round not yet finished; returns the per-round records."""
        settings = self.settings
        unlabeled = read_unlabeled(settings.unlabeled, self.base.data.data_dir, settings.tokenizer, settings.word_column)
        gold = unlabeled_gold(settings.unlabeled, self.base.data.data_dir, self.task_name())
        if gold is not None and [len(sentence) for sentence in gold] != [len(sentence) for sentence in unlabeled]:
            gold = None
        write_json(self.output / "selflabel.json", self.saved)
        records = read_json(self.output / "rounds.json") if (self.output / "rounds.json").is_file() else []
        for model in range(self.method.models):
            self.train(0, model, None)
        if not records:
            records.append(self.round_record(0, pool=0, added=[]))
        used: set[int] = set()
        for round_number in range(1, settings.rounds + 1):
            if round_number < len(records):
                used |= set(records[round_number].get("pool_used", []))
                continue
            if self.method.accumulates and len(used) >= len(unlabeled):  # nothing left to label: another round would retrain on the same data
                self.log(f"round {round_number}: no unlabelled sentence is left to label; the models of round {round_number - 1} are the final ones")
                break
            record = self.next_round(round_number, unlabeled, gold, used)
            records.append(record)
            write_json(self.output / "rounds.json", records)
        write_json(self.output / "rounds.json", records)
        self.write_members(len(records) - 1)
        self.write_metrics(len(records) - 1, records)
        return records

    def write_metrics(self, last_round: int, records: list[dict]) -> None:
        """``metrics.json`` of the whole folder (written last: a finished self-labelling run): the first
        final model's dev scores, the final models' combined scores on the training data's test split,
        the parameters of all final models, the seconds of every model trained, and the largest peak
        memory of their trainings."""
        finals = [self.model_directory(last_round, model) for model in range(self.method.models)]
        final_metrics = [read_json(path / METRICS) for path in finals]
        first = final_metrics[0]
        data = load_task_data(self.base.data, ("test",))
        test = {}
        if "test" in data.splits:
            test = evaluate(data.gold("test"), combine(self.method.combination, finals, data.tokens("test")), data.metric)
            test.pop("per_class", None)
        trained = [read_json(self.model_directory(number, model) / METRICS) for number in range(last_round + 1) for model in range(self.method.models)]
        metrics = {
            "dataset": first["dataset"],
            "task": first["task"],
            "metric": first["metric"],
            "scheme": f"selflabel:{self.settings.method}",
            "dev": first["dev"],
            "test": test,
            "parameters": sum(item["parameters"] for item in final_metrics),
            "seconds": round(sum(item["seconds"] for item in trained), 1),
            "rounds": len(records) - 1,
            "members": [str(path) for path in finals],
        }
        peaks = [item["peak_rss_megabytes"] for item in trained if item.get("peak_rss_megabytes") is not None]
        if peaks:
            metrics["peak_rss_megabytes"] = max(peaks)
        if all(item.get("trainable_parameters") is not None for item in trained):
            metrics["trainable_parameters"] = sum(item["trainable_parameters"] for item in final_metrics)
        write_json(self.output / METRICS, metrics)

    def task_name(self) -> str | None:
        """The model's task name (a registered dataset's default task when none is given)."""
        data = self.base.data
        return data.task or (get_dataset(data.dataset.split("+")[0]).default_task if data.dataset and not data.train else None)

    def next_round(self, round_number: int, unlabeled: list[list[str]], gold, used: set[int]) -> dict:
        """Label a pool with the previous round's models, write each model's pseudo-labelled data, train."""
        settings, method = self.settings, self.method
        generator = np.random.default_rng(self.base.train.seed * 1000 + round_number)
        candidates = np.array([index for index in range(len(unlabeled)) if index not in used])
        pool = np.sort(generator.choice(candidates, min(settings.pool, len(candidates)), replace=False)) if len(candidates) else np.array([], dtype=int)
        tokens = [unlabeled[index] for index in pool]
        predictions = [model_predictions(self.model_directory(round_number - 1, model), tokens) for model in range(method.models)]
        labels, confidences = [labels for labels, _ in predictions], [confidence for _, confidence in predictions]
        added = []
        for model in range(method.models):
            teacher = method.teacher(model)
            chosen = method.choose(settings, labels, confidences, model, teacher)
            new_tokens, new_labels = [tokens[position] for position in chosen], [labels[teacher][position] for position in chosen]
            previous = self.output / f"round-{round_number - 1}" / f"pseudo-{model + 1}.conll"
            path = self.output / f"round-{round_number}" / f"pseudo-{model + 1}.conll"
            text = previous.read_text(encoding="utf-8") if method.accumulates and previous.is_file() else ""
            write_pseudo(path, new_tokens, new_labels)
            if text:
                write_text(path, text + path.read_text(encoding="utf-8"))
            accuracy = token_accuracy(new_labels, [gold[pool[position]] for position in chosen]) if gold is not None else None
            added.append({"model": model + 1, "sentences": len(chosen), "tokens": sum(map(len, new_tokens)), "pseudo_accuracy": accuracy, "pool_indices": [int(pool[position]) for position in chosen]})
            self.log(
                f"round {round_number}, model {model + 1}: {len(chosen)} of {len(pool)} pool sentences added ({added[-1]['tokens']} tokens"
                + (f", pseudo-label accuracy {accuracy:.2f}" if accuracy is not None else "")
                + ")"
            )
        if method.accumulates:
            used |= {index for item in added for index in item["pool_indices"]}
        for model in range(method.models):
            pseudo = self.output / f"round-{round_number}" / f"pseudo-{model + 1}.conll"
            self.train(round_number, model, pseudo if pseudo.read_text(encoding="utf-8").strip() else None)  # nothing added: gold data alone
        record = self.round_record(round_number, len(pool), added)
        record["pool_used"] = sorted(used)
        return record

    def round_record(self, round_number: int, pool: int, added: list[dict]) -> dict:
        """What a round did and how its models score (source dev; the target split with ``target``)."""
        directories = [self.model_directory(round_number, model) for model in range(self.method.models)]
        record = {
            "round": round_number,
            "pool": pool,
            "added": [{key: value for key, value in item.items() if key != "pool_indices"} for item in added],
            "source_dev": [read_json(directory / METRICS)["dev"] for directory in directories],
        }
        if self.settings.target:
            record["target"] = self.score_target(directories)
            self.log(f"round {round_number}: {self.settings.target} test {record['target']:.2f} (recorded, not used)")
        return record

    def score_target(self, directories: list[Path]) -> float:
        name, _, task = self.settings.target.partition(":")
        data = load_task_data(DataConfig(dataset=name, task=task or None, data_dir=self.base.data.data_dir), ("test",))
        predicted = combine(self.method.combination, directories, data.tokens("test"))
        scores = evaluate(data.gold("test"), predicted, data.metric)
        return scores[get_metric(data.metric).main]

    def write_members(self, last_round: int) -> None:
        write_members(self.output, [self.model_directory(last_round, model) for model in range(self.method.models)], self.method.combination, method=self.settings.method)
