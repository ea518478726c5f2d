"""Pretraining our ELMo-style recurrent LM (``seqtransfer pretrain-lm --architecture bilstm``).

The network is ``embeddings/recurrent_lm.py``. Here: the character set and the softmax's
frequency-capped word list from the training text, batches of similar length shuffled by
(seed, epoch), the one training loop (``training/loop.fit``: Adam, early stopping on the
held-out perplexity, a checkpoint per epoch so that an interrupted run resumes from its last
finished epoch), and the folder written at the end, with what the training cost
(``pretraining.json``: perplexity per epoch, seconds, tokens per second).

Perplexity: exp of the mean -log p over every word the two directions predict (forward: w_1 ..
w_n and </S>; backward: w_n .. w_1 and <S>), an unknown word counted as <unk>.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from seqtransfer.data.batching import length_groups_of
from seqtransfer.device import describe_model_device, prepare_device, resolve_device
from seqtransfer.embeddings.recurrent_lm import DEFAULTS, FIRST_CHARACTER, SIZES, SPECIAL_WORDS, RecurrentLanguageModel, encode_batch, save_recurrent_lm, softmax_word_ids
from seqtransfer.embeddings.transformer import TRAINING_REPORT
from seqtransfer.errors import SeqTransferError
from seqtransfer.resources import peak_rss_megabytes
from seqtransfer.training.loop import fit
from seqtransfer.training.seeding import seed_everything
from seqtransfer.workflows.pretraining import check_work_folder, perplexity, split_held_out, start_work_folder, training_seconds

MINIMUM_CHARACTER_COUNT = 2  # rarer characters (one-off emoji) read as the unknown character


@dataclass
class RecurrentSettings:
    size: str = "small"  # small | large (embeddings/recurrent_lm.SIZES)
    vocabulary_size: int = 30000  # words of the softmax, most frequent first (at least 2 occurrences)
    softmax: str = "adaptive"  # adaptive | full
    held_out: float = 0.02
    max_tokens: int = 100  # tokens per sentence (longer ones are cut)
    sizes: dict = field(default_factory=dict)  # overrides of the size's numbers (tests: tiny models)


def vocabularies(sentences: Sequence[Sequence[str]], vocabulary_size: int) -> tuple[list[str], list[str]]:
    """(the softmax's words: <unk>, <S>, </S>, then the most frequent words seen twice or more, ties in
    first-seen order; the characters seen at least ``MINIMUM_CHARACTER_COUNT`` times, most frequent first)."""
    words = Counter(token for sentence in sentences for token in sentence)
    frequent = [word for word, count in words.most_common() if count >= 2 and word not in SPECIAL_WORDS][:vocabulary_size]  # a literal "<unk>" is the unknown word, not a second class
    characters = Counter()
    for word, count in words.items():
        for character in word:
            characters[character] += count
    return SPECIAL_WORDS + frequent, [character for character, count in characters.most_common() if count >= MINIMUM_CHARACTER_COUNT]


@dataclass
class RecurrentBatch:
    tensors: dict[str, torch.Tensor]

    def to(self, device: torch.device) -> RecurrentBatch:
        return RecurrentBatch({name: tensor if name == "lengths" else tensor.to(device) for name, tensor in self.tensors.items()})


class RecurrentBatches:
    """Training sentences in batches of similar length, shuffled by (seed, epoch)."""

    def __init__(self, sentences: list[list[str]], words: dict[str, int], characters: dict[str, int], limit: int, batch_size: int, seed: int) -> None:
        self.sentences, self.words, self.characters, self.limit, self.batch_size, self.seed = sentences, words, characters, limit, batch_size, seed
        self.sentence_count = len(sentences)
        self.batch_count = -(-len(sentences) // batch_size)
        self.mean_batch_loss = True  # a batch's loss is a mean per word

    def make(self, rows: Sequence[int]) -> RecurrentBatch:
        return RecurrentBatch(encode_batch([self.sentences[row] for row in rows], self.characters, self.limit, self.words))

    def batches(self, epoch: int) -> Iterator[RecurrentBatch]:
        generator = np.random.default_rng([self.seed, epoch])
        order = generator.permutation(len(self.sentences))
        groups = length_groups_of(order, np.array([len(sentence) for sentence in self.sentences]), self.batch_size)
        for number in generator.permutation(len(groups)):
            yield self.make(groups[number])

    def fixed(self) -> list[RecurrentBatch]:
        """Every sentence once, in order (held-out scoring)."""
        return [self.make(range(start, min(start + self.batch_size, len(self.sentences)))) for start in range(0, len(self.sentences), self.batch_size)]


class RecurrentPretraining(nn.Module):
    """The LM as the training loop sees it: ``loss(batch)``, the mean -log p per predicted word."""

    # pretrain-lm --amp bf16 may autocast it: its training measured 1.32x (small) and 1.94x (large) as fast
    # on this CPU's AVX512-BF16 (benchmarks/recurrent_lm.py); the softmax runs in fp32 (RecurrentLanguageModel)
    mixed_precision = True

    def __init__(self, language_model: RecurrentLanguageModel) -> None:
        super().__init__()
        self.language_model = language_model

    def losses(self, batch: RecurrentBatch) -> tuple[torch.Tensor, int]:
        tensors = batch.tensors
        return self.language_model.losses(tensors["forms"], tensors["form_index"], tensors["lengths"].to(tensors["forms"].device), tensors["words"])

    def loss(self, batch: RecurrentBatch) -> torch.Tensor:
        total, count = self.losses(batch)
        return total / max(count, 1)


def model_settings(settings: RecurrentSettings, words: int, characters: int) -> dict:
    if settings.size not in SIZES:
        raise SeqTransferError(f"unknown LM size '{settings.size}'", hint=f"use --size {' or '.join(SIZES)}")
    return {**SIZES[settings.size], **DEFAULTS, **settings.sizes, "softmax": settings.softmax, "words": words, "characters": characters}


TOKEN_JOIN = "\x1f"  # the unit separator: a control character no token of a text or dataset holds


def split_sentences(sentences: Sequence[Sequence[str]], share: float, seed: int) -> tuple[list[list[str]], list[list[str]]]:
    """(training, held-out) token lists: the held-out split is one of distinct lines, as the Transformer LM's (``split_held_out``)."""
    # each sentence keyed by its tokens joined with a character no token holds (a space may be inside a token);
    # the distinct sentences, so the held-out choice, are those of the lines joined by spaces
    training_lines, held_out_lines = split_held_out([TOKEN_JOIN.join(sentence) for sentence in sentences], share, seed)
    return [line.split(TOKEN_JOIN) for line in training_lines], [line.split(TOKEN_JOIN) for line in held_out_lines]


def run_identity(sentences: Sequence[Sequence[str]], settings, train_config, architecture: str = "bilstm") -> dict:
    """What decides the LM a run trains: its text, the settings (a dataclass), the training's (not threads nor device)."""
    import hashlib

    text = hashlib.sha256("\n".join(" ".join(sentence) for sentence in sentences).encode("utf-8")).hexdigest()[:16]
    training = {key: getattr(train_config, key) for key in ("learning_rate", "batch_size", "max_epochs", "patience", "seed", "gradient_clip")}
    if train_config.amp != "off":  # only then: the folders of fp32 runs made before --amp existed still resume
        training["amp"] = train_config.amp
    return {"text": {"lines": len(sentences), "hash": text}, "settings": {"architecture": architecture, **settings.__dict__}, "training": training}


def prepare_run(sentences: list[list[str]], settings, train_config, output: Path, architecture: str = "bilstm") -> tuple[Path, dict, list, list]:
    """(the work folder ``OUTPUT.partial``, checked to hold this run if it exists; the run's identity; the
    training and the held-out sentences), the run seeded."""
    work = output.with_name(output.name + ".partial")
    identity = run_identity(sentences, settings, train_config, architecture)
    check_work_folder(work, identity)
    seed_everything(train_config.seed, train_config.threads)
    training, held_out = split_sentences(sentences, settings.held_out, train_config.seed)
    return work, identity, training, held_out


def on_device(model: nn.Module, device: str) -> nn.Module:
    """``model`` moved to ``device`` (auto, cpu, cuda, ...), the device prepared."""
    target = resolve_device(device)
    prepare_device(target)
    return model.to(target)


def train_language_model(model: nn.Module, source, scored: list, train_config, work: Path, log, show_progress: bool, parameter_groups: list[dict] | None = None):
    """The one training loop on ``source`` (``parameter_groups``: rates per group), early stopping on
    the held-out perplexity of ``scored`` (checkpoints in ``work``); the best weights are loaded back.
    -> (fit's result, final perplexity)."""
    result = fit(
        model,
        source,
        lambda trained: (-perplexity(trained, scored), {}),
        train_config,
        parameter_groups=parameter_groups,
        checkpoint_dir=work,
        log=log,
        show_progress=show_progress,
        describe_dev=lambda score: f"held-out perplexity {-score:.2f}",
    )
    model.load_state_dict(result.best_state)
    final = perplexity(model, scored)
    log(f"held-out perplexity {final:.2f} (best epoch {result.best_epoch})")
    return result, final


def publish(work: Path, output: Path, summary: dict) -> None:
    """``work/model`` (the saved LM) gets ``pretraining.json`` and becomes ``output``; the work folder goes."""
    (work / "model" / TRAINING_REPORT).write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (work / "model").rename(output)
    shutil.rmtree(work)


def training_cost(result, final: float, training_tokens: int, amp: str = "off", model: nn.Module | None = None) -> dict:
    """The perplexity per epoch and what the training cost (seconds, training tokens per second, the precision ``amp``, peak memory), for ``pretraining.json``;
    with the ``model``, the processor it trained on (the last process's, where a run resumed): a seed fixes an LM's weights on one kind of processor only."""
    history = [{key: value for key, value in record.items() if key != "dev"} | {"held_out_perplexity": round(-record["dev"], 3)} for record in result.history]
    train_seconds = sum(record.get("train_seconds", record.get("epoch_seconds", 0.0)) for record in result.history)
    return {
        "held_out_perplexity": round(final, 3),
        "best_epoch": result.best_epoch,
        "training_tokens": training_tokens,
        "seconds": training_seconds(result),
        "training_tokens_per_second": round(training_tokens * len(result.history) / train_seconds, 1) if train_seconds else None,
        "amp": amp,
        "peak_rss_megabytes": peak_rss_megabytes(),  # this process's (a resumed run: since it resumed)
        **({"device": describe_model_device(model)} if model is not None else {}),
        "history": history,
    }


def pretrain_recurrent(sentences: list[list[str]], settings: RecurrentSettings, train_config, output: Path, log, show_progress: bool = True, device: str = "auto") -> dict:
    """Train the recurrent LM on ``sentences`` (token lists); write its folder ``output`` (built in
    ``output.partial``, renamed when complete; an interrupted run resumes from there)."""
    sentences = [sentence[: settings.max_tokens] for sentence in sentences if sentence]
    work, identity, training, held_out = prepare_run(sentences, settings, train_config, output)
    words, characters = vocabularies(training, settings.vocabulary_size)
    language_model = RecurrentLanguageModel(model_settings(settings, len(words), len(characters) + FIRST_CHARACTER))
    model = on_device(RecurrentPretraining(language_model), device)
    word_ids = softmax_word_ids(words)
    character_ids = {character: index + FIRST_CHARACTER for index, character in enumerate(characters)}
    limit = language_model.settings["max_characters"]
    source = RecurrentBatches(training, word_ids, character_ids, limit, train_config.batch_size, train_config.seed)
    scored = RecurrentBatches(held_out, word_ids, character_ids, limit, train_config.evaluation_batch_size, train_config.seed).fixed()
    encoder_parameters = sum(parameter.numel() for name, parameter in language_model.named_parameters() if not name.startswith("softmax."))
    training_tokens = sum(map(len, training))
    log(
        f"recurrent language model ({settings.size}): {encoder_parameters:,} parameters (+ {sum(p.numel() for p in language_model.softmax.parameters()):,} "
        f"in the {settings.softmax} softmax over {len(words):,} words), {len(characters)} characters; {len(training):,} training sentences "
        f"({training_tokens:,} tokens), {len(held_out):,} held out"
    )
    start_work_folder(work, identity)
    result, final = train_language_model(model, source, scored, train_config, work, log, show_progress)
    summary = training_report(result, final, settings, language_model, encoder_parameters, training, held_out, train_config.amp)
    save_recurrent_lm(work / "model", language_model.cpu(), words, characters)
    publish(work, output, summary)
    return summary


def training_report(
    result, final: float, settings: RecurrentSettings, language_model: RecurrentLanguageModel, encoder_parameters: int, training: list[list[str]], held_out: list[list[str]], amp: str = "off"
) -> dict:
    """What ``pretraining.json`` says: the perplexity per epoch, the sizes, and what the training cost."""
    return {
        "architecture": "bilstm",
        "size": settings.size,
        "softmax": settings.softmax,
        "encoder_parameters": encoder_parameters,
        "softmax_parameters": sum(parameter.numel() for parameter in language_model.softmax.parameters()),
        "words": language_model.settings["words"],
        "training_sentences": len(training),
        "held_out_sentences": len(held_out),
        "settings": language_model.settings,
        **training_cost(result, final, sum(map(len, training)), amp, language_model),
    }
