"""Writing systems of the input: Serbian is written in Cyrillic and in Latin script alike.

A model trained on Latin-script text (all of the MTT data) sees Cyrillic words as unknown words:
:func:`script_mismatch` says so before predicting. :func:`transliterate` maps Serbian Cyrillic to
Serbian Latin (Gaj's alphabet), letter by letter (the mapping is one-to-one, except that љ, њ, џ
become two letters); the model reads the transliterated words while the output keeps the input's.
Written by hand: it is the standard 30-letter table, and no maintained package does only this.
"""

from __future__ import annotations

from collections.abc import Sequence

SERBIAN_CYRILLIC_TO_LATIN = dict(
    zip(
        "абвгдђежзијклљмнњопрстћуфхцчџшАБВГДЂЕЖЗИЈКЛЉМНЊОПРСТЋУФХЦЧЏШ",
        [
            "a",
            "b",
            "v",
            "g",
            "d",
            "đ",
            "e",
            "ž",
            "z",
            "i",
            "j",
            "k",
            "l",
            "lj",
            "m",
            "n",
            "nj",
            "o",
            "p",
            "r",
            "s",
            "t",
            "ć",
            "u",
            "f",
            "h",
            "c",
            "č",
            "dž",
            "š",
            "A",
            "B",
            "V",
            "G",
            "D",
            "Đ",
            "E",
            "Ž",
            "Z",
            "I",
            "J",
            "K",
            "L",
            "Lj",
            "M",
            "N",
            "Nj",
            "O",
            "P",
            "R",
            "S",
            "T",
            "Ć",
            "U",
            "F",
            "H",
            "C",
            "Č",
            "Dž",
            "Š",
        ],
    )
)
TRANSLITERATIONS = {"sr": SERBIAN_CYRILLIC_TO_LATIN}


def is_cyrillic(character: str) -> bool:
    return "\u0400" <= character <= "\u04ff"


def cyrillic_share(words: Sequence[str]) -> float:
    """Share of the letters of ``words`` that are Cyrillic (0 when there are no letters)."""
    letters = [character for word in words for character in word if character.isalpha()]
    return sum(map(is_cyrillic, letters)) / len(letters) if letters else 0.0


def transliterate(word: str, language: str = "sr") -> str:
    table = TRANSLITERATIONS[language]
    return "".join(table.get(character, character) for character in word)


def vocabulary_script(vocabulary_words: Sequence[str]) -> float | None:
    """The share of Cyrillic letters in a model's words (computed once per model), or None when
    it cannot tell the input's script apart: no word vocabulary to judge by (an encoder's sub-words
    alone), or a model of both scripts."""
    if sum(any(character.isalpha() for character in word) for word in vocabulary_words) < 10:
        return None
    known = cyrillic_share(vocabulary_words)
    return None if 0.05 <= known <= 0.5 else known


def script_mismatch(sentences: Sequence[Sequence[str]], known: float | None) -> str | None:
    """A warning when sentences are mostly in the script the model's words are not (``known``:
    ``vocabulary_script``; Cyrillic input to a Latin-script model, or the reverse), each sentence
    judged alone: one Cyrillic sentence among Latin ones is warned about too, with how many there
    are and the first."""
    if known is None:
        return None
    other = [number for number, sentence in enumerate(sentences, start=1) if (cyrillic_share(sentence) > 0.5 if known < 0.05 else latin_share(sentence) > 0.5)]
    if not other:
        return None
    where = f"{len(other)} of {len(sentences)} sentences (the first: sentence {other[0]})"
    if known < 0.05:
        return (
            f"{where} are in Cyrillic but the model was trained on Latin-script text: their words are unknown to it "
            "(pass --transliterate sr, or transliterate='sr' to load(), to read Serbian Cyrillic as Latin)"
        )
    return f"{where} are in Latin script but the model was trained on Cyrillic text ({known:.0%} of its word letters): their words are unknown to it"


def is_latin(character: str) -> bool:
    """A letter of the Latin script: ASCII, or Latin-1 Supplement to Latin Extended-B (č, ž, đ...)."""
    return character.isascii() or "\u00c0" <= character <= "\u024f"


def latin_share(words: Sequence[str]) -> float:
    """Share of the letters of ``words`` that are Latin (0 when there are no letters)."""
    letters = [character for word in words for character in word if character.isalpha()]
    return sum(map(is_latin, letters)) / len(letters) if letters else 0.0
