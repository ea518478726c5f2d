"""Jackknifed input tags (``model.tag_jackknife`` = K): the training split of a parser that reads
predicted tags is tagged by K taggers, each trained on the other K - 1 folds, so that the parser
trains on tags as wrong as those it meets at test time. A workflow: it trains taggers.
"""

from __future__ import annotations

import copy
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from seqtransfer.config import DataConfig
from seqtransfer.corpora.task_data import in_fold, load_task_data
from seqtransfer.data.tag_feature import predicted_tags, resolve_tag_column
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_json, write_text
from seqtransfer.rundir import load_run, tagger
from seqtransfer.training.prediction import load_tagger

JACKKNIFE = "jackknife"  # the run directory's folder of the fold taggers (removed once their tags are kept)
JACKKNIFE_TAGS = "tags.json"
Train = Callable[..., dict]  # workflows/train.py train_tagger(config, directory, log=..., show_progress=...), handed in: it calls this module


def jackknife_tags(config, data, directory: Path, log, train: Train) -> tuple[list[list[str]], float]:
    """The training split's input tags, jackknifed (``model.tag_jackknife`` = K): K taggers with the
    settings of ``model.tag_tagger``, each trained on the other K - 1 folds of this training split
    (``data.exclude_fold``), tag their own fold. The parser then trains on tags as wrong as those the
    full tagger gives it at test time (Stanza's parser learns from predicted tags; a tagger tagging
    its own training data is right too often). Kept in ``DIRECTORY/jackknife/tags.json``: a resumed
    run with the same tagger, seed and sentences reads them; the fold runs are removed once it is written.
    Returns the tags and the seconds an earlier start of the run spent on them (its kept tags, or
    fold taggers it finished before a crash), which the run's time counts as it counts epochs
    restored from a checkpoint. ``train`` trains a fold's tagger (``train_tagger``)."""
    column = resolve_tag_column(config.model, data, tagger)  # the cheap checks, before any fold trains
    if not config.model.tag_tagger or not column:
        raise SeqTransferError("model.tag_jackknife trains taggers like model.tag_tagger, which is not set", hint="set model.tag_tagger=TAGGER_RUN (or drop model.tag_jackknife)")
    folder = Path(directory) / JACKKNIFE
    identity = {"folds": config.model.tag_jackknife, "tagger": config.model.tag_tagger, "seed": config.train.seed, "tokens": data.tokens("train")}
    kept = kept_jackknife(folder, identity)
    if kept is not None:
        log(f"input tags: jackknifed training tags read from {folder / JACKKNIFE_TAGS}")
        return kept["tags"], kept.get("seconds", 0.0)
    started = time.perf_counter()
    settings = tagger(config.model.tag_tagger).run.config  # the tagger run's settings, which every fold takes
    sentences = fold_data_config(config.data, column, settings.data)
    gold = checked_training_split(sentences, identity["tokens"])
    tags, earlier_seconds = tag_by_folds(config, settings, sentences, identity["tokens"], folder, log, train)
    accuracy = tag_accuracy(tags, gold)
    seconds = round(time.perf_counter() - started + earlier_seconds, 1)
    log(f"input tags: jackknifed training tags ({identity['folds']} folds, {seconds:.0f} s) are {accuracy:.2f} % right")
    folder.mkdir(parents=True, exist_ok=True)
    kept = {**identity, "accuracy": round(accuracy, 2), "seconds": seconds, "tags": tags}
    write_text(folder / JACKKNIFE_TAGS, json.dumps(kept, ensure_ascii=False) + "\n")  # one line: a file of every training token
    for number in range(1, identity["folds"] + 1):
        shutil.rmtree(folder / f"fold-{number}", ignore_errors=True)
    return tags, earlier_seconds


def kept_jackknife(folder: Path, identity: dict) -> dict | None:
    """What an earlier start of this run kept (``tags``, ``seconds``, ``accuracy``), when its folds, tagger, seed and sentences are these."""
    path = folder / JACKKNIFE_TAGS
    if not path.is_file():
        return None
    kept = read_json(path)
    return kept if all(kept.get(key) == value for key, value in identity.items()) else None


def fold_data_config(mine, column: str, tagging):
    """The fold taggers' data: this run's sentences (``mine``: a dataset or files) labelled with
    ``column``, read as the tagger run reads its data (``tagging``: word normalisation, label map);
    nothing else changes the training split."""
    return DataConfig(
        dataset=mine.dataset,
        task=column,
        train=mine.train,
        dev=mine.dev,
        test=mine.test,
        columns=mine.columns,
        separator=mine.separator,
        strict=mine.strict,
        data_dir=mine.data_dir,
        max_train_sentences=mine.max_train_sentences,
        twitter_normalization=tagging.twitter_normalization,
        label_map=tagging.label_map,
    )


def checked_training_split(sentences, tokens: list[list[str]]) -> list[list[str]]:
    """The gold tags of the training split, which must be this run's training sentences."""
    gold = load_task_data(sentences, ("train",))
    if gold.tokens("train") != tokens:
        raise SeqTransferError(
            "model.tag_jackknife needs the data's own training split, and this run changed it (a subset, a selection, annealing or pseudo labels)",
            hint="drop model.tag_jackknife, or the setting that changes the training sentences",
        )
    return gold.gold("train")


def tag_by_folds(config, settings, sentences, tokens: list[list[str]], folder: Path, log, train: Train) -> tuple[list[list[str]], float]:
    """Each fold's sentences tagged by a tagger trained without them (trained now, or found finished
    in ``folder`` by a start that crashed), and the training seconds of the folds found finished."""
    count = config.model.tag_jackknife
    tags: list[list[str] | None] = [None] * len(tokens)
    earlier_seconds = 0.0
    for number in range(1, count + 1):
        run = folder / f"fold-{number}"
        if (run / "metrics.json").is_file():
            earlier_seconds += read_json(run / "metrics.json").get("seconds", 0.0)
        else:
            log(f"input tags: jackknife fold {number}/{count}: training a tagger on the other folds ({run})")
            train_fold_tagger(config, settings, replace(sentences, exclude_fold=f"{number}/{count}"), run, train)
        indices = [index for index in range(len(tokens)) if in_fold(index, number, count)]
        # loaded here, not through tagger()'s cache: the fold runs are removed afterwards
        for index, sentence_tags in zip(indices, predicted_tags(load_tagger(str(run), load_run), [tokens[index] for index in indices])):
            tags[index] = sentence_tags
    return tags, earlier_seconds


def tag_accuracy(tags: list[list[str]], gold: list[list[str]]) -> float:
    """Percent of tokens whose tag is the gold one."""
    right = sum(tag == wanted for sentence, truth in zip(tags, gold) for tag, wanted in zip(sentence, truth))
    return 100.0 * right / max(1, sum(len(sentence) for sentence in gold))


def train_fold_tagger(config, settings, fold_data, run: Path, train: Train) -> None:
    """Train one fold's tagger into ``run``: the tagger run's ``settings`` on ``fold_data``, with
    this run's seed, threads (and their sharing) and device. An unfinished fold (a crash) starts over: a fold is
    minutes, and this run's own scratch work."""
    settings = copy.deepcopy(settings)  # training fills it in
    settings.data = fold_data
    settings.train.seed, settings.train.threads, settings.train.device = config.train.seed, config.train.threads, config.train.device
    settings.train.share_cores = config.train.share_cores
    shutil.rmtree(run, ignore_errors=True)
    train(settings, run, log=lambda message: None, show_progress=False)
