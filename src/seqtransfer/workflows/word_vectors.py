"""Word vectors of our own: gensim's word2vec or fastText trained on the text seqtransfer reads
(issue 52: do vectors trained on tweets and news close WNUT-17's gap, where GloVe 6B 50d is what
we have?), written as a word2vec text file that ``model.embeddings=FILE`` loads.

gensim is the maintained implementation of both methods; we only choose its settings: skip-gram
(the GloVe-era taggers' vectors were skip-gram or GloVe), a window of 5, negative sampling, and
one worker thread by default, the only setting under which gensim's training is reproducible
(its worker threads take the text in an order the operating system decides).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from seqtransfer.errors import SeqTransferError

METHODS = ("word2vec", "fasttext")


def train_word_vectors(sentences: list[list[str]], method: str, dimension: int, window: int, min_count: int, epochs: int, seed: int, threads: int):
    """gensim's KeyedVectors of ``method`` (skip-gram, negative sampling) trained on the token lists."""
    try:
        from gensim.models import FastText, Word2Vec
    except ImportError as error:
        raise SeqTransferError(f"word-vectors needs the package {error.name or 'gensim'}", hint="pip install gensim==4.4.0  (or: pip install 'seqtransfer[vectors]')") from None
    model_class = FastText if method == "fasttext" else Word2Vec
    settings = {"vector_size": dimension, "window": window, "min_count": min_count, "epochs": epochs, "seed": seed, "workers": threads, "sg": 1, "negative": 5}
    model = model_class(**settings)
    model.build_vocab(sentences)
    if not len(model.wv):
        raise SeqTransferError(f"no word occurs {min_count} times or more in the text", hint="give more text or a lower --min-count")
    model.train(sentences, total_examples=model.corpus_count, epochs=epochs)
    return model.wv


def with_unseen_words(vectors, words: list[str]):
    """fastText's ``vectors`` plus a vector for each of ``words`` it has none for, summed from the
    word's sub-word n-grams (gensim's lookup of an unseen word): a plain KeyedVectors, (N + new, D)."""
    from gensim.models import KeyedVectors

    unseen = [word for word in dict.fromkeys(words) if word not in vectors.key_to_index]
    known = list(vectors.index_to_key)
    result = KeyedVectors(vectors.vector_size)
    result.add_vectors(known, vectors.vectors)
    if unseen:
        result.add_vectors(unseen, [vectors[word] for word in unseen])
    return result, len(unseen)


def write_vectors(vectors, path: Path, record: dict) -> None:
    """The vectors as a word2vec text file at ``path`` and what made them at ``path``.json, each
    written in full under another name first (nothing half-written survives an interruption)."""
    partial = path.with_name(path.name + ".partial")
    vectors.save_word2vec_format(str(partial), binary=False)
    os.replace(partial, path)
    note = path.with_name(path.name + ".json")
    note.with_name(note.name + ".partial").write_text(json.dumps(record, indent=2), encoding="utf-8")
    os.replace(note.with_name(note.name + ".partial"), note)


def make_word_vectors(
    sentences: list[list[str]], output: Path, method: str, dimension: int, window: int, min_count: int, epochs: int, seed: int, threads: int, lowercase: bool, extra_words: list[str] = ()
) -> dict:
    """Train and write the vectors; the record (settings, counts, seconds) is returned and written beside them.
    ``extra_words`` (fastText): words that also get a vector, from their sub-words, where the training gave none."""
    if lowercase:
        sentences = [[token.lower() for token in sentence] for sentence in sentences]
        extra_words = [word.lower() for word in extra_words]
    started = time.perf_counter()
    vectors = train_word_vectors(sentences, method, dimension, window, min_count, epochs, seed, threads)
    trained_words = len(vectors)
    added = 0
    if extra_words:
        vectors, added = with_unseen_words(vectors, extra_words)
    record = {
        "method": method,
        "dimension": dimension,
        "window": window,
        "min_count": min_count,
        "epochs": epochs,
        "seed": seed,
        "threads": threads,
        "lowercase": lowercase,
        "sentences": len(sentences),
        "tokens": sum(len(sentence) for sentence in sentences),
        "words": trained_words,
        **({"words_from_subwords": added} if extra_words else {}),
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_vectors(vectors, output, record)
    return record
