"""Word statistics of corpora: the word normalisation, unigram counts, seeded sentence samples and
a word trigram language model with interpolated Kneser–Ney smoothing (:class:`TrigramLM`).

Corpus comparison (analysis/similarity.py) and training-data selection (corpora/selection.py,
Moore & Lewis's cross-entropy difference) read them. Words are compared after :func:`normalize`
(lower-cased, every digit → ``0``).

The trigram model is written here (about fifty lines over ``Counter``): KenLM needs a compiled
binary to estimate models, and NLTK's ``nltk.lm`` would add a dependency for one estimator (its
speed was not measured here; this one scores ten 10,000-token samples pairwise in about 17 s).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

DIGIT = re.compile(r"\d")
START, END, UNKNOWN = "<s>", "</s>", "<unk>"
KNESER_NEY_DISCOUNT = 0.75  # Chen & Goodman (1999)'s usual fixed discount

Sentences = Sequence[Sequence[str]]


def normalize(word: str) -> str:
    return DIGIT.sub("0", word.lower())


def unigram_counts(sentences: Iterable[Sequence[str]]) -> Counter:
    return Counter(normalize(word) for sentence in sentences for word in sentence)


def sample_sentences(sentences: Sentences, tokens: int, seed: int) -> list[Sequence[str]]:
    """Whole sentences in a seeded random order until about ``tokens`` tokens (all of a smaller corpus)."""
    import random

    order = list(range(len(sentences)))
    random.Random(seed).shuffle(order)
    chosen, count = [], 0
    for index in order:
        if count >= tokens:
            break
        chosen.append(sentences[index])
        count += len(sentences[index])
    return chosen


class TrigramLM:
    """Word trigram model with interpolated Kneser–Ney smoothing (Chen & Goodman 1999, fixed D).

    p3(w | u v) = max(c(uvw) − D, 0) / c(uv•) + D · N1+(uv•) / c(uv•) · p2(w | v)
    p2(w | v)   = max(N1+(•vw) − D, 0) / N1+(•v•) + D · N1+(v•) / N1+(•v•) · p1(w)   (continuation counts)
    p1(w)       = max(N1+(•w) − D, 0) / N1+(••) + D · |{w: N1+(•w) > 0}| / N1+(••) · 1 / |V|
    A lower order stands alone where the history was never seen; words the model never saw are
    ``<unk>``, with the uniform share of p1 only. |V| counts the vocabulary, ``</s>`` and ``<unk>``.
    """

    def __init__(self, sentences: Iterable[Sequence[str]], discount: float = KNESER_NEY_DISCOUNT) -> None:
        self.discount = discount
        trigrams: Counter = Counter()
        for sentence in sentences:
            words = [START, START, *map(normalize, sentence), END]
            trigrams.update(zip(words, words[1:], words[2:]))
        self.vocabulary = {w for _, _, w in trigrams}
        self.trigrams = trigrams
        self.history = Counter()  # c(uv•)
        self.history_types = Counter()  # N1+(uv•)
        bigram_continuation = Counter()  # N1+(•vw)
        for (u, v, w), count in trigrams.items():
            self.history[u, v] += count
            self.history_types[u, v] += 1
            bigram_continuation[v, w] += 1
        self.bigrams = bigram_continuation
        self.bigram_history = Counter()  # N1+(•v•)
        self.bigram_history_types = Counter()  # N1+(v•)
        unigram_continuation = Counter()  # N1+(•w)
        for (v, w), count in bigram_continuation.items():
            self.bigram_history[v] += count
            self.bigram_history_types[v] += 1
            unigram_continuation[w] += 1
        self.unigrams = unigram_continuation
        self.unigram_total = sum(unigram_continuation.values())
        self.size = len(self.vocabulary | {UNKNOWN})

    def unigram(self, word: str) -> float:
        discount, total = self.discount, self.unigram_total
        return max(self.unigrams[word] - discount, 0) / total + discount * len(self.unigrams) / total / self.size

    def bigram(self, previous: str, word: str) -> float:
        seen = self.bigram_history[previous]
        if not seen:
            return self.unigram(word)
        backoff = self.discount * self.bigram_history_types[previous] / seen
        return max(self.bigrams[previous, word] - self.discount, 0) / seen + backoff * self.unigram(word)

    def probability(self, first: str, previous: str, word: str) -> float:
        word = word if word in self.vocabulary else UNKNOWN
        seen = self.history[first, previous]
        if not seen:
            return self.bigram(previous, word)
        backoff = self.discount * self.history_types[first, previous] / seen
        return max(self.trigrams[first, previous, word] - self.discount, 0) / seen + backoff * self.bigram(previous, word)

    def sentence_bits(self, sentence: Sequence[str]) -> tuple[float, int]:
        """(−log2 probability, number of predicted tokens including ``</s>``) of one sentence."""
        words = [START, START, *map(normalize, sentence), END]
        bits = -sum(math.log2(self.probability(u, v, w)) for u, v, w in zip(words, words[1:], words[2:]))
        return bits, len(words) - 2

    def cross_entropy(self, sentences: Iterable[Sequence[str]]) -> float:
        """Bits per token of ``sentences`` under the model."""
        bits, tokens = 0.0, 0
        for sentence in sentences:
            sentence_bits, count = self.sentence_bits(sentence)
            bits, tokens = bits + sentence_bits, tokens + count
        return bits / tokens
