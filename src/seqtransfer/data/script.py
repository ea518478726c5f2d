"""Writing systems of the input: Serbian is written in Cyrillic and in Latin script alike.

A model trained on Latin-script text (all of the MTT data) sees Cyrillic words as unknown words:
:func:`script_mismatch` says so before predicting. :func:`transliterate` maps Serbian Cyrillic to
Serbian Latin (Gaj's alphabet), letter by letter (the mapping is one-to-one, except that љ, њ, џ
become two letters); the model reads the transliterated words while the output keeps the input's.
Written by hand: it is the standard 30-letter table, and no maintained package does only this.
"""

from __future__ import annotations

from collections.abc import Sequence

SERBIAN_CYRILLIC_TO_LATIN = dict(zip(
    "абвгдђежзијклљмнњопрстћуфхцчџшАБВГДЂЕЖЗИЈКЛЉМНЊОПРСТЋУФХЦЧЏШ",
    ["a", "b", "v", "g", "d", "đ", "e", "ž", "z", "i", "j", "k", "l", "lj", "m", "n", "nj", "o", "p", "r", "s", "t", "ć", "u", "f", "h", "c", "č", "dž", "š",
     "A", "B", "V", "G", "D", "Đ", "E", "Ž", "Z", "I", "J", "K", "L", "Lj", "M", "N", "Nj", "O", "P", "R", "S", "T", "Ć", "U", "F", "H", "C", "Č", "Dž", "Š"],
))
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


def script_mismatch(sentences: Sequence[Sequence[str]], vocabulary_words: Sequence[str]) -> str | None:
    """A warning when the input is mostly Cyrillic and the model's words are mostly Latin (or the reverse)."""
    given = cyrillic_share([word for sentence in sentences for word in sentence])
    known = cyrillic_share(vocabulary_words)
    if given > 0.5 and known < 0.05:
        return (f"the input is {given:.0%} Cyrillic but the model was trained on Latin-script text: most words will be unknown to it "
                "(pass --transliterate sr to read Serbian Cyrillic as Latin)")
    if given < 0.05 and known > 0.5:
        return f"the input is in Latin script but the model was trained on Cyrillic text ({known:.0%} of its word letters): most words will be unknown to it"
    return None
