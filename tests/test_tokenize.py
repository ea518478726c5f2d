"""Raw-text tokenizers."""

import pytest

from seqtransfer.data.tokenize import TOKENIZERS, tweet_tokenize, whitespace_tokenize


def test_whitespace_tokenize():
    assert whitespace_tokenize("  New York\tis  big \n") == ["New", "York", "is", "big"]
    assert whitespace_tokenize("") == []


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("@john_doe I don't like #Mondays", ["@john_doe", "I", "don't", "like", "#Mondays"]),
        ("see http://t.co/abc.", ["see", "http://t.co/abc", "."]),
        ("(www.x.com/a?b=1)", ["(", "www.x.com/a?b=1", ")"]),
        ("love it :-) <3 :D ;) :'( ^_^", ["love", "it", ":-)", "<3", ":D", ";)", ":'(", "^_^"]),
        ("Price: 1,000.50 at 12:30...", ["Price", ":", "1,000.50", "at", "12:30", "..."]),
        ("wow!!! really?", ["wow", "!!!", "really", "?"]),
        ("the U.S. e-mail a.b@c.org", ["the", "U.S.", "e-mail", "a.b@c.org"]),
        ("Note:Parking 3rd", ["Note", ":", "Parking", "3rd"]),
        ('"quoted", it\'s…', ['"', "quoted", '"', ",", "it's", "…"]),
    ],
)
def test_tweet_tokenize(text, tokens):
    assert tweet_tokenize(text) == tokens


def test_tokenizers_registry():
    assert TOKENIZERS == {"whitespace": whitespace_tokenize, "tweet": tweet_tokenize}
    assert TOKENIZERS["tweet"]("RT @a: hi") == ["RT", "@a", ":", "hi"]
