"""Dependency parsing: a head and a relation per token, scored by UAS/LAS (CoNLL 2018).

Gold trees come from the CoNLL-U HEAD and DEPREL columns (checked by ``data/trees.py``); the
label vocabulary is the relations. Predictions are written twice: ``NAME.conllu`` (the input
sentences with HEAD and DEPREL replaced, everything else kept: the official evaluator's input)
and ``NAME.conll`` (``token gold predicted`` with ``relation@head`` labels, universal relation
only), so that a token is "correct" there exactly when it counts for LAS, and the analyses of
tagging runs (PT/NT, significance) read parsing runs unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from seqtransfer.config import ModelConfig
from seqtransfer.data.batching import encode_labels
from seqtransfer.data.conll import write_prediction_lines
from seqtransfer.data.conllu import UD_COLUMNS, format_sentence, write_conllu
from seqtransfer.data.corpus import Sentence
from seqtransfer.data.trees import HEAD, RELATION, Tree, read_tree, universal_relation
from seqtransfer.data.vocabulary import Vocabulary


def with_tree(sentence: Sentence, tree: Tree) -> Sentence:
    """A copy of ``sentence`` whose HEAD and DEPREL columns hold ``tree``."""
    columns = {**sentence.columns, HEAD: [str(head) for head in tree.heads], RELATION: list(tree.relations)}
    return dataclasses.replace(sentence, columns=columns)


def scoring_labels(tree: Tree) -> list[str]:
    """``relation@head`` per token (universal relation): equal labels <=> the token counts for LAS."""
    return [f"{universal_relation(relation)}@{head}" for head, relation in zip(tree.heads, tree.relations)]


class Dependency:
    """Gold = :class:`Tree`; the model's decoding = {"heads": (B, T), "labels": (B, T)}."""

    name = "dependency"
    metrics = ("attachment",)
    sentence_weights = True  # the loss weighs each sentence by Batch.weights (soft selection, corpora/selection.py)
    optimizer = "adam"  # Stanza's and Dozat & Manning's (see training/optimizers.py)
    architectures = {"tagger": "parser", "encoder": "encoder_parser"}  # PretRand's per-class branch weighting is defined for label scores only

    def gold(self, sentences: Sequence[Sentence], column: str) -> list[Tree]:
        return [read_tree(sentence) for sentence in sentences]

    def check(self, sentences: Sequence[Sentence], column: str, scheme: str, strict: bool = False) -> list[str]:
        self.gold(sentences, column)  # every tree is checked; a defect is an error
        return []

    def resolve_scheme(self, sentences: Sequence[Sentence], column: str, declared: str) -> tuple[str, str | None]:
        return "none", None  # relations are plain labels

    def label_strings(self, gold: Sequence[Tree]) -> list[tuple[str, ...]]:
        return [tree.relations for tree in gold]

    def encode_targets(self, gold: Sequence[Tree], labels: Vocabulary) -> dict[str, list[np.ndarray]]:
        return {"heads": [np.asarray(tree.heads, dtype=np.int64) for tree in gold], "labels": [encode_labels(labels, tree.relations) for tree in gold]}

    def read_decoded(self, decoded: dict[str, torch.Tensor], lengths: np.ndarray, labels: Vocabulary) -> list[Tree]:
        heads, relations = decoded["heads"].numpy(), decoded["labels"].numpy()
        return [Tree(tuple(heads[row, :length].tolist()), tuple(labels.decode(relations[row, :length]))) for row, length in enumerate(lengths)]

    def write_predictions(self, directory: Path, name: str, sentences: Sequence[Sentence], gold: Sequence[Tree] | None, predicted: Sequence[Tree]) -> None:
        write_conllu(directory / f"{name}.conllu", [with_tree(sentence, tree) for sentence, tree in zip(sentences, predicted)], columns=UD_COLUMNS)
        gold_labels = None if gold is None else [scoring_labels(tree) for tree in gold]
        write_prediction_lines(directory / f"{name}.conll", [sentence.tokens for sentence in sentences], gold_labels, [scoring_labels(tree) for tree in predicted])

    def format_output(self, sentences: Sequence[Sentence], predicted: Sequence[Tree]) -> str:
        """CoNLL-U: the input sentences with HEAD and DEPREL filled."""
        return "".join(format_sentence(with_tree(sentence, tree), UD_COLUMNS) for sentence, tree in zip(sentences, predicted))

    def for_user(self, prediction: Tree) -> list[tuple[int, str]]:
        """[(head, relation), ...] per token; head 0 is the root."""
        return list(zip(prediction.heads, prediction.relations))

    def fill_config(self, model: ModelConfig, gold: Sequence[Tree], sentences: Sequence[Sentence] = ()) -> str | None:
        """Decode single-rooted trees unless the training trees have several roots (original Tweebank v2)."""
        if model.single_root is None:
            model.single_root = all(tree.root_count == 1 for tree in gold)
            return f"decoding {'single-rooted trees' if model.single_root else 'trees with several roots allowed'} (model.single_root={str(model.single_root).lower()}, from the training trees)"
        return None


DEPENDENCY = Dependency()
