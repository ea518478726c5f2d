"""Sentence-level datasets in TSV files (TREC-6, SST-2, MRPC, SICK): text fields and label fields per line.

A sentence's tokens are its text split at whitespace; each label field becomes a one-value column
(``sentence.columns["coarse"] == ["DESC"]``): the sentence kind (``tasks/sentence.py``) reads it as
the sentence's label. A pair (a ``text_b`` field: paraphrase, entailment) is one sequence, the two
texts joined by the token ``[SEP]``: a fine-tuned encoder reads it as its own separator (the pair
encoded jointly, as BERT does), a BiLSTM as a word. Fields named ``_...`` are ignored.
"""

from __future__ import annotations

import math
from pathlib import Path

from seqtransfer.data.corpus import Sentence, decode_lines
from seqtransfer.embeddings.tokenization import PAIR_SEPARATOR  # written between a pair's texts (the pairs' readers import it from here too)
from seqtransfer.errors import SeqTransferError

TEXT, TEXT_B = "text", "text_b"


def read_tsv_sentences(path: str | Path, fields: tuple[str, ...] | None, header: bool = False, encoding: str = "utf-8", extra_fields: bool = False, named_fields: bool = False) -> list[Sentence]:
    """One sentence (or pair) per line of ``fields`` (one of them ``text``); a line with another
    field count is a one-line error (more fields are ignored with ``extra_fields``: STS-B). With
    ``named_fields`` the file's header names the same fields, in any order (``fields`` None: whichever
    it names, one of them ``text``)."""
    path = Path(path)
    if not path.is_file():
        raise SeqTransferError("file not found", path=path, hint="check the path")
    lines = decode_lines(path.read_bytes(), path, encoding)
    if named_fields and (lines or fields is None):  # an empty file names no fields: no text field either
        fields = fields_of_header(lines[0] if lines else "", fields, path)
    sentences = []
    for number, line in enumerate(lines, start=1):
        if ((header or named_fields) and number == 1) or not line.strip():
            continue
        values = line.split("\t")
        if extra_fields and len(values) > len(fields):
            values = values[: len(fields)]
        if len(values) != len(fields):
            raise SeqTransferError(
                f"{len(values)} TAB-separated fields, expected {len(fields)} ({', '.join(fields)})", path=path, line=number, hint="one sentence per line with its fields separated by TABs"
            )
        row = {name: value.strip() for name, value in zip(fields, values) if not name.startswith("_")}
        tokens = row.pop(TEXT).split()
        if TEXT_B in row:
            second = row.pop(TEXT_B).split()
            if tokens and not second:
                raise SeqTransferError("empty second text of a pair (text_b)", path=path, line=number, hint="each line holds two texts: remove the line or give it its second sentence")
            tokens += [PAIR_SEPARATOR, *second]
        if not tokens or tokens[0] == PAIR_SEPARATOR:
            raise SeqTransferError("empty text", path=path, line=number, hint="remove the line or give it a sentence")
        sentences.append(Sentence(tokens, columns={name: [value] for name, value in row.items()}, source=str(path), line=number))
    return sentences


def fields_of_header(line: str, fields: tuple[str, ...] | None, path: Path) -> tuple[str, ...]:
    """The fields a file's header ``line`` names, in its order: the same names as ``fields`` (the
    training file's), or any holding ``text`` where ``fields`` is None; else a one-line error."""
    own = tuple(name.strip() for name in line.split("\t"))
    if fields is None and TEXT not in own:
        hint = "name the sentence field text (and a pair's second text_b) in a header line"
        raise SeqTransferError(f"the header names the fields {', '.join(own)}, none of them 'text'", path=path, line=1, hint=hint)
    if fields is not None and sorted(own) != sorted(fields):
        raise SeqTransferError(
            f"the header names the fields {', '.join(own)}, the training file's are {', '.join(fields)}",
            path=path,
            line=1,
            hint="give every file the same field names in its header line (in any order)",
        )
    return own


def as_number(value: str) -> float | None:
    """A score field's ``value`` as a finite number, or None (not a number, nan, inf)."""
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
