"""Raw-text tokenizers."""

import pytest

from seqtransfer.data.tokenize import TOKENIZERS, slavic_tokenize, tweet_tokenize, whitespace_tokenize


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


@pytest.mark.parametrize(
    "text, tokens",
    [  # gold tokenisations of the MTT data (hr500k, ssj500k, SETimes.SR, Janes): ordinals and abbreviations keep their dot
        (
            "Prema nevladinim udrugama, 1990. godine bilo je 12 mjesta, a ove godine 21.",
            ["Prema", "nevladinim", "udrugama", ",", "1990.", "godine", "bilo", "je", "12", "mjesta", ",", "a", "ove", "godine", "21", "."],
        ),
        ("ob koncu 19. stoletja (23. oktobra), npr. dr. Novak", ["ob", "koncu", "19.", "stoletja", "(", "23.", "oktobra", ")", ",", "npr.", "dr.", "Novak"]),
        ("M. Kovač i VI. kongres itd.", ["M.", "Kovač", "i", "VI.", "kongres", "itd."]),
        ("Петар живи у Београду, нпр. 2008. године.", ["Петар", "живи", "у", "Београду", ",", "нпр.", "2008.", "године", "."]),
        ("@user lol :) #tag http://x.y/z u lipnju 2008.", ["@user", "lol", ":)", "#tag", "http://x.y/z", "u", "lipnju", "2008", "."]),
        ("iOS 3.2.2. Team B.", ["iOS", "3.2.2", ".", "Team", "B", "."]),
        ("Nisam ga. Min je sv. Vid", ["Nisam", "ga", ".", "Min", "je", "sv", ".", "Vid"]),  # words that look like abbreviations stay words
    ],
)
def test_slavic_tokenize(text, tokens):
    assert slavic_tokenize(text) == tokens


def test_tokenizers_registry():
    assert TOKENIZERS == {"whitespace": whitespace_tokenize, "tweet": tweet_tokenize, "slavic": slavic_tokenize}
    assert TOKENIZERS["tweet"]("RT @a: hi") == ["RT", "@a", ":", "hi"]
    assert TOKENIZERS["tweet"]("u 11. stoljeću") == ["u", "11", ".", "stoljeću"]  # tweet keeps the Twitter data's conventions
