"""Tags as an input feature: the parser's optional UPOS (``model.tag_feature``).

Stanza's parser (Qi et al. 2018) joins an embedding of each word's UPOS tag to its word
representation. The tags are either gold, read from a column of the data (CoNLL-U UPOS), or
predicted by a tagging run (``model.tag_tagger``). A tagger then tags every split (training
included) and every sentence given at prediction time, so that the model reads tags of one kind
throughout, and raw text needs no tags.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from seqtransfer.data.corpus import Sentence
from seqtransfer.data.vocabulary import Vocabulary
from seqtransfer.errors import SeqTransferError


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
        raise SeqTransferError(
            f"model.tag_tagger must be a tagging run; this one is a {predictor.kind.name} run", path=directory, hint="train a tagger first, e.g. seqtransfer train --dataset ud_ewt --task upos"
        )
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
