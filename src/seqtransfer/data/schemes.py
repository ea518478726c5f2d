"""Tag schemes for chunk labels: IOB1, IOB2, BIOES, and plain labels ("none").

A chunk tag is ``PREFIX-TYPE`` (``B-PER``) or ``O``. As in conlleval (2004), the prefix is the
text before the *first* ``-`` and the type is everything after it, so ``B-creative-work`` has
type ``creative-work``. Prefixes are read case-insensitively because the Twitter chunking data
writes ``b-np``, ``i-vp`` and ``o``; :func:`convert` keeps the case of each input chunk.

Written by hand rather than taken from seqeval: we need conlleval's exact chunk rules, lower-case
prefixes, scheme conversion and the index of the first invalid tag, none of which seqeval offers
together (seqeval stays a test-only dependency used to check :func:`chunks`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from seqtransfer.errors import SeqTransferError

CHUNK_SCHEMES = ("iob1", "iob2", "bioes")
SCHEMES = (*CHUNK_SCHEMES, "none")

# Prefixes each chunk scheme allows (besides a bare "O").
_ALLOWED_PREFIXES = {"iob1": ("B", "I"), "iob2": ("B", "I"), "bioes": ("B", "I", "E", "S")}

# (previous prefix, prefix) pairs that end / start a chunk: conlleval 2004's endOfChunk and
# startOfChunk, plus the pairs with S- and E-then-B- of the BIOES-extended conlleval used by
# NCRF++ and seqeval. Without them conlleval merges "S-X S-X" into one chunk. The extra pairs
# never occur in IOB1/IOB2/IOE input, so scores on those are exactly conlleval's.
_END_PAIRS = frozenset(
    [("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")]
    + [("B", "S"), ("I", "S"), ("E", "S"), ("E", "B")]
    + [("S", "B"), ("S", "I"), ("S", "E"), ("S", "O"), ("S", "S")]
)
_START_PAIRS = frozenset(
    [("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")]
    + [("S", "B"), ("E", "B"), ("B", "S"), ("I", "S"), ("O", "S"), ("S", "S"), ("E", "S")]
    + [("S", "I"), ("S", "E")]
)


def check_scheme(name: str) -> str:
    """Return the canonical (lower-case) scheme name; raise SeqTransferError if unknown."""
    canonical = str(name).lower()
    if canonical not in SCHEMES:
        raise SeqTransferError(f"unknown tag scheme {name!r}", hint=f"use one of: {', '.join(SCHEMES)}")
    return canonical


def split_tag(tag: str) -> tuple[str, str]:
    """Split ``tag`` into (upper-case prefix, type): ``'b-creative-work'`` -> ``('B', 'creative-work')``.

    A tag without ``-`` is all prefix with an empty type (``'O'`` -> ``('O', '')``), as in conlleval.
    """
    prefix, _, chunk_type = tag.partition("-")
    return prefix.upper(), chunk_type


def _ends_chunk(previous_prefix: str, prefix: str, previous_type: str, chunk_type: str) -> bool:
    """conlleval's endOfChunk: does a chunk end between the previous and the current tag?"""
    if (previous_prefix, prefix) in _END_PAIRS:
        return True
    if previous_prefix not in ("O", ".") and previous_type != chunk_type:
        return True
    return previous_prefix in ("[", "]")  # conlleval: bracket chunks have length 1


def _starts_chunk(previous_prefix: str, prefix: str, previous_type: str, chunk_type: str) -> bool:
    """conlleval's startOfChunk: does a chunk start at the current tag?"""
    if (previous_prefix, prefix) in _START_PAIRS:
        return True
    if prefix not in ("O", ".") and previous_type != chunk_type:
        return True
    return prefix in ("[", "]")


def chunks(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Chunks of one sentence as ``(type, start, end)`` with ``end`` exclusive (conlleval rules).

    Works on IOB1, IOB2 and BIOES input alike; an ``I-X`` after ``O`` or after another type
    starts a chunk, as in conlleval. The sentence is closed by an implicit ``O``.
    """
    spans: list[tuple[str, int, int]] = []
    previous_prefix, previous_type = "O", ""
    start, start_type = None, ""
    for index, tag in enumerate([*tags, "O"]):
        prefix, chunk_type = split_tag(tag)
        if start is not None and _ends_chunk(previous_prefix, prefix, previous_type, chunk_type):
            spans.append((start_type, start, index))
            start = None
        if _starts_chunk(previous_prefix, prefix, previous_type, chunk_type):
            if start is not None:  # only reachable with malformed tags such as a bare "X"
                spans.append((start_type, start, index))
            start, start_type = index, chunk_type
        previous_prefix, previous_type = prefix, chunk_type
    return spans


def _target_prefixes(target: str, length: int, follows_same_type: bool) -> list[str]:
    """Prefixes of a chunk of ``length`` tokens in ``target``; IOB1 needs B- only after a same-type chunk."""
    if target == "iob1":
        return ["B" if follows_same_type else "I"] + ["I"] * (length - 1)
    if target == "iob2":
        return ["B"] + ["I"] * (length - 1)
    if length == 1:
        return ["S"]
    return ["B"] + ["I"] * (length - 2) + ["E"]


def convert(tags: Sequence[str], source: str, target: str) -> list[str]:
    """Convert one sentence's tags between ``iob1``, ``iob2`` and ``bioes``.

    Lossless for input that :func:`find_violation` accepts under ``source``. Tokens outside
    chunks keep their tag (``O`` or ``o``); each chunk keeps the case of its first prefix.
    """
    source, target = check_scheme(source), check_scheme(target)
    if source == target:
        return list(tags)
    for name in (source, target):
        if name not in CHUNK_SCHEMES:
            raise SeqTransferError(f"cannot convert tags from {source!r} to {target!r}", hint=f"conversion works between {', '.join(CHUNK_SCHEMES)}")
    converted = list(tags)
    previous_end, previous_type = -1, None
    for chunk_type, start, end in chunks(tags):
        lower = tags[start].partition("-")[0].islower()
        follows_same_type = start == previous_end and chunk_type == previous_type
        for index, prefix in zip(range(start, end), _target_prefixes(target, end - start, follows_same_type)):
            converted[index] = f"{prefix.lower() if lower else prefix}-{chunk_type}"
        previous_end, previous_type = end, chunk_type
    return converted


def _tag_problem(tag: str, prefix: str, chunk_type: str, scheme: str) -> str | None:
    """Describe what is wrong with ``tag`` on its own under ``scheme``, or None."""
    allowed = _ALLOWED_PREFIXES[scheme]
    if prefix == "O":
        return None if chunk_type == "" and "-" not in tag else f"tag {tag!r}: 'O' takes no type"
    if prefix not in allowed:
        expected = ", ".join(f"{letter}-" for letter in allowed)
        return f"tag {tag!r} has an unknown prefix ({scheme} allows {expected} and O)"
    if chunk_type == "":
        return f"tag {tag!r} has no type (expected {prefix}-TYPE)"
    return None


def _transition_problem(scheme: str, previous_tag: str | None, tag: str) -> str | None:
    """Describe why ``tag`` cannot follow ``previous_tag`` (None = sentence start), or None."""
    previous_prefix, previous_type = split_tag(previous_tag) if previous_tag else ("O", "")
    prefix, chunk_type = split_tag(tag)
    after = f"after {previous_tag!r}" if previous_tag else "at the sentence start"
    same_chunk = previous_prefix in ("B", "I") and previous_type == chunk_type
    if scheme == "iob2" and prefix == "I" and not same_chunk:
        return f"tag {tag!r} {after}: an IOB2 chunk must start with B-{chunk_type}"
    if scheme == "iob1" and prefix == "B" and not same_chunk:
        return f"tag {tag!r} {after}: IOB1 uses B- only between two adjacent {chunk_type} chunks (use I-{chunk_type})"
    if scheme != "bioes":
        return None
    chunk_open = previous_prefix in ("B", "I")
    if chunk_open and not (prefix in ("I", "E") and chunk_type == previous_type):
        return f"tag {tag!r} {after}: the chunk is not closed (expected I-{previous_type} or E-{previous_type})"
    if not chunk_open and prefix in ("I", "E"):
        return f"tag {tag!r} {after}: a BIOES chunk must open with B-{chunk_type} (or be S-{chunk_type})"
    return None


def find_violation(tags: Sequence[str], scheme: str) -> tuple[int, str] | None:
    """Return ``(index, description)`` of the first tag that breaks ``scheme``, or None.

    ``index`` is 0-based within the sentence; the caller adds file and line. Always None
    for ``"none"`` (plain labels).
    """
    scheme = check_scheme(scheme)
    misplaced = transition_problems(tags, scheme)  # in index order; a sentence-end problem last
    wrong = next(((index, problem) for index, tag in enumerate(tags) if (problem := tag_problem(tag, scheme))), None)
    if wrong is not None and (not misplaced or wrong[0] <= misplaced[0][0]):
        return wrong
    return misplaced[0] if misplaced else None


def transition_problems(tags: Sequence[str], scheme: str) -> list[tuple[int, str]]:
    """Every ``(index, description)`` of a tag that may not follow its predecessor under ``scheme``
    (an I-X after O in IOB2, an unclosed BIOES chunk...). conlleval reads such tags anyway: an
    I-X after O or after another type starts a chunk (see :func:`chunks`)."""
    scheme = check_scheme(scheme)
    if scheme == "none":
        return []
    problems, previous_tag = [], None
    for index, tag in enumerate(tags):
        problem = _transition_problem(scheme, previous_tag, tag)
        if problem:
            problems.append((index, problem))
        previous_tag = tag
    if scheme == "bioes" and previous_tag and split_tag(previous_tag)[0] in ("B", "I"):
        problems.append((len(tags) - 1, f"tag {previous_tag!r} ends the sentence: the chunk is not closed by E-{split_tag(previous_tag)[1]}"))
    return problems


def tag_problem(tag: str, scheme: str) -> str | None:
    """What is wrong with ``tag`` on its own under ``scheme`` (a prefix the scheme lacks, a missing type), or None."""
    scheme = check_scheme(scheme)
    if scheme == "none":
        return None
    prefix, chunk_type = split_tag(tag)
    return _tag_problem(tag, prefix, chunk_type, scheme)


SPAN_TAG = re.compile(r"^(O|[BIES]-.+)$", re.IGNORECASE)  # prefixes in either case, as chunks() reads them (TChunk's b-np, o)


def infer_scheme(sentences_tags: Iterable[Sequence[str]]) -> str:
    """The scheme labels look like: ``none`` unless every label is O or B-/I-/E-/S-TYPE (prefixes
    in either case, and one label is not O); then ``bioes`` if E- or S- occurs, ``iob1`` if more chunks open with I- than with
    B- (IOB1 uses B- only between adjacent chunks of one type), else ``iob2``."""
    opened = {"B": 0, "I": 0}
    labels: set[str] = set()
    for tags in sentences_tags:
        labels.update(tags)
        for _, start, _ in chunks(tags):
            prefix = split_tag(tags[start])[0]
            if prefix in opened:
                opened[prefix] += 1
    if not labels or {label.upper() for label in labels} == {"O"} or not all(SPAN_TAG.match(label) for label in labels):
        return "none"
    if any(split_tag(label)[0] in "ES" for label in labels):
        return "bioes"
    return "iob1" if opened["I"] > opened["B"] else "iob2"
