"""Tags as an input feature: the parser's optional UPOS (``model.tag_feature``).

Stanza's parser (Qi et al. 2018) joins an embedding of each word's UPOS tag to its word
representation. The tags are either gold, read from a column of the data (CoNLL-U UPOS), or
predicted by a tagging run (``model.tag_tagger``). A tagger then tags every split (training
included) and every sentence given at prediction time, so that the model reads tags of one kind
throughout, and raw text needs no tags.
"""

from __future__ import annotations

import functools
import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from seqtransfer.data.corpus import Sentence
from seqtransfer.data.vocabulary import Vocabulary
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_json, write_text


def feature_tags(vocabularies, tokens: Sequence[Sequence[str]], sentences: Sequence[Sentence] | None = None) -> list[list[str]] | None:
    """The input tags of each sentence: the tagger's, else the ``tag_column`` of ``sentences``; None when the model reads no tags."""
    if vocabularies.tags is None:
        return None
    return input_tags(vocabularies.tag_column, vocabularies.tagger, tokens, sentences)


def input_tags(column: str, tagger_directory: str | None, tokens: Sequence[Sequence[str]], sentences: Sequence[Sentence] | None = None) -> list[list[str]]:
    """The tagger's tags for ``tokens`` when there is one, else the ``column`` of ``sentences``."""
    if tagger_directory:
        return tagger_predictions(tagger_directory, tokens)
    if sentences is None:
        raise SeqTransferError(f"this model reads '{column}' tags as an input feature, and the input has none",
                               hint=f"give CoNLL-U input (or CoNLL with a '{column}' column), or train with model.tag_tagger=TAGGER_RUN so that the model tags its input itself")
    return column_tags(sentences, column)


def column_tags(sentences: Sequence[Sentence], column: str) -> list[list[str]]:
    """The ``column`` of every sentence; a sentence without it is an error naming its file and line."""
    for sentence in sentences:
        if column not in sentence.columns:
            known = ", ".join(sorted(sentence.columns)) or "none"
            raise SeqTransferError(f"the model reads '{column}' tags as an input feature; this sentence has no such column (columns: {known})",
                                   path=sentence.source, line=sentence.line,
                                   hint=f"give input with a '{column}' column, or a tagger with model.tag_tagger=TAGGER_RUN")
    return [sentence.columns[column] for sentence in sentences]


_RECENT: dict[tuple, list[list[str]]] = {}  # (tagger, sentences) -> tags: a run tags its training split for the vocabulary, then again to encode it


def tagger_predictions(directory: str, tokens: Sequence[Sequence[str]]) -> list[list[str]]:
    """The tags a tagging run predicts for ``tokens`` (the last few answers are remembered)."""
    key = (directory, tuple(tuple(sentence) for sentence in tokens))
    if key in _RECENT:
        return [list(tags) for tags in _RECENT[key]]
    tags = predicted_tags(tagger(directory), tokens)
    if len(_RECENT) >= 4:
        _RECENT.pop(next(iter(_RECENT)))
    _RECENT[key] = tags
    return [list(sentence) for sentence in tags]


def predicted_tags(predictor, tokens: Sequence[Sequence[str]]) -> list[list[str]]:
    """A loaded tagger's tags for ``tokens``; the caller's thread count is kept (loading a run sets its own)."""
    import torch

    threads = torch.get_num_threads()
    try:
        return [list(tags) for tags in predictor.predict_raw([list(sentence) for sentence in tokens], cache_features=True)]  # a dataset's sentences
    finally:
        torch.set_num_threads(threads)


@functools.lru_cache(maxsize=4)
def tagger(directory: str):
    """The tagging run at ``directory``, loaded once per process."""
    return load_tagger(directory)


def load_tagger(directory: str):
    """The tagging run at ``directory`` as a predictor; the caller's random state stays as it was."""
    from seqtransfer.predictor import load

    if not (Path(directory) / "config.yaml").is_file():
        raise SeqTransferError("model.tag_tagger is not a run directory", path=directory, hint="pass the folder of a tagging run (seqtransfer train --task upos ...)")
    import torch

    with torch.random.fork_rng(devices=[]):  # building the model draws initial weights
        predictor = load(directory)
    if predictor.kind.name != "tagging":
        raise SeqTransferError(f"model.tag_tagger must be a tagging run; this one is a {predictor.kind.name} run", path=directory,
                               hint="train a tagger first, e.g. seqtransfer train --dataset ud_ewt --task upos")
    return predictor


def tag_vocabulary(tags: Sequence[Sequence[str]], base: Vocabulary | None = None) -> Vocabulary:
    """Padding, unknown, then the training tags by frequency (a source's tags keep their indices)."""
    return Vocabulary.build((tag for sentence in tags for tag in sentence), base=base)


def resolve_tag_column(model_config, data) -> str | None:
    """The column whose tags the model reads (``model.tag_feature``, else the tagger's task; the
    tagger's path made absolute), or None; a setting that cannot work is one line."""
    if model_config.tag_tagger:
        model_config.tag_tagger = str(Path(model_config.tag_tagger).resolve())
        tagging = tagger(model_config.tag_tagger).run
        model_config.tag_feature = model_config.tag_feature or tagging.config.data.task or tagging.metrics.get("task")
        if not model_config.tag_feature:
            raise SeqTransferError("the tagger run names no task: which column do its tags stand for?", path=model_config.tag_tagger, hint="set model.tag_feature=COLUMN (e.g. upos)")
    column = model_config.tag_feature
    if not column:
        return None
    if model_config.encoder and model_config.encoder_mode == "finetune":
        raise SeqTransferError("a fine-tuned encoder reads sub-words only, not input tags", hint="drop model.tag_feature, or use model.encoder_mode=features (the tags join the word representation)")
    if column == data.column:
        raise SeqTransferError(f"model.tag_feature '{column}' is the column this run learns to predict", hint="read another column (e.g. upos for a parser), or drop model.tag_feature")
    return column


def add_tag_vocabulary(model_config, data, vocabularies, base=None) -> str | None:
    """Fill the input tags of ``vocabularies`` (and ``model_config.tag_count``) from the training
    data, when ``model.tag_feature`` or ``model.tag_tagger`` asks for them; a line for the log."""
    column = resolve_tag_column(model_config, data)
    if not column:
        return None
    tags = data.train_tags if data.train_tags is not None else input_tags(column, model_config.tag_tagger, data.tokens("train"), data.splits["train"])
    vocabularies.tags = tag_vocabulary(tags, base.tags if base is not None and base.tags is not None else None)
    vocabularies.tag_column, vocabularies.tagger = column, model_config.tag_tagger
    model_config.tag_count = len(vocabularies.tags)
    origin = f"predicted by {model_config.tag_tagger}" if model_config.tag_tagger else f"the gold '{column}' column"
    origin += f" (training tags jackknifed in {model_config.tag_jackknife} folds)" if data.train_tags is not None else ""
    return f"input tags: {len(vocabularies.tags) - 2} {column} tags, {origin}, {model_config.tag_dimension} dimensions"


JACKKNIFE = "jackknife"  # the run directory's folder of the fold taggers (removed once their tags are kept)
JACKKNIFE_TAGS = "tags.json"


def jackknife_tags(config, data, directory: Path, log) -> tuple[list[list[str]], float]:
    """The training split's input tags, jackknifed (``model.tag_jackknife`` = K): K taggers with the
    settings of ``model.tag_tagger``, each trained on the other K - 1 folds of this training split
    (``data.exclude_fold``), tag their own fold. The parser then trains on tags as wrong as those the
    full tagger gives it at test time (Stanza's parser learns from predicted tags; a tagger tagging
    its own training data is right too often). Kept in ``DIRECTORY/jackknife/tags.json``: a resumed
    run with the same tagger, seed and sentences reads them; the fold runs are removed once it is written.
    Returns the tags and the seconds an earlier start of the run spent on them (its kept tags, or
    fold taggers it finished before a crash), which the run's time counts as it counts epochs
    restored from a checkpoint."""
    column = resolve_tag_column(config.model, data)  # the cheap checks, before any fold trains
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
    tags, earlier_seconds = tag_by_folds(config, settings, sentences, identity["tokens"], folder, log)
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
    from seqtransfer.config import DataConfig

    return DataConfig(dataset=mine.dataset, task=column, train=mine.train, dev=mine.dev, test=mine.test, columns=mine.columns, separator=mine.separator,
                      strict=mine.strict, data_dir=mine.data_dir, max_train_sentences=mine.max_train_sentences,
                      twitter_normalization=tagging.twitter_normalization, label_map=tagging.label_map)


def checked_training_split(sentences, tokens: list[list[str]]) -> list[list[str]]:
    """The gold tags of the training split, which must be this run's training sentences."""
    from seqtransfer.data.task_data import load_task_data

    gold = load_task_data(sentences, ("train",))
    if gold.tokens("train") != tokens:
        raise SeqTransferError("model.tag_jackknife needs the data's own training split, and this run changed it (a subset, a selection, annealing or pseudo labels)",
                               hint="drop model.tag_jackknife, or the setting that changes the training sentences")
    return gold.gold("train")


def tag_by_folds(config, settings, sentences, tokens: list[list[str]], folder: Path, log) -> tuple[list[list[str]], float]:
    """Each fold's sentences tagged by a tagger trained without them (trained now, or found finished
    in ``folder`` by a start that crashed), and the training seconds of the folds found finished."""
    from dataclasses import replace

    from seqtransfer.data.task_data import in_fold

    count = config.model.tag_jackknife
    tags: list[list[str] | None] = [None] * len(tokens)
    earlier_seconds = 0.0
    for number in range(1, count + 1):
        run = folder / f"fold-{number}"
        if (run / "metrics.json").is_file():
            earlier_seconds += read_json(run / "metrics.json").get("seconds", 0.0)
        else:
            log(f"input tags: jackknife fold {number}/{count}: training a tagger on the other folds ({run})")
            train_fold_tagger(config, settings, replace(sentences, exclude_fold=f"{number}/{count}"), run)
        indices = [index for index in range(len(tokens)) if in_fold(index, number, count)]
        # loaded here, not through tagger()'s cache: the fold runs are removed afterwards
        for index, sentence_tags in zip(indices, predicted_tags(load_tagger(str(run)), [tokens[index] for index in indices])):
            tags[index] = sentence_tags
    return tags, earlier_seconds


def tag_accuracy(tags: list[list[str]], gold: list[list[str]]) -> float:
    """Percent of tokens whose tag is the gold one."""
    right = sum(tag == wanted for sentence, truth in zip(tags, gold) for tag, wanted in zip(sentence, truth))
    return 100.0 * right / max(1, sum(len(sentence) for sentence in gold))


def train_fold_tagger(config, settings, fold_data, run: Path) -> None:
    """Train one fold's tagger into ``run``: the tagger run's ``settings`` on ``fold_data``, with
    this run's seed, threads and device. An unfinished fold (a crash) starts over: a fold is
    minutes, and this run's own scratch work."""
    import copy

    from seqtransfer.training.train import train_tagger

    settings = copy.deepcopy(settings)  # training fills it in
    settings.data = fold_data
    settings.train.seed, settings.train.threads, settings.train.device = config.train.seed, config.train.threads, config.train.device
    shutil.rmtree(run, ignore_errors=True)
    train_tagger(settings, run, log=lambda message: None, show_progress=False)
