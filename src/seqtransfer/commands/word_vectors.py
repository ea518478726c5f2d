"""`seqtransfer word-vectors --text TEXT --output FILE`: word vectors of our own (gensim's word2vec
or fastText) on tweets, news or the user's text, for ``model.embeddings=FILE``."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.commands.numbers import whole
from seqtransfer.errors import SeqTransferError


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--text",
        action="append",
        required=True,
        help="a raw corpus (tweets_unlabeled), a text file (one sentence per line), a CoNLL file (with --word-column) or DATASET[:SPLIT]; repeat to join several",
    )
    parser.add_argument("--word-column", type=whole(1), help="a CoNLL file's word column (1-based); not for a plain text file")
    parser.add_argument("--tokenizer", choices=["whitespace", "tweet"], help="how a text file's lines split into tokens (default: a raw corpus's own, else whitespace)")
    parser.add_argument("--keep-test", action="store_true", help="also read the raw corpus's test files (default: TweetEval's test tweets stay out)")
    parser.add_argument("--output", required=True, help="the vector file to write (word2vec text format; what made it goes to OUTPUT.json)")
    parser.add_argument("--method", choices=["word2vec", "fasttext"], default="word2vec", help="gensim's skip-gram word2vec (default) or fastText (sub-word n-grams)")
    parser.add_argument("--dimension", type=whole(1), default=100, help="units per vector (default 100)")
    parser.add_argument("--window", type=whole(1), default=5, help="context words on each side (default 5)")
    parser.add_argument("--min-count", type=whole(1), default=2, help="words seen fewer times get no vector (default 2)")
    parser.add_argument("--epochs", type=whole(1), default=5, help="passes over the text (default 5)")
    parser.add_argument(
        "--words-of",
        action="append",
        default=[],
        help="fasttext: also write a vector for each word of this text (as --text; e.g. wnut17:test) that the training gave none, "
        "built from its sub-word n-grams, as fastText reads an unseen word; repeat for several",
    )
    parser.add_argument("--cased", action="store_true", help="keep the case (default: lower-cased, as GloVe 6B and the taggers' lower-cased word lookup)")
    parser.add_argument("--seed", type=whole(0), default=1, help="fixes the initial vectors and the sampling (default 1)")
    parser.add_argument("--threads", type=whole(1), default=1, help="gensim's worker threads (default 1: more are faster, but not reproducible)")
    parser.add_argument("--data-dir", help="folder holding the datasets (default $SEQTRANSFER_DATA)")


def check_output(output: str) -> Path:
    """A new file in an existing folder (one line otherwise)."""
    path = Path(output)
    if path.is_dir() or not path.name:
        raise SeqTransferError("--output is a folder", path=output, hint="give a file name, e.g. vectors/tweets-100d.txt")
    if path.exists():
        raise SeqTransferError("--output already exists", path=output, hint="choose a new file name, or delete this one to train again")
    if not path.parent.is_dir():
        raise SeqTransferError("--output's folder does not exist", path=str(path.parent), hint="create it first")
    return path


def read_texts(arguments: argparse.Namespace, texts: list[str]) -> list[list[str]]:
    """The token lists of every text of ``texts`` (each as ``--text`` takes it), in order."""
    from seqtransfer.commands.pretrain_lm import read_sentences

    sentences = []
    for text in texts:
        one = copy.copy(arguments)
        one.text = text
        sentences += read_sentences(one)[0]
    return sentences


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer.workflows.word_vectors import make_word_vectors

    output = check_output(arguments.output)
    if arguments.words_of and arguments.method != "fasttext":
        raise SeqTransferError("--words-of needs --method fasttext", hint="word2vec has no vector for a word it did not train on; drop --words-of or use fasttext")
    sentences = read_texts(arguments, arguments.text)
    extra_words = sorted({token for sentence in read_texts(arguments, arguments.words_of) for token in sentence})
    print(f"{arguments.method} {arguments.dimension}d on {len(sentences):,} sentences ({', '.join(arguments.text)})")
    settings = {name: getattr(arguments, name) for name in ("method", "dimension", "window", "min_count", "epochs", "seed", "threads")}
    record = make_word_vectors(sentences, output, lowercase=not arguments.cased, extra_words=extra_words, **settings)
    unseen = f" (+ {record['words_from_subwords']:,} unseen words from their sub-words)" if extra_words else ""
    print(f"wrote {output}: {record['words']:,} words of {record['dimension']} units from {record['tokens']:,} tokens{unseen} in {record['seconds']} s; use it with model.embeddings={output}")
    return record


COMMAND = Command("train word vectors of our own (gensim's word2vec or fastText) on tweets, news or your text, for model.embeddings", arguments, run)
