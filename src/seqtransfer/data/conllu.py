"""CoNLL-U and CoNLL-U Plus (``.conllup``) files: UD treebanks, Tweebank, the MTT data.

Reading rules:

- token lines have TAB-separated fields named ``id word lemma upos xpos feats head deprel deps
  misc`` (FORM is called ``word``; all fields stay strings). A CoNLL-U Plus header
  ``# global.columns = ID TOKEN NORM ...`` renames them: lower-cased, TOKEN/FORM -> ``word``. A
  trailing empty field (a line ending in a TAB, as in the MTT ``.conllup`` files) is ignored;
- the ``word`` column becomes ``Sentence.tokens``; every other column goes to ``Sentence.columns``
  (including ``id``, so HEAD values keep their meaning);
- multiword-token ranges (``1-2``) and empty nodes (``8.1``) are not tagging tokens: they are kept
  verbatim in ``Sentence.extra_lines`` and written back in place;
- comment lines go to ``Sentence.comments`` without ``#`` and one following space; the
  ``global.columns`` header therefore ends up among the first sentence's comments;
- token IDs must be integers, ranges or empty nodes; a token ID 1 after tokens of the same
  sentence is an error (a missing blank line). Other numbering slips are tolerated because
  released files have them (Janes-Tag train has a sentence numbered 1 2 4 4 5).

Written by hand rather than with the ``conllu`` package: it is not a dependency, the format is
simple, and every error here must name the file and the 1-based line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from seqtransfer.data.corpus import Sentence, read_lines
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import atomic_write

UD_COLUMNS = ("id", "word", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
GLOBAL_COLUMNS = "global.columns"
WORD_NAMES = {"form": "word", "token": "word"}
FIELD_HINT = "token lines need one TAB-separated field per column (_ for an empty one); spaces do not separate fields"


def comment_text(line: str) -> str:
    """A comment line without its ``#`` and one following space."""
    text = line[1:]
    return text[1:] if text.startswith(" ") else text


def parse_global_columns(text: str, path: str | Path | None = None, line: int | None = None) -> tuple[str, ...]:
    """Column names from a ``global.columns = ID FORM ...`` comment (lower-cased, FORM/TOKEN -> word)."""
    declared = text.split("=", 1)[1].split() if "=" in text else []
    names = tuple(WORD_NAMES.get(name.lower(), name.lower()) for name in declared)
    if names.count("word") != 1 or len(set(names)) != len(names):
        raise SeqTransferError(
            "the global.columns header must name one FORM (or TOKEN) column and no column twice", path=path, line=line, hint="write it as '# global.columns = ID FORM LEMMA UPOS ...'"
        )
    return names


def read_conllu(path: str | Path, encoding: str = "utf-8") -> list[Sentence]:
    """Read a CoNLL-U or CoNLL-U Plus file into sentences (see module docstring for the rules)."""
    source = str(path)
    names = UD_COLUMNS
    sentences: list[Sentence] = []
    current = Sentence(tokens=[], source=source)
    rows: list[list[str]] = []
    for number, line in enumerate(read_lines(path, encoding), start=1):
        if not line.strip(" \t"):
            if rows:
                sentences.append(finish_sentence(current, rows, names))
                current, rows = Sentence(tokens=[], source=source), []
        elif line.startswith("#"):
            if rows:
                hint = "put a blank line between sentences"
                raise SeqTransferError("comment line inside a sentence", path=path, line=number, hint=hint)
            text = comment_text(line)
            if text.startswith(GLOBAL_COLUMNS):
                names = parse_global_columns(text, path, number)
            current.comments.append(text)
        else:
            fields = split_fields(line, len(names), path, number)
            id_index = names.index("id") if "id" in names else None
            if add_token(current, rows, fields, id_index, path, number) and current.line is None:
                current.line = number
    if rows:
        sentences.append(finish_sentence(current, rows, names))
    if not sentences:
        raise SeqTransferError("no sentences found (the file is empty or holds only comments)", path=path, hint="point to a non-empty CoNLL-U file")
    return sentences


def split_fields(line: str, expected: int, path: str | Path, number: int) -> list[str]:
    """The TAB-separated fields of a token line; a wrong count is an error."""
    fields = line.split("\t")
    if len(fields) == expected + 1 and fields[-1] == "":
        fields.pop()  # CoNLL-U Plus files of the MTT data end every token line with a TAB
    if len(fields) != expected:
        raise SeqTransferError(f"found {len(fields)} fields but expected {expected}", path=path, line=number, hint=FIELD_HINT)
    return fields


def add_token(sentence: Sentence, rows: list[list[str]], fields: list[str], id_index: int | None, path: str | Path, number: int) -> bool:
    """Add a token row, or keep a range / empty-node line aside; True when a token was added."""
    if id_index is None:  # a CoNLL-U Plus layout without an ID column
        rows.append(fields)
        return True
    identifier = fields[id_index]
    if identifier.isdigit():
        # Only a restart at 1 is checked: released files (e.g. Janes-Tag) have small numbering slips.
        if identifier == "1" and rows:
            raise SeqTransferError("token ID 1 inside a sentence", path=path, line=number, hint="end every sentence with a blank line")
        rows.append(fields)
        return True
    if is_range_or_empty_node(identifier):
        sentence.extra_lines.append((len(rows), "\t".join(fields)))
        return False
    raise SeqTransferError(f"token ID {identifier!r} is not an integer, a range (1-2) or an empty node (8.1)", path=path, line=number, hint="fix the ID column (the first field) of this line")


def is_range_or_empty_node(identifier: str) -> bool:
    """True for multiword-token ranges such as ``1-2`` and empty nodes such as ``8.1``."""
    for separator in ("-", "."):
        start, found, end = identifier.partition(separator)
        if found and start.isdigit() and end.isdigit():
            return True
    return False


def finish_sentence(sentence: Sentence, rows: list[list[str]], names: Sequence[str]) -> Sentence:
    """Fill tokens and columns of ``sentence`` from its token rows."""
    values = list(zip(*rows))  # one tuple per column
    for name, column in zip(names, values):
        if name == "word":
            sentence.tokens = list(column)
        else:
            sentence.columns[name] = list(column)
    return sentence


def write_conllu(path: str | Path, sentences: Iterable[Sentence], columns: Sequence[str] | None = None) -> None:
    """Write sentences atomically as CoNLL-U (or CoNLL-U Plus when ``columns`` is not the UD layout).

    ``columns`` defaults to the first sentence's ``global.columns`` header, else the 10 UD columns.
    Missing values are written as ``_``; a missing ``id`` column is numbered 1, 2, 3 ...
    """
    sentences = list(sentences)
    names = tuple(columns) if columns is not None else default_columns(sentences)
    header = header_comment(sentences, names)
    with atomic_write(path) as handle:
        if header is not None:
            handle.write(f"# {header}\n")
        for sentence in sentences:
            handle.write(format_sentence(sentence, names))


def default_columns(sentences: list[Sentence]) -> tuple[str, ...]:
    """The layout announced by the first sentence's ``global.columns`` comment, else UD's."""
    existing = find_global_columns(sentences)
    return UD_COLUMNS if existing is None else parse_global_columns(existing)


def find_global_columns(sentences: list[Sentence]) -> str | None:
    """The ``global.columns`` comment of the first sentence, if any."""
    if not sentences:
        return None
    return next((text for text in sentences[0].comments if text.startswith(GLOBAL_COLUMNS)), None)


def header_comment(sentences: list[Sentence], names: tuple[str, ...]) -> str | None:
    """The ``global.columns`` header to write: the existing one if it matches ``names``."""
    if "word" not in names:
        layout = ",".join(names)
        raise SeqTransferError(f"column layout {layout} has no 'word' column", hint="include word (FORM) in the columns")
    existing = find_global_columns(sentences)
    if existing is not None and parse_global_columns(existing) == names:
        return existing
    if names == UD_COLUMNS:
        return None
    return GLOBAL_COLUMNS + " = " + " ".join("FORM" if name == "word" else name.upper() for name in names)


def format_sentence(sentence: Sentence, names: tuple[str, ...]) -> str:
    """One sentence as CoNLL-U text: comments, token lines (with range/empty-node lines), blank line."""
    lines = [f"# {text}" if text else "#" for text in sentence.comments if not text.startswith(GLOBAL_COLUMNS)]
    extra = sorted(sentence.extra_lines, key=lambda item: item[0])
    position = 0
    for index, token in enumerate(sentence.tokens):
        while position < len(extra) and extra[position][0] <= index:
            lines.append(extra[position][1])
            position += 1
        lines.append("\t".join(field_value(sentence, name, index, token) for name in names))
    lines.extend(raw for _, raw in extra[position:])
    return "\n".join(lines) + "\n\n"


def field_value(sentence: Sentence, name: str, index: int, token: str) -> str:
    """One field of a token line; ``_`` when the sentence has no such column."""
    if name == "word":
        value = token
    elif name in sentence.columns:
        value = sentence.columns[name][index]
    else:
        value = str(index + 1) if name == "id" else "_"
    if not value or "\t" in value or "\n" in value:
        raise SeqTransferError(
            f"cannot write {name} value {value!r} of token {index + 1}: empty or containing a TAB/newline",
            path=sentence.source,
            line=sentence.line,
            hint="use _ for empty values and remove TABs/newlines from tokens and labels",
        )
    return value
