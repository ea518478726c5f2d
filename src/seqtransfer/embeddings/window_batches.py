"""A Transformer encoder's token vectors for many windows of sub-words, in padded batches.

Frozen features (the feature cache) and the probes of a fine-tuned encoder read every layer of
every window of a corpus. One forward call per window spent most of its time in the call itself
on a CPU (six layers of 20-sub-word matrices); windows of similar length are padded into one call
instead (``BATCH_SUBWORDS`` sub-words at most, padding included), sorted by length so that little
is padding. The padded positions are masked out of attention, so each real sub-word's vectors are
those of its window alone, to float rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

BATCH_SUBWORDS = 4096  # sub-words per forward call, padding included
BATCH_WINDOWS = 128  # windows per forward call at most
PADDED_SUBWORDS = 16  # mean pooling: longer tokens are averaged one by one, not padded into the others' gather


@dataclass
class WindowInput:
    """One window: its sub-word ids with the special tokens, their token types (None: the model's
    default), the number of sub-words of each of its tokens, and the position of its first token's."""

    ids: list[int]
    types: list[int] | None
    token_lengths: list[int]
    offset: int


def window_input(tokenizer, model, pieces: list[list[int]], limit: int, segments: list[int] | None = None) -> WindowInput:
    """``[CLS] pieces [SEP]`` of one window (each token cut to ``limit`` sub-words). ``segments`` (one
    per token, then the segment after the window: ``token_segments``) become BERT's token types when
    the encoder has them: a pair's second text reads type 1, [CLS] the first token's segment and the
    closing [SEP] the one after the last, as in fine-tuning (``subword_windows``)."""
    pieces = [token_pieces[:limit] for token_pieces in pieces]
    ids = [tokenizer.cls_token_id, *(piece for token_pieces in pieces for piece in token_pieces), tokenizer.sep_token_id]
    keep = [piece is not None for piece in ids]
    types = None
    if segments is not None and getattr(model.config, "type_vocab_size", 0) > 1:
        every_type = [segments[0], *(segment for segment, token_pieces in zip(segments, pieces) for _ in token_pieces), segments[-1]]
        types = [kind for kind, kept in zip(every_type, keep) if kept]
    offset = 1 if tokenizer.cls_token_id is not None else 0
    return WindowInput([piece for piece in ids if piece is not None], types, [len(token_pieces) for token_pieces in pieces], offset)


def length_batches(inputs: list[WindowInput]) -> list[list[int]]:
    """Indices of ``inputs`` in batches of similar length, shortest first, each within
    ``BATCH_SUBWORDS`` padded sub-words and ``BATCH_WINDOWS`` windows (a longer window goes alone)."""
    batches: list[list[int]] = []
    for index in sorted(range(len(inputs)), key=lambda number: len(inputs[number].ids)):
        width = len(inputs[index].ids)  # the longest so far: sorted by length
        if batches and len(batches[-1]) < BATCH_WINDOWS and (len(batches[-1]) + 1) * width <= BATCH_SUBWORDS:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


def padded(inputs: list[WindowInput], padding_id: int) -> dict[str, torch.Tensor]:
    """The model's inputs for a batch of windows: ids (B, S) padded with ``padding_id``, the
    attention mask (B, S), and token types (B, S) where any window has them."""
    width = max(len(window.ids) for window in inputs)
    ids = torch.full((len(inputs), width), padding_id, dtype=torch.long)
    mask = torch.zeros(len(inputs), width, dtype=torch.long)
    for row, window in enumerate(inputs):
        ids[row, : len(window.ids)] = torch.tensor(window.ids)
        mask[row, : len(window.ids)] = 1
    batch = {"input_ids": ids, "attention_mask": mask}
    if any(window.types is not None for window in inputs):
        types = torch.zeros(len(inputs), width, dtype=torch.long)
        for row, window in enumerate(inputs):
            if window.types is not None:
                types[row, : len(window.types)] = torch.tensor(window.types)
        batch["token_type_ids"] = types
    return batch


def token_vectors(layers: torch.Tensor, window: WindowInput, pooling: str) -> np.ndarray:
    """(S, L + 1, H) vectors of a window's sub-words -> (T, L + 1, H) float16, a token's first
    sub-word (``pooling="first"``) or the mean of its sub-words (``"mean"``). Every token has at
    least one sub-word (``subword_pieces`` gives an unknown word the tokenizer's unknown id).

    A gather for the window's tokens together, where a slice per token cost two or three operators
    each (a 20-token window: 6 operators in all for the first sub-word, 25 for the mean, against 42)."""
    lengths = torch.tensor(window.token_lengths, dtype=torch.long)  # (T,)
    if not len(lengths):
        return np.zeros((0, *layers.shape[1:]), dtype=np.float16)
    starts = window.offset + torch.cumsum(lengths, 0) - lengths  # (T,)
    vectors = layers[starts] if pooling == "first" else mean_vectors(layers, starts, lengths)
    return vectors.float().numpy().astype(np.float16)


def mean_vectors(layers: torch.Tensor, starts: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(S, L + 1, H) sub-word vectors, (T,) first sub-words and counts -> (T, L + 1, H) each token's
    mean, the same bits as the mean of its own slice (a test holds this). Tokens of up to
    ``PADDED_SUBWORDS`` sub-words are gathered together (``padded_means``); a longer token (a URL)
    takes its own slice, so that it does not pad every other token to its length."""
    if int(lengths.max()) <= PADDED_SUBWORDS:
        return padded_means(layers, starts, lengths)
    vectors = layers.new_empty((len(lengths), *layers.shape[1:]))
    short = torch.nonzero(lengths <= PADDED_SUBWORDS).squeeze(1)
    if len(short):
        vectors[short] = padded_means(layers, starts[short], lengths[short])
    for row in torch.nonzero(lengths > PADDED_SUBWORDS).squeeze(1).tolist():
        start, length = int(starts[row]), int(lengths[row])
        vectors[row] = layers[start : start + length].mean(0)
    return vectors


def padded_means(layers: torch.Tensor, starts: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(S, L + 1, H), (T,), (T,) -> (T, L + 1, H): the tokens' sub-words gathered, padded to the
    longest (W), summed in order with zeros after each token's own, divided by their count."""
    steps = torch.arange(int(lengths.max()))  # (W,)
    inside = steps < lengths[:, None]  # (T, W)
    pieces = layers[torch.where(inside, starts[:, None] + steps, 0)]  # (T, W, L + 1, H)
    return pieces.masked_fill(~inside[:, :, None, None], 0).sum(1) / lengths[:, None, None]


@torch.inference_mode()
def encode_windows(tokenizer, model, inputs: list[WindowInput], pooling: str) -> list[np.ndarray]:
    """Per window, in the order given, its tokens' vectors of every layer (T, L + 1, H) float16."""
    padding_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (getattr(model.config, "pad_token_id", None) or 0)
    results: list[np.ndarray | None] = [None] * len(inputs)
    for batch in length_batches(inputs):
        outputs = model(**padded([inputs[index] for index in batch], padding_id))
        layers = torch.stack(outputs.hidden_states, dim=2)  # (B, S, L + 1, H)
        for row, index in enumerate(batch):
            results[index] = token_vectors(layers[row], inputs[index], pooling)
    return results
