"""The output of a multi-task model: every task's prediction for each sentence, in one file.

A prediction is ``{task: prediction}`` (label strings of a tagging task, a Tree of a dependency
task). ``format_output`` writes CoNLL-U Plus with one column per tagging task, named after the
task in upper case, then HEAD and DEPREL for a dependency task:

    # global.columns = ID FORM POS CHUNK NER HEAD DEPREL
    1	@user	NOUN	B-NP	O	2	nsubj

Multi-word token and empty-node lines of a CoNLL-U input are left out (the columns differ).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from seqtransfer.data.conllu import format_sentence
from seqtransfer.data.corpus import Sentence
from seqtransfer.data.trees import HEAD, RELATION, Tree
from seqtransfer.errors import SeqTransferError


class MultiTaskOutput:
    """What a multi-task model's decoding becomes, built from its tasks' kinds."""

    name = "multitask"

    def __init__(self, kinds: dict) -> None:
        self.kinds = kinds  # task -> task kind, low -> high
        dependency = [task for task, kind in kinds.items() if kind.name == "dependency"]
        if len(dependency) > 1:
            raise SeqTransferError(f"several dependency tasks ({', '.join(dependency)}) cannot share the HEAD and DEPREL columns", hint="keep one parsing task per model")
        self.tagging = [task for task, kind in kinds.items() if kind.name == "tagging"]
        self.columns = ("id", "word", *self.tagging, *((HEAD, RELATION) if dependency else ()))

    def read_decoded(self, decoded: dict, lengths: np.ndarray, labels: dict) -> list[dict]:
        """task -> decoding, and task -> label vocabulary -> one {task: prediction} per sentence."""
        per_task = {task: self.kinds[task].read_decoded(decoded[task], lengths, labels[task]) for task in decoded}
        return [{task: predictions[row] for task, predictions in per_task.items()} for row in range(len(lengths))]

    def with_predictions(self, sentence: Sentence, prediction: dict) -> Sentence:
        columns = {"id": [str(position) for position in range(1, len(sentence.tokens) + 1)]}
        for task, value in prediction.items():
            if isinstance(value, Tree):
                columns.update({HEAD: [str(head) for head in value.heads], RELATION: list(value.relations)})
            else:
                columns[task] = list(value)
        return dataclasses.replace(sentence, columns=columns, extra_lines=[])

    def format_output(self, sentences: Sequence[Sentence], predicted: Sequence[dict]) -> str:
        header = "# global.columns = " + " ".join("FORM" if name == "word" else name.upper() for name in self.columns) + "\n"
        return header + "".join(format_sentence(self.with_predictions(sentence, prediction), self.columns) for sentence, prediction in zip(sentences, predicted))

    def for_user(self, prediction: dict) -> dict:
        """{task: that task's output} (labels per token; (head, relation) pairs for parsing)."""
        return {task: self.kinds[task].for_user(value) for task, value in prediction.items()}
