"""Tokenizers for raw-text prediction: one line of text in, a list of tokens out.

``slavic`` is ``tweet`` with the conventions of the Slovene, Croatian and Serbian MULTEXT-East
data (Janes, hr500k, SETimes.SR, ReLDI): an ordinal keeps its dot (``11. stoljeća``, ``2008.
godine``: a number and a dot before a lower-case word, a digit or a bracket), and so do common
abbreviations (``npr.``, ``dr.``, ``itd.``, in Latin and Cyrillic), initials (``M.``) and Roman
numerals (``VI.``). A number and a dot at the end of a sentence stay two tokens.

``tweet`` is a hand-written regular expression (about forty lines) instead of NLTK's
TweetTokenizer, to avoid a heavy dependency for one function. It follows the conventions of
the Twitter POS/NER/chunking data: URLs, @mentions, #hashtags, e-mail addresses and emoticons
stay whole, contractions such as ``don't`` stay whole, numbers keep their ``,``/``.``/``:``,
and other punctuation is split off words (runs such as ``...`` and ``!!!`` stay one token).
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Twitter markup, shared with the token kinds of `analysis/token_kinds.py`.
URL_START = r"(?:https?://|www\.)"
MENTION = r"[@＠]\w+"
HASHTAG = r"[#＃]\w+"

# Order matters: the first alternative that matches at a position wins.
_TWEET_PATTERNS = (
    URL_START + r"\S+?(?=[.,;:!?)\]'\"]*(?:\s|$))",  # URL, without trailing punctuation
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",  # e-mail address
    MENTION,
    HASHTAG,
    r"</?3+(?!\d)",  # heart <3 and broken heart </3
    r"[<>]?[:;=][\-o*']?(?:[)\](/\\|}{@]+|[dDpP3]+(?!\w))",  # :-) ;) :'( :/ :D =P (not :Parking)
    r"[)\](D][\-o*']?[:;=](?!\w)",  # reversed emoticon (: ): D:
    r"(?:\^_*\^|-_+-|[oO]_[oO]|[xX][dD])(?!\w)",  # ^_^ -_- o_O xD
    r"(?>\d+(?:[.,:]\d+)*)(?!\w)",  # number: 1,000.50 12:30 (not the 3 of 3rd)
    r"(?:[A-Za-z]\.){2,}",  # abbreviation: U.S.
    r"\w+(?:['’-]\w+)*",  # word, keeping don't, e-mail, rock'n'roll
    r"\.{2,}|…+",  # ellipsis
    r"[!?]+",  # !!! ?! ??
    r"\S",  # any other character on its own
)
_TWEET_TOKEN = re.compile("|".join(f"(?:{pattern})" for pattern in _TWEET_PATTERNS))


# Abbreviations of the Slovene, Croatian and Serbian data (frequent in the MTT sets), lower case,
# without their dot, Serbian Cyrillic spellings too; none of them is also a word (ga, min, st, sv,
# g, d are left out: "Nisam ga." ends with a pronoun and a full stop).
SLAVIC_ABBREVIATIONS = ("itd npr dr prof tj tzv str sl angl oz čl br god mr mag ing dipl prim ipd idr ipr mio mrd sc tis žl doc akad gosp gđa gdin итд нпр др проф тј тзв стр бр год мрд").split()
_SLAVIC_PATTERNS = (
    r"\d+\.(?=\s+[a-zčćžšđа-яђјљњћџ0-9(\[])",  # ordinal before a lower-case word, a number or a bracket: 11. stoljeća, 2008. godine
    r"(?i:" + "|".join(sorted(SLAVIC_ABBREVIATIONS, key=len, reverse=True)) + r")\.(?!\w)",  # npr. dr. itd.
    r"(?<!\w)(?:[IVXLCDM]+|[A-ZČĆŽŠĐА-ЯЂЈЉЊЋЏ])\.(?=\s)",  # a Roman numeral or an initial inside a line: VI. M.
)


def whitespace_tokenize(line: str) -> list[str]:
    """Split ``line`` on whitespace: for text that is already tokenized."""
    return line.split()


def tweet_tokenize(line: str) -> list[str]:
    """Split a tweet into tokens, keeping URLs, @mentions, #hashtags and emoticons whole."""
    return _TWEET_TOKEN.findall(line)


_SLAVIC_TOKEN = re.compile("|".join(f"(?:{pattern})" for pattern in (*_TWEET_PATTERNS[:4], *_SLAVIC_PATTERNS, *_TWEET_PATTERNS[4:])))


def slavic_tokenize(line: str) -> list[str]:
    """Split Slovene, Croatian or Serbian text (Latin or Cyrillic) as the MULTEXT-East data does."""
    return _SLAVIC_TOKEN.findall(line)


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {"whitespace": whitespace_tokenize, "tweet": tweet_tokenize, "slavic": slavic_tokenize}
