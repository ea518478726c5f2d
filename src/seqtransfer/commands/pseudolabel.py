"""`seqtransfer pseudolabel RUN... --unlabeled TEXT --output FILE`: label unlabelled text with one or several runs.

Several runs (one model per source, say) label together: ``average`` (their per-token label
distributions averaged, labels matched by name, as the experiment grid's ensembles) or ``vote``.
With ``--threshold`` or ``--top-n`` only the sentences the labeller is surest of are kept (its
confidence: the lowest probability of a predicted label; averaged distributions for ``average``).
The output is ``word TAB label`` CoNLL, ready for ``--train`` (a target model from pseudo labels
alone) or ``data.pseudo_train`` (added to gold data).
"""

from __future__ import annotations

import argparse

import numpy as np

from seqtransfer.commands.base import Command
from seqtransfer.errors import SeqTransferError


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN", help="tagging run directories (several: they label together)")
    parser.add_argument("--unlabeled", required=True, help="DATASET[:SPLIT] (labels ignored), tweets_unlabeled, a text file or a CoNLL file")
    parser.add_argument("--tokenizer", choices=["whitespace", "tweet"], default="whitespace", help="how a raw-text file is split (default whitespace)")
    parser.add_argument("--word-column", type=int, help="a CoNLL file's word column (1-based)")
    parser.add_argument("--combination", choices=["average", "vote"], default="average", help="how several runs label together (default average)")
    parser.add_argument("--threshold", type=float, help="keep sentences whose every label has at least this probability")
    parser.add_argument("--top-n", type=int, help="keep the N sentences the labeller is surest of")
    parser.add_argument("--data-dir", help="folder holding the dataset folders (default: $SEQTRANSFER_DATA)")
    parser.add_argument("--output", required=True, help="CoNLL file to write (word TAB label)")


def ensemble_labels(runs, tokens) -> tuple[list[list[str]], np.ndarray]:
    """Averaged distributions of the runs: arg-max labels and each sentence's lowest arg-max probability."""
    from seqtransfer.experiments.ensemble import averaged_distributions

    labels, averaged = averaged_distributions(runs, tokens)
    return ([[labels[index] for index in sentence.argmax(-1).tolist()] for sentence in averaged],
            np.array([float(sentence.max(-1).values.min()) for sentence in averaged]))


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer.data.unlabeled import read_unlabeled
    from seqtransfer.rundir import load_run
    from seqtransfer.transfer.selflabel import model_predictions, vote, write_pseudo

    if arguments.threshold is not None and not 0 < arguments.threshold <= 1:
        raise SeqTransferError(f"--threshold must be in (0, 1], got {arguments.threshold}")
    if arguments.top_n is not None and arguments.top_n < 1:
        raise SeqTransferError(f"--top-n must be at least 1, got {arguments.top_n}")
    tokens = read_unlabeled(arguments.unlabeled, arguments.data_dir, arguments.tokenizer, arguments.word_column)
    runs = [load_run(directory) for directory in arguments.runs]
    for loaded in runs:
        if not hasattr(loaded.model, "probabilities"):
            raise SeqTransferError("pseudo-labelling needs tagging runs (per-token label distributions)", path=loaded.directory)
    if len(runs) == 1:
        labels, confidence = model_predictions(runs[0], tokens)
    elif arguments.combination == "average":
        labels, confidence = ensemble_labels(runs, tokens)
    else:
        predictions = [model_predictions(loaded, tokens) for loaded in runs]
        labels, confidence = vote([labels for labels, _ in predictions]), np.min([confidence for _, confidence in predictions], axis=0)
    kept = list(range(len(tokens)))
    if arguments.top_n is not None:
        kept = sorted(np.argsort(-confidence, kind="stable")[: arguments.top_n].tolist())
    elif arguments.threshold is not None:
        kept = [index for index in kept if confidence[index] >= arguments.threshold]
    write_pseudo(arguments.output, [tokens[index] for index in kept], [labels[index] for index in kept])
    print(f"{len(kept)} of {len(tokens)} sentences ({sum(len(tokens[index]) for index in kept)} tokens) labelled by {len(runs)} run(s) -> {arguments.output}")
    return {"sentences": len(kept), "of": len(tokens), "output": arguments.output}


COMMAND = Command("label unlabelled text with one or several runs (an ensemble of sources) and write it as CoNLL", arguments, run)
