"""Mistake types of falsified tokens (PretRand paper §7.1.1, Table 3), by simple documented rules.

Each token gets the first type whose rule matches, checked in this order:

1. ``contraction``: the token holds an apostrophe (``'``, ``’`` or `````) next to a letter
   (I'm, 's, can't), or its lower-cased form is an apostrophe-less contraction of
   :data:`CONTRACTIONS` (wont, dont, im, id, its, ...; the paper counts "wont", "id", "its").
2. ``abbreviation``: its lower-cased form is in :data:`ABBREVIATIONS` (social-media slang such as
   lol, wth, nvr, luv, wyd, ur, &), or it is 2-5 capital letters (IMO, UN, USA), or 2-5 letters
   and digits mixing both (2pac, b4, gr8).
3. ``capitalised``: it has two or more characters and the first is an upper-case letter (Award,
   Father, Hey, ROCKSTAR); the pronoun "I" is capitalised in every register and does not count.
4. ``out_of_vocabulary`` (misspelling / OOV): its word-embedding key (lower-cased or Twitter-
   normalised as the model saw it) is not in the *source* model's word vocabulary (awsome,
   amazin), so the transferred units never saw it. Twitter mentions, hashtags and URLs are not
   misspellings and fall through to ``other``.
5. ``other``: none of the above.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from seqtransfer.data.vocabulary import word_key
from seqtransfer.files import read_json

MISTAKE_TYPES: dict[str, str] = {  # type -> the name shown in tables and figures
    "capitalised": "first letter capitalised",
    "contraction": "contraction",
    "abbreviation": "abbreviation",
    "out_of_vocabulary": "misspelling / out of source vocabulary",
    "other": "other",
}

CONTRACTIONS = frozenset(
    "im ive id wont dont cant didnt doesnt isnt wasnt arent werent couldnt wouldnt shouldnt hasnt "
    "havent hadnt aint youre youve youll theyre theyve thats whats its gonna wanna gotta imma ima yall".split()
)
ABBREVIATIONS = frozenset(
    "lol lmao lmfao rofl omg omfg wth wtf idk idc imo imho tbh btw brb smh fyi nvm nvr ur u r n luv "
    "wyd hbu bday pls plz thx thnx tho cuz bc jk ily ppl msg txt bf gf bff fb rt dm irl asap ya yh "
    "k kk b4 gr8 2day 2nite tmrw tmr 2moro nite cya ttyl ikr yolo af fr ngl rn ty np dat da dis wat & 2 4".split()
)
_APOSTROPHE = re.compile(r"\w['’`]|['’`]\w")
_CAPITALS = re.compile(r"^[A-Z]{2,5}$")
_LETTERS_AND_DIGITS = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9]{2,5}$")
_MARKUP = re.compile(r"^(@\w|#\w|https?://|www\.)", re.IGNORECASE)


@dataclass
class WordLookup:
    """The source model's word vocabulary and how it forms word keys."""

    words: frozenset[str]
    lowercase: bool
    twitter: bool
    path: str  # the vocabulary.json it was read from

    def knows(self, token: str) -> bool:
        return word_key(token, self.lowercase, self.twitter) in self.words


def load_word_lookup(run_directory: str | Path) -> WordLookup:
    """The word vocabulary of the run's source model (its own when it has no reachable source)."""
    run_directory = Path(run_directory)
    config = yaml.safe_load((run_directory / "config.yaml").read_text(encoding="utf-8")) or {}
    source = (config.get("transfer") or {}).get("source")
    directory = Path(source) if source and (Path(source) / "vocabulary.json").is_file() else run_directory
    vocabulary = read_json(directory / "vocabulary.json")
    words = frozenset(vocabulary["words"])
    return WordLookup(words, bool(vocabulary["lowercase"]), bool(vocabulary["twitter"]), str(directory / "vocabulary.json"))


def mistake_type(token: str, lookup: WordLookup | None) -> str:
    """The first matching type of the module docstring's ordered rules."""
    lowered = token.lower()
    if _APOSTROPHE.search(token) or lowered in CONTRACTIONS:
        return "contraction"
    if lowered in ABBREVIATIONS or _CAPITALS.match(token) or _LETTERS_AND_DIGITS.match(token):
        return "abbreviation"
    if len(token) > 1 and token[0].isupper():
        return "capitalised"
    if lookup is not None and not _MARKUP.match(token) and not lookup.knows(token):
        return "out_of_vocabulary"
    return "other"
