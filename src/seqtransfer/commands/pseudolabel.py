"""`seqtransfer pseudolabel RUN... --unlabeled TEXT --output FILE`: label unlabelled text with one or
several runs (an ensemble of sources), keep the surest sentences, write ``word TAB label`` CoNLL
(see :mod:`seqtransfer.workflows.pseudolabels`)."""

from __future__ import annotations

import argparse

from seqtransfer.commands.base import Command
from seqtransfer.commands.numbers import probability, whole
from seqtransfer.data.tokenize import TOKENIZERS


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN", help="tagging run directories, or ensembles' folders (several runs label together)")
    parser.add_argument("--unlabeled", required=True, help="DATASET[:SPLIT] (labels ignored), tweets_unlabeled, a text file or a CoNLL file")
    parser.add_argument("--tokenizer", choices=list(TOKENIZERS), default="whitespace", help="how a raw-text file is split (default whitespace)")
    parser.add_argument("--word-column", type=whole(1), help="a CoNLL file's word column (1-based)")
    parser.add_argument("--combination", choices=["average", "vote"], default="average", help="how several runs label together (default average)")
    parser.add_argument("--threshold", type=probability, help="keep sentences whose every label has at least this probability")
    parser.add_argument("--top-n", type=whole(1), help="keep the N sentences the labeller is surest of")
    parser.add_argument("--data-dir", help="folder holding the dataset folders (default: $SEQTRANSFER_DATA)")
    parser.add_argument("--output", required=True, help="CoNLL file to write (word TAB label)")


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer.corpora.unlabeled import read_unlabeled
    from seqtransfer.workflows.pseudolabels import check_selection, write_pseudo_labels

    check_selection(arguments.threshold, arguments.top_n)
    tokens = read_unlabeled(arguments.unlabeled, arguments.data_dir, arguments.tokenizer, arguments.word_column)
    written = write_pseudo_labels(arguments.output, arguments.runs, tokens, arguments.combination, arguments.threshold, arguments.top_n)
    print(f"{written['sentences']} of {written['of']} sentences ({written['tokens']} tokens) labelled by {written['runs']} run(s) -> {arguments.output}")
    return {key: written[key] for key in ("sentences", "of", "output")}


COMMAND = Command("label unlabelled text with one or several runs (an ensemble of sources) and write it as CoNLL", arguments, run)
