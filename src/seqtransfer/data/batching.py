"""Turning sentences into padded tensors, with length bucketing.

Sentences are encoded to index arrays once. A batch is then assembled with a handful of
numpy operations: no per-token Python work on the training path. Characters are encoded once
per *distinct* word form in a batch (a tweet batch repeats "the", "@user", "!" many times).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from seqtransfer.data.tag_feature import feature_tags
from seqtransfer.data.tsv import PAIR_SEPARATOR
from seqtransfer.data.vocabulary import Vocabularies, Vocabulary
from seqtransfer.embeddings.feature_cache import cached_features
from seqtransfer.embeddings.transformer import reads_subwords, subword_windows
from seqtransfer.errors import warn

# A token's characters the character encoder reads: a longer one (a pasted blob, a 1 MB line without
# spaces) would cost minutes and gigabytes for nothing; real tokens (URLs included) are far shorter
MAX_TOKEN_CHARACTERS = 1000


@dataclass
class EncodedSentences:
    """Index arrays for a list of sentences.

    ``form_ids`` index ``forms`` (distinct raw tokens of this set), whose character indices are
    in ``form_characters``. ``targets`` holds what a task learns to predict, one int array per
    sentence under each name (``labels`` for tagging; ``heads`` and ``labels`` for parsing);
    it is empty when the sentences carry no annotation.
    """

    word_ids: list[np.ndarray]
    form_ids: list[np.ndarray]
    targets: dict[str, list[np.ndarray]]
    form_characters: list[np.ndarray]
    lengths: np.ndarray
    features: list[np.ndarray] | None = None  # per sentence (T, L + 1, H) float16 encoder vectors of every layer, when the model has an encoder
    subwords: list[list[np.ndarray]] | None = None  # fine-tuned encoder: per sentence its windows of sub-word ids
    subword_positions: list[np.ndarray] | None = None  # per sentence (T, 3): each token's window, first sub-word position and sub-word count
    segments: list[np.ndarray] | None = None  # sentence pairs: per token 0 (first text), 2 (the [SEP] between), 1 (second text)
    subword_types: list[list[np.ndarray]] | None = None  # fine-tuned encoder: per sentence and window, each sub-word's segment (token type)
    weights: np.ndarray | None = None  # (N,) float32 loss weight of each sentence (soft selection, corpora/selection.py), or None (all 1)
    tag_ids: list[np.ndarray] | None = None  # per sentence its input tags' indices (model.tag_feature), or None

    def padded_sizes(self) -> np.ndarray:
        """(N,) what each sentence pads its batch's encoder windows to: its longest sub-word window
        where a fine-tuned encoder reads it (the encoder's cost), else its token count. Batched by
        token count, MiniLM read 1.97 times the real sub-words of WNUT-17's test set in batches of
        16 (1.03 times batched by this), and 1.57 times those of its training set (1.02 with
        ``train.batching=subwords``, 1.69 with ``random``; measured)."""
        if self.subwords is None:
            return self.lengths
        return np.array([max(len(window) for window in windows) for windows in self.subwords], dtype=np.int64)


@dataclass
class Batch:
    """Padded tensors for one batch of B sentences of at most T tokens.

    words (B, T), targets: name -> (B, T) padded with -1 (empty without annotation),
    mask (B, T) bool, lengths (B,),
    characters (U, C) for the U distinct forms in order of length (shortest first),
    character_lengths (U,) non-decreasing,
    form_index (B, T): row of ``characters`` for each token,
    form_ids (B, T): the token's form in the EncodedSentences (row of ``form_characters``),
    indices (B,) positions of the sentences in their EncodedSentences.
    """

    words: torch.Tensor
    targets: dict[str, torch.Tensor]
    mask: torch.Tensor
    lengths: torch.Tensor
    characters: torch.Tensor
    character_lengths: torch.Tensor
    form_index: torch.Tensor
    form_ids: torch.Tensor
    indices: np.ndarray
    features: torch.Tensor | None = None  # (B, T, L + 1, H) encoder vectors of every layer (float32), or None
    subword_ids: torch.Tensor | None = None  # (W, S) sub-word ids of the batch's W windows (fine-tuned encoder), padded with 0
    subword_mask: torch.Tensor | None = None  # (W, S) 1 for real sub-words
    token_index: torch.Tensor | None = None  # (B, T) row of the flattened (W * S) encoder output holding each token's first sub-word
    token_sizes: torch.Tensor | None = None  # (B, T) number of sub-words of each token (its rows follow token_index's; padding 1)
    segments: torch.Tensor | None = None  # (B, T) sentence pairs: 0 first text, 2 separator, 1 second text (padding 2)
    subword_types: torch.Tensor | None = None  # (W, S) token type of each sub-word (1: the second text of a pair)
    weights: torch.Tensor | None = None  # (B,) loss weight of each sentence, or None (all 1)
    tags: torch.Tensor | None = None  # (B, T) input tag indices (model.tag_feature; padding 0), or None

    def to(self, device: torch.device) -> Batch:
        """The batch on ``device`` (built on the CPU, moved once; pinned, non-blocking copies to a GPU)."""
        if device.type == "cpu":
            return self
        pinned = device.type == "cuda"

        def move(tensor: torch.Tensor) -> torch.Tensor:
            return (tensor.pin_memory() if pinned else tensor).to(device, non_blocking=pinned)

        # character lengths choose the encoder's slices on the host: they stay on the CPU (no sync to read them)
        return Batch(
            move(self.words),
            {name: move(target) for name, target in self.targets.items()},
            move(self.mask),
            move(self.lengths),
            move(self.characters),
            self.character_lengths,
            move(self.form_index),
            move(self.form_ids),
            self.indices,
            *(
                move(tensor) if tensor is not None else None
                for tensor in (self.features, self.subword_ids, self.subword_mask, self.token_index, self.token_sizes, self.segments, self.subword_types, self.weights, self.tags)
            ),
        )

    @property
    def labels(self) -> torch.Tensor | None:
        """(B, T) label indices (-1: padding or a label unseen in training), None without annotation."""
        return self.targets.get("labels")


def encode_sentences(
    tokens: Sequence[Sequence[str]],
    vocabularies: Vocabularies,
    labels: Sequence[Sequence[str]] | None = None,
    targets: dict[str, list[np.ndarray]] | None = None,
    tags: Sequence[Sequence[str]] | None = None,
    cache_features: bool = True,
) -> EncodedSentences:
    """Encode tokens, and labels (unseen in training: -1) or a task's already encoded ``targets``.

    A model that reads input tags (``vocabularies.tags``) gets ``tags``, or its tagger's
    predictions (data/tag_feature.py). ``cache_features=False``: frozen encoder features are
    computed in memory, not cached (a user's sentences: ``Predictor``)."""
    forms: dict[str, int] = {}
    form_ids = [np.fromiter((forms.setdefault(token, len(forms)) for token in sentence), np.int64, len(sentence)) for sentence in tokens]
    characters = vocabularies.characters
    form_characters = [characters.encode(list(form[:MAX_TOKEN_CHARACTERS])) for form in forms]
    long_forms = sum(len(form) > MAX_TOKEN_CHARACTERS for form in forms)
    if long_forms:
        warn(f"{long_forms} token(s) of more than {MAX_TOKEN_CHARACTERS:,} characters: the character encoder reads their first {MAX_TOKEN_CHARACTERS:,}")
    word_ids = [vocabularies.words.encode(vocabularies.word_keys(sentence)) for sentence in tokens]
    if labels is not None:
        targets = {"labels": [encode_labels(vocabularies.labels, sentence) for sentence in labels]}
    lengths = np.array([len(sentence) for sentence in tokens], dtype=np.int64)
    features = subwords = positions = types = None
    if vocabularies.encoder and vocabularies.encoder_mode == "finetune":
        if reads_subwords(vocabularies.encoder):  # our recurrent LM reads the batch's characters instead
            subwords, positions, types = subword_windows(vocabularies.encoder, tokens, vocabularies.pair_encoding == "separate")
    elif vocabularies.encoder:
        features = cached_features(vocabularies.encoder, tokens, vocabularies.encoder_pooling, vocabularies.encoder_segments, store=cache_features, separate=vocabularies.pair_encoding == "separate")
    tag_ids = None
    if vocabularies.tags is not None:
        tags = tags if tags is not None else feature_tags(vocabularies, tokens)
        tag_ids = [vocabularies.tags.encode(sentence) for sentence in tags]
    return EncodedSentences(word_ids, form_ids, targets or {}, form_characters, lengths, features, subwords, positions, pair_segments(tokens), types, tag_ids=tag_ids)


def pair_segments(tokens: Sequence[Sequence[str]]) -> list[np.ndarray] | None:
    """Per sentence pair (tokens A [SEP] B): 0 for A, 2 for the separator, 1 for B; None when no sentence is a pair."""
    if not any(PAIR_SEPARATOR in sentence for sentence in tokens):
        return None
    segments = []
    for sentence in tokens:
        after = np.cumsum([token == PAIR_SEPARATOR for token in sentence]) > 0
        values = after.astype(np.int64)
        values[[index for index, token in enumerate(sentence) if token == PAIR_SEPARATOR]] = 2
        segments.append(values)
    return segments


def encode_labels(labels: Vocabulary, sentence: Sequence[str]) -> np.ndarray:
    """Label indices of one sentence; a label unseen in training is -1 (scored, never predicted)."""
    return np.fromiter((labels.index.get(label, -1) for label in sentence), np.int64, len(sentence))


def pad_arrays(arrays: list[np.ndarray], width: int, fill: int = 0) -> np.ndarray:
    """(len(arrays), width) matrix (int64, or float32 for float arrays): each array, right-padded with ``fill``."""
    dtype = np.float32 if arrays and arrays[0].dtype.kind == "f" else np.int64
    padded = np.full((len(arrays), width), fill, dtype=dtype)
    lengths = np.fromiter((len(array) for array in arrays), np.int64, len(arrays))
    positions = np.arange(width) < lengths[:, None]
    if len(arrays):
        padded[positions] = np.concatenate(arrays)
    return padded


def make_batch(data: EncodedSentences, indices: np.ndarray) -> Batch:
    """Assemble the padded batch of the sentences at ``indices``."""
    lengths = data.lengths[indices]
    width = max(int(lengths.max()), 1)
    form_matrix = pad_arrays([data.form_ids[i] for i in indices], width)
    mask = np.arange(width) < lengths[:, None]
    distinct_forms, inverse = np.unique(form_matrix[mask], return_inverse=True)
    character_lengths = np.fromiter((max(len(data.form_characters[form]), 1) for form in distinct_forms), np.int64, len(distinct_forms))
    by_length = np.argsort(character_lengths, kind="stable")  # the character encoder groups forms by length
    rank = np.empty_like(by_length)
    rank[by_length] = np.arange(len(by_length))
    form_index = np.zeros_like(form_matrix)
    form_index[mask] = rank[inverse]
    form_characters = [data.form_characters[form] for form in distinct_forms[by_length]]
    character_lengths = character_lengths[by_length]
    targets = {name: torch.from_numpy(pad_arrays([arrays[i] for i in indices], width, fill=-1)) for name, arrays in data.targets.items()}
    return Batch(
        words=torch.from_numpy(pad_arrays([data.word_ids[i] for i in indices], width)),
        targets=targets,
        mask=torch.from_numpy(mask),
        lengths=torch.from_numpy(lengths),
        characters=torch.from_numpy(pad_arrays(form_characters, int(character_lengths.max()))),
        character_lengths=torch.from_numpy(character_lengths),
        form_index=torch.from_numpy(form_index),
        form_ids=torch.from_numpy(form_matrix),
        indices=np.asarray(indices),
        features=None if data.features is None else pad_features([data.features[i] for i in indices], width),
        **({} if data.subwords is None else subword_fields(data, indices, width)),
        segments=None if data.segments is None else torch.from_numpy(pad_arrays([data.segments[i] for i in indices], width, fill=2)),
        weights=None if data.weights is None else torch.from_numpy(data.weights[indices]),
        tags=None if data.tag_ids is None else torch.from_numpy(pad_arrays([data.tag_ids[i] for i in indices], width)),
    )


def subword_fields(data: EncodedSentences, indices: np.ndarray, width: int) -> dict[str, torch.Tensor]:
    """The batch's sub-word windows (W, S), their mask, and each token's row in the flattened (W * S) encoder output."""
    rows = [window for i in indices for window in data.subwords[i]]
    size = max(len(window) for window in rows)
    ids = pad_arrays(rows, size)
    token_index = np.zeros((len(indices), width), dtype=np.int64)
    token_sizes = np.ones((len(indices), width), dtype=np.int64)
    offset = 0
    for row, i in enumerate(indices):
        positions = data.subword_positions[i]
        token_index[row, : len(positions)] = (offset + positions[:, 0]) * size + positions[:, 1]
        token_sizes[row, : len(positions)] = positions[:, 2]
        offset += len(data.subwords[i])
    types = pad_arrays([window for i in indices for window in data.subword_types[i]], size)
    return {
        "subword_ids": torch.from_numpy(ids),
        "subword_mask": torch.from_numpy((np.arange(size) < np.array([len(w) for w in rows])[:, None]).astype(np.int64)),
        "token_index": torch.from_numpy(token_index),
        "token_sizes": torch.from_numpy(token_sizes),
        "subword_types": torch.from_numpy(types),
    }


def pad_features(arrays: list[np.ndarray], width: int) -> torch.Tensor:
    """(T_i, L + 1, H) float16 arrays -> (B, width, L + 1, H) float32, zero-padded."""
    padded = np.zeros((len(arrays), width, *arrays[0].shape[1:]), dtype=np.float32)
    for row, array in enumerate(arrays):
        padded[row, : len(array)] = array
    return torch.from_numpy(padded)


def training_batches(data: EncodedSentences, batch_size: int, generator: np.random.Generator, pool_batches: int = 50, indices: np.ndarray | None = None, batching: str = "tokens") -> Iterator[Batch]:
    """Shuffled batches of all sentences or of those at ``indices``, by ``batching``: ``tokens``,
    sentences of similar token count (bucketing within pools of ``pool_batches`` batches);
    ``subwords``, of similar padded size (``padded_sizes``: a fine-tuned encoder's sub-words); or
    ``random``, no bucketing."""
    order = generator.permutation(len(data.lengths)) if indices is None else indices[generator.permutation(len(indices))]
    sizes = data.padded_sizes() if batching == "subwords" else data.lengths
    groups = length_groups_of(order, sizes, batch_size, 1 if batching == "random" else pool_batches)
    for group_number in generator.permutation(len(groups)):
        yield make_batch(data, groups[group_number])


def length_groups_of(order: np.ndarray, lengths: np.ndarray, batch_size: int, pool_batches: int = 50) -> list[np.ndarray]:
    """The rows of ``order`` in batches of similar length: sorted by length within pools of ``pool_batches`` batches."""
    pool_size = batch_size * pool_batches
    groups = []
    for start in range(0, len(order), pool_size):
        pool = order[start : start + pool_size]
        pool = pool[np.argsort(lengths[pool], kind="stable")]
        groups.extend(pool[i : i + batch_size] for i in range(0, len(pool), batch_size))
    return groups


def evaluation_batches(data: EncodedSentences, batch_size: int) -> Iterator[Batch]:
    """Batches of ``batch_size`` sentences in order of padded size (little padding, no shuffling)."""
    order = np.argsort(data.padded_sizes(), kind="stable")
    for start in range(0, len(order), batch_size):
        yield make_batch(data, order[start : start + batch_size])
