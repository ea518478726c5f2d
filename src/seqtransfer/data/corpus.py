"""The in-memory form of every sequence-labelling file: a list of :class:`Sentence`.

Conventions shared by all readers and writers (``conll.py``, ``conllu.py``):

- ``tokens`` holds the word forms (the ``word`` column of a column file, FORM/TOKEN of CoNLL-U).
- ``columns`` maps every other column name to one string per token (labels such as ``pos``,
  ``ner``, ``upos``; CoNLL-U ``id``/``head`` stay strings too).
- ``comments`` holds CoNLL-U comment lines without the leading ``#`` and one following space:
  ``# sent_id = 1`` is stored as ``"sent_id = 1"`` and written back as ``# sent_id = 1``.
- ``extra_lines`` holds CoNLL-U lines that are not tagging tokens (multiword-token ranges such
  as ``1-2`` and empty nodes such as ``8.1``) verbatim, each with the index of the token it
  precedes, so that the writer puts them back where they were.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field
from pathlib import Path

from seqtransfer.errors import SeqTransferError, warn


@dataclass
class Sentence:
    """One sentence (or tweet): tokens plus per-token columns and where it came from."""

    tokens: list[str]
    columns: dict[str, list[str]] = field(default_factory=dict)  # column name -> one value per token
    comments: list[str] = field(default_factory=list)  # comment text after "# "
    source: str | None = None  # file path it was read from
    line: int | None = None  # 1-based line number of its first token line
    extra_lines: list[tuple[int, str]] = field(default_factory=list)  # (index of next token, raw line)

    def __len__(self) -> int:
        return len(self.tokens)

    def labels(self, column: str) -> list[str]:
        """The values of ``column``, one per token; a missing column is a user-facing error."""
        if column not in self.columns:
            known = ", ".join(sorted(self.columns)) or "none"
            raise SeqTransferError(
                f"sentence has no column '{column}' (columns: {known})", path=self.source, line=self.line, hint="name the label column with --columns (e.g. word,pos) or pick another task"
            )
        return self.columns[column]


def count_tokens(sentences: list[Sentence]) -> int:
    """Total number of tokens in ``sentences``."""
    return sum(len(sentence.tokens) for sentence in sentences)


def label_set(sentences: list[Sentence], column: str) -> set[str]:
    """The distinct values of ``column`` over ``sentences``."""
    values: set[str] = set()
    for sentence in sentences:
        values.update(sentence.labels(column))
    return values


def read_lines(path: str | Path, encoding: str = "utf-8") -> list[str]:
    """Read a text file as a list of lines, turning every I/O problem into a SeqTransferError.

    Lines are split on "\\n" only (CRLF counts as one line end; a file whose lines all end in a
    bare CR is read as such): ``str.splitlines`` would also split on characters such as U+2028
    or U+0085 that occur inside tweets. A UTF-8 byte-order mark is dropped.
    """
    file_path = Path(path)
    if file_path.is_dir():
        raise SeqTransferError("is a folder, not a file", path=file_path, hint="pass the path of a data file inside it")
    try:
        data = file_path.read_bytes()
    except FileNotFoundError:
        raise SeqTransferError("file not found", path=file_path, hint="check the path") from None
    except OSError as error:
        raise SeqTransferError(f"cannot read file: {error.strerror}", path=file_path, hint="check its permissions") from None
    return decode_lines(data, file_path, encoding)


# Byte-order marks that name a file's encoding (UTF-32's first: its little-endian mark starts like UTF-16's).
BYTE_ORDER_MARKS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode_lines(data: bytes, path: Path, encoding: str) -> list[str]:
    """Decode ``data`` and split it into lines; a bad byte is reported with its 1-based line. A file
    that starts with a UTF-16 or UTF-32 byte-order mark is read in that encoding (Windows editors
    write "Unicode" text so), with a warning."""
    marked = next((name for mark, name in BYTE_ORDER_MARKS if data.startswith(mark)), None)
    if marked and encoding.replace("-", "").lower() in ("utf8", "utf_8"):
        warn(f"{path}: read as {marked.upper()} (its byte-order mark says so), not UTF-8")
        encoding = marked
    try:
        text = data.decode(encoding)
    except LookupError:
        hint = "pass a Python codec name such as utf-8 or latin-1"
        raise SeqTransferError(f"unknown encoding '{encoding}'", path=path, hint=hint) from None
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise SeqTransferError(
            f"byte 0x{data[error.start]:02x} is not valid {encoding}",
            path=path,
            line=line,
            hint="re-encode the file to UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE > FILE.utf8); from Python, read_conll(..., encoding='latin-1') also reads it",
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n")
    if "\r" in text and "\n" not in text.rstrip("\n"):  # classic Mac line endings (CR only)
        text = text.replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
