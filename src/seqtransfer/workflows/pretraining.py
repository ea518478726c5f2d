"""A small Transformer language model of our own, pretrained on tweets (``seqtransfer pretrain-lm``).

The tutorial's pretrain -> adapt path with nothing downloaded: a BPE tokenizer trained with
the ``tokenizers`` library on the text, then a small BERT (a few million parameters) trained as a
masked LM (BERT's 15 %: 80 % [MASK], 10 % a random token, 10 % kept) or a causal LM (the same
network with a left-to-right mask), by the one training loop (``training/loop.fit``: AdamW, linear
warm-up and decay, early stopping on the held-out perplexity, a checkpoint per epoch so that an
interrupted run resumes). The result is a Hugging Face folder (``config.json``,
``model.safetensors``, the tokenizer files, ``pretraining.json``) that ``model.encoder=FOLDER``
reads like MiniLM, with every scheme.

Shapes: B sequences of at most S sub-words, V sub-word types.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from seqtransfer.data.batching import length_groups_of, pad_arrays
from seqtransfer.device import describe_device, prepare_device, resolve_device
from seqtransfer.embeddings.transformer import TRAINING_REPORT
from seqtransfer.errors import SeqTransferError
from seqtransfer.files import read_json, write_json
from seqtransfer.resources import peak_rss_megabytes
from seqtransfer.rundir import remove_partial_files
from seqtransfer.training.loop import FitResult, fit
from seqtransfer.training.seeding import seed_everything

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
IGNORED = -100  # positions the loss skips


@dataclass
class LanguageModelSettings:
    objective: str = "masked"  # masked | causal
    vocabulary_size: int = 8000
    hidden: int = 256
    layers: int = 4
    heads: int = 4
    intermediate: int = 1024
    max_length: int = 64  # sub-words per tweet, [CLS] and [SEP] included
    held_out: float = 0.02  # share of the lines kept for perplexity
    mask_share: float = 0.15


def train_tokenizer(lines: Sequence[str], vocabulary_size: int):
    """A lower-casing BPE tokenizer trained on ``lines``, as a ``transformers`` fast tokenizer.

    BPE rather than BERT's WordPiece: the WordPiece trainer of ``tokenizers`` 0.23 numbers its
    ``##`` sub-words in hash-map order, so the same text gives different vocabularies from run
    to run (huggingface/tokenizers#1794; measured here: 4 vocabularies in 5 runs). Plain BPE gave
    one in every run. Words are split on spaces and punctuation first (BERT's pre-tokenizer).
    """
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=vocabulary_size, special_tokens=SPECIAL_TOKENS, show_progress=False))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def build_language_model(settings: LanguageModelSettings, vocabulary_size: int) -> nn.Module:
    """A BERT of the settings' sizes with a masked-LM head, or a left-to-right one (``is_decoder``)."""
    from transformers import BertConfig, BertForMaskedLM, BertLMHeadModel

    config = BertConfig(
        vocab_size=vocabulary_size,
        hidden_size=settings.hidden,
        num_hidden_layers=settings.layers,
        num_attention_heads=settings.heads,
        intermediate_size=settings.intermediate,
        max_position_embeddings=settings.max_length,
        is_decoder=settings.objective == "causal",
        tie_word_embeddings=False,
    )  # untied: every weight is its own tensor in the safetensors checkpoints
    return BertLMHeadModel(config) if settings.objective == "causal" else BertForMaskedLM(config)


@dataclass
class LanguageModelBatch:
    """input_ids (B, S), attention_mask (B, S), labels (B, S): the token to predict, or -100."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor

    def to(self, device: torch.device) -> LanguageModelBatch:
        return LanguageModelBatch(self.input_ids.to(device), self.attention_mask.to(device), self.labels.to(device))


def padded(sequences: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(B, S) ids padded with 0 ([PAD]) and the (B, S) attention mask."""
    lengths = np.array([len(sequence) for sequence in sequences])
    width = int(lengths.max())
    return pad_arrays(list(sequences), width), (np.arange(width) < lengths[:, None]).astype(np.int64)


def masked_batch(sequences: Sequence[np.ndarray], generator: np.random.Generator, settings: LanguageModelSettings, mask_id: int, vocabulary_size: int, special_ids: np.ndarray) -> LanguageModelBatch:
    """BERT's masking, drawn with ``generator`` (hand-written rather than transformers' collator, whose
    draws come from torch's global generator: here a resumed run masks as an uninterrupted one)."""
    ids, mask = padded(sequences)
    candidates = (mask == 1) & ~np.isin(ids, special_ids)
    chosen = candidates & (generator.random(ids.shape) < settings.mask_share)
    labels = np.where(chosen, ids, IGNORED)
    action = generator.random(ids.shape)
    inputs = ids.copy()
    inputs[chosen & (action < 0.8)] = mask_id
    replace = chosen & (action >= 0.8) & (action < 0.9)
    inputs[replace] = generator.integers(len(SPECIAL_TOKENS), vocabulary_size, size=int(replace.sum()))
    return LanguageModelBatch(torch.from_numpy(inputs), torch.from_numpy(mask), torch.from_numpy(labels))


def causal_batch(sequences: Sequence[np.ndarray]) -> LanguageModelBatch:
    """Every real sub-word after the first is predicted from those before it (the loss shifts)."""
    ids, mask = padded(sequences)
    return LanguageModelBatch(torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(np.where(mask == 1, ids, IGNORED)))


class LanguageModelBatches:
    """The training sequences in batches of similar length, shuffled and masked by (seed, epoch)."""

    def __init__(self, sequences: list[np.ndarray], settings: LanguageModelSettings, tokenizer, batch_size: int, seed: int) -> None:
        self.sequences, self.settings, self.batch_size, self.seed = sequences, settings, batch_size, seed
        self.mask_id, self.vocabulary_size = tokenizer.mask_token_id, len(tokenizer)
        self.special_ids = np.array(tokenizer.all_special_ids)
        self.sentence_count = len(sequences)
        self.batch_count = -(-len(sequences) // batch_size)
        self.mean_batch_loss = False  # a batch's loss sums its predicted sub-words: the epoch's is a mean per sequence

    def make(self, rows: Sequence[int], generator: np.random.Generator) -> LanguageModelBatch:
        chosen = [self.sequences[row] for row in rows]
        if self.settings.objective == "causal":
            return causal_batch(chosen)
        return masked_batch(chosen, generator, self.settings, self.mask_id, self.vocabulary_size, self.special_ids)

    def batches(self, epoch: int) -> Iterator[LanguageModelBatch]:
        generator = np.random.default_rng([self.seed, epoch])
        order = generator.permutation(len(self.sequences))
        groups = length_groups_of(order, np.array([len(sequence) for sequence in self.sequences]), self.batch_size)
        for number in generator.permutation(len(groups)):
            yield self.make(groups[number], generator)


class Pretraining(nn.Module):
    """The Hugging Face LM as the training loop sees it: ``loss(batch)`` summed over predicted sub-words."""

    def __init__(self, language_model: nn.Module, causal: bool) -> None:
        super().__init__()
        self.language_model, self.causal = language_model, causal

    def loss(self, batch: LanguageModelBatch) -> torch.Tensor:
        return self.losses(batch)[0]

    def losses(self, batch: LanguageModelBatch) -> tuple[torch.Tensor, int]:
        """(summed cross-entropy, number of predicted sub-words)."""
        if not self.causal and self.head is not None:
            return self.masked_losses(batch)
        logits = self.language_model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits  # (B, S, V)
        labels = batch.labels
        if self.causal:  # position s predicts sub-word s + 1
            logits, labels = logits[:, :-1], labels[:, 1:]
        loss = functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORED, reduction="sum")
        return loss, int((labels != IGNORED).sum())

    @property
    def head(self) -> nn.Module | None:
        """The masked LM's head over (N, H) states (BERT's ``cls``, RoBERTa's and MPNet's ``lm_head``), if it has one of those."""
        return getattr(self.language_model, "cls", None) or getattr(self.language_model, "lm_head", None)

    def masked_losses(self, batch: LanguageModelBatch) -> tuple[torch.Tensor, int]:
        """The masked loss with the head run on the masked positions only: its (M, V) scores instead
        of (B, S, V), for M of about 15 % of the B x S positions. With MiniLM's 30,522 sub-words the
        head over every position was about half of a training step's arithmetic (2·B·S·H·V against
        the six layers' 2·B·S·10.6 M, forward; arithmetic, not a measurement)."""
        encoder = getattr(self.language_model, self.language_model.base_model_prefix)
        states = encoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask).last_hidden_state  # (B, S, H)
        chosen = batch.labels != IGNORED  # (B, S)
        logits = self.head(states[chosen])  # (M, V)
        return functional.cross_entropy(logits, batch.labels[chosen], reduction="sum"), int(chosen.sum())


def perplexity(model: Pretraining, batches: list[LanguageModelBatch]) -> float:
    """exp(mean cross-entropy per predicted sub-word) on fixed held-out batches (masked: a pseudo-perplexity of the masked positions)."""
    model.eval()
    total, count = 0.0, 0
    device = next(model.parameters()).device
    with torch.inference_mode():
        for batch in batches:
            loss, predicted = model.losses(batch.to(device))
            total, count = total + loss.item(), count + predicted
    return math.exp(total / max(count, 1))


def encode_lines(tokenizer, lines: Sequence[str], max_length: int) -> list[np.ndarray]:
    """Sub-word ids of each line with [CLS] and [SEP], cut at ``max_length``; lines of no sub-word dropped."""
    encoded = tokenizer(list(lines), truncation=True, max_length=max_length)["input_ids"]
    return [np.asarray(ids, dtype=np.int64) for ids in encoded if len(ids) > 2]


def split_held_out(lines: list[str], share: float, seed: int) -> tuple[list[str], list[str]]:
    """(training lines, held-out lines): a seeded share of the distinct lines, at least one each."""
    distinct = list(dict.fromkeys(lines))
    if len(distinct) < 2:
        raise SeqTransferError("the text has fewer than two distinct lines", hint="give more text: one sentence or tweet per line")
    order = np.random.default_rng(seed).permutation(len(distinct))
    held = min(max(1, int(round(share * len(distinct)))), len(distinct) - 1)
    held_set = {distinct[index] for index in order[:held]}
    return [line for line in lines if line not in held_set], [distinct[index] for index in order[:held]]


def check_predicted(sequences: list[np.ndarray], held_out: list[LanguageModelBatch]) -> None:
    """Training lines to learn from and held-out sub-words to predict (a perplexity of nothing scored would read 1.00): else one line."""
    if not sequences:
        raise SeqTransferError("no training line has a sub-word once tokenised", hint="give more text: one sentence or tweet per line")
    if not any(int((batch.labels != IGNORED).sum()) for batch in held_out):
        raise SeqTransferError("the held-out lines give no sub-word to predict, so there is no perplexity to stop on", hint="give more text, or raise --held-out")


IDENTITY_FILE = "settings.json"


def run_identity(lines: Sequence[str], settings: LanguageModelSettings, train_config) -> dict:
    """What decides the LM a run trains: its text (a hash of its lines), the model's settings and
    the training's (not threads nor device)."""
    import hashlib

    text = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]
    training = {key: getattr(train_config, key) for key in ("learning_rate", "batch_size", "max_epochs", "patience", "seed", "weight_decay", "gradient_clip", "schedule")}
    return {"text": {"lines": len(lines), "hash": text}, "settings": dict(settings.__dict__), "training": training}


def check_work_folder(work: Path, identity: dict) -> None:
    """``OUTPUT.partial``, if there is one, holds this run (resumed): a folder an interrupted run with
    other settings or text left is one line (mixing them would train one tokenizer's weights under
    another's), as is one of an earlier version, whose settings are unknown. Reads only."""
    saved = work / IDENTITY_FILE
    if saved.is_file():
        earlier = read_json(saved)
        differing = [  # a key either side lacks differs too (a bf16 run's amp, which an fp32 run leaves out)
            f"{section}.{key}" if section != "text" else "the text"
            for section in identity
            for key in {**earlier.get(section, {}), **identity[section]}
            if earlier.get(section, {}).get(key) != identity[section].get(key)
        ]
        if differing:
            raise SeqTransferError(
                f"{work} holds an interrupted run with other settings ({', '.join(dict.fromkeys(differing))})", hint=f"run the same command to resume it, or delete {work} to start over"
            )
    elif work.is_dir() and any(work.iterdir()):
        raise SeqTransferError(f"{work} holds an interrupted run of an earlier version (no {IDENTITY_FILE}), its settings unknown", hint=f"delete {work} to start over")


def start_work_folder(work: Path, identity: dict) -> None:
    """Create ``OUTPUT.partial`` with the run's identity (checked by ``check_work_folder``), unless it
    holds it already; a resumed one loses what a save cut short by a kill left (``.NAME.XXXX.tmp``)."""
    if work.is_dir():
        remove_partial_files(work)
    if not (work / IDENTITY_FILE).is_file():
        work.mkdir(parents=True, exist_ok=True)
        write_json(work / IDENTITY_FILE, identity)


def held_out_batches(tokenizer, lines: list[str], settings: LanguageModelSettings, train_config) -> list[LanguageModelBatch]:
    """The held-out lines in batches, masked once: every epoch is scored on the same positions."""
    source = LanguageModelBatches(encode_lines(tokenizer, lines, settings.max_length), settings, tokenizer, train_config.evaluation_batch_size, train_config.seed)
    return list(source.batches(0))


def fit_language_model(model: Pretraining, source: LanguageModelBatches, held_out: list[LanguageModelBatch], train_config, work: Path, log, show_progress: bool) -> FitResult:
    """The one training loop on the LM, stopping on the held-out perplexity, checkpointed in ``work``."""
    return fit(
        model,
        source,
        lambda trained: (-perplexity(trained, held_out), {}),
        train_config,
        checkpoint_dir=work,
        log=log,
        show_progress=show_progress,
        describe_dev=lambda score: f"held-out perplexity {-score:.2f}",
    )


def training_seconds(result: FitResult) -> float:
    """The seconds of every epoch of an LM's training (those an earlier, interrupted process ran included)."""
    return round(sum(record.get("epoch_seconds", 0.0) for record in result.history), 1)


def training_summary(settings: LanguageModelSettings, parameters: int, final: float, result: FitResult, training_lines: int, held_out_lines: int, device: str = "") -> dict:
    """What ``pretraining.json`` says of the training: sizes, the final perplexity, its seconds and peak memory, the processor
    (``device``, as run records name it: a seed fixes an LM's weights on one kind of processor only), the epochs' history."""
    return {
        "objective": settings.objective,
        "parameters": parameters,
        "held_out_perplexity": round(final, 3),
        "best_epoch": result.best_epoch,
        "training_lines": training_lines,
        "held_out_lines": held_out_lines,
        "settings": settings.__dict__,
        "seconds": training_seconds(result),
        "peak_rss_megabytes": peak_rss_megabytes(),  # this process's (a resumed run: since it resumed)
        **({"device": device} if device else {}),
        "history": [{key: value for key, value in record.items() if key != "dev"} | {"held_out_perplexity": -record["dev"]} for record in result.history],
    }


def save_language_model(language_model: nn.Module, tokenizer, summary: dict, work: Path, output: Path, show_progress: bool) -> None:
    """Write the Hugging Face folder in ``work``, then rename it to ``output`` and remove ``work``."""
    if not show_progress:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    language_model.save_pretrained(work / "model")
    tokenizer.save_pretrained(work / "model")
    (work / "model" / TRAINING_REPORT).write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (work / "model").rename(output)
    shutil.rmtree(work)


def pretrain(lines: list[str], settings: LanguageModelSettings, train_config, output: Path, log, show_progress: bool = True, device: str = "auto") -> dict:
    """Train the tokenizer and the LM on ``lines``; write the Hugging Face folder ``output``
    (built in ``output.partial``, renamed when complete; an interrupted run resumes from there)."""
    work = output.with_name(output.name + ".partial")
    identity = run_identity(lines, settings, train_config)
    check_work_folder(work, identity)  # before minutes of tokenizer training and encoding
    seed_everything(train_config.seed, train_config.threads)
    training_lines, held_out_lines = split_held_out(lines, settings.held_out, train_config.seed)
    tokenizer = train_tokenizer(training_lines, settings.vocabulary_size)
    language_model = build_language_model(settings, len(tokenizer))
    model = Pretraining(language_model, settings.objective == "causal")
    target = resolve_device(device)
    prepare_device(target)
    model.to(target)
    sequences = encode_lines(tokenizer, training_lines, settings.max_length)
    source = LanguageModelBatches(sequences, settings, tokenizer, train_config.batch_size, train_config.seed)
    held_out = held_out_batches(tokenizer, held_out_lines, settings, train_config)
    check_predicted(sequences, held_out)
    parameters = sum(parameter.numel() for parameter in language_model.parameters())
    log(
        f"language model: {settings.objective}, {parameters:,} parameters, {len(tokenizer)} sub-words; "
        f"{len(sequences):,} training lines, {len(held_out_lines):,} held out; {sum(map(len, sequences)):,} training sub-words"
    )
    start_work_folder(work, identity)
    result = fit_language_model(model, source, held_out, train_config, work, log, show_progress)
    model.load_state_dict(result.best_state)
    final = perplexity(model, held_out)
    log(f"held-out perplexity {final:.2f} (best epoch {result.best_epoch})")
    summary = training_summary(settings, parameters, final, result, len(sequences), len(held_out_lines), describe_device(target))
    save_language_model(language_model, tokenizer, summary, work, output, show_progress)
    return summary
