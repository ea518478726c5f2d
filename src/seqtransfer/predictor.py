"""Use a saved model: ``seqtransfer.load(run_dir).predict([["I", "love", "NYC"]])``.

A run directory is loaded as a ``Predictor`` (``training/prediction.py``); a folder of models that
predict together (``members.json``) as a ``VotingPredictor``, which combines their predictions
(``workflows/combination.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from seqtransfer.rundir import load_run, read_members
from seqtransfer.threads import granted_threads
from seqtransfer.training.prediction import Predictor, check_batch_size
from seqtransfer.workflows.combination import combine, vote


def load(run_directory: str | Path, tokenizer: str = "whitespace", device: str = "auto", batch_size: int = 256, transliterate: str | None = None, amp: str = "off") -> Predictor:
    """Load a run directory written by ``seqtransfer train`` onto ``device`` (auto: the first GPU,
    else the CPU); ``transliterate="sr"`` reads Serbian Cyrillic input as Latin script; ``amp``: a
    fine-tuned encoder's precision (``off``: fp32, ``bf16``, ``fp16`` on CUDA, ``auto``: a CUDA
    GPU's half precision, else fp32; as ``train.amp`` reads them)."""
    check_batch_size(batch_size)
    members = read_members(run_directory)
    if members:  # several models that predict together (tri-training: a majority vote; an ensemble: their averaged distributions)
        return VotingPredictor(*members, tokenizer, device, batch_size, transliterate, amp)
    return Predictor(load_run(run_directory, device), tokenizer, batch_size, transliterate, amp)


class VotingPredictor:
    """The models of a ``members.json`` (written by ``seqtransfer selflabel`` or ``seqtransfer
    ensemble``), predicting together: ``vote``: per token the label most of them give (a tie: the
    first model's); ``confident``: per sentence the labels of the model surer of it (its lowest
    label probability is higher); ``average``: the arg-max of their averaged label distributions;
    one model (``single``) predicts alone."""

    def __init__(self, members: list[Path], combination: str, tokenizer: str, device: str, batch_size: int, transliterate: str | None = None, amp: str = "off") -> None:
        self.members = [Predictor(load_run(member, device), tokenizer, batch_size, transliterate, amp) for member in members]
        self.combination = combination
        self.run, self.kind, self.tokenize = self.members[0].run, self.members[0].kind, self.members[0].tokenize

    @property
    def labels(self) -> list[str]:
        return sorted({label for member in self.members for label in member.labels})

    def tokenized(self, sentences):
        return self.members[0].tokenized(sentences)

    def predict_raw(self, sentences: Sequence[Sequence[str] | str], tags: Sequence[Sequence[str]] | None = None, checked: bool = False, cache_features: bool = False) -> list[list[str]]:
        tokens = self.tokenized(sentences)
        tokens = tokens if checked else self.members[0].model_words(tokens)  # one warning, not one per model
        if self.combination in ("confident", "average"):
            torch.set_num_threads(granted_threads(self.run.config.train.threads))
            return combine(self.combination, [member.run for member in self.members], tokens, self.members[0].batch_size, self.members[0].amp, cache_features)
        return vote([member.predict_raw(tokens, tags, checked=True, cache_features=cache_features) for member in self.members])

    def predict(self, sentences: Sequence[Sequence[str] | str]) -> list[list]:
        return [self.kind.for_user(prediction) for prediction in self.predict_raw(sentences)]
