"""Token tagging (POS, chunking, NER, MSD): one label per token, scored by accuracy or span F1."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from seqtransfer.data.batching import encode_labels
from seqtransfer.data.conll import write_prediction_lines
from seqtransfer.data.corpus import Sentence
from seqtransfer.data.schemes import infer_scheme, tag_problem, transition_problems
from seqtransfer.data.trees import token_line
from seqtransfer.data.vocabulary import Vocabulary
from seqtransfer.errors import SeqTransferError

Labels = list[str]


def scheme_error(sentence: Sentence, position: int, problem: str, scheme: str) -> SeqTransferError:
    return SeqTransferError(
        f"{problem} (declared scheme {scheme})",
        path=sentence.source,
        line=token_line(sentence, position),
        hint="fix the tag, or declare the scheme the file really uses (data.scheme=iob1|iob2|bioes|none)",
    )


class Tagging:
    """Gold = the label column; the model's decoding = (B, T) label indices."""

    name = "tagging"
    metrics = ("accuracy", "span_f1")
    sentence_weights = True  # the loss weighs each sentence by Batch.weights (soft selection, corpora/selection.py)
    optimizer = "sgd"  # the PretRand paper's (section 6.3)
    architectures = {"tagger": "tagger", "pretrand": "pretrand", "encoder": "encoder_tagger"}  # scheme's architecture (or a fine-tuned encoder) -> model

    def gold(self, sentences: Sequence[Sentence], column: str) -> list[Labels]:
        return [sentence.labels(column) for sentence in sentences]

    def check(self, sentences: Sequence[Sentence], column: str, scheme: str, strict: bool = False) -> list[str]:
        """Raise a one-line error at a tag the scheme cannot have (an unknown prefix, no type).
        Tags in an order the scheme forbids (an I-X after O in IOB2) are read as conlleval reads
        them, with one warning returned; ``strict`` makes the first of them an error."""
        misplaced = []
        for sentence in sentences:
            tags = sentence.labels(column)
            for position, tag in enumerate(tags):
                problem = tag_problem(tag, scheme)
                if problem:
                    raise scheme_error(sentence, position, problem, scheme)
            misplaced += [(sentence, position, problem) for position, problem in transition_problems(tags, scheme)]
        if misplaced and strict:
            raise scheme_error(*misplaced[0], scheme)
        if not misplaced:
            return []
        where = ", ".join(f"{sentence.source}:{token_line(sentence, position)}" for sentence, position, _ in misplaced[:3])
        return [
            f"{len(misplaced)} tags break the {scheme} order (first: {where}: {misplaced[0][2]}); they are read as conlleval "
            "reads them (an I-X after O or after another type starts a chunk); --strict (data.strict=true) makes this an error"
        ]

    def resolve_scheme(self, sentences: Sequence[Sentence], column: str, declared: str) -> tuple[str, str | None]:
        """The declared scheme, or for ``auto`` the one the labels look like (and a note saying so)."""
        if declared != "auto":
            return declared, None
        scheme = infer_scheme(sentence.labels(column) for sentence in sentences)
        scored = "entity F1 (conlleval)" if scheme != "none" else "token accuracy"
        if scheme != "none" and any(label[:1].islower() for sentence in sentences for label in sentence.labels(column)):
            # conlleval.pl compares prefixes with "B", "I", "O"... as written: on b-np it would count other chunks
            scored = "entity F1 (conlleval's on the labels in upper case: prefixes in lower case are read as upper case)"
        return scheme, f"no tag scheme declared: the labels look like {scheme}, scored with {scored} (declare it with --scheme / data.scheme)"

    def label_strings(self, gold: Sequence[Labels]) -> Sequence[Labels]:
        """What the label vocabulary is built from."""
        return gold

    def encode_targets(self, gold: Sequence[Labels], labels: Vocabulary) -> dict[str, list[np.ndarray]]:
        return {"labels": [encode_labels(labels, sentence) for sentence in gold]}

    def read_decoded(self, decoded: torch.Tensor, lengths: np.ndarray, labels: Vocabulary) -> list[Labels]:
        """(B, T) decoded label indices -> label strings of each sentence."""
        rows = decoded.numpy()
        return [labels.decode(rows[row, :length]) for row, length in enumerate(lengths)]

    def write_predictions(self, directory: Path, name: str, sentences: Sequence[Sentence], gold: Sequence[Labels] | None, predicted: Sequence[Labels]) -> None:
        """``predictions/NAME.conll``: token, gold and predicted label per line (conlleval's input)."""
        write_prediction_lines(directory / f"{name}.conll", [sentence.tokens for sentence in sentences], gold, predicted)

    def format_output(self, sentences: Sequence[Sentence], predicted: Sequence[Labels]) -> str:
        """``token<TAB>label`` lines, a blank line between sentences."""
        blocks = ["".join(f"{token}\t{label}\n" for token, label in zip(sentence.tokens, tags)) for sentence, tags in zip(sentences, predicted)]
        return "\n".join(blocks)

    def for_user(self, prediction: Labels) -> Labels:
        return prediction

    def fill_config(self, model, gold: Sequence[Labels], sentences: Sequence[Sentence] = ()) -> str | None:
        """Nothing of the model's configuration depends on tagging data."""
        return None


TAGGING = Tagging()
