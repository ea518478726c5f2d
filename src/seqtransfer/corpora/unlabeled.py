"""Unlabelled text in: the words of sentences, from wherever a user has them.

Every command that takes unlabelled target text (``analyze similarity``, adversarial pretraining,
self-labelling) reads it with :func:`read_unlabeled`. An entry is one of:

- a registered dataset, ``NAME`` or ``NAME:SPLIT`` (default the training split; ``NAME:TASK``
  also works): its words, labels ignored;
- a registered raw-text corpus (:data:`RAW_CORPORA`, e.g. ``tweets_unlabeled``);
- a raw-text file, one sentence per line, split by ``tokenizer`` (``whitespace`` or ``tweet``,
  see :mod:`seqtransfer.data.tokenize`);
- a CoNLL-U file (``.conllu``/``.conllup``: the FORM column) or a column file with
  ``word_column`` (1-based: the column holding the words; the other columns are ignored).

A column file read without ``word_column`` (it would be taken for raw text with labels inside
the sentences), an empty file and a non-UTF-8 file are each one error line.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from seqtransfer.config import DataConfig
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.data.corpus import read_lines
from seqtransfer.data.locate import cache_root
from seqtransfer.data.registry import get_dataset
from seqtransfer.data.tokenize import TOKENIZERS
from seqtransfer.errors import SeqTransferError


@dataclass(frozen=True)
class RawCorpus:
    """A registered folder of raw-text files, one sentence per line."""

    folder: str  # under the data root
    pattern: str  # glob of its text files
    tokenizer: str
    description: str


RAW_CORPORA = {"tweets_unlabeled": RawCorpus("tweets_unlabeled/tweeteval", "**/*_text.txt", "tweet", "TweetEval tweets, text only: 55,170 lines in 29 files (labels not shipped)")}


def read_unlabeled(entry: str, data_dir: str | Path | None = None, tokenizer: str = "whitespace", word_column: int | None = None, word_option: str = "--word-column") -> list[list[str]]:
    """The sentences (lists of words) of an unlabelled-text entry; see the module docstring
    (``word_option``: how the caller's user sets ``word_column``, named in error hints)."""
    if tokenizer not in TOKENIZERS:
        raise SeqTransferError(f"unknown tokenizer '{tokenizer}'", hint=f"tokenizers: {', '.join(TOKENIZERS)}")
    path = Path(entry)
    if path.is_file():
        sentences = read_file(path, tokenizer, word_column, word_option)
    elif entry in RAW_CORPORA:
        sentences = read_raw_corpus(RAW_CORPORA[entry], data_dir)
    elif path.suffix or "/" in entry:
        raise SeqTransferError("file not found", path=entry, hint="check the path, or name a registered dataset")
    else:
        sentences = read_dataset(entry, data_dir)
    if not sentences:
        raise SeqTransferError("holds no sentences", path=entry, hint=f"give a file with one sentence per line (or a CoNLL file with {word_option})")
    return sentences


def read_dataset(entry: str, data_dir: str | Path | None) -> list[list[str]]:
    """Words of a registered dataset's split: ``NAME[+NAME...][:SPLIT]`` (default train; ``NAME:TASK`` reads train)."""
    names, _, part = entry.partition(":")
    sentences = []
    for name in names.split("+"):
        spec = get_dataset(name)
        if part and part not in spec.split_names() and part not in spec.tasks:
            raise SeqTransferError(
                f"'{part}' is neither a split nor a task of dataset '{name}'", path=entry, hint=f"name a split ({', '.join(spec.split_names())}) or a task ({', '.join(spec.tasks)}): {name}:SPLIT"
            )
        split = part if part in spec.split_names() else "train"
        task = part if part and part not in spec.split_names() else None
        data = load_task_data(DataConfig(dataset=name, task=task, data_dir=None if data_dir is None else str(data_dir)), (split,))
        sentences += data.tokens(split)
    return sentences


def read_raw_corpus(corpus: RawCorpus, data_dir: str | Path | None) -> list[list[str]]:
    """Every line of the corpus's files, split by its tokenizer."""
    split = TOKENIZERS[corpus.tokenizer]
    return [tokens for file in raw_corpus_files(corpus, data_dir) for line in read_lines(file) if (tokens := split(line))]


def raw_corpus_files(corpus: RawCorpus, data_dir: str | Path | None) -> list[Path]:
    """The corpus's text files, found as datasets are (--data-dir, $SEQTRANSFER_DATA, the cache)."""
    import os

    roots = [Path(data_dir).expanduser()] if data_dir is not None else []
    roots += [Path(os.environ["SEQTRANSFER_DATA"]).expanduser()] if os.environ.get("SEQTRANSFER_DATA") else []
    roots.append(cache_root())
    files = next((found for root in roots if (found := sorted((root / corpus.folder).glob(corpus.pattern)))), [])
    if not files:
        looked = ", ".join(str(root / corpus.folder) for root in roots)
        raise SeqTransferError(f"no text files of {corpus.folder} in {looked}", hint="set --data-dir or $SEQTRANSFER_DATA to the folder holding the datasets")
    return files


def read_text_lines(entry: str, data_dir: str | Path | None = None, keep_test: bool = False) -> tuple[list[str], list[str], int]:
    """Raw lines (untokenised, non-blank) of a text file or a registered raw corpus, the files left
    out and how many kept-file lines were dropped for repeating a left-out line: unless
    ``keep_test``, a corpus's ``test`` files are left out, and so is every other line with the same
    text (TweetEval's test tweets stay unseen, though some of them recur in its training files)."""
    path = Path(entry)
    if path.is_file():
        files, left_out = [path], []
    elif entry in RAW_CORPORA:
        every = raw_corpus_files(RAW_CORPORA[entry], data_dir)
        left_out = [] if keep_test else [file for file in every if file.name.startswith("test")]
        files = [file for file in every if file not in left_out]
    else:
        raise SeqTransferError("no such text file or raw corpus", path=entry, hint=f"give a file of one sentence per line, or one of: {', '.join(RAW_CORPORA)}")
    unseen = {line.strip() for file in left_out for line in read_lines(file)}
    candidates = [line.strip() for file in files for line in read_lines(file) if line.strip()]
    lines = [line for line in candidates if line not in unseen]
    if not lines:
        raise SeqTransferError("holds no text", path=entry, hint="give a file with one sentence per line")
    return lines, [str(file) for file in left_out], len(candidates) - len(lines)


def read_file(path: Path, tokenizer: str, word_column: int | None, word_option: str = "--word-column") -> list[list[str]]:
    """Raw text (one sentence per line) or the word column of a column / CoNLL-U file."""
    lines = read_lines(path)
    if path.suffix in (".conllu", ".conllup"):
        return column_sentences(path, lines, 2 if word_column is None else word_column, conllu=True, word_option=word_option)
    if word_column is not None:
        return column_sentences(path, lines, word_column, conllu=False, word_option=word_option)
    columns = looks_like_columns(lines)
    if columns:
        count, line = columns
        raise SeqTransferError(
            f"looks like a column file ({count} columns per line), not raw text",
            path=path,
            line=line,
            hint=f"set {word_option} N (1..{count}) to read the words of column N (the other columns are ignored), or give one sentence per line",
        )
    table = tab_fields(lines)
    if table:
        count, share = table
        raise SeqTransferError(
            f"looks like a table of {count} TAB-separated fields on {share} (a sentence and its label?), not raw text",
            path=path,
            line=1,
            hint="give the sentences alone, one per line (e.g. cut -f1 FILE > sentences.txt)",
        )
    split = TOKENIZERS[tokenizer]
    return [tokens for line in lines if (tokens := split(line))]


def tab_fields(lines: list[str]) -> tuple[int, str] | None:
    """(fields, share of the lines) when at least 90 % of the non-blank lines (two at least) are
    TAB-separated into one and the same number (2 or more) of fields: a table (SST-2's sentence TAB
    label, a few lines broken or not), not raw text, which seldom holds a TAB at all."""
    filled = [line.count("\t") + 1 for line in lines if line.strip()]
    if len(filled) < 2:
        return None
    count, times = Counter(filled).most_common(1)[0]
    return (count, "every line" if times == len(filled) else f"{times} of {len(filled)} lines") if count >= 2 and times >= 0.9 * len(filled) else None


def split_fields(line: str) -> list[str]:
    return line.split("\t") if "\t" in line else line.split()


def looks_like_columns(lines: list[str]) -> tuple[int, int] | None:
    """(columns, first line) when the lines are a column file: blank lines between groups and at
    least 90 % of the other lines with one and the same number (2..20) of fields; or, with no blank
    line (a file of one sentence), at least two lines, every one of them TAB-separated into one and
    the same number (2..20) of fields, none holding a space (raw text seldom holds a TAB, let alone
    on every line; a table of sentences, such as SST-2's sentence TAB label, holds spaces)."""
    filled = [(number, len(split_fields(line))) for number, line in enumerate(lines, start=1) if line.strip() and not line.startswith("#")]
    if not filled:
        return None
    count, times = Counter(fields for _, fields in filled).most_common(1)[0]
    if all(line.strip() for line in lines):
        tokens = [lines[number - 1] for number, _ in filled]
        one_sentence = len(filled) >= 2 and times == len(filled) and all("\t" in line and " " not in line for line in tokens)
        return (count, filled[0][0]) if one_sentence and 2 <= count <= 20 else None
    if 2 <= count <= 20 and times >= 0.9 * len(filled):
        return count, filled[0][0]
    return None


def column_sentences(path: Path, lines: list[str], word_column: int, conllu: bool, word_option: str = "--word-column") -> list[list[str]]:
    """The words of column ``word_column`` (1-based), sentences separated by blank lines."""
    if word_column < 1:
        raise SeqTransferError(f"{word_option} must be 1 or more, got {word_column}", path=path)
    sentences, current = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            if current:
                sentences.append(current)
            current = []
            continue
        if line.startswith("#"):
            continue
        fields = split_fields(line)
        if conllu and ("-" in fields[0] or "." in fields[0]):  # multiword-token range or empty node
            continue
        if len(fields) < word_column:
            raise SeqTransferError(f"line has {len(fields)} columns, no column {word_column}", path=path, line=number, hint=f"check {word_option}")
        current.append(fields[word_column - 1])
    if current:
        sentences.append(current)
    if len(sentences) == 1 and any(" " in word for word in sentences[0]):
        raise SeqTransferError(
            f"column {word_column} holds text with spaces and the file no blank line: a table of sentences, not of words",
            path=path,
            hint="give the sentences alone, one per line (e.g. cut -f1 FILE > sentences.txt)",
        )
    return sentences
