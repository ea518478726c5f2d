"""Token tagging (POS, chunking, NER, MSD): one label per token, scored by accuracy or span F1."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from seqtransfer.data.batching import encode_labels
from seqtransfer.data.corpus import Sentence
from seqtransfer.data.schemes import find_violation
from seqtransfer.data.vocabulary import Vocabulary
from seqtransfer.errors import SeqTransferError

Labels = list[str]


class Tagging:
    """Gold = the label column; the model's decoding = (B, T) label indices."""

    name = "tagging"
    metrics = ("accuracy", "span_f1")
    optimizer = "sgd"  # the PretRand paper's (section 6.3)
    architectures = {"tagger": "tagger", "pretrand": "pretrand"}  # scheme's architecture -> model

    def gold(self, sentences: Sequence[Sentence], column: str) -> list[Labels]:
        return [sentence.labels(column) for sentence in sentences]

    def check(self, sentences: Sequence[Sentence], column: str, scheme: str) -> None:
        """Raise a one-line error at the first tag that breaks the declared scheme."""
        for sentence in sentences:
            violation = find_violation(sentence.labels(column), scheme)
            if violation is not None:
                position, description = violation
                line = None if sentence.line is None else sentence.line + position
                raise SeqTransferError(
                    f"{description} (declared scheme {scheme})",
                    path=sentence.source,
                    line=line,
                    hint="fix the tag, or declare the scheme the file really uses (data.scheme=iob1|iob2|bioes|none)",
                )

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
        from seqtransfer.rundir import write_predictions

        write_predictions(directory / f"{name}.conll", [sentence.tokens for sentence in sentences], gold, predicted)

    def format_output(self, sentences: Sequence[Sentence], predicted: Sequence[Labels]) -> str:
        """``token<TAB>label`` lines, a blank line between sentences."""
        blocks = ["".join(f"{token}\t{label}\n" for token, label in zip(sentence.tokens, tags)) for sentence, tags in zip(sentences, predicted)]
        return "\n".join(blocks)

    def for_user(self, prediction: Labels) -> Labels:
        return prediction

    def fill_config(self, model, gold: Sequence[Labels]) -> str | None:
        """Nothing of the model's configuration depends on tagging data."""
        return None


TAGGING = Tagging()
