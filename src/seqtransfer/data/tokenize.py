"""Tokenizers for raw-text prediction: one line of text in, a list of tokens out.

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


def whitespace_tokenize(line: str) -> list[str]:
    """Split ``line`` on whitespace: for text that is already tokenized."""
    return line.split()


def tweet_tokenize(line: str) -> list[str]:
    """Split a tweet into tokens, keeping URLs, @mentions, #hashtags and emoticons whole."""
    return _TWEET_TOKEN.findall(line)


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "whitespace": whitespace_tokenize,
    "tweet": tweet_tokenize,
}
