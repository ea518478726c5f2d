"""Tags as an input feature: the parser's optional UPOS (``model.tag_feature``).

Stanza's parser (Qi et al. 2018) joins an embedding of each word's UPOS tag to its word
representation. The tags are either gold, read from a column of the data (CoNLL-U UPOS), or
predicted by a tagging run (``model.tag_tagger``). A tagger then tags every split (training
included) and every sentence given at prediction time, so that the model reads tags of one kind
throughout, and raw text needs no tags.

Loading a tagger is the run loader's work (``rundir.tagger``), above this layer: it is passed in
(``tagger``, a function from the tagger's directory to its loaded predictor), and vocabularies
that read predicted tags carry their tagger's predictions (``Vocabularies.tag_predictor``, set
when a run is trained or loaded).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from seqtransfer.data.corpus import Sentence
from seqtransfer.data.vocabulary import Vocabulary
from seqtransfer.errors import SeqTransferError

TagPredictor = Callable[[Sequence[Sequence[str]]], list[list[str]]]  # token lists -> a tagger's tags for them


def feature_tags(vocabularies, tokens: Sequence[Sequence[str]], sentences: Sequence[Sentence] | None = None) -> list[list[str]] | None:
    """The input tags of each sentence: the tagger's, else the ``tag_column`` of ``sentences``; None when the model reads no tags."""
    if vocabularies.tags is None:
        return None
    if vocabularies.tagger and vocabularies.tag_predictor is None:  # vocabularies read without the run loader (rundir.read_vocabularies)
        raise SeqTransferError(f"these vocabularies read tags predicted by {vocabularies.tagger}, and no tagger was given them", hint="load the run with seqtransfer.load or rundir.load_run")
    return input_tags(vocabularies.tag_column, vocabularies.tag_predictor, tokens, sentences)


def input_tags(column: str, tagging: TagPredictor | None, tokens: Sequence[Sequence[str]], sentences: Sequence[Sentence] | None = None) -> list[list[str]]:
    """The tagger's tags for ``tokens`` when there is one (``tagging``), else the ``column`` of ``sentences``."""
    if tagging is not None:
        return tagging(tokens)
    if sentences is None:
        raise SeqTransferError(
            f"this model reads '{column}' tags as an input feature, and the input has none",
            hint=f"give CoNLL-U input (or CoNLL with a '{column}' column), or train with model.tag_tagger=TAGGER_RUN so that the model tags its input itself",
        )
    return column_tags(sentences, column)


def column_tags(sentences: Sequence[Sentence], column: str) -> list[list[str]]:
    """The ``column`` of every sentence; a sentence without it is an error naming its file and line."""
    for sentence in sentences:
        if column not in sentence.columns:
            known = ", ".join(sorted(sentence.columns)) or "none"
            raise SeqTransferError(
                f"the model reads '{column}' tags as an input feature; this sentence has no such column (columns: {known})",
                path=sentence.source,
                line=sentence.line,
                hint=f"give input with a '{column}' column, or a tagger with model.tag_tagger=TAGGER_RUN",
            )
    return [sentence.columns[column] for sentence in sentences]


_RECENT: dict[tuple, list[list[str]]] = {}  # (tagger, sentences) -> tags: a run tags its training split for the vocabulary, then again to encode it


def tag_predictor(tagger: Callable[[str], object], directory: str) -> TagPredictor:
    """The tags the tagging run at ``directory`` predicts for token lists, loaded by ``tagger`` when first needed."""
    return functools.partial(tagger_predictions, tagger, directory)


def tagger_predictions(tagger: Callable[[str], object], directory: str, tokens: Sequence[Sequence[str]]) -> list[list[str]]:
    """The tags the tagging run at ``directory`` (loaded by ``tagger``) predicts for ``tokens`` (the last few answers are remembered)."""
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
    threads = torch.get_num_threads()
    try:
        return [list(tags) for tags in predictor.predict_raw([list(sentence) for sentence in tokens], cache_features=True)]  # a dataset's sentences
    finally:
        torch.set_num_threads(threads)


def tag_vocabulary(tags: Sequence[Sequence[str]], base: Vocabulary | None = None) -> Vocabulary:
    """Padding, unknown, then the training tags by frequency (a source's tags keep their indices)."""
    return Vocabulary.build((tag for sentence in tags for tag in sentence), base=base)


def resolve_tag_column(model_config, data, tagger: Callable[[str], object]) -> str | None:
    """The column whose tags the model reads (``model.tag_feature``, else the task of the tagger
    ``tagger`` loads; the tagger's path made absolute), or None; a setting that cannot work is one line."""
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


def add_tag_vocabulary(model_config, data, vocabularies, tagger: Callable[[str], object], base=None) -> str | None:
    """Fill the input tags of ``vocabularies`` (and ``model_config.tag_count``) from the training
    data, when ``model.tag_feature`` or ``model.tag_tagger`` asks for them (the tagger loaded by
    ``tagger``, ``rundir.tagger``); a line for the log."""
    column = resolve_tag_column(model_config, data, tagger)
    if not column:
        return None
    tagging = tag_predictor(tagger, model_config.tag_tagger) if model_config.tag_tagger else None
    tags = data.train_tags if data.train_tags is not None else input_tags(column, tagging, data.tokens("train"), data.splits["train"])
    vocabularies.tags = tag_vocabulary(tags, base.tags if base is not None and base.tags is not None else None)
    vocabularies.tag_column, vocabularies.tagger, vocabularies.tag_predictor = column, model_config.tag_tagger, tagging
    model_config.tag_count = len(vocabularies.tags)
    origin = f"predicted by {model_config.tag_tagger}" if model_config.tag_tagger else f"the gold '{column}' column"
    origin += f" (training tags jackknifed in {model_config.tag_jackknife} folds)" if data.train_tags is not None else ""
    return f"input tags: {len(vocabularies.tags) - 2} {column} tags, {origin}, {model_config.tag_dimension} dimensions"
