"""Pretraining our AWD-LSTM language model (``seqtransfer pretrain-lm --architecture awd-lstm``).

The network is ``embeddings/awd_lstm.py``. Here, as fastai's ``LMDataLoader`` and
``language_model_learner`` do: the training sentences, shuffled by (seed, epoch), each ended by
</S>, are concatenated into one stream of N word ids; the stream is laid out as B rows of
L = (N - 1) // B consecutive words (B the batch size; the few words left over are dropped) and
read in chunks of ``bptt`` steps, left to right, each chunk starting from the LSTM states the
previous one ended with (truncated back-propagation through time). The loss is the mean -log p
of each next word plus fastai's activation (AR) and temporal activation (TAR) regularisation.
The rest is the recurrent LM's (``workflows/recurrent_pretraining.py``): the softmax's words (<unk>,
<S>, </S>, then the most frequent words seen twice or more), the held-out split of distinct lines,
the one training loop (Adam, early stopping on the held-out perplexity, a checkpoint per epoch so
that an interrupted run resumes from ``OUTPUT.partial``), and ``pretraining.json`` with what the
training cost.

Perplexity: exp of the mean -log p of every next word of the held-out stream (its sentences in
order, each ended by </S>; laid out and read as the training stream), an unknown word counted as
<unk>.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from seqtransfer.embeddings.awd_lstm import DEFAULTS, SIZES, AwdLstmLanguageModel, save_awd_lstm
from seqtransfer.embeddings.recurrent_lm import SENTENCE_END, UNKNOWN_WORD, softmax_word_ids
from seqtransfer.errors import SeqTransferError
from seqtransfer.workflows.pretraining import start_work_folder
from seqtransfer.workflows.recurrent_pretraining import on_device, prepare_run, publish, train_language_model, training_cost, vocabularies

ARCHITECTURE = "awd-lstm"  # the command's name for it


@dataclass
class AwdSettings:
    size: str = "large"  # tiny | small | large (embeddings/awd_lstm.SIZES; large is fastai's awd_lstm_lm_config)
    vocabulary_size: int = 60000  # words of the softmax, most frequent first (at least 2 occurrences); fastai's max_vocab
    bptt: int = 70  # steps per chunk of the stream (Merity et al.'s)
    held_out: float = 0.02
    sizes: dict = field(default_factory=dict)  # overrides of the size's and DEFAULTS' numbers (a caller's own, e.g. no dropout)


@dataclass
class StreamChunk:
    """``bptt`` steps of B rows of a stream: inputs (B, T) and the next words, targets (B, T)."""

    inputs: torch.Tensor
    targets: torch.Tensor
    starts: bool  # the stream's first chunk: the LSTMs start from zero states

    def to(self, device: torch.device) -> StreamChunk:
        return StreamChunk(self.inputs.to(device), self.targets.to(device), self.starts)


def encode_sentences(sentences: Sequence[Sequence[str]], words: dict[str, int]) -> list[np.ndarray]:
    """Each sentence's word ids followed by </S> (an unknown word: <unk>)."""
    return [np.array([*(words.get(token, UNKNOWN_WORD) for token in sentence), SENTENCE_END], dtype=np.int64) for sentence in sentences]


def stream_chunks(stream: np.ndarray, rows: int, bptt: int) -> list[StreamChunk]:
    """N ids -> B = min(rows, N - 1) rows of L = (N - 1) // B consecutive ids, in chunks of ``bptt`` steps
    (the last one shorter); row b's targets are its inputs moved one word on in the stream."""
    rows = max(1, min(rows, len(stream) - 1))
    length = (len(stream) - 1) // rows
    inputs = torch.from_numpy(stream[: rows * length].reshape(rows, length))  # (B, L)
    targets = torch.from_numpy(stream[1 : rows * length + 1].reshape(rows, length))  # (B, L)
    return [StreamChunk(inputs[:, start : start + bptt].contiguous(), targets[:, start : start + bptt].contiguous(), start == 0) for start in range(0, length, bptt)]


class StreamBatches:
    """The training sentences as a stream, their order shuffled by (seed, epoch), read in chunks."""

    def __init__(self, encoded: list[np.ndarray], rows: int, bptt: int, seed: int) -> None:
        self.encoded, self.rows, self.bptt, self.seed = encoded, rows, bptt, seed
        self.tokens = sum(map(len, encoded))
        length = (self.tokens - 1) // max(1, min(rows, self.tokens - 1))
        self.batch_count = -(-length // bptt)
        self.sentence_count = len(encoded)
        self.mean_batch_loss = True  # a chunk's loss is a mean per word: the epoch's is the mean of the chunks'

    def batches(self, epoch: int) -> Iterator[StreamChunk]:
        order = np.random.default_rng([self.seed, epoch]).permutation(len(self.encoded))
        yield from stream_chunks(np.concatenate([self.encoded[index] for index in order]), self.rows, self.bptt)

    def fixed(self) -> list[StreamChunk]:
        """The sentences in their order, once (held-out scoring)."""
        return stream_chunks(np.concatenate(self.encoded), self.rows, self.bptt)


class StreamPretraining(nn.Module):
    """The LM as the training loop sees it: ``loss(chunk)`` (the mean -log p per predicted word, with
    AR and TAR in training) and ``losses(chunk)`` (summed -log p, words predicted). The LSTM states
    one chunk ends with are where the next chunk of the same stream starts (detached)."""

    # pretrain-lm --amp bf16 may autocast it: the small LM trained 1.34x faster on this CPU's AVX512-BF16
    # (benchmarks/README.md, compare_fastai.py --amp); the decoder's product runs in bf16, the log-softmax
    # and the cross-entropy read its logits cast to fp32
    mixed_precision = True

    def __init__(self, language_model: AwdLstmLanguageModel) -> None:
        super().__init__()
        self.language_model = language_model
        self.carried: list | None = None  # the last chunk's states: not a weight; saved only in a checkpoint inside an epoch

    def carried_state(self) -> dict[str, torch.Tensor]:
        """The last chunk's states by name, ``LAYER.PART`` -> (1, B, H) (PART 0: h, 1: c); a checkpoint
        inside an epoch keeps them (training/progress.py)."""
        return {f"{layer}.{part}": tensor for layer, state in enumerate(self.carried or []) for part, tensor in enumerate(state)}

    def restore_carried(self, tensors: dict[str, torch.Tensor]) -> None:
        """The states ``carried_state`` saved, back on the model's device: where the stream's next chunk starts."""
        device = next(self.parameters()).device
        layers: dict[int, list[tuple[int, torch.Tensor]]] = {}
        for name, tensor in tensors.items():
            layer, part = map(int, name.split("."))
            layers.setdefault(layer, []).append((part, tensor.to(device)))
        self.carried = [tuple(tensor for _, tensor in sorted(layers[layer])) for layer in sorted(layers)]

    def read(self, chunk: StreamChunk) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """-> (B, T, E) last-layer outputs, (B, T, E) the same after the output dropout, summed -log p of the targets."""
        outputs, dropped, states = self.language_model(chunk.inputs, None if chunk.starts else self.carried)
        self.carried = [tuple(tensor.detach() for tensor in state) for state in states]
        logits = self.language_model.logits(dropped).float()  # (B, T, V); fp32 under bf16 autocast as well
        return outputs, dropped, functional.cross_entropy(logits.flatten(0, 1), chunk.targets.flatten(), reduction="sum")

    def losses(self, chunk: StreamChunk) -> tuple[torch.Tensor, int]:
        return self.read(chunk)[2], chunk.targets.numel()

    def loss(self, chunk: StreamChunk) -> torch.Tensor:
        outputs, dropped, total = self.read(chunk)
        loss = total / chunk.targets.numel()
        if not self.training:
            return loss
        settings = self.language_model.settings  # AR on the dropped outputs, TAR on the raw ones (fastai's RNNRegularizer)
        loss = loss + settings["activation_regularization"] * dropped.pow(2).mean()
        if outputs.size(1) > 1:
            loss = loss + settings["temporal_regularization"] * (outputs[:, 1:] - outputs[:, :-1]).pow(2).mean()
        return loss


def model_settings(settings: AwdSettings, words: int) -> dict:
    if settings.size not in SIZES:
        raise SeqTransferError(f"unknown AWD-LSTM size '{settings.size}'", hint=f"use --size {' or '.join(SIZES)}")
    return {**SIZES[settings.size], **DEFAULTS, **settings.sizes, "words": words}


def pretrain_awd_lstm(sentences: list[list[str]], settings: AwdSettings, train_config, output: Path, log, show_progress: bool = True, device: str = "auto") -> dict:
    """Train the AWD-LSTM LM on ``sentences`` (token lists); write its folder ``output`` (built in
    ``output.partial``, renamed when complete; an interrupted run resumes from there)."""
    work, identity, training, held_out = prepare_run([sentence for sentence in sentences if sentence], settings, train_config, output, ARCHITECTURE)
    words, _ = vocabularies(training, settings.vocabulary_size)
    language_model = AwdLstmLanguageModel(model_settings(settings, len(words)))
    model = on_device(StreamPretraining(language_model), device)
    word_ids = softmax_word_ids(words)
    source = StreamBatches(encode_sentences(training, word_ids), train_config.batch_size, settings.bptt, train_config.seed)
    scored = StreamBatches(encode_sentences(held_out, word_ids), train_config.batch_size, settings.bptt, train_config.seed).fixed()
    parameters = sum(parameter.numel() for parameter in language_model.parameters())
    log(
        f"AWD-LSTM language model ({settings.size}): {parameters:,} parameters (the decoder tied to the embedding of {len(words):,} words); "
        f"{len(training):,} training sentences ({source.tokens:,} tokens with </S>, {source.batch_count:,} chunks of {settings.bptt}), "
        f"{len(held_out):,} held out"
    )
    start_work_folder(work, identity)
    result, final = train_language_model(model, source, scored, train_config, work, log, show_progress)
    summary = {
        "architecture": ARCHITECTURE,
        "size": settings.size,
        "parameters": parameters,
        "words": len(words),
        "bptt": settings.bptt,
        "batch_size": train_config.batch_size,
        "training_sentences": len(training),
        "held_out_sentences": len(held_out),
        "settings": language_model.settings,
        **training_cost(result, final, source.tokens, train_config.amp, model),
    }
    save_awd_lstm(work / "model", language_model.cpu(), words)
    publish(work, output, summary)
    return summary
