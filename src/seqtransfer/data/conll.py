"""Column files (CoNLL-2000/2003, WNUT-17, T-POS, ARK ...): one token per line, blank line between sentences.

Reading rules:

- the separator is chosen per file (``separator="auto"``): when token lines hold TABs, fields
  are split on TABs (runs of TABs count as one; spaces around a field are dropped, spaces
  inside it kept, so a token may be "ke s"), and a token line without a TAB is split on spaces;
  otherwise fields are split on runs of spaces. An empty token (a line that is only ``\tO``)
  is read as ``<empty>`` with one warning naming the lines. ``separator="tab"`` or ``"space"``
  forces one way. Only TAB and space separate fields: other Unicode spaces are token text (ARK
  has a token that is a lone U+00A0);
- a line that is empty or holds only whitespace ends a sentence (WNUT-17 train separates
  sentences with a single TAB);
- ``-DOCSTART-`` document lines are skipped and also end a sentence; empty sentences are never
  produced;
- comment lines before a sentence (``# sent_id = 1``; or a ``#`` line whose fields, split as the
  file's are, are not as many as a token line's) are left out with one warning naming them; a
  ``#`` or ``#hashtag`` token line with its label (``#love O``, ``#`` TAB ``O``) stays a token;
- ``columns`` names the columns in order; exactly one must be ``"word"`` (the token) and ``"_"``
  drops a column. Without ``columns`` the names are inferred from the first token line:
  ``word label`` for 2 columns, ``word col1 ... colN label`` for more (the last column is the
  label, e.g. 4 columns -> ``word col1 col2 label``).

Written by hand rather than with a library: the format is a few lines of splitting, and we need
1-based line numbers in every error message plus speed (CoNLL-2003 train in ~0.2 s).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from seqtransfer.data.corpus import Sentence, read_lines
from seqtransfer.errors import SeqTransferError, warn
from seqtransfer.files import atomic_write

WORD = "word"
IGNORED = "_"
DOCUMENT_START = "-DOCSTART-"
EMPTY_TOKEN = "<empty>"
SEPARATORS = ("auto", "tab", "space")
# A CoNLL-U style comment before a sentence (``# sent_id = 1``, ``# text = ...``), as tools that
# write column files often add: "#", a space, a key, a space, "=". Spaces only: "#<TAB>Number=Sing<TAB>O" is a token line.
COMMENT = re.compile(r"^# +[\w.-]+ +=( |$)")


def infer_columns(count: int) -> list[str]:
    """Default column names for a file with ``count`` columns (see module docstring)."""
    if count == 1:
        return [WORD]
    return [WORD] + [f"col{index}" for index in range(1, count - 1)] + ["label"]


def check_columns(columns: Sequence[str], path: str | Path | None = None) -> list[str]:
    """Validate a column layout: one ``word``, no duplicated names (``_`` may repeat)."""
    names = [name.strip() for name in columns]
    layout = ",".join(names)
    if names.count(WORD) != 1:
        raise SeqTransferError(f"column layout '{layout}' must name exactly one 'word' column", path=path, hint="list every column in file order, e.g. --columns word,pos,chunk (use _ to skip one)")
    named = [name for name in names if name != IGNORED]
    duplicated = sorted({name for name in named if named.count(name) > 1})
    if duplicated or "" in named:
        problem = f"repeats {', '.join(duplicated)}" if duplicated else "has an empty name"
        raise SeqTransferError(f"column layout '{layout}' {problem}", path=path, hint="give every column its own name, or _ to skip it")
    return names


def read_conll(path: str | Path, columns: Sequence[str] | None = None, encoding: str = "utf-8", separator: str = "auto") -> list[Sentence]:
    """Read a column file into sentences (see module docstring for the rules)."""
    source = str(path)
    names = None if columns is None else check_columns(columns, path)
    lines = read_lines(path, encoding)
    tabbed = uses_tabs(lines, separator, path)
    sentences: list[Sentence] = []
    rows: list[list[str]] = []
    empty_tokens: list[int] = []
    first_line = 0
    comments: list[int] = []
    mode = separator if tabbed else "space"
    width = len(names) if names else token_width(lines, mode)
    for number, line in enumerate(lines, start=1):
        if not rows and is_comment(line, mode, width):
            comments.append(number)
            continue
        fields = line_fields(line, mode, names)
        if not fields or fields[0] == DOCUMENT_START:
            if rows:
                sentences.append(build_sentence(rows, names, source, first_line))
                rows = []
            continue
        if fields[0] == "" and (names or [WORD])[0] == WORD:
            fields[0] = EMPTY_TOKEN
            empty_tokens.append(number)
        if names is None:
            names = infer_columns(len(fields))
        if len(fields) != len(names):
            raise column_count_error(path, number, len(fields), names, columns is None)
        if not rows:
            first_line = number
        rows.append(fields)
    if rows:
        sentences.append(build_sentence(rows, names, source, first_line))
    if not sentences:
        raise SeqTransferError("no sentences found (the file is empty or holds only blank and -DOCSTART- lines)", path=path, hint="point to a non-empty CoNLL column file")
    if empty_tokens:
        warn(f"{path}: {len(empty_tokens)} empty tokens (lines {shown_lines(empty_tokens)}) read as '{EMPTY_TOKEN}'")
    if comments:
        plural = "s" if len(comments) > 1 else ""
        warn(f"{path}: {len(comments)} comment line{plural} before sentences (line{plural} {shown_lines(comments)}, e.g. '{lines[comments[0] - 1][:40]}') left out")
    return sentences


def shown_lines(numbers: Sequence[int]) -> str:
    """The first five line numbers, and "..." where there are more."""
    return ", ".join(map(str, numbers[:5])) + (", ..." if len(numbers) > 5 else "")


def is_comment(line: str, mode: str, width: int | None) -> bool:
    """Whether ``line``, before a sentence's first token, is a comment: ``# key = value`` (CoNLL-U's
    ``# sent_id = 1``) without a TAB, or a ``#`` line that read as a token line (``mode``: how the
    file's fields split) would not have the file's ``width`` fields. A ``#`` or ``#hashtag`` token
    line with its label (``#love O``, ``#<TAB>O``) stays a token line."""
    if not line.startswith("#"):
        return False
    if COMMENT.match(line) and "\t" not in line:
        return True
    return width is not None and len(line_fields(line, mode, None)) != width


def token_width(lines: Sequence[str], mode: str) -> int | None:
    """The field count of the file's first token line (not blank, not a ``#`` line, not ``-DOCSTART-``)."""
    for line in lines:
        if line.strip() and not line.startswith("#"):
            fields = line_fields(line, mode, None)
            if fields and fields[0] != DOCUMENT_START:
                return len(fields)
    return None


def uses_tabs(lines: Sequence[str], separator: str, path: str | Path) -> bool:
    """Whether fields are TAB-separated: forced by ``separator``, else when a token line holds a TAB."""
    if separator not in SEPARATORS:
        raise SeqTransferError(f"unknown separator '{separator}'", path=path, hint=f"use one of: {', '.join(SEPARATORS)}")
    if separator != "auto":
        return separator == "tab"
    return any("\t" in line.rstrip(" \t") for line in lines)


def line_fields(line: str, separator: str, names: list[str] | None) -> list[str]:
    """The fields of one line under ``separator`` (auto, tab or space; see the module docstring).

    A TAB-separated line keeps spaces inside its token; if a label field would hold a space the
    line is split on spaces instead (and its column count tells). A leading TAB is an empty token
    when that gives the file's column count, else indentation.
    """
    if separator == "space" or "\t" not in line.rstrip(" \t"):
        if separator == "tab" and line.strip(" \t"):  # forced TABs: a token line without one is one field
            return [line.strip(" ")]
        return split_fields(line)
    pieces = [piece.strip(" ") for piece in line.split("\t")]
    rest = [piece for piece in pieces[1:] if piece]  # runs of TABs separate once
    fields = [pieces[0], *rest]
    if pieces[0] == "" and names is not None and len(fields) != len(names):
        fields = rest  # indentation, not an empty token
    word_at = names.index(WORD) if names else 0
    if separator == "auto" and any(" " in field for position, field in enumerate(fields) if position != word_at):
        return split_fields(line)
    return fields


def split_fields(line: str) -> list[str]:
    """The fields of a line, separated by runs of spaces/TABs (``str.split()`` would also split
    on Unicode spaces such as U+00A0 that occur as tokens in tweets)."""
    fields = line.replace("\t", " ").split(" ")
    if "" in fields:  # leading/trailing/repeated separators, or a blank line
        fields = [field for field in fields if field]
    return fields


def build_sentence(rows: list[list[str]], names: list[str], source: str, line: int) -> Sentence:
    """Turn token rows (one list of fields per token) into a Sentence."""
    values = list(zip(*rows))  # one tuple per column
    columns = {name: list(column) for name, column in zip(names, values) if name not in (WORD, IGNORED)}
    tokens = list(values[names.index(WORD)])
    return Sentence(tokens=tokens, columns=columns, source=source, line=line)


def column_count_error(path: str | Path, line: int, found: int, names: list[str], inferred: bool) -> SeqTransferError:
    """The error for a token line whose number of fields differs from the expected one."""
    origin = "the first token line" if inferred else "the column layout " + ",".join(names)
    return SeqTransferError(
        f"found {found} columns but expected {len(names)} (from {origin})",
        path=path,
        line=line,
        hint="make every token line have the same number of fields (in a TAB-separated file tokens may hold spaces; --separator tab|space forces one)",
    )


def write_conll(path: str | Path, sentences: Iterable[Sentence], columns: Sequence[str]) -> None:
    """Write sentences atomically as TAB-separated columns in the order of ``columns``.

    ``columns`` must name ``word``; ``_`` writes a literal ``_``. TAB (not space) separates the
    fields; a blank line follows every sentence. The output reads back with :func:`read_conll`.
    """
    names = check_columns(columns, path)
    with atomic_write(path) as handle:
        for sentence in sentences:
            for index, token in enumerate(sentence.tokens):
                fields = [field_value(sentence, name, index, token) for name in names]
                handle.write("\t".join(fields) + "\n")
            handle.write("\n")


def field_value(sentence: Sentence, name: str, index: int, token: str) -> str:
    """One field to write; values that would not read back (empty, with spaces) are errors."""
    if name == IGNORED:
        return IGNORED
    value = token if name == WORD else sentence.labels(name)[index]
    if not value or " " in value or "\t" in value or "\n" in value:
        raise SeqTransferError(
            f"cannot write {name} value {value!r} of token {index + 1}: empty or containing a space/TAB",
            path=sentence.source,
            line=sentence.line,
            hint="replace spaces/TABs inside tokens and labels (e.g. with _) before writing a column file",
        )
    return value


_SPACES = re.compile(r"[ \t]")  # a space or TAB inside a field would split it


def write_prediction_lines(path: Path, tokens: list[list[str]], gold: list[list[str]] | None, predicted: list[list[str]]) -> None:
    """One ``token [gold] predicted`` line per token, blank line between sentences.

    Fields are separated by one space, conlleval's default delimiter; a space or TAB inside a
    token (possible in CoNLL-U) or a label (MTT's merged tags, ``Q Vmpr1s``) is written as ``_``
    so the line keeps its three fields.
    """
    with atomic_write(path) as handle:
        for index, sentence in enumerate(tokens):
            for position, token in enumerate(sentence):
                columns = [token] + ([gold[index][position]] if gold is not None else []) + [predicted[index][position]]
                columns = [_SPACES.sub("_", field) for field in columns]
                handle.write(" ".join(columns) + "\n")
            handle.write("\n")
