"""One loaded run predicting: tokenised sentences (or raw strings) in, the task kind's predictions
out (``Predictor``); and a tagging run loaded as one to predict another run's input tags (``load_tagger``).

Below ``rundir``, which loads a run that reads predicted input tags together with its tagger
(``rundir.tagger``): this module is handed a loaded run, or the function that loads one.
``seqtransfer.predictor`` loads a run directory as a ``Predictor``, and a folder of models that
predict together as a ``VotingPredictor``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from seqtransfer.data.batching import encode_sentences
from seqtransfer.data.script import TRANSLITERATIONS, script_mismatch, transliterate, vocabulary_script
from seqtransfer.data.tokenize import TOKENIZERS
from seqtransfer.device import memory_errors_as_one_line
from seqtransfer.errors import SeqTransferError, warn
from seqtransfer.tasks import kind_of
from seqtransfer.threads import granted_threads
from seqtransfer.training.inference import model_device, predict_labels
from seqtransfer.training.memory import check_parser_memory
from seqtransfer.training.precision import resolve_precision

if TYPE_CHECKING:  # the type only: rundir imports this module (a run that reads predicted tags loads its tagger through it)
    from seqtransfer.rundir import LoadedRun


def check_tokens(sentence, number: int) -> list[str]:
    """A sentence given as tokens: a list or tuple of non-empty strings."""
    if not isinstance(sentence, (list, tuple)):
        raise SeqTransferError(f"sentence {number} is a {type(sentence).__name__}, not a list of tokens or a string", hint='pass e.g. [["I", "love", "NYC"]] or ["I love NYC"]')
    for position, token in enumerate(sentence, start=1):
        if not isinstance(token, str) or not token or token.isspace():
            raise SeqTransferError(f"token {position} of sentence {number} is {token!r}: tokens must be non-empty strings", hint="remove empty tokens and convert the others to str")
    return list(sentence)


class Predictor:
    """Tags or parses tokenised sentences (or raw strings, tokenised first) with a loaded run."""

    def __init__(self, run: LoadedRun, tokenizer: str = "whitespace", batch_size: int = 256, transliterate: str | None = None, amp: str = "off") -> None:
        if tokenizer not in TOKENIZERS:
            raise SeqTransferError(f"unknown tokenizer '{tokenizer}'", hint=f"use one of: {', '.join(TOKENIZERS)}")
        check_transliteration(transliterate)
        resolve_precision(amp, run.model, model_device(run.model), "amp")  # a setting that cannot apply fails here, before any input is read
        self.run, self.amp = run, amp
        self.tokenize = TOKENIZERS[tokenizer]
        self.batch_size = batch_size
        self.transliterate = transliterate
        self.kind = kind_of(run.model)
        self.known_script = vocabulary_script(run.vocabularies.words.items)  # once per model: every call's sentences are judged against it

    @property
    def labels(self) -> list[str] | dict[str, list[str]]:
        """The label set (a multi-task model: per task)."""
        if self.run.vocabularies.task_labels:
            return {task: list(labels.items) for task, labels in self.run.vocabularies.task_labels.items()}
        return list(self.run.vocabularies.labels.items)

    def predict(self, sentences: Sequence[Sequence[str] | str]) -> list[list]:
        """Per sentence, one label per token (taggers) or one (head, relation) pair per token
        (parsers; head 0 = root); a multi-task model gives {task: that} per sentence. Strings are
        tokenised with the tokenizer."""
        return [self.kind.for_user(prediction) for prediction in self.predict_raw(sentences)]

    def tokenized(self, sentences: Sequence[Sequence[str] | str] | str) -> list[list[str]]:
        """Token lists; a raw string is tokenised, and one string alone is one sentence."""
        if isinstance(sentences, str):
            sentences = [sentences]
        if not isinstance(sentences, (list, tuple)):
            raise SeqTransferError(f"expected a list of sentences, got {type(sentences).__name__}", hint='pass e.g. [["I", "love", "NYC"]] or ["I love NYC"]')
        if looks_like_one_tokenised_sentence(sentences):
            warn(
                f"predict got {len(sentences)} strings of one word each: each string is a sentence, so this tags {len(sentences)} one-word sentences; "
                f"for one tokenised sentence pass a list of token lists, e.g. [{list(sentences[:3])!r}]"
            )
        tokens = [self.tokenize(sentence) if isinstance(sentence, str) else check_tokens(sentence, number) for number, sentence in enumerate(sentences, start=1)]
        for number, sentence in enumerate(tokens, start=1):
            if not sentence:
                raise SeqTransferError(f"sentence {number} is empty", hint="remove empty sentences (blank lines) from the input")
        return tokens

    def model_words(self, tokens: list[list[str]]) -> list[list[str]]:
        """The words the model reads: transliterated (``transliterate``); sentences in a script the
        model never saw are warned about."""
        return model_words(tokens, self.known_script, self.transliterate)

    def predict_raw(self, sentences: Sequence[Sequence[str] | str], tags: Sequence[Sequence[str]] | None = None, checked: bool = False, cache_features: bool = False) -> list:
        """Predictions as the task kind holds them (label lists, trees); ``tags``: input tags, for a
        model that reads them and has no tagger of its own (``model.tag_feature``); ``checked``:
        the tokens are already the model's words (``model_words``); ``cache_features``: a frozen
        encoder's features go to the feature cache (a dataset's split, read again), not only to memory."""
        tokens = self.tokenized(sentences)
        tokens = tokens if checked else self.model_words(tokens)
        if getattr(self.run.model, "task_kind", None) == "dependency" and model_device(self.run.model).type == "cpu":  # a GPU's memory is not the host's
            check_parser_memory([len(sentence) for sentence in tokens], self.batch_size, False, "sentence", "split it into shorter sentences, or use a smaller batch size")
        encoded = encode_sentences(tokens, self.run.vocabularies, tags=tags, cache_features=cache_features)
        torch.set_num_threads(granted_threads(self.run.config.train.threads))
        with memory_errors_as_one_line(self.batch_size, "while predicting"):
            return predict_labels(self.run.model, encoded, self.run.vocabularies.task_labels or self.run.vocabularies.labels, self.batch_size, self.amp)


def looks_like_one_tokenised_sentence(sentences: Sequence) -> bool:
    """``["I", "love", "NYC"]``: several strings, none holding a space: most likely one sentence's
    tokens passed without the outer list (it is read as that many one-word sentences)."""
    return len(sentences) > 1 and all(isinstance(sentence, str) and sentence.strip() and not any(character.isspace() for character in sentence.strip()) for sentence in sentences)


def check_batch_size(batch_size) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise SeqTransferError(f"batch size must be a whole number of at least 1, got {batch_size!r}", hint="pass e.g. batch_size=64 (--batch-size 64)")


def check_transliteration(language: str | None) -> None:
    if language is not None and language not in TRANSLITERATIONS:
        raise SeqTransferError(f"no transliteration for '{language}'", hint=f"use one of: {', '.join(TRANSLITERATIONS)}")


def model_words(tokens: list[list[str]], known_script: float | None, language: str | None) -> list[list[str]]:
    """``tokens`` transliterated to the model's script (``language``: sr), with a warning for
    sentences in a script the model's vocabulary does not hold (``known_script``: ``vocabulary_script``)."""
    if language:
        tokens = [[transliterate(token, language) for token in sentence] for sentence in tokens]
    mismatch = script_mismatch(tokens, known_script)
    if mismatch:
        warn(mismatch)
    return tokens


def load_tagger(directory: str, load_run: Callable) -> Predictor:
    """The tagging run at ``directory`` (``model.tag_tagger``) as a predictor, loaded by ``load_run``
    (``rundir.load_run``) on the first GPU, else the CPU; the caller's random state stays as it was."""
    if not (Path(directory) / "config.yaml").is_file():
        raise SeqTransferError("model.tag_tagger is not a run directory", path=directory, hint="pass the folder of a tagging run (seqtransfer train --task upos ...)")
    with torch.random.fork_rng(devices=[]):  # building the model draws initial weights
        predictor = Predictor(load_run(directory, "auto"))
    if predictor.kind.name != "tagging":
        raise SeqTransferError(
            f"model.tag_tagger must be a tagging run; this one is a {predictor.kind.name} run", path=directory, hint="train a tagger first, e.g. seqtransfer train --dataset ud_ewt --task upos"
        )
    return predictor
